//! Recovery's "skip" choice (`ferrite namenode --recover skip`; HDFS's recovery mode offers
//! it as "continue, skipping the bad section in the log"): every record that can still be
//! read is replayed in txid order, past damaged bytes, missing txids and records that no
//! longer apply, and what is given up is logged, one line each.
//!
//! The journal then has holes that a plain start-up would stop at again, so the caller
//! saves an image at the last txid read and sets the damaged copies aside (see
//! `server::set_salvage_down`). Pure apart from reading the segment files.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use tracing::warn;

use super::codec::{decode_frame, decode_op, Frame, RECORD_PREFIX};
use super::recover::every_copy;
use super::segment::{SegmentFile, HEADER_LEN, MAGIC};
use ferrite_namespace::Op;

/// What a skipping replay did.
#[derive(Debug, Default)]
pub struct Salvaged {
    /// The highest txid read, applied or not: the journal goes on after it, so no txid is
    /// handed out twice.
    pub last_txid: u64,
    pub edits: u64,
    /// What was given up, one line each: missing txids, and records that did not decode
    /// or no longer applied.
    pub given_up: Vec<String>,
    /// How many records were given up (txids in no readable copy, and records that did
    /// not decode or apply).
    pub lost: u64,
    /// Segment copies with damage that records follow, to be set aside.
    pub damaged: Vec<PathBuf>,
}

/// The whole records found in one segment copy, past any damage.
#[derive(Debug, Default, PartialEq, Eq)]
struct Found {
    /// (txid, offset, size), in file order; txids rise.
    records: Vec<(u64, usize, usize)>,
    /// Damaged byte ranges with a record after them (a torn tail, with none, is not
    /// damage: it is the unacknowledged write a crash cut short).
    damage: Vec<(usize, usize)>,
}

/// The fewest bytes a record takes: its length and checksum, then its txid (where its op
/// begins).
const MIN_RECORD: usize = RECORD_PREFIX + 8;

/// Txids [`next_whole`] lets be missing without leaving any bytes behind (a gap in the
/// numbering with whole records on both sides).
const MISSING_MAX: u64 = 1 << 20;

/// The first offset from `from` on where a whole record starts (its length and checksum
/// hold) with a txid after `after`, where `from` is where the record after `after` would
/// have begun. A frame that matches its checksum by chance is a one in four billion event.
///
/// The txid is checked before the checksum, against what could fit: the record `after + k`
/// starts at least `(k - 1) * MIN_RECORD` bytes past `from`, unless up to [`MISSING_MAX`]
/// txids went missing without a trace. Without that, a damaged stretch of some repeated
/// small number (each one a plausible length) would cost a checksum of up to a megabyte
/// at every byte.
pub fn next_whole(bytes: &[u8], from: usize, after: u64) -> Option<usize> {
    (from..bytes.len()).find(|&at| {
        let Some(txid) = bytes.get(at + RECORD_PREFIX..at + MIN_RECORD) else {
            return false;
        };
        let txid = u64::from_le_bytes(txid.try_into().expect("8 bytes"));
        let fit = ((at - from) / MIN_RECORD) as u64 + 1;
        let furthest = after.saturating_add(fit + MISSING_MAX);
        (after + 1..=furthest).contains(&txid)
            && matches!(decode_frame(&bytes[at..]), Ok(Frame::Record { .. }))
    })
}

/// Walks a segment copy whose first txid is `first` (as its name says) record by record,
/// and past each break (damage, or a hole of zeros) steps to the next whole record
/// ([`next_whole`]) and goes on from there.
fn find_records(bytes: &[u8], first: u64) -> Found {
    let mut out = Found::default();
    let mut pos = HEADER_LEN;
    let mut last = first.saturating_sub(1);
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        // The first record starts after the header, whatever the header's bytes became.
        let Some(next) = next_whole(bytes, HEADER_LEN.min(bytes.len()), last) else {
            return out;
        };
        out.damage.push((0, next));
        pos = next;
    }
    loop {
        if let Ok(Frame::Record { txid, size, .. }) = decode_frame(&bytes[pos..]) {
            if txid > last {
                out.records.push((txid, pos, size));
                last = txid;
                pos += size;
                continue;
            }
        }
        // Zeros to the end (the preallocated tail) or the file's end: done.
        if bytes[pos..].iter().all(|&b| b == 0) {
            break;
        }
        match next_whole(bytes, pos, last) {
            Some(next) => {
                out.damage.push((pos, next));
                pos = next;
            }
            None => break,
        }
    }
    out
}

/// Replays every record after `after` that any copy still holds, in txid order, through
/// `apply`; see the module's comment.
pub fn replay_skipping(
    dirs: &[PathBuf],
    after: u64,
    mut apply: impl FnMut(u64, &Op) -> Result<(), super::recover::ApplyError>,
) -> Salvaged {
    // Every copy of a segment, grouped by the txid its name starts at.
    let mut segments: BTreeMap<u64, Vec<SegmentFile>> = BTreeMap::new();
    for s in every_copy(dirs) {
        segments.entry(s.first).or_default().push(s);
    }
    let mut out = Salvaged {
        last_txid: after,
        ..Default::default()
    };
    for copies in segments.values() {
        if copies.iter().all(|c| c.last.is_some_and(|l| l <= after)) {
            continue;
        }
        // One segment at a time: its copies hold the same bytes where undamaged, so the
        // first copy that holds a txid gives it.
        let mut held = Vec::with_capacity(copies.len());
        let mut records: BTreeMap<u64, (usize, usize, usize)> = BTreeMap::new();
        for c in copies {
            // A copy that cannot be read is damaged too: another may hold its records.
            let bytes = match fs::read(&c.path) {
                Ok(b) => b,
                Err(e) => {
                    warn!(segment = %c.path.display(), error = %e, "recovery: segment copy unreadable");
                    out.damaged.push(c.path.clone());
                    continue;
                }
            };
            let found = find_records(&bytes, c.first);
            for (from, to) in &found.damage {
                warn!(segment = %c.path.display(), from, to, "recovery: damaged bytes skipped");
            }
            if !found.damage.is_empty() {
                out.damaged.push(c.path.clone());
            }
            for (txid, offset, size) in found.records {
                records.entry(txid).or_insert((held.len(), offset, size));
            }
            held.push((bytes, c.path.display().to_string()));
        }
        for (txid, (copy, offset, size)) in records.range(out.last_txid + 1..) {
            let (bytes, path) = &held[*copy];
            if *txid > out.last_txid + 1 {
                let (from, to) = (out.last_txid + 1, txid - 1);
                out.given_up
                    .push(format!("txids {from}..={to} are in no readable copy"));
                out.lost += to + 1 - from;
            }
            // find_records checked the frame; the op follows its prefix and txid.
            let applied = decode_op(&bytes[offset + MIN_RECORD..offset + size])
                .map_err(|e| format!("does not decode: {e}"))
                .and_then(|op| apply(*txid, &op).map_err(|e| format!("no longer applies: {e}")));
            match applied {
                Ok(()) => out.edits += 1,
                Err(why) => {
                    out.given_up
                        .push(format!("txid {txid} ({path}, offset {offset}) {why}"));
                    out.lost += 1;
                }
            }
            out.last_txid = *txid;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::codec::encode_record;
    use super::super::segment::{self, tests::op};
    use super::*;

    /// A segment's bytes: header, then records `txids`, then `zeros` of preallocated tail.
    /// Returns the bytes and each record's offset.
    fn segment_bytes(txids: std::ops::RangeInclusive<u64>, zeros: usize) -> (Vec<u8>, Vec<usize>) {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&txids.start().to_le_bytes());
        let mut at = Vec::new();
        for t in txids {
            at.push(b.len());
            encode_record(t, &op(t), &mut b);
        }
        b.resize(b.len() + zeros, 0);
        (b, at)
    }

    fn txids(f: &Found) -> Vec<u64> {
        f.records.iter().map(|r| r.0).collect()
    }

    #[test]
    fn a_clean_segment_is_read_whole_and_its_zero_tail_is_not_damage() {
        let (b, at) = segment_bytes(1..=5, 4096);
        let f = find_records(&b, 1);
        assert_eq!(txids(&f), [1, 2, 3, 4, 5]);
        assert_eq!(f.records[2].1, at[2]);
        assert!(f.damage.is_empty());
    }

    #[test]
    fn records_after_a_flipped_byte_are_found_again() {
        let (mut b, at) = segment_bytes(1..=6, 512);
        b[at[2] + 12] ^= 0xff;
        let f = find_records(&b, 1);
        assert_eq!(txids(&f), [1, 2, 4, 5, 6]);
        assert_eq!(f.damage, [(at[2], at[3])]);
    }

    #[test]
    fn records_after_a_zeroed_stretch_and_after_a_bad_header_are_found() {
        let (mut b, at) = segment_bytes(1..=6, 0);
        b[at[1]..at[4]].fill(0);
        b[..4].fill(0xee);
        let f = find_records(&b, 1);
        assert_eq!(txids(&f), [1, 5, 6]);
        assert_eq!(f.damage, [(0, HEADER_LEN), (at[1], at[4])]);
    }

    /// A frame whose checksum holds but whose txid could not be where it sits (record
    /// `after + k` needs `k - 1` records' room before it, give or take `MISSING_MAX`) is
    /// not taken for the next one.
    #[test]
    fn a_whole_frame_with_a_txid_that_cannot_be_there_is_stepped_over() {
        let far = 5 + MISSING_MAX + 2;
        let mut b = Vec::new();
        encode_record(far, &op(far), &mut b);
        let next = b.len();
        encode_record(6, &op(6), &mut b);
        assert_eq!(next_whole(&b, 0, 5), Some(next));
        assert_eq!(next_whole(&b, 0, 6), Some(0), "a gap of MISSING_MAX fits");
    }

    #[test]
    fn a_torn_tail_is_not_damage() {
        let (mut b, at) = segment_bytes(1..=3, 0);
        b.truncate(at[2] + 5);
        b.resize(b.len() + 1000, 0);
        let f = find_records(&b, 1);
        assert_eq!(txids(&f), [1, 2]);
        assert!(f.damage.is_empty(), "{:?}", f.damage);
    }

    #[test]
    fn replay_goes_past_damage_and_reports_what_it_gave_up() {
        let dir = tempfile::tempdir().unwrap();
        let (mut first, at) = segment_bytes(1..=5, 0);
        first[at[1] + 10] ^= 0x01;
        fs::write(dir.path().join(segment::finalized_name(1, 5)), &first).unwrap();
        let (second, _) = segment_bytes(6..=8, 2048);
        fs::write(dir.path().join(segment::inprogress_name(6)), &second).unwrap();
        let mut seen = Vec::new();
        let out = replay_skipping(&[dir.path().to_path_buf()], 0, |t, _| {
            seen.push(t);
            // A record that no longer fits what came before it is skipped too.
            if t == 7 {
                return Err("no such file".into());
            }
            Ok(())
        });
        assert_eq!(seen, [1, 3, 4, 5, 6, 7, 8]);
        assert_eq!((out.last_txid, out.edits, out.lost), (8, 6, 2));
        assert_eq!(out.given_up.len(), 2, "{:?}", out.given_up);
        assert_eq!(out.given_up[0], "txids 2..=2 are in no readable copy");
        assert!(
            out.given_up[1].starts_with("txid 7 ("),
            "{}",
            out.given_up[1]
        );
        assert!(out.given_up[1].ends_with("no longer applies: no such file"));
        assert_eq!(
            out.damaged,
            [dir.path().join(segment::finalized_name(1, 5))]
        );
    }

    #[test]
    fn a_good_copy_in_another_directory_fills_in_what_one_lost() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (good, at) = segment_bytes(1..=4, 0);
        let mut bad = good.clone();
        bad[at[2] + 9] ^= 0x10;
        fs::write(a.path().join(segment::finalized_name(1, 4)), &bad).unwrap();
        fs::write(b.path().join(segment::finalized_name(1, 4)), &good).unwrap();
        let dirs = [a.path().to_path_buf(), b.path().to_path_buf()];
        let mut seen = Vec::new();
        let out = replay_skipping(&dirs, 1, |t, _| {
            seen.push(t);
            Ok(())
        });
        assert_eq!(seen, [2, 3, 4], "txids up to `after` are not replayed");
        assert!(out.given_up.is_empty(), "{:?}", out.given_up);
        assert_eq!(out.damaged, [a.path().join(segment::finalized_name(1, 4))]);
    }
}
