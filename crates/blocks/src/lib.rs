//! Block management on the NameNode: which DataNodes hold which replicas, what they must
//! delete, and how many blocks are safely reported (for start-up safe mode).
//!
//! The namespace says which blocks exist and how long they are; this module holds only
//! what DataNodes report, which is volatile and rebuilt from block reports after a
//! restart. Callers take the namespace lock first and this one second.

pub mod placement;
mod postponed;
pub mod recovery;
pub mod registry;
pub mod report;
pub mod storage_moves;

use std::collections::HashMap;

use smallvec::SmallVec;

use registry::{AdminState, NodeIx, Registry};
use report::{ReplicaState, Reported};

/// One replica: where it is, whether it is finished, and whether a reader found it
/// corrupt (kept, unread, while it is the only copy). Six bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replica {
    pub node: NodeIx,
    pub storage: u8,
    pub finalized: bool,
    pub corrupt: bool,
    /// Reported waiting to be recovered (RWR): unfinished when its DataNode restarted,
    /// so it may hold fewer bytes than its pipeline acknowledged.
    pub restarted: bool,
}

/// The replicas of one block, inline for the usual three.
#[derive(Clone, Debug, Default)]
pub struct Entry {
    pub replicas: SmallVec<[Replica; 3]>,
    /// The largest length a DataNode reported for a finished replica (what lease recovery
    /// closes a file at when its writer vanished).
    pub reported_len: u64,
}

/// What the namespace expects of a block, for checking a reported replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expected {
    pub gs: u64,
    pub len: u64,
    /// The block's length is final (an earlier block, or the file is closed).
    pub complete: bool,
}

/// Whether a reported replica is a good copy of the block the namespace expects.
pub fn replica_matches(r: &Reported, e: &Expected) -> bool {
    if e.complete && r.state == ReplicaState::WaitingRecovery {
        // Left unfinished by its DataNode's restart, of a block whose length is now
        // final: never a copy of it (HDFS: "reported replica has invalid state").
        return false;
    }
    if r.gs != e.gs {
        // A block being written whose replica carries a newer stamp: a block recovery
        // the NameNode has not heard the end of (it restarted, or the report crossed the
        // primary's). The replica holds the data that recovery will close the file at.
        return !e.complete && r.gs > e.gs;
    }
    !(e.complete && r.state == ReplicaState::Finalized && r.len != e.len)
}

/// Whether a reported replica fits nothing the namespace expects (`e`, `None` for a block
/// it does not know): such a replica is deleted by an active NameNode, and kept for later
/// by a standby.
pub fn unfit(r: &Reported, e: Option<&Expected>) -> bool {
    match e {
        None => true,
        // An unfinished replica of a complete block, of its stamp, is ignored, not
        // deleted (see `one_replica`).
        Some(e) if e.complete && r.gs == e.gs && r.state == ReplicaState::Unfinished => false,
        Some(e) => !replica_matches(r, e),
    }
}

/// Whether a standby keeps a reported replica for later rather than placing it: what
/// fits nothing, and also a replica of another stamp than the namespace's. A newer stamp
/// is a pipeline recovery or block recovery whose record has not reached this node yet
/// (HDFS's standby postpones such "blocks from the future" too); placing it now would let
/// the replicas of two generations sit side by side, and the record, when it arrives,
/// forgets every replica placed at the stamp it replaces (see
/// [`BlockManager::forget_replicas`]).
pub fn unfit_on_standby(r: &Reported, e: Option<&Expected>) -> bool {
    unfit(r, e) || e.is_some_and(|e| r.gs != e.gs)
}

#[derive(Default)]
pub struct BlockManager {
    pub reg: Registry,
    /// Keyed by block id with foldhash: every getBlockLocations looks up each of its blocks
    /// here, and SipHash was a measurable share of a 1,000-block reply. An [`IdMap`], so
    /// that its growth never re-hashes every block under this lock.
    ///
    /// [`IdMap`]: ferrite_namespace::id_map::IdMap
    entries: ferrite_namespace::id_map::IdMap<Entry>,
    /// Blocks with at least one finalized replica.
    safe: usize,
    /// Blocks being copied, with the time after which the copy is given up on.
    pending: HashMap<u64, i64>,
    /// Something changed that may leave blocks with too few or too many replicas.
    pub needs_scan: bool,
    /// Block recoveries under way (lease recovery, truncate).
    pub recoveries: recovery::Recoveries,
    /// Block health as the last complete replication scan counted it.
    pub tally: Tally,
    /// The scan in progress's count, published to `tally` when it ends.
    counting: Tally,
    /// Replica reports a standby cannot place yet.
    postponed: postponed::Postponed,
    /// Copies the scan in progress may still order (HDFS's
    /// `dfs.namenode.replication.work.multiplier.per.iteration` times the live nodes);
    /// `None` outside a scan.
    orders_left: Option<usize>,
    /// The scan in progress's count of blocks each leaving node is still needed for.
    counting_leaving: HashMap<NodeIx, u64>,
    /// The racks of live nodes, counted once per scan when a block first asks.
    scan_racks: Option<usize>,
}

/// Complete blocks by health, as HDFS reports them (`getFsStats`, `dfsadmin -report`):
/// fewer good replicas than wanted but some (HDFS's low redundancy), none at all, and
/// blocks with a corrupt replica.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub under_replicated: u64,
    /// Of those, the ones down to their last replica (HDFS's highest-priority queue).
    pub last_replica: u64,
    pub missing: u64,
    pub corrupt: u64,
}

/// What a block's file asks of its replicas: how many, and on which storage types.
pub struct Want<'a> {
    pub replicas: usize,
    /// The storage policy's type for each replica (empty: any storage will do).
    pub types: &'a [u8],
    /// Types to copy onto where no node has the wanted one (the policy's replication
    /// fallbacks).
    pub fallbacks: &'a [u8],
}

impl Want<'_> {
    /// `n` replicas on any storage.
    pub fn any(n: usize) -> Want<'static> {
        Want {
            replicas: n,
            types: &[],
            fallbacks: &[],
        }
    }
}

/// The cluster facts a replication decision needs.
pub struct ReplicationCtx {
    pub now_ms: i64,
    pub stale_ms: u64,
    pub dead_ms: u64,
    pub pending_timeout_ms: i64,
    pub seed: u64,
    /// `dfs.namenode.maintenance.replication.min`: replicas a block keeps on nodes in
    /// service while others of its holders are in maintenance.
    pub maintenance_min: usize,
    /// `dfs.namenode.replication.max-streams`: copies a node may have queued to send.
    pub max_streams: usize,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    Fine,
    /// Copies ordered from `source`.
    Replicate {
        source: NodeIx,
        targets: usize,
    },
    /// Too many good copies: these nodes delete theirs.
    Excess(Vec<NodeIx>),
    /// Under-replicated but nothing can be done now (no source, no target, or a copy
    /// is already under way).
    Waiting,
}

impl BlockManager {
    pub fn entry(&self, id: u64) -> Option<&Entry> {
        self.entries.get(&id)
    }

    /// Blocks with at least one finalized replica.
    pub fn safe_blocks(&self) -> usize {
        self.safe
    }

    pub fn finalized_replicas(&self, id: u64) -> usize {
        self.entries
            .get(&id)
            .map(|e| e.replicas.iter().filter(|r| r.finalized).count())
            .unwrap_or(0)
    }

    /// Records (or upgrades) a replica the caller has checked against the namespace.
    pub fn add_replica(&mut self, id: u64, node: NodeIx, storage: u8, finalized: bool, len: u64) {
        let e = self.entries.entry(id).or_default();
        let was_safe = e.replicas.iter().any(|r| r.finalized);
        let newly_finalized = match e.replicas.iter_mut().find(|r| r.node == node) {
            Some(r) => {
                r.storage = storage;
                let newly = finalized && !r.finalized;
                r.finalized |= finalized;
                r.restarted &= !finalized;
                newly
            }
            None => {
                e.replicas.push(Replica {
                    node,
                    storage,
                    finalized,
                    corrupt: false,
                    restarted: false,
                });
                finalized
            }
        };
        // A node's count is of finished replicas, as HDFS's storages list them.
        if newly_finalized {
            self.reg.get_mut(node).blocks += 1;
        }
        if finalized {
            e.reported_len = e.reported_len.max(len);
            self.pending.remove(&id);
        }
        if !was_safe && finalized {
            self.safe += 1;
        }
    }

    /// Where the replicas of block `id` are: (node, storage) each.
    /// Whether every replica known of block `id` was left unfinished by its DataNode's
    /// restart (false when none is known).
    pub fn only_restarted_replicas(&self, id: u64) -> bool {
        self.entries
            .get(&id)
            .is_some_and(|e| !e.replicas.is_empty() && e.replicas.iter().all(|r| r.restarted))
    }

    fn replica_mut(&mut self, id: u64, node: NodeIx) -> Option<&mut Replica> {
        self.entries
            .get_mut(&id)?
            .replicas
            .iter_mut()
            .find(|r| r.node == node)
    }

    pub fn places(&self, id: u64) -> Vec<(NodeIx, u8)> {
        self.entries
            .get(&id)
            .map(|e| e.replicas.iter().map(|r| (r.node, r.storage)).collect())
            .unwrap_or_default()
    }

    /// The nodes holding a replica of block `id` other than `keep`.
    pub fn holders_except(&self, id: u64, keep: &[NodeIx]) -> Vec<NodeIx> {
        self.entries
            .get(&id)
            .map(|e| {
                e.replicas
                    .iter()
                    .map(|r| r.node)
                    .filter(|n| !keep.contains(n))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A finished block opens for write again (append): its replicas are being written
    /// once more and count as finished only when their DataNodes say so again.
    pub fn reopen(&mut self, id: u64) {
        let Some(e) = self.entries.get_mut(&id) else {
            return;
        };
        if e.replicas.iter().any(|r| r.finalized) {
            self.safe -= 1;
        }
        for r in e.replicas.iter_mut() {
            if r.finalized {
                let n = self.reg.get_mut(r.node);
                n.blocks = n.blocks.saturating_sub(1);
            }
            r.finalized = false;
        }
        e.reported_len = 0;
    }

    /// Forgets every replica of block `id`: a standby applying the record that gave the
    /// block a new stamp, after which the replicas it had placed at the old one are stale
    /// (the ones of the new stamp come back from the reports it kept, or as they arrive).
    pub fn forget_replicas(&mut self, id: u64) {
        for node in self.holders_except(id, &[]) {
            self.remove_replica(id, node);
        }
    }

    /// Forgets the replica of `id` on `node`, if there is one.
    pub fn remove_replica(&mut self, id: u64, node: NodeIx) {
        let Some(e) = self.entries.get_mut(&id) else {
            return;
        };
        let was_safe = e.replicas.iter().any(|r| r.finalized);
        if e.replicas.iter().any(|r| r.node == node && r.finalized) {
            let n = self.reg.get_mut(node);
            n.blocks = n.blocks.saturating_sub(1);
        }
        e.replicas.retain(|r| r.node != node);
        let is_safe = e.replicas.iter().any(|r| r.finalized);
        if was_safe && !is_safe {
            self.safe -= 1;
        }
        if e.replicas.is_empty() {
            self.entries.remove(&id);
        }
    }

    /// A replica arrived by a move from `hinted` (HDFS's delete hint): that node's copy
    /// goes, if the block still has more than `replication` good copies without it.
    pub fn drop_hinted(&mut self, id: u64, gs: u64, hinted: NodeIx, replication: usize) {
        let Some(e) = self.entries.get(&id) else {
            return;
        };
        let good = e
            .replicas
            .iter()
            .filter(|r| r.finalized && !r.corrupt)
            .count();
        let held = e.replicas.iter().any(|r| r.node == hinted && r.finalized);
        if held && good > replication {
            self.invalidate(hinted, id, gs);
        }
    }

    /// Stops handing out a replica that a reader found corrupt.
    pub fn mark_corrupt(&mut self, id: u64, node: NodeIx) {
        if let Some(e) = self.entries.get_mut(&id) {
            for r in e.replicas.iter_mut().filter(|r| r.node == node) {
                r.corrupt = true;
            }
        }
    }

    /// Asks `node` to delete its replica of a block (sent with its next heartbeat).
    pub fn invalidate(&mut self, node: NodeIx, id: u64, gs: u64) {
        self.remove_replica(id, node);
        self.reg.get_mut(node).invalidate.push((id, gs));
    }

    /// Blocks that left the namespace: every replica holder is told to delete its copy.
    pub fn blocks_removed(&mut self, blocks: &[(u64, u64)]) {
        for &(id, gs) in blocks {
            self.recoveries.finish(id);
            let Some(e) = self.entries.remove(&id) else {
                continue;
            };
            if e.replicas.iter().any(|r| r.finalized) {
                self.safe -= 1;
            }
            for r in e.replicas {
                let n = self.reg.get_mut(r.node);
                n.invalidate.push((id, gs));
                if r.finalized {
                    n.blocks = n.blocks.saturating_sub(1);
                }
            }
        }
    }

    /// A node declared dead: its finished replicas no longer count anywhere. Its unfinished
    /// ones stay, as the places a block being written was sent to (HDFS keeps them as the
    /// block's expected locations): when every node of a pipeline is dead for a while,
    /// lease recovery must wait for them rather than take the block for empty and drop
    /// the bytes its writer had flushed. No reader is sent to a dead node, and a complete
    /// block's unfinished replicas are dropped by its next replication check.
    pub fn node_lost(&mut self, node: NodeIx) {
        let ids: Vec<u64> = self
            .entries
            .iter()
            .filter(|(_, e)| e.replicas.iter().any(|r| r.node == node && r.finalized))
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            self.remove_replica(id, node);
        }
        // Orders it will never carry out; copies it was to send are re-planned once their
        // pending time runs out.
        let n = self.reg.get_mut(node);
        n.invalidate.clear();
        n.transfers.clear();
    }

    /// Applies a full report of one storage: replicas it no longer lists are forgotten,
    /// good ones recorded, and ones the namespace does not want (unknown, stale generation,
    /// wrong length) are scheduled for deletion. `expect` looks a block up in the namespace.
    pub fn full_report(
        &mut self,
        node: NodeIx,
        storage: u8,
        reported: &[Reported],
        expect: impl Fn(u64) -> Option<Expected>,
    ) -> ReportOutcome {
        let listed: std::collections::HashSet<u64> = reported.iter().map(|r| r.id).collect();
        let gone: Vec<u64> = self
            .entries
            .iter()
            .filter(|(id, e)| {
                !listed.contains(id)
                    && e.replicas
                        .iter()
                        .any(|r| r.node == node && r.storage == storage)
            })
            .map(|(&id, _)| id)
            .collect();
        let mut out = ReportOutcome {
            forgotten: gone.len(),
            ..Default::default()
        };
        for id in gone {
            self.remove_replica(id, node);
        }
        for r in reported {
            self.one_replica(node, storage, r, &expect, &mut out);
        }
        out
    }

    /// Applies one reported replica (from a full or an incremental report).
    pub fn one_replica(
        &mut self,
        node: NodeIx,
        storage: u8,
        r: &Reported,
        expect: &impl Fn(u64) -> Option<Expected>,
        out: &mut ReportOutcome,
    ) {
        let Some(e) = expect(r.id).filter(|e| !unfit(r, Some(e))) else {
            self.invalidate(node, r.id, r.gs);
            out.invalidated += 1;
            return;
        };
        // An unfinished replica of a complete block, of its stamp: a report that crossed
        // the pipeline's close, or a copy still arriving. As HDFS (HDFS-2791), it is
        // neither a location to read from nor deleted; the finished replica will come.
        if e.complete && r.gs == e.gs && r.state == ReplicaState::Unfinished {
            return;
        }
        self.add_replica(
            r.id,
            node,
            storage,
            r.state == ReplicaState::Finalized,
            r.len,
        );
        // Rare: a full report's usual replica costs no second lookup. The flag clears
        // when the replica is reported finished.
        if r.state == ReplicaState::WaitingRecovery {
            if let Some(rep) = self.replica_mut(r.id, node) {
                rep.restarted = true;
            }
        }
        out.accepted += 1;
    }

    pub fn block_entries(&self) -> usize {
        self.entries.len()
    }

    /// A replication scan starts: its [`check_replication`](Self::check_replication) calls
    /// count blocks afresh.
    pub fn begin_scan(&mut self, orders: usize) {
        self.counting = Tally::default();
        self.orders_left = Some(orders);
        self.counting_leaving.clear();
        self.scan_racks = None;
    }

    /// The scan saw every block: its count becomes the published one, and a leaving node
    /// no block needs any more has left (decommissioned, or in maintenance). Returns the
    /// nodes that changed state.
    pub fn end_scan(&mut self) -> Vec<NodeIx> {
        self.tally = self.counting;
        self.orders_left = None;
        self.scan_racks = None;
        let mut done = Vec::new();
        let ixs: Vec<NodeIx> = self.reg.iter().map(|(ix, _)| ix).collect();
        for ix in ixs {
            let left = self.counting_leaving.get(&ix).copied().unwrap_or(0);
            let n = self.reg.get_mut(ix);
            n.leaving_blocks = left;
            if left > 0 {
                continue;
            }
            n.admin = match n.admin {
                AdminState::Decommissioning => AdminState::Decommissioned,
                AdminState::EnteringMaintenance { until_ms } => {
                    AdminState::InMaintenance { until_ms }
                }
                _ => continue,
            };
            done.push(ix);
        }
        done
    }

    /// A block still being written: a leaving node in its pipeline must wait for it to be
    /// closed and replicated (HDFS waits for open files too).
    pub fn note_open_block(&mut self, id: u64) {
        let Some(e) = self.entries.get(&id) else {
            return;
        };
        for r in &e.replicas {
            if self.reg.get(r.node).admin.leaving() {
                *self.counting_leaving.entry(r.node).or_default() += 1;
            }
        }
    }

    /// Brings one block towards `want` good replicas: orders a copy when there are too
    /// few, deletes the surplus (fullest nodes first) when there are too many, and drops
    /// corrupt copies once enough good ones exist.
    pub fn check_replication(
        &mut self,
        id: u64,
        wanted: &Want,
        block: &Expected,
        ctx: &ReplicationCtx,
    ) -> Decision {
        let want = wanted.replicas;
        if block.complete {
            // A complete block's replicas are the finished ones, as in HDFS's block map:
            // a pipeline node that never finished (left out of a recovery or an append)
            // is not a holder, and must not keep a new copy off its node.
            if let Some(e) = self.entries.get_mut(&id) {
                e.replicas.retain(|r| r.finalized || r.corrupt);
            }
        }
        let Some(e) = self.entries.get(&id) else {
            self.counting.missing += 1;
            return Decision::Waiting;
        };
        let live = |n: NodeIx| {
            self.reg.get(n).liveness(ctx.now_ms, u64::MAX, ctx.dead_ms) != registry::Liveness::Dead
        };
        let admin = |n: NodeIx| self.reg.get(n).admin;
        let usable = |r: &&Replica| r.finalized && !r.corrupt;
        // Replicas on nodes in service count; those on decommissioning nodes only serve as
        // sources; those on nodes in maintenance count as present (live or not) as long as
        // enough others are in service.
        let good: Vec<Replica> = e
            .replicas
            .iter()
            .filter(|r| usable(r) && live(r.node) && admin(r.node).in_service())
            .copied()
            .collect();
        // Live holders out of service (decommissioning, or in maintenance but still up)
        // send copies without counting.
        let leaving_sources: Vec<NodeIx> = e
            .replicas
            .iter()
            .filter(|r| usable(r) && live(r.node) && !admin(r.node).in_service())
            .map(|r| r.node)
            .collect();
        let in_maintenance = e
            .replicas
            .iter()
            .filter(|r| usable(r) && admin(r.node).maintenance_until().is_some())
            .count();
        let corrupt: Vec<NodeIx> = e
            .replicas
            .iter()
            .filter(|r| r.corrupt)
            .map(|r| r.node)
            .collect();
        let holders: Vec<NodeIx> = e.replicas.iter().map(|r| r.node).collect();
        let leaving_holders: Vec<NodeIx> = holders
            .iter()
            .copied()
            .filter(|&n| admin(n).leaving())
            .collect();
        let present = good.len() + in_maintenance;
        match (present, leaving_sources.len()) {
            (0, 0) => self.counting.missing += 1,
            (n, _) if n < want => {
                self.counting.under_replicated += 1;
                if n <= 1 {
                    self.counting.last_replica += 1;
                }
            }
            _ => {}
        }
        if !corrupt.is_empty() {
            self.counting.corrupt += 1;
        }
        if good.len() >= want && !corrupt.is_empty() {
            for n in corrupt {
                self.invalidate(n, id, block.gs);
            }
        }
        let good_types: SmallVec<[u8; 4]> = good
            .iter()
            .map(|r| self.reg.get(r.node).storage_type(r.storage))
            .collect();
        let (_, missing) = storage_moves::match_types(&good_types, wanted.types);
        if good.len() > want {
            let surplus = self.surplus(&good, &good_types, wanted);
            for &n in &surplus {
                self.invalidate(n, id, block.gs);
            }
            return Decision::Excess(surplus);
        }
        // With holders in maintenance, this many must be in service all the same.
        let in_service_min = if in_maintenance > 0 {
            want.min(ctx.maintenance_min)
        } else {
            want
        };
        let short = want
            .saturating_sub(present)
            .max(in_service_min.saturating_sub(good.len()));
        // Enough copies, but all on one rack of several: one more goes to another rack,
        // and the next pass deletes one of the crowded rack's (HDFS's mis-replicated).
        let off_rack =
            short == 0 && good.len() == want && want >= 2 && self.on_one_rack(&good, ctx);
        if short == 0 && !off_rack {
            return Decision::Fine;
        }
        // A leaving node waits for this block.
        for n in leaving_holders {
            *self.counting_leaving.entry(n).or_default() += 1;
        }
        if (good.is_empty() && leaving_sources.is_empty())
            || self.pending.get(&id).is_some_and(|&t| t > ctx.now_ms)
        {
            return Decision::Waiting;
        }
        // The sender: a holder out of service first (it takes no writes: HDFS prefers a
        // decommissioning one), else the least busy in service; none with its queue of
        // copies full.
        let streams = |n: NodeIx| self.reg.get(n).transfers.len() < ctx.max_streams;
        let source = leaving_sources
            .iter()
            .copied()
            .filter(|&n| streams(n))
            .min_by_key(|&n| self.reg.get(n).transfers.len())
            .or_else(|| {
                good.iter()
                    .map(|r| r.node)
                    .filter(|&n| streams(n))
                    .min_by_key(|&n| self.reg.get(n).xceivers)
            });
        let Some(source) = source else {
            return Decision::Waiting;
        };
        if self.orders_left == Some(0) {
            return Decision::Waiting;
        }
        let excluded = std::collections::HashSet::new();
        let targets = placement::choose_targets(
            &self.reg,
            &placement::PlacementRequest {
                storage_types: &missing,
                fallbacks: wanted.fallbacks,
                replicas: if off_rack { 1 } else { short },
                block_size: block.len,
                writer_ip: "",
                excluded: &excluded,
                existing: &holders,
                now_ms: ctx.now_ms,
                stale_ms: ctx.stale_ms,
                dead_ms: ctx.dead_ms,
                seed: ctx.seed,
            },
        );
        let rack = |n: NodeIx| self.reg.get(n).rack.as_str();
        if off_rack && targets.iter().all(|t| rack(t.node) == rack(good[0].node)) {
            return Decision::Fine; // no other rack can take a copy now
        }
        if targets.is_empty() {
            // Perhaps the only free nodes hold corrupt copies: with a good copy elsewhere
            // those can go, which frees the node for a fresh copy on the next pass.
            let corrupt: Vec<NodeIx> = self.entries[&id]
                .replicas
                .iter()
                .filter(|r| r.corrupt)
                .map(|r| r.node)
                .collect();
            for n in corrupt {
                self.invalidate(n, id, block.gs);
            }
            return Decision::Waiting;
        }
        self.orders_left = self.orders_left.map(|n| n - 1);
        let n = targets.len();
        self.reg.get_mut(source).transfers.push(registry::Transfer {
            id,
            gs: block.gs,
            len: block.len,
            targets: targets.iter().map(|t| (t.node, t.storage)).collect(),
        });
        self.pending.insert(id, ctx.now_ms + ctx.pending_timeout_ms);
        Decision::Replicate { source, targets: n }
    }

    /// Whether the good replicas all sit on one rack while live nodes span several.
    fn on_one_rack(&mut self, good: &[Replica], ctx: &ReplicationCtx) -> bool {
        let rack = |r: &Replica| self.reg.get(r.node).rack.as_str();
        if !good.iter().all(|r| rack(r) == rack(&good[0])) {
            return false;
        }
        // Every block of a one-rack cluster gets here: count the racks once per scan.
        let racks = match self.scan_racks {
            Some(n) => n,
            None => self.reg.live_racks(ctx.now_ms, ctx.dead_ms),
        };
        if self.orders_left.is_some() {
            self.scan_racks = Some(racks);
        }
        racks > 1
    }

    /// Which of `good` (storage types `types`) to delete to leave `wanted.replicas`, one
    /// at a time as HDFS's `chooseExcessRedundancies` does: from a rack that holds more
    /// than one of them while any does (so the block keeps its racks), those on a storage
    /// type beyond what the policy asks for first, then the fullest node.
    fn surplus(&self, good: &[Replica], types: &[u8], wanted: &Want) -> Vec<NodeIx> {
        let need = good.len() - wanted.replicas;
        let mut excess: SmallVec<[u8; 4]> = if wanted.types.is_empty() {
            SmallVec::new()
        } else {
            let (matched, _) = storage_moves::match_types(types, wanted.types);
            types
                .iter()
                .zip(&matched)
                .filter(|(_, &m)| !m)
                .map(|(&t, _)| t)
                .collect()
        };
        let mut left: Vec<(u64, NodeIx, u8)> = good
            .iter()
            .zip(types)
            .map(|(r, &t)| (self.reg.get(r.node).remaining(), r.node, t))
            .collect();
        left.sort();
        let rack = |n: NodeIx| self.reg.get(n).rack.as_str();
        let mut out: Vec<NodeIx> = Vec::with_capacity(need);
        while out.len() < need {
            let shared = |n: NodeIx| left.iter().filter(|x| rack(x.1) == rack(n)).count() > 1;
            let any_shared = left.iter().any(|x| shared(x.1));
            let may_go = |x: &(u64, NodeIx, u8)| !any_shared || shared(x.1);
            let Some(i) = left
                .iter()
                .position(|x| may_go(x) && excess.contains(&x.2))
                .or_else(|| left.iter().position(may_go))
            else {
                break;
            };
            let (_, n, t) = left.remove(i);
            if let Some(e) = excess.iter().position(|&x| x == t) {
                excess.remove(e);
            }
            out.push(n);
        }
        out
    }
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReportOutcome {
    pub accepted: usize,
    pub invalidated: usize,
    pub forgotten: usize,
}

#[cfg(test)]
mod tests {
    use super::registry::NodeId;
    use super::*;

    fn mgr(nodes: usize) -> BlockManager {
        let mut m = BlockManager::default();
        for i in 0..nodes {
            m.reg
                .register(
                    NodeId {
                        ip: "127.0.0.1".into(),
                        host: "h".into(),
                        uuid: format!("u{i}"),
                        xfer_port: i as u32,
                        info_port: 0,
                        ipc_port: 0,
                    },
                    0,
                )
                .unwrap();
        }
        m
    }

    fn rep(id: u64, gs: u64, len: u64) -> Reported {
        Reported {
            id,
            len,
            gs,
            state: ReplicaState::Finalized,
        }
    }

    #[test]
    fn reports_keep_good_replicas_and_invalidate_the_rest() {
        let mut m = mgr(2);
        let expect = |id| {
            (id == 1).then_some(Expected {
                gs: 10,
                len: 100,
                complete: true,
            })
        };
        let out = m.full_report(0, 0, &[rep(1, 10, 100), rep(2, 10, 5)], expect);
        assert_eq!((out.accepted, out.invalidated), (1, 1));
        assert_eq!(m.safe_blocks(), 1);
        assert_eq!(m.reg.get(0).invalidate, vec![(2, 10)]);
        // A wrong length or an old generation stamp is not a good copy.
        let out = m.full_report(1, 0, &[rep(1, 10, 99)], expect);
        assert_eq!(out.invalidated, 1);
        let out = m.full_report(1, 0, &[rep(1, 9, 100)], expect);
        assert_eq!(out.invalidated, 1);
        assert_eq!(m.finalized_replicas(1), 1);
        // The next full report without block 1 forgets it.
        let out = m.full_report(0, 0, &[], expect);
        assert_eq!(out.forgotten, 1);
        assert_eq!(m.safe_blocks(), 0);
        assert!(m.entry(1).is_none());
    }

    #[test]
    fn an_unfinished_replica_of_a_complete_block_is_not_a_location() {
        let mut m = mgr(2);
        let expect = |_| {
            Some(Expected {
                gs: 10,
                len: 100,
                complete: true,
            })
        };
        let arriving = Reported {
            state: ReplicaState::Unfinished,
            ..rep(1, 10, 0)
        };
        let out = m.full_report(0, 0, &[arriving], expect);
        assert_eq!((out.accepted, out.invalidated), (0, 0));
        assert!(m.entry(1).is_none());
        // Its finished replica, when it comes, is.
        m.full_report(0, 0, &[rep(1, 10, 100)], expect);
        assert_eq!(m.finalized_replicas(1), 1);
    }

    #[test]
    fn a_dead_node_stays_a_place_of_the_blocks_it_was_writing() {
        let mut m = mgr(2);
        m.add_replica(1, 0, 0, false, 0);
        m.add_replica(2, 0, 0, true, 10);
        m.add_replica(2, 1, 0, true, 10);
        m.node_lost(0);
        assert_eq!(m.places(1), vec![(0, 0)], "being written: kept");
        assert_eq!(m.places(2), vec![(1, 0)], "finished: no longer counted");
    }

    #[test]
    fn a_replica_left_unfinished_by_a_restart_is_deleted_once_its_block_is_complete() {
        let mut m = mgr(1);
        let waiting = Reported {
            state: ReplicaState::WaitingRecovery,
            ..rep(1, 10, 40)
        };
        let being_written = |_| {
            Some(Expected {
                gs: 10,
                len: 0,
                complete: false,
            })
        };
        // While the block is written it is a location block recovery asks.
        let out = m.full_report(0, 0, &[waiting], being_written);
        assert_eq!((out.accepted, out.invalidated), (1, 0));
        assert!(m.only_restarted_replicas(1));
        let complete = |_| {
            Some(Expected {
                gs: 10,
                len: 100,
                complete: true,
            })
        };
        let out = m.full_report(0, 0, &[waiting], complete);
        assert_eq!((out.accepted, out.invalidated), (0, 1));
        assert_eq!(m.reg.get(0).invalidate, vec![(1, 10)]);
    }

    fn ctx(now: i64) -> ReplicationCtx {
        ReplicationCtx {
            now_ms: now,
            stale_ms: 30_000,
            dead_ms: 600_000,
            pending_timeout_ms: 60_000,
            seed: 1,
            maintenance_min: 1,
            max_streams: 2,
        }
    }

    fn with_space(m: &mut BlockManager) {
        for i in 0..m.reg.iter().count() {
            let n = m.reg.get_mut(i as NodeIx);
            n.storages.push(registry::StorageState {
                storage_type: 1,
                uuid: format!("s{i}"),
                failed: false,
                capacity: 1 << 40,
                dfs_used: 0,
                remaining: (i as u64 + 1) << 30,
            });
        }
    }

    #[test]
    fn a_complete_blocks_unfinished_replica_keeps_no_copy_off_its_node() {
        let mut m = mgr(3);
        with_space(&mut m);
        let b = Expected {
            gs: 5,
            len: 10,
            complete: true,
        };
        m.add_replica(1, 0, 0, true, 10);
        m.add_replica(1, 1, 0, true, 10);
        // Node 2 was in the pipeline and never finished: the only free node all the same.
        m.add_replica(1, 2, 0, false, 0);
        let d = m.check_replication(1, &Want::any(3), &b, &ctx(0));
        assert!(matches!(d, Decision::Replicate { targets: 1, .. }), "{d:?}");
        assert_eq!(m.entry(1).unwrap().replicas.len(), 2);
    }

    #[test]
    fn under_replicated_blocks_are_copied_once_and_surplus_deleted() {
        let mut m = mgr(4);
        with_space(&mut m);
        let b = Expected {
            gs: 5,
            len: 10,
            complete: true,
        };
        m.add_replica(1, 0, 0, true, 10);
        let d = m.check_replication(1, &Want::any(3), &b, &ctx(0));
        assert_eq!(
            d,
            Decision::Replicate {
                source: 0,
                targets: 2
            }
        );
        let t = &m.reg.get(0).transfers[0];
        assert_eq!(t.targets.len(), 2);
        assert!(t.targets.iter().all(|&(n, _)| n != 0));
        // While the copy is under way nothing more is ordered...
        assert_eq!(
            m.check_replication(1, &Want::any(3), &b, &ctx(1)),
            Decision::Waiting
        );
        // ...until it times out.
        assert!(matches!(
            m.check_replication(1, &Want::any(3), &b, &ctx(100_000)),
            Decision::Replicate { .. }
        ));
        // Four good copies for a replication of 2: the two fullest nodes delete theirs.
        for n in 1..4 {
            m.add_replica(1, n, 0, true, 10);
        }
        assert_eq!(
            m.check_replication(1, &Want::any(2), &b, &ctx(0)),
            Decision::Excess(vec![0, 1])
        );
        assert_eq!(m.finalized_replicas(1), 2);
        assert_eq!(m.reg.get(0).invalidate, vec![(1, 5)]);
    }

    #[test]
    fn a_block_on_one_rack_of_two_gains_a_copy_elsewhere_then_loses_one_of_the_crowded_rack() {
        // Nodes 0-2 on /a, node 3 on /b; node 0 the fullest.
        let mut m = mgr(4);
        with_space(&mut m);
        for ix in 0..4 {
            m.reg.get_mut(ix).rack = if ix < 3 { "/a" } else { "/b" }.into();
        }
        let b = Expected {
            gs: 5,
            len: 10,
            complete: true,
        };
        for n in 0..3 {
            m.add_replica(1, n, 0, true, 10);
        }
        let d = m.check_replication(1, &Want::any(3), &b, &ctx(0));
        assert!(matches!(d, Decision::Replicate { targets: 1, .. }), "{d:?}");
        let source = match d {
            Decision::Replicate { source, .. } => source,
            _ => unreachable!(),
        };
        assert_eq!(m.reg.get(source).transfers[0].targets, vec![(3, 0)]);
        m.add_replica(1, 3, 0, true, 10);
        // Four copies for three: one of /a's goes (the fullest), /b's stays.
        assert_eq!(
            m.check_replication(1, &Want::any(3), &b, &ctx(1)),
            Decision::Excess(vec![0])
        );
        assert_eq!(
            m.check_replication(1, &Want::any(3), &b, &ctx(2)),
            Decision::Fine
        );
        // With /b's node dead, nothing can be done: the block stays as it is.
        m.reg.get_mut(3).dead = true;
        m.remove_replica(1, 3);
        m.add_replica(1, 0, 0, true, 10);
        assert_eq!(
            m.check_replication(1, &Want::any(3), &b, &ctx(100_000)),
            Decision::Fine
        );
    }

    #[test]
    fn a_decommissioning_node_sends_its_copies_then_is_decommissioned() {
        let mut m = mgr(4);
        with_space(&mut m);
        let b = Expected {
            gs: 5,
            len: 10,
            complete: true,
        };
        m.add_replica(1, 0, 0, true, 10);
        m.add_replica(1, 1, 0, true, 10);
        m.add_replica(2, 2, 0, true, 10);
        m.add_replica(2, 3, 0, true, 10);
        m.reg.get_mut(0).admin = AdminState::Decommissioning;
        m.begin_scan(usize::MAX);
        // Block 1 has one copy in service: the decommissioning node sends the other.
        let d = m.check_replication(1, &Want::any(2), &b, &ctx(0));
        assert_eq!(
            d,
            Decision::Replicate {
                source: 0,
                targets: 1
            }
        );
        let t = &m.reg.get(0).transfers[0];
        assert!(t.targets.iter().all(|&(n, _)| n == 2 || n == 3), "{t:?}");
        assert_eq!(
            m.check_replication(2, &Want::any(2), &b, &ctx(0)),
            Decision::Fine
        );
        assert!(m.end_scan().is_empty(), "still needed for block 1");
        assert_eq!(m.reg.get(0).leaving_blocks, 1);
        assert_eq!(m.reg.get(0).admin, AdminState::Decommissioning);
        // The copy arrives: the node is no longer needed, and its replica is not surplus.
        m.add_replica(1, 2, 0, true, 10);
        m.begin_scan(usize::MAX);
        assert_eq!(
            m.check_replication(1, &Want::any(2), &b, &ctx(1)),
            Decision::Fine
        );
        assert_eq!(m.end_scan(), vec![0]);
        assert_eq!(m.reg.get(0).admin, AdminState::Decommissioned);
        // Nothing new is placed on it, and readers reach it last.
        let t = placement::choose_targets(
            &m.reg,
            &placement::PlacementRequest {
                storage_types: &[],
                fallbacks: &[],
                replicas: 4,
                block_size: 1,
                writer_ip: "",
                excluded: &std::collections::HashSet::new(),
                existing: &[],
                now_ms: 0,
                stale_ms: 30_000,
                dead_ms: 600_000,
                seed: 1,
            },
        );
        assert!(t.iter().all(|t| t.node != 0), "{t:?}");
        // Back in service: three copies of a block that wants two, one goes.
        m.reg.get_mut(0).admin = AdminState::Normal;
        assert!(matches!(
            m.check_replication(1, &Want::any(2), &b, &ctx(2)),
            Decision::Excess(v) if v.len() == 1
        ));
    }

    #[test]
    fn too_many_leaving_nodes_stay_decommissioning_with_the_blocks_that_hold_them() {
        // Two of three nodes excluded, a block wanting two replicas: one node in service
        // cannot take both, so neither leaving node may finish.
        let mut m = mgr(3);
        with_space(&mut m);
        let b = Expected {
            gs: 5,
            len: 10,
            complete: true,
        };
        m.add_replica(1, 0, 0, true, 10);
        m.add_replica(1, 1, 0, true, 10);
        for n in [0, 1] {
            m.reg.get_mut(n).admin = AdminState::Decommissioning;
        }
        for round in 0..3 {
            m.begin_scan(usize::MAX);
            let d = m.check_replication(1, &Want::any(2), &b, &ctx(round * 100_000));
            if round == 0 {
                assert!(matches!(d, Decision::Replicate { targets: 1, .. }), "{d:?}");
                m.add_replica(1, 2, 0, true, 10);
            }
            assert!(m.end_scan().is_empty());
        }
        assert_eq!(m.reg.get(0).admin, AdminState::Decommissioning);
        assert_eq!(m.reg.get(0).leaving_blocks, 1);
        assert_eq!(m.reg.get(1).leaving_blocks, 1);
    }

    #[test]
    fn maintenance_keeps_replicas_down_to_the_minimum_and_copies_below_it() {
        let mut m = mgr(4);
        with_space(&mut m);
        let b = Expected {
            gs: 5,
            len: 10,
            complete: true,
        };
        for n in 0..3 {
            m.add_replica(1, n, 0, true, 10);
        }
        m.add_replica(2, 0, 0, true, 10);
        m.add_replica(2, 1, 0, true, 10);
        let until_ms = 1_000_000;
        m.reg.get_mut(0).admin = AdminState::EnteringMaintenance { until_ms };
        m.reg.get_mut(1).admin = AdminState::EnteringMaintenance { until_ms };
        m.begin_scan(usize::MAX);
        // Block 1 keeps one copy in service (node 2): the minimum of one, nothing to do.
        assert_eq!(
            m.check_replication(1, &Want::any(3), &b, &ctx(0)),
            Decision::Fine
        );
        // Block 2 would have none in service: one copy is made.
        assert!(matches!(
            m.check_replication(2, &Want::any(2), &b, &ctx(0)),
            Decision::Replicate { targets: 1, .. }
        ));
        assert!(m.end_scan().is_empty());
        m.add_replica(2, 3, 0, true, 10);
        m.begin_scan(usize::MAX);
        for id in [1, 2] {
            let want = if id == 1 { 3 } else { 2 };
            assert_eq!(
                m.check_replication(id, &Want::any(want), &b, &ctx(1)),
                Decision::Fine
            );
        }
        let mut done = m.end_scan();
        done.sort();
        assert_eq!(done, vec![0, 1]);
        assert_eq!(m.reg.get(0).admin, AdminState::InMaintenance { until_ms });
        // In maintenance and gone: its replicas still count, so nothing is copied.
        m.reg.get_mut(0).dead = true;
        assert_eq!(
            m.check_replication(1, &Want::any(3), &b, &ctx(2)),
            Decision::Fine
        );
    }

    #[test]
    fn copies_wait_for_a_free_stream_and_the_scans_budget() {
        let mut m = mgr(3);
        with_space(&mut m);
        let b = Expected {
            gs: 5,
            len: 10,
            complete: true,
        };
        for id in 1..=3 {
            m.add_replica(id, 0, 0, true, 10);
        }
        m.begin_scan(usize::MAX);
        // max_streams 2: the third block waits for node 0's queue.
        let decisions: Vec<_> = (1..=3)
            .map(|id| m.check_replication(id, &Want::any(2), &b, &ctx(0)))
            .collect();
        assert!(matches!(decisions[1], Decision::Replicate { .. }));
        assert_eq!(decisions[2], Decision::Waiting);
        m.end_scan();
        m.reg.get_mut(0).transfers.clear();
        m.begin_scan(0);
        assert_eq!(
            m.check_replication(3, &Want::any(2), &b, &ctx(0)),
            Decision::Waiting,
            "no budget left in this scan"
        );
    }

    #[test]
    fn the_policy_decides_which_copy_is_surplus_and_where_a_new_one_goes() {
        let mut m = mgr(4);
        with_space(&mut m);
        // Node 3 has an SSD as well, and the least room: fullness alone would pick it.
        m.reg.get_mut(3).storages.push(registry::StorageState {
            storage_type: 2,
            uuid: "ssd3".into(),
            failed: false,
            capacity: 1 << 40,
            dfs_used: 0,
            remaining: 1 << 30,
        });
        let b = Expected {
            gs: 5,
            len: 10,
            complete: true,
        };
        let one_ssd = Want {
            replicas: 3,
            types: &[2, 1, 1],
            fallbacks: &[2, 1],
        };
        for n in 0..3 {
            m.add_replica(1, n, 0, true, 10);
        }
        m.add_replica(1, 3, 1, true, 10);
        // Four copies, one on SSD: a DISK copy goes (the fullest of them), the SSD one stays.
        assert_eq!(
            m.check_replication(1, &one_ssd, &b, &ctx(0)),
            Decision::Excess(vec![0])
        );
        // The SSD copy lost, two DISK copies left of ONE_SSD's three: the new copy goes
        // onto an SSD, not merely onto the node with the most room.
        m.remove_replica(1, 3);
        assert!(matches!(
            m.check_replication(1, &one_ssd, &b, &ctx(0)),
            Decision::Replicate { targets: 1, .. }
        ));
        let t = m
            .reg
            .get_mut(1)
            .transfers
            .pop()
            .or_else(|| m.reg.get_mut(2).transfers.pop());
        let (node, storage) = t.unwrap().targets[0];
        assert_eq!(
            (node, m.reg.get(node).storage_type(storage)),
            (3, 2),
            "the SSD"
        );
    }

    #[test]
    fn a_scan_counts_short_missing_and_corrupt_blocks() {
        let mut m = mgr(4);
        with_space(&mut m);
        let b = Expected {
            gs: 5,
            len: 10,
            complete: true,
        };
        m.add_replica(1, 0, 0, true, 10); // one of three: short
        m.add_replica(2, 1, 0, true, 10);
        m.add_replica(2, 2, 0, true, 10);
        m.mark_corrupt(2, 2); // one good of two, one corrupt
        m.add_replica(3, 3, 0, true, 10);
        m.mark_corrupt(3, 3); // nothing good: missing
        m.begin_scan(usize::MAX);
        m.check_replication(1, &Want::any(3), &b, &ctx(0));
        m.check_replication(2, &Want::any(2), &b, &ctx(0));
        m.check_replication(3, &Want::any(1), &b, &ctx(0));
        m.check_replication(4, &Want::any(1), &b, &ctx(0)); // never reported
        assert_eq!(
            m.tally,
            Tally::default(),
            "published only when the scan ends"
        );
        m.end_scan();
        assert_eq!(
            m.tally,
            Tally {
                under_replicated: 2,
                last_replica: 2,
                missing: 2,
                corrupt: 2,
            }
        );
        m.begin_scan(usize::MAX);
        m.end_scan();
        assert_eq!(m.tally, Tally::default());
        // Each node's count is of its finished replicas.
        m.add_replica(9, 0, 0, false, 1);
        let counts: Vec<u64> = (0..4).map(|n| m.reg.get(n).blocks).collect();
        assert_eq!(counts, [1, 1, 1, 1]);
        m.add_replica(9, 0, 0, true, 1);
        assert_eq!(m.reg.get(0).blocks, 2);
        m.reopen(9);
        assert_eq!(m.reg.get(0).blocks, 1);
        m.remove_replica(9, 0);
        m.invalidate(2, 2, 5);
        m.blocks_removed(&[(1, 5)]);
        let counts: Vec<u64> = (0..4).map(|n| m.reg.get(n).blocks).collect();
        assert_eq!(counts, [0, 1, 0, 1]);
    }

    #[test]
    fn corrupt_copies_go_once_good_ones_suffice() {
        let mut m = mgr(4);
        with_space(&mut m);
        let b = Expected {
            gs: 5,
            len: 10,
            complete: true,
        };
        for n in 0..3 {
            m.add_replica(2, n, 0, true, 10);
        }
        m.mark_corrupt(2, 0);
        // A fresh copy goes to the free node; the corrupt one stays until it exists.
        assert!(matches!(
            m.check_replication(2, &Want::any(3), &b, &ctx(0)),
            Decision::Replicate { targets: 1, .. }
        ));
        assert!(
            m.reg.get(0).invalidate.is_empty(),
            "kept while it is needed"
        );
        m.add_replica(2, 3, 0, true, 10);
        assert_eq!(
            m.check_replication(2, &Want::any(3), &b, &ctx(0)),
            Decision::Fine
        );
        assert_eq!(m.reg.get(0).invalidate, vec![(2, 5)]);
    }

    #[test]
    fn a_corrupt_copy_on_the_only_free_node_makes_room_but_a_last_copy_stays() {
        let mut m = mgr(3);
        with_space(&mut m);
        let b = Expected {
            gs: 5,
            len: 10,
            complete: true,
        };
        for n in 0..3 {
            m.add_replica(2, n, 0, true, 10);
        }
        m.mark_corrupt(2, 0);
        assert_eq!(
            m.check_replication(2, &Want::any(3), &b, &ctx(0)),
            Decision::Waiting
        );
        assert_eq!(
            m.reg.get(0).invalidate,
            vec![(2, 5)],
            "node 0 is freed for a copy"
        );
        // The only copy, even if corrupt, is never deleted.
        m.add_replica(9, 1, 0, true, 10);
        m.mark_corrupt(9, 1);
        assert_eq!(
            m.check_replication(9, &Want::any(3), &b, &ctx(0)),
            Decision::Waiting
        );
        assert!(!m.reg.get(1).invalidate.contains(&(9, 5)));
    }

    #[test]
    fn removed_blocks_are_sent_to_every_holder_and_dead_nodes_drop_out() {
        let mut m = mgr(3);
        for n in 0..3 {
            m.add_replica(7, n, 0, true, 64);
        }
        m.add_replica(8, 2, 0, false, 0);
        assert_eq!(m.safe_blocks(), 1);
        m.node_lost(2);
        assert_eq!(m.finalized_replicas(7), 2);
        assert_eq!(
            m.places(8),
            vec![(2, 0)],
            "the block it was writing keeps it"
        );
        m.blocks_removed(&[(7, 1001)]);
        assert_eq!(m.safe_blocks(), 0);
        assert_eq!(m.reg.get(0).invalidate, vec![(7, 1001)]);
        assert_eq!(m.reg.get(1).invalidate, vec![(7, 1001)]);
    }
}
