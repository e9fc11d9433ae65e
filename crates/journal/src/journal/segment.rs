//! Journal segment files: naming, scanning (with torn-tail and corruption rules) and writing
//! (preallocated, so that fdatasync after each batch flushes data, not file-size metadata).
//!
//! A segment starts with a 16-byte header (`FERJRNL1` + first txid, little-endian), followed
//! by records (see [`codec`](super::codec)). The unwritten rest of a preallocated segment is
//! zeros, which read as the end of the log.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::codec::{decode_frame, decode_op, DecodeError, Frame, MAX_RECORD, RECORD_PREFIX};
use ferrite_namespace::Op;

pub const MAGIC: &[u8; 8] = b"FERJRNL1";
pub const HEADER_LEN: usize = 16;

pub fn inprogress_name(first: u64) -> String {
    format!("edits_inprogress_{first:019}")
}

pub fn finalized_name(first: u64, last: u64) -> String {
    format!("edits_{first:019}-{last:019}")
}

/// A segment found in a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentFile {
    pub path: PathBuf,
    pub first: u64,
    /// Known for finalized segments; in-progress ones must be scanned.
    pub last: Option<u64>,
}

/// Every segment in `dir`, ordered by first txid.
pub fn list(dir: &Path) -> io::Result<Vec<SegmentFile>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(rest) = name.strip_prefix("edits_inprogress_") {
            if let Ok(first) = rest.parse() {
                out.push(SegmentFile {
                    path: entry.path(),
                    first,
                    last: None,
                });
            }
        } else if let Some(rest) = name.strip_prefix("edits_") {
            if let Some((a, b)) = rest.split_once('-') {
                if let (Ok(first), Ok(last)) = (a.parse(), b.parse()) {
                    out.push(SegmentFile {
                        path: entry.path(),
                        first,
                        last: Some(last),
                    });
                }
            }
        }
    }
    out.sort_by_key(|s| s.first);
    Ok(out)
}

/// How a scanned segment ends.
#[derive(Debug, PartialEq, Eq)]
pub enum Tail {
    /// Records, then zeros or the end of the file; or, from [`scan_until`], the record it
    /// was to stop at.
    Clean,
    /// The last record is partial or damaged and nothing follows it: an unacknowledged write
    /// cut short by a crash. Truncate at `offset`.
    Torn { offset: usize, why: String },
    /// Only from [`Mode::Live`]: past `offset` the bytes read were not all written yet. A
    /// segment read while the syncer appends to it can show a hole of zeros or half a
    /// record with whole records after it, since the read copies the file page by page
    /// while the writer fills it. What was synced before the read started is whole.
    Live { offset: usize, why: String },
    /// Only from [`Mode::Recover`]: damage at `offset` with data after it, or a record out
    /// of txid order. The records before it are whole; nothing from here on is taken.
    Damaged { offset: usize, why: String },
}

/// Where a segment's whole records lie. The scan checks every record's frame (length,
/// checksum, txid order) but decodes no op: [`Scan::records`] decodes them as they are
/// taken, so a reader that wants a stretch (a follower catching up, `readEdits` in chunks)
/// decodes that stretch, not the whole segment each time.
#[derive(Debug)]
pub struct Scan {
    /// The first txid its header names (0 for a segment whose header was never written).
    pub first_txid: u64,
    /// The file offset of the scanned bytes' first byte: 0, or where a resumed scan began
    /// ([`scan_resumed`]). Every other offset here is the file's.
    pub base: usize,
    /// Offset of the first record at or after the scan's `from` txid (`valid_len` if none).
    pub start: usize,
    /// The txid of the last whole record.
    pub last_txid: Option<u64>,
    /// Bytes of header plus valid records.
    pub valid_len: usize,
    pub tail: Tail,
}

#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error("{path}: not a Ferrite journal segment (bad header)")]
    BadHeader { path: String },
    #[error("{path}: corrupt record at offset {offset}: {why}; valid records follow it, so it is not a torn tail")]
    Corrupt {
        path: String,
        offset: usize,
        why: String,
    },
    #[error("{path}: record at offset {offset} has a valid checksum but does not decode: {why}")]
    Undecodable {
        path: String,
        offset: usize,
        why: String,
    },
    #[error("{path}: record at offset {offset} has txid {found}, expected {expected}")]
    TxidGap {
        path: String,
        offset: usize,
        found: u64,
        expected: u64,
    },
}

fn all_zero(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

/// How strictly a scan treats damage with data after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A segment nobody is writing: such damage is corruption.
    Strict,
    /// An in-progress segment read while it is being appended to: such damage ends the
    /// scan as [`Tail::Live`]. Whether it is real is for the caller to decide, from how far
    /// it knows the journal is synced.
    Live,
    /// Start-up in recovery mode (`--recover`), at the operator's request: damage ends the
    /// scan as [`Tail::Damaged`], so the records before it can be kept.
    Recover,
}

impl Scan {
    /// The records from the scan's `from` txid on, decoded one at a time. `bytes` and
    /// `path` are what was scanned. A record whose frame checked but whose op does not
    /// decode cannot be a torn write (its checksum matched): it ends the records with
    /// [`ScanError::Undecodable`].
    pub fn records<'a>(
        &self,
        bytes: &'a [u8],
        path: &'a str,
    ) -> impl Iterator<Item = Result<(u64, Op), ScanError>> + 'a {
        self.records_at(bytes, path)
            .map(|r| r.map(|(_, txid, op)| (txid, op)))
    }

    /// [`records`](Self::records) with each record's offset in the segment.
    pub fn records_at<'a>(
        &self,
        bytes: &'a [u8],
        path: &'a str,
    ) -> impl Iterator<Item = Result<(usize, u64, Op), ScanError>> + 'a {
        let (mut pos, end, base) = (self.start, self.valid_len, self.base);
        std::iter::from_fn(move || {
            if pos >= end {
                return None;
            }
            let at = pos;
            let record = match decode_frame(&bytes[at - base..end - base]) {
                Ok(Frame::Record { txid, op, size }) => {
                    pos += size;
                    decode_op(op).map(|op| (at, txid, op))
                }
                Ok(Frame::End) => Err(DecodeError::BadLength(0)),
                Err(e) => Err(e),
            };
            Some(record.map_err(|e| {
                pos = end;
                ScanError::Undecodable {
                    path: path.into(),
                    offset: at,
                    why: e.to_string(),
                }
            }))
        })
    }
}

/// Scans a segment's bytes (`path` is only used in messages); [`Scan::records`] will
/// start at txid `from`.
pub fn scan_from(bytes: &[u8], path: &str, mode: Mode, from: u64) -> Result<Scan, ScanError> {
    scan_until(bytes, path, mode, from, u64::MAX)
}

/// [`scan_from`] that stops after the record with txid `until`, for a follower, which
/// takes nothing past the synced txid: checking the frames beyond it would be wasted (a
/// follower catching up on a long segment would check its rest on every pass).
pub fn scan_until(
    bytes: &[u8],
    path: &str,
    mode: Mode,
    from: u64,
    until: u64,
) -> Result<Scan, ScanError> {
    // A crash between creating a segment and syncing its header leaves it empty (or zeros):
    // a segment with no records, not a damaged one.
    if bytes.len() < HEADER_LEN && MAGIC.starts_with(&bytes[..bytes.len().min(8)])
        || all_zero(&bytes[..bytes.len().min(HEADER_LEN)])
    {
        return Ok(Scan {
            first_txid: 0,
            base: 0,
            start: 0,
            last_txid: None,
            valid_len: 0,
            tail: Tail::Clean,
        });
    }
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return Err(ScanError::BadHeader { path: path.into() });
    }
    let first = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    let at = Resume {
        offset: HEADER_LEN,
        next: first,
    };
    let scan = scan_resumed(&bytes[HEADER_LEN..], first, at, path, mode, (from, until))?;
    // The caller holds the whole file, header included.
    Ok(Scan { base: 0, ..scan })
}

/// Where a scan of a segment picks up: the record with txid `next` starts at `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resume {
    pub offset: usize,
    pub next: u64,
}

/// [`scan_until`] picked up where an earlier scan of the same segment stopped (or, from
/// `scan_until`, at the first record), to the end or to the record `until`. `window` is
/// the file's bytes from `at.offset` on; every offset in the result is the file's. The
/// header (naming `first`) and the records before `at` are taken as checked already.
/// Segments only grow at the end (a roll trims only the unwritten zeros), so what an
/// earlier scan found whole stays as it was.
pub fn scan_resumed(
    window: &[u8],
    first: u64,
    at: Resume,
    path: &str,
    mode: Mode,
    (from, until): (u64, u64),
) -> Result<Scan, ScanError> {
    let live = mode == Mode::Live;
    let recover = mode == Mode::Recover;
    let base = at.offset;
    let bytes_at = |pos: usize| &window[pos - base..];
    let mut pos = at.offset;
    let mut start = None;
    let mut next = at.next;
    let done = |start: Option<usize>, next: u64, valid_len, tail| Scan {
        first_txid: first,
        base,
        start: start.unwrap_or(valid_len),
        last_txid: (next > first).then(|| next - 1),
        valid_len,
        tail,
    };
    loop {
        match decode_frame(bytes_at(pos)) {
            Ok(Frame::End) => {
                let tail = if all_zero(bytes_at(pos)) {
                    Tail::Clean
                } else {
                    let (offset, why) = (pos, "zero length followed by data".to_string());
                    if recover {
                        return Ok(done(start, next, pos, Tail::Damaged { offset, why }));
                    }
                    if !live {
                        return Err(ScanError::Corrupt {
                            path: path.into(),
                            offset,
                            why,
                        });
                    }
                    Tail::Live { offset, why }
                };
                return Ok(done(start, next, pos, tail));
            }
            Ok(Frame::Record { txid, size, .. }) => {
                if txid != next && recover {
                    let why = format!("txid {txid} where {next} was expected");
                    return Ok(done(start, next, pos, Tail::Damaged { offset: pos, why }));
                }
                if txid != next {
                    return Err(ScanError::TxidGap {
                        path: path.into(),
                        offset: pos,
                        found: txid,
                        expected: next,
                    });
                }
                if txid >= from && start.is_none() {
                    start = Some(pos);
                }
                next += 1;
                pos += size;
                if txid >= until {
                    return Ok(done(start, next, pos, Tail::Clean));
                }
            }
            Err(e) => {
                let extent = damaged_extent(bytes_at(pos), &e);
                let (offset, why) = (pos, e.to_string());
                if all_zero(&bytes_at(pos)[extent..]) {
                    return Ok(done(start, next, pos, Tail::Torn { offset, why }));
                }
                if live {
                    return Ok(done(start, next, pos, Tail::Live { offset, why }));
                }
                if recover {
                    return Ok(done(start, next, pos, Tail::Damaged { offset, why }));
                }
                return Err(ScanError::Corrupt {
                    path: path.into(),
                    offset,
                    why,
                });
            }
        }
    }
}

/// How many bytes a damaged record claims. Past them, a torn tail has only zeros.
fn damaged_extent(rest: &[u8], e: &DecodeError) -> usize {
    let declared = rest
        .get(..4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize);
    match (e, declared) {
        (DecodeError::BadLength(_), _) | (_, None) => rest.len().min(4),
        (_, Some(len)) if len <= MAX_RECORD => (RECORD_PREFIX + len).min(rest.len()),
        _ => rest.len().min(4),
    }
}

/// The segment being appended to.
pub struct SegmentWriter {
    file: File,
    pub path: PathBuf,
    pub dir: PathBuf,
    pub first: u64,
    /// Bytes written (header + records).
    pub written: u64,
    /// Bytes of zeros laid down ahead of the writes.
    allocated: u64,
    chunk: u64,
}

impl SegmentWriter {
    /// Creates `dir/edits_inprogress_<first>` with its header, synced.
    pub fn create(dir: &Path, first: u64, prealloc_chunk: u64) -> io::Result<Self> {
        let path = dir.join(inprogress_name(first));
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)?;
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&first.to_le_bytes());
        let mut w = SegmentWriter {
            file,
            path,
            dir: dir.to_path_buf(),
            first,
            written: 0,
            allocated: 0,
            chunk: prealloc_chunk.max(4096),
        };
        w.append(&header)?;
        w.file.sync_all()?;
        File::open(dir)?.sync_all()?;
        Ok(w)
    }

    /// Writes `bytes` at the end of the valid data, laying down zeros ahead first when needed.
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        let end = self.written + bytes.len() as u64;
        if end > self.allocated {
            self.preallocate(end)?;
        }
        self.file.write_all_at(bytes, self.written)?;
        self.written = end;
        Ok(())
    }

    /// Real zeros rather than a sparse extent: writing into already-written blocks later
    /// changes no metadata, so each fdatasync flushes only data.
    fn preallocate(&mut self, need: u64) -> io::Result<()> {
        let target = need.div_ceil(self.chunk) * self.chunk;
        let zeros = vec![0u8; (1 << 20).min(self.chunk as usize)];
        let mut at = self.allocated;
        while at < target {
            let n = zeros.len().min((target - at) as usize);
            self.file.write_all_at(&zeros[..n], at)?;
            at += n as u64;
        }
        self.allocated = target;
        self.file.sync_all()
    }

    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// Trims the preallocated zeros, syncs and renames to `edits_<first>-<last>`.
    pub fn finalize(self, last: u64) -> io::Result<PathBuf> {
        self.file.set_len(self.written)?;
        self.file.sync_all()?;
        let to = self.dir.join(finalized_name(self.first, last));
        fs::rename(&self.path, &to)?;
        File::open(&self.dir)?.sync_all()?;
        Ok(to)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::codec::encode_record;
    use super::*;

    /// A small record for txid `i` (also the follower tests' in `recover.rs`).
    pub(in crate::journal) fn op(i: u64) -> Op {
        Op::Delete {
            path: format!("/x{i}"),
            mtime: i as i64,
        }
    }

    fn segment(first: u64, n: u64) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&first.to_le_bytes());
        for i in 0..n {
            encode_record(first + i, &op(i), &mut b);
        }
        b
    }

    /// A finished segment's scan from its first record.
    fn scan(bytes: &[u8], path: &str) -> Result<Scan, ScanError> {
        scan_from(bytes, path, Mode::Strict, 0)
    }

    fn txids(s: &Scan, bytes: &[u8]) -> Vec<u64> {
        s.records(bytes, "s").map(|r| r.unwrap().0).collect()
    }

    #[test]
    fn clean_segment_with_preallocated_zeros() {
        let mut b = segment(5, 3);
        let len = b.len();
        b.resize(len + 4096, 0);
        let s = scan(&b, "s").unwrap();
        assert_eq!(txids(&s, &b), vec![5, 6, 7]);
        assert_eq!((s.valid_len, s.tail), (len, Tail::Clean));
    }

    #[test]
    fn partial_last_record_is_a_torn_tail() {
        let full = segment(1, 4);
        let three = segment(1, 3).len();
        for cut in three + 1..full.len() {
            if all_zero(&full[cut..]) {
                continue; // dropping trailing zeros changes nothing once zero-padded
            }
            let mut b = full[..cut].to_vec();
            b.resize(full.len() + 100, 0);
            let s = scan(&b, "s").unwrap();
            assert_eq!(txids(&s, &b), vec![1, 2, 3], "cut at {cut}");
            assert!(matches!(s.tail, Tail::Torn { offset, .. } if offset == three));
        }
    }

    #[test]
    fn damage_before_valid_records_is_corruption() {
        let mut b = segment(1, 4);
        let at = segment(1, 1).len() + RECORD_PREFIX + 3; // inside record 2's payload
        b[at] ^= 0xff;
        let e = scan(&b, "edits_x").unwrap_err();
        assert!(
            matches!(e, ScanError::Corrupt { ref path, offset, .. } if path == "edits_x" && offset == segment(1, 1).len()),
            "{e}"
        );
        assert!(e.to_string().contains("offset"));
    }

    #[test]
    fn txid_gap_and_bad_header() {
        let mut b = segment(1, 2);
        let mut extra = Vec::new();
        encode_record(9, &op(9), &mut extra);
        b.extend_from_slice(&extra);
        assert!(matches!(
            scan(&b, "s"),
            Err(ScanError::TxidGap {
                found: 9,
                expected: 3,
                ..
            })
        ));
        assert!(matches!(
            scan(b"nonsense-nonsense", "s"),
            Err(ScanError::BadHeader { .. })
        ));
    }

    /// A record whose frame verifies but whose op does not decode (an unknown tag).
    pub(in crate::journal) fn undecodable(txid: u64) -> Vec<u8> {
        let mut payload = txid.to_le_bytes().to_vec();
        payload.push(0xee);
        let mut b = (payload.len() as u32).to_le_bytes().to_vec();
        b.extend_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
        b.extend_from_slice(&payload);
        b
    }

    #[test]
    fn ops_are_decoded_only_as_the_records_are_taken() {
        // Record 2's frame checks but its op does not decode. The scan (frames only)
        // passes; taking the records from 3 on never decodes it (the point: a follower
        // pays no decode for what it has); taking them from 1 stops at it, by name.
        let mut b = segment(1, 1);
        let bad_at = b.len();
        b.extend_from_slice(&undecodable(2));
        for t in 3..=5 {
            encode_record(t, &op(t), &mut b);
        }
        b.resize(b.len() + 64, 0);
        let s = scan_from(&b, "s", Mode::Strict, 3).unwrap();
        assert_eq!(
            (txids(&s, &b), s.last_txid, &s.tail),
            (vec![3, 4, 5], Some(5), &Tail::Clean)
        );
        let all: Vec<_> = scan(&b, "s").unwrap().records(&b, "s").collect();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].as_ref().unwrap().0, 1);
        assert!(
            matches!(&all[1], Err(ScanError::Undecodable { offset, .. }) if *offset == bad_at),
            "{:?}",
            all[1]
        );
        let none = scan_from(&b, "s", Mode::Strict, u64::MAX).unwrap();
        assert_eq!(
            (none.records(&b, "s").count(), none.last_txid),
            (0, Some(5))
        );
        assert_eq!(none.valid_len, s.valid_len);

        // Records before `from` still have their frames checked: a bad checksum or a
        // txid gap among them fails the scan as before.
        let mut bad = segment(1, 4);
        bad[segment(1, 1).len() + RECORD_PREFIX + 3] ^= 0xff;
        assert!(matches!(
            scan_from(&bad, "s", Mode::Strict, 4),
            Err(ScanError::Corrupt { .. })
        ));
        let mut gap = segment(1, 2);
        encode_record(9, &op(9), &mut gap);
        encode_record(10, &op(10), &mut gap);
        assert!(matches!(
            scan_from(&gap, "s", Mode::Strict, 10),
            Err(ScanError::TxidGap {
                found: 9,
                expected: 3,
                ..
            })
        ));
        let empty = scan_from(&segment(7, 0), "s", Mode::Live, 1).unwrap();
        assert_eq!(
            (empty.last_txid, empty.start, empty.valid_len),
            (None, 16, 16)
        );
    }

    #[test]
    fn writer_preallocates_finalizes_and_lists() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SegmentWriter::create(dir.path(), 1, 8192).unwrap();
        let mut recs = Vec::new();
        for i in 0..100 {
            encode_record(1 + i, &op(i), &mut recs);
        }
        w.append(&recs).unwrap();
        w.sync().unwrap();
        let len = fs::metadata(&w.path).unwrap().len();
        assert_eq!(len % 8192, 0, "file is preallocated in chunks");
        let bytes = fs::read(&w.path).unwrap();
        let s = scan(&bytes, "s").unwrap();
        assert_eq!(txids(&s, &bytes), (1..=100).collect::<Vec<_>>());
        let to = w.finalize(100).unwrap();
        assert_eq!(
            list(dir.path()).unwrap(),
            vec![SegmentFile {
                path: to.clone(),
                first: 1,
                last: Some(100)
            }]
        );
        assert_eq!(fs::metadata(&to).unwrap().len() as usize, s.valid_len);
    }
}
