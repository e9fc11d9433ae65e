//! Reopening a finished replica for append (pipeline stage `PIPELINE_SETUP_APPEND`): the
//! finalized files move back to the rbw tree under the append's generation stamp, and the
//! writer goes on from the replica's length.

use ferrite_transfer::checksum::Checksum;

use super::files::{read_checksum, Key};
use super::{key, Dataset, RbwFiles, State, StorageError};

impl Dataset {
    /// Reopens finalized replica `id` (stamp `gs`) for an append under stamp `new_gs`.
    /// `expected_len` is the length the writer was told the block has: a replica of
    /// another length is refused, as HDFS refuses it. Returns the files, the length the
    /// writer goes on from, and the replica's checksum.
    pub fn append(
        &self,
        id: u64,
        gs: u64,
        new_gs: u64,
        expected_len: u64,
        block_size: u64,
    ) -> Result<(RbwFiles, u64, Checksum), StorageError> {
        let r = self.get(id).ok_or(StorageError::NotFound(id))?;
        let fail = |why: String| StorageError::Recovery { id, why };
        if r.state != State::Finalized {
            return Err(fail("the replica to append to is not finalized".into()));
        }
        if r.gs != gs || new_gs < r.gs {
            return Err(fail(format!(
                "the replica has stamp {}, the append names {gs} and would give it {new_gs}",
                r.gs
            )));
        }
        if r.len != expected_len {
            return Err(fail(format!(
                "the replica holds {} bytes, the append expects {expected_len}",
                r.len
            )));
        }
        self.forget_handles(id);
        let vi = r.volume;
        let io_err = |source| StorageError::Io { volume: vi, source };
        let v = &self.volumes[vi];
        let to = Key {
            id,
            gs: new_gs,
            state: State::Rbw,
        };
        v.files.rename(key(&r), to).map_err(io_err)?;
        let streams = v.files.open(to).map_err(io_err)?;
        let checksum = read_checksum(&*streams).map_err(io_err)?;
        let mut reopened = r.clone();
        reopened.gs = new_gs;
        reopened.state = State::Rbw;
        self.replicas.lock().insert(id, reopened);
        let files = RbwFiles {
            id,
            volume: vi,
            streams,
            space: v.hold(block_size.saturating_sub(r.len)),
            latch: self.new_latch(id),
        };
        Ok((files, r.len, checksum))
    }
}
