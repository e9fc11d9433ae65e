//! The storage policy satisfier through the service: `satisfyStoragePolicy` marks a path
//! (journaled) and queues it; a periodic pass looks at each queued path's blocks against
//! its policy and orders the moves they need (`blocks::storage_moves` decides where, the
//! `satisfier` bookkeeping decides when); the mover sends them as REPLACE_BLOCK, as HDFS's
//! external satisfier does. Done or given-up paths lose their mark.

use ferrite_blocktoken::Modes;
use tracing::{info, warn};

use super::locations::DatanodeInfo;
use super::{Admitted, NameNodeService, Operation};
use crate::blocks::registry::NodeIx;
use crate::blocks::storage_moves::{plan_moves, Move, MoveCtx};
use crate::blocks::BlockManager;
use crate::clock::now_ms;
use crate::error::FsError;
use crate::mover::{MoveFailed, MoveOrder};
use crate::namespace::inode::{Block, Body, Slot};
use crate::namespace::Namespace;
use crate::satisfier::Verdict;

/// How long a move may take before the satisfier stops waiting for its answer.
const MOVE_DEADLINE_MS: i64 = 10 * 60_000;

/// A path the pass is finished with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finished {
    pub id: u64,
    pub satisfied: bool,
}

const DISABLED: &str = "Cannot request to satisfy storage policy when storage policy satisfier \
feature has been disabled by admin. Seek for an admin help to enable it or use Mover tool.";

impl NameNodeService {
    /// `satisfyStoragePolicy`.
    pub async fn satisfy_storage_policy(&self, who: &Admitted, src: &str) -> Result<(), FsError> {
        let user = who.user_for(Operation::SatisfyStoragePolicy);
        let sps = self.cfg.satisfier;
        if !sps.enabled {
            return Err(FsError::UnsupportedAction(DISABLED.into()));
        }
        if self.satisfier.lock().pending_paths() >= sps.max_paths {
            return Err(FsError::Io(format!(
                "Outstanding satisfier queue limit: {} exceeded, try later!",
                sps.max_paths
            )));
        }
        let caller = self.caller(user);
        let enabled = self.cfg.storage_policy_enabled;
        let queued = self
            .commit(|ns| {
                let src = ns.resolve_reserved(src)?;
                ns.plan_satisfy_storage_policy(&caller, &src, enabled)
            })
            .await?;
        if let Some(id) = queued {
            self.satisfier.lock().add(id);
        }
        Ok(())
    }

    /// Queues every path still marked (a restart, or a journal replayed): HDFS's satisfier
    /// picks its pending paths up the same way.
    pub fn requeue_satisfier(&self) {
        let marks = self.ns.read().satisfier_marks();
        if marks.is_empty() {
            return;
        }
        info!(
            paths = marks.len(),
            "storage policy satisfaction still pending"
        );
        let mut s = self.satisfier.lock();
        for id in marks {
            s.add(id);
        }
    }

    /// One look at every queued path: the moves to send now, and the paths finished with.
    pub fn satisfier_pass(&self) -> (Vec<MoveOrder>, Vec<Finished>) {
        let now = now_ms();
        let ns = self.ns.read();
        let mgr = self.blocks.lock();
        let mut sat = self.satisfier.lock();
        sat.expire(now);
        let ctx = MoveCtx {
            now_ms: now,
            stale_ms: self.cfg.stale_interval_ms,
            dead_ms: self.cfg.dead_interval_ms(),
            seed: now as u64,
        };
        let (mut orders, mut finished) = (Vec::new(), Vec::new());
        for path in sat.paths() {
            let Some(top) = ns.slot_of_id(path) else {
                sat.remove(path); // deleted: nothing to satisfy, no mark to remove
                continue;
            };
            let needs = block_moves(&ns, &mgr, top, &ctx);
            let satisfied = needs.iter().all(|(_, p)| p.satisfied());
            match sat.verdict(path, satisfied, self.cfg.satisfier.max_rounds) {
                Verdict::Busy => {}
                Verdict::Done => finished.push(Finished {
                    id: path,
                    satisfied: true,
                }),
                Verdict::GiveUp => {
                    warn!(
                        path = %ns.path_of(top),
                        "storage policy not satisfied after every attempt; giving up"
                    );
                    finished.push(Finished {
                        id: path,
                        satisfied: false,
                    })
                }
                Verdict::Plan(round) => {
                    let before = orders.len();
                    for (block, plan) in &needs {
                        for m in &plan.moves {
                            orders.push(self.order(&mgr, *block, m));
                        }
                        if !plan.moves.is_empty() {
                            sat.started(block.id, path, now + MOVE_DEADLINE_MS);
                        }
                    }
                    info!(
                        path = %ns.path_of(top),
                        round,
                        moves = orders.len() - before,
                        "moving replicas to satisfy the storage policy"
                    );
                }
            }
        }
        (orders, finished)
    }

    fn order(&self, mgr: &BlockManager, block: Block, m: &Move) -> MoveOrder {
        let node = |ix: NodeIx| DatanodeInfo::of(mgr.reg.get(ix));
        let target = mgr.reg.get(m.target.node);
        MoveOrder {
            block,
            pool: self.identity.block_pool_id.clone(),
            token: self.tokens.for_block(
                &self.superuser,
                &self.identity.block_pool_id,
                Modes::REPLACE.with(Modes::COPY),
                block.id,
            ),
            storage_type: target.storage_type(m.target.storage),
            target: node(m.target.node),
            source: node(m.source),
        }
    }

    /// The answer to a move came (or the mover gave up on it).
    pub fn move_finished(&self, block: u64, result: Result<(), MoveFailed>) {
        if let Err(e) = result {
            warn!(block, error = %e, "replica move failed");
        }
        self.satisfier.lock().finished(block);
    }

    /// Takes the satisfier's mark off finished paths, and forgets them.
    pub async fn satisfier_finish(&self, done: &[Finished]) {
        for f in done {
            let unmarked = self
                .commit(|ns| Ok(((), ns.plan_unmark_satisfied(f.id))))
                .await;
            if let Err(e) = unmarked {
                // Kept queued: the next pass finds it finished again and retries.
                warn!(id = f.id, error = %e, "could not remove the satisfier's mark");
                continue;
            }
            self.satisfier.lock().remove(f.id);
        }
    }
}

/// Every complete block of the files at or under `top`, with the moves it needs.
fn block_moves(
    ns: &Namespace,
    mgr: &BlockManager,
    top: Slot,
    ctx: &MoveCtx,
) -> Vec<(Block, crate::blocks::storage_moves::MovePlan)> {
    let mut out = Vec::new();
    let mut stack = vec![top];
    while let Some(s) = stack.pop() {
        let inode = ns.inode(s);
        let f = match &inode.body {
            Body::Dir(c) => {
                stack.extend(c.slots());
                continue;
            }
            Body::File(f) => f,
        };
        let policy = ns.effective_storage_policy(s);
        let types = policy.choose(inode.replication);
        let blocks = f.blocks();
        // A file being written moves once it is closed, as in HDFS: only its finished blocks.
        let complete = if f.uc().is_some() {
            blocks.len().saturating_sub(1)
        } else {
            blocks.len()
        };
        for b in &blocks[..complete] {
            let good: Vec<(NodeIx, u8)> = mgr
                .entry(b.id)
                .map(|e| {
                    e.replicas
                        .iter()
                        .filter(|r| r.finalized && !r.corrupt)
                        .map(|r| (r.node, r.storage))
                        .collect()
                })
                .unwrap_or_default();
            out.push((*b, plan_moves(&mgr.reg, &good, &types, b.len, ctx)));
        }
    }
    out
}
