//! The summary task: follows the journal and keeps a [`Summary`] current.
//!
//! It reads synced batches from the journal's in-memory tail, and when it is further behind
//! than the tail reaches (at start-up, from a checkpoint), from the segments on disk. A
//! batch is decoded and applied under the summary's write lock as one unit; readers see
//! whole batches. A record that does not fit means the summary has diverged: it is rebuilt
//! from the namespace, and the failure is logged and counted. The state is checkpointed
//! every so many records or seconds, and at shutdown.
//!
//! It can rest between reads (`ferrite.summary.rest.ms`, off by default), so that under a
//! steady stream of small syncs it wakes once for many batches rather than once per batch,
//! each applied with its part of the tree still in cache. A reader that needs a txid it has
//! not applied yet wakes it at once ([`SummaryService::caught_up`]), so no answer waits for
//! the rest.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};
use tokio::sync::watch;
use tracing::{error, info, warn};

use super::{codec, Summary};
use crate::journal::codec::{decode_record, Next};
use crate::journal::{recover, EditLog};

/// Why the follower could not apply what it read: after any of these the summary is
/// rebuilt from the namespace.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error("a journal batch: {0}")]
    Decode(#[from] crate::journal::codec::DecodeError),
    #[error(transparent)]
    Diverged(#[from] super::Diverged),
    #[error("reading the journal segments: {0}")]
    Segments(#[from] recover::RecoverError),
    /// The segments that would bring it there are gone (purged behind an image).
    #[error("the journal segments end at txid {txid}, before the synced txid {limit}")]
    SegmentsEnd { txid: u64, limit: u64 },
}

/// Counters for logs, `ferrite summary --stats` and the benchmark.
#[derive(Default, Debug)]
pub struct SummaryMetrics {
    pub events: AtomicU64,
    pub batches: AtomicU64,
    pub rebuilds: AtomicU64,
    pub checkpoints: AtomicU64,
    /// Answers given from the summary / by walking the tree instead.
    pub answered: AtomicU64,
    pub walked: AtomicU64,
    /// From a batch's sync to its records being applied: the summary's lag behind the
    /// journal (batches read from memory only).
    pub lag_max_us: AtomicU64,
    pub lag_sum_us: AtomicU64,
    pub lag_batches: AtomicU64,
    /// Catch-ups from the segments on disk: the follower had fallen behind what the
    /// journal's in-memory tail holds (or was starting from an older checkpoint).
    pub disk_catch_ups: AtomicU64,
}

impl SummaryMetrics {
    fn lag(&self, since: Instant) {
        let us = since.elapsed().as_micros() as u64;
        self.lag_max_us.fetch_max(us, Ordering::Relaxed);
        self.lag_sum_us.fetch_add(us, Ordering::Relaxed);
        self.lag_batches.fetch_add(1, Ordering::Relaxed);
    }
}

pub struct SummaryService {
    state: RwLock<Summary>,
    applied: watch::Sender<u64>,
    /// Readers waiting for a txid not yet applied: while there are any, the follower does
    /// not rest.
    waiting: AtomicU64,
    /// Set as such a reader starts waiting, so that the follower's rest ends at once.
    nudged: Mutex<bool>,
    nudge: Condvar,
    /// Where the checkpoint lives (`<first name dir>/summary`).
    pub dir: Option<PathBuf>,
    pub metrics: SummaryMetrics,
    stop: AtomicBool,
    /// Where the last catch-up from the segments got to, so the next starts there.
    cursor: Mutex<Option<recover::Cursor>>,
}

/// How the task gets a fresh summary when it has to rebuild: a namespace snapshot and the
/// txid it reflects, taken together under the namespace lock.
pub type Rebuild = Box<dyn Fn() -> Summary + Send + Sync>;

/// A reader counted in [`SummaryService::waiting`] for as long as it lives (a waiting
/// call can be dropped mid-wait, when its client goes away).
struct Waiting<'a>(&'a SummaryService);

impl<'a> Waiting<'a> {
    fn start(svc: &'a SummaryService) -> Self {
        svc.waiting.fetch_add(1, Ordering::SeqCst);
        svc.wake();
        Waiting(svc)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

impl SummaryService {
    pub fn new(initial: Summary, dir: Option<PathBuf>) -> Arc<SummaryService> {
        let (applied, _) = watch::channel(initial.txid());
        Arc::new(SummaryService {
            state: RwLock::new(initial),
            applied,
            waiting: AtomicU64::new(0),
            nudged: Mutex::new(false),
            nudge: Condvar::new(),
            dir,
            metrics: SummaryMetrics::default(),
            stop: AtomicBool::new(false),
            cursor: Mutex::new(None),
        })
    }

    /// The checkpoint in `dir` if it is usable (not beyond `last_txid`), else a rebuild by
    /// `rebuild`. Logs which, and why.
    pub fn load_or_rebuild(
        dir: &std::path::Path,
        last_txid: u64,
        rebuild: impl FnOnce() -> Summary,
    ) -> Summary {
        let started = Instant::now();
        match codec::load(dir) {
            Ok(Some(s)) if s.txid() <= last_txid => {
                info!(
                    txid = s.txid(),
                    files = s.files(),
                    millis = started.elapsed().as_millis() as u64,
                    "summary checkpoint loaded"
                );
                return s;
            }
            Ok(Some(s)) => warn!(
                checkpoint_txid = s.txid(),
                last_txid, "summary checkpoint is ahead of the journal; rebuilding"
            ),
            Ok(None) => info!("no summary checkpoint; building the summary from the namespace"),
            Err(e) => warn!(error = %e, "summary checkpoint unusable; rebuilding"),
        }
        let s = rebuild();
        info!(
            txid = s.txid(),
            files = s.files(),
            dirs = s.dirs(),
            millis = started.elapsed().as_millis() as u64,
            "summary built from the namespace"
        );
        s
    }

    pub fn txid(&self) -> u64 {
        *self.applied.borrow()
    }

    /// Reads the summary.
    pub fn read<R>(&self, f: impl FnOnce(&Summary) -> R) -> R {
        f(&self.state.read())
    }

    /// Waits up to `wait` until the summary has applied `txid`; whether it has.
    pub async fn caught_up(&self, txid: u64, wait: Duration) -> bool {
        if self.txid() >= txid {
            return true;
        }
        let mut rx = self.applied.subscribe();
        let _waiting = Waiting::start(self);
        tokio::time::timeout(wait, rx.wait_for(|&t| t >= txid))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Asks the task to checkpoint and stop once the journal closes.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.wake();
    }

    /// Ends the follower's rest.
    fn wake(&self) {
        *self.nudged.lock() = true;
        self.nudge.notify_one();
    }

    /// The follower's rest between reads: `rest`, or less if woken; none while a reader
    /// waits.
    fn rest(&self, rest: Duration) {
        let mut nudged = self.nudged.lock();
        if !*nudged && self.waiting.load(Ordering::SeqCst) == 0 {
            self.nudge.wait_for(&mut nudged, rest);
        }
        *nudged = false;
    }

    /// Applies encoded records (a journal batch, a stretch of a segment, or what
    /// `readEdits` sent); records already applied are skipped.
    pub fn apply_bytes(&self, mut bytes: &[u8]) -> Result<(), FollowError> {
        let mut s = self.state.write();
        let mut n = 0;
        while !bytes.is_empty() {
            match decode_record(bytes)? {
                Next::Record { txid, op, size } => {
                    s.apply(txid, &op)?;
                    bytes = &bytes[size..];
                    n += 1;
                }
                Next::End => break,
            }
        }
        let txid = s.txid();
        drop(s);
        self.published(txid, n);
        Ok(())
    }

    fn published(&self, txid: u64, events: u64) {
        self.metrics.events.fetch_add(events, Ordering::Relaxed);
        self.metrics.batches.fetch_add(1, Ordering::Relaxed);
        self.applied.send_replace(txid);
    }

    /// Swaps in a rebuilt summary.
    pub fn replace(&self, s: Summary) {
        let txid = s.txid();
        *self.state.write() = s;
        self.metrics.rebuilds.fetch_add(1, Ordering::Relaxed);
        self.applied.send_replace(txid);
    }

    /// Catches up from the segments, up to `limit` (the synced txid). The write lock is
    /// taken per record, not for the whole stretch, so readers are not held up for the
    /// length of a long catch-up (at start-up, say); progress is published as it goes.
    /// The segments change while they are read (a roll renames the one being written and
    /// starts the next), so a pass that stops short but made progress is followed by another.
    fn catch_up(&self, dirs: &[PathBuf], limit: u64) -> Result<(), FollowError> {
        const IDLE_PASSES: u32 = 3;
        self.metrics.disk_catch_ups.fetch_add(1, Ordering::Relaxed);
        let mut idle = 0;
        loop {
            let before = self.txid();
            self.catch_up_pass(dirs, limit)?;
            let txid = self.txid();
            if txid >= limit {
                return Ok(());
            }
            idle = if txid > before { 0 } else { idle + 1 };
            if idle >= IDLE_PASSES {
                // The segments that would bring us there are gone (purged behind an image).
                return Err(FollowError::SegmentsEnd { txid, limit });
            }
        }
    }

    fn catch_up_pass(&self, dirs: &[PathBuf], limit: u64) -> Result<(), FollowError> {
        let after = self.txid();
        let mut n = 0;
        let mut cursor = self.cursor.lock();
        recover::follow(dirs, after, limit, &mut cursor, |txid, op| {
            self.state.write().apply(txid, op)?;
            n += 1;
            if n % 65_536 == 0 {
                self.published(txid, 65_536);
            }
            Ok(())
        })?;
        let txid = self.state.read().txid();
        self.published(txid, n % 65_536);
        Ok(())
    }

    /// Writes the checkpoint to `dir` (atomically), if there is one.
    pub fn checkpoint(&self) {
        let Some(dir) = &self.dir else { return };
        let started = Instant::now();
        let (mut bytes, mut txid) = (0, 0);
        let written = std::fs::create_dir_all(dir).and_then(|_| {
            // The read lock is held while the bytes go to the page cache, not for the fsync.
            crate::atomic_file::write_with(dir, codec::FILE_NAME, |f| {
                let s = self.state.read();
                txid = s.txid();
                bytes = codec::write(&s, f)?;
                Ok(())
            })
        });
        match written {
            Ok(()) => {
                self.metrics.checkpoints.fetch_add(1, Ordering::Relaxed);
                info!(
                    txid,
                    bytes,
                    millis = started.elapsed().as_millis() as u64,
                    "summary checkpoint saved"
                );
            }
            Err(e) => {
                warn!(dir = %dir.display(), error = %e, "summary checkpoint failed; the next one retries")
            }
        }
    }

    /// The task's loop; runs on its own thread until [`stop`](Self::stop) and the journal's
    /// close. `every_txns`/`every` set the checkpoint cadence, `rest` the pause between
    /// reads of the journal.
    pub fn run(
        self: Arc<Self>,
        journal: &dyn EditLog,
        dirs: &[PathBuf],
        rebuild: Rebuild,
        every_txns: u64,
        every: Duration,
        rest: Duration,
    ) {
        let mut saved_txid = self.txid();
        let mut saved_at = Instant::now();
        loop {
            let stopping = self.stop.load(Ordering::SeqCst);
            let from = self.txid() + 1;
            let mut read_some = false;
            let result = match journal.read_from(from, 8 << 20, Duration::from_millis(200)) {
                Some(batches) => batches.iter().try_for_each(|b| {
                    read_some = true;
                    self.apply_bytes(&b.bytes)?;
                    self.metrics.lag(b.at);
                    Ok(())
                }),
                None => {
                    let limit = journal.last_synced().unwrap_or(0);
                    self.catch_up(dirs, limit)
                }
            };
            if let Err(e) = result {
                error!(error = %e, "the summary cannot follow the journal; rebuilding it from the namespace");
                self.replace(rebuild());
            }
            let behind = self.txid().saturating_sub(saved_txid);
            if behind >= every_txns || (behind > 0 && saved_at.elapsed() >= every) {
                self.checkpoint();
                (saved_txid, saved_at) = (self.txid(), Instant::now());
            }
            // A failed journal syncs nothing more: stop with what was applied.
            if stopping && journal.last_synced().map_or(true, |t| t <= self.txid()) {
                if self.txid() > saved_txid {
                    self.checkpoint();
                }
                return;
            }
            if read_some && !stopping && !rest.is_zero() {
                self.rest(rest);
            }
        }
    }
}
