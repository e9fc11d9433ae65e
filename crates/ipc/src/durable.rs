//! Replies that may go out only once what they report is durable.
//!
//! A NameNode mutation is applied in memory and journaled under the namespace lock, and its
//! reply must not leave before the journal has synced it. Waiting for the sync inside the
//! call cost, for every call, a task of its own, a wake-up from the syncer, a hop to the
//! connection's writer and often a socket write of its own (under NNThroughputBenchmark a
//! delete cost the server 33 µs of CPU that way, 23 without). Instead the call finishes at
//! once and leaves a *ticket* (the txid its reply rests on) with [`defer_reply`]; the
//! connection's writer holds the encoded reply until the service's [`Durability`] reaches
//! the ticket. One sync then wakes each connection's writer once, and its replies go out in
//! one write.
//!
//! Code that runs outside a served call (in-process callers, background tasks) finds no
//! call to defer to, and [`settle`] makes it wait itself.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;

/// What replies wait on: a NameNode's journal, numbered by txid.
pub trait Durability: Send + Sync + 'static {
    /// The highest ticket handed out so far: any reply computed up to now rests on at most
    /// this one.
    fn issued(&self) -> u64;
    /// The highest durable ticket, and, once nothing more ever will become durable, why.
    fn durable(&self) -> (u64, Option<String>);
    /// Resolves once `ticket` is durable or nothing more ever will be; look at
    /// [`durable`](Self::durable) to tell which.
    fn wait(&self, ticket: u64) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
    /// Whether, once nothing more will become durable, replies still held are dropped with
    /// their connection rather than answered with an error. A replicated journal's member
    /// that fails is one of several: its clients, seeing the connection lost, send the
    /// call again to the member that takes over, which either holds it (and answers from
    /// its retry cache) or never will (and runs it) — an error would end the call instead.
    fn abandons_on_failure(&self) -> bool {
        false
    }
}

tokio::task_local! {
    /// The highest ticket the running call's reply rests on; only set inside a gated call.
    static TICKET: Cell<u64>;
}

/// Marks the running call's reply as resting on `ticket`. Returns false when no served call
/// is running here, so nothing will hold a reply back: the caller must wait itself.
pub fn defer_reply(ticket: u64) -> bool {
    TICKET.try_with(|t| t.set(t.get().max(ticket))).is_ok()
}

/// Makes whatever the caller answers rest on `ticket`: deferred to the running call's
/// reply when there is one, otherwise waited for here. Errs when `ticket` will never be
/// durable.
pub async fn settle(gate: &dyn Durability, ticket: u64) -> Result<(), NotDurable> {
    if defer_reply(ticket) {
        return Ok(());
    }
    gate.wait(ticket).await;
    match gate.durable() {
        (upto, _) if upto >= ticket => Ok(()),
        (upto, why) => Err(NotDurable { ticket, upto, why }),
    }
}

/// A ticket that will never be durable, with the gate's own reason when it gave one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotDurable {
    pub ticket: u64,
    pub upto: u64,
    pub why: Option<String>,
}

impl std::fmt::Display for NotDurable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.why {
            Some(why) => f.write_str(why),
            None => write!(
                f,
                "ticket {} is not durable (durable up to {})",
                self.ticket, self.upto
            ),
        }
    }
}

impl std::error::Error for NotDurable {}

/// Runs `call` as a served call whose reply may be deferred; inside it, [`ticket`] tells
/// what the reply rests on.
pub(crate) fn gated<F: Future>(call: F) -> impl Future<Output = F::Output> {
    TICKET.scope(Cell::new(0), call)
}

/// The highest ticket the running call has deferred its reply to (0: none, or not a gated
/// call).
pub(crate) fn ticket() -> u64 {
    TICKET.try_with(Cell::get).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use tokio::sync::Notify;

    /// Durable up to whatever the test says.
    #[derive(Default)]
    struct Counter {
        upto: AtomicU64,
        moved: Notify,
    }

    impl Durability for Counter {
        fn issued(&self) -> u64 {
            u64::MAX
        }
        fn durable(&self) -> (u64, Option<String>) {
            (self.upto.load(Ordering::SeqCst), None)
        }
        fn wait(&self, ticket: u64) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
            Box::pin(async move {
                while self.upto.load(Ordering::SeqCst) < ticket {
                    self.moved.notified().await;
                }
            })
        }
    }

    #[tokio::test]
    async fn inside_a_gated_call_the_highest_ticket_is_kept_and_nothing_waits() {
        let gate = Counter::default();
        let (out, held_for) = gated(async {
            settle(&gate, 7).await.unwrap();
            settle(&gate, 3).await.unwrap();
            ("answer", ticket())
        })
        .await;
        assert_eq!((out, held_for), ("answer", 7));
        assert!(!defer_reply(1), "no call is running out here");
        assert_eq!(ticket(), 0);
    }

    #[tokio::test]
    async fn outside_a_call_settle_waits_for_the_ticket() {
        let gate = std::sync::Arc::new(Counter::default());
        let g = gate.clone();
        let waiter = tokio::spawn(async move { settle(&*g, 5).await });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        gate.upto.store(5, Ordering::SeqCst);
        gate.moved.notify_waiters();
        assert_eq!(waiter.await.unwrap(), Ok(()));
    }
}
