//! What the NameNode needs of a journal, as a trait: records appended in order under
//! consecutive txids, made durable, and handed to followers. [`Journal`](super::Journal)
//! keeps them in segment files on disk; [`MemoryJournal`](super::memory::MemoryJournal)
//! keeps them in memory, for a NameNode configured without directories and for tests of
//! the service that need a journal's ordering without a disk. Both pass the same
//! conformance suite (`conformance.rs`).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use ferrite_ipc::durable::Durability;

use super::tail::Batch;
use super::{JournalError, JournalMetrics};
use ferrite_namespace::Op;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// [`Durability::wait`] for a journal: [`EditLog::wait_synced`], whose error the waiter
/// reads from [`Durability::durable`] instead.
pub fn wait_durable<L: EditLog + ?Sized>(log: &L, ticket: u64) -> BoxFuture<'_, ()> {
    let w = log.wait_synced(ticket);
    Box::pin(async move {
        let _ = w.await;
    })
}

pub trait EditLog: Durability {
    /// Appends records in order; returns the txid of the last (the last appended when
    /// `ops` is empty). They become durable later: see [`wait_synced`](Self::wait_synced).
    fn append_all(&self, ops: &[Op]) -> u64;
    fn last_appended(&self) -> u64;
    /// The last durable txid, or why nothing more ever will be.
    fn last_synced(&self) -> Result<u64, JournalError>;
    /// Resolves once `txid` is durable; an error once it never will be.
    fn wait_synced(&self, txid: u64) -> BoxFuture<'_, Result<(), JournalError>>;
    /// Ends the current segment; returns the txid the next one starts at.
    fn roll(&self) -> BoxFuture<'_, Result<u64, JournalError>>;
    /// Durable records from `from` on (a batch may begin earlier), about `max_bytes` of
    /// them, waiting up to `wait` for some; `None` when `from` is no longer kept in memory.
    fn read_from(&self, from: u64, max_bytes: usize, wait: Duration) -> Option<Vec<Batch>>;
    /// Makes everything appended durable and stops taking records.
    fn close(&self);
    fn metrics(&self) -> &JournalMetrics;
    /// Whether rolls bring failed directories back into service.
    fn restore_failed(&self) -> bool;
    fn set_restore_failed(&self, on: bool);
    /// Holds syncs back (true) or lets them go (false), where the journal can (in memory,
    /// for tests); answers whether it could.
    fn hold_syncs(&self, _held: bool) -> bool {
        false
    }
}

impl EditLog for super::Journal {
    fn append_all(&self, ops: &[Op]) -> u64 {
        super::Journal::append_all(self, ops)
    }
    fn last_appended(&self) -> u64 {
        super::Journal::last_appended(self)
    }
    fn last_synced(&self) -> Result<u64, JournalError> {
        super::Journal::last_synced(self)
    }
    fn wait_synced(&self, txid: u64) -> BoxFuture<'_, Result<(), JournalError>> {
        Box::pin(super::Journal::wait_synced(self, txid))
    }
    fn roll(&self) -> BoxFuture<'_, Result<u64, JournalError>> {
        Box::pin(super::Journal::roll(self))
    }
    fn read_from(&self, from: u64, max_bytes: usize, wait: Duration) -> Option<Vec<Batch>> {
        super::Journal::read_from(self, from, max_bytes, wait)
    }
    fn close(&self) {
        super::Journal::close(self)
    }
    fn metrics(&self) -> &JournalMetrics {
        super::Journal::metrics(self)
    }
    fn restore_failed(&self) -> bool {
        super::Journal::restore_failed(self)
    }
    fn set_restore_failed(&self, on: bool) {
        super::Journal::set_restore_failed(self, on)
    }
}
