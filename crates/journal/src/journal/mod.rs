//! The edit log: every namespace mutation, durable before it is acknowledged.
//!
//! [`Journal::append_all`] is called under the namespace write lock: it assigns the txids and
//! copies the encoded records into an in-memory buffer, nothing more. A dedicated syncer
//! thread swaps that buffer for an empty one, writes the batch to every journal directory in
//! parallel, fdatasyncs, and publishes the synced txid. Replies wait for it after the lock is
//! released: in their connection's writer (the journal is the IPC server's
//! [`Durability`](ferrite_ipc::durable::Durability)), or, outside an RPC, in
//! [`Journal::wait_synced`]; a sync wakes exactly the waiters whose records it made durable.
//! One sync therefore carries every record that arrived while the previous one ran (group
//! commit); under concurrent load it first waits briefly for the clients the previous sync
//! answered to come back with their next operation (`gather`).
//!
//! A directory whose write or sync fails, or does not finish within
//! `ferrite.journal.dir.timeout.ms`, is taken out of service and logged (`dirs.rs`, and for
//! a lone directory `watchdog.rs`); the journal fails (and the NameNode stops) only when
//! no directory is left. Rolls happen at a size or txid count and on request
//! ([`Journal::roll`]); with restoring on, a roll also brings failed directories back.

pub use ferrite_namespace::codec;
#[cfg(test)]
mod conformance;
mod dirs;
pub mod edit_log;
pub mod memory;
mod policy;
pub mod recover;
pub mod replicated;
pub mod salvage;
pub mod segment;
pub mod tail;
#[cfg(test)]
mod tests;
mod waiters;
mod watchdog;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard};
use tracing::{error, info};

use dirs::{DirWriter, Dirs};
pub use edit_log::EditLog;
use ferrite_namespace::Op;
pub use memory::MemoryJournal;
pub use policy::DirPolicy;
use segment::SegmentWriter;
pub use tail::Batch;

#[derive(Clone, Debug)]
pub struct JournalConfig {
    pub dirs: Vec<PathBuf>,
    /// Roll to a new segment past this many bytes (`ferrite.journal.segment.bytes`).
    pub segment_max_bytes: u64,
    /// … or this many transactions (`ferrite.journal.segment.txns`).
    pub segment_max_txns: u64,
    /// Zeros laid down ahead of the writes, per step (`ferrite.journal.preallocate.bytes`).
    pub prealloc_chunk: u64,
    /// Synced records kept in memory for subscribers (`ferrite.journal.tail.bytes`); one
    /// further behind catches up from the segments.
    pub tail_bytes: usize,
    /// How long a sync waits for more records when the previous one carried several operations
    /// (`ferrite.journal.group-commit.delay.us`); zero syncs at once, always.
    pub group_delay: Duration,
    /// How long a write, sync or roll may take in a directory before it is taken out of
    /// service (`ferrite.journal.dir.timeout.ms`); the last one out stops the NameNode.
    pub dir_timeout: Duration,
    /// Bring failed directories back into service at each roll (`dfs.namenode.name.dir.restore`,
    /// and `hdfs dfsadmin -restoreFailedStorage` while running).
    pub restore_failed: bool,
    /// Which directories the journal cannot do without.
    pub policy: DirPolicy,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("journal failed: {0}")]
pub struct JournalError(pub String);

/// Counters for logs, metrics and the benchmark's sync accounting.
#[derive(Default, Debug)]
pub struct JournalMetrics {
    pub syncs: AtomicU64,
    pub txns_synced: AtomicU64,
    pub bytes_synced: AtomicU64,
    pub sync_micros: AtomicU64,
    pub segments_rolled: AtomicU64,
    /// The first txid of the segment being written (HDFS's "since last log roll").
    pub segment_first: AtomicU64,
    /// Syncs that waited out the whole group-commit delay because the clients the one
    /// before answered did not all come back in time.
    pub gathers_timed_out: AtomicU64,
    /// Every configured directory, in order, with why it was taken out of service.
    dirs: Mutex<Vec<DirStatus>>,
}

/// A journal directory as an operator sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirStatus {
    pub path: PathBuf,
    /// `None` while in service; else the error that took it out.
    pub failed: Option<String>,
}

impl JournalMetrics {
    /// Takes `dir` out of service: logged, and kept with its reason for `dirs`.
    fn dir_failed(&self, dir: &std::path::Path, what: &str, e: &std::io::Error) {
        error!(dir = %dir.display(), error = %e, "{what}; journal directory taken out of service");
        let why = Some(format!("{what}: {e}"));
        let mut dirs = self.dirs.lock();
        match dirs.iter_mut().find(|d| d.path == dir) {
            Some(d) => d.failed = why,
            None => dirs.push(DirStatus {
                path: dir.to_path_buf(),
                failed: why,
            }),
        }
    }

    /// Puts `dir` back in service (see [`Journal::restore_failed`]).
    fn dir_restored(&self, dir: &std::path::Path) {
        info!(dir = %dir.display(), "journal directory restored to service");
        if let Some(d) = self.dirs.lock().iter_mut().find(|d| d.path == dir) {
            d.failed = None;
        }
    }

    /// Every configured directory with its state.
    pub fn dirs(&self) -> Vec<DirStatus> {
        self.dirs.lock().clone()
    }

    /// Directories out of service now (a restore at a roll can bring one back).
    pub fn failed_dirs(&self) -> u64 {
        self.dirs
            .lock()
            .iter()
            .filter(|d| d.failed.is_some())
            .count() as u64
    }

    /// The sync accounting HDFS's edit log prints: how many syncs, how many transactions
    /// each carried, how long one took. Logged when a segment rolls and at close.
    pub fn log(&self, when: &str) {
        let syncs = self.syncs.load(Ordering::Relaxed);
        let txns = self.txns_synced.load(Ordering::Relaxed);
        let micros = self.sync_micros.load(Ordering::Relaxed);
        info!(
            when,
            syncs,
            txns,
            txns_per_sync = format_args!("{:.1}", txns as f64 / syncs.max(1) as f64),
            mean_sync_us = micros / syncs.max(1),
            bytes = self.bytes_synced.load(Ordering::Relaxed),
            failed_dirs = self.failed_dirs(),
            gathers_timed_out = self.gathers_timed_out.load(Ordering::Relaxed),
            "journal sync statistics"
        );
    }
}

struct Pending {
    buf: Vec<u8>,
    /// Txid of the last appended record.
    last_appended: u64,
    closing: bool,
    /// Commits (calls of [`Journal::append_all`], one per operation waiting) in `buf`.
    commits: usize,
    /// The commit count the next sync waits for (see [`gather`]), set as a sync's answers
    /// go out; 0 when it will not wait. Appends wake the syncer only at the first commit
    /// and at this count, not each time.
    wake_at: usize,
    /// Callers of [`Journal::roll`] waiting for the next segment's first txid.
    rolls: Vec<tokio::sync::oneshot::Sender<u64>>,
}

struct Shared {
    pending: Mutex<Pending>,
    wake: Condvar,
    /// The last synced txid, and the RPCs waiting for theirs.
    waiters: waiters::Waiters,
    metrics: JournalMetrics,
    /// Recently synced batches, for subscribers following the journal.
    tail: tail::Tail,
    /// Whether a roll tries to bring failed directories back (see [`Journal::restore_failed`]).
    restore_failed: AtomicBool,
    /// The NameNode's stop, run when no directory is left.
    fatal: watchdog::Fatal,
    /// The watchdog gave up on the lone directory while the syncer was in a job there: the
    /// syncer may never come back from it.
    stalled: AtomicBool,
}

pub struct Journal {
    shared: Arc<Shared>,
    syncer: Mutex<Option<JoinHandle<()>>>,
}

impl Journal {
    /// Starts a journal whose next record is `last_txid + 1`, with a fresh in-progress
    /// segment in every directory that can take one. `on_fatal` runs once if every
    /// directory has failed (or the only one has hung: see `watchdog.rs`).
    pub fn start(
        cfg: JournalConfig,
        last_txid: u64,
        on_fatal: impl FnOnce(String) + Send + 'static,
    ) -> Result<Journal, JournalError> {
        let mut writers = Vec::new();
        let metrics = JournalMetrics::default();
        for dir in &cfg.dirs {
            let made = std::fs::create_dir_all(dir)
                .and_then(|_| SegmentWriter::create(dir, last_txid + 1, cfg.prealloc_chunk));
            match made {
                Ok(seg) => {
                    metrics.dirs.lock().push(DirStatus {
                        path: dir.clone(),
                        failed: None,
                    });
                    writers.push(DirWriter {
                        dir: dir.clone(),
                        seg: Some(seg),
                    })
                }
                Err(e) => {
                    metrics.dir_failed(dir, "unusable at start", &e);
                    // Kept, so that a restore can bring it into service later.
                    writers.push(DirWriter {
                        dir: dir.clone(),
                        seg: None,
                    })
                }
            }
        }
        cfg.policy
            .validate(&cfg.dirs)
            .map_err(|e| JournalError(e.to_string()))?;
        let usable = writers.iter().map(|w| (w.dir.as_path(), w.seg.is_some()));
        if let Err(why) = cfg.policy.check(usable) {
            return Err(JournalError(format!(
                "cannot start the journal: {why} (directories {:?})",
                cfg.dirs
            )));
        }
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending {
                buf: Vec::with_capacity(1 << 16),
                last_appended: last_txid,
                closing: false,
                commits: 0,
                wake_at: 0,
                rolls: Vec::new(),
            }),
            wake: Condvar::new(),
            waiters: waiters::Waiters::new(last_txid),
            metrics,
            tail: tail::Tail::new(cfg.tail_bytes, last_txid),
            restore_failed: AtomicBool::new(cfg.restore_failed),
            fatal: watchdog::Fatal::new(on_fatal),
            stalled: AtomicBool::new(false),
        });
        let dirs = Dirs::new(writers, shared.clone(), cfg.clone())
            .map_err(|e| JournalError(format!("spawning the directory writers: {e}")))?;
        let s = shared.clone();
        let handle = std::thread::Builder::new()
            .name("journal-syncer".into())
            .spawn(move || syncer(s, cfg, dirs, last_txid))
            .map_err(|e| JournalError(format!("spawning the syncer: {e}")))?;
        Ok(Journal {
            shared,
            syncer: Mutex::new(Some(handle)),
        })
    }

    /// Appends the records of one operation and returns the txid of the last. Call under
    /// the namespace write lock, so txids follow the order in which records were applied.
    pub fn append_all(&self, ops: &[Op]) -> u64 {
        let mut p = self.shared.pending.lock();
        for op in ops {
            let txid = p.last_appended + 1;
            codec::encode_record(txid, op, &mut p.buf);
            p.last_appended = txid;
        }
        p.commits += 1;
        let wake = p.commits == 1 || p.commits == p.wake_at;
        let last = p.last_appended;
        drop(p);
        if wake {
            self.shared.wake.notify_one();
        }
        last
    }

    pub fn last_appended(&self) -> u64 {
        self.shared.pending.lock().last_appended
    }

    pub fn last_synced(&self) -> Result<u64, JournalError> {
        self.shared.waiters.state()
    }

    /// Waits until `txid` is on disk in every live directory.
    pub async fn wait_synced(&self, txid: u64) -> Result<(), JournalError> {
        self.shared.waiters.wait(txid).await
    }

    pub fn metrics(&self) -> &JournalMetrics {
        &self.shared.metrics
    }

    /// Ends the current segment and starts the next (`hdfs dfsadmin -rollEdits`); returns
    /// the txid the new segment starts at. A segment that holds no record yet is not
    /// rolled: its own first txid is the answer. With restoring on, failed directories
    /// are retried as it rolls.
    pub async fn roll(&self) -> Result<u64, JournalError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        {
            let mut p = self.shared.pending.lock();
            if p.closing {
                return Err(JournalError("the journal is closing".into()));
            }
            p.rolls.push(tx);
        }
        self.shared.wake.notify_one();
        rx.await.map_err(|_| match self.shared.waiters.state() {
            Err(e) => e,
            Ok(_) => JournalError("the journal closed before the roll".into()),
        })
    }

    /// Whether rolls bring failed directories back into service.
    pub fn restore_failed(&self) -> bool {
        self.shared.restore_failed.load(Ordering::SeqCst)
    }

    pub fn set_restore_failed(&self, on: bool) {
        self.shared.restore_failed.store(on, Ordering::SeqCst);
    }

    /// Synced records from `from` on, as the syncer wrote them, waiting up to `wait` for
    /// some to arrive. `None` when `from` has left the in-memory tail: read the segments.
    pub fn read_from(&self, from: u64, max_bytes: usize, wait: Duration) -> Option<Vec<Batch>> {
        self.shared.tail.read_from(from, max_bytes, wait)
    }

    /// Syncs what is buffered, finalizes the segments and stops the syncer. A syncer the
    /// watchdog gave up on is left in its write, which may never return.
    pub fn close(&self) {
        self.shared.pending.lock().closing = true;
        self.shared.wake.notify_one();
        let Some(h) = self.syncer.lock().take() else {
            return;
        };
        while !h.is_finished() {
            if self.shared.stalled.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = h.join();
    }
}

/// Replies to mutations rest on txids: the IPC writer holds each until its txid is synced.
impl ferrite_ipc::durable::Durability for Journal {
    fn issued(&self) -> u64 {
        self.last_appended()
    }

    fn durable(&self) -> (u64, Option<String>) {
        self.shared.waiters.durable()
    }

    fn wait(&self, txid: u64) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            // The outcome is read back through `durable`.
            let _ = self.wait_synced(txid).await;
        })
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.close();
    }
}

/// The journal can go on no longer: every waiting client gets the reason, and the NameNode
/// stops.
fn stop(shared: &Shared, cfg: &JournalConfig, why: &str) {
    let msg = format!(
        "{why} ({:?}); no edit can be made durable any more",
        cfg.dirs
    );
    error!("{msg}");
    shared.waiters.fail(JournalError(msg.clone()));
    shared.fatal.fire(msg);
}

fn syncer(shared: Arc<Shared>, cfg: JournalConfig, mut dirs: Dirs, start_txid: u64) {
    let mut spare: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut chunker = tail::chunker();
    let mut woken = Vec::new();
    let mut synced = start_txid;
    let mut seg_first = start_txid + 1;
    shared
        .metrics
        .segment_first
        .store(seg_first, Ordering::Relaxed);
    loop {
        let (batch_last, commits, closing, rolls) = {
            let mut p = shared.pending.lock();
            while p.buf.is_empty() && !p.closing && p.rolls.is_empty() {
                shared.wake.wait(&mut p);
            }
            let rolling = !p.rolls.is_empty();
            if p.wake_at > 0
                && !p.closing
                && !rolling
                && !gather(&shared.wake, &mut p, cfg.group_delay)
            {
                shared
                    .metrics
                    .gathers_timed_out
                    .fetch_add(1, Ordering::Relaxed);
            }
            p.wake_at = 0;
            std::mem::swap(&mut p.buf, &mut spare);
            let commits = std::mem::take(&mut p.commits);
            (
                p.last_appended,
                commits,
                p.closing,
                std::mem::take(&mut p.rolls),
            )
        };
        let mut roll_now = !rolls.is_empty();
        if !spare.is_empty() {
            let started = std::time::Instant::now();
            spare = dirs.write(spare);
            if let Err(why) = dirs.check() {
                // This batch is not acknowledged: it did not reach every directory the
                // policy requires.
                return stop(&shared, &cfg, &why.to_string());
            }
            let m = &shared.metrics;
            m.syncs.fetch_add(1, Ordering::Relaxed);
            m.txns_synced
                .fetch_add(batch_last - synced, Ordering::Relaxed);
            m.bytes_synced
                .fetch_add(spare.len() as u64, Ordering::Relaxed);
            m.sync_micros
                .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
            let first = synced + 1;
            synced = batch_last;
            // Two or more operations in one sync: clients are committing concurrently, so
            // the next sync gathers. Armed before the answers go out: the clients they
            // release may be back before the syncer looks again, and count towards it.
            if commits >= 2 && !cfg.group_delay.is_zero() {
                let mut p = shared.pending.lock();
                p.wake_at = (p.commits + commits).min(GATHER_MAX);
            }
            shared.waiters.publish(synced, &mut woken);
            // Followers get a copy in the tail's shared chunks: handing them `spare` itself
            // would pin its whole capacity (64 KiB or a burst's megabytes) for every small
            // batch kept, and a copy of its own per batch fragments the heap.
            shared.tail.publish(first, synced, chunker.copy(&spare));
            spare.clear();
            if spare.capacity() > 16 << 20 {
                spare = Vec::with_capacity(1 << 16); // do not keep a burst's buffer forever
            }
            if dirs.written() >= cfg.segment_max_bytes
                || synced + 1 - seg_first >= cfg.segment_max_txns
            {
                roll_now = true;
            }
        }
        if roll_now {
            let m = &shared.metrics;
            if synced >= seg_first {
                dirs.roll(synced);
                seg_first = synced + 1;
                m.segment_first.store(seg_first, Ordering::Relaxed);
                m.segments_rolled.fetch_add(1, Ordering::Relaxed);
                m.log("segment rolled");
            }
            if shared.restore_failed.load(Ordering::SeqCst) {
                dirs.restore(seg_first);
            }
            // A directory the roll lost ends the journal now if the policy needs it, rather
            // than at the next write; restoring has had its chance to bring it back first.
            if let Err(why) = dirs.check() {
                return stop(&shared, &cfg, &why.to_string());
            }
            for r in rolls {
                let _ = r.send(seg_first);
            }
        }
        if closing {
            shared.waiters.close();
            shared.tail.close();
            dirs.close(synced);
            info!(last_txid = synced, "journal closed");
            shared.metrics.log("journal closed");
            return;
        }
    }
}

/// The most operations a sync waits for. Past a few dozen, a sync's fixed cost (on this
/// VM about 100 µs of CPU: the write, the fdatasync's virtio kick and interrupt, the
/// wake-ups) is spread thin, and waiting for more only makes more clients wait on one
/// sync together. Waiting for every client it answered, a long delay put all of a busy
/// in-process NameNode's 256 clients in one batch, and the writers ran out of work while
/// it synced (BENCHMARKS.md, "Group-commit gather").
const GATHER_MAX: usize = 32;

/// Under concurrent load the syncer would start a sync the moment one record is waiting,
/// and a sync costs about as much CPU as a dozen creates (write, fdatasync, the completion
/// interrupt, the wake-ups). So when the last sync carried `n` operations, it sets
/// `wake_at` to what was pending when it answered them plus `n` (at most [`GATHER_MAX`]),
/// and here waits until that many are pending (the clients it answered are back with
/// their next one) or `delay` has passed, whichever is first. A lone client (one operation
/// a sync) never waits.
/// Operations, not records: a `mkdir -p` of three directories is one client.
///
/// `wake_at` must be set before the answers go out. Set here, it double-counted the
/// clients that had come back while the syncer was publishing: in process, where they are
/// back within microseconds, it was then never reached and every sync waited out `delay`.
///
/// No wait at all when half of `wake_at` is pending already: the batch is worth a sync,
/// and the rest go into the next, which starts the moment this one ends. Waiting then
/// only idled the disk while clients that come back within microseconds (in process)
/// made their way back: 64 in-process clients made 21–24% more creates per second without
/// that wait, with remote clients as before (BENCHMARKS.md, stop 38).
///
/// Returns false when the wait ran out.
fn gather(wake: &Condvar, p: &mut MutexGuard<'_, Pending>, delay: Duration) -> bool {
    if p.commits * 2 >= p.wake_at {
        return true;
    }
    let deadline = std::time::Instant::now() + delay;
    while p.commits < p.wake_at && !p.closing {
        if wake.wait_until(p, deadline).timed_out() {
            return p.commits >= p.wake_at;
        }
    }
    true
}
