//! Start-up replay: read the journal directories, pick for each stretch of txids the copy
//! that reaches furthest, hand every record after the image's txid to `apply`, then close
//! out in-progress segments (torn tails truncated and logged, corrupt copies set aside).

use std::fs;
use std::path::{Path, PathBuf};

use tracing::{info, warn};

use super::segment::{self, finalized_name, Scan, ScanError, SegmentFile, Tail};
use crate::namespace::Op;

#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    #[error(transparent)]
    Corrupt(#[from] ScanError),
    #[error("transactions {from}..{to} are missing from every journal directory ({dirs})")]
    Gap { from: u64, to: u64, dirs: String },
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("replaying txid {txid} from {path}: {why}")]
    Apply {
        txid: u64,
        path: String,
        why: String,
    },
}

#[derive(Debug, Default)]
pub struct Replayed {
    pub last_txid: u64,
    pub edits: u64,
    pub segments: usize,
}

fn read(path: &Path) -> Result<Vec<u8>, RecoverError> {
    fs::read(path).map_err(|source| RecoverError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Replays every transaction after `after` through `apply`, in txid order.
pub fn replay(
    dirs: &[PathBuf],
    after: u64,
    apply: impl FnMut(u64, &Op) -> Result<(), String>,
) -> Result<Replayed, RecoverError> {
    read_after(dirs, after, true, apply)
}

/// [`replay`] for a follower reading while the journal is live: the in-progress segment's
/// end may be a record still being written, which is not worth a warning.
pub fn follow(
    dirs: &[PathBuf],
    after: u64,
    apply: impl FnMut(u64, &Op) -> Result<(), String>,
) -> Result<Replayed, RecoverError> {
    read_after(dirs, after, false, apply)
}

fn read_after(
    dirs: &[PathBuf],
    after: u64,
    warn_torn: bool,
    mut apply: impl FnMut(u64, &Op) -> Result<(), String>,
) -> Result<Replayed, RecoverError> {
    let mut candidates: Vec<SegmentFile> = Vec::new();
    for d in dirs {
        match segment::list(d) {
            Ok(s) => candidates.extend(s),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                warn!(dir = %d.display(), error = %e, "journal directory unreadable; skipped for replay")
            }
        }
    }
    let mut out = Replayed {
        last_txid: after,
        ..Default::default()
    };
    let mut expected = after + 1;
    loop {
        // Copies holding `expected`, finalized ones (known extent) first, longest first.
        let mut options: Vec<&SegmentFile> = candidates
            .iter()
            .filter(|s| s.first <= expected && s.last.is_none_or(|l| l >= expected))
            .collect();
        options.sort_by_key(|s| std::cmp::Reverse(s.last.unwrap_or(0)));
        if options.is_empty() {
            if let Some(next) = candidates
                .iter()
                .map(|s| s.first)
                .filter(|&f| f > expected)
                .min()
            {
                let dirs = dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(RecoverError::Gap {
                    from: expected,
                    to: next - 1,
                    dirs,
                });
            }
            return Ok(out);
        }
        let mut best: Option<(Scan, &SegmentFile)> = None;
        let mut first_err = None;
        for seg in options {
            let bytes = read(&seg.path)?;
            match segment::scan(&bytes, &seg.path.display().to_string()) {
                Ok(scan) => {
                    let reach = scan.records.last().map(|r| r.0).unwrap_or(0);
                    if best
                        .as_ref()
                        .is_none_or(|(b, _)| reach > b.records.last().map(|r| r.0).unwrap_or(0))
                    {
                        best = Some((scan, seg));
                    }
                }
                Err(e) => {
                    warn!(error = %e, "journal segment copy unusable");
                    first_err.get_or_insert(e);
                }
            }
        }
        let Some((scan, seg)) = best else {
            return Err(first_err.expect("an option either scans or fails").into());
        };
        let reach = scan.records.last().map(|r| r.0).unwrap_or(0);
        if reach < expected {
            // Every copy of this stretch ends before `expected`: nothing further exists.
            return Ok(out);
        }
        if let (true, Tail::Torn { offset, why }) = (warn_torn, &scan.tail) {
            warn!(segment = %seg.path.display(), offset, %why, "torn tail: the last record was cut short by a crash; it is dropped");
        }
        let path = seg.path.display().to_string();
        for (txid, op) in scan.records.iter().filter(|(t, _)| *t >= expected) {
            apply(*txid, op).map_err(|why| RecoverError::Apply {
                txid: *txid,
                path: path.clone(),
                why,
            })?;
            out.edits += 1;
        }
        out.segments += 1;
        out.last_txid = reach;
        expected = reach + 1;
    }
}

/// Turns every in-progress segment into a finalized one at its last valid record (torn tails
/// truncated), deletes empty ones, and renames unreadable ones to `*.corrupt`. Run after a
/// successful replay, before the journal starts a new segment.
pub fn close_in_progress(dirs: &[PathBuf]) -> std::io::Result<()> {
    for d in dirs {
        let Ok(segs) = segment::list(d) else { continue };
        for seg in segs.into_iter().filter(|s| s.last.is_none()) {
            let bytes = fs::read(&seg.path)?;
            match segment::scan(&bytes, &seg.path.display().to_string()) {
                Ok(scan) => match scan.records.last() {
                    None => fs::remove_file(&seg.path)?,
                    Some(&(last, _)) => {
                        let f = fs::OpenOptions::new().write(true).open(&seg.path)?;
                        f.set_len(scan.valid_len as u64)?;
                        f.sync_all()?;
                        fs::rename(&seg.path, d.join(finalized_name(seg.first, last)))?;
                        if let Tail::Torn { offset, .. } = scan.tail {
                            info!(segment = %seg.path.display(), offset, "torn tail truncated");
                        }
                    }
                },
                Err(e) => {
                    let aside = seg.path.with_extension("corrupt");
                    warn!(error = %e, to = %aside.display(), "setting aside an unreadable in-progress segment");
                    fs::rename(&seg.path, aside)?;
                }
            }
        }
        fs::File::open(d)?.sync_all()?;
    }
    Ok(())
}

/// Deletes finalized segments that end before `keep_from` (they are covered by an image).
pub fn purge_before(dirs: &[PathBuf], keep_from: u64) -> usize {
    let mut n = 0;
    for d in dirs {
        let Ok(segs) = segment::list(d) else { continue };
        for s in segs {
            if s.last.is_some_and(|l| l < keep_from) && fs::remove_file(&s.path).is_ok() {
                n += 1;
            }
        }
    }
    n
}
