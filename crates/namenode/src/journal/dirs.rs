//! The journal directories as the syncer writes them: the first on the syncer's own
//! thread, each further one on a thread of its own kept for the journal's life, all in
//! step (every directory finishes a job before the syncer goes on).
//!
//! Scoped threads spawned for every sync did the same until these: with a second
//! directory on tmpfs (so its fdatasync was nearly free) a sync took ~45 µs longer than
//! with one directory, and in-process creates fell from 185–200k/s to 150k/s
//! (BENCHMARKS.md). A hand-off to a waiting thread costs a wake-up, not a spawn.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use tracing::warn;

use super::segment::SegmentWriter;
use super::{recover, JournalConfig, JournalMetrics, Shared};

/// One journal directory and its open segment (`None` while out of service).
pub(super) struct DirWriter {
    pub dir: PathBuf,
    pub seg: Option<SegmentWriter>,
}

/// What every directory is asked to do, in step.
#[derive(Clone)]
enum Job {
    /// Append a batch and fdatasync it.
    Write(Arc<Vec<u8>>),
    /// Finalize the segment at this txid and open the next.
    Roll(u64),
    /// Back into service with a segment starting at this txid.
    Restore(u64),
    /// Finalize the segment at this txid: the journal is closing.
    Close(u64),
}

impl DirWriter {
    fn run(&mut self, job: &Job, cfg: &JournalConfig, m: &JournalMetrics) {
        match job {
            Job::Write(batch) => self.write(batch, m),
            Job::Roll(last) => self.roll(*last, cfg, m),
            Job::Restore(first) => self.restore(*first, cfg, m),
            Job::Close(last) => {
                if let Some(seg) = self.seg.take() {
                    finish(seg, *last, &self.dir);
                }
            }
        }
    }

    fn write(&mut self, batch: &[u8], m: &JournalMetrics) {
        if let Some(seg) = self.seg.as_mut() {
            if let Err(e) = seg.append(batch).and_then(|_| seg.sync()) {
                self.seg = None;
                m.dir_failed(&self.dir, "write or sync failed", &e);
            }
        }
    }

    fn roll(&mut self, last: u64, cfg: &JournalConfig, m: &JournalMetrics) {
        let Some(seg) = self.seg.take() else { return };
        finish(seg, last, &self.dir);
        match SegmentWriter::create(&self.dir, last + 1, cfg.prealloc_chunk) {
            Ok(s) => self.seg = Some(s),
            Err(e) => m.dir_failed(&self.dir, "could not open a new segment", &e),
        }
    }

    /// Back into service with a new segment starting at `first`, as HDFS's
    /// `restoreFailedStorage` does at a roll. The directory must still exist (one gone
    /// may be an unmounted disk, whose mount point is no place for the journal), and its
    /// segments from before the failure are closed out first, as start-up would: a torn
    /// tail truncated, an unreadable copy set aside. They hold no record the directories
    /// in service lack: every batch since went to those.
    fn restore(&mut self, first: u64, cfg: &JournalConfig, m: &JournalMetrics) {
        if self.seg.is_some() {
            return;
        }
        let made = recover::close_in_progress(std::slice::from_ref(&self.dir))
            .and_then(|_| SegmentWriter::create(&self.dir, first, cfg.prealloc_chunk));
        match made {
            Ok(seg) => {
                self.seg = Some(seg);
                m.dir_restored(&self.dir);
            }
            Err(e) => {
                warn!(dir = %self.dir.display(), error = %e, "failed journal directory not restored")
            }
        }
    }

    fn state(&self) -> State {
        State {
            live: self.seg.is_some(),
            written: self.seg.as_ref().map_or(0, |s| s.written),
        }
    }
}

fn finish(seg: SegmentWriter, last: u64, dir: &Path) {
    let path = seg.path.clone();
    if last < seg.first {
        // Nothing was ever written to it.
        let _ = std::fs::remove_file(&path);
        return;
    }
    if let Err(e) = seg.finalize(last) {
        warn!(dir = %dir.display(), segment = %path.display(), error = %e, "finalizing segment failed; it will be recovered at start-up");
    }
}

/// A directory on a helper thread, as it reported itself after its last job.
#[derive(Clone, Copy, Default)]
struct State {
    live: bool,
    written: u64,
}

struct Helper {
    dir: PathBuf,
    jobs: mpsc::Sender<Job>,
    done: mpsc::Receiver<State>,
    state: State,
    thread: JoinHandle<()>,
}

impl Helper {
    fn spawn(
        n: usize,
        mut w: DirWriter,
        shared: Arc<Shared>,
        cfg: JournalConfig,
    ) -> std::io::Result<Helper> {
        let (jobs, todo) = mpsc::channel::<Job>();
        let (report, done) = mpsc::channel();
        let state = w.state();
        let dir = w.dir.clone();
        let thread = std::thread::Builder::new()
            .name(format!("journal-dir-{n}"))
            .spawn(move || {
                for job in todo {
                    w.run(&job, &cfg, &shared.metrics);
                    // Its share of a batch goes before the report, so the syncer gets
                    // the batch's buffer back whole.
                    drop(job);
                    if report.send(w.state()).is_err() {
                        return;
                    }
                }
            })?;
        Ok(Helper {
            dir,
            jobs,
            done,
            state,
            thread,
        })
    }

    /// Its thread has stopped (only a panic does that): nothing it held can be counted on,
    /// so the directory is out of service for good. Never count it as written.
    fn lost(&mut self, m: &JournalMetrics) {
        if self.state.live {
            let e = std::io::Error::other("its writer thread stopped");
            m.dir_failed(&self.dir, "journal directory writer lost", &e);
        }
        self.state = State::default();
    }
}

/// Every configured journal directory, in or out of service.
pub(super) struct Dirs {
    first: DirWriter,
    helpers: Vec<Helper>,
    shared: Arc<Shared>,
    cfg: JournalConfig,
}

impl Dirs {
    /// `writers` must not be empty.
    pub fn new(
        mut writers: Vec<DirWriter>,
        shared: Arc<Shared>,
        cfg: JournalConfig,
    ) -> std::io::Result<Dirs> {
        let first = writers.remove(0);
        let helpers = writers
            .into_iter()
            .enumerate()
            .map(|(i, w)| Helper::spawn(i + 1, w, shared.clone(), cfg.clone()))
            .collect::<std::io::Result<_>>()?;
        Ok(Dirs {
            first,
            helpers,
            shared,
            cfg,
        })
    }

    /// Runs `job` in every directory whose being in service `wanted` accepts, the helpers'
    /// at the same time as the first's, and waits for all of them.
    fn run(&mut self, job: Job, wanted: impl Fn(bool) -> bool) {
        let m = &self.shared.metrics;
        let mut sent = Vec::with_capacity(self.helpers.len());
        for (i, h) in self.helpers.iter_mut().enumerate() {
            if !wanted(h.state.live) {
                continue;
            }
            match h.jobs.send(job.clone()) {
                Ok(()) => sent.push(i),
                Err(_) => h.lost(m),
            }
        }
        if wanted(self.first.seg.is_some()) {
            self.first.run(&job, &self.cfg, m);
        }
        drop(job);
        for i in sent {
            let h = &mut self.helpers[i];
            match h.done.recv() {
                Ok(state) => h.state = state,
                Err(_) => h.lost(m),
            }
        }
    }

    /// Appends `batch` to every directory in service and fdatasyncs it there; a directory
    /// that fails is taken out of service. Hands the buffer back for reuse.
    pub fn write(&mut self, batch: Vec<u8>) -> Vec<u8> {
        if self.helpers.is_empty() {
            self.first.write(&batch, &self.shared.metrics);
            return batch;
        }
        let batch = Arc::new(batch);
        self.run(Job::Write(batch.clone()), |live| live);
        Arc::try_unwrap(batch).unwrap_or_else(|b| b.to_vec())
    }

    pub fn all_failed(&self) -> bool {
        self.first.seg.is_none() && self.helpers.iter().all(|h| !h.state.live)
    }

    /// The most bytes any directory's current segment holds.
    pub fn written(&self) -> u64 {
        let helpers = self.helpers.iter().map(|h| h.state.written);
        helpers.fold(self.first.state().written, u64::max)
    }

    /// Finalizes every directory's segment at `last` and opens the next one.
    pub fn roll(&mut self, last: u64) {
        self.run(Job::Roll(last), |live| live);
    }

    /// Tries to bring every directory out of service back, from txid `first` on.
    pub fn restore(&mut self, first: u64) {
        self.run(Job::Restore(first), |live| !live);
    }

    /// Finalizes every segment at `last` and stops the helpers.
    pub fn close(mut self, last: u64) {
        self.run(Job::Close(last), |live| live);
        for h in self.helpers {
            drop(h.jobs);
            let _ = h.thread.join();
        }
    }
}
