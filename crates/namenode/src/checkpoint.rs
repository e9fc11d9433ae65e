//! Checkpoint image files: written atomically to every name directory, loaded newest-valid
//! first at start-up, and pruned to a retention count.

use std::fs::{self, File};
use std::io::{self, Seek};
use std::path::PathBuf;
use std::time::Instant;

use tracing::{info, warn};

use crate::atomic_file::{copy_into, map_committed, Staged};
use crate::namespace::Namespace;
use crate::startup_progress::{Phase, StartupProgress, StepKind, StepSpec};

pub fn image_name(txid: u64) -> String {
    format!("fsimage_{txid:019}")
}

/// Images in `dirs` as (txid, path), newest first.
pub fn list(dirs: &[PathBuf]) -> Vec<(u64, PathBuf)> {
    let mut out = Vec::new();
    for d in dirs {
        let Ok(entries) = fs::read_dir(d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(t) = name
                .strip_prefix("fsimage_")
                .and_then(|t| t.parse::<u64>().ok())
            {
                out.push((t, e.path()));
            }
        }
    }
    out.sort_by_key(|e| std::cmp::Reverse(e.0));
    out
}

/// Whether a save asked to be skipped when the newest image is recent enough
/// (`hdfs dfsadmin -saveNamespace -beforeShutdown` passes the checkpoint period and
/// transaction count) may be skipped: as HDFS decides, the image must be at most
/// `window_s` seconds old AND at most `txn_gap` transactions behind. A request with
/// neither is never skipped.
pub fn recent_enough(
    age_ms: i64,
    image_txid: u64,
    last_txid: u64,
    window_s: u64,
    txn_gap: u64,
) -> bool {
    (window_s > 0 || txn_gap > 0)
        && age_ms <= (window_s as i64).saturating_mul(1000)
        && image_txid.saturating_add(txn_gap) >= last_txid
}

/// Modification time (ms since the epoch) of the image of `txid` in the first of `dirs`
/// that holds it.
pub fn image_mtime_ms(dirs: &[PathBuf], txid: u64) -> Option<i64> {
    dirs.iter().find_map(|d| {
        let modified = fs::metadata(d.join(image_name(txid)))
            .ok()?
            .modified()
            .ok()?;
        let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
        Some(since.as_millis() as i64)
    })
}

/// Writes an image to every name directory; returns (txid, bytes, directories written).
///
/// `write` streams the image into an open file and returns its txid. It runs while the
/// caller holds whatever keeps the namespace still, into the first directory that takes
/// it (again into the next if it fails: a full or broken disk). The fsync and the copies
/// into the other directories come after it returns, outside that lock. Each image
/// appears atomically (temp file, fsync, rename, fsync the directory). Succeeds if at
/// least one directory holds the image.
pub fn save(
    dirs: &[PathBuf],
    mut write: impl FnMut(&mut File) -> io::Result<u64>,
) -> io::Result<(u64, u64, usize)> {
    let mut last_err = io::Error::other("no name directory is configured");
    for (i, d) in dirs.iter().enumerate() {
        let staged = fs::create_dir_all(d).and_then(|_| Staged::create(d, "fsimage"));
        let written = staged.and_then(|mut st| match write(st.file()) {
            Ok(txid) => {
                let bytes = st.file().stream_position()?;
                Ok((st.commit(&image_name(txid))?, txid, bytes))
            }
            Err(e) => {
                st.discard();
                Err(e)
            }
        });
        match written {
            Ok((first, txid, bytes)) => {
                let name = image_name(txid);
                let mut written = 1;
                for d in &dirs[i + 1..] {
                    match fs::create_dir_all(d).and_then(|_| copy_into(&first, d, &name)) {
                        Ok(()) => written += 1,
                        Err(e) => {
                            warn!(dir = %d.display(), error = %e, "writing checkpoint image failed")
                        }
                    }
                }
                return Ok((txid, bytes, written));
            }
            Err(e) => {
                warn!(dir = %d.display(), error = %e, "writing checkpoint image failed");
                last_err = e;
            }
        }
    }
    Err(last_err)
}

/// The newest image that decodes and verifies. A damaged image is skipped with a warning
/// (an older one plus more journal may still rebuild the namespace); `Ok(None)` when there
/// are none at all. Each image tried is the image phase's file in `progress`, its inodes
/// a step there.
pub fn load_newest(
    dirs: &[PathBuf],
    progress: &StartupProgress,
) -> Result<Option<(Namespace, u64, PathBuf)>, String> {
    let images = list(dirs);
    let mut errors = Vec::new();
    for (txid, path) in &images {
        let decoded = map_committed(path)
            .map_err(|e| e.to_string())
            .and_then(|b| {
                let phase = Phase::LoadingFsImage;
                progress.set_file(phase, path.display().to_string(), b.len() as u64);
                let inodes = StepSpec {
                    kind: Some(StepKind::Inodes),
                    ..Default::default()
                };
                progress.begin_step(phase, inodes, Instant::now());
                let mut on_inodes = |loaded, total| {
                    if loaded == 0 {
                        progress.set_total(phase, total);
                    }
                    progress.set_count(loaded);
                };
                Namespace::decode_image_with(&b, &mut on_inodes).map_err(|e| e.to_string())
            });
        match decoded {
            Ok((ns, t)) if t == *txid => return Ok(Some((ns, t, path.clone()))),
            Ok((_, t)) => errors.push(format!("{}: header says txid {t}", path.display())),
            Err(e) => {
                warn!(image = %path.display(), error = %e, "checkpoint image unusable; trying an older one");
                errors.push(format!("{}: {e}", path.display()));
            }
        }
    }
    if images.is_empty() {
        Ok(None)
    } else if errors.len() == images.len() {
        Err(format!("no usable checkpoint image: {}", errors.join("; ")))
    } else {
        Ok(None)
    }
}

/// Keeps the newest `retain` image txids (in every directory) and deletes older images.
/// Returns the oldest txid kept, below which journal segments are no longer needed.
pub fn prune(dirs: &[PathBuf], retain: usize) -> Option<u64> {
    let mut txids: Vec<u64> = list(dirs).into_iter().map(|(t, _)| t).collect();
    txids.dedup();
    let keep: Vec<u64> = txids.iter().copied().take(retain.max(1)).collect();
    for (t, path) in list(dirs) {
        if !keep.contains(&t) {
            match fs::remove_file(&path) {
                Ok(()) => info!(image = %path.display(), "old checkpoint image removed"),
                Err(e) => warn!(image = %path.display(), error = %e, "removing old image failed"),
            }
        }
    }
    keep.last().copied()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_save_is_skipped_only_for_an_image_both_recent_and_close_behind() {
        // Neither bound given: always saved.
        assert!(!recent_enough(0, 10, 10, 0, 0));
        // HDFS's -beforeShutdown: the period and the transaction count.
        assert!(recent_enough(1_000, 90, 100, 3600, 10));
        assert!(!recent_enough(3_601_000, 90, 100, 3600, 10), "too old");
        assert!(!recent_enough(1_000, 89, 100, 3600, 10), "too far behind");
        assert!(recent_enough(3_600_000, 100, 100, 3600, 0));
        assert!(
            !recent_enough(1, 100, 100, 0, 5),
            "no window: any age is too old"
        );
    }

    /// Every file name in `d`, sorted (also the journal's recovery tests' view of a directory).
    pub(crate) fn names_in(d: &std::path::Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn an_image_is_streamed_once_then_copied_and_a_failing_directory_is_passed_over() {
        let t = tempfile::tempdir().unwrap();
        // A directory that cannot be made (its parent is a file), then one whose write
        // fails (a full disk, say), then two good ones.
        fs::write(t.path().join("file"), b"").unwrap();
        let dirs = ["file/name", "full", "a", "b"].map(|d| t.path().join(d));
        let mut calls = 0;
        let saved = save(&dirs, |f| {
            calls += 1;
            if calls == 1 {
                f.write_all(b"half")?;
                return Err(io::Error::other("no space left"));
            }
            f.write_all(b"the image")?;
            Ok(7)
        })
        .unwrap();
        assert_eq!(saved, (7, 9, 2), "txid, bytes, directories holding it");
        assert_eq!(calls, 2, "streamed into the first good directory only");
        assert!(
            names_in(&dirs[1]).is_empty(),
            "the failed write left nothing"
        );
        for d in &dirs[2..] {
            assert_eq!(names_in(d), [image_name(7)]);
            assert_eq!(fs::read(d.join(image_name(7))).unwrap(), b"the image");
        }
        let none = save(&dirs[..1], |_| Ok(1));
        assert!(none.is_err(), "no directory took it");
    }
}
