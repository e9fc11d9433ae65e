//! Moving a finalized replica between this node's own volumes (REPLACE_BLOCK whose source
//! is this node: HDFS's `moveBlockAcrossStorage`), for a storage policy that wants the
//! replica on another storage type.
//!
//! The copy is made beside the original and checked to be whole before the replica map
//! points at it; only then is the original deleted. A crash in between leaves two
//! finalized copies of the same replica, which start-up resolves (`resolve_duplicate`).

use std::io;

use super::files::{Key, Part, ReplicaStreams};
use super::{key, Dataset, Replica, State, StorageError};

/// Bytes copied per read and write.
const COPY_CHUNK: usize = 1 << 20;

impl Dataset {
    /// Moves finalized replica `id` (stamp `gs`) to a working volume of `storage_type`.
    /// Returns the replica at its new place. Blocking file I/O: call off the async workers.
    pub fn move_to_type(
        &self,
        id: u64,
        gs: u64,
        storage_type: u8,
    ) -> Result<Replica, StorageError> {
        let old = self.get(id).ok_or(StorageError::NotFound(id))?;
        let fail = |why: String| StorageError::Recovery { id, why };
        if old.state != State::Finalized || old.gs != gs {
            return Err(fail(format!(
                "only a finalized replica of stamp {gs} moves; this one is {:?} at stamp {}",
                old.state, old.gs
            )));
        }
        if self.volumes[old.volume].storage_type == storage_type {
            return Err(fail(format!(
                "the replica is already on storage type {storage_type}"
            )));
        }
        let (vi, _space) = self.pick_typed_volume(old.len, storage_type)?;
        let io_err = |source| StorageError::Io { volume: vi, source };
        let from = self.volumes[old.volume]
            .files
            .open(key(&old))
            .map_err(|source| StorageError::Io {
                volume: old.volume,
                source,
            })?;
        let to = self.volumes[vi].files.create(id, gs).map_err(io_err)?;
        copy_streams(&*from, &*to).map_err(io_err)?;
        to.sync().map_err(io_err)?;
        let done = Key {
            id,
            gs,
            state: State::Finalized,
        };
        let rbw = Key {
            state: State::Rbw,
            ..done
        };
        self.volumes[vi].files.rename(rbw, done).map_err(io_err)?;
        let moved = Replica {
            volume: vi,
            ..old.clone()
        };
        {
            let mut reps = self.replicas.lock();
            if reps.get(&id) != Some(&old) {
                // Deleted, appended to or recovered while we copied: the copy is stale.
                drop(reps);
                let _ = self.volumes[vi].files.remove(done);
                return Err(fail("the replica changed while it was being moved".into()));
            }
            reps.insert(id, moved.clone());
        }
        // Readers holding the old files keep them open (and readable) until they finish.
        self.forget_handles(id);
        self.delete_files(&old);
        Ok(moved)
    }

    /// A working volume of exactly `storage_type` with room for `need` bytes.
    fn pick_typed_volume(
        &self,
        need: u64,
        storage_type: u8,
    ) -> Result<(usize, super::SpaceHold), StorageError> {
        let mut most = None;
        for (i, v) in self.volumes.iter().enumerate() {
            if v.is_failed() || v.storage_type != storage_type {
                continue;
            }
            if let Some(hold) = v.try_hold(need) {
                return Ok((i, hold));
            }
            most = most.max(Some(v.usable().1));
        }
        match most {
            Some(most) => Err(StorageError::NoSpace { need, most }),
            None => Err(StorageError::NoVolume),
        }
    }
}

/// Copies both streams of a replica, then checks that the copy has every byte.
fn copy_streams(from: &dyn ReplicaStreams, to: &dyn ReplicaStreams) -> io::Result<()> {
    copy_prefix(from, to, from.len(Part::Data)?)
}

/// Copies a replica's first `data_len` bytes and all its checksums (the caller cuts
/// them to the data), then checks that the copy has every byte it was given.
pub(super) fn copy_prefix(
    from: &dyn ReplicaStreams,
    to: &dyn ReplicaStreams,
    data_len: u64,
) -> io::Result<()> {
    let mut buf = vec![0u8; COPY_CHUNK];
    for part in [Part::Data, Part::Meta] {
        let len = match part {
            Part::Data => data_len,
            Part::Meta => from.len(part)?,
        };
        let mut at = 0u64;
        while at < len {
            let n = (len - at).min(COPY_CHUNK as u64) as usize;
            from.read_at(part, at, &mut buf[..n])?;
            to.write_at(part, at, &buf[..n])?;
            at += n as u64;
        }
        to.set_len(part, len)?;
        if to.len(part)? != len {
            return Err(io::Error::other("the copy is shorter than the replica"));
        }
    }
    Ok(())
}

/// Two volumes hold the same replica (a move cut short by a crash, or a disk put back):
/// which one to keep. A finished replica beats an unfinished one, then the newer stamp,
/// then the longer; on a full tie the one found first stays.
pub(super) fn keep_second(first: &Replica, second: &Replica) -> bool {
    let rank = |r: &Replica| (r.state == State::Finalized, r.gs, r.len);
    rank(second) > rank(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(state: State, gs: u64, len: u64) -> Replica {
        Replica {
            id: 1,
            gs,
            len,
            state,
            volume: 0,
            recovery_id: 0,
            restarted: false,
        }
    }

    #[test]
    fn duplicates_resolve_to_the_finished_then_newest_then_longest_copy() {
        let f = rep(State::Finalized, 5, 10);
        assert!(!keep_second(&f, &rep(State::Rbw, 9, 99)));
        assert!(keep_second(&rep(State::Rbw, 9, 99), &f));
        assert!(keep_second(&f, &rep(State::Finalized, 6, 1)));
        assert!(keep_second(&f, &rep(State::Finalized, 5, 11)));
        assert!(!keep_second(&f, &f.clone()));
    }
}
