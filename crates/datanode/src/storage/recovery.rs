//! A replica's side of block recovery (see `crate::recovery` for the primary's side).
//!
//! `init` stops the replica's writer and says what the replica holds; `update` cuts it to
//! the length the primary chose and finalizes it under the recovery's generation stamp.
//! Both are idempotent for the same recovery id, so a primary that retries, or a second
//! attempt that reaches a replica the first already finalized, changes nothing.

use super::files::{cut, stored_len, Key};
use super::moves::copy_prefix;
use super::{key, Dataset, Replica, State, StorageError};

/// A replica's state as block recovery ranks it, best first (HDFS's `ReplicaState`
/// order): a finalized replica's length is the block's; a replica that stayed up through
/// its pipeline holds every byte the pipeline acknowledged; one left unfinished by a
/// restart may hold fewer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RecoveryState {
    Finalized,
    Rbw,
    Rwr,
}

/// What a replica holds, as block recovery sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaInfo {
    pub state: RecoveryState,
    pub gs: u64,
    pub len: u64,
}

impl Dataset {
    /// Takes replica `id` into the recovery `recovery_id` of the block the NameNode records
    /// at stamp `block_gs`. Its writer is stopped first (a write in progress ends), and an
    /// unfinished replica's length is what its files hold with checksums, so bytes that
    /// reached the disk without their checksum are not counted. None when this node has no
    /// replica of the block.
    pub fn init_recovery(
        &self,
        id: u64,
        block_gs: u64,
        recovery_id: u64,
    ) -> Result<Option<ReplicaInfo>, StorageError> {
        let Some(r) = self.get(id) else {
            return Ok(None);
        };
        let fail = |why: String| StorageError::Recovery { id, why };
        if r.state == State::Finalized && r.gs == recovery_id {
            // An earlier attempt of this recovery already finalized it here.
            return Ok(Some(info(&r)));
        }
        if r.gs < block_gs {
            return Err(fail(format!(
                "replica stamp {} is older than the block's {block_gs}",
                r.gs
            )));
        }
        if r.gs >= recovery_id {
            return Err(fail(format!(
                "replica stamp {} is not older than recovery id {recovery_id}",
                r.gs
            )));
        }
        if r.recovery_id > recovery_id {
            return Err(fail(format!(
                "a newer recovery ({}) has the replica",
                r.recovery_id
            )));
        }
        self.revoke_writer(id);
        self.forget_handles(id);
        let mut r = self.get(id).ok_or(StorageError::NotFound(id))?;
        if r.state == State::Rbw {
            let io_err = |source| StorageError::Io {
                volume: r.volume,
                source,
            };
            let streams = self.open_streams(&r).map_err(io_err)?;
            r.len = stored_len(&*streams).map_err(io_err)?;
        }
        r.recovery_id = recovery_id;
        self.replicas.lock().insert(id, r.clone());
        Ok(Some(info(&r)))
    }

    /// Ends recovery `recovery_id` of replica `id` here: cut to `new_len` bytes (the last
    /// partial chunk's checksum computed afresh), finalized under stamp `recovery_id`.
    /// Returns the replica as it now is.
    pub fn update_recovered(
        &self,
        id: u64,
        recovery_id: u64,
        new_len: u64,
    ) -> Result<Replica, StorageError> {
        let r = self.get(id).ok_or(StorageError::NotFound(id))?;
        if done_by(&r, recovery_id, new_len) {
            return Ok(r);
        }
        let r = under_recovery(r, recovery_id, new_len)?;
        let vi = r.volume;
        let io_err = |source| StorageError::Io { volume: vi, source };
        let files = &self.volumes[vi].files;
        cut(&*self.open_streams(&r).map_err(io_err)?, new_len).map_err(io_err)?;
        let done = Key {
            id,
            gs: recovery_id,
            state: State::Finalized,
        };
        files.rename(key(&r), done).map_err(io_err)?;
        let done = Replica {
            gs: recovery_id,
            len: new_len,
            state: State::Finalized,
            recovery_id: 0,
            restarted: false,
            ..r
        };
        self.replicas.lock().insert(id, done.clone());
        self.forget_handles(id);
        Ok(done)
    }
}

impl Dataset {
    /// Copy-on-truncate: ends recovery `recovery_id` of replica `id` by copying its first
    /// `new_len` bytes into a new finalized replica `new_id` under stamp `recovery_id`, on
    /// the same volume. The source stays as it was: a snapshot still reads it. Returns the
    /// copy. A copy left by an earlier attempt is replaced; one of this recovery is kept.
    pub fn copy_recovered(
        &self,
        id: u64,
        recovery_id: u64,
        new_id: u64,
        new_len: u64,
    ) -> Result<Replica, StorageError> {
        let earlier = self.get(new_id);
        if let Some(c) = earlier
            .as_ref()
            .filter(|c| done_by(c, recovery_id, new_len))
        {
            return Ok(c.clone());
        }
        let r = self.in_recovery(id, recovery_id, new_len)?;
        if let Some(stale) = earlier {
            self.replicas.lock().remove(&new_id);
            self.forget_handles(new_id);
            self.delete_files(&stale);
        }
        let vi = r.volume;
        let io_err = |source| StorageError::Io { volume: vi, source };
        let files = &self.volumes[vi].files;
        let from = self.open_streams(&r).map_err(io_err)?;
        let to = files.create(new_id, recovery_id).map_err(io_err)?;
        copy_prefix(&*from, &*to, new_len).map_err(io_err)?;
        cut(&*to, new_len).map_err(io_err)?;
        let done = Key {
            id: new_id,
            gs: recovery_id,
            state: State::Finalized,
        };
        let rbw = Key {
            state: State::Rbw,
            ..done
        };
        files.rename(rbw, done).map_err(io_err)?;
        let copy = Replica {
            id: new_id,
            gs: recovery_id,
            len: new_len,
            state: State::Finalized,
            volume: vi,
            recovery_id: 0,
            restarted: false,
        };
        let mut reps = self.replicas.lock();
        reps.insert(new_id, copy.clone());
        // The source leaves the recovery untouched.
        if let Some(src) = reps.get_mut(&id).filter(|s| s.recovery_id == recovery_id) {
            src.recovery_id = 0;
        }
        Ok(copy)
    }
}

impl Dataset {
    /// Replica `id`, taken into recovery `recovery_id` and holding at least `new_len` bytes:
    /// what ending that recovery (a cut or a copy) needs.
    fn in_recovery(
        &self,
        id: u64,
        recovery_id: u64,
        new_len: u64,
    ) -> Result<Replica, StorageError> {
        let r = self.get(id).ok_or(StorageError::NotFound(id))?;
        under_recovery(r, recovery_id, new_len)
    }
}

/// `r`, if recovery `recovery_id` holds it and it has `new_len` bytes to keep.
fn under_recovery(r: Replica, recovery_id: u64, new_len: u64) -> Result<Replica, StorageError> {
    let fail = |why: String| StorageError::Recovery { id: r.id, why };
    if r.recovery_id != recovery_id {
        return Err(fail(format!(
            "the replica is under recovery {}, not {recovery_id}",
            r.recovery_id
        )));
    }
    if new_len > r.len {
        return Err(fail(format!(
            "new length {new_len} is beyond the {} bytes the replica holds",
            r.len
        )));
    }
    Ok(r)
}

/// Whether `r` is what recovery `recovery_id` to `new_len` bytes leaves: done already.
fn done_by(r: &Replica, recovery_id: u64, new_len: u64) -> bool {
    r.state == State::Finalized && r.gs == recovery_id && r.len == new_len
}

fn info(r: &Replica) -> ReplicaInfo {
    let state = match (r.state, r.restarted) {
        (State::Finalized, _) => RecoveryState::Finalized,
        (State::Rbw, false) => RecoveryState::Rbw,
        (State::Rbw, true) => RecoveryState::Rwr,
    };
    ReplicaInfo {
        state,
        gs: r.gs,
        len: r.len,
    }
}
