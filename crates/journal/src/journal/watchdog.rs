//! The watchdog of a lone journal directory.
//!
//! With two or more directories each has a thread of its own and the syncer gives up on one
//! that does not answer in time (`dirs.rs`). A single directory is written on the syncer's
//! own thread, to spare every sync two hand-offs; a write into it that never returns (a
//! hard-mounted NFS server gone silent, a frozen file system) would then hold every
//! mutation, and every client, for as long as it hangs, with no word to the operator.
//!
//! The watchdog is a thread that checks, a few times per `ferrite.journal.dir.timeout.ms`,
//! whether the syncer has been in one job for longer than that. If it has, the directory is
//! the last one in service and it is out: the waiting clients get an error, and the NameNode
//! stops with a message naming the directory, as HDFS's NameNode stops when its journal
//! quorum times out. What the stuck write held was never acknowledged, so nothing
//! acknowledged is lost. The syncer costs a clock read and two atomic stores per job; the
//! watchdog wakes a few times per timeout, not per sync.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use tracing::error;

use super::{JournalError, Shared};

/// When the syncer's current job in the lone directory began.
pub(super) struct Watch {
    epoch: Instant,
    /// Milliseconds since `epoch` at the start of the running job, plus one; 0 when idle.
    since_ms: AtomicU64,
}

impl Watch {
    fn new() -> Watch {
        Watch {
            epoch: Instant::now(),
            since_ms: AtomicU64::new(0),
        }
    }

    fn ms(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_millis() as u64 + 1
    }

    /// Runs one of the syncer's jobs in the directory, timed for the watchdog.
    pub(super) fn timed<R>(&self, job: impl FnOnce() -> R) -> R {
        self.begin();
        let out = job();
        self.end();
        out
    }

    fn begin(&self) {
        self.since_ms
            .store(self.ms(Instant::now()), Ordering::Release);
    }

    fn end(&self) {
        self.since_ms.store(0, Ordering::Release);
    }

    /// Whether, at `now`, a job has been running for longer than `timeout`.
    fn overdue(&self, now: Instant, timeout: Duration) -> bool {
        match self.since_ms.load(Ordering::Acquire) {
            0 => false,
            since => self.ms(now).saturating_sub(since) > timeout.as_millis() as u64,
        }
    }
}

/// The syncer's end of the watchdog: its jobs are timed through it, and dropping it (the
/// journal closed) stops the thread.
pub(super) struct Watchdog {
    pub watch: Arc<Watch>,
    _stop: mpsc::Sender<()>,
}

impl Watchdog {
    pub(super) fn spawn(
        dir: PathBuf,
        timeout: Duration,
        shared: Arc<Shared>,
    ) -> std::io::Result<Self> {
        let watch = Arc::new(Watch::new());
        let (stop, stopped) = mpsc::channel();
        let w = watch.clone();
        std::thread::Builder::new()
            .name("journal-watchdog".into())
            .spawn(move || watch_loop(&w, &stopped, &dir, timeout, &shared))?;
        Ok(Watchdog { watch, _stop: stop })
    }
}

fn watch_loop(
    w: &Watch,
    stopped: &mpsc::Receiver<()>,
    dir: &std::path::Path,
    timeout: Duration,
    shared: &Shared,
) {
    let tick = (timeout / 4).clamp(Duration::from_millis(5), Duration::from_secs(1));
    loop {
        if !matches!(
            stopped.recv_timeout(tick),
            Err(mpsc::RecvTimeoutError::Timeout)
        ) {
            return;
        }
        if !w.overdue(Instant::now(), timeout) {
            continue;
        }
        let ms = timeout.as_millis();
        shared.stalled.store(true, Ordering::SeqCst);
        let e = std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no answer within {ms} ms"),
        );
        shared
            .metrics
            .dir_failed(dir, "journal directory stalled", &e);
        let msg = format!(
            "the only journal directory in service ({}) has not finished a write within {ms} ms \
             (ferrite.journal.dir.timeout.ms); no edit can be made durable",
            dir.display()
        );
        error!("{msg}");
        shared.waiters.fail(JournalError(msg.clone()));
        shared.fatal.fire(msg);
        return;
    }
}

/// The NameNode's stop, given why.
type Stop = Box<dyn FnOnce(String) + Send>;

/// What runs once when the journal can make nothing durable any more: the NameNode's stop.
pub(super) struct Fatal(parking_lot::Mutex<Option<Stop>>);

impl Fatal {
    pub(super) fn new(f: impl FnOnce(String) + Send + 'static) -> Fatal {
        Fatal(parking_lot::Mutex::new(Some(Box::new(f))))
    }

    /// Runs it, the first time only.
    pub(super) fn fire(&self, msg: String) {
        let f = self.0.lock().take();
        if let Some(f) = f {
            f(msg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_is_overdue_only_while_it_runs_past_the_timeout() {
        let w = Watch::new();
        let timeout = Duration::from_millis(100);
        let now = Instant::now();
        assert!(!w.overdue(now + Duration::from_secs(60), timeout), "idle");
        w.begin();
        let began = Instant::now();
        assert!(!w.overdue(began + Duration::from_millis(50), timeout));
        assert!(w.overdue(began + Duration::from_millis(200), timeout));
        w.end();
        assert!(!w.overdue(began + Duration::from_millis(200), timeout));
    }

    #[test]
    fn the_fatal_action_runs_once() {
        let runs = Arc::new(AtomicU64::new(0));
        let r = runs.clone();
        let f = Fatal::new(move |msg| {
            assert_eq!(msg, "first");
            r.fetch_add(1, Ordering::SeqCst);
        });
        f.fire("first".into());
        f.fire("second".into());
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
