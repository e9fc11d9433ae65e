//! Checkpoint image files: written atomically to every name directory, loaded newest-valid
//! first at start-up, and pruned to a retention count.

use std::fs;
use std::path::PathBuf;

use tracing::{info, warn};

use crate::identity::write_atomic;
use crate::namespace::Namespace;

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

/// Writes the image to every directory (temp file, fsync, rename, fsync dir). Succeeds if
/// at least one directory took it.
pub fn save(dirs: &[PathBuf], image: &[u8], txid: u64) -> std::io::Result<usize> {
    let mut ok = 0;
    let mut last_err = None;
    for d in dirs {
        match fs::create_dir_all(d).and_then(|_| write_atomic(d, &image_name(txid), image)) {
            Ok(()) => ok += 1,
            Err(e) => {
                warn!(dir = %d.display(), error = %e, "writing checkpoint image failed");
                last_err = Some(e);
            }
        }
    }
    match (ok, last_err) {
        (0, Some(e)) => Err(e),
        _ => Ok(ok),
    }
}

/// The newest image that decodes and verifies. A damaged image is skipped with a warning
/// (an older one plus more journal may still rebuild the namespace); `Ok(None)` when there
/// are none at all.
pub fn load_newest(dirs: &[PathBuf]) -> Result<Option<(Namespace, u64, PathBuf)>, String> {
    let images = list(dirs);
    let mut errors = Vec::new();
    for (txid, path) in &images {
        match fs::read(path)
            .map_err(|e| e.to_string())
            .and_then(|b| Namespace::decode_image(&b).map_err(|e| e.to_string()))
        {
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
