//! The journal directories as the syncer writes them. A single directory is written on the
//! syncer's own thread, watched by a watchdog (`watchdog.rs`); with two or more, each has a
//! thread of its own kept for the journal's life, and all work in step: every directory
//! finishes a job, or is given up on after `ferrite.journal.dir.timeout.ms`, before the
//! syncer goes on.
//!
//! Scoped threads spawned for every sync did this before: with a second directory on
//! tmpfs (so its fdatasync was nearly free) a sync took ~45 µs longer than with one
//! directory, and in-process creates fell from 185–200k/s to 150k/s (BENCHMARKS.md). A
//! hand-off to a waiting thread costs a wake-up, not a spawn. And a directory that hangs
//! (a hard-mounted NFS server gone silent, a frozen file system) used to hold every sync,
//! and so every mutation, for as long as it hung.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::warn;

use super::segment::SegmentWriter;
use super::watchdog::Watchdog;
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
    ///
    /// Only asked of a directory out of service. One given up on while its write hung may
    /// still hold that segment open: it is dropped, and closed out from disk like the rest
    /// (it missed every batch since, so writing on into it would leave a txid gap).
    fn restore(&mut self, first: u64, cfg: &JournalConfig, m: &JournalMetrics) {
        self.seg = None;
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
    /// Jobs, numbered so that a report that comes after its job was given up on (see
    /// [`Helper::stalled`]) is known for what it is.
    jobs: mpsc::Sender<(u64, Job)>,
    done: mpsc::Receiver<(u64, State)>,
    state: State,
    /// Did not finish its last job in time and may still be in it (a write into a frozen
    /// file system or a hung NFS mount does not return): out of service, and not waited
    /// for at close.
    stalled: bool,
    thread: JoinHandle<()>,
}

impl Helper {
    fn spawn(
        n: usize,
        mut w: DirWriter,
        shared: Arc<Shared>,
        cfg: JournalConfig,
    ) -> std::io::Result<Helper> {
        let (jobs, todo) = mpsc::channel::<(u64, Job)>();
        let (report, done) = mpsc::channel();
        let state = w.state();
        let dir = w.dir.clone();
        let thread = std::thread::Builder::new()
            .name(format!("journal-dir-{n}"))
            .spawn(move || {
                for (seq, job) in todo {
                    w.run(&job, &cfg, &shared.metrics);
                    // Its share of a batch goes before the report, so the syncer gets
                    // the batch's buffer back whole.
                    drop(job);
                    if report.send((seq, w.state())).is_err() {
                        return;
                    }
                }
            })?;
        Ok(Helper {
            dir,
            jobs,
            done,
            state,
            stalled: false,
            thread,
        })
    }

    /// Waits until `deadline` for job `seq`'s report, passing over reports of jobs given
    /// up on before.
    fn wait(&mut self, seq: u64, deadline: Instant, timeout: Duration, m: &JournalMetrics) {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.done.recv_timeout(left) {
                Ok((s, state)) if s == seq => {
                    self.state = state;
                    self.stalled = false;
                    return;
                }
                Ok(_) => continue,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let e = std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no answer within {} ms", timeout.as_millis()),
                    );
                    self.out(m, "journal directory stalled", e);
                    self.stalled = true;
                    return;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return self.lost(m),
            }
        }
    }

    /// Whether its thread can take a job: a stalled one is still in the job it stalled on
    /// until that job's late report comes in. (Sending it more would queue them behind a
    /// write that may never return, and the syncer would wait out the timeout each time.)
    fn free(&mut self) -> bool {
        while self.stalled {
            match self.done.try_recv() {
                Ok(_) => self.stalled = false,
                Err(mpsc::TryRecvError::Empty) => return false,
                Err(mpsc::TryRecvError::Disconnected) => {
                    self.stalled = false;
                }
            }
        }
        true
    }

    /// Its thread has stopped (only a panic does that): nothing it held can be counted on,
    /// so the directory is out of service for good. Never count it as written.
    fn lost(&mut self, m: &JournalMetrics) {
        let e = std::io::Error::other("its writer thread stopped");
        self.out(m, "journal directory writer lost", e);
    }

    fn out(&mut self, m: &JournalMetrics, what: &str, e: std::io::Error) {
        if self.state.live {
            m.dir_failed(&self.dir, what, &e);
        }
        self.state = State::default();
    }
}

/// Every configured journal directory, in or out of service.
pub(super) struct Dirs {
    /// The only directory, written on the syncer's own thread: with nowhere else to write,
    /// a hand-off would buy nothing. The watchdog stops the NameNode if a job there hangs.
    only: Option<(DirWriter, Watchdog)>,
    /// With two or more directories, each on a thread of its own, so that one that hangs
    /// can be given up on (`ferrite.journal.dir.timeout.ms`) while the others go on.
    helpers: Vec<Helper>,
    seq: u64,
    shared: Arc<Shared>,
    cfg: JournalConfig,
}

impl Dirs {
    /// `writers` must not be empty.
    pub(super) fn new(
        mut writers: Vec<DirWriter>,
        shared: Arc<Shared>,
        cfg: JournalConfig,
    ) -> std::io::Result<Dirs> {
        let only = match writers.len() {
            1 => {
                let w = writers.remove(0);
                let dog = Watchdog::spawn(w.dir.clone(), cfg.dir_timeout, shared.clone())?;
                Some((w, dog))
            }
            _ => None,
        };
        let helpers = writers
            .into_iter()
            .enumerate()
            .map(|(i, w)| Helper::spawn(i + 1, w, shared.clone(), cfg.clone()))
            .collect::<std::io::Result<_>>()?;
        Ok(Dirs {
            only,
            helpers,
            seq: 0,
            shared,
            cfg,
        })
    }

    /// Runs `job` in every directory whose being in service `wanted` accepts, all at
    /// once, and waits for each until the directory timeout; one that does not answer by
    /// then is taken out of service.
    fn run(&mut self, job: Job, wanted: impl Fn(bool) -> bool) {
        let m = &self.shared.metrics;
        if let Some((d, dog)) = self.only.as_mut() {
            if wanted(d.seg.is_some()) {
                dog.watch.timed(|| d.run(&job, &self.cfg, m));
            }
            return;
        }
        self.seq += 1;
        let mut sent = Vec::with_capacity(self.helpers.len());
        for (i, h) in self.helpers.iter_mut().enumerate() {
            if !wanted(h.state.live) || !h.free() {
                continue;
            }
            match h.jobs.send((self.seq, job.clone())) {
                Ok(()) => sent.push(i),
                Err(_) => h.lost(m),
            }
        }
        drop(job);
        let timeout = self.cfg.dir_timeout;
        let deadline = Instant::now() + timeout;
        for i in sent {
            self.helpers[i].wait(self.seq, deadline, timeout, m);
        }
    }

    /// Appends `batch` to every directory in service and fdatasyncs it there; a directory
    /// that fails or stalls is taken out of service. Hands the buffer back for reuse.
    pub(super) fn write(&mut self, batch: Vec<u8>) -> Vec<u8> {
        if let Some((d, dog)) = self.only.as_mut() {
            dog.watch.timed(|| d.write(&batch, &self.shared.metrics));
            return batch;
        }
        let batch = Arc::new(batch);
        self.run(Job::Write(batch.clone()), |live| live);
        // A stalled directory may still hold its share: then the buffer is copied.
        Arc::try_unwrap(batch).unwrap_or_else(|b| b.to_vec())
    }

    /// Whether the directories still in service are enough to go on (see
    /// [`super::DirPolicy`]).
    pub(super) fn check(&self) -> Result<(), super::policy::PolicyError> {
        match &self.only {
            // Given up on by the watchdog, it is out even if its late write succeeded.
            Some((d, _)) => {
                let live = d.seg.is_some() && !self.shared.stalled.load(Ordering::SeqCst);
                self.cfg.policy.check([(d.dir.as_path(), live)])
            }
            None => self
                .cfg
                .policy
                .check(self.helpers.iter().map(|h| (h.dir.as_path(), h.state.live))),
        }
    }

    /// The most bytes any directory's current segment holds.
    pub(super) fn written(&self) -> u64 {
        let helpers = self.helpers.iter().map(|h| h.state.written);
        helpers.fold(
            self.only.as_ref().map_or(0, |(d, _)| d.state().written),
            u64::max,
        )
    }

    /// Finalizes every directory's segment at `last` and opens the next one.
    pub(super) fn roll(&mut self, last: u64) {
        self.run(Job::Roll(last), |live| live);
    }

    /// Tries to bring every directory out of service back, from txid `first` on.
    pub(super) fn restore(&mut self, first: u64) {
        self.run(Job::Restore(first), |live| !live);
    }

    /// Finalizes every segment at `last` and stops the helpers; a stalled one is left
    /// to itself (joining it could wait forever).
    pub(super) fn close(mut self, last: u64) {
        self.run(Job::Close(last), |live| live);
        for h in self.helpers {
            drop(h.jobs);
            if !h.stalled {
                let _ = h.thread.join();
            }
        }
    }
}
