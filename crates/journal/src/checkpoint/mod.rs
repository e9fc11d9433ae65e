//! Checkpoint images: where they are kept ([`ImageStore`]: the name directories on disk,
//! or memory for an in-process NameNode), and the rules that do not depend on where —
//! which image start-up loads, when a requested save may be skipped.
//!
//! The store only keeps bytes under a txid; what an image holds is the namespace's
//! business (`namespace::image`). Both stores pass one conformance suite
//! (`conformance.rs`), so the service behaves the same over either.

pub mod disk;
pub mod memory;

#[cfg(test)]
mod conformance;

use std::fs::File;
use std::io::{self, Cursor, Seek, SeekFrom, Write};
use std::ops::Deref;
use std::sync::Arc;
use std::time::Instant;

use tracing::warn;

use crate::startup_progress::{Phase, StartupProgress, StepKind, StepSpec};
use ferrite_namespace::Namespace;

pub use disk::DiskImages;
pub use memory::MemoryImages;

/// One image a store holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageInfo {
    pub txid: u64,
    pub bytes: u64,
    /// When it was written (ms since the epoch), if the store knows.
    pub written_ms: Option<i64>,
}

/// What a save did: the image's txid and size, and how many copies now hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Saved {
    pub txid: u64,
    pub bytes: u64,
    pub copies: usize,
}

/// Where an image being saved is streamed. A file can be handed to a forked writer
/// (`forked_writer`), so the namespace lock is held only for the fork; memory cannot.
pub enum ImageSink<'a> {
    File(&'a mut File),
    Memory(&'a mut Cursor<Vec<u8>>),
}

impl Write for ImageSink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            ImageSink::File(f) => f.write(buf),
            ImageSink::Memory(m) => m.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            ImageSink::File(f) => f.flush(),
            ImageSink::Memory(m) => m.flush(),
        }
    }
}

impl Seek for ImageSink<'_> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        match self {
            ImageSink::File(f) => f.seek(pos),
            ImageSink::Memory(m) => m.seek(pos),
        }
    }
}

/// The bytes of a stored image: mapped from its file, or shared from memory.
pub enum ImageBytes {
    Mapped(memmap2::Mmap),
    Held(Arc<[u8]>),
}

impl Deref for ImageBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            ImageBytes::Mapped(m) => m,
            ImageBytes::Held(b) => b,
        }
    }
}

/// Streams an image into a sink and answers its txid.
pub type WriteImage<'w> = dyn FnMut(&mut ImageSink<'_>) -> io::Result<u64> + 'w;

/// Where checkpoint images are kept.
pub trait ImageStore: Send + Sync {
    /// The images held, newest first; the same txid once however many copies hold it.
    fn list(&self) -> Vec<ImageInfo>;

    /// Stores a new image. `write` streams it and answers its txid; it may be called again
    /// for another copy when a copy fails (a full or broken disk). The image appears
    /// whole or not at all. Fails only when no copy could be made.
    fn save(&self, write: &mut WriteImage<'_>) -> io::Result<Saved>;

    /// The bytes of image `txid`.
    fn read(&self, txid: u64) -> io::Result<ImageBytes>;

    /// Keeps the newest `retain` images (at least one) and drops the rest. Answers the
    /// oldest txid kept, below which journal segments are no longer needed.
    fn prune(&self, retain: usize) -> Option<u64>;

    /// Where image `txid` is, for logs and start-up progress.
    fn describe(&self, txid: u64) -> String;
}

/// File name of image `txid` in a name directory (also the name a memory store reports).
pub fn image_name(txid: u64) -> String {
    format!("fsimage_{txid:019}")
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

/// When image `txid` was written, if `store` holds it and knows.
pub fn written_ms(store: &dyn ImageStore, txid: u64) -> Option<i64> {
    store
        .list()
        .into_iter()
        .find(|i| i.txid == txid)
        .and_then(|i| i.written_ms)
}

/// Why an image could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ImageFault {
    #[error("reading it: {0}")]
    Read(#[from] io::Error),
    #[error(transparent)]
    Decode(#[from] ferrite_namespace::image::ImageError),
    /// Its name and its header disagree.
    #[error("header says txid {header}")]
    Txid { header: u64 },
}

/// Images were there, and none could be used: start-up must not begin from an empty
/// namespace. Each image tried, with why.
#[derive(Debug, thiserror::Error)]
#[error("no usable checkpoint image: {}", describe(.0))]
pub struct NoUsableImage(pub Vec<(String, ImageFault)>);

fn describe(tried: &[(String, ImageFault)]) -> String {
    tried
        .iter()
        .map(|(place, why)| format!("{place}: {why}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The newest image that decodes and verifies, as (namespace, txid, where). A damaged
/// image is skipped with a warning (an older one plus more journal may still rebuild the
/// namespace); `Ok(None)` when there are none at all, an error when none is usable. Each
/// image tried is the image phase's file in `progress`, its inodes a step there.
pub fn load_newest(
    store: &dyn ImageStore,
    progress: &StartupProgress,
) -> Result<Option<(Namespace, u64, String)>, NoUsableImage> {
    let images = store.list();
    let mut tried = Vec::new();
    for image in &images {
        let place = store.describe(image.txid);
        let decoded = store
            .read(image.txid)
            .map_err(ImageFault::from)
            .and_then(|b| decode_tracked(&b, &place, progress));
        match decoded {
            Ok((ns, t)) if t == image.txid => return Ok(Some((ns, t, place))),
            Ok((_, t)) => tried.push((place, ImageFault::Txid { header: t })),
            Err(e) => {
                warn!(image = %place, error = %e, "checkpoint image unusable; trying an older one");
                tried.push((place, e));
            }
        }
    }
    // Every image held was tried and none was usable.
    if images.is_empty() {
        Ok(None)
    } else {
        Err(NoUsableImage(tried))
    }
}

/// Decodes one image, reporting its inodes as the image phase's step.
fn decode_tracked(
    bytes: &[u8],
    place: &str,
    progress: &StartupProgress,
) -> Result<(Namespace, u64), ImageFault> {
    let phase = Phase::LoadingFsImage;
    progress.set_file(phase, place.to_string(), bytes.len() as u64);
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
    Ok(Namespace::decode_image_with(bytes, &mut on_inodes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
