//! `ferrite oev`: a journal segment read offline, as `hdfs oev` reads an edits file. Each
//! record with its txid and offset, or counts per kind of record, then how the segment
//! ends. A damaged segment is the case this exists for: before an operator runs
//! `ferrite namenode --recover`, it shows where the damage is and which whole records lie
//! past it, which recovery would set aside.
//!
//! Pure: it reads bytes and writes lines; `super` does the files.

use std::collections::BTreeMap;
use std::io::{self, Write};

use ferrite_namenode::journal::codec::{decode_frame, decode_op, Frame};
use ferrite_namenode::journal::salvage::next_whole;
use ferrite_namenode::journal::segment::{self, Mode, Tail};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Processor {
    /// One line per record: txid, offset, the op and its fields.
    Text,
    /// How many records of each kind, as `hdfs oev -p stats` prints.
    Stats,
}

/// What the segment held, for the exit status.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Verdict {
    /// Whole records before any damage.
    pub records: u64,
    /// Damage that start-up would refuse (not a torn tail, which it truncates).
    pub damaged: bool,
}

/// Reads the segment `bytes` (named `path` in messages) and writes what `processor` asks for.
pub(super) fn view(
    bytes: &[u8],
    path: &str,
    processor: Processor,
    out: &mut impl Write,
) -> anyhow::Result<Verdict> {
    // Recover mode reads up to damage and says where it is, rather than failing.
    let scan = segment::scan_from(bytes, path, Mode::Recover, 0)?;
    if scan.valid_len == 0 {
        writeln!(
            out,
            "# {path}: no header: created, then a crash before anything was written"
        )?;
        return Ok(Verdict {
            records: 0,
            damaged: false,
        });
    }
    let first = scan.first_txid;
    writeln!(out, "# {path}: journal segment from txid {first}")?;
    let mut counts = Counts::default();
    let mut undecodable = None;
    for record in scan.records_at(bytes, path) {
        match record {
            Ok((offset, txid, op)) => {
                if processor == Processor::Text {
                    writeln!(out, "txid={txid} offset={offset} {op}")?;
                }
                counts.add(txid, op.name());
            }
            Err(e) => undecodable = Some(e),
        }
    }
    if processor == Processor::Stats {
        counts.write(out)?;
    }
    let damaged = match (&undecodable, &scan.tail) {
        (Some(e), _) => {
            writeln!(
                out,
                "# DAMAGED: {e}. Replayed before it: {}.",
                counts.span()
            )?;
            if let segment::ScanError::Undecodable { offset, .. } = e {
                let last_good = counts
                    .first
                    .map_or(first.saturating_sub(1), |_| counts.last);
                past_damage(bytes, *offset, last_good, out)?;
            }
            true
        }
        (None, Tail::Clean) => {
            let unwritten = bytes.len() - scan.valid_len;
            let rest = if unwritten > 0 {
                format!("; then {unwritten} bytes preallocated and not yet written")
            } else {
                String::new()
            };
            writeln!(out, "# end: {}{rest}", counts.span())?;
            false
        }
        (None, Tail::Torn { offset, why }) => {
            writeln!(
                out,
                "# torn tail at offset {offset} ({why}) after {}: a crash cut the last \
                 write short. It was never acknowledged; start-up truncates it.",
                counts.span()
            )?;
            false
        }
        (None, Tail::Damaged { offset, why }) => {
            writeln!(
                out,
                "# DAMAGED at offset {offset}: {why}. Replayed before it: {}.",
                counts.span()
            )?;
            past_damage(
                bytes,
                *offset,
                scan.last_txid.unwrap_or(first.saturating_sub(1)),
                out,
            )?;
            if path.contains("edits_inprogress_") {
                // A read copies the file page by page while the syncer may be filling it.
                writeln!(
                    out,
                    "# this segment is in progress: if a NameNode is writing it now, its \
                     last records may have been in flight; read it again to tell"
                )?;
            }
            true
        }
        (None, Tail::Live { .. }) => unreachable!("only a live scan ends as Live"),
    };
    Ok(Verdict {
        records: counts.records,
        damaged,
    })
}

/// What lies past damage at `offset`: the whole records found by stepping forward a byte
/// at a time to the next frame that checks and comes after the last good txid, then
/// onwards from it; and past every further break the same way, to the segment's end.
/// Start-up stops at the damage (unless another journal directory has a good copy),
/// `--recover` keeps only what came before it, and `--recover skip` replays these too.
fn past_damage(
    bytes: &[u8],
    offset: usize,
    last_good: u64,
    out: &mut impl Write,
) -> io::Result<()> {
    // From the damage itself: a record out of txid order is whole, and set aside too.
    let Some(mut at) = next_whole(bytes, offset, last_good) else {
        return writeln!(out, "# nothing whole follows the damage");
    };
    writeln!(
        out,
        "# past the damage from offset {at} (not replayed; `ferrite namenode --recover` \
         keeps txids up to {last_good} and sets these aside, `--recover skip` replays \
         them, unless another journal directory holds them whole):"
    )?;
    let mut counts = Counts::default();
    loop {
        while let Ok(Frame::Record { txid, op, size }) = decode_frame(&bytes[at..]) {
            match decode_op(op) {
                Ok(op) => writeln!(out, "txid={txid} offset={at} {op}")?,
                Err(e) => writeln!(out, "txid={txid} offset={at} (does not decode: {e})")?,
            }
            counts.add(txid, "");
            at += size;
        }
        // Zeros (preallocated, unwritten) or the file's end; otherwise another break.
        if bytes[at..].iter().all(|&b| b == 0) {
            break;
        }
        let Some(next) = next_whole(bytes, at, counts.last) else {
            writeln!(
                out,
                "# another break at offset {at}; nothing whole follows it"
            )?;
            break;
        };
        writeln!(
            out,
            "# another break at offset {at}; whole records again from offset {next}:"
        )?;
        at = next;
    }
    writeln!(out, "# past the damage: {}", counts.span())
}

/// Records seen, by kind, and the txids they span.
#[derive(Default)]
struct Counts {
    records: u64,
    first: Option<u64>,
    last: u64,
    by_kind: BTreeMap<&'static str, u64>,
}

impl Counts {
    fn add(&mut self, txid: u64, kind: &'static str) {
        self.records += 1;
        self.first.get_or_insert(txid);
        self.last = txid;
        *self.by_kind.entry(kind).or_default() += 1;
    }

    fn span(&self) -> String {
        match (self.records, self.first) {
            (1, Some(t)) => format!("1 record, txid {t}"),
            (n, Some(t)) => format!("{n} records, txids {t}..{}", self.last),
            _ => "no records".to_string(),
        }
    }

    fn write(&self, out: &mut impl Write) -> io::Result<()> {
        for (kind, n) in &self.by_kind {
            writeln!(out, "{kind:<20} {n}")?;
        }
        writeln!(out, "{:<20} {}", "total", self.records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_namenode::journal::codec::encode_record;
    use ferrite_namenode::namespace::ops::Op;

    fn mkdir(i: u64) -> Op {
        Op::Mkdir {
            path: format!("/d{i}"),
            id: 16385 + i,
            perm: 0o755,
            owner: "alice".into(),
            group: "staff".into(),
            mtime: 1000 + i as i64,
        }
    }

    /// A segment from txid 1 holding mkdirs 1..=n, then `tail` zeros; and each record's offset.
    fn segment(n: u64, tail: usize) -> (Vec<u8>, Vec<usize>) {
        let mut b = segment::MAGIC.to_vec();
        b.extend_from_slice(&1u64.to_le_bytes());
        let mut offsets = Vec::new();
        for t in 1..=n {
            offsets.push(b.len());
            encode_record(t, &mkdir(t), &mut b);
        }
        b.resize(b.len() + tail, 0);
        (b, offsets)
    }

    fn run(bytes: &[u8], p: Processor) -> (String, Verdict) {
        let mut out = Vec::new();
        let v = view(bytes, "edits_inprogress_1", p, &mut out).unwrap();
        (String::from_utf8(out).unwrap(), v)
    }

    #[test]
    fn a_clean_segment_lists_every_record_with_its_offset() {
        let (b, offsets) = segment(3, 4096);
        let (text, v) = run(&b, Processor::Text);
        assert_eq!(
            v,
            Verdict {
                records: 3,
                damaged: false
            }
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "# edits_inprogress_1: journal segment from txid 1"
        );
        assert_eq!(
            lines[1],
            format!(
                "txid=1 offset={} OP_MKDIR path=/d1 id=16386 perm=0755 owner=alice group=staff mtime=1001",
                offsets[0]
            )
        );
        assert!(lines[3].starts_with(&format!("txid=3 offset={} ", offsets[2])));
        assert_eq!(
            lines[4],
            "# end: 3 records, txids 1..3; then 4096 bytes preallocated and not yet written"
        );
    }

    #[test]
    fn stats_count_records_by_kind() {
        let (mut b, _) = segment(2, 0);
        encode_record(
            3,
            &Op::Delete {
                path: "/d1".into(),
                mtime: 5,
            },
            &mut b,
        );
        let (text, _) = run(&b, Processor::Stats);
        assert!(text.contains("OP_DELETE            1\n"), "{text}");
        assert!(text.contains("OP_MKDIR             2\n"), "{text}");
        assert!(text.contains("total                3\n"), "{text}");
        assert!(!text.contains("txid=1"), "{text}");
    }

    #[test]
    fn a_torn_tail_is_not_damage() {
        let (mut b, offsets) = segment(3, 0);
        b.truncate(offsets[2] + 6);
        b.resize(b.len() + 100, 0);
        let (text, v) = run(&b, Processor::Text);
        assert!(!v.damaged);
        assert_eq!(v.records, 2);
        assert!(
            text.contains(&format!("# torn tail at offset {} ", offsets[2])),
            "{text}"
        );
    }

    #[test]
    fn damage_in_the_middle_shows_what_lies_past_it() {
        let (mut b, offsets) = segment(5, 64);
        b[offsets[2] + 12] ^= 0xff; // inside record 3's payload: its checksum fails
        let (text, v) = run(&b, Processor::Text);
        assert_eq!(
            v,
            Verdict {
                records: 2,
                damaged: true
            }
        );
        assert!(
            text.contains(&format!("# DAMAGED at offset {}: ", offsets[2])),
            "{text}"
        );
        assert!(
            text.contains("Replayed before it: 2 records, txids 1..2."),
            "{text}"
        );
        assert!(
            text.contains(&format!("# past the damage from offset {} ", offsets[3])),
            "{text}"
        );
        assert!(text.contains("keeps txids up to 2"), "{text}");
        assert!(
            text.contains(&format!("txid=5 offset={} OP_MKDIR path=/d5", offsets[4])),
            "{text}"
        );
        assert!(
            text.contains("# past the damage: 2 records, txids 4..5\n"),
            "{text}"
        );
        assert!(
            text.trim_end().ends_with("read it again to tell"),
            "an in-progress segment may be read mid-write: {text}"
        );
    }

    #[test]
    fn a_txid_gap_is_damage_and_the_record_after_it_is_listed_as_set_aside() {
        let (mut b, _) = segment(2, 0);
        let gap_at = b.len();
        for t in [4, 5] {
            encode_record(t, &mkdir(t), &mut b);
        }
        let (text, v) = run(&b, Processor::Text);
        assert!(v.damaged);
        assert!(
            text.contains(&format!(
                "# DAMAGED at offset {gap_at}: txid 4 where 3 was expected."
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!("# past the damage from offset {gap_at} ")),
            "{text}"
        );
        assert!(
            text.contains("# past the damage: 2 records, txids 4..5\n"),
            "{text}"
        );
    }

    /// A record whose checksum holds but whose op does not decode (written by a newer
    /// version, say): named, and it and what follows are listed as set aside.
    #[test]
    fn an_undecodable_record_is_damage_and_listed_with_what_follows() {
        let (mut b, _) = segment(3, 0);
        let bad_at = b.len();
        // Txid 4, then an op tag no version has used, under a checksum that holds.
        let mut payload = 4u64.to_le_bytes().to_vec();
        payload.push(0xee);
        b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        b.extend_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
        b.extend_from_slice(&payload);
        encode_record(5, &mkdir(5), &mut b);
        let (text, v) = run(&b, Processor::Text);
        assert!(v.damaged);
        assert_eq!(v.records, 3);
        assert!(
            text.contains(&format!(
                "offset {bad_at} has a valid checksum but does not decode"
            )),
            "{text}"
        );
        assert!(
            text.contains("Replayed before it: 3 records, txids 1..3."),
            "{text}"
        );
        assert!(
            text.contains(&format!("txid=4 offset={bad_at} (does not decode: ")),
            "{text}"
        );
        assert!(
            text.contains("# past the damage: 2 records, txids 4..5\n"),
            "{text}"
        );
    }

    /// Two damaged records: the records between them and those after the second are
    /// all listed, each break named.
    #[test]
    fn every_break_past_the_damage_is_stepped_over() {
        let (mut b, offsets) = segment(7, 64);
        b[offsets[1] + 12] ^= 0xff; // record 2
        b[offsets[4] + 12] ^= 0xff; // record 5
        let (text, v) = run(&b, Processor::Text);
        assert!(v.damaged);
        assert_eq!(v.records, 1);
        assert!(
            text.contains(&format!("# past the damage from offset {} ", offsets[2])),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "# another break at offset {}; whole records again from offset {}:",
                offsets[4], offsets[5]
            )),
            "{text}"
        );
        for t in [3, 4, 6, 7] {
            assert!(
                text.contains(&format!("txid={t} offset={} ", offsets[t as usize - 1])),
                "txid {t}: {text}"
            );
        }
        assert!(
            text.contains("# past the damage: 4 records, txids 3..7\n"),
            "{text}"
        );
    }

    #[test]
    fn a_segment_created_but_never_written_is_empty_not_damaged() {
        let (text, v) = run(&[0u8; 4096], Processor::Text);
        assert!(!v.damaged);
        assert!(text.contains("no header"), "{text}");
    }

    #[test]
    fn a_file_that_is_no_segment_is_refused() {
        let mut out = Vec::new();
        let e = view(
            b"PK\x03\x04 not a journal",
            "x.zip",
            Processor::Text,
            &mut out,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("not a Ferrite journal segment"),
            "{e}"
        );
    }
}
