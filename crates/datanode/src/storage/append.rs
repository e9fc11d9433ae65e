//! Reopening a finished replica for append (pipeline stage `PIPELINE_SETUP_APPEND`): the
//! finalized files move back to the rbw tree under the append's generation stamp, and the
//! writer goes on from the replica's length.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;

use ferrite_transfer::checksum::{parse_meta_header, Checksum, META_HEADER_LEN};

use super::{Dataset, RbwFiles, State, StorageError};

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
        let (old_data, old_meta) = v.finalized_paths(id, r.gs);
        let (data_path, meta_path) = v.rbw_paths(id, new_gs);
        // Meta last: a crash between the renames leaves a finalized data file without
        // meta, which the scan ignores, never an rbw replica that reads as longer.
        fs::rename(&old_data, &data_path).map_err(io_err)?;
        fs::rename(&old_meta, &meta_path).map_err(io_err)?;
        let meta = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&meta_path)
            .map_err(io_err)?;
        let mut head = [0u8; META_HEADER_LEN];
        meta.read_exact_at(&mut head, 0).map_err(io_err)?;
        let checksum = parse_meta_header(&head).map_err(fail)?;
        let data = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&data_path)
            .map_err(io_err)?;
        let mut reopened = r.clone();
        reopened.gs = new_gs;
        reopened.state = State::Rbw;
        self.replicas.lock().insert(id, reopened);
        let files = RbwFiles {
            id,
            volume: vi,
            data,
            meta,
            space: v.hold(block_size.saturating_sub(r.len)),
            latch: self.new_latch(id),
        };
        Ok((files, r.len, checksum))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: u64 = 1 << 20;

    #[test]
    fn a_finalized_replica_reopens_under_the_new_stamp_and_continues_its_last_chunk() {
        let d = tempfile::tempdir().unwrap();
        let (ds, _) = Dataset::open(&[d.path().join("v")], "BP-1", "C").unwrap();
        let c = Checksum::CRC32C_512;
        let all: Vec<u8> = (0..1000u32).map(|i| (i * 13) as u8).collect();
        let mut sums = Vec::new();
        c.compute_into(&all[..700], &mut sums);
        let f = ds.create_rbw(5, 1001, &c, BLOCK).unwrap();
        f.write_at(0, &all[..700], &sums, &c).unwrap();
        ds.finalize(f, 700).unwrap();
        assert!(ds.append(5, 1000, 1002, 700, BLOCK).is_err(), "wrong stamp");
        assert!(
            ds.append(5, 1001, 1002, 600, BLOCK).is_err(),
            "wrong length"
        );
        let (files, len, got) = ds.append(5, 1001, 1002, 700, BLOCK).unwrap();
        assert_eq!((len, got), (700, c));
        let r = ds.get(5).unwrap();
        assert_eq!((r.gs, r.state, r.len), (1002, State::Rbw, 700));
        // The writer continues the partial chunk from its start, as the DataNode's packet
        // handling does for an append's first packet.
        let mut more = Vec::new();
        c.compute_into(&all[512..], &mut more);
        files.write_at(512, &all[512..], &more, &c).unwrap();
        let r = ds.finalize(files, 1000).unwrap();
        let (dp, mp) = ds.paths(&r);
        assert_eq!(fs::read(&dp).unwrap(), all);
        let mut want = Vec::new();
        c.compute_into(&all, &mut want);
        assert_eq!(&fs::read(&mp).unwrap()[META_HEADER_LEN..], &want[..]);
    }
}
