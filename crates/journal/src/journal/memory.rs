//! A journal in memory: records are encoded exactly as on disk and kept as synced batches,
//! durable as soon as they are appended unless a test holds syncs back. A NameNode
//! without directories uses it (nothing survives a restart there anyway), and the
//! service's tests use it to see the commit path's ordering without a disk.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ferrite_ipc::durable::Durability;
use parking_lot::Mutex;
use tokio::sync::watch;

use super::codec;
use super::edit_log::{BoxFuture, EditLog};
use super::tail::{Batch, Tail};
use super::{JournalError, JournalMetrics};
use ferrite_namespace::Op;

/// Synced bytes kept for followers; older batches are dropped (a follower that far behind
/// would read segments, which a memory journal does not have: it starts again).
const KEEP_BYTES: usize = 64 << 20;

#[derive(Default)]
struct State {
    last_appended: u64,
    /// Appended, not yet synced: (first txid, encoded records).
    pending: Option<(u64, Vec<u8>)>,
    held: bool,
    closed: bool,
}

pub struct MemoryJournal {
    state: Mutex<State>,
    /// Synced batches for followers: the disk journal's tail, with its rules.
    tail: Tail,
    /// The last synced txid, for async waiters.
    synced: watch::Sender<u64>,
    metrics: JournalMetrics,
    restore: AtomicBool,
}

impl Default for MemoryJournal {
    fn default() -> Self {
        MemoryJournal {
            state: Mutex::new(State::default()),
            tail: Tail::new(KEEP_BYTES, 0),
            synced: watch::channel(0).0,
            metrics: JournalMetrics::default(),
            restore: AtomicBool::new(false),
        }
    }
}

impl MemoryJournal {
    fn sync(&self, s: &mut State) {
        let Some((first, bytes)) = s.pending.take() else {
            return;
        };
        let last = s.last_appended;
        self.metrics.syncs.fetch_add(1, Ordering::Relaxed);
        self.metrics
            .txns_synced
            .fetch_add(last - first + 1, Ordering::Relaxed);
        self.metrics
            .bytes_synced
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.tail.publish(first, last, bytes.into());
        self.synced.send_replace(last);
    }

    fn synced_upto(&self) -> u64 {
        *self.synced.borrow()
    }
}

impl EditLog for MemoryJournal {
    fn append_all(&self, ops: &[Op]) -> u64 {
        let mut s = self.state.lock();
        if s.closed || ops.is_empty() {
            return s.last_appended;
        }
        let first = s.last_appended + 1;
        let (_, buf) = s.pending.get_or_insert_with(|| (first, Vec::new()));
        let mut txid = first;
        for op in ops {
            codec::encode_record(txid, op, buf);
            txid += 1;
        }
        s.last_appended = txid - 1;
        if !s.held {
            self.sync(&mut s);
        }
        s.last_appended
    }

    fn last_appended(&self) -> u64 {
        self.state.lock().last_appended
    }

    fn last_synced(&self) -> Result<u64, JournalError> {
        Ok(self.synced_upto())
    }

    fn wait_synced(&self, txid: u64) -> BoxFuture<'_, Result<(), JournalError>> {
        let mut rx = self.synced.subscribe();
        Box::pin(async move {
            rx.wait_for(|&t| t >= txid)
                .await
                .map(drop)
                .map_err(|_| JournalError("the journal is gone".into()))
        })
    }

    fn roll(&self) -> BoxFuture<'_, Result<u64, JournalError>> {
        let r = {
            let mut s = self.state.lock();
            if s.closed {
                Err(JournalError("the journal is closing".into()))
            } else {
                self.sync(&mut s);
                let next = s.last_appended + 1;
                self.metrics.segments_rolled.fetch_add(1, Ordering::Relaxed);
                self.metrics.segment_first.store(next, Ordering::Relaxed);
                Ok(next)
            }
        };
        Box::pin(async move { r })
    }

    fn read_from(&self, from: u64, max_bytes: usize, wait: Duration) -> Option<Vec<Batch>> {
        self.tail.read_from(from, max_bytes, wait)
    }

    fn close(&self) {
        let mut s = self.state.lock();
        self.sync(&mut s);
        s.closed = true;
        self.tail.close();
    }

    fn metrics(&self) -> &JournalMetrics {
        &self.metrics
    }

    fn restore_failed(&self) -> bool {
        self.restore.load(Ordering::SeqCst)
    }

    fn set_restore_failed(&self, on: bool) {
        self.restore.store(on, Ordering::SeqCst);
    }

    /// Holds syncs back (`true`) until released (`false`): appended records wait, as a
    /// slow disk would make them.
    fn hold_syncs(&self, held: bool) -> bool {
        let mut s = self.state.lock();
        s.held = held;
        if !held {
            self.sync(&mut s);
        }
        true
    }
}

impl Durability for MemoryJournal {
    fn issued(&self) -> u64 {
        self.last_appended()
    }

    fn durable(&self) -> (u64, Option<String>) {
        (self.synced_upto(), None)
    }

    fn wait(
        &self,
        ticket: u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        super::edit_log::wait_durable(self, ticket)
    }
}
