//! Where a volume keeps its replicas' bytes: the seam between the replica state machine
//! (`Dataset`: states, generation stamps, writers, space, failures) and the medium.
//!
//! A replica is two byte streams, its data and its checksums ("meta": a header and one
//! checksum per chunk), stored under its block id, generation stamp and state. The disk
//! store ([`DiskFiles`](super::disk_files::DiskFiles)) keeps HDFS's directory layout; the
//! memory store ([`MemoryFiles`](super::memory_files::MemoryFiles)) keeps the same in
//! maps, for tests of the state machine. One conformance suite runs against both.

use std::io;
use std::path::PathBuf;

use ferrite_transfer::checksum::{parse_meta_header, Checksum, META_HEADER_LEN};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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

/// Which stored replica: its block id, generation stamp and state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub id: u64,
    pub gs: u64,
    pub state: State,
}

/// One of a replica's two streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Data,
    Meta,
}

/// A replica's open streams. They stay usable across a rename of the replica (as an open
/// file does), and reads and writes at an offset need no shared position.
pub trait ReplicaStreams: Send + Sync {
    fn write_at(&self, part: Part, offset: u64, bytes: &[u8]) -> io::Result<()>;
    fn read_at(&self, part: Part, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    fn len(&self, part: Part) -> io::Result<u64>;
    fn set_len(&self, part: Part, len: u64) -> io::Result<()>;
    /// hsync: both streams reach stable storage.
    fn sync(&self) -> io::Result<()>;
}

/// One volume's replica bytes.
pub trait ReplicaFiles: Send + Sync {
    /// A new, empty replica being written; a leftover under the same key is emptied.
    fn create(&self, id: u64, gs: u64) -> io::Result<Box<dyn ReplicaStreams>>;
    fn open(&self, key: Key) -> io::Result<Box<dyn ReplicaStreams>>;
    /// Moves a replica to another stamp or state. A crash partway must never leave a
    /// replica that reads as finished or longer than it is; the store orders its steps so.
    fn rename(&self, from: Key, to: Key) -> io::Result<()>;
    /// Deletes a replica; one already gone is not an error.
    fn remove(&self, key: Key) -> io::Result<()>;
    /// Every replica stored, as start-up finds it. An unfinished replica's length counts
    /// only the bytes its checksums cover.
    fn scan(&self) -> Vec<Found>;
    /// Whether the medium still takes writes (a full one does: its replicas stay readable).
    fn works(&self) -> bool;
    /// (capacity, available) bytes.
    fn space(&self) -> (u64, u64);
    /// The files of a replica, for the read server's cached descriptors and zero-copy
    /// sends; `None` for a store that has none.
    fn paths(&self, key: Key) -> Option<(PathBuf, PathBuf)>;
    /// Whether a call may stall its thread (a disk's may; memory's never do).
    fn stalls(&self) -> bool {
        true
    }
}

/// The checksum a replica's meta header names.
pub fn read_checksum(s: &dyn ReplicaStreams) -> io::Result<Checksum> {
    let mut head = [0u8; META_HEADER_LEN];
    s.read_at(Part::Meta, 0, &mut head)?;
    parse_meta_header(&head).map_err(io::Error::other)
}

/// Of `data_len` bytes, those covered by the `meta_len`-byte meta's checksums.
pub fn covered_len(c: &Checksum, data_len: u64, meta_len: u64) -> u64 {
    let sums = meta_len.saturating_sub(META_HEADER_LEN as u64) / c.kind.size().max(1) as u64;
    data_len.min(sums.saturating_mul(c.bytes_per_checksum as u64))
}

/// A finished replica's length as a start-up scan finds it: its data file's, when its
/// checksums cover all of it. A power cut soon after the replica was finished (HDFS does
/// not sync on close by default) may leave the meta file short; then only the covered
/// bytes count, and the NameNode, seeing a length other than the block's, deletes this
/// copy and makes another from a good one. `header` reads the checksum kind, and is
/// called only when the meta's size is not the one CRC32C over 512-byte chunks (the
/// default) would give, so a scan opens no file for a whole replica.
pub fn finalized_len(
    data_len: u64,
    meta_len: u64,
    header: impl FnOnce() -> Option<Checksum>,
) -> u64 {
    let default = Checksum::CRC32C_512;
    let whole = META_HEADER_LEN as u64
        + data_len.div_ceil(default.bytes_per_checksum as u64) * default.kind.size() as u64;
    if meta_len == whole {
        return data_len;
    }
    header().map_or(0, |c| covered_len(&c, data_len, meta_len))
}

/// The bytes of an unfinished replica that have their checksums, so bytes that reached
/// the medium without theirs are not counted. A power cut before the checksum header
/// reached the medium leaves no checked byte at all: length 0, as a scan finds it.
pub fn stored_len(s: &dyn ReplicaStreams) -> io::Result<u64> {
    if s.len(Part::Meta)? < META_HEADER_LEN as u64 {
        return Ok(0);
    }
    let c = read_checksum(s)?;
    Ok(covered_len(&c, s.len(Part::Data)?, s.len(Part::Meta)?))
}

/// Cuts a replica to `len` bytes of data. A cut inside a chunk leaves a partial last
/// chunk whose stored checksum covered more bytes: it is computed again from the data
/// that remains, so readers verify what is there. Synced before it returns.
pub fn cut(s: &dyn ReplicaStreams, len: u64) -> io::Result<()> {
    let c = read_checksum(s)?;
    s.set_len(Part::Data, len)?;
    let bpc = c.bytes_per_checksum as u64;
    let chunks = len.div_ceil(bpc);
    let size = c.kind.size() as u64;
    s.set_len(Part::Meta, META_HEADER_LEN as u64 + chunks * size)?;
    let tail = len % bpc;
    if tail != 0 {
        let mut buf = vec![0u8; tail as usize];
        s.read_at(Part::Data, len - tail, &mut buf)?;
        let mut sum = Vec::with_capacity(size as usize);
        c.compute_into(&buf, &mut sum);
        s.write_at(
            Part::Meta,
            META_HEADER_LEN as u64 + (chunks - 1) * size,
            &sum,
        )?;
    }
    s.sync()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_replica_counts_only_the_bytes_its_checksums_cover() {
        let c = Checksum::CRC32C_512;
        let hdr = META_HEADER_LEN as u64;
        let never = || -> Option<Checksum> { panic!("no header read for a whole replica") };
        assert_eq!(finalized_len(1300, hdr + 3 * 4, never), 1300);
        assert_eq!(finalized_len(0, hdr, never), 0);
        // A power cut took the last checksum: two whole chunks are left.
        assert_eq!(finalized_len(1300, hdr + 2 * 4, || Some(c)), 1024);
        // A torn header: nothing checked.
        assert_eq!(finalized_len(1300, 3, || None), 0);
    }

    #[test]
    fn only_bytes_with_checksums_are_covered() {
        let c = Checksum::CRC32C_512;
        let head = META_HEADER_LEN as u64;
        assert_eq!(covered_len(&c, 900, head + 4), 512);
        assert_eq!(covered_len(&c, 900, head + 8), 900);
        assert_eq!(covered_len(&c, 900, head), 0);
        assert_eq!(covered_len(&c, 900, 2), 0, "a meta shorter than its header");
    }
}
