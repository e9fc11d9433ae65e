//! The DataNodes' side of the NameNode: registration, heartbeats and the commands they
//! carry back, block reports, error and bad-replica reports, the cluster reports clients
//! ask for, and the monitors that declare nodes dead and keep replication up.

use tracing::{debug, info, warn};

use super::ha::HaState;
use super::locations::{DatanodeInfo, LocatedBlock, Location};
use super::{Admitted, NameNodeService, Operation};
use crate::blocks::registry::{AdminState, Liveness, NodeId, NodeIx, StorageState, Transfer};
use crate::blocks::report::{ReplicaState, Reported};
use crate::blocks::{BlockManager, Expected, ReportOutcome};
use crate::clock::now_ms;
use crate::error::FsError;
use crate::namespace::blocks::Placed;
use crate::namespace::inode::Block;
use crate::namespace::Namespace;

/// Blocks to delete per heartbeat, as HDFS's `dfs.block.invalidate.limit` (1000).
const INVALIDATE_PER_HEARTBEAT: usize = 1000;

/// What a DataNode says of itself when it registers.
#[derive(Clone, Debug)]
pub struct NodeRegistration {
    /// Its address fields; `ip` is replaced by the address it connects from.
    pub id: NodeId,
    /// The cluster it was formatted for (empty when new).
    pub cluster_id: String,
    /// Its network location (see [`NameNodeService::rack_of`]).
    pub rack: String,
}

/// A heartbeat's report: load and each storage's space.
#[derive(Clone, Debug, Default)]
pub struct HeartbeatReport {
    pub xceivers: u32,
    pub storages: Vec<StorageState>,
}

/// What the NameNode orders a DataNode to do, in a heartbeat reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DnCommand {
    /// Register again (the NameNode restarted, or declared the node dead).
    Register,
    /// New block keys: send [`NameNodeService::block_keys`].
    KeyUpdate,
    /// Delete these replicas.
    Invalidate(Vec<Block>),
    /// Copy a replica to other nodes.
    Transfer {
        block: Block,
        targets: Vec<Location>,
    },
    /// Recover these blocks as their primary.
    Recover(Vec<RecoveringBlock>),
    /// Move replicas for the Balancer at no more than this many bytes a second.
    BalancerBandwidth(u64),
}

/// One block for a primary to recover: its replicas, the new generation stamp, and a
/// truncate's new length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveringBlock {
    pub block: LocatedBlock,
    pub recovery_id: u64,
    pub new_len: Option<u64>,
    /// Copy-on-truncate: the new block the truncated bytes are copied into.
    pub copy_to: Option<u64>,
}

/// What an incremental block report says of one replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaEvent {
    Received,
    Receiving,
    Deleted,
}

/// Which DataNodes a report lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeFilter {
    All,
    Live,
    Dead,
    /// Live and decommissioning (not yet decommissioned).
    Decommissioning,
    EnteringMaintenance,
    InMaintenance,
}

/// The cluster's space and block health, for getFsStats.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FsStats {
    pub capacity: u64,
    pub used: u64,
    pub remaining: u64,
    pub under_replicated: u64,
    /// Of the under-replicated, those down to one replica.
    pub last_replica: u64,
    pub corrupt_blocks: u64,
    pub missing_blocks: u64,
    pub pending_deletion_blocks: u64,
}

/// What the namespace expects of block `id`, for checking a reported replica.
pub(super) fn expected(ns: &Namespace, id: u64) -> Option<Expected> {
    let Some((slot, i)) = ns.block_position(id) else {
        // A block no live file has any more, kept because a snapshot shows it.
        return ns.snapshot_block(id).map(|b| Expected {
            gs: b.gs,
            len: b.len,
            complete: true,
        });
    };
    let f = ns.inode(slot).file()?;
    let blocks = f.blocks();
    let b = *blocks.get(i).filter(|b| b.id == id)?;
    let being_written = f.uc().is_some() && i + 1 == blocks.len();
    Some(Expected {
        gs: b.gs,
        len: b.len,
        complete: !being_written,
    })
}

fn unregistered(uuid: &str) -> FsError {
    FsError::UnregisteredNode(format!("Unregistered server: DatanodeRegistration({uuid})"))
}

impl NameNodeService {
    /// The block keys as a DataNode receives them (at registration and in key updates).
    pub fn block_keys(&self) -> ferrite_proto::hdfs::ExportedBlockKeysProto {
        self.tokens.export()
    }

    fn node_of(&self, mgr: &BlockManager, uuid: &str) -> Result<NodeIx, FsError> {
        mgr.reg.lookup(uuid).ok_or_else(|| unregistered(uuid))
    }

    /// The rack of a node at `ip` (named `host`), by the topology mapping; a script runs
    /// only for an address it has not answered before.
    pub async fn rack_of(&self, ip: &str, host: &str) -> String {
        self.topology.resolve(ip, host).await
    }

    /// registerDatanode: the node joins (again) under its uuid, at the address it connects
    /// from, as a Java NameNode takes it. Answers the id as registered.
    pub fn register_datanode(
        &self,
        who: &Admitted,
        reg: NodeRegistration,
    ) -> Result<NodeId, FsError> {
        who.check(Operation::RegisterDatanode);
        let ip = who.ip();
        let cluster = &self.identity.cluster_id;
        if &reg.cluster_id != cluster && !reg.cluster_id.is_empty() {
            return Err(FsError::Io(format!(
                "DataNode {} belongs to cluster {}, this NameNode to {cluster}",
                reg.id.uuid, reg.cluster_id
            )));
        }
        let id = NodeId {
            ip: ip.to_string(),
            ..reg.id
        };
        let wanted = self.hosts_admit(&id)?;
        // The generation first, then (by the caller) the keys: a roll in between is sent
        // again at the next heartbeat rather than missed.
        let generation = self.tokens.generation();
        let mut mgr = self.blocks.lock();
        let ix = mgr
            .reg
            .register(id.clone(), now_ms())
            .map_err(|_| FsError::Io("too many DataNodes".into()))?;
        let node = mgr.reg.get_mut(ix);
        node.keys_generation = generation;
        node.rack = reg.rack;
        // A node on a new rack may leave blocks on too few racks.
        mgr.needs_scan = true;
        super::admin_states::set_admin(&mut mgr, ix, wanted, now_ms());
        info!(node = ix, uuid = %id.uuid, addr = %id.xfer_addr(), rack = %mgr.reg.get(ix).rack, "DataNode registered");
        Ok(id)
    }

    /// sendHeartbeat: records the node's load and space, and answers its orders. An
    /// unknown node, or one declared dead (its replicas forgotten), must register again.
    pub fn heartbeat(&self, who: &Admitted, uuid: &str, report: HeartbeatReport) -> Vec<DnCommand> {
        who.check(Operation::SendHeartbeat);
        let mut mgr = self.blocks.lock();
        let Some(ix) = mgr.reg.lookup(uuid) else {
            return vec![DnCommand::Register];
        };
        let node = mgr.reg.get_mut(ix);
        if node.dead {
            return vec![DnCommand::Register];
        }
        node.last_heartbeat_ms = now_ms();
        node.xceivers = report.xceivers;
        for s in report.storages {
            let i = node.storage_ix(&s.uuid) as usize;
            node.storages[i] = s;
        }
        let mut cmds = Vec::new();
        let generation = self.tokens.generation();
        if node.keys_generation < generation {
            node.keys_generation = generation;
            cmds.push(DnCommand::KeyUpdate);
        }
        if self.ha_state() == HaState::Standby {
            // Only the active orders work; a DataNode would ignore a standby's anyway.
            node.invalidate.clear();
            node.transfers.clear();
            node.balancer_bandwidth = 0;
            return cmds;
        }
        if node.balancer_bandwidth > 0 {
            cmds.push(DnCommand::BalancerBandwidth(std::mem::take(
                &mut node.balancer_bandwidth,
            )));
        }
        if !node.invalidate.is_empty() {
            let n = node.invalidate.len().min(INVALIDATE_PER_HEARTBEAT);
            let blocks = node
                .invalidate
                .drain(..n)
                .map(|(id, gs)| Block { id, gs, len: 0 })
                .collect();
            cmds.push(DnCommand::Invalidate(blocks));
        }
        for t in std::mem::take(&mut node.transfers) {
            cmds.push(transfer(&mgr, t));
        }
        let synced = self
            .journal
            .as_ref()
            .map_or(u64::MAX, |j| j.last_synced().unwrap_or(0));
        let orders = mgr.recoveries.take_orders(ix, synced);
        if !orders.is_empty() {
            let blocks = orders
                .into_iter()
                .map(|(id, r)| {
                    let placed = Placed {
                        block: Block {
                            id,
                            gs: r.gs,
                            len: r.len,
                        },
                        offset: 0,
                    };
                    RecoveringBlock {
                        block: LocatedBlock::new(&placed, &mgr.reg, &r.replicas),
                        recovery_id: r.recovery_id,
                        new_len: r.new_len,
                        copy_to: r.copy_to,
                    }
                })
                .collect();
            cmds.push(DnCommand::Recover(blocks));
        }
        cmds
    }

    /// A full block report: per storage (uuid), every replica. Each is checked against
    /// what the namespace expects; stale and unknown replicas are ordered deleted.
    pub fn block_report(
        &self,
        who: &Admitted,
        uuid: &str,
        storages: &[(String, Vec<Reported>)],
    ) -> Result<(), FsError> {
        who.check(Operation::BlockReport);
        let mut total = ReportOutcome::default();
        let ix = {
            let ns = self.ns.read();
            let mut mgr = self.blocks.lock();
            let ix = self.node_of(&mgr, uuid)?;
            let standby = self.ha_state() == HaState::Standby;
            for (storage, replicas) in storages {
                let s = mgr.reg.get_mut(ix).storage_ix(storage);
                let kept;
                let replicas = if standby {
                    kept = keep_unfit(&mut mgr, &ns, ix, s, replicas);
                    &kept
                } else {
                    replicas
                };
                let o = mgr.full_report(ix, s, replicas, |id| expected(&ns, id));
                total.accepted += o.accepted;
                total.invalidated += o.invalidated;
                total.forgotten += o.forgotten;
            }
            mgr.needs_scan = true;
            mgr.reg.get_mut(ix).last_block_report_ms = now_ms();
            ix
        };
        info!(
            node = ix,
            accepted = total.accepted,
            invalidated = total.invalidated,
            forgotten = total.forgotten,
            "full block report processed"
        );
        self.check_startup_safe_mode(now_ms());
        Ok(())
    }

    /// blockReceivedAndDeleted: replicas finished, being written, or deleted, per storage.
    pub fn incremental_report(
        &self,
        who: &Admitted,
        uuid: &str,
        storages: &[(String, Vec<(Reported, ReplicaEvent)>)],
        delete_hints: &[(u64, String)],
    ) -> Result<(), FsError> {
        who.check(Operation::BlockReceivedAndDeleted);
        {
            let ns = self.ns.read();
            let mut mgr = self.blocks.lock();
            let ix = self.node_of(&mgr, uuid)?;
            let mut out = ReportOutcome::default();
            let expect = |id| expected(&ns, id);
            let standby = self.ha_state() == HaState::Standby;
            for (storage, events) in storages {
                let six = mgr.reg.get_mut(ix).storage_ix(storage);
                for &(r, event) in events {
                    let placeable = event == ReplicaEvent::Deleted
                        || !crate::blocks::unfit_on_standby(&r, expect(r.id).as_ref());
                    if standby && !placeable {
                        mgr.postpone(ix, six, r);
                        continue;
                    }
                    match event {
                        ReplicaEvent::Received => mgr.one_replica(ix, six, &r, &expect, &mut out),
                        ReplicaEvent::Receiving => {
                            let r = Reported {
                                state: ReplicaState::Unfinished,
                                ..r
                            };
                            mgr.one_replica(ix, six, &r, &expect, &mut out)
                        }
                        ReplicaEvent::Deleted => {
                            mgr.remove_replica(r.id, ix);
                            mgr.forget_postponed(r.id, ix);
                        }
                    }
                }
            }
            for (id, hint) in delete_hints {
                let (Some(hinted), Some((slot, _)), Some(e)) = (
                    mgr.reg.lookup(hint),
                    ns.block_position(*id),
                    expected(&ns, *id),
                ) else {
                    continue;
                };
                if hinted != ix && e.complete {
                    let replication = ns.inode(slot).replication as usize;
                    mgr.drop_hinted(*id, e.gs, hinted, replication);
                }
            }
            debug!(
                node = ix,
                accepted = out.accepted,
                invalidated = out.invalidated,
                "IBR"
            );
        }
        self.check_startup_safe_mode(now_ms());
        Ok(())
    }

    /// setBalancerBandwidth: every registered DataNode hears it with its next heartbeat
    /// (as in HDFS, it is not kept: a node that registers later, or a restart, starts
    /// from `dfs.datanode.balance.bandwidthPerSec`).
    pub fn set_balancer_bandwidth(&self, who: &Admitted, bytes_per_sec: u64) {
        who.check(Operation::SetBalancerBandwidth);
        let mut mgr = self.blocks.lock();
        let nodes: Vec<NodeIx> = mgr.reg.iter().map(|(ix, _)| ix).collect();
        for ix in nodes {
            mgr.reg.get_mut(ix).balancer_bandwidth = bytes_per_sec;
        }
        info!(
            bandwidth = bytes_per_sec,
            "Balancer bandwidth set for DataNodes"
        );
    }

    /// errorReport: a fatal disk error takes the node out at once (its replicas stop
    /// counting); anything else is only logged.
    pub fn datanode_error(&self, who: &Admitted, uuid: &str, fatal: bool, code: u32, msg: &str) {
        who.check(Operation::ErrorReport);
        warn!(datanode = %uuid, code, msg, "DataNode error report");
        if fatal {
            let mut mgr = self.blocks.lock();
            if let Some(ix) = mgr.reg.lookup(uuid) {
                mgr.reg.get_mut(ix).dead = true;
                mgr.node_lost(ix);
            }
        }
    }

    /// A client or DataNode found corrupt replicas: (block id, the uuids of the nodes
    /// holding them). They stop being handed out, and are deleted once re-replication has
    /// restored enough good copies.
    pub fn mark_bad_blocks(&self, who: &Admitted, bad: &[(u64, Vec<&str>)]) {
        who.check(Operation::ReportBadBlocks);
        let ns = self.ns.read();
        let mut mgr = self.blocks.lock();
        for (id, nodes) in bad {
            let id = *id;
            if ns.block_file(id).is_none() {
                continue;
            }
            for uuid in nodes {
                let Some(node) = mgr.reg.lookup(uuid) else {
                    continue;
                };
                let others = mgr
                    .entry(id)
                    .map(|e| {
                        e.replicas
                            .iter()
                            .filter(|r| r.node != node && r.finalized)
                            .count()
                    })
                    .unwrap_or(0);
                warn!(
                    block = id,
                    datanode = %uuid,
                    good_copies_left = others,
                    "replica reported corrupt"
                );
                // Kept (unread) until re-replication has made enough good copies.
                mgr.mark_corrupt(id, node);
                mgr.needs_scan = true;
            }
        }
    }

    /// getDatanodeReport.
    pub fn datanode_report(&self, filter: NodeFilter) -> Vec<DatanodeInfo> {
        let now = now_ms();
        let mgr = self.blocks.lock();
        mgr.reg
            .iter()
            .filter(|(_, n)| {
                let dead = n.liveness(now, u64::MAX, self.cfg.dead_interval_ms()) == Liveness::Dead;
                match filter {
                    NodeFilter::Live => !dead,
                    NodeFilter::Dead => dead,
                    NodeFilter::All => true,
                    NodeFilter::Decommissioning => !dead && n.admin == AdminState::Decommissioning,
                    NodeFilter::EnteringMaintenance => {
                        matches!(n.admin, AdminState::EnteringMaintenance { .. })
                    }
                    NodeFilter::InMaintenance => {
                        matches!(n.admin, AdminState::InMaintenance { .. })
                    }
                }
            })
            .map(|(_, n)| DatanodeInfo::of(n))
            .collect()
    }

    /// getFsStats: the live nodes' space, and blocks without any reported replica.
    pub fn fs_stats(&self) -> FsStats {
        let now = now_ms();
        let total_blocks = self.ns.read().block_count() as u64;
        let mgr = self.blocks.lock();
        let live =
            mgr.reg.iter().map(|(_, n)| n).filter(|n| {
                n.liveness(now, u64::MAX, self.cfg.dead_interval_ms()) != Liveness::Dead
            });
        let mut s = FsStats::default();
        for n in live {
            s.capacity += n.capacity();
            s.used += n.dfs_used();
            s.remaining += n.remaining();
        }
        // Blocks no DataNode has reported are missing at once; the rest as the last
        // replication scan found them.
        let unreported = total_blocks.saturating_sub(mgr.block_entries() as u64);
        s.missing_blocks = unreported.max(mgr.tally.missing);
        s.under_replicated = mgr.tally.under_replicated;
        s.last_replica = mgr.tally.last_replica;
        s.corrupt_blocks = mgr.tally.corrupt;
        s.pending_deletion_blocks = mgr.reg.iter().map(|(_, n)| n.invalidate.len() as u64).sum();
        s
    }

    /// Declares silent DataNodes dead (their replicas stop counting). The DataNode
    /// monitor's step, with start-up safe mode's check and the block keys' roll.
    pub fn check_datanodes(&self, now: i64) {
        {
            let mut mgr = self.blocks.lock();
            for ix in mgr.reg.newly_dead(now, self.cfg.dead_interval_ms()) {
                let n = mgr.reg.get(ix);
                if n.admin.maintenance_until().is_some() {
                    // Gone for maintenance, as planned: its replicas still count until
                    // the window ends.
                    info!(node = ix, uuid = %n.id.uuid, "DataNode in maintenance is gone; its replicas are kept");
                    continue;
                }
                warn!(node = ix, uuid = %n.id.uuid, "DataNode declared dead");
                mgr.node_lost(ix);
                mgr.needs_scan = true;
            }
            self.end_expired_maintenance(&mut mgr, now);
        }
        self.check_startup_safe_mode(now);
        self.tokens.roll_if_due();
    }

    /// One replication pass over every block (when `force` or something changed).
    /// Returns (copies ordered, replicas to delete).
    pub fn replication_scan(&self, force: bool) -> (usize, usize) {
        use crate::blocks::{Decision, ReplicationCtx, Want};
        let ns = self.ns.read();
        let mut mgr = self.blocks.lock();
        if !force && !mgr.needs_scan {
            return (0, 0);
        }
        if self.ha_state() == HaState::Standby {
            // The active does this work; the scan waits for this node to take over.
            mgr.needs_scan = true;
            return (0, 0);
        }
        mgr.needs_scan = false;
        let ctx = ReplicationCtx {
            now_ms: now_ms(),
            stale_ms: self.cfg.stale_interval_ms,
            dead_ms: self.cfg.dead_interval_ms(),
            pending_timeout_ms: 60_000,
            seed: now_ms() as u64,
            maintenance_min: self.cfg.maintenance_replication_min,
            max_streams: self.cfg.replication_max_streams,
        };
        let (mut ordered, mut deleted) = (0, 0);
        let live = mgr
            .reg
            .iter()
            .filter(|(_, n)| n.liveness(ctx.now_ms, u64::MAX, ctx.dead_ms) != Liveness::Dead)
            .count();
        mgr.begin_scan(live.max(1) * self.cfg.replication_work_multiplier);
        let mut last: (u8, u16, Vec<u8>) = (u8::MAX, 0, Vec::new());
        for (id, slot) in ns.blocks() {
            let Some(e) = expected(&ns, id) else {
                continue;
            };
            if !e.complete {
                // Still being written: its pipeline decides, and a leaving node in it
                // waits for it.
                mgr.note_open_block(id);
                continue;
            }
            let replication = ns.inode(slot).replication;
            let policy = ns.effective_storage_policy(slot);
            // Blocks come file by file: most share the previous block's types.
            if last.0 != policy.id || last.1 != replication {
                last = (policy.id, replication, policy.choose(replication));
            }
            let types = &last.2;
            let want = Want {
                replicas: replication as usize,
                types,
                fallbacks: policy.replication_fallback_ids(),
            };
            match mgr.check_replication(id, &want, &e, &ctx) {
                Decision::Replicate { targets, .. } => ordered += targets,
                Decision::Excess(nodes) => deleted += nodes.len(),
                Decision::Waiting => mgr.needs_scan = true,
                Decision::Fine => {}
            }
        }
        for ix in mgr.end_scan() {
            let n = mgr.reg.get(ix);
            info!(node = %n.id.xfer_addr(), state = ?n.admin, "DataNode no longer needed for any block");
        }
        let leaving: Vec<(String, u64)> = mgr
            .reg
            .iter()
            .filter(|(_, n)| n.admin.leaving())
            .map(|(_, n)| (n.id.xfer_addr(), n.leaving_blocks))
            .collect();
        if !leaving.is_empty() {
            // Until they have left, scan again even if nothing else changes.
            mgr.needs_scan = true;
            // Why they have not, every half minute as HDFS's admin monitor says it.
            let last = self
                .leaving_logged_ms
                .load(std::sync::atomic::Ordering::Relaxed);
            if ctx.now_ms - last >= 30_000 {
                self.leaving_logged_ms
                    .store(ctx.now_ms, std::sync::atomic::Ordering::Relaxed);
                for (node, blocks) in &leaving {
                    info!(%node, blocks, "DataNode still leaving: blocks without enough replicas on nodes in service");
                }
            }
        }
        (ordered, deleted)
    }
}

/// A standby's share of a full report: the replicas its namespace has no place for yet
/// are kept for later (see `BlockManager::postpone`); the rest are returned.
fn keep_unfit(
    mgr: &mut BlockManager,
    ns: &Namespace,
    node: NodeIx,
    storage: u8,
    replicas: &[Reported],
) -> Vec<Reported> {
    let mut fit = Vec::with_capacity(replicas.len());
    for r in replicas {
        if crate::blocks::unfit_on_standby(r, expected(ns, r.id).as_ref()) {
            mgr.postpone(node, storage, *r);
        } else {
            fit.push(*r);
        }
    }
    fit
}

/// A transfer order with its targets' addresses.
fn transfer(mgr: &BlockManager, t: Transfer) -> DnCommand {
    let placed = Placed {
        block: Block {
            id: t.id,
            gs: t.gs,
            len: t.len,
        },
        offset: 0,
    };
    let located = LocatedBlock::new(&placed, &mgr.reg, &t.targets);
    DnCommand::Transfer {
        block: located.block,
        targets: located.locations,
    }
}
