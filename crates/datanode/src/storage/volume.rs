//! One volume (one disk): its identity (the `VERSION` file), its health, the room its
//! writers are promised, and the store holding its replicas' bytes (`files`).
//!
//! ```text
//! <root>/current/VERSION                       datanode and storage ids
//! <root>/current/<pool>/current/               the block pool's replicas (`disk_files`)
//! ```

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::disk_files::DiskFiles;
use super::files::{Found, ReplicaFiles};

pub struct Volume {
    pub root: PathBuf,
    pub storage_uuid: String,
    /// What kind of storage it is (`StorageTypeProto`: 1 DISK, 2 SSD, 3 ARCHIVE,
    /// 4 RAM_DISK, 6 NVDIMM), from its `[TYPE]` tag in `dfs.datanode.data.dir`.
    pub storage_type: u8,
    pub files: Arc<dyn ReplicaFiles>,
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

/// `StorageTypeProto.DISK`: a volume with no tag.
pub const DISK: u8 = 1;

/// A `dfs.datanode.data.dir` entry that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocationError {
    #[error("unclosed storage type tag in {entry}")]
    Unclosed { entry: String },
    #[error("unknown storage type [{tag}] in {entry}")]
    UnknownType { tag: String, entry: String },
}

/// A `dfs.datanode.data.dir` entry as HDFS's `StorageLocation` reads it: an optional
/// `[TYPE]` tag (DISK, SSD, ARCHIVE, RAM_DISK, NVDIMM; any case), then the directory.
pub fn parse_location(entry: &Path) -> Result<(u8, PathBuf), LocationError> {
    let text = entry.to_string_lossy();
    let Some(rest) = text.strip_prefix('[') else {
        return Ok((DISK, entry.to_path_buf()));
    };
    let (tag, dir) = rest
        .split_once(']')
        .ok_or_else(|| LocationError::Unclosed {
            entry: text.to_string(),
        })?;
    let ty = match tag.to_ascii_uppercase().as_str() {
        "" | "DISK" => DISK,
        "SSD" => 2,
        "ARCHIVE" => 3,
        "RAM_DISK" => 4,
        "NVDIMM" => 6,
        other => {
            return Err(LocationError::UnknownType {
                tag: other.to_string(),
                entry: text.to_string(),
            })
        }
    };
    let dir = dir.trim_start_matches("file://");
    Ok((ty, PathBuf::from(dir)))
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
        let files = DiskFiles::open(root, current.join(pool).join("current"))?;
        let volume = Volume::with_files(root, &version.storage_uuid, Arc::new(files));
        Ok((volume, version))
    }

    /// A volume over any replica store; `root` names it in reports and logs.
    pub fn with_files(root: &Path, storage_uuid: &str, files: Arc<dyn ReplicaFiles>) -> Volume {
        Volume {
            root: root.to_path_buf(),
            storage_uuid: storage_uuid.to_string(),
            storage_type: DISK,
            files,
            failed: AtomicBool::new(false),
            reserved: Arc::default(),
        }
    }

    pub fn is_failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    pub fn mark_failed(&self) -> bool {
        !self.failed.swap(true, Ordering::SeqCst)
    }

    /// Is the volume still working? A disk that went away or turned read-only fails this;
    /// a full one does not.
    pub fn check(&self) -> bool {
        self.files.works()
    }

    /// (capacity, remaining) of the medium holding the volume.
    pub fn space(&self) -> (u64, u64) {
        self.files.space()
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
        self.files.scan()
    }
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

#[cfg(test)]
mod tests {

    #[test]
    fn data_dir_entries_carry_their_storage_type_as_hdfs_tags_them() {
        let p = |s: &str| parse_location(Path::new(s));
        assert_eq!(p("/d0").unwrap(), (DISK, PathBuf::from("/d0")));
        assert_eq!(p("[SSD]/d1").unwrap(), (2, PathBuf::from("/d1")));
        assert_eq!(p("[archive]file:///d2").unwrap(), (3, PathBuf::from("/d2")));
        assert_eq!(p("[RAM_DISK]/d3").unwrap().0, 4);
        assert_eq!(
            p("[TAPE]/d4").unwrap_err(),
            LocationError::UnknownType {
                tag: "TAPE".into(),
                entry: "[TAPE]/d4".into()
            }
        );
        assert!(matches!(
            p("[SSD/d5").unwrap_err(),
            LocationError::Unclosed { .. }
        ));
    }

    use super::*;

    #[test]
    fn version_persists_and_the_volume_works() {
        let dir = tempfile::tempdir().unwrap();
        let (v, ver) = Volume::open(dir.path(), "BP-1", "dn-1", "CID").unwrap();
        let (v2, ver2) = Volume::open(dir.path(), "BP-1", "dn-other", "CID").unwrap();
        assert_eq!(ver.datanode_uuid, ver2.datanode_uuid);
        assert_eq!(v.storage_uuid, v2.storage_uuid);

        assert!(v.check());
        let (cap, free) = v.space();
        assert!(cap > 0 && free <= cap);
    }
}
