//! Active or standby: a lone NameNode is always active; in an HA group the Raft leader is,
//! and the others follow its log. A standby refuses clients as HDFS's does — with
//! `StandbyException`, which Hadoop's failover proxy takes as "try the next NameNode" —
//! and still serves the DataNodes (they report to every NameNode, so a new active's block
//! map is warm) and the HA protocol itself.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use ferrite_raft::Raft;
use openraft::ServerState;
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use super::admission::Operation;
use super::retried::RetriedCalls;
use super::{NameNodeService, Storage};
use crate::clock::now_ms;
use crate::config::Config;
use crate::error::FsError;
use crate::groups::GroupMapping;
use crate::identity::Identity;
use crate::journal::replicated::{HaJournal, Namespaced, Progress, ReplicatedJournal};
use crate::namespace::{Namespace, Op};
use crate::service::StartupReport;
use crate::startup_progress::StartupProgress;

/// HDFS's `HAServiceState`, as far as a NameNode can be in one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HaState {
    Active,
    Standby,
}

impl HaState {
    /// The word HDFS's messages and `hdfs haadmin` use.
    pub fn word(self) -> &'static str {
        match self {
            HaState::Active => "active",
            HaState::Standby => "standby",
        }
    }
}

/// The state, switchable while the NameNode serves. A leader handing its leadership
/// over is standby to everyone (it takes no change) but must not be made active again
/// by its still leading, hence the third value.
#[derive(Debug, Default)]
pub(crate) struct HaCell(AtomicU8);

const ACTIVE: u8 = 0;
const STANDBY: u8 = 1;
const HANDING_OVER: u8 = 2;

impl HaCell {
    fn get(&self) -> HaState {
        match self.0.load(Ordering::SeqCst) {
            ACTIVE => HaState::Active,
            _ => HaState::Standby,
        }
    }

    fn set(&self, s: HaState) {
        let v = match s {
            HaState::Active => ACTIVE,
            HaState::Standby => STANDBY,
        };
        self.0.store(v, Ordering::SeqCst);
    }

    fn handing_over(&self) -> bool {
        self.0.load(Ordering::SeqCst) == HANDING_OVER
    }
}

impl Operation {
    /// Whether a standby serves it: the DataNodes' calls, the HA state, Ferrite's own
    /// statistics. Every client operation waits for the active, as on HDFS.
    pub fn served_by_standby(self) -> bool {
        matches!(
            self,
            Operation::VersionRequest
                | Operation::GetBlockKeys
                | Operation::GetTransactionId
                | Operation::GetMostRecentCheckpointTxId
                | Operation::IsUpgradeFinalized
                | Operation::IsRollingUpgrade
                | Operation::RegisterDatanode
                | Operation::SendHeartbeat
                | Operation::BlockReport
                | Operation::BlockReceivedAndDeleted
                | Operation::ErrorReport
                | Operation::GetHAServiceState
                | Operation::GetNameNodeStats
                | Operation::MonitorHealth
                | Operation::GetServiceStatus
                | Operation::TransitionToActive
                | Operation::TransitionToStandby
                | Operation::TransitionToObserver
                | Operation::GetRaftStatus
        )
    }
}

impl NameNodeService {
    /// Whether this NameNode is active or standby now.
    pub fn ha_state(&self) -> HaState {
        self.ha.get()
    }

    /// Becomes active or standby (the HA group's leadership decides).
    pub fn set_ha_state(&self, s: HaState) {
        self.ha.set(s);
    }

    /// Stops taking changes so that leadership can be handed to another NameNode: from
    /// now on clients are refused as by a standby, and once this returns no change is
    /// between its standby check and its journal append (that check is made under the
    /// writers' turn, taken here once).
    pub async fn begin_handover(&self) {
        self.ha.0.store(HANDING_OVER, Ordering::SeqCst);
        drop(self.writers.lock().await);
    }

    /// The hand-over is over: if this node still leads, [`drive`] makes it active again.
    pub fn end_handover(&self) {
        let _ =
            self.ha
                .0
                .compare_exchange(HANDING_OVER, STANDBY, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Joins this NameNode to its HA group's control (once, at start).
    pub fn set_ha_control(&self, c: Arc<crate::ha_control::HaControl>) {
        let _ = self.ha_control.set(c);
    }

    /// Sets what runs as this NameNode turns active (once, at start).
    pub fn set_activation_hook(&self, hook: super::ActivationHook) {
        let _ = self.activation_hook.set(hook);
    }

    /// A wait before a standby admits (that is, refuses) a client's `op`: the call is held
    /// until a live leader is heard from after it arrived (at most a heartbeat while the
    /// group is well; then it is refused and the client's failover moves on) or, while
    /// the group elects a new active, until this node is that active (and serves it).
    /// Refused at once instead, Hadoop's client would meet `StandbyException` at every
    /// NameNode while the election runs, and its failover pause doubles with each (500 ms
    /// at first by default): seconds lost after the election is over.
    ///
    /// An active whose lease has run out (no majority has acknowledged it lately) holds
    /// clients the same way, and refuses them as a standby would if it does not win its
    /// majority back.
    pub fn standby_hold(
        &self,
        op: Operation,
    ) -> Option<Pin<Box<dyn Future<Output = ()> + Send + '_>>> {
        if op.served_by_standby() {
            return None;
        }
        let control = self.ha_control()?;
        if self.ha_state() == HaState::Active && control.lease_valid() {
            return None;
        }
        Some(Box::pin(control.await_active(self)))
    }

    /// Whether clients are refused as by a standby: this NameNode is one, or it is the
    /// active of an HA group whose majority has not acknowledged it within its lease.
    pub fn refuses_clients(&self) -> bool {
        match self.ha_state() {
            HaState::Standby => true,
            HaState::Active => self.ha_control().is_some_and(|c| !c.lease_valid()),
        }
    }

    /// The HA group's control; `None` for a lone NameNode.
    pub fn ha_control(&self) -> Option<&Arc<crate::ha_control::HaControl>> {
        self.ha_control.get()
    }

    /// Whether leadership is being handed over from this NameNode.
    pub fn handing_over(&self) -> bool {
        self.ha.handing_over()
    }
}

/// The HA group's side of a NameNode: committed records reach the namespace through it,
/// and Raft's snapshots are the namespace's images.
pub struct Replicated(pub Arc<NameNodeService>);

impl Namespaced for Replicated {
    fn apply(&mut self, txid: u64, op: &Op) -> io::Result<()> {
        self.0
            .apply_committed(op)
            .map_err(|e| io::Error::other(format!("committed record {txid} does not apply: {e}")))
    }

    fn image(&mut self, txid: u64, holds: &dyn Fn() -> u64) -> io::Result<Option<Vec<u8>>> {
        // Changes are applied and appended under the write lock: under the read lock the
        // namespace holds exactly `holds()`.
        let ns = self.0.ns.read();
        Ok((holds() == txid).then(|| ns.encode_image(txid)))
    }

    fn load(&mut self, image: &[u8]) -> io::Result<u64> {
        let (ns, txid) = Namespace::decode_image(image).map_err(io::Error::other)?;
        self.0.replace_namespace(ns);
        Ok(txid)
    }
}

impl NameNodeService {
    /// A NameNode of an HA group, standby until its Raft node leads: its journal is
    /// `journal` (switched by [`drive`]), its namespace filled by the group's log.
    pub fn for_ha(cfg: Config, superuser: &str, identity: Identity, journal: HaJournal) -> Self {
        let now = now_ms();
        let retried = RetriedCalls::with_capacity(cfg.retry_cache_entries());
        let progress = Arc::new(StartupProgress::new(std::time::Instant::now()));
        progress.skip_loading(std::time::Instant::now());
        let storage = Storage {
            ns: Namespace::new(superuser, &cfg.superuser_group, now),
            journal: Some(Box::new(journal)),
            images: None,
            name_dirs: Vec::new(),
            journal_dirs: Vec::new(),
            startup: StartupReport::default(),
            summary: None,
            progress,
            retried,
        };
        let groups = GroupMapping::from_host(&cfg.static_groups);
        let nn = Self::new(cfg, superuser.to_string(), groups, identity, storage);
        nn.set_ha_state(HaState::Standby);
        nn
    }

    /// Applies a record the group committed and this node did not plan, with the effects
    /// a planned one has on leases and the block map.
    fn apply_committed(&self, op: &Op) -> Result<(), FsError> {
        let now = now_ms();
        let mut ns = self.ns.write();
        let restamped = restamped_block(&ns, op);
        let fx = ns.apply(op)?;
        // An at-most-once call the active answered: its retry, sent here after a failover,
        // must get that answer again (primed into the retry cache on turning active).
        self.retried.lock().see(op);
        let closed = fx.closed_files.iter().map(|(_, holder)| holder.as_str());
        self.leases.lock().on_op(op, closed, now);
        let mut blocks = self.blocks.lock();
        if !fx.removed_blocks.is_empty() {
            blocks.blocks_removed(&fx.removed_blocks);
        }
        if let Some(id) = restamped {
            blocks.forget_replicas(id);
        }
        // Replicas reported before this record reached the namespace find their block.
        blocks.retry_postponed(&|id| super::datanodes::expected(&ns, id));
        Ok(())
    }

    /// Replaces the namespace with a snapshot's (a node too far behind for the log).
    fn replace_namespace(&self, mut ns: Namespace) {
        ns.set_limits(crate::namespace::Limits {
            dir_items: self.cfg.max_dir_items,
            blocks_per_file: self.cfg.max_blocks_per_file,
            component_len: self.cfg.max_component_len,
        });
        *self.ns.write() = ns;
    }

    /// Takes over as the active: every open file's writer gets a fresh lease (as after a
    /// restart: their renewals went to the old active), and start-up safe mode ends at
    /// once if the DataNodes have been reporting to this node all along. A NameNode
    /// restarted moments ago has not heard from them yet: it stays in safe mode, its
    /// clients told to retry, until their reports are in.
    fn become_active(&self) {
        let now = now_ms();
        {
            let ns = self.ns.read();
            let mut leases = self.leases.lock();
            for (_, holder) in ns.open_files() {
                leases.add(holder, now);
            }
        }
        {
            // Whatever the log never placed is deleted now, by the usual rules; and the
            // replication work a standby leaves undone starts at once.
            let ns = self.ns.read();
            let mut blocks = self.blocks.lock();
            let out = blocks.release_postponed(&|id| super::datanodes::expected(&ns, id));
            if out.accepted + out.invalidated > 0 {
                info!(
                    accepted = out.accepted,
                    invalidated = out.invalidated,
                    "replica reports kept while standby"
                );
            }
            blocks.needs_scan = true;
        }
        self.startup_safe_mode_on_activation(now);
        if let Some(hook) = self.activation_hook.get() {
            hook(self);
        }
        self.set_ha_state(HaState::Active);
    }
}

/// Follows the Raft node's leadership for NameNode `nn` until `stop`: on becoming leader,
/// once everything committed before is applied, the node turns active with a
/// [`ReplicatedJournal`]; on losing it, standby again — or, with changes of its own still
/// in flight (its namespace may hold what the group never commits), the NameNode stops
/// through `fatal`, to come back from the group's log.
pub async fn drive(
    nn: Arc<NameNodeService>,
    raft: Raft,
    journal: HaJournal,
    progress: Arc<Progress>,
    fatal: CancellationToken,
    stop: CancellationToken,
) {
    let mut rx = raft.metrics();
    loop {
        let (leads, stopped) = {
            let m = rx.borrow_and_update();
            (
                m.state == ServerState::Leader,
                m.running_state.clone().err(),
            )
        };
        if stop.is_cancelled() {
            return;
        }
        if let Some(why) = stopped {
            // The Raft node gave up (its log or the namespace applying it failed, as
            // when this node's namespace left the group's): without it this NameNode
            // can neither lead nor follow, so it stops, to come back from the log.
            error!(%why, "stopping the NameNode: its Raft node stopped");
            fatal.cancel();
            return;
        }
        if leads && nn.ha_state() == HaState::Standby && !nn.handing_over() {
            // Whatever the group committed before this term is applied first, and so is
            // every entry already in this node's log: a leader restarted within its term
            // (openraft resumes a committed vote of its own) holds the batches it
            // proposed before the crash, and their txids must not be planned again.
            if raft.ensure_linearizable().await.is_ok() && log_applied_to_its_end(&raft) {
                let fatal = fatal.clone();
                let j = ReplicatedJournal::start(raft.clone(), progress.clone(), move |why| {
                    error!("stopping the NameNode: {why}");
                    fatal.cancel();
                });
                journal.lead(j);
                nn.become_active();
                info!(txid = progress.applied(), "this NameNode is active");
            } else {
                // No majority confirmed it yet. Each attempt dials every follower anew
                // (openraft's leadership check makes fresh clients), so wait a heartbeat
                // rather than retry on each change of the metrics.
                let pause = std::time::Duration::from_millis(raft.config().heartbeat_interval);
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(pause) => {}
                }
                continue;
            }
        } else if !leads && journal.is_leading() {
            nn.set_ha_state(HaState::Standby);
            if journal.in_flight() {
                error!("stopping the NameNode: it lost leadership with changes in flight");
                fatal.cancel();
                return;
            }
            journal.follow();
            info!("this NameNode is standby");
        }
        tokio::select! {
            () = stop.cancelled() => return,
            changed = rx.changed() => if changed.is_err() {
                if !stop.is_cancelled() {
                    error!("stopping the NameNode: its Raft node is gone");
                    fatal.cancel();
                }
                return;
            },
        }
    }
}

/// Whether this node has applied every entry of its log (committed by now, once it leads
/// and a majority confirmed it).
fn log_applied_to_its_end(raft: &Raft) -> bool {
    let m = raft.metrics().borrow().clone();
    m.last_applied.map(|l| l.index) >= m.last_log_index
}

/// The block whose generation stamp `op` changes (a pipeline or block recovery), if the
/// namespace knows it: the replicas a standby placed of it carry the stamp it replaces.
fn restamped_block(ns: &Namespace, op: &Op) -> Option<u64> {
    let (Op::BumpGenerationStamp { id, gs, .. } | Op::UpdateLastBlock { id, gs, .. }) = op else {
        return None;
    };
    let before = super::datanodes::expected(ns, *id)?;
    (before.gs != *gs).then_some(*id)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use ferrite_raft::{MemoryDisk, NodeId, Timing};
    use openraft::BasicNode;
    use tokio::net::TcpListener;

    use super::*;
    use crate::ha_control::{HaControl, HandOverRequests};
    use crate::journal::replicated::RecordApplier;

    struct Member {
        nn: Arc<NameNodeService>,
        raft: Raft,
        control: Arc<HaControl>,
        fatal: CancellationToken,
        stop: CancellationToken,
    }

    async fn group() -> BTreeMap<NodeId, Member> {
        let identity = Identity::generate(7, 7);
        let mut listeners = BTreeMap::new();
        let mut members = BTreeMap::new();
        for id in 1..=3u64 {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            members.insert(id, BasicNode::new(l.local_addr().unwrap()));
            listeners.insert(id, l);
        }
        let mut group = BTreeMap::new();
        for (id, l) in listeners {
            let progress = Progress::at(0);
            let journal = HaJournal::new(progress.clone());
            let nn = Arc::new(NameNodeService::for_ha(
                Config::default(),
                "hdfs",
                identity.clone(),
                journal.clone(),
            ));
            let applier = RecordApplier::new(progress.clone(), Replicated(nn.clone()));
            let m = ferrite_raft::start(
                id,
                &Timing::default(),
                Box::new(MemoryDisk::default()),
                Box::new(applier),
                ferrite_ipc::net::tcp(),
            )
            .await
            .unwrap();
            let addrs = members
                .iter()
                .map(|(id, n)| (*id, n.addr.clone()))
                .collect();
            let contact = Arc::new(ferrite_raft::LeaderContact::default());
            let liveness = crate::ha_control::Liveness {
                contact: contact.clone(),
                acks: m.acks.clone(),
            };
            let control = Arc::new(HaControl::new(
                m.raft.clone(),
                id,
                addrs,
                ferrite_ipc::net::tcp(),
                journal.clone(),
                progress.clone(),
                liveness,
            ));
            nn.set_ha_control(control.clone());
            let (fatal, stop) = (CancellationToken::new(), CancellationToken::new());
            let requests = HandOverRequests {
                control: control.clone(),
                nn: nn.clone(),
            };
            let requests: Arc<dyn ferrite_raft::HandOver> = Arc::new(requests);
            tokio::spawn(ferrite_raft::serve_with(
                m.raft.clone(),
                l,
                Some(requests),
                contact,
                stop.clone(),
            ));
            tokio::spawn(drive(
                nn.clone(),
                m.raft.clone(),
                journal,
                progress,
                fatal.clone(),
                stop.clone(),
            ));
            group.insert(
                id,
                Member {
                    nn,
                    raft: m.raft,
                    control,
                    fatal,
                    stop,
                },
            );
        }
        group[&1].raft.initialize(members).await.unwrap();
        group
    }

    async fn active(group: &BTreeMap<NodeId, Member>) -> NodeId {
        for _ in 0..200 {
            let active: Vec<NodeId> = group
                .iter()
                .filter(|(_, m)| m.nn.ha_state() == HaState::Active)
                .map(|(id, _)| *id)
                .collect();
            if let [one] = active[..] {
                return one;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no single active NameNode");
    }

    async fn mkdir(nn: &NameNodeService, path: &str) -> Result<(), FsError> {
        let who = nn.admit("hdfs", "127.0.0.1", Operation::Mkdirs)?;
        nn.mkdirs(&who, path, 0o755, true).await
    }

    fn has(nn: &NameNodeService, path: &str) -> bool {
        let comps = crate::namespace::path::components(path).unwrap();
        nn.ns
            .read()
            .walk(&comps)
            .is_ok_and(|w| w.target().is_some())
    }

    async fn everyone_has(group: &BTreeMap<NodeId, Member>, path: &str) {
        for _ in 0..200 {
            if group.values().all(|m| has(&m.nn, path)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{path} did not reach every NameNode");
    }

    /// Three NameNodes: the leader turns active and the others refuse clients; a change
    /// on the active reaches every namespace; when the active goes, another takes over
    /// with everything committed and goes on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_leader_is_active_and_a_standby_takes_over_with_every_change() {
        let mut group = group().await;
        let first = active(&group).await;
        for (id, m) in &group {
            if *id != first {
                let refused = mkdir(&m.nn, "/no").await.unwrap_err();
                assert!(matches!(refused, FsError::Standby { .. }), "{refused}");
            }
        }
        mkdir(&group[&first].nn, "/a/b").await.unwrap();
        everyone_has(&group, "/a/b").await;

        let old = group.remove(&first).unwrap();
        old.stop.cancel();
        old.raft.shutdown().await.unwrap();
        let second = active(&group).await;
        assert!(has(&group[&second].nn, "/a/b"));
        mkdir(&group[&second].nn, "/c").await.unwrap();
        everyone_has(&group, "/c").await;
        for m in group.values() {
            assert!(!m.fatal.is_cancelled());
        }
    }

    /// `hdfs haadmin -failover`'s two calls: standby on the active hands leadership to a
    /// follower; active on a chosen standby takes it from whoever leads then. Each time
    /// the new active has every change, the old one follows, and nobody stops.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn leadership_is_handed_over_gracefully_on_request() {
        let group = group().await;
        let first = active(&group).await;
        mkdir(&group[&first].nn, "/before").await.unwrap();

        let m = &group[&first];
        m.control.to_standby(&m.nn).await.unwrap();
        let second = active(&group).await;
        assert_ne!(second, first);
        assert!(has(&group[&second].nn, "/before"));

        let third = *group.keys().find(|id| **id != second).unwrap();
        let m = &group[&third];
        m.control.to_active(&m.nn).await.unwrap();
        assert_eq!(active(&group).await, third);
        // Asking the active again changes nothing.
        m.control.to_active(&m.nn).await.unwrap();
        mkdir(&m.nn, "/after").await.unwrap();
        everyone_has(&group, "/after").await;
        for m in group.values() {
            assert!(!m.fatal.is_cancelled());
        }
    }
}
