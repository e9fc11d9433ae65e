//! The DataNode's replicas across its volumes: creating replicas for writers, finalizing
//! them, finding them for readers, deleting them when the NameNode says so, and taking a
//! failed volume out of service.

pub mod append;
pub mod recovery;
pub mod volume;

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use ferrite_transfer::checksum::{meta_header, Checksum, META_HEADER_LEN};
use parking_lot::Mutex;
use tracing::{info, warn};

pub use volume::{SpaceHold, State, Volume};

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

/// Files of a replica being written. Data and checksums are appended in step.
pub struct RbwFiles {
    pub id: u64,
    pub volume: usize,
    data: File,
    meta: File,
    /// The room on its volume the rest of the block is promised.
    space: SpaceHold,
    latch: Arc<WriterLatch>,
}

impl RbwFiles {
    /// Stores `data` at `offset` in the block and its checksums at the matching place in
    /// the meta file. `offset` is chunk-aligned, so a writer that re-sends a partial last
    /// chunk (after an hflush) overwrites it in place.
    pub fn write_at(&self, offset: u64, data: &[u8], sums: &[u8], c: &Checksum) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.latch.run(|| {
            self.data.write_all_at(data, offset)?;
            let chunk = offset / c.bytes_per_checksum as u64;
            let at = META_HEADER_LEN as u64 + chunk * c.kind.size() as u64;
            self.meta.write_all_at(sums, at)?;
            self.space.written(offset + data.len() as u64);
            Ok(())
        })
    }

    /// Cuts both files to exactly `len` bytes of data (a final partial chunk re-sent
    /// shorter must not leave stale bytes behind).
    pub fn truncate(&self, len: u64, c: &Checksum) -> io::Result<()> {
        self.latch.run(|| {
            self.data.set_len(len)?;
            let sums = c.chunks(len as usize) as u64 * c.kind.size() as u64;
            self.meta.set_len(META_HEADER_LEN as u64 + sums)
        })
    }

    /// Reads stored data back: the start of a partial last chunk that an append's first
    /// packet completes.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.latch.run(|| self.data.read_exact_at(buf, offset))
    }

    /// hsync: the replica's data and checksums reach the disk.
    pub fn sync(&self) -> io::Result<()> {
        self.latch.run(|| {
            self.data.sync_data()?;
            self.meta.sync_data()
        })
    }
}

impl Dataset {
    /// Opens every volume and scans it. A volume that cannot be opened is left out and
    /// logged; the node runs as long as one volume works.
    pub fn open(dirs: &[PathBuf], pool: &str, cluster_id: &str) -> io::Result<(Dataset, String)> {
        let mut volumes = Vec::new();
        let mut datanode_uuid = None;
        for dir in dirs {
            let proposed = datanode_uuid
                .clone()
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
            match Volume::open(dir, pool, &proposed, cluster_id) {
                Ok((v, ver)) => {
                    datanode_uuid.get_or_insert(ver.datanode_uuid);
                    volumes.push(v);
                }
                Err(e) => warn!(dir = %dir.display(), error = %e, "volume left out"),
            }
        }
        let Some(uuid) = datanode_uuid else {
            return Err(io::Error::other("no usable data directory"));
        };
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
                replicas.insert(
                    f.id,
                    Replica {
                        id: f.id,
                        gs: f.gs,
                        len: f.len,
                        state: f.state,
                        volume: vi,
                        recovery_id: 0,
                    },
                );
            }
        }
        Ok((
            Dataset {
                volumes,
                replicas: Mutex::new(replicas),
                latches: Mutex::new(HashMap::new()),
                next_volume: AtomicUsize::new(0),
                reads: OnceLock::new(),
            },
            uuid,
        ))
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
        self.reads()
            .handle((r.id, r.gs), r.volume, self.paths(r))
            .await
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

    pub fn paths(&self, r: &Replica) -> (PathBuf, PathBuf) {
        let v = &self.volumes[r.volume];
        match r.state {
            State::Rbw => v.rbw_paths(r.id, r.gs),
            State::Finalized => v.finalized_paths(r.id, r.gs),
        }
    }

    /// Picks a working volume with more than `need` bytes available, round-robin among
    /// those, and promises it `need` bytes. A full volume is skipped, so a new block fails
    /// here, not with ENOSPC partway through.
    fn pick_volume(&self, need: u64) -> Result<(usize, SpaceHold), StorageError> {
        let n = self.volumes.len();
        let start = self.next_volume.fetch_add(1, Ordering::Relaxed);
        let mut most = None;
        for i in (0..n).map(|k| (start + k) % n) {
            let v = &self.volumes[i];
            if v.is_failed() {
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
        if let Some(old) = self.get(id) {
            if old.state == State::Finalized || old.gs >= gs {
                return Err(StorageError::Exists(id));
            }
            self.delete_files(&old);
        }
        let (vi, space) = self.pick_volume(block_size)?;
        let io_err = |source| StorageError::Io { volume: vi, source };
        let (dp, mp) = self.volumes[vi].rbw_paths(id, gs);
        let open = |p: &Path| {
            OpenOptions::new()
                .create(true)
                .truncate(true)
                .read(true)
                .write(true)
                .open(p)
        };
        let data = open(&dp).map_err(io_err)?;
        let mut meta = open(&mp).map_err(io_err)?;
        meta.write_all(&meta_header(checksum)).map_err(io_err)?;
        self.replicas.lock().insert(
            id,
            Replica {
                id,
                gs,
                len: 0,
                state: State::Rbw,
                volume: vi,
                recovery_id: 0,
            },
        );
        Ok(RbwFiles {
            id,
            volume: vi,
            data,
            meta,
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
        if old.state == State::Rbw && acked > old.len {
            return Err(fail(format!(
                "{acked} bytes acknowledged but only {} on disk",
                old.len
            )));
        }
        let vi = old.volume;
        let io_err = |source| StorageError::Io { volume: vi, source };
        let v = &self.volumes[vi];
        let (data_path, meta_old) = self.paths(&old);
        let meta_new = match old.state {
            State::Rbw => v.rbw_paths(id, new_gs).1,
            State::Finalized => v.finalized_paths(id, new_gs).1,
        };
        fs::rename(&meta_old, &meta_new).map_err(io_err)?;
        let mut head = [0u8; META_HEADER_LEN];
        let meta = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&meta_new)
            .map_err(io_err)?;
        std::os::unix::fs::FileExt::read_exact_at(&meta, &mut head, 0).map_err(io_err)?;
        let checksum = ferrite_transfer::checksum::parse_meta_header(&head).map_err(fail)?;
        let mut r = old.clone();
        r.gs = new_gs;
        if old.state == State::Finalized {
            self.replicas.lock().insert(id, r.clone());
            return Ok((None, r.len, checksum));
        }
        let data = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&data_path)
            .map_err(io_err)?;
        let files = RbwFiles {
            id,
            volume: vi,
            data,
            meta,
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
            data,
            meta,
            space,
            latch,
        } = files;
        let io_err = |source| StorageError::Io { volume, source };
        drop((data, meta, space));
        let r = latch
            .run(|| {
                let mut r = self.get(id).ok_or(io::ErrorKind::NotFound)?;
                let v = &self.volumes[volume];
                let (src_d, src_m) = v.rbw_paths(id, r.gs);
                let (dst_d, dst_m) = v.finalized_paths(id, r.gs);
                fs::create_dir_all(v.finalized_dir(id))?;
                // Meta first: a crash between the renames leaves a data file without meta
                // in rbw, which the scan ignores, rather than a finalized block without
                // checksums.
                fs::rename(&src_m, &dst_m)?;
                fs::rename(&src_d, &dst_d)?;
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
        let (d, m) = self.paths(r);
        for p in [d, m] {
            if let Err(e) = fs::remove_file(&p) {
                if e.kind() != io::ErrorKind::NotFound {
                    warn!(path = %p.display(), error = %e, "could not delete replica file");
                }
            }
        }
    }

    /// Replicas per volume, for full block reports. Failed volumes report nothing.
    pub fn report(&self) -> Vec<(String, bool, Vec<Replica>)> {
        let reps = self.replicas.lock();
        self.volumes
            .iter()
            .enumerate()
            .map(|(vi, v)| {
                let list = if v.is_failed() {
                    Vec::new()
                } else {
                    reps.values().filter(|r| r.volume == vi).cloned().collect()
                };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The room each test replica is promised.
    const BLOCK: u64 = 1 << 20;

    #[test]
    fn write_finalize_find_after_restart_and_invalidate() {
        let d = tempfile::tempdir().unwrap();
        let dirs = vec![d.path().join("v1"), d.path().join("v2")];
        let (ds, uuid) = Dataset::open(&dirs, "BP-1", "C").unwrap();
        let c = Checksum::CRC32C_512;
        let f = ds.create_rbw(10, 1001, &c, BLOCK).unwrap();
        let data = vec![3u8; 600];
        let mut sums = Vec::new();
        c.compute_into(&data, &mut sums);
        // A partial chunk first, then the whole again from its chunk start (hflush).
        f.write_at(0, &data[..100], &sums[..4], &c).unwrap();
        f.write_at(0, &data, &sums, &c).unwrap();
        f.truncate(600, &c).unwrap();
        assert!(matches!(
            ds.create_rbw(10, 1001, &c, BLOCK),
            Err(StorageError::Exists(10))
        ));
        let r = ds.finalize(f, 600).unwrap();
        assert_eq!(r.state, State::Finalized);
        let (dp, mp) = ds.paths(&r);
        assert_eq!(fs::read(&dp).unwrap(), data);
        assert_eq!(fs::metadata(&mp).unwrap().len(), 7 + 8);
        // An unfinished replica stays apart and is found again after a restart.
        let g = ds.create_rbw(11, 1002, &c, BLOCK).unwrap();
        g.write_at(0, &data[..512], &sums[..4], &c).unwrap();
        drop(g);
        drop(ds);
        let (ds, uuid2) = Dataset::open(&dirs, "BP-1", "C").unwrap();
        assert_eq!(uuid, uuid2);
        assert_eq!(ds.get(10).unwrap().len, 600);
        let p = ds.get(11).unwrap();
        assert_eq!((p.state, p.len), (State::Rbw, 512));
        // An older-generation leftover is replaced by a new writer.
        assert!(ds.create_rbw(11, 1003, &c, BLOCK).is_ok());
        assert!(!ds.invalidate(10, 999));
        assert!(ds.invalidate(10, 1001));
        assert!(ds.get(10).is_none());
        assert!(!dp.exists());
    }

    #[test]
    fn recovery_renames_the_stamp_and_cuts_back_to_the_acknowledged_bytes() {
        let d = tempfile::tempdir().unwrap();
        let (ds, _) = Dataset::open(&[d.path().join("v")], "BP-1", "C").unwrap();
        let c = Checksum::CRC32C_512;
        let f = ds.create_rbw(7, 1001, &c, BLOCK).unwrap();
        let data = vec![5u8; 1536];
        let mut sums = Vec::new();
        c.compute_into(&data, &mut sums);
        f.write_at(0, &data, &sums, &c).unwrap();
        ds.set_len(7, 1536);
        drop(f);
        assert!(
            ds.recover(7, 1000, 0, BLOCK).is_err(),
            "an older stamp is refused"
        );
        assert!(
            ds.recover(7, 1002, 4096, BLOCK).is_err(),
            "more acked than on disk"
        );
        let (files, len, got) = ds.recover(7, 1002, 1024, BLOCK).unwrap();
        assert_eq!((len, got), (1024, c));
        let r = ds.get(7).unwrap();
        assert_eq!((r.gs, r.len, r.state), (1002, 1024, State::Rbw));
        let (dp, mp) = ds.paths(&r);
        assert_eq!(fs::metadata(&dp).unwrap().len(), 1024);
        assert_eq!(fs::metadata(&mp).unwrap().len(), 7 + 8);
        // The writer goes on from the acknowledged offset and finishes.
        let files = files.unwrap();
        files.write_at(1024, &data[..512], &sums[..4], &c).unwrap();
        let r = ds.finalize(files, 1536).unwrap();
        // A finalized replica in close recovery only takes the new stamp.
        let (none, len, _) = ds.recover(7, 1003, 0, BLOCK).unwrap();
        assert!(none.is_none());
        assert_eq!(len, 1536);
        assert_eq!(ds.get(7).unwrap().gs, 1003);
        assert!(ds.paths(&ds.get(7).unwrap()).1.exists());
        assert!(!ds.paths(&r).1.exists());
    }

    #[test]
    fn a_broken_volume_is_taken_out_and_its_blocks_reported_lost() {
        let d = tempfile::tempdir().unwrap();
        let dirs = vec![d.path().join("v1")];
        let (ds, _) = Dataset::open(&dirs, "BP-1", "C").unwrap();
        let c = Checksum::CRC32C_512;
        let f = ds.create_rbw(10, 1001, &c, BLOCK).unwrap();
        ds.finalize(f, 0).unwrap();
        assert!(ds.check_volume(0).is_empty(), "a healthy volume stays");
        fs::remove_dir_all(&dirs[0]).unwrap();
        assert_eq!(ds.check_volume(0), vec![10]);
        assert_eq!(ds.failed_volumes(), 1);
        assert!(ds.report()[0].2.is_empty());
        assert!(matches!(
            ds.create_rbw(12, 1, &c, BLOCK),
            Err(StorageError::NoVolume)
        ));
    }

    #[test]
    fn a_new_replica_needs_room_for_a_whole_block_and_holds_it_until_written() {
        let d = tempfile::tempdir().unwrap();
        let (ds, _) = Dataset::open(&[d.path().join("v")], "BP-1", "C").unwrap();
        let c = Checksum::CRC32C_512;
        let v = &ds.volumes[0];
        let free = v.space().1;
        let huge = free + (1 << 40);
        match ds.create_rbw(1, 1001, &c, huge) {
            Err(e @ StorageError::NoSpace { need, most }) => {
                assert_eq!(need, huge);
                assert!(most < huge);
                assert!(e.to_string().contains("out of space"), "{e}");
            }
            other => panic!("a block larger than the disk: {:?}", other.map(|f| f.id)),
        }
        assert!(ds.get(1).is_none(), "nothing was created");
        // Room for one block of this size, not two: the first writer's promise keeps the
        // second off the volume.
        let block = free / 2 + free / 8;
        let f = ds.create_rbw(2, 1001, &c, block).unwrap();
        assert_eq!(v.reserved(), block);
        assert_eq!(v.usable().1, v.space().1.saturating_sub(block));
        assert!(matches!(
            ds.create_rbw(3, 1001, &c, block),
            Err(StorageError::NoSpace { .. })
        ));
        assert_eq!(v.reserved(), block, "a refused writer holds nothing");
        // Bytes on disk count in the file system's free space, so they are promised no more.
        f.write_at(0, &[7u8; 512], &[0u8; 4], &c).unwrap();
        assert_eq!(v.reserved(), block - 512);
        ds.finalize(f, 512).unwrap();
        assert_eq!(v.reserved(), 0, "a finished replica holds nothing");
        // A writer that goes away gives its promise back too; so does a recovery's.
        let g = ds.create_rbw(4, 1001, &c, block).unwrap();
        drop(g);
        assert_eq!(v.reserved(), 0);
        let (h, _, _) = ds.recover(4, 1002, 0, block).unwrap();
        assert_eq!(v.reserved(), block);
        drop(h);
        assert_eq!(v.reserved(), 0);
    }
}
