//! Replica files on a disk, in HDFS's layout under a volume's block-pool directory:
//!
//! ```text
//! <pool>/rbw/                                  replicas being written
//! <pool>/finalized/subdirA/subdirB/
//!     blk_<id>                                 the data
//!     blk_<id>_<genstamp>.meta                 7-byte header + one CRC per chunk
//! ```
//!
//! Replicas being written live apart from finalized ones, so a crash can never make a
//! half-written block look finished.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use ferrite_transfer::checksum::{parse_meta_header, Checksum, META_HEADER_LEN};

use super::files::{
    covered_len, finalized_len, Found, Key, Part, ReplicaFiles, ReplicaStreams, State,
};

pub struct DiskFiles {
    /// The volume's root, whose file system's space is the volume's.
    root: PathBuf,
    /// `<root>/current/<pool>/current`.
    pool_dir: PathBuf,
}

impl DiskFiles {
    /// The replica directories under `pool_dir`, made if missing.
    pub fn open(root: &Path, pool_dir: PathBuf) -> io::Result<DiskFiles> {
        fs::create_dir_all(pool_dir.join("rbw"))?;
        fs::create_dir_all(pool_dir.join("finalized"))?;
        Ok(DiskFiles {
            root: root.to_path_buf(),
            pool_dir,
        })
    }

    fn rbw_paths(&self, id: u64, gs: u64) -> (PathBuf, PathBuf) {
        let dir = self.pool_dir.join("rbw");
        (
            dir.join(format!("blk_{id}")),
            dir.join(format!("blk_{id}_{gs}.meta")),
        )
    }

    /// Finalized replicas spread over 32×32 directories by block id, as HDFS's layout.
    fn finalized_dir(&self, id: u64) -> PathBuf {
        self.pool_dir
            .join("finalized")
            .join(format!("subdir{}", (id >> 16) & 0x1f))
            .join(format!("subdir{}", (id >> 8) & 0x1f))
    }

    /// The data and meta file of a replica.
    pub fn files_of(&self, k: Key) -> (PathBuf, PathBuf) {
        match k.state {
            State::Rbw => self.rbw_paths(k.id, k.gs),
            State::Finalized => {
                let dir = self.finalized_dir(k.id);
                (
                    dir.join(format!("blk_{}", k.id)),
                    dir.join(format!("blk_{}_{}.meta", k.id, k.gs)),
                )
            }
        }
    }
}

struct DiskStreams {
    data: File,
    meta: File,
}

impl DiskStreams {
    fn file(&self, part: Part) -> &File {
        match part {
            Part::Data => &self.data,
            Part::Meta => &self.meta,
        }
    }
}

impl ReplicaStreams for DiskStreams {
    fn write_at(&self, part: Part, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.file(part).write_all_at(bytes, offset)
    }

    fn read_at(&self, part: Part, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file(part).read_exact_at(buf, offset)
    }

    fn len(&self, part: Part) -> io::Result<u64> {
        Ok(self.file(part).metadata()?.len())
    }

    fn set_len(&self, part: Part, len: u64) -> io::Result<()> {
        self.file(part).set_len(len)
    }

    fn sync(&self) -> io::Result<()> {
        self.data.sync_data()?;
        self.meta.sync_data()
    }
}

fn open_rw(p: &Path, create: bool) -> io::Result<File> {
    OpenOptions::new()
        .create(create)
        .truncate(create)
        .read(true)
        .write(true)
        .open(p)
}

impl ReplicaFiles for DiskFiles {
    fn create(&self, id: u64, gs: u64) -> io::Result<Box<dyn ReplicaStreams>> {
        let (d, m) = self.rbw_paths(id, gs);
        let data = open_rw(&d, true)?;
        let meta = open_rw(&m, true)?;
        Ok(Box::new(DiskStreams { data, meta }))
    }

    fn open(&self, key: Key) -> io::Result<Box<dyn ReplicaStreams>> {
        let (d, m) = self.files_of(key);
        let data = open_rw(&d, false)?;
        let meta = open_rw(&m, false)?;
        Ok(Box::new(DiskStreams { data, meta }))
    }

    /// Only the meta file's name carries the stamp. Into the finalized tree the meta goes
    /// first, out of it last: a crash between the two renames leaves a data file without
    /// its meta, which the scan ignores, never a finished replica without checksums or an
    /// unfinished one that reads as longer.
    fn rename(&self, from: Key, to: Key) -> io::Result<()> {
        let (from_data, from_meta) = self.files_of(from);
        let (to_data, to_meta) = self.files_of(to);
        if to.state == State::Finalized {
            fs::create_dir_all(self.finalized_dir(to.id))?;
        }
        let data_moves = from_data != to_data;
        if from.state == State::Finalized && to.state == State::Rbw {
            fs::rename(&from_data, &to_data)?;
            return fs::rename(&from_meta, &to_meta);
        }
        fs::rename(&from_meta, &to_meta)?;
        if data_moves {
            fs::rename(&from_data, &to_data)?;
        }
        Ok(())
    }

    fn remove(&self, key: Key) -> io::Result<()> {
        let (d, m) = self.files_of(key);
        for p in [d, m] {
            match fs::remove_file(&p) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    fn scan(&self) -> Vec<Found> {
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

    fn works(&self) -> bool {
        let probe = self.pool_dir.join(".probe");
        let ok = probe_says_working(fs::write(&probe, b"ok"));
        let _ = fs::remove_file(&probe);
        ok && self.pool_dir.join("finalized").is_dir()
    }

    fn space(&self) -> (u64, u64) {
        fs_space(&self.root).unwrap_or((0, 0))
    }

    fn paths(&self, key: Key) -> Option<(PathBuf, PathBuf)> {
        Some(self.files_of(key))
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

/// Replicas in one directory, found by their meta files (`blk_<id>_<gs>.meta`).
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
            State::Finalized => {
                let meta_len = e.metadata().map_or(0, |m| m.len());
                finalized_len(data_len, meta_len, || meta_checksum(&e.path()))
            }
            State::Rbw => rbw_len(&e.path(), data_len).unwrap_or(0),
        };
        out.push(Found { id, gs, len, state });
    }
}

/// An unfinished replica's length: what its checksums cover.
fn rbw_len(meta: &Path, data_len: u64) -> Option<u64> {
    let c = meta_checksum(meta)?;
    Some(covered_len(&c, data_len, fs::metadata(meta).ok()?.len()))
}

/// The checksum a meta file's header names; None when the header is torn.
fn meta_checksum(meta: &Path) -> Option<Checksum> {
    let mut f = File::open(meta).ok()?;
    let mut head = [0u8; META_HEADER_LEN];
    f.read_exact(&mut head).ok()?;
    parse_meta_header(&head).ok()
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
    fn the_scan_reads_hdfs_layout_and_counts_only_checksummed_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let files = DiskFiles::open(dir.path(), dir.path().join("pool")).unwrap();
        let fin = Key {
            id: 1 << 30 | 0x1234,
            gs: 1001,
            state: State::Finalized,
        };
        let (d, m) = files.files_of(fin);
        assert!(
            d.ends_with("finalized/subdir0/subdir18/blk_1073746484"),
            "{}",
            d.display()
        );
        fs::create_dir_all(d.parent().unwrap()).unwrap();
        fs::write(&d, vec![1u8; 700]).unwrap();
        fs::write(&m, [0, 1, 2, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        let (d, m) = files.rbw_paths(5, 1002);
        fs::write(&d, vec![1u8; 900]).unwrap();
        // One checksum only: 512 bytes are covered.
        fs::write(&m, [0, 1, 2, 0, 0, 2, 0, 9, 9, 9, 9]).unwrap();
        // A data file whose meta never made it is not a replica.
        fs::write(files.pool_dir.join("rbw/blk_6"), b"orphan").unwrap();
        let mut found = files.scan();
        found.sort_by_key(|f| f.id);
        let rbw = Found {
            id: 5,
            gs: 1002,
            len: 512,
            state: State::Rbw,
        };
        let finalized = Found {
            id: fin.id,
            gs: 1001,
            len: 700,
            state: State::Finalized,
        };
        assert_eq!(found, vec![rbw, finalized]);
        assert!(files.works());
        let (cap, free) = files.space();
        assert!(cap > 0 && free <= cap);
    }

    #[test]
    fn renames_keep_the_layout_and_a_crash_between_them_leaves_no_false_replica() {
        let dir = tempfile::tempdir().unwrap();
        let files = DiskFiles::open(dir.path(), dir.path().join("pool")).unwrap();
        let rbw = Key {
            id: 70000,
            gs: 1001,
            state: State::Rbw,
        };
        let s = files.create(rbw.id, rbw.gs).unwrap();
        s.write_at(Part::Meta, 0, &[0, 1, 2, 0, 0, 2, 0]).unwrap();
        s.write_at(Part::Data, 0, b"abc").unwrap();
        let done = Key {
            state: State::Finalized,
            ..rbw
        };
        files.rename(rbw, done).unwrap();
        // The open streams follow the files, as the writer's do while it finalizes.
        s.write_at(Part::Data, 3, b"d").unwrap();
        let (d, m) = files.files_of(done);
        assert_eq!(fs::read(&d).unwrap(), b"abcd");
        assert!(m.exists() && !files.files_of(rbw).0.exists());
        // Back to rbw under a new stamp (append): the data moves first, so a crash
        // between the two renames leaves only a finalized meta without its data.
        let reopened = Key {
            gs: 1002,
            state: State::Rbw,
            ..rbw
        };
        fs::remove_file(&d).unwrap();
        assert!(files.rename(done, reopened).is_err());
        assert!(m.exists(), "nothing moved");
        assert!(files.scan().is_empty(), "a meta without data is no replica");
        fs::write(&d, b"abcd").unwrap();
        files.rename(done, reopened).unwrap();
        assert_eq!(files.scan().len(), 1);
        files.remove(reopened).unwrap();
        files.remove(reopened).unwrap();
        assert!(files.scan().is_empty());
        assert_eq!(fs::read_dir(files.pool_dir.join("rbw")).unwrap().count(), 0);
    }
}
