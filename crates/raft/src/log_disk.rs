//! Where a NameNode keeps its Raft log: an append-only file that is synced before an
//! append is acknowledged and cut back when a new leader overrules its tail, beside small
//! named blobs replaced whole (the vote, the newest snapshot). Two kinds: files in a
//! directory, and memory that loses what was not synced when the simulator cuts its power.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

/// The log's storage. Calls block; the log store makes them from its own task.
pub trait LogDisk: Send + 'static {
    /// The whole log as written so far (synced or not: a crash is the only thing that
    /// tells them apart).
    fn read_log(&mut self) -> io::Result<Vec<u8>>;
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Makes everything appended durable.
    fn sync(&mut self) -> io::Result<()>;
    /// Cuts the log to `len` bytes, durably.
    fn truncate(&mut self, len: u64) -> io::Result<()>;
    /// Replaces the whole log at once (compaction): either the old or the new survives.
    fn replace_log(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Replaces blob `name` at once, durably.
    fn put(&mut self, name: &str, bytes: &[u8]) -> io::Result<()>;
    fn get(&mut self, name: &str) -> io::Result<Option<Vec<u8>>>;
}

const LOG: &str = "raft.log";

/// The log in a directory: `raft.log` and one file per blob, each replaced by writing a
/// new file, syncing it, renaming it over the old and syncing the directory.
pub struct FileDisk {
    dir: PathBuf,
    log: File,
}

impl FileDisk {
    pub fn open(dir: &Path) -> io::Result<FileDisk> {
        std::fs::create_dir_all(dir)?;
        let log = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(dir.join(LOG))?;
        Ok(FileDisk {
            dir: dir.to_path_buf(),
            log,
        })
    }

    fn write_whole(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let tmp = self.dir.join(format!("{name}.tmp"));
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, self.dir.join(name))?;
        File::open(&self.dir)?.sync_all()
    }
}

impl LogDisk for FileDisk {
    fn read_log(&mut self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        File::open(self.dir.join(LOG))?.read_to_end(&mut out)?;
        Ok(out)
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.log.write_all(bytes)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.log.sync_data()
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.log.set_len(len)?;
        self.log.sync_all()
    }

    fn replace_log(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_whole(LOG, bytes)?;
        self.log = OpenOptions::new()
            .read(true)
            .append(true)
            .open(self.dir.join(LOG))?;
        Ok(())
    }

    fn put(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.write_whole(name, bytes)
    }

    fn get(&mut self, name: &str) -> io::Result<Option<Vec<u8>>> {
        match std::fs::read(self.dir.join(name)) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[derive(Default)]
struct Memory {
    log: Vec<u8>,
    /// How much of `log` a power cut keeps for certain.
    synced: usize,
    blobs: std::collections::BTreeMap<String, Vec<u8>>,
    /// Every call fails while set (a dead disk).
    failed: bool,
}

/// A log in memory that outlives its node's crashes as a disk does: what was synced
/// survives a power cut, and of the rest a prefix the caller picks (so the last record may
/// be torn). Clones share the disk; the simulator keeps one across a node's lives.
#[derive(Clone, Default)]
pub struct MemoryDisk(Arc<Mutex<Memory>>);

impl MemoryDisk {
    /// A power cut: keeps the synced bytes and `keep(unsynced)` of those after them.
    pub fn crash(&self, keep: impl FnOnce(usize) -> usize) {
        let mut m = self.0.lock();
        let unsynced = m.log.len() - m.synced;
        let len = m.synced + keep(unsynced).min(unsynced);
        m.log.truncate(len);
        m.synced = len;
    }

    /// The disk dies (true) or is replaced by a working, empty one (false).
    pub fn set_failed(&self, failed: bool) {
        let mut m = self.0.lock();
        if !failed {
            *m = Memory::default();
        }
        m.failed = failed;
    }

    fn with<T>(&self, f: impl FnOnce(&mut Memory) -> T) -> io::Result<T> {
        let mut m = self.0.lock();
        if m.failed {
            return Err(io::Error::other("simulated disk failure"));
        }
        Ok(f(&mut m))
    }
}

impl LogDisk for MemoryDisk {
    fn read_log(&mut self) -> io::Result<Vec<u8>> {
        self.with(|m| m.log.clone())
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.with(|m| m.log.extend_from_slice(bytes))
    }

    fn sync(&mut self) -> io::Result<()> {
        self.with(|m| m.synced = m.log.len())
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.with(|m| {
            m.log.truncate(len as usize);
            m.synced = m.synced.min(m.log.len());
        })
    }

    fn replace_log(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.with(|m| {
            m.log = bytes.to_vec();
            m.synced = m.log.len();
        })
    }

    fn put(&mut self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.with(|m| {
            m.blobs.insert(name.to_string(), bytes.to_vec());
        })
    }

    fn get(&mut self, name: &str) -> io::Result<Option<Vec<u8>>> {
        self.with(|m| m.blobs.get(name).cloned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_power_cut_keeps_what_was_synced_and_a_prefix_of_the_rest() {
        let mut d = MemoryDisk::default();
        d.append(b"synced").unwrap();
        d.sync().unwrap();
        d.append(b"-loose").unwrap();
        d.crash(|unsynced| {
            assert_eq!(unsynced, 6);
            2
        });
        assert_eq!(d.read_log().unwrap(), b"synced-l");
    }

    #[test]
    fn files_keep_the_log_and_blobs_across_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = FileDisk::open(dir.path()).unwrap();
        d.append(b"abcdef").unwrap();
        d.sync().unwrap();
        d.truncate(4).unwrap();
        d.append(b"xy").unwrap();
        d.put("vote", b"v1").unwrap();
        d.put("vote", b"v2").unwrap();
        drop(d);
        let mut d = FileDisk::open(dir.path()).unwrap();
        assert_eq!(d.read_log().unwrap(), b"abcdxy");
        assert_eq!(d.get("vote").unwrap().unwrap(), b"v2");
        assert!(d.get("snapshot").unwrap().is_none());
        d.replace_log(b"new").unwrap();
        d.append(b"+").unwrap();
        assert_eq!(d.read_log().unwrap(), b"new+");
    }
}
