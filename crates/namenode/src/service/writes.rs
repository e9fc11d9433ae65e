//! Writing files: blocks allocated and completed, pipelines recovered, and the calls that
//! change an existing file's blocks (append, truncate, concat). The namespace plans the
//! journaled part; the block map supplies and checks replica locations.
//!
//! append and truncate settle a file still held by another writer first: HDFS recovers a
//! lease whose holder has not renewed within the soft limit, and answers
//! RecoveryInProgressException meanwhile.

use std::collections::HashSet;

use ferrite_blocktoken::Modes;

use super::lease_recovery::Outcome;
use super::locations::LocatedBlock;
use super::{Admitted, NameNodeService, Operation};
use crate::blocks::placement::{choose_targets, PlacementRequest};
use crate::blocks::registry::{Liveness, NodeIx};
use crate::clock::now_ms;
use crate::error::{Conflict, FsError, HeldBy};
use crate::namespace::blocks::{NewBlock, Placed, Previous};
use crate::namespace::inode::Block;
use crate::namespace::query::FileStatus;

/// A writer that has not renewed for this long may lose its lease to another client
/// (HDFS's soft limit, fixed at one minute).
const LEASE_SOFT_LIMIT_MS: i64 = 60_000;

/// What addBlock asks for.
#[derive(Debug)]
pub struct AddBlock<'a> {
    pub src: &'a str,
    pub client_name: &'a str,
    pub file_id: u64,
    /// The block the writer finished, with its length.
    pub previous: Option<Previous>,
    /// DataNodes (`ip:xferPort`) the writer could not reach.
    pub excluded: HashSet<String>,
}

/// What getAdditionalDatanode asks for.
#[derive(Debug)]
pub struct AdditionalDatanodes<'a> {
    pub src: &'a str,
    pub client_name: &'a str,
    pub file_id: u64,
    pub block: Block,
    /// The pipeline's nodes as (uuid, storage uuid).
    pub existing: &'a [(&'a str, &'a str)],
    /// DataNodes (`ip:xferPort`) the writer could not reach.
    pub excluded: &'a HashSet<String>,
    pub wanted: usize,
}

/// append's answer: the reopened last block with its replicas (none when the file ended
/// on a block boundary or NEW_BLOCK was asked), and the file's status.
#[derive(Debug)]
pub struct Appended {
    pub block: Option<LocatedBlock>,
    pub status: Option<FileStatus>,
}

impl NameNodeService {
    /// DataNodes not declared dead by `now`.
    pub(super) fn live_datanodes(
        &self,
        reg: &crate::blocks::registry::Registry,
        now: i64,
    ) -> usize {
        reg.iter()
            .filter(|(_, n)| {
                n.liveness(now, u64::MAX, self.cfg.dead_interval_ms()) != Liveness::Dead
            })
            .count()
    }

    /// addBlock: the next block of a file being written, with the DataNodes of its
    /// pipeline and a WRITE token.
    pub async fn add_block(
        &self,
        who: &Admitted,
        req: &AddBlock<'_>,
    ) -> Result<LocatedBlock, FsError> {
        let min = self.cfg.min_replication as usize;
        let pool = &self.identity.block_pool_id;
        self.commit(|ns| {
            // The lease first (the plan checks it), then the previous block, as HDFS.
            let (nb, planned) =
                ns.plan_add_block(req.src, req.client_name, req.file_id, req.previous)?;
            let mgr = self.blocks.lock();
            if let Some(p) = req.previous {
                if mgr.finalized_replicas(p.id) < min {
                    return Err(FsError::NotReplicatedYet(format!(
                        "Not replicated yet: {}",
                        req.src
                    )));
                }
            }
            // The plan found the file; only a retried addBlock (no record) walks again.
            let slot = match planned.first_at.slot {
                Some(slot) => slot,
                None => ns.existing(req.src)?,
            };
            let inode = ns.inode(slot);
            let now = now_ms();
            // The storage types the file's policy (its own or inherited; HOT if none)
            // asks for.
            let policy = crate::namespace::storage_policy::by_id(ns.storage_policy_of(slot))
                .or_else(|| {
                    crate::namespace::storage_policy::by_id(crate::namespace::storage_policy::DEFAULT)
                })
                .expect("HOT is in the suite");
            let types = policy.choose(inode.replication);
            let fallbacks = policy.creation_fallback_ids();
            let targets = choose_targets(
                &mgr.reg,
                &PlacementRequest {
                    storage_types: &types,
                    fallbacks: &fallbacks,
                    replicas: inode.replication as usize,
                    block_size: inode.file().map(|f| f.block_size).unwrap_or(0),
                    writer_ip: who.ip(),
                    excluded: &req.excluded,
                    existing: &[],
                    now_ms: now,
                    stale_ms: self.cfg.stale_interval_ms,
                    dead_ms: self.cfg.dead_interval_ms(),
                    seed: self.seed(),
                },
            );
            if targets.len() < min.max(1) {
                return Err(FsError::Io(format!(
                    "File {} could only be written to {} of the {min} minReplication nodes. There are {} datanode(s) running and {} node(s) are excluded in this operation.",
                    req.src,
                    targets.len(),
                    self.live_datanodes(&mgr.reg, now),
                    req.excluded.len()
                )));
            }
            let placed = match nb {
                NewBlock::Fresh(p) | NewBlock::Retry(p) => p,
            };
            let locs: Vec<_> = targets.iter().map(|t| (t.node, t.storage)).collect();
            let mut lb = LocatedBlock::new(&placed, &mgr.reg, &locs);
            lb.token = self
                .tokens
                .for_block(who.user(), pool, Modes::WRITE, placed.block.id);
            Ok(((lb, locs), planned))
        })
        .await
        .map(|(lb, locs)| {
            self.expect_replicas(lb.block.id, &locs);
            lb
        })
    }

    /// A new block's pipeline, as replicas being written (HDFS's expected locations):
    /// a reader of what the writer hflushed finds them before their DataNodes' reports
    /// arrive, and lease recovery has them should the reports never come.
    fn expect_replicas(&self, id: u64, locs: &[(NodeIx, u8)]) {
        let mut mgr = self.blocks.lock();
        for &(node, storage) in locs {
            if mgr
                .entry(id)
                .is_none_or(|e| e.replicas.iter().all(|r| r.node != node))
            {
                mgr.add_replica(id, node, storage, false, 0);
            }
        }
    }

    /// Pipeline recovery, step 1: a new generation stamp for the block being written.
    pub async fn update_block_for_pipeline(
        &self,
        who: &Admitted,
        block: Block,
        client_name: &str,
    ) -> Result<LocatedBlock, FsError> {
        let user = who.user_for(Operation::UpdateBlockForPipeline);
        let pool = &self.identity.block_pool_id;
        let placed = self
            .commit(|ns| ns.plan_bump_gs(pool, block, client_name))
            .await?;
        let mut lb = LocatedBlock::new(&placed, &self.blocks.lock().reg, &[]);
        lb.token = self
            .tokens
            .for_block(user, pool, Modes::WRITE, placed.block.id);
        Ok(lb)
    }

    /// Pipeline recovery, last step: the client names the nodes (by uuid) that carry on.
    /// Replicas on nodes that dropped out are forgotten (they are stale; their reports are
    /// refused).
    pub async fn update_pipeline(
        &self,
        who: &Admitted,
        client_name: &str,
        old_block: Block,
        new_block: Block,
        new_nodes: &[&str],
    ) -> Result<(), FsError> {
        who.check(Operation::UpdatePipeline);
        if new_block.id != old_block.id {
            return Err(FsError::Io(format!(
                "updatePipeline: blk_{} cannot become blk_{}",
                old_block.id, new_block.id
            )));
        }
        let pool = &self.identity.block_pool_id;
        self.commit(|ns| ns.plan_update_pipeline(pool, client_name, old_block, new_block.gs))
            .await?;
        let mut mgr = self.blocks.lock();
        let keep: Vec<_> = new_nodes
            .iter()
            .filter_map(|uuid| mgr.reg.lookup(uuid))
            .collect();
        for n in mgr.holders_except(new_block.id, &keep) {
            mgr.remove_replica(new_block.id, n);
        }
        Ok(())
    }

    /// getAdditionalDatanode: more targets for a pipeline that lost nodes (the client then
    /// copies the block there), for the writer that holds the file's lease. The token is
    /// COPY's: the client hands it to an existing node, which copies the replica to the
    /// new ones.
    pub fn additional_datanodes(
        &self,
        who: &Admitted,
        req: &AdditionalDatanodes<'_>,
    ) -> Result<LocatedBlock, FsError> {
        let ns = self.ns.read();
        let slot = ns.check_lease(req.src, req.client_name, req.file_id)?.slot;
        let block_size = ns.inode(slot).file().map(|f| f.block_size).unwrap_or(0);
        let offset = ns.length_with_last(slot, 0);
        let (block, excluded, wanted) = (req.block, req.excluded, req.wanted);
        let mgr = self.blocks.lock();
        let mut locs: Vec<(NodeIx, u8)> = Vec::new();
        for &(uuid, storage) in req.existing {
            if let Some(ix) = mgr.reg.lookup(uuid) {
                let s = mgr
                    .reg
                    .get(ix)
                    .storages
                    .iter()
                    .position(|st| st.uuid == storage)
                    .unwrap_or(0);
                locs.push((ix, s as u8));
            }
        }
        let existing: Vec<NodeIx> = locs.iter().map(|l| l.0).collect();
        let more = choose_targets(
            &mgr.reg,
            &PlacementRequest {
                storage_types: &[],
                fallbacks: &[],
                replicas: wanted,
                block_size,
                writer_ip: who.ip(),
                excluded,
                existing: &existing,
                now_ms: now_ms(),
                stale_ms: self.cfg.stale_interval_ms,
                dead_ms: self.cfg.dead_interval_ms(),
                seed: self.seed(),
            },
        );
        // As HDFS: fewer (even no) new nodes is an answer, not an error; the client decides
        // whether it can go on with what it has.
        if more.is_empty() {
            tracing::warn!(
                block = block.id,
                src = req.src,
                "no additional DataNode available"
            );
        }
        locs.extend(more.iter().map(|t| (t.node, t.storage)));
        let placed = Placed { block, offset };
        let mut lb = LocatedBlock::new(&placed, &mgr.reg, &locs);
        let pool = &self.identity.block_pool_id;
        lb.token = self
            .tokens
            .for_block(who.user(), pool, Modes::COPY, block.id);
        Ok(lb)
    }

    pub async fn abandon_block(
        &self,
        who: &Admitted,
        src: &str,
        holder: &str,
        file_id: u64,
        block_id: u64,
    ) -> Result<(), FsError> {
        who.check(Operation::AbandonBlock);
        self.commit(|ns| ns.plan_abandon_block(src, holder, file_id, block_id))
            .await
    }

    /// complete: true once the file is closed; false while its last block still lacks
    /// `dfs.namenode.replication.min` finalized replicas (the client asks again).
    pub async fn complete(
        &self,
        who: &Admitted,
        src: &str,
        client_name: &str,
        file_id: u64,
        last: Option<Previous>,
    ) -> Result<bool, FsError> {
        who.check(Operation::Complete);
        let now = now_ms();
        let min = self.cfg.min_replication as usize;
        self.commit(|ns| {
            ns.plan_complete(src, client_name, file_id, last, now, |id| {
                self.blocks.lock().finalized_replicas(id) >= min
            })
        })
        .await
    }

    /// append: the file's lease goes to `client_name`; its last partial block is reopened
    /// on its replicas (or, with `new_block`, the next write starts a block of its own).
    pub async fn append(
        &self,
        who: &Admitted,
        src: &str,
        client_name: &str,
        new_block: bool,
    ) -> Result<Appended, FsError> {
        let caller = self.caller(who.user());
        self.take_over_if_abandoned("APPEND_FILE", who, src, client_name)
            .await?;
        let appended = self
            .commit(|ns| ns.plan_append(&caller, src, client_name, who.ip(), new_block))
            .await?;
        let status = {
            let ns = self.ns.read();
            ns.open_file_slot(appended.file_id)
                .map(|s| ns.status(s, false))
        };
        let block = appended.last.map(|last| {
            let mut mgr = self.blocks.lock();
            mgr.reopen(last.block.id);
            let locs = mgr.places(last.block.id);
            let mut lb = LocatedBlock::new(&last, &mgr.reg, &locs);
            let pool = &self.identity.block_pool_id;
            lb.token = self
                .tokens
                .for_block(who.user(), pool, Modes::WRITE, last.block.id);
            lb
        });
        Ok(Appended { block, status })
    }

    /// A file still open by another client whose lease has lapsed the soft limit, or whose
    /// last block is being recovered, answers RecoveryInProgressException (after starting
    /// the recovery), as HDFS does; the caller tries again once the file is closed. `op`
    /// names the call in the message, as HDFS's do (APPEND_FILE, TRUNCATE_FILE). As HDFS's,
    /// the words tell a lapsed lease ("lease recovery is in progress") from a live one
    /// whose last block another caller's recovery holds ("another recovery … by C on M").
    async fn take_over_if_abandoned(
        &self,
        op: &str,
        who: &Admitted,
        src: &str,
        client_name: &str,
    ) -> Result<(), FsError> {
        let (file_id, holder, holder_machine, last) = {
            let ns = self.ns.read();
            let Ok(slot) = ns.existing(src) else {
                return Ok(());
            };
            let Some(uc) = ns.inode(slot).file().and_then(|f| f.uc()) else {
                return Ok(());
            };
            if uc.client_name == client_name {
                return Ok(()); // the plan answers this one
            }
            let last = ns.last_block(slot).map(|b| b.id);
            let machine = uc.client_machine.clone();
            (ns.inode(slot).id, uc.client_name.clone(), machine, last)
        };
        let now = now_ms();
        let recovering = last.is_some_and(|id| {
            self.blocks
                .lock()
                .recoveries
                .in_progress(id, now, self.recovery_timeout_ms())
        });
        let lapsed = self
            .leases
            .lock()
            .renewed_ms(&holder)
            .is_none_or(|t| now - t > LEASE_SOFT_LIMIT_MS);
        if !recovering && !lapsed {
            return Ok(()); // still owned: the plan answers AlreadyBeingCreated
        }
        // As HDFS: a take-over by another writer leaves the lease where it is meanwhile.
        if !recovering && self.recover_file(file_id, None).await? == Outcome::Closed {
            return Ok(()); // closed at once: the call goes ahead
        }
        let held = if lapsed {
            HeldBy::Recovering
        } else {
            HeldBy::OtherRecovering {
                client: holder,
                machine: holder_machine,
            }
        };
        Err(FsError::LeaseConflict(Box::new(Conflict {
            op: op.to_string(),
            path: src.to_string(),
            client: client_name.to_string(),
            machine: who.ip().to_string(),
            held,
        })))
    }

    /// truncate: true when the file is ready at once (a cut on a block boundary), false
    /// while block recovery cuts the replicas of the block the new end falls in; the file
    /// closes when it has (`hdfs dfs -truncate -w` waits for that).
    pub async fn truncate(
        &self,
        who: &Admitted,
        src: &str,
        new_length: u64,
        client_name: &str,
    ) -> Result<bool, FsError> {
        if self.being_cut_to(src, new_length) {
            // A retry of the truncate under way, as HDFS answers it.
            return Ok(false);
        }
        let caller = self.caller(who.user());
        self.take_over_if_abandoned("TRUNCATE_FILE", who, src, client_name)
            .await?;
        let now = now_ms();
        let t = self
            .commit(|ns| ns.plan_truncate(&caller, src, new_length, client_name, who.ip(), now))
            .await?;
        let Some((block, _)) = t.recover else {
            return Ok(true);
        };
        // In place, the cut block's replicas are written again; a copy's new block has
        // none yet.
        self.blocks.lock().reopen(block);
        self.recover_file(t.file_id, None).await?;
        Ok(false)
    }

    /// Whether `src` is open because a truncate to `len` is being carried out.
    fn being_cut_to(&self, src: &str, len: u64) -> bool {
        let ns = self.ns.read();
        let Ok(slot) = ns.existing(src) else {
            return false;
        };
        let Some(f) = ns.inode(slot).file() else {
            return false;
        };
        let (Some(cut), Some(last)) = (f.uc().and_then(|uc| uc.cut), ns.last_block(slot)) else {
            return false;
        };
        // The file shows the cut block whole until recovery: it starts at len - last.len.
        f.len().saturating_sub(last.len) + cut.keep == len
    }

    /// concat: `srcs`' blocks move to the end of `trg`, and the sources are removed.
    pub async fn concat(&self, who: &Admitted, trg: &str, srcs: &[String]) -> Result<(), FsError> {
        let user = who.user_for(Operation::Concat);
        let caller = self.caller(user);
        let now = now_ms();
        self.commit_once(who, |ns| Ok(((), ns.plan_concat(&caller, trg, srcs, now)?)))
            .await?;
        // The moved blocks keep their replicas; the target's replication may differ from
        // a source's, which the replication monitor evens out.
        self.blocks.lock().needs_scan = true;
        Ok(())
    }
}
