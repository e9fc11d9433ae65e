//! A connection's replies on their way out, and the writer task that sends them.
//!
//! Calls push their encoded replies here. A reply that rests on a durability ticket (see
//! [`crate::durable`]) is held until the service reports the ticket durable; the others go
//! out at once, so a lookup never queues behind a sync. The writer is woken only when it has
//! something to do: a reply it can send, or one whose ticket is older than the one it waits
//! for. A stream of mutations thus costs one wake-up and one socket write per journal sync.

use std::collections::VecDeque;

use bytes::Bytes;
use ferrite_proto::common::rpc_response_header_proto::{RpcErrorCodeProto, RpcStatusProto};
use parking_lot::Mutex;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, OwnedSemaphorePermit};

use crate::durable::Durability;
use crate::frame;
use crate::low_water::{LowWater, MIN_HELD};

/// Largest slice handed to one socket write (HADOOP-4797: no giant socket writes).
pub const WRITE_SLICE: usize = 64 * 1024;

/// One encoded reply.
pub(crate) struct Reply {
    bytes: Bytes,
    held: Option<Held>,
    /// The call's in-flight slot, given back once the reply is written (or dropped), so the
    /// replies a connection holds stay bounded.
    _permit: Option<OwnedSemaphorePermit>,
}

/// A reply that rests on a ticket, with what it takes to answer with an error instead.
struct Held {
    ticket: u64,
    call_id: i32,
    client_id: Bytes,
    retry_count: i32,
}

impl Reply {
    /// A reply that may go out at once.
    pub(crate) fn now(bytes: Bytes) -> Self {
        Reply {
            bytes,
            held: None,
            _permit: None,
        }
    }

    /// A call's reply, held until `ticket` (0: none) is durable.
    pub(crate) fn of_call(
        bytes: Bytes,
        ticket: u64,
        (call_id, client_id, retry_count): (i32, Bytes, i32),
        permit: OwnedSemaphorePermit,
    ) -> Self {
        Reply {
            bytes,
            held: (ticket > 0).then_some(Held {
                ticket,
                call_id,
                client_id,
                retry_count,
            }),
            _permit: Some(permit),
        }
    }

    fn ticket(&self) -> u64 {
        self.held.as_ref().map_or(0, |h| h.ticket)
    }

    /// The bytes to send once the service's durable point is `upto` (and `failed`, when
    /// nothing more will ever be durable): the reply itself, or an error saying it was lost.
    fn into_bytes(self, upto: u64, failed: Option<&str>) -> Bytes {
        match (&self.held, failed) {
            (Some(h), Some(why)) if h.ticket > upto => {
                let header = frame::response_header(
                    h.call_id,
                    &h.client_id,
                    h.retry_count,
                    RpcStatusProto::Success,
                );
                let msg = format!("the operation was applied but could not be made durable: {why}");
                frame::error_response(
                    header,
                    false,
                    crate::error::class::IO,
                    &msg,
                    RpcErrorCodeProto::ErrorApplication,
                )
            }
            _ => self.bytes,
        }
    }
}

/// What the writer does next.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// Nothing held: wait for a reply.
    Idle,
    /// Wait for this ticket (or a reply that can go out sooner).
    WaitFor(u64),
    /// The connection is done and everything is written.
    Done,
}

#[derive(Default)]
struct Queue {
    replies: VecDeque<Reply>,
    /// How many of `replies` rest on a ticket.
    held: usize,
    /// A reply that rests on no ticket was pushed since the reader last went to the socket.
    answered_now: bool,
    /// The ticket the writer is waiting for, if any.
    waiting_for: Option<u64>,
    /// No more replies will come.
    closed: bool,
    /// The writer is gone (the peer stopped reading): replies are dropped.
    gone: bool,
}

impl Queue {
    fn push(&mut self, reply: Reply) {
        if reply.ticket() > 0 {
            self.held += 1;
        } else {
            self.answered_now = true;
        }
        self.replies.push_back(reply);
    }

    /// Whether the reader may let requests gather now; starts the next stretch of calls.
    fn let_requests_gather(&mut self) -> bool {
        let gather = self.held >= MIN_HELD && !self.answered_now && !self.gone;
        self.answered_now = false;
        gather
    }

    /// Whether the writer must wake for a reply with `ticket` just pushed.
    fn must_wake(&self, ticket: u64) -> bool {
        match self.waiting_for {
            Some(t) => ticket < t,
            None => true,
        }
    }

    /// Moves every reply that can go out, given the durable point `upto` (or every reply,
    /// once durability `failed`), into `out` in arrival order, and says what to wait for.
    fn take(&mut self, upto: u64, failed: bool, out: &mut Vec<Reply>) -> Next {
        let mut oldest: Option<u64> = None;
        let mut kept = 0;
        for _ in 0..self.replies.len() {
            let r = self.replies.pop_front().expect("counted");
            let t = r.ticket();
            if t <= upto || failed {
                self.held -= usize::from(t > 0);
                out.push(r);
            } else {
                oldest = Some(oldest.map_or(t, |o| o.min(t)));
                self.replies.push_back(r);
                kept += 1;
            }
        }
        debug_assert_eq!(kept, self.replies.len());
        self.waiting_for = oldest;
        match oldest {
            Some(t) => Next::WaitFor(t),
            None if self.closed => Next::Done,
            None => Next::Idle,
        }
    }
}

/// The replies of one connection, shared by the calls that push and the writer that sends.
#[derive(Default)]
pub(crate) struct Outbox {
    queue: Mutex<Queue>,
    wake: Notify,
    /// The socket's receive low-water mark, when the server lets requests gather.
    low_water: Option<LowWater>,
}

impl Outbox {
    /// An outbox that raises `low_water` while it holds replies for a sync (see
    /// [`crate::low_water`]).
    pub(crate) fn with_low_water(low_water: Option<LowWater>) -> Self {
        Outbox {
            low_water,
            ..Default::default()
        }
    }

    /// Called by the reader before it goes to the socket for more requests (everything it
    /// read is dispatched). When many replies wait for a sync and none of the calls since
    /// the last time needed no sync (a lookup may follow a lookup), requests may gather.
    pub(crate) fn before_socket_read(&self) {
        if let Some(lw) = &self.low_water {
            lw.raise_if(|| self.queue.lock().let_requests_gather());
        }
    }

    /// Lowers the mark, so that the reader is woken for whatever has arrived.
    fn lower(&self) {
        if let Some(lw) = &self.low_water {
            lw.lower();
        }
    }

    pub(crate) fn push(&self, reply: Reply) {
        let mut q = self.queue.lock();
        if q.gone {
            return;
        }
        let wake = q.must_wake(reply.ticket());
        q.push(reply);
        drop(q);
        if wake {
            self.wake.notify_one();
        }
    }

    /// The writer is gone: what it holds and whatever comes later is dropped.
    fn drop_replies(&self) {
        let mut q = self.queue.lock();
        q.gone = true;
        q.replies.clear();
        q.held = 0;
        drop(q);
        self.lower();
    }

    /// No more replies will come; the writer finishes those it holds and stops.
    pub(crate) fn close(&self) {
        self.queue.lock().closed = true;
        self.wake.notify_one();
    }
}

/// Sends the outbox's replies in bounded slices as they become sendable, flushing after each
/// round. `gate` is the service's durability, if replies can rest on tickets.
pub(crate) async fn write_loop<W: AsyncWrite + Unpin>(
    wr: W,
    outbox: std::sync::Arc<Outbox>,
    gate: Option<&dyn Durability>,
) {
    let mut wr = tokio::io::BufWriter::with_capacity(WRITE_SLICE, wr);
    let mut ready = Vec::new();
    loop {
        let (upto, failed) = gate.map_or((u64::MAX, None), |g| g.durable());
        let next = outbox.queue.lock().take(upto, failed.is_some(), &mut ready);
        if failed.is_some() && gate.is_some_and(|g| g.abandons_on_failure()) {
            // Answer what is durable, then drop the connection: the client sends the
            // rest again where the journal lives on (see `abandons_on_failure`).
            let kept = ready.iter().take_while(|r| r.ticket() <= upto).count();
            let abandoned = kept < ready.len();
            ready.truncate(kept);
            if abandoned {
                let _ = write_all(&mut wr, &mut ready, upto, None).await;
                outbox.drop_replies();
                let _ = wr.shutdown().await;
                return;
            }
        }
        if !ready.is_empty() {
            // The calls that gathered while these waited are to be read now.
            outbox.lower();
        }
        if !ready.is_empty()
            && write_all(&mut wr, &mut ready, upto, failed.as_deref())
                .await
                .is_err()
        {
            outbox.drop_replies();
            return;
        }
        match (next, gate) {
            (Next::Done, _) => break,
            (Next::WaitFor(t), Some(g)) => {
                // Biased: either way the loop looks again, and a fixed order keeps a
                // simulated run reproducible.
                tokio::select! {
                    biased;
                    _ = outbox.wake.notified() => {}
                    _ = g.wait(t) => {}
                }
            }
            _ => outbox.wake.notified().await,
        }
    }
    let _ = wr.shutdown().await;
}

async fn write_all<W: AsyncWrite + Unpin>(
    wr: &mut tokio::io::BufWriter<W>,
    ready: &mut Vec<Reply>,
    upto: u64,
    failed: Option<&str>,
) -> std::io::Result<()> {
    for reply in ready.drain(..) {
        let bytes = reply.into_bytes(upto, failed);
        for chunk in bytes.chunks(WRITE_SLICE) {
            wr.write_all(chunk).await?;
        }
    }
    wr.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(ticket: u64) -> Reply {
        Reply {
            bytes: Bytes::from(ticket.to_string()),
            held: Some(Held {
                ticket,
                call_id: ticket as i32,
                client_id: Bytes::new(),
                retry_count: 0,
            }),
            _permit: None,
        }
    }

    fn tickets(replies: &[Reply]) -> Vec<u64> {
        replies.iter().map(Reply::ticket).collect()
    }

    #[test]
    fn replies_go_out_in_order_as_their_tickets_become_durable() {
        let mut q = Queue::default();
        for r in [
            held(5),
            Reply::now(Bytes::from_static(b"read")),
            held(3),
            held(9),
        ] {
            q.push(r);
        }
        let mut out = Vec::new();
        assert_eq!(q.take(2, false, &mut out), Next::WaitFor(3));
        assert_eq!(tickets(&out), [0], "a reply without a ticket does not wait");
        out.clear();
        assert_eq!(q.take(5, false, &mut out), Next::WaitFor(9));
        assert_eq!(tickets(&out), [5, 3]);
        out.clear();
        q.closed = true;
        assert_eq!(q.take(9, false, &mut out), Next::Done);
        assert_eq!(tickets(&out), [9]);
    }

    #[test]
    fn the_writer_is_woken_only_when_it_has_something_to_do() {
        let mut q = Queue::default();
        assert!(q.must_wake(7), "an idle writer wakes for anything");
        q.push(held(7));
        assert_eq!(q.take(0, false, &mut Vec::new()), Next::WaitFor(7));
        assert!(
            !q.must_wake(8),
            "the sync that wakes it for 7 may cover 8 too"
        );
        assert!(q.must_wake(6), "an older ticket may already be durable");
        assert!(q.must_wake(0), "a reply without a ticket goes at once");
    }

    #[test]
    fn requests_gather_only_behind_many_held_replies_and_no_lookup() {
        let mut q = Queue::default();
        for t in 1..MIN_HELD as u64 {
            q.push(held(t));
        }
        assert!(
            !q.let_requests_gather(),
            "a few held replies: a caller or two"
        );
        q.push(held(MIN_HELD as u64));
        assert!(q.let_requests_gather());
        q.push(Reply::now(Bytes::from_static(b"lookup")));
        assert!(
            !q.let_requests_gather(),
            "a lookup was just answered: the next call may be one too"
        );
        assert!(q.let_requests_gather(), "a stretch of mutations only");
        // Released replies no longer count.
        assert_eq!(q.take(1, false, &mut Vec::new()), Next::WaitFor(2));
        assert!(!q.let_requests_gather());
        q.gone = true;
        assert!(
            !q.let_requests_gather(),
            "nobody reads the replies any more"
        );
    }

    #[test]
    fn after_a_durability_failure_held_replies_become_errors_and_durable_ones_do_not() {
        let mut q = Queue::default();
        q.push(held(4));
        q.push(held(6));
        let mut out = Vec::new();
        assert_eq!(q.take(4, true, &mut out), Next::Idle);
        let bytes: Vec<Bytes> = out
            .into_iter()
            .map(|r| r.into_bytes(4, Some("disk gone")))
            .collect();
        assert_eq!(bytes[0], Bytes::from_static(b"4"));
        let text = String::from_utf8_lossy(&bytes[1]);
        assert!(text.contains("java.io.IOException"), "{text}");
        assert!(
            text.contains("could not be made durable: disk gone"),
            "{text}"
        );
    }
}
