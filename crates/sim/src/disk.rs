//! A NameNode's journal disk as the simulator models it, and the journal over it.
//!
//! [`Disk`] outlives the NameNode host: a crash drops the host's tasks, and the disk then
//! keeps what was synced plus a random prefix of what was only written (unsynced writes may
//! be lost, and the last one torn). A restart reads the records back through the journal's
//! own codec and stops at the first that does not verify, as start-up's salvage does.
//!
//! [`SimJournal`] is the NameNode's `EditLog` on it: records are encoded exactly as on disk,
//! written at once and synced by one task in batches (group commit), each sync taking the
//! disk's current latency in simulated time. A failing disk fails a sync, and from then on
//! nothing becomes durable: the NameNode must stop acknowledging, as with a failed journal.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferrite_ipc::durable::Durability;
use ferrite_namenode::journal::codec::{self, Next};
use ferrite_namenode::journal::edit_log::{BoxFuture, EditLog};
use ferrite_namenode::journal::{Batch, JournalError, JournalMetrics};
use ferrite_namenode::namespace::Op;
use parking_lot::Mutex;
use rand::Rng;
use tokio::sync::Notify;

/// How the disk behaves now; the fault schedule changes it between steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Health {
    /// Syncs take a millisecond or two.
    Good,
    /// Syncs take this long.
    Slow(Duration),
    /// The next sync fails, and so does every one after it until the disk is replaced.
    Failing,
}

#[derive(Default)]
struct Bytes {
    /// Synced: survives any crash.
    durable: Vec<u8>,
    /// Written after `durable`, not yet synced: a crash keeps some prefix of it, or none.
    unsynced: Vec<u8>,
}

/// The journal disk of one NameNode.
pub(crate) struct Disk {
    bytes: Mutex<Bytes>,
    health: Mutex<Health>,
    /// Set once a sync failed on this disk (until it is replaced).
    failed: AtomicBool,
}

/// What a restart found on the disk.
pub(crate) struct Recovered {
    pub records: Vec<(u64, Op)>,
    /// Bytes past the last record that verified (a torn write), now cut off.
    pub torn_bytes: usize,
}

impl Default for Disk {
    fn default() -> Self {
        Disk {
            bytes: Mutex::new(Bytes::default()),
            health: Mutex::new(Health::Good),
            failed: AtomicBool::new(false),
        }
    }
}

impl Disk {
    pub(crate) fn set_health(&self, h: Health) {
        *self.health.lock() = h;
    }

    pub(crate) fn health(&self) -> Health {
        *self.health.lock()
    }

    /// Whether a sync has failed on this disk.
    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// The disk is swapped for a healthy one holding the same durable bytes (an operator's
    /// repair before the restart).
    pub(crate) fn replace(&self) {
        self.failed.store(false, Ordering::SeqCst);
        self.set_health(Health::Good);
    }

    /// The host died: unsynced bytes are kept only up to a random point, which may cut the
    /// last record in two.
    pub(crate) fn crash(&self, rng: &mut impl Rng) {
        let mut b = self.bytes.lock();
        let keep = rng.random_range(0..=b.unsynced.len());
        let kept: Vec<u8> = b.unsynced.drain(..keep).collect();
        b.unsynced.clear();
        b.durable.extend_from_slice(&kept);
    }

    /// Reads the records back, cutting the disk at the first that does not verify.
    pub(crate) fn recover(&self) -> Recovered {
        let mut b = self.bytes.lock();
        assert!(
            b.unsynced.is_empty(),
            "recover after a crash, not while running"
        );
        let mut records = Vec::new();
        let mut pos = 0;
        while pos < b.durable.len() {
            match codec::decode_record(&b.durable[pos..]) {
                Ok(Next::Record { txid, op, size }) if txid == records.len() as u64 + 1 => {
                    records.push((txid, op));
                    pos += size;
                }
                _ => break,
            }
        }
        let torn_bytes = b.durable.len() - pos;
        b.durable.truncate(pos);
        Recovered {
            records,
            torn_bytes,
        }
    }

    fn write(&self, bytes: &[u8]) {
        self.bytes.lock().unsynced.extend_from_slice(bytes);
    }

    /// Makes everything written so far durable, or fails.
    fn sync(&self) -> Result<(), JournalError> {
        if self.failed() || self.health() == Health::Failing {
            self.failed.store(true, Ordering::SeqCst);
            return Err(JournalError("simulated disk failure: sync failed".into()));
        }
        let mut b = self.bytes.lock();
        let written = std::mem::take(&mut b.unsynced);
        b.durable.extend_from_slice(&written);
        Ok(())
    }

    fn sync_latency(&self, rng: &mut impl Rng) -> Duration {
        match self.health() {
            Health::Slow(d) => d,
            _ => Duration::from_micros(rng.random_range(500..2_500)),
        }
    }
}

struct State {
    last_appended: u64,
    failed: Option<String>,
}

/// The NameNode's journal on a simulated [`Disk`]; its sync task holds it too.
pub(crate) struct SimJournal(Arc<Inner>);

struct Inner {
    disk: Arc<Disk>,
    state: Mutex<State>,
    synced: AtomicU64,
    /// Wakes whoever waits for a txid, each time the synced txid moves (or the disk
    /// fails). One `Notify`, not a `watch`: a watch spreads its waiters over shards at
    /// random, so the order they wake in (and the replies go out in) would differ
    /// between runs of one seed.
    moved: Notify,
    /// Wakes the sync task when records wait.
    wanted: Notify,
    metrics: JournalMetrics,
    restore: AtomicBool,
}

impl SimJournal {
    /// A journal continuing after `last_txid`, with its sync task spawned on the running
    /// (simulated host's) runtime; `seed` draws its sync latencies.
    pub(crate) fn start(disk: Arc<Disk>, last_txid: u64, seed: u64) -> SimJournal {
        let j = Arc::new(Inner {
            disk,
            state: Mutex::new(State {
                last_appended: last_txid,
                failed: None,
            }),
            synced: AtomicU64::new(last_txid),
            moved: Notify::new(),
            wanted: Notify::new(),
            metrics: JournalMetrics::default(),
            restore: AtomicBool::new(false),
        });
        tokio::spawn(sync_loop(j.clone(), seed));
        SimJournal(j)
    }
}

impl Inner {
    fn synced_upto(&self) -> u64 {
        self.synced.load(Ordering::SeqCst)
    }

    fn failure(&self) -> Option<String> {
        self.state.lock().failed.clone()
    }
}

/// Group commit: one sync covers everything appended before it began.
async fn sync_loop(j: Arc<Inner>, seed: u64) {
    use rand::SeedableRng;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    loop {
        let target = j.state.lock().last_appended;
        if target <= j.synced_upto() {
            j.wanted.notified().await;
            continue;
        }
        tokio::time::sleep(j.disk.sync_latency(&mut rng)).await;
        // Whatever was appended while the sync ran was written before it finished.
        let target = j.state.lock().last_appended;
        match j.disk.sync() {
            Ok(()) => {
                j.metrics.syncs.fetch_add(1, Ordering::Relaxed);
                j.synced.store(target, Ordering::SeqCst);
                j.moved.notify_waiters();
            }
            Err(e) => {
                j.state.lock().failed = Some(e.0);
                // Wake every waiter: none of them will see its txid durable.
                j.moved.notify_waiters();
                return;
            }
        }
    }
}

impl EditLog for SimJournal {
    fn append_all(&self, ops: &[Op]) -> u64 {
        let mut s = self.0.state.lock();
        if s.failed.is_some() || ops.is_empty() {
            return s.last_appended;
        }
        let mut buf = Vec::new();
        for op in ops {
            s.last_appended += 1;
            codec::encode_record(s.last_appended, op, &mut buf);
        }
        self.0.disk.write(&buf);
        self.0.wanted.notify_one();
        s.last_appended
    }

    fn last_appended(&self) -> u64 {
        self.0.state.lock().last_appended
    }

    fn last_synced(&self) -> Result<u64, JournalError> {
        match self.0.failure() {
            Some(e) => Err(JournalError(e)),
            None => Ok(self.0.synced_upto()),
        }
    }

    fn wait_synced(&self, txid: u64) -> BoxFuture<'_, Result<(), JournalError>> {
        Box::pin(async move {
            loop {
                let moved = self.0.moved.notified();
                if self.0.synced_upto() >= txid {
                    return Ok(());
                }
                if let Some(e) = self.0.failure() {
                    return Err(JournalError(e));
                }
                moved.await;
            }
        })
    }

    fn roll(&self) -> BoxFuture<'_, Result<u64, JournalError>> {
        let next = self.last_appended() + 1;
        Box::pin(async move { Ok(next) })
    }

    fn read_from(&self, _from: u64, _max_bytes: usize, _wait: Duration) -> Option<Vec<Batch>> {
        // Followers read segments; the simulated disk keeps none.
        None
    }

    fn close(&self) {}

    fn metrics(&self) -> &JournalMetrics {
        &self.0.metrics
    }

    fn restore_failed(&self) -> bool {
        self.0.restore.load(Ordering::SeqCst)
    }

    fn set_restore_failed(&self, on: bool) {
        self.0.restore.store(on, Ordering::SeqCst);
    }
}

impl Durability for SimJournal {
    fn issued(&self) -> u64 {
        self.last_appended()
    }

    fn durable(&self) -> (u64, Option<String>) {
        (self.0.synced_upto(), self.0.failure())
    }

    fn wait(
        &self,
        ticket: u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        ferrite_namenode::journal::edit_log::wait_durable(self, ticket)
    }
}
