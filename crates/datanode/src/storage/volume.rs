//! One volume (one disk): a directory holding a block pool's replicas in HDFS's layout,
//!
//! ```text
//! <root>/current/VERSION                       datanode and storage ids
//! <root>/current/<pool>/current/rbw/           replicas being written
//! <root>/current/<pool>/current/finalized/subdirA/subdirB/
//!     blk_<id>                                 the data
//!     blk_<id>_<genstamp>.meta                 7-byte header + one CRC per chunk
//! ```
//!
//! Replicas being written live apart from finalized ones, so a crash can never make a
//! half-written block look finished.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use ferrite_transfer::checksum::{parse_meta_header, META_HEADER_LEN};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Being written (or left by a writer that went away): not readable as final.
    Rbw,
    Finalized,
}

/// A replica found on disk by a scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub id: u64,
    pub gs: u64,
    pub len: u64,
    pub state: State,
}

pub struct Volume {
    pub root: PathBuf,
    pub storage_uuid: String,
    pool_dir: PathBuf,
    failed: AtomicBool,
    /// Bytes promised to replicas being written and not yet on disk (HDFS's
    /// `reservedForRbw`): without it, writers that start together all pick a volume with
    /// room for only one of them, and fail with ENOSPC partway through their blocks.
    reserved: Arc<AtomicU64>,
}

/// Space a replica being written holds on its volume: a whole block when it starts, less
/// as its bytes land on disk (they then show in the file system's own free count), none
/// once it is finalized or its writer goes away.
#[derive(Debug)]
pub struct SpaceHold {
    reserved: Arc<AtomicU64>,
    promised: u64,
    held: AtomicU64,
}

impl SpaceHold {
    /// The replica now has `len` bytes on disk.
    pub fn written(&self, len: u64) {
        let target = self.promised.saturating_sub(len);
        let before = self.held.fetch_min(target, Ordering::Relaxed);
        if before > target {
            self.reserved.fetch_sub(before - target, Ordering::Relaxed);
        }
    }
}

impl Drop for SpaceHold {
    fn drop(&mut self) {
        self.written(u64::MAX);
    }
}

/// What a volume's VERSION file records.
pub struct VersionFile {
    pub datanode_uuid: String,
    pub storage_uuid: String,
    pub cluster_id: String,
}

impl Volume {
    /// Opens (creating if needed) a volume for block pool `pool`. `datanode_uuid` and
    /// `cluster_id` are written into a new VERSION file; an existing one keeps its own.
    pub fn open(
        root: &Path,
        pool: &str,
        datanode_uuid: &str,
        cluster_id: &str,
    ) -> io::Result<(Volume, VersionFile)> {
        let current = root.join("current");
        fs::create_dir_all(&current)?;
        let version_path = current.join("VERSION");
        let version = match fs::read_to_string(&version_path) {
            Ok(text) => parse_version(&text).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} is malformed", version_path.display()),
                )
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let v = VersionFile {
                    datanode_uuid: datanode_uuid.to_string(),
                    storage_uuid: format!("DS-{}", uuid::Uuid::new_v4()),
                    cluster_id: cluster_id.to_string(),
                };
                let text = format!(
                    "datanodeUuid={}\nstorageID={}\nclusterID={}\nstorageType=DATA_NODE\n",
                    v.datanode_uuid, v.storage_uuid, v.cluster_id
                );
                let tmp = current.join("VERSION.tmp");
                fs::write(&tmp, text)?;
                fs::File::open(&tmp)?.sync_all()?;
                fs::rename(&tmp, &version_path)?;
                v
            }
            Err(e) => return Err(e),
        };
        let pool_dir = current.join(pool).join("current");
        fs::create_dir_all(pool_dir.join("rbw"))?;
        fs::create_dir_all(pool_dir.join("finalized"))?;
        Ok((
            Volume {
                root: root.to_path_buf(),
                storage_uuid: version.storage_uuid.clone(),
                pool_dir,
                failed: AtomicBool::new(false),
                reserved: Arc::default(),
            },
            version,
        ))
    }

    pub fn is_failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    pub fn mark_failed(&self) -> bool {
        !self.failed.swap(true, Ordering::SeqCst)
    }

    /// Is the volume still working? A disk that went away or turned read-only fails this;
    /// a full one does not (see [`probe_says_working`]).
    pub fn check(&self) -> bool {
        let probe = self.pool_dir.join(".probe");
        let ok = probe_says_working(fs::write(&probe, b"ok"));
        let _ = fs::remove_file(&probe);
        ok && self.pool_dir.join("finalized").is_dir()
    }

    pub fn rbw_paths(&self, id: u64, gs: u64) -> (PathBuf, PathBuf) {
        let dir = self.pool_dir.join("rbw");
        (
            dir.join(format!("blk_{id}")),
            dir.join(format!("blk_{id}_{gs}.meta")),
        )
    }

    pub fn finalized_dir(&self, id: u64) -> PathBuf {
        self.pool_dir
            .join("finalized")
            .join(format!("subdir{}", (id >> 16) & 0x1f))
            .join(format!("subdir{}", (id >> 8) & 0x1f))
    }

    pub fn finalized_paths(&self, id: u64, gs: u64) -> (PathBuf, PathBuf) {
        let dir = self.finalized_dir(id);
        (
            dir.join(format!("blk_{id}")),
            dir.join(format!("blk_{id}_{gs}.meta")),
        )
    }

    /// (capacity, remaining) of the file system holding the volume.
    pub fn space(&self) -> (u64, u64) {
        fs_space(&self.root).unwrap_or((0, 0))
    }

    /// (capacity, available): the file system's remaining bytes less what replicas being
    /// written are promised. What heartbeats report, so the NameNode places by it too.
    pub fn usable(&self) -> (u64, u64) {
        let (capacity, remaining) = self.space();
        (capacity, remaining.saturating_sub(self.reserved()))
    }

    /// Bytes promised to replicas being written.
    pub fn reserved(&self) -> u64 {
        self.reserved.load(Ordering::Relaxed)
    }

    /// Promises `bytes` to a new replica if the volume has more than that available after
    /// every earlier promise (HDFS's round-robin choosing rule).
    pub fn try_hold(&self, bytes: u64) -> Option<SpaceHold> {
        let hold = self.hold(bytes);
        // Promised first, then checked: two writers racing for the last room both see at
        // least one of the two promises, so they cannot both take it.
        (self.space().1 > self.reserved()).then_some(hold)
    }

    /// Promises `bytes` unconditionally: a replica already on this volume that resumes.
    pub fn hold(&self, bytes: u64) -> SpaceHold {
        self.reserved.fetch_add(bytes, Ordering::Relaxed);
        SpaceHold {
            reserved: self.reserved.clone(),
            promised: bytes,
            held: AtomicU64::new(bytes),
        }
    }

    /// Every replica on the volume. Unreadable or inconsistent entries are skipped with a
    /// warning rather than stopping the node: the NameNode re-replicates what is missing.
    pub fn scan(&self) -> Vec<Found> {
        let mut out = Vec::new();
        scan_dir(&self.pool_dir.join("rbw"), State::Rbw, &mut out);
        let fin = self.pool_dir.join("finalized");
        for a in read_dirs(&fin) {
            for b in read_dirs(&a) {
                scan_dir(&b, State::Finalized, &mut out);
            }
        }
        out
    }
}

fn read_dirs(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .map(|it| {
            it.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default()
}

/// Finds `blk_<id>` + `blk_<id>_<gs>.meta` pairs. A replica being written may have a data
/// file longer than its checksums cover (the crash came between the two writes), so its
/// length is what both agree on.
fn scan_dir(dir: &Path, state: State, out: &mut Vec<Found>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(|e| e.ok()) {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name
            .strip_prefix("blk_")
            .and_then(|r| r.strip_suffix(".meta"))
        else {
            continue;
        };
        let Some((id, gs)) = rest.split_once('_') else {
            continue;
        };
        let (Ok(id), Ok(gs)) = (id.parse::<u64>(), gs.parse::<u64>()) else {
            continue;
        };
        let data = dir.join(format!("blk_{id}"));
        let Ok(data_len) = fs::metadata(&data).map(|m| m.len()) else {
            tracing::warn!(meta = %e.path().display(), "meta file without its block file");
            continue;
        };
        let len = match state {
            State::Finalized => data_len,
            State::Rbw => covered_len(&e.path(), data_len).unwrap_or(0),
        };
        out.push(Found { id, gs, len, state });
    }
}

/// The prefix of a data file that the meta file has checksums for.
fn covered_len(meta: &Path, data_len: u64) -> Option<u64> {
    let bytes = fs::read(meta).ok()?;
    let c = parse_meta_header(&bytes).ok()?;
    let sums = (bytes.len() - META_HEADER_LEN) as u64 / c.kind.size().max(1) as u64;
    Some(data_len.min(sums * c.bytes_per_checksum as u64))
}

fn parse_version(text: &str) -> Option<VersionFile> {
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .map(|v| v.trim().to_string())
    };
    Some(VersionFile {
        datanode_uuid: get("datanodeUuid")?,
        storage_uuid: get("storageID")?,
        cluster_id: get("clusterID").unwrap_or_default(),
    })
}

/// Whether a probe write's outcome shows a working volume. Out of space (or quota) is not
/// a failure: the replicas on it are still readable, and failing the volume would report
/// them all lost and have the NameNode copy them elsewhere, for a disk that only filled up.
/// New blocks go to volumes with room instead.
fn probe_says_working(wrote: io::Result<()>) -> bool {
    match wrote {
        Ok(()) => true,
        Err(e) => matches!(
            e.kind(),
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
        ),
    }
}

/// (total, available) bytes of the file system at `path`.
fn fs_space(path: &Path) -> Option<(u64, u64)> {
    let st = rustix::fs::statvfs(path).ok()?;
    Some((
        st.f_blocks.saturating_mul(st.f_frsize),
        st.f_bavail.saturating_mul(st.f_frsize),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_a_working_volume_and_a_read_only_one_is_not() {
        assert!(probe_says_working(Ok(())));
        for full in [libc::ENOSPC, libc::EDQUOT] {
            assert!(probe_says_working(Err(io::Error::from_raw_os_error(full))));
        }
        for broken in [libc::EROFS, libc::EIO, libc::ENOENT] {
            assert!(!probe_says_working(Err(io::Error::from_raw_os_error(
                broken
            ))));
        }
    }

    #[test]
    fn version_persists_and_scan_finds_both_states() {
        let dir = tempfile::tempdir().unwrap();
        let (v, ver) = Volume::open(dir.path(), "BP-1", "dn-1", "CID").unwrap();
        let (v2, ver2) = Volume::open(dir.path(), "BP-1", "dn-other", "CID").unwrap();
        assert_eq!(ver.datanode_uuid, ver2.datanode_uuid);
        assert_eq!(v.storage_uuid, v2.storage_uuid);

        let (d, m) = v.finalized_paths(1 << 30 | 0x1234, 1001);
        fs::create_dir_all(d.parent().unwrap()).unwrap();
        fs::write(&d, vec![1u8; 700]).unwrap();
        fs::write(&m, [0, 1, 2, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        let (d, m) = v.rbw_paths(5, 1002);
        fs::write(&d, vec![1u8; 900]).unwrap();
        // One checksum only: 512 bytes are covered.
        fs::write(&m, [0, 1, 2, 0, 0, 2, 0, 9, 9, 9, 9]).unwrap();
        let mut found = v.scan();
        found.sort_by_key(|f| f.id);
        assert_eq!(
            found,
            vec![
                Found {
                    id: 5,
                    gs: 1002,
                    len: 512,
                    state: State::Rbw
                },
                Found {
                    id: 1 << 30 | 0x1234,
                    gs: 1001,
                    len: 700,
                    state: State::Finalized
                },
            ]
        );
        assert!(v.check());
        let (cap, free) = v.space();
        assert!(cap > 0 && free <= cap);
    }
}
