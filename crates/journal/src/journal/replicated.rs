//! The journal of a NameNode in an HA group: its records are Raft entries. On the leader
//! (the active NameNode) [`ReplicatedJournal`] takes the place of the disk journal: records
//! are encoded exactly as in a segment, gathered while the previous batch is in flight
//! (group commit, as the disk journal's syncer does), and a batch is durable once Raft has
//! committed it — on a majority's disks. On every node, [`RecordApplier`] hands the
//! records of each committed batch to the namespace, skipping those the leader applied
//! itself when it planned them.
//!
//! A leader applies a change to its namespace before Raft commits it, as a lone NameNode
//! applies it before the sync. If it loses leadership with records in flight, its
//! namespace holds changes the group may never commit: the journal fails (the NameNode
//! stops, as HDFS's does when its quorum journal fails) and a restart rebuilds the
//! namespace from the snapshot and the committed log. The applier also refuses to skip a
//! committed record this node did not propose byte for byte, so a namespace that went its
//! own way is caught, never silently kept.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ferrite_ipc::durable::Durability;
use ferrite_namespace::Op;
use ferrite_raft::{Applier, Raft};
use parking_lot::Mutex;
use tokio::sync::{watch, Notify};

use super::codec::{self, Next};
use super::edit_log::{BoxFuture, EditLog};
use super::tail::{Batch, Tail};
use super::{JournalError, JournalMetrics};

/// Committed batches kept for followers of the journal (the summary).
const KEEP_BYTES: usize = 64 << 20;

/// What the journal and the applier of one node share.
#[derive(Default)]
pub struct Progress {
    /// The highest txid the namespace holds (applied by the leader as it planned, or by
    /// the applier as it committed).
    applied: AtomicU64,
    /// The highest txid of the batches the log has applied (committed). Below `applied`
    /// on a leader with changes in flight; a snapshot is only taken when the two meet.
    through_log: AtomicU64,
    /// Batches this node proposed and has not yet seen committed, by first txid: their
    /// last txid and bytes.
    proposed: Mutex<BTreeMap<u64, (u64, Bytes)>>,
}

impl Progress {
    /// Progress of a namespace that holds everything up to `txid`.
    pub fn at(txid: u64) -> Arc<Progress> {
        let p = Progress::default();
        p.applied.store(txid, Ordering::SeqCst);
        p.through_log.store(txid, Ordering::SeqCst);
        Arc::new(p)
    }

    pub fn applied(&self) -> u64 {
        self.applied.load(Ordering::SeqCst)
    }
}

#[derive(Default)]
struct State {
    last_appended: u64,
    /// Appended, not yet proposed: (first txid, encoded records).
    pending: Option<(u64, Vec<u8>)>,
    closed: bool,
}

/// How far the group has committed, or why nothing more ever will be.
#[derive(Clone, Debug, Default)]
struct Committed {
    upto: u64,
    failed: Option<String>,
}

/// The active NameNode's journal: records become Raft entries.
pub struct ReplicatedJournal {
    raft: Raft,
    progress: Arc<Progress>,
    state: Mutex<State>,
    wake: Notify,
    committed: watch::Sender<Committed>,
    tail: Tail,
    metrics: JournalMetrics,
    restore: AtomicBool,
}

impl ReplicatedJournal {
    /// The journal of a node that leads from `progress.applied()` on. `on_fail` hears why
    /// the journal stopped (lost leadership, a Raft fault): the NameNode must stop then.
    pub fn start(
        raft: Raft,
        progress: Arc<Progress>,
        on_fail: impl FnOnce(String) + Send + 'static,
    ) -> Arc<ReplicatedJournal> {
        let last = progress.applied();
        let j = Arc::new(ReplicatedJournal {
            raft,
            progress,
            state: Mutex::new(State {
                last_appended: last,
                ..State::default()
            }),
            wake: Notify::new(),
            committed: watch::channel(Committed {
                upto: last,
                failed: None,
            })
            .0,
            tail: Tail::new(KEEP_BYTES, last),
            metrics: JournalMetrics::default(),
            restore: AtomicBool::new(false),
        });
        tokio::spawn(propose(j.clone(), on_fail));
        j
    }

    fn committed(&self) -> Committed {
        self.committed.borrow().clone()
    }
}

/// Proposes pending records as one batch at a time until the journal closes or fails.
async fn propose(j: Arc<ReplicatedJournal>, on_fail: impl FnOnce(String)) {
    loop {
        let taken = {
            let mut s = j.state.lock();
            match s.pending.take() {
                Some((first, bytes)) => Some((first, s.last_appended, Bytes::from(bytes))),
                None if s.closed => return,
                None => None,
            }
        };
        let Some((first, last, bytes)) = taken else {
            j.wake.notified().await;
            continue;
        };
        j.progress
            .proposed
            .lock()
            .insert(first, (last, bytes.clone()));
        match j
            .raft
            .client_write(ferrite_raft::Batch(bytes.clone()))
            .await
        {
            Ok(_) => {
                let m = &j.metrics;
                m.syncs.fetch_add(1, Ordering::Relaxed);
                m.txns_synced.fetch_add(last - first + 1, Ordering::Relaxed);
                m.bytes_synced
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                j.tail.publish(first, last, bytes);
                j.committed.send_modify(|c| c.upto = last);
            }
            Err(e) => {
                let why = format!("the replicated journal lost txids {first}..={last}: {e}");
                // The NameNode is told first: whoever sees the failure sees a NameNode
                // already stopping.
                on_fail(why.clone());
                j.committed.send_modify(|c| c.failed = Some(why));
                j.tail.close();
                return;
            }
        }
    }
}

impl EditLog for ReplicatedJournal {
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
        // The caller applied these to its namespace already (under the same lock).
        self.progress
            .applied
            .store(s.last_appended, Ordering::SeqCst);
        drop(s);
        self.wake.notify_one();
        txid - 1
    }

    fn last_appended(&self) -> u64 {
        self.state.lock().last_appended
    }

    fn last_synced(&self) -> Result<u64, JournalError> {
        let c = self.committed();
        match c.failed {
            Some(why) => Err(JournalError(why)),
            None => Ok(c.upto),
        }
    }

    fn wait_synced(&self, txid: u64) -> BoxFuture<'_, Result<(), JournalError>> {
        let mut rx = self.committed.subscribe();
        Box::pin(async move {
            let c = rx
                .wait_for(|c| c.upto >= txid || c.failed.is_some())
                .await
                .map_err(|_| JournalError("the journal is gone".into()))?;
            match &c.failed {
                Some(why) if c.upto < txid => Err(JournalError(why.clone())),
                _ => Ok(()),
            }
        })
    }

    /// A replicated journal has no segments: a roll only names the next txid.
    fn roll(&self) -> BoxFuture<'_, Result<u64, JournalError>> {
        let next = self.last_appended() + 1;
        Box::pin(async move { Ok(next) })
    }

    fn read_from(&self, from: u64, max_bytes: usize, wait: Duration) -> Option<Vec<Batch>> {
        self.tail.read_from(from, max_bytes, wait)
    }

    fn close(&self) {
        self.state.lock().closed = true;
        self.wake.notify_one();
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
}

impl Durability for ReplicatedJournal {
    fn issued(&self) -> u64 {
        self.last_appended()
    }

    fn durable(&self) -> (u64, Option<String>) {
        let c = self.committed();
        (c.upto, c.failed)
    }

    fn wait(
        &self,
        ticket: u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        super::edit_log::wait_durable(self, ticket)
    }

    fn abandons_on_failure(&self) -> bool {
        true
    }
}

/// The journal an HA NameNode is built with: the [`ReplicatedJournal`] while it leads,
/// nothing while it follows (a standby admits no change, so nothing is appended then).
/// Clones share it; the HA driver switches it as leadership comes and goes.
#[derive(Clone)]
pub struct HaJournal {
    progress: Arc<Progress>,
    leading: Arc<Mutex<Option<Arc<ReplicatedJournal>>>>,
    metrics: Arc<JournalMetrics>,
}

impl HaJournal {
    pub fn new(progress: Arc<Progress>) -> HaJournal {
        HaJournal {
            progress,
            leading: Arc::default(),
            metrics: Arc::default(),
        }
    }

    /// This node leads: its changes go through `j`.
    pub fn lead(&self, j: Arc<ReplicatedJournal>) {
        *self.leading.lock() = Some(j);
    }

    /// This node follows again.
    pub fn follow(&self) {
        if let Some(j) = self.leading.lock().take() {
            j.close();
        }
    }

    /// Whether this node leads (its changes go through a [`ReplicatedJournal`]).
    pub fn is_leading(&self) -> bool {
        self.leading.lock().is_some()
    }

    /// Whether this node's own changes are still on their way to a commit.
    pub fn in_flight(&self) -> bool {
        !self.progress.proposed.lock().is_empty()
            || self
                .leading
                .lock()
                .as_ref()
                .is_some_and(|j| j.state.lock().pending.is_some())
    }

    fn current(&self) -> Option<Arc<ReplicatedJournal>> {
        self.leading.lock().clone()
    }
}

impl EditLog for HaJournal {
    fn append_all(&self, ops: &[Op]) -> u64 {
        match self.current() {
            Some(j) => j.append_all(ops),
            // Admission keeps changes off a standby; were one to slip through, it is
            // not journaled and its caller waits for nothing that will come.
            None => self.progress.applied(),
        }
    }

    fn last_appended(&self) -> u64 {
        self.current()
            .map_or_else(|| self.progress.applied(), |j| j.last_appended())
    }

    fn last_synced(&self) -> Result<u64, JournalError> {
        match self.current() {
            Some(j) => j.last_synced(),
            None => Ok(self.progress.applied()),
        }
    }

    fn wait_synced(&self, txid: u64) -> BoxFuture<'_, Result<(), JournalError>> {
        match self.current() {
            Some(j) => Box::pin(async move { j.wait_synced(txid).await }),
            None => Box::pin(async { Ok(()) }),
        }
    }

    fn roll(&self) -> BoxFuture<'_, Result<u64, JournalError>> {
        let next = self.last_appended() + 1;
        Box::pin(async move { Ok(next) })
    }

    fn read_from(&self, from: u64, max_bytes: usize, wait: Duration) -> Option<Vec<Batch>> {
        self.current()?.read_from(from, max_bytes, wait)
    }

    fn close(&self) {
        self.follow();
    }

    fn metrics(&self) -> &JournalMetrics {
        &self.metrics
    }

    fn restore_failed(&self) -> bool {
        false
    }

    fn set_restore_failed(&self, _: bool) {}
}

impl Durability for HaJournal {
    fn issued(&self) -> u64 {
        self.last_appended()
    }

    fn durable(&self) -> (u64, Option<String>) {
        match self.current() {
            Some(j) => j.durable(),
            None => (self.progress.applied(), None),
        }
    }

    fn wait(
        &self,
        ticket: u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        super::edit_log::wait_durable(self, ticket)
    }

    fn abandons_on_failure(&self) -> bool {
        true
    }
}

/// What the applier does with records, and how the namespace becomes a snapshot and back:
/// the NameNode's side of [`RecordApplier`].
pub trait Namespaced: Send + 'static {
    /// Applies committed record `txid`.
    fn apply(&mut self, txid: u64, op: &Op) -> io::Result<()>;
    /// The namespace as an image at `txid` (the snapshot Raft keeps and sends), or None
    /// if, under the namespace's lock, `holds()` says it holds more than that.
    fn image(&mut self, txid: u64, holds: &dyn Fn() -> u64) -> io::Result<Option<Vec<u8>>>;
    /// Replaces the namespace with an image's; returns the image's txid.
    fn load(&mut self, image: &[u8]) -> io::Result<u64>;
}

/// Hands committed batches to the namespace in txid order (see the module's notes).
pub struct RecordApplier<N> {
    progress: Arc<Progress>,
    ns: N,
}

impl<N: Namespaced> RecordApplier<N> {
    pub fn new(progress: Arc<Progress>, ns: N) -> Self {
        RecordApplier { progress, ns }
    }
}

fn diverged(why: String) -> io::Error {
    io::Error::other(format!(
        "this NameNode's namespace left the group's log: {why}"
    ))
}

impl<N: Namespaced> Applier for RecordApplier<N> {
    fn apply(&mut self, _index: u64, batch: &ferrite_raft::Batch) -> io::Result<()> {
        let bytes = &batch.0;
        let applied = self.progress.applied();
        let first = match codec::decode_record(bytes).map_err(io::Error::other)? {
            Next::Record { txid, .. } => txid,
            _ => return Ok(()),
        };
        if first <= applied {
            // Planned and applied here: it must be the batch this node proposed.
            let mine = self.progress.proposed.lock().remove(&first);
            return match mine {
                Some((last, b)) if b == *bytes => {
                    self.progress.through_log.store(last, Ordering::SeqCst);
                    Ok(())
                }
                _ => Err(diverged(format!(
                    "committed txid {first} is not what it applied (it holds up to {applied})"
                ))),
            };
        }
        let mut rest = &bytes[..];
        let mut expect = applied + 1;
        while let Next::Record { txid, op, size } =
            codec::decode_record(rest).map_err(io::Error::other)?
        {
            if txid != expect {
                return Err(diverged(format!("txid {txid} where {expect} was due")));
            }
            self.ns.apply(txid, &op)?;
            self.progress.applied.store(txid, Ordering::SeqCst);
            self.progress.through_log.store(txid, Ordering::SeqCst);
            expect += 1;
            rest = &rest[size..];
        }
        Ok(())
    }

    fn snapshot(&mut self) -> io::Result<Option<Vec<u8>>> {
        let through = self.progress.through_log.load(Ordering::SeqCst);
        let progress = self.progress.clone();
        self.ns.image(through, &move || progress.applied())
    }

    fn restore(&mut self, state: &[u8]) -> io::Result<()> {
        let txid = self.ns.load(state)?;
        self.progress.applied.store(txid, Ordering::SeqCst);
        self.progress.through_log.store(txid, Ordering::SeqCst);
        self.progress.proposed.lock().clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_namespace::Namespace;
    use ferrite_raft::{MemoryDisk, NodeId, Timing};
    use openraft::BasicNode;
    use tokio::net::TcpListener;

    fn mkdir(n: u64) -> Op {
        Op::Mkdir {
            path: format!("/d{n}"),
            id: 16_386 + n,
            perm: 0o755,
            owner: "u".into(),
            group: "g".into(),
            mtime: 1,
        }
    }

    /// A namespace the applier and the test share.
    #[derive(Clone)]
    struct Shared(Arc<Mutex<Namespace>>);

    impl Namespaced for Shared {
        fn apply(&mut self, _: u64, op: &Op) -> io::Result<()> {
            self.0.lock().apply(op).map(drop).map_err(io::Error::other)
        }
        fn image(&mut self, txid: u64, holds: &dyn Fn() -> u64) -> io::Result<Option<Vec<u8>>> {
            let ns = self.0.lock();
            Ok((holds() == txid).then(|| ns.encode_image(txid)))
        }
        fn load(&mut self, image: &[u8]) -> io::Result<u64> {
            let (ns, txid) = Namespace::decode_image(image).map_err(io::Error::other)?;
            *self.0.lock() = ns;
            Ok(txid)
        }
    }

    struct Node {
        raft: Raft,
        ns: Shared,
        progress: Arc<Progress>,
    }

    fn has(ns: &Shared, n: u64) -> bool {
        let name = format!("d{n}");
        let ns = ns.0.lock();
        ns.walk(&[name.as_str()])
            .is_ok_and(|w| w.target().is_some())
    }

    async fn leader(nodes: &BTreeMap<NodeId, Node>) -> NodeId {
        for _ in 0..200 {
            for (id, n) in nodes {
                let m = n.raft.metrics().borrow().clone();
                if m.current_leader == Some(*id) && m.state == openraft::ServerState::Leader {
                    return *id;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no leader");
    }

    async fn everyone_has(nodes: &BTreeMap<NodeId, Node>, upto: u64) {
        for _ in 0..200 {
            if nodes.values().all(|n| (0..upto).all(|i| has(&n.ns, i))) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the followers never applied /d0../d{}", upto - 1);
    }

    async fn write(j: &ReplicatedJournal, node: &Node, n: u64) -> Result<(), JournalError> {
        let op = mkdir(n);
        node.ns.0.lock().apply(&op).unwrap();
        let txid = j.append_all(&[op]);
        j.wait_synced(txid).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_leaders_records_reach_every_namespace_and_a_new_leader_goes_on() {
        let mut listeners = BTreeMap::new();
        let mut members = BTreeMap::new();
        for id in 1..=3u64 {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            members.insert(id, BasicNode::new(l.local_addr().unwrap()));
            listeners.insert(id, l);
        }
        let mut nodes = BTreeMap::new();
        for (id, l) in listeners {
            let ns = Shared(Arc::new(Mutex::new(Namespace::new("u", "g", 1))));
            let progress = Progress::at(0);
            let applier = RecordApplier::new(progress.clone(), ns.clone());
            let m = ferrite_raft::start(
                id,
                &Timing::default(),
                Box::new(MemoryDisk::default()),
                Box::new(applier),
                ferrite_ipc::net::tcp(),
            )
            .await
            .unwrap();
            let stop = tokio_util::sync::CancellationToken::new();
            tokio::spawn(ferrite_raft::serve(m.raft.clone(), l, stop));
            nodes.insert(
                id,
                Node {
                    raft: m.raft,
                    ns,
                    progress,
                },
            );
        }
        nodes[&1].raft.initialize(members).await.unwrap();
        let first = leader(&nodes).await;
        let failed = Arc::new(Mutex::new(None));
        let f = failed.clone();
        let j1 = ReplicatedJournal::start(
            nodes[&first].raft.clone(),
            nodes[&first].progress.clone(),
            move |why| *f.lock() = Some(why),
        );
        for n in 0..5 {
            write(&j1, &nodes[&first], n).await.unwrap();
        }
        everyone_has(&nodes, 5).await;

        // The leader goes: its journal acknowledges nothing more.
        let old = nodes.remove(&first).unwrap();
        old.raft.shutdown().await.unwrap();
        assert!(write(&j1, &old, 99).await.is_err());
        assert!(failed.lock().is_some(), "the NameNode is told to stop");

        // A follower takes over from the txid its namespace reached.
        let second = leader(&nodes).await;
        assert_eq!(nodes[&second].progress.applied(), 5);
        let j2 = ReplicatedJournal::start(
            nodes[&second].raft.clone(),
            nodes[&second].progress.clone(),
            |_| {},
        );
        write(&j2, &nodes[&second], 5).await.unwrap();
        assert_eq!(j2.last_synced().unwrap(), 6);
        everyone_has(&nodes, 6).await;
        for n in nodes.values() {
            assert_eq!(n.progress.applied(), 6);
        }
    }

    #[test]
    fn a_committed_record_this_node_did_not_propose_is_divergence() {
        let ns = Shared(Arc::new(Mutex::new(Namespace::new("u", "g", 1))));
        // The namespace went ahead to txid 1 on its own (a leader's change that never
        // committed), and the group committed something else at txid 1.
        let progress = Progress::at(1);
        let mut a = RecordApplier::new(progress, ns);
        let mut other = Vec::new();
        codec::encode_record(1, &mkdir(7), &mut other);
        let err = a.apply(1, &ferrite_raft::Batch(other.into())).unwrap_err();
        assert!(err.to_string().contains("left the group's log"), "{err}");
    }

    /// A leader's namespace holds its own changes before the group commits them: a
    /// snapshot then would carry what the group may never commit, so none is taken
    /// until the log has applied all the namespace holds.
    #[test]
    fn no_snapshot_while_the_namespace_holds_what_is_not_committed() {
        let ns = Shared(Arc::new(Mutex::new(Namespace::new("u", "g", 1))));
        let progress = Progress::at(0);
        let mut a = RecordApplier::new(progress.clone(), ns.clone());
        assert!(a.snapshot().unwrap().is_some());

        // The leader plans txid 1: applied to its namespace and proposed, not committed.
        ns.0.lock().apply(&mkdir(1)).unwrap();
        progress.applied.store(1, Ordering::SeqCst);
        let mut bytes = Vec::new();
        codec::encode_record(1, &mkdir(1), &mut bytes);
        let bytes = Bytes::from(bytes);
        progress.proposed.lock().insert(1, (1, bytes.clone()));
        assert!(a.snapshot().unwrap().is_none());

        a.apply(1, &ferrite_raft::Batch(bytes)).unwrap();
        let image = a.snapshot().unwrap().expect("at rest once committed");
        let (_, txid) = Namespace::decode_image(&image).unwrap();
        assert_eq!(txid, 1);
    }
}
