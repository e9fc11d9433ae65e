//! Who waits for which txid to be durable, and waking exactly those a sync satisfied.
//!
//! A broadcast (a watch channel) woke every waiting RPC on every sync: with 64 clients a
//! batch satisfied about 19 of them, and the other 45 woke only to go back to sleep, on a
//! machine where each wake-up of a parked worker is a futex call and an interrupt.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;

use super::JournalError;

pub(super) struct Waiters {
    inner: Mutex<Inner>,
}

struct Inner {
    synced: u64,
    /// Set when every directory has failed: nothing past `synced` will ever be durable.
    failed: Option<JournalError>,
    /// Set once the journal is closed: likewise.
    closed: bool,
    next_id: u64,
    waiting: Vec<Entry>,
}

struct Entry {
    txid: u64,
    id: u64,
    waker: Waker,
}

impl Inner {
    /// What a wait for `txid` comes to now, or `None` while it must go on waiting.
    fn outcome(&self, txid: u64) -> Option<Result<(), JournalError>> {
        if txid <= self.synced {
            Some(Ok(()))
        } else if let Some(e) = &self.failed {
            Some(Err(e.clone()))
        } else if self.closed {
            Some(Err(JournalError(format!(
                "journal closed at txid {} before txid {txid} was durable",
                self.synced
            ))))
        } else {
            None
        }
    }

    fn remove(&mut self, id: u64) {
        if let Some(i) = self.waiting.iter().position(|e| e.id == id) {
            self.waiting.swap_remove(i);
        }
    }
}

impl Waiters {
    pub(super) fn new(synced: u64) -> Self {
        Waiters {
            inner: Mutex::new(Inner {
                synced,
                failed: None,
                closed: false,
                next_id: 0,
                waiting: Vec::new(),
            }),
        }
    }

    /// The last synced txid, or the failure that stopped the journal.
    pub(super) fn state(&self) -> Result<u64, JournalError> {
        let g = self.inner.lock();
        match &g.failed {
            Some(e) => Err(e.clone()),
            None => Ok(g.synced),
        }
    }

    /// The last synced txid and, once nothing more ever will be, why.
    pub(super) fn durable(&self) -> (u64, Option<String>) {
        let g = self.inner.lock();
        let why = g.outcome(u64::MAX).and_then(Result::err).map(|e| e.0);
        (g.synced, why)
    }

    /// Records that everything up to `synced` is durable and wakes the waiters it satisfies.
    /// `woken` is the caller's scratch space, so that a sync allocates nothing.
    pub(super) fn publish(&self, synced: u64, woken: &mut Vec<Waker>) {
        {
            let mut g = self.inner.lock();
            g.synced = synced;
            woken.extend(
                g.waiting
                    .extract_if(.., |e| e.txid <= synced)
                    .map(|e| e.waker),
            );
        }
        // Woken outside the lock: a woken task's first act is to take it.
        woken.drain(..).for_each(Waker::wake);
    }

    /// The journal has failed: every waiter past the synced txid gets `err`, or the
    /// error it failed with first.
    pub(super) fn fail(&self, err: JournalError) {
        self.end(|g| {
            g.failed.get_or_insert(err);
        });
    }

    /// The journal is closed: every waiter past the synced txid gets an error.
    pub(super) fn close(&self) {
        self.end(|g| g.closed = true);
    }

    fn end(&self, mark: impl FnOnce(&mut Inner)) {
        let woken: Vec<Waker> = {
            let mut g = self.inner.lock();
            mark(&mut g);
            g.waiting.drain(..).map(|e| e.waker).collect()
        };
        woken.into_iter().for_each(Waker::wake);
    }

    /// Resolves once `txid` is durable, or with the error that means it never will be.
    pub(super) fn wait(&self, txid: u64) -> WaitSynced<'_> {
        WaitSynced {
            waiters: self,
            txid,
            id: None,
        }
    }
}

pub(super) struct WaitSynced<'a> {
    waiters: &'a Waiters,
    txid: u64,
    /// Our entry in the waiting list, while there is one.
    id: Option<u64>,
}

impl Future for WaitSynced<'_> {
    type Output = Result<(), JournalError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut g = this.waiters.inner.lock();
        if let Some(out) = g.outcome(this.txid) {
            // Whatever settled the wait removed our entry under this lock: `publish` takes
            // every entry it satisfies, and a failure or close takes them all. No scan.
            this.id = None;
            return Poll::Ready(out);
        }
        match this.id {
            Some(id) => {
                if let Some(e) = g.waiting.iter_mut().find(|e| e.id == id) {
                    e.waker.clone_from(cx.waker());
                }
            }
            None => {
                let id = g.next_id;
                g.next_id += 1;
                let waker = cx.waker().clone();
                g.waiting.push(Entry {
                    txid: this.txid,
                    id,
                    waker,
                });
                this.id = Some(id);
            }
        }
        Poll::Pending
    }
}

impl Drop for WaitSynced<'_> {
    fn drop(&mut self) {
        // A wait given up (its RPC cancelled) must not leave its waker behind.
        if let Some(id) = self.id {
            self.waiters.inner.lock().remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    #[derive(Default)]
    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll(f: &mut WaitSynced<'_>, c: &Arc<Count>) -> Poll<Result<(), JournalError>> {
        let waker = Waker::from(c.clone());
        Pin::new(f).poll(&mut Context::from_waker(&waker))
    }

    #[test]
    fn a_sync_wakes_only_the_waiters_it_satisfies() {
        let w = Waiters::new(10);
        let counts: Vec<Arc<Count>> = (0..3).map(|_| Arc::default()).collect();
        let mut futs: Vec<_> = [11, 12, 13].iter().map(|&t| w.wait(t)).collect();
        for (f, c) in futs.iter_mut().zip(&counts) {
            assert!(poll(f, c).is_pending());
        }
        let mut scratch = Vec::new();
        w.publish(12, &mut scratch);
        let woken: Vec<usize> = counts.iter().map(|c| c.0.load(Ordering::SeqCst)).collect();
        assert_eq!(woken, [1, 1, 0]);
        assert_eq!(poll(&mut futs[0], &counts[0]), Poll::Ready(Ok(())));
        assert_eq!(poll(&mut futs[1], &counts[1]), Poll::Ready(Ok(())));
        assert!(poll(&mut futs[2], &counts[2]).is_pending());
        assert_eq!(w.inner.lock().waiting.len(), 1);
        w.publish(13, &mut scratch);
        assert_eq!(counts[2].0.load(Ordering::SeqCst), 1);
        assert_eq!(poll(&mut futs[2], &counts[2]), Poll::Ready(Ok(())));
        assert_eq!(w.state(), Ok(13));
    }

    #[test]
    fn an_already_synced_txid_is_ready_at_once() {
        let w = Waiters::new(5);
        let c = Arc::default();
        assert_eq!(poll(&mut w.wait(5), &c), Poll::Ready(Ok(())));
        assert!(w.inner.lock().waiting.is_empty());
    }

    #[test]
    fn a_repoll_keeps_one_entry_and_a_dropped_wait_leaves_none() {
        let w = Waiters::new(0);
        let c = Arc::default();
        let mut f = w.wait(1);
        assert!(poll(&mut f, &c).is_pending());
        assert!(poll(&mut f, &c).is_pending());
        assert_eq!(w.inner.lock().waiting.len(), 1);
        drop(f);
        assert!(w.inner.lock().waiting.is_empty());
    }

    #[test]
    fn failure_ends_only_the_waits_past_the_synced_txid() {
        let w = Waiters::new(7);
        let c = Arc::default();
        let mut f = w.wait(8);
        assert!(poll(&mut f, &c).is_pending());
        let err = JournalError("every journal directory has failed".into());
        w.fail(err.clone());
        assert_eq!(c.0.load(Ordering::SeqCst), 1);
        assert_eq!(poll(&mut f, &c), Poll::Ready(Err(err.clone())));
        // Acknowledged before the failure: still durable.
        assert_eq!(poll(&mut w.wait(7), &c), Poll::Ready(Ok(())));
        assert_eq!(w.state(), Err(err));
    }

    #[test]
    fn close_ends_waits_that_can_no_longer_be_met() {
        let w = Waiters::new(3);
        let c = Arc::default();
        let mut f = w.wait(4);
        assert!(poll(&mut f, &c).is_pending());
        w.close();
        assert_eq!(c.0.load(Ordering::SeqCst), 1);
        let Poll::Ready(Err(e)) = poll(&mut f, &c) else {
            panic!("expected an error")
        };
        assert!(e.0.contains("closed at txid 3"), "{e}");
    }
}
