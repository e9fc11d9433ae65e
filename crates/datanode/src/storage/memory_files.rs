//! Replica bytes in memory: the disk layout's twin for tests of the replica state machine
//! and for the simulator's DataNodes. A replica's two streams are shared buffers; renaming
//! moves them to a new key and open streams keep writing into them, as open files do across
//! a rename. Capacity is a configured figure, and the store can be made to fail, as a disk
//! does.
//!
//! It can also lose what a power cut loses: each stream remembers its bytes as they were
//! at its last sync (or the kernel's last writeback, [`MemoryFiles::write_back`]), and
//! [`MemoryFiles::crash`] puts every stream back to those, plus as much of what was
//! appended since as the caller says reached the disk. Creating, renaming and removing
//! replicas count as durable at once (a journaling file system orders them before the
//! data that follows).

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::files::{
    covered_len, finalized_len, read_checksum, Found, Key, Part, ReplicaFiles, ReplicaStreams,
    State,
};

/// A replica's data and meta, and both as they were at the last sync.
#[derive(Default)]
struct Buffers {
    data: Vec<u8>,
    meta: Vec<u8>,
    synced_data: Vec<u8>,
    synced_meta: Vec<u8>,
}

impl Buffers {
    fn part(&mut self, part: Part) -> &mut Vec<u8> {
        match part {
            Part::Data => &mut self.data,
            Part::Meta => &mut self.meta,
        }
    }

    fn sync(&mut self) {
        self.synced_data.clone_from(&self.data);
        self.synced_meta.clone_from(&self.meta);
    }

    /// Back to the synced bytes, plus `keep(n)` of the `n` bytes appended since (bytes
    /// rewritten inside the synced length are lost with the rest: they went out together).
    fn crash(&mut self, keep: &mut dyn FnMut(usize) -> usize) {
        for (now, synced) in [
            (&mut self.data, &mut self.synced_data),
            (&mut self.meta, &mut self.synced_meta),
        ] {
            if now.starts_with(synced) {
                let extra = now.len() - synced.len();
                now.truncate(synced.len() + keep(extra).min(extra));
            } else {
                now.clone_from(synced);
            }
            synced.clone_from(now);
        }
    }
}

type Shared = Arc<Mutex<Buffers>>;

pub struct MemoryFiles {
    replicas: Mutex<HashMap<Key, Shared>>,
    capacity: u64,
    failed: Arc<AtomicBool>,
}

impl MemoryFiles {
    pub fn new(capacity: u64) -> Self {
        MemoryFiles {
            replicas: Mutex::default(),
            capacity,
            failed: Arc::default(),
        }
    }

    /// From now on every operation fails, as on a disk that has died.
    pub fn fail(&self) {
        self.failed.store(true, Ordering::SeqCst);
    }

    /// The kernel's writeback: everything written so far is on the disk.
    pub fn write_back(&self) {
        for b in self.replicas.lock().values() {
            b.lock().sync();
        }
    }

    /// A power cut: every replica loses what was not synced or written back, but for
    /// `keep(n)` of the `n` bytes each stream had appended since (in replica order, so a
    /// seeded `keep` replays exactly).
    pub fn crash(&self, keep: &mut dyn FnMut(usize) -> usize) {
        let all = self.replicas.lock();
        let mut keys: Vec<&Key> = all.keys().collect();
        keys.sort_by_key(|k| (k.id, k.gs, k.state == State::Finalized));
        for k in keys {
            all[k].lock().crash(keep);
        }
    }

    fn check(&self) -> io::Result<()> {
        check(&self.failed)
    }

    fn streams(&self, b: Shared) -> Box<dyn ReplicaStreams> {
        Box::new(MemoryStreams {
            bytes: b,
            failed: self.failed.clone(),
        })
    }
}

fn check(failed: &AtomicBool) -> io::Result<()> {
    if failed.load(Ordering::SeqCst) {
        return Err(io::Error::other(
            "input/output error (the memory volume has failed)",
        ));
    }
    Ok(())
}

fn not_found(k: Key) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no replica {k:?}"))
}

struct MemoryStreams {
    bytes: Shared,
    failed: Arc<AtomicBool>,
}

impl ReplicaStreams for MemoryStreams {
    fn write_at(&self, part: Part, offset: u64, bytes: &[u8]) -> io::Result<()> {
        check(&self.failed)?;
        let mut b = self.bytes.lock();
        let v = b.part(part);
        let (at, end) = (offset as usize, offset as usize + bytes.len());
        if v.len() < end {
            v.resize(end, 0);
        }
        v[at..end].copy_from_slice(bytes);
        Ok(())
    }

    fn read_at(&self, part: Part, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        check(&self.failed)?;
        let mut b = self.bytes.lock();
        let v = b.part(part);
        let at = offset as usize;
        let Some(src) = v.get(at..at + buf.len()) else {
            return Err(io::ErrorKind::UnexpectedEof.into());
        };
        buf.copy_from_slice(src);
        Ok(())
    }

    fn len(&self, part: Part) -> io::Result<u64> {
        check(&self.failed)?;
        Ok(self.bytes.lock().part(part).len() as u64)
    }

    fn set_len(&self, part: Part, len: u64) -> io::Result<()> {
        check(&self.failed)?;
        self.bytes.lock().part(part).resize(len as usize, 0);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        check(&self.failed)?;
        self.bytes.lock().sync();
        Ok(())
    }
}

impl ReplicaFiles for MemoryFiles {
    fn create(&self, id: u64, gs: u64) -> io::Result<Box<dyn ReplicaStreams>> {
        self.check()?;
        let key = Key {
            id,
            gs,
            state: State::Rbw,
        };
        let b = Shared::default();
        self.replicas.lock().insert(key, b.clone());
        Ok(self.streams(b))
    }

    fn open(&self, key: Key) -> io::Result<Box<dyn ReplicaStreams>> {
        self.check()?;
        let b = self.replicas.lock().get(&key).cloned();
        b.map(|b| self.streams(b)).ok_or_else(|| not_found(key))
    }

    fn rename(&self, from: Key, to: Key) -> io::Result<()> {
        self.check()?;
        let mut all = self.replicas.lock();
        let b = all.remove(&from).ok_or_else(|| not_found(from))?;
        all.insert(to, b);
        Ok(())
    }

    fn remove(&self, key: Key) -> io::Result<()> {
        self.check()?;
        self.replicas.lock().remove(&key);
        Ok(())
    }

    fn scan(&self) -> Vec<Found> {
        if self.check().is_err() {
            return Vec::new();
        }
        let all = self.replicas.lock();
        all.iter()
            .map(|(k, b)| {
                let s = self.streams(b.clone());
                let (data, meta) = (s.len(Part::Data), s.len(Part::Meta));
                let (data, meta) = (data.unwrap_or(0), meta.unwrap_or(0));
                let len = match k.state {
                    State::Finalized => finalized_len(data, meta, || read_checksum(&*s).ok()),
                    State::Rbw => match read_checksum(&*s) {
                        Ok(c) => covered_len(&c, data, meta),
                        Err(_) => 0,
                    },
                };
                Found {
                    id: k.id,
                    gs: k.gs,
                    len,
                    state: k.state,
                }
            })
            .collect()
    }

    fn works(&self) -> bool {
        self.check().is_ok()
    }

    fn space(&self) -> (u64, u64) {
        let used: u64 = self
            .replicas
            .lock()
            .values()
            .map(|b| {
                let b = b.lock();
                (b.data.len() + b.meta.len()) as u64
            })
            .sum();
        (self.capacity, self.capacity.saturating_sub(used))
    }

    fn stalls(&self) -> bool {
        false
    }

    fn paths(&self, _: Key) -> Option<(PathBuf, PathBuf)> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(s: &dyn ReplicaStreams, part: Part) -> Vec<u8> {
        let mut b = vec![0; s.len(part).unwrap() as usize];
        s.read_at(part, 0, &mut b).unwrap();
        b
    }

    #[test]
    fn a_crash_keeps_synced_bytes_and_the_chosen_part_of_the_rest() {
        let files = MemoryFiles::new(1 << 20);
        let s = files.create(1, 7).unwrap();
        s.write_at(Part::Data, 0, b"synced").unwrap();
        s.sync().unwrap();
        s.write_at(Part::Data, 6, b"-unsynced").unwrap();
        s.write_at(Part::Meta, 0, b"meta").unwrap();
        files.crash(&mut |n| n / 3);
        assert_eq!(bytes(&*s, Part::Data), b"synced-un");
        assert_eq!(bytes(&*s, Part::Meta), b"m");

        // A rewrite inside the synced bytes is lost whole; writeback makes bytes durable.
        s.write_at(Part::Data, 0, b"SY").unwrap();
        files.crash(&mut |n| n);
        assert_eq!(bytes(&*s, Part::Data), b"synced-un");
        s.write_at(Part::Data, 9, b"synced").unwrap();
        files.write_back();
        files.crash(&mut |_| 0);
        assert_eq!(bytes(&*s, Part::Data), b"synced-unsynced");
    }
}
