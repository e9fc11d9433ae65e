//! The DataNode's replicas across its volumes: creating replicas for writers, finalizing
//! them, finding them for readers, deleting them when the NameNode says so, and taking a
//! failed volume out of service.

pub mod append;
pub mod disk_files;
pub mod files;
pub mod memory_files;
pub mod moves;
pub mod recovery;
pub mod volume;

#[cfg(test)]
mod conformance;

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use ferrite_transfer::checksum::{meta_header, Checksum, META_HEADER_LEN};
use parking_lot::Mutex;
use tracing::{info, warn};

pub use files::{Key, Part, ReplicaFiles, ReplicaStreams, State};
pub use volume::{SpaceHold, Volume};

use crate::readserver::{ReadConfig, ReadServer};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replica {
    pub id: u64,
    pub gs: u64,
    /// Bytes written (and checksummed) so far; the final length once finalized.
    pub len: u64,
    pub state: State,
    pub volume: usize,
    /// The block recovery that owns this replica (0: none). Its writer, if any, has been
    /// stopped, and only a recovery with a newer id may take it over.
    pub recovery_id: u64,
    /// Found unfinished when this DataNode started (HDFS's RWR, "waiting to be
    /// recovered"): its writer went with the old process, and after a power cut it may
    /// hold fewer bytes than its pipeline acknowledged. No writer may take it up again;
    /// block recovery uses it only when no replica that stayed up is left.
    pub restarted: bool,
}

impl Replica {
    /// The bytes a reader may see: none of a replica waiting for recovery (a power cut
    /// may have cut it short of what readers were already shown; HDFS's readers move on
    /// to another DataNode).
    pub fn readable_len(&self) -> Option<u64> {
        (!self.restarted).then_some(self.len)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("replica blk_{0} already exists")]
    Exists(u64),
    #[error("replica blk_{0} not found")]
    NotFound(u64),
    #[error("no volume can take a new block: every volume has failed")]
    NoVolume,
    #[error("out of space: the volume with the most available space has {most} bytes, less than the block size of {need} bytes")]
    NoSpace { need: u64, most: u64 },
    #[error("cannot recover blk_{id}: {why}")]
    Recovery { id: u64, why: String },
    #[error("volume {volume}: {source}")]
    Io {
        volume: usize,
        #[source]
        source: io::Error,
    },
}

pub struct Dataset {
    pub volumes: Vec<Volume>,
    replicas: Mutex<HashMap<u64, Replica>>,
    /// The latch of each replica that has a writer, so that block recovery can stop it.
    latches: Mutex<HashMap<u64, Arc<WriterLatch>>>,
    next_volume: AtomicUsize,
    /// The read side (open-file cache, per-volume I/O pools), set once at start.
    reads: OnceLock<ReadServer>,
    /// Whether replica I/O may stall a thread, so is moved off the async workers.
    stalls: bool,
}

/// Whether a replica's writer may still write. Block recovery revokes it: from then on
/// every write, truncate and finalize of that writer fails, and a write in progress is
/// waited for (it holds the latch), so the recovery sees the replica's files at rest.
#[derive(Debug, Default)]
pub struct WriterLatch(Mutex<bool>);

impl WriterLatch {
    /// Runs `f` unless the writer has been revoked.
    fn run<T>(&self, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        let revoked = self.0.lock();
        if *revoked {
            return Err(io::Error::other("the replica is under block recovery"));
        }
        f()
    }

    /// Stops the writer for good, once its write in progress (if any) has ended.
    pub fn revoke(&self) {
        *self.0.lock() = true;
    }
}

/// A replica being written, open for its writer. Data and checksums are stored in step.
pub struct RbwFiles {
    pub id: u64,
    pub volume: usize,
    streams: Box<dyn ReplicaStreams>,
    /// The room on its volume the rest of the block is promised.
    space: SpaceHold,
    latch: Arc<WriterLatch>,
}

impl RbwFiles {
    /// Stores `data` at `offset` in the block and its checksums at the matching place in
    /// the meta file. `offset` is chunk-aligned, so a writer that re-sends a partial last
    /// chunk (after an hflush) overwrites it in place.
    pub fn write_at(&self, offset: u64, data: &[u8], sums: &[u8], c: &Checksum) -> io::Result<()> {
        self.latch.run(|| {
            self.streams.write_at(Part::Data, offset, data)?;
            let chunk = offset / c.bytes_per_checksum as u64;
            let at = META_HEADER_LEN as u64 + chunk * c.kind.size() as u64;
            self.streams.write_at(Part::Meta, at, sums)?;
            self.space.written(offset + data.len() as u64);
            Ok(())
        })
    }

    /// Cuts both files to exactly `len` bytes of data (a final partial chunk re-sent
    /// shorter must not leave stale bytes behind).
    pub fn truncate(&self, len: u64, c: &Checksum) -> io::Result<()> {
        self.latch.run(|| {
            self.streams.set_len(Part::Data, len)?;
            let sums = c.chunks(len as usize) as u64 * c.kind.size() as u64;
            self.streams
                .set_len(Part::Meta, META_HEADER_LEN as u64 + sums)
        })
    }

    /// Reads stored data back: the start of a partial last chunk that an append's first
    /// packet completes.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.latch
            .run(|| self.streams.read_at(Part::Data, offset, buf))
    }

    /// hsync: the replica's data and checksums reach the disk.
    pub fn sync(&self) -> io::Result<()> {
        self.latch.run(|| self.streams.sync())
    }
}

impl Dataset {
    /// Opens every volume and scans it. A volume that cannot be opened is left out and
    /// logged; the node runs as long as one volume works.
    pub fn open(dirs: &[PathBuf], pool: &str, cluster_id: &str) -> io::Result<(Dataset, String)> {
        let mut volumes = Vec::new();
        let mut datanode_uuid = None;
        for entry in dirs {
            let (storage_type, dir) = volume::parse_location(entry).map_err(io::Error::other)?;
            let dir = &dir;
            let proposed = datanode_uuid
                .clone()
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
            match Volume::open(dir, pool, &proposed, cluster_id) {
                Ok((mut v, ver)) => {
                    v.storage_type = storage_type;
                    datanode_uuid.get_or_insert(ver.datanode_uuid);
                    volumes.push(v);
                }
                Err(e) => warn!(dir = %dir.display(), error = %e, "volume left out"),
            }
        }
        let Some(uuid) = datanode_uuid else {
            return Err(io::Error::other("no usable data directory"));
        };
        Ok((Dataset::from_volumes(volumes), uuid))
    }

    /// The replicas the volumes hold, as each volume's scan finds them (a start).
    pub fn from_volumes(volumes: Vec<Volume>) -> Dataset {
        let volumes_stall = volumes.iter().any(|v| v.files.stalls());
        let mut replicas = HashMap::new();
        for (vi, v) in volumes.iter().enumerate() {
            let found = v.scan();
            let rbw = found.iter().filter(|f| f.state == State::Rbw).count();
            info!(
                volume = %v.root.display(),
                replicas = found.len(),
                partial = rbw,
                "volume scanned"
            );
            for f in found {
                let r = Replica {
                    id: f.id,
                    gs: f.gs,
                    len: f.len,
                    state: f.state,
                    volume: vi,
                    recovery_id: 0,
                    restarted: f.state == State::Rbw,
                };
                match replicas.get(&f.id) {
                    Some(kept) if !moves::keep_second(kept, &r) => {
                        resolve_duplicate(&volumes, &r, kept)
                    }
                    Some(kept) => {
                        resolve_duplicate(&volumes, kept, &r);
                        replicas.insert(f.id, r);
                    }
                    None => {
                        replicas.insert(f.id, r);
                    }
                }
            }
        }
        Dataset {
            volumes,
            replicas: Mutex::new(replicas),
            latches: Mutex::new(HashMap::new()),
            next_volume: AtomicUsize::new(0),
            reads: OnceLock::new(),
            stalls: volumes_stall,
        }
    }

    /// Runs replica I/O from an async task: around `block_in_place` when a volume is a
    /// disk, whose calls may stall the thread; in place when every volume is in memory
    /// (nothing waits, and the simulator's one-thread runtime has no thread to hand to).
    pub fn blocking<T>(&self, f: impl FnOnce() -> T) -> T {
        if self.stalls {
            tokio::task::block_in_place(f)
        } else {
            f()
        }
    }

    /// Runs long replica work (deletes, recoveries, volume checks) on the blocking pool
    /// when a volume is a disk; in place for memory volumes, as [`blocking`](Self::blocking).
    pub async fn off_thread<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Dataset) -> T + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        if !self.stalls {
            return Ok(f(self));
        }
        let ds = self.clone();
        tokio::task::spawn_blocking(move || f(&ds)).await
    }

    /// Starts the read side: one I/O pool per volume and the open-file cache.
    pub fn start_reads(&self, cfg: &ReadConfig) -> io::Result<()> {
        let rs = ReadServer::new(self.volumes.len(), cfg)?;
        let _ = self.reads.set(rs);
        Ok(())
    }

    /// The read side; [`start_reads`](Self::start_reads) must have run.
    pub fn reads(&self) -> &ReadServer {
        self.reads
            .get()
            .expect("Dataset::start_reads runs before serving")
    }

    /// The open data and meta files of replica `r`, for reading: cached by the read side.
    pub async fn read_handle(
        &self,
        r: &Replica,
    ) -> io::Result<Arc<crate::readserver::handles::Handle>> {
        let paths = || {
            self.paths(r).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::Unsupported,
                    "this volume keeps its replicas where the read server cannot open them",
                )
            })
        };
        self.reads().handle((r.id, r.gs), r.volume, paths).await
    }

    /// Cached open files of a replica are forgotten once it is gone.
    fn forget_handles(&self, id: u64) {
        if let Some(r) = self.reads.get() {
            r.handles.invalidate(id);
        }
    }

    pub fn get(&self, id: u64) -> Option<Replica> {
        self.replicas.lock().get(&id).cloned()
    }

    /// The data and meta file of replica `r`, when its volume keeps files.
    pub fn paths(&self, r: &Replica) -> Option<(PathBuf, PathBuf)> {
        self.volumes[r.volume].files.paths(key(r))
    }

    /// Opens replica `r`'s streams (its writer's, if it has one, are separate).
    pub fn open_streams(&self, r: &Replica) -> io::Result<Box<dyn ReplicaStreams>> {
        self.volumes[r.volume].files.open(key(r))
    }

    /// Picks a working volume with more than `need` bytes available, round-robin among
    /// those, and promises it `need` bytes. A full volume is skipped, so a new block fails
    /// here, not with ENOSPC partway through.
    /// A volume with room for `need` bytes, of storage type `wanted` when the node has
    /// one of that type (the NameNode placed the replica on it); round robin among them.
    fn pick_volume(
        &self,
        need: u64,
        wanted: Option<u8>,
    ) -> Result<(usize, SpaceHold), StorageError> {
        let n = self.volumes.len();
        let start = self.next_volume.fetch_add(1, Ordering::Relaxed);
        let typed = wanted.filter(|&t| self.volumes.iter().any(|v| v.storage_type == t));
        if wanted.is_some() && typed.is_none() {
            warn!(wanted = ?wanted, "no volume of the storage type asked for; using any");
        }
        let mut most = None;
        for i in (0..n).map(|k| (start + k) % n) {
            let v = &self.volumes[i];
            if v.is_failed() || typed.is_some_and(|t| v.storage_type != t) {
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

    /// Creates a new replica being written, on a volume with room for `block_size` bytes,
    /// which the replica holds while it is written (the writer decides the figure: the
    /// sender's length, else the configured block size, since a DataNode is not told a
    /// file's own). An existing replica of the same block is an error unless it is an
    /// unfinished leftover of an older generation, which is replaced.
    pub fn create_rbw(
        &self,
        id: u64,
        gs: u64,
        checksum: &Checksum,
        block_size: u64,
    ) -> Result<RbwFiles, StorageError> {
        self.create_rbw_on(id, gs, checksum, block_size, None)
    }

    /// [`create_rbw`](Self::create_rbw) on a volume of `storage_type` when there is one.
    pub fn create_rbw_on(
        &self,
        id: u64,
        gs: u64,
        checksum: &Checksum,
        block_size: u64,
        storage_type: Option<u8>,
    ) -> Result<RbwFiles, StorageError> {
        if let Some(old) = self.get(id) {
            if old.gs >= gs {
                return Err(StorageError::Exists(id));
            }
            // Any replica under an older stamp is stale, finished or not: the block moved
            // on (a recovery or an append elsewhere) while this node was left out, and the
            // NameNode, not counting it, sends the current one here. Refusing would leave
            // the block short of its replication until the next full report.
            self.forget_handles(id);
            self.delete_files(&old);
        }
        let (vi, space) = self.pick_volume(block_size, storage_type)?;
        let io_err = |source| StorageError::Io { volume: vi, source };
        let streams = self.volumes[vi].files.create(id, gs).map_err(io_err)?;
        streams
            .write_at(Part::Meta, 0, &meta_header(checksum))
            .map_err(io_err)?;
        self.replicas.lock().insert(
            id,
            Replica {
                id,
                gs,
                len: 0,
                state: State::Rbw,
                volume: vi,
                recovery_id: 0,
                restarted: false,
            },
        );
        Ok(RbwFiles {
            id,
            volume: vi,
            streams,
            space,
            latch: self.new_latch(id),
        })
    }

    /// Pipeline recovery: reopens a replica for the writer under generation stamp `new_gs`,
    /// cut back to the `acked` bytes the client knows every node had (it resends the rest).
    /// A finalized replica (the failure came while closing) only takes the new stamp.
    /// Returns the files (None when finalized), the length kept and the replica's checksum.
    pub fn recover(
        &self,
        id: u64,
        new_gs: u64,
        acked: u64,
        block_size: u64,
    ) -> Result<(Option<RbwFiles>, u64, Checksum), StorageError> {
        let old = self.get(id).ok_or(StorageError::NotFound(id))?;
        // The replica gets a new stamp (and maybe a shorter length): open handles of the old
        // one must not be served again.
        self.forget_handles(id);
        let fail = |why: String| StorageError::Recovery { id, why };
        if old.gs > new_gs {
            return Err(fail(format!(
                "replica stamp {} is newer than {new_gs}",
                old.gs
            )));
        }
        if old.restarted {
            // As HDFS's "Cannot recover a non-RBW replica": the client leaves this node out.
            return Err(fail(
                "the replica was left unfinished by a restart and waits for block recovery".into(),
            ));
        }
        if old.state == State::Rbw && acked > old.len {
            return Err(fail(format!(
                "{acked} bytes acknowledged but only {} on disk",
                old.len
            )));
        }
        let vi = old.volume;
        let io_err = |source| StorageError::Io { volume: vi, source };
        let v = &self.volumes[vi];
        let to = Key {
            gs: new_gs,
            ..key(&old)
        };
        v.files.rename(key(&old), to).map_err(io_err)?;
        let streams = v.files.open(to).map_err(io_err)?;
        let checksum = files::read_checksum(&*streams).map_err(io_err)?;
        let mut r = old.clone();
        r.gs = new_gs;
        if old.state == State::Finalized {
            self.replicas.lock().insert(id, r.clone());
            return Ok((None, r.len, checksum));
        }
        let files = RbwFiles {
            id,
            volume: vi,
            streams,
            // The block stays where it is; it is promised the rest of a block.
            space: v.hold(block_size.saturating_sub(acked)),
            latch: self.new_latch(id),
        };
        files.truncate(acked, &checksum).map_err(io_err)?;
        r.len = acked;
        self.replicas.lock().insert(id, r);
        Ok((Some(files), acked, checksum))
    }

    /// A writer's latch for replica `id`; the latch of an earlier writer of it is revoked.
    fn new_latch(&self, id: u64) -> Arc<WriterLatch> {
        let latch = Arc::new(WriterLatch::default());
        if let Some(old) = self.latches.lock().insert(id, latch.clone()) {
            old.revoke();
        }
        latch
    }

    /// Stops the writer of replica `id`, if it has one (block recovery).
    fn revoke_writer(&self, id: u64) {
        let latch = self.latches.lock().remove(&id);
        if let Some(l) = latch {
            l.revoke();
        }
    }

    /// Records bytes a writer has stored (readers of a block being written see them).
    pub fn set_len(&self, id: u64, len: u64) {
        if let Some(r) = self.replicas.lock().get_mut(&id) {
            r.len = len;
        }
    }

    /// Moves a finished replica into the finalized tree.
    pub fn finalize(&self, files: RbwFiles, len: u64) -> Result<Replica, StorageError> {
        let RbwFiles {
            id,
            volume,
            streams,
            space,
            latch,
        } = files;
        let io_err = |source| StorageError::Io { volume, source };
        drop((streams, space));
        let r = latch
            .run(|| {
                let mut r = self.get(id).ok_or(io::ErrorKind::NotFound)?;
                let done = Key {
                    state: State::Finalized,
                    ..key(&r)
                };
                self.volumes[volume].files.rename(key(&r), done)?;
                r.len = len;
                r.state = State::Finalized;
                self.replicas.lock().insert(id, r.clone());
                Ok(r)
            })
            .map_err(io_err)?;
        self.forget_latch(id, &latch);
        Ok(r)
    }

    /// The writer holding `latch` is done with replica `id`.
    fn forget_latch(&self, id: u64, latch: &Arc<WriterLatch>) {
        let mut latches = self.latches.lock();
        if latches.get(&id).is_some_and(|l| Arc::ptr_eq(l, latch)) {
            latches.remove(&id);
        }
    }

    /// Deletes a replica (NameNode invalidation). A different generation stamp than the
    /// one named means the block was reallocated: that replica is kept.
    pub fn invalidate(&self, id: u64, gs: u64) -> bool {
        let Some(r) = self.get(id) else {
            return false;
        };
        if gs != 0 && r.gs != gs {
            warn!(
                block = id,
                ours = r.gs,
                asked = gs,
                "invalidate of another generation ignored"
            );
            return false;
        }
        self.revoke_writer(id);
        self.replicas.lock().remove(&id);
        self.forget_handles(id);
        self.delete_files(&r);
        true
    }

    fn delete_files(&self, r: &Replica) {
        if let Err(e) = self.volumes[r.volume].files.remove(key(r)) {
            warn!(block = r.id, error = %e, "could not delete replica");
        }
    }

    /// Replicas per volume, for full block reports. Failed volumes report nothing.
    /// The storage type of the volume `storage_uuid` names (DISK if none does).
    pub fn storage_type_of(&self, storage_uuid: &str) -> u8 {
        self.volumes
            .iter()
            .find(|v| v.storage_uuid == storage_uuid)
            .map_or(volume::DISK, |v| v.storage_type)
    }

    pub fn report(&self) -> Vec<(String, bool, Vec<Replica>)> {
        let reps = self.replicas.lock();
        self.volumes
            .iter()
            .enumerate()
            .map(|(vi, v)| {
                let mut list: Vec<Replica> = if v.is_failed() {
                    Vec::new()
                } else {
                    reps.values().filter(|r| r.volume == vi).cloned().collect()
                };
                // In block order, not the map's: the NameNode answers a report in the
                // order it reads it, and a seed must replay the same way every run.
                list.sort_unstable_by_key(|r| r.id);
                (v.storage_uuid.clone(), v.is_failed(), list)
            })
            .collect()
    }

    /// Takes a volume out of service after an I/O error, if it really is broken. Returns
    /// the blocks lost with it (empty if the volume still works or was already out).
    pub fn check_volume(&self, vi: usize) -> Vec<u64> {
        let v = &self.volumes[vi];
        if v.is_failed() || v.check() || !v.mark_failed() {
            return Vec::new();
        }
        let mut reps = self.replicas.lock();
        let lost: Vec<u64> = reps
            .values()
            .filter(|r| r.volume == vi)
            .map(|r| r.id)
            .collect();
        for id in &lost {
            reps.remove(id);
            self.forget_handles(*id);
        }
        warn!(volume = %v.root.display(), lost = lost.len(), "volume failed; taken out of service");
        lost
    }

    pub fn failed_volumes(&self) -> usize {
        self.volumes.iter().filter(|v| v.is_failed()).count()
    }

    /// Per volume, the bytes and number of its replicas (one pass over the map).
    pub fn usage(&self) -> Vec<(u64, u64)> {
        let mut out = vec![(0, 0); self.volumes.len()];
        for r in self.replicas.lock().values() {
            if let Some(v) = out.get_mut(r.volume) {
                v.0 += r.len;
                v.1 += 1;
            }
        }
        out
    }

    /// Bytes of replicas on a volume.
    pub fn used(&self, vi: usize) -> u64 {
        self.replicas
            .lock()
            .values()
            .filter(|r| r.volume == vi)
            .map(|r| r.len)
            .sum()
    }
}

/// Deletes the copy `gone` of a replica found on two volumes, `kept` staying.
fn resolve_duplicate(volumes: &[Volume], gone: &Replica, kept: &Replica) {
    warn!(
        block = gone.id,
        kept_volume = kept.volume,
        deleted_volume = gone.volume,
        "replica found on two volumes; deleting one copy"
    );
    if let Err(e) = volumes[gone.volume].files.remove(key(gone)) {
        warn!(block = gone.id, error = %e, "could not delete the duplicate");
    }
}

/// Where replica `r` is stored.
fn key(r: &Replica) -> Key {
    Key {
        id: r.id,
        gs: r.gs,
        state: r.state,
    }
}
