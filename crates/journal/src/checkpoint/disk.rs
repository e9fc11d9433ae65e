//! Images in the name directories: each written atomically (temp file, fsync, rename,
//! fsync the directory) to every directory that takes it, found again by file name.

use std::fs;
use std::io::{self, Seek};
use std::path::PathBuf;

use tracing::{info, warn};

use super::{image_name, ImageBytes, ImageInfo, ImageSink, ImageStore, Saved, WriteImage};
use crate::atomic_file::{copy_into, map_committed, Staged};

/// The name directories (`dfs.namenode.name.dir`).
pub struct DiskImages {
    dirs: Vec<PathBuf>,
}

impl DiskImages {
    pub fn new(dirs: Vec<PathBuf>) -> Self {
        DiskImages { dirs }
    }

    /// Every image file in every directory as (txid, path), newest first.
    fn files(&self) -> Vec<(u64, PathBuf)> {
        let mut out = Vec::new();
        for d in &self.dirs {
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

    /// The first copy of image `txid`.
    fn path_of(&self, txid: u64) -> Option<PathBuf> {
        self.files()
            .into_iter()
            .find_map(|(t, p)| (t == txid).then_some(p))
    }
}

/// Modification time of `path` in ms since the epoch.
fn mtime_ms(path: &std::path::Path) -> Option<i64> {
    let modified = fs::metadata(path).ok()?.modified().ok()?;
    let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(since.as_millis() as i64)
}

impl ImageStore for DiskImages {
    fn list(&self) -> Vec<ImageInfo> {
        let mut out: Vec<ImageInfo> = Vec::new();
        for (txid, path) in self.files() {
            if out.last().is_some_and(|i| i.txid == txid) {
                continue;
            }
            let bytes = fs::metadata(&path).map_or(0, |m| m.len());
            let written_ms = mtime_ms(&path);
            out.push(ImageInfo {
                txid,
                bytes,
                written_ms,
            });
        }
        out
    }

    /// The image is streamed into the first directory that takes it (again into the next
    /// if that fails: a full or broken disk). The fsync and the copies into the other
    /// directories come after `write` returns, so a caller holding a lock while it streams
    /// does not hold it for them.
    fn save(&self, write: &mut WriteImage<'_>) -> io::Result<Saved> {
        let mut last_err = io::Error::other("no name directory is configured");
        for (i, d) in self.dirs.iter().enumerate() {
            let staged = fs::create_dir_all(d).and_then(|_| Staged::create(d, "fsimage"));
            let written = staged.and_then(|mut st| match write(&mut ImageSink::File(st.file())) {
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
                    let mut copies = 1;
                    for d in &self.dirs[i + 1..] {
                        match fs::create_dir_all(d).and_then(|_| copy_into(&first, d, &name)) {
                            Ok(()) => copies += 1,
                            Err(e) => {
                                warn!(dir = %d.display(), error = %e, "writing checkpoint image failed")
                            }
                        }
                    }
                    return Ok(Saved {
                        txid,
                        bytes,
                        copies,
                    });
                }
                Err(e) => {
                    warn!(dir = %d.display(), error = %e, "writing checkpoint image failed");
                    last_err = e;
                }
            }
        }
        Err(last_err)
    }

    fn read(&self, txid: u64) -> io::Result<ImageBytes> {
        let path = self
            .path_of(txid)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no image {txid}")))?;
        map_committed(&path).map(ImageBytes::Mapped)
    }

    fn prune(&self, retain: usize) -> Option<u64> {
        let mut txids: Vec<u64> = self.files().into_iter().map(|(t, _)| t).collect();
        txids.dedup();
        let keep: Vec<u64> = txids.iter().copied().take(retain.max(1)).collect();
        for (t, path) in self.files() {
            if !keep.contains(&t) {
                match fs::remove_file(&path) {
                    Ok(()) => info!(image = %path.display(), "old checkpoint image removed"),
                    Err(e) => {
                        warn!(image = %path.display(), error = %e, "removing old image failed")
                    }
                }
            }
        }
        keep.last().copied()
    }

    fn describe(&self, txid: u64) -> String {
        self.path_of(txid)
            .map_or_else(|| image_name(txid), |p| p.display().to_string())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

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
        let store = DiskImages::new(dirs.to_vec());
        let saved = store
            .save(&mut |f| {
                calls += 1;
                if calls == 1 {
                    f.write_all(b"half")?;
                    return Err(io::Error::other("no space left"));
                }
                f.write_all(b"the image")?;
                Ok(7)
            })
            .unwrap();
        let want = Saved {
            txid: 7,
            bytes: 9,
            copies: 2,
        };
        assert_eq!(saved, want, "txid, bytes, directories holding it");
        assert_eq!(calls, 2, "streamed into the first good directory only");
        assert!(
            names_in(&dirs[1]).is_empty(),
            "the failed write left nothing"
        );
        for d in &dirs[2..] {
            assert_eq!(names_in(d), [image_name(7)]);
            assert_eq!(fs::read(d.join(image_name(7))).unwrap(), b"the image");
        }
        let none = DiskImages::new(dirs[..1].to_vec()).save(&mut |_| Ok(1));
        assert!(none.is_err(), "no directory took it");
    }
}
