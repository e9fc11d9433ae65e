//! Lease recovery with DataNode block recovery, as HDFS does it.
//!
//! A file whose writer is gone is closed at the length every good replica of its last
//! block holds, not at what the NameNode last heard: the bytes a writer hflushed were
//! acknowledged by every DataNode of its pipeline, and the NameNode never saw them. So the
//! NameNode reserves a new generation stamp (journaled), orders the primary DataNode to
//! recover the block (see `blocks::recovery`), and closes the file when the primary reports
//! back with `commitBlockSynchronization`. Only a last block no DataNode ever reported is
//! dropped, as HDFS drops one with no expected locations.

use tracing::{info, warn};

use super::{Admitted, NameNodeService, Operation};
use crate::blocks::recovery::Start;
use crate::blocks::registry::NodeIx;
use crate::clock::now_ms;
use crate::error::FsError;
use crate::namespace::inode::Slot;
use crate::namespace::{Namespace, Op};

/// The record that hands open file `slot`'s lease to `new_holder`, unless it holds it.
fn reassign(ns: &Namespace, slot: Slot, new_holder: Option<&str>) -> Option<Op> {
    let new_holder = new_holder?;
    let uc = ns.inode(slot).file()?.uc()?;
    (uc.client_name != new_holder).then(|| Op::ReassignLease {
        path: ns.path_of(slot),
        holder: uc.client_name.clone(),
        new_holder: new_holder.to_string(),
    })
}

/// What a lease recovery did for one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The file is closed (it was, or it could be closed at once).
    Closed,
    /// Block recovery is under way; the file closes when the primary reports back.
    InProgress,
}

/// The primary's report at the end of a block recovery.
#[derive(Debug)]
pub struct SyncReport {
    pub block_id: u64,
    pub old_gs: u64,
    pub recovery_id: u64,
    pub new_len: u64,
    pub close: bool,
    pub delete: bool,
    /// The DataNodes (uuid) and storages that now hold the recovered replica.
    pub holders: Vec<(String, String)>,
}

impl NameNodeService {
    /// How long a block recovery may take before it is started again.
    pub(crate) fn recovery_timeout_ms(&self) -> i64 {
        self.cfg.block_recovery_timeout_ms as i64
    }

    /// Whether a DataNode may hold replicas this NameNode has not heard of yet. A
    /// restarted NameNode knows a block being written only from reports, and a DataNode
    /// cut off from it (or restarting itself) reports late; until such a node would be
    /// declared dead, what is known of a block is not yet all there is.
    fn reports_may_be_missing(&self, now: i64) -> bool {
        now - self.started_ms < self.cfg.dead_interval_ms() as i64
    }

    /// Recovers the lease on open file `file_id`: closes it at once when its last block
    /// needs no agreement between DataNodes, otherwise starts block recovery (or starts
    /// it again when the one under way is overdue). A truncate's cut (kept with the open
    /// file, so a restart does not lose it) cuts or copies the last block.
    ///
    /// While the block is recovered the file's lease goes to `new_holder` when one is
    /// given, as HDFS's `internalReleaseLease` hands it to whoever asked (the client that
    /// called recoverLease, or the NameNode's own holder for an expired lease): the old
    /// writer's calls are refused from then on, not only once the file closes.
    pub async fn recover_file(
        &self,
        file_id: u64,
        new_holder: Option<&str>,
    ) -> Result<Outcome, FsError> {
        let now = now_ms();
        let outcome = self
            .commit(|ns| {
                let slot = ns.open_file_slot(file_id);
                let recovered = slot.and_then(|s| recovered_block(ns, s)).map(|b| b.id);
                // A recovery of a file closed or deleted meanwhile, or of a block that is
                // no longer its last, will never commit.
                self.blocks
                    .lock()
                    .recoveries
                    .forget_file_except(file_id, recovered);
                let Some(slot) = slot else {
                    return Ok((Outcome::Closed, Vec::new()));
                };
                let (outcome, mut ops) = self.plan_recovery(ns, slot, file_id, now)?;
                if outcome == Outcome::InProgress {
                    ops.extend(reassign(ns, slot, new_holder));
                }
                Ok((outcome, ops))
            })
            .await?;
        if outcome == Outcome::InProgress {
            // The order waits for the recovery id to be durable (`Recoveries::take_orders`):
            // it is now appended, so the last appended txid covers it.
            let txid = self.journal.as_ref().map_or(0, |j| j.last_appended());
            self.blocks
                .lock()
                .recoveries
                .set_txid_if_pending(file_id, txid);
        }
        Ok(outcome)
    }

    /// Under the writers' turn: the records (if any) that recover `slot`'s lease now.
    fn plan_recovery(
        &self,
        ns: &Namespace,
        slot: Slot,
        file_id: u64,
        now: i64,
    ) -> Result<(Outcome, Vec<Op>), FsError> {
        let path = ns.path_of(slot);
        let cut = ns
            .inode(slot)
            .file()
            .and_then(|f| f.uc())
            .and_then(|uc| uc.cut);
        let Some(last) = recovered_block(ns, slot) else {
            let close = Op::Close {
                path,
                mtime: now,
                len: ns.length_with_last(slot, 0),
            };
            return Ok((Outcome::Closed, vec![close]));
        };
        let mut mgr = self.blocks.lock();
        if mgr
            .recoveries
            .in_progress(last.id, now, self.recovery_timeout_ms())
        {
            return Ok((Outcome::InProgress, Vec::new()));
        }
        let replicas = mgr.places(last.id);
        let unheard = self.reports_may_be_missing(now);
        if replicas.is_empty() {
            mgr.recoveries.finish(last.id);
            if last.len > 0 || unheard {
                // Bytes an hsync recorded, or flushed to DataNodes that have not reported
                // since this NameNode started: wait for them rather than lose the bytes.
                warn!(%path, block = last.id, "lease recovery waits: no replica of the last block is known");
                return Ok((Outcome::InProgress, Vec::new()));
            }
            // No DataNode ever reported the block: nothing was written to it that anyone
            // acknowledged. Drop it, as HDFS drops a block with no expected locations.
            let ops = vec![
                Op::AbandonBlock {
                    path: path.clone(),
                    id: last.id,
                },
                // The earlier blocks' bytes: the dropped block held none anyone recorded.
                Op::Close {
                    path,
                    mtime: now,
                    len: ns.length_with_last(slot, 0),
                },
            ];
            return Ok((Outcome::Closed, ops));
        }
        if unheard && mgr.only_restarted_replicas(last.id) {
            // Each known replica may have lost flushed bytes in its node's restart; a node
            // that stayed up may still report the whole block.
            warn!(%path, block = last.id, "lease recovery waits: only replicas left unfinished by restarts are known");
            return Ok((Outcome::InProgress, Vec::new()));
        }
        let recovery_id = ns.next_gs();
        let start = Start {
            block_id: last.id,
            file_id,
            recovery_id,
            gs: last.gs,
            len: last.len,
            new_len: cut.map(|c| c.keep),
            copy_to: cut
                .and(ns.last_block(slot))
                .map(|b| b.id)
                .filter(|&id| id != last.id),
            // Set once the record is appended (see `recover_file`).
            txid: u64::MAX,
        };
        let dead_ms = self.cfg.dead_interval_ms();
        let m: &mut crate::blocks::BlockManager = &mut mgr;
        let started = m
            .recoveries
            .start(&m.reg, start, &replicas, now, dead_ms)
            .map(|r| r.primary);
        match started {
            Some(primary) => {
                let uuid = &m.reg.get(primary).id.uuid;
                info!(%path, block = last.id, recovery_id, primary = %uuid, "block recovery started");
                Ok((
                    Outcome::InProgress,
                    vec![Op::SetGenerationStamp { gs: recovery_id }],
                ))
            }
            None => {
                warn!(%path, block = last.id, "lease recovery waits: every replica of the last block is on a dead DataNode");
                Ok((Outcome::InProgress, Vec::new()))
            }
        }
    }

    /// Starts again every recovery that has not reported back in time.
    pub async fn retry_overdue_recoveries(&self) {
        let overdue = self
            .blocks
            .lock()
            .recoveries
            .overdue(now_ms(), self.recovery_timeout_ms());
        for (block, r) in overdue {
            warn!(
                block,
                recovery_id = r.recovery_id,
                primary = r.primary,
                "block recovery overdue; starting it again"
            );
            if let Err(e) = self.recover_file(r.file_id, None).await {
                warn!(block, error = %e, "block recovery could not be started again");
            }
        }
    }

    /// `commitBlockSynchronization`: the primary's outcome. The last block takes the
    /// recovery id and the agreed length, and the file is closed (when asked). A report for
    /// a recovery that is no longer the current one is refused, as HDFS refuses it; a
    /// repeated report of one already applied is accepted. The report names the block
    /// whose replicas were recovered; after a copy-on-truncate the file's last block is
    /// the copy.
    pub async fn commit_block_sync(&self, who: &Admitted, r: SyncReport) -> Result<(), FsError> {
        who.check(Operation::CommitBlockSynchronization);
        let now = now_ms();
        let copy_to = self
            .blocks
            .lock()
            .recoveries
            .get(r.block_id)
            .and_then(|x| x.copy_to);
        let target = copy_to.unwrap_or(r.block_id);
        let changed = self
            .commit_then(
                |ns| {
                    let slot = ns.block_file(target).ok_or_else(|| {
                        FsError::Io(format!("Block (={}) not found", r.block_id))
                    })?;
                    let last = ns.last_block(slot).filter(|b| b.id == target);
                    let open = ns.inode(slot).file().and_then(|f| f.uc()).is_some();
                    if !open || last.is_none() {
                        if last.is_some_and(|b| b.gs == r.recovery_id && b.len == r.new_len) {
                            return Ok(((), Vec::new()));
                        }
                        return Err(FsError::Io(format!(
                            "Unexpected block (={}) since the file (={}) is not under construction",
                            r.block_id,
                            ns.path_of(slot)
                        )));
                    }
                    let current = self.blocks.lock().recoveries.get(r.block_id).map(|x| x.recovery_id);
                    if current != Some(r.recovery_id) {
                        return Err(FsError::Io(format!(
                            "The recovery id {} does not match current recovery id {} for block blk_{}_{}",
                            r.recovery_id,
                            current.map_or("(none)".into(), |c| c.to_string()),
                            r.block_id,
                            r.old_gs
                        )));
                    }
                    Ok(((), sync_ops(ns, slot, target, &r, now)))
                },
                |_, ops| !ops.is_empty(),
            )
            .await?;
        let mut mgr = self.blocks.lock();
        mgr.recoveries.finish(r.block_id);
        if !changed || r.delete {
            return Ok(());
        }
        // The holders have the recovered replica (or the copy), finalized under the new
        // stamp. In place, the others keep the old stamp and are deleted; a copy's source
        // replicas stay as they are, the snapshots' block.
        let holders: Vec<(NodeIx, u8)> = r
            .holders
            .iter()
            .filter_map(|(uuid, storage)| {
                let ix = mgr.reg.lookup(uuid)?;
                Some((ix, mgr.reg.get_mut(ix).storage_ix(storage)))
            })
            .collect();
        if copy_to.is_none() {
            let keep: Vec<NodeIx> = holders.iter().map(|&(n, _)| n).collect();
            for n in mgr.holders_except(r.block_id, &keep) {
                mgr.invalidate(n, r.block_id, r.old_gs);
            }
        }
        for (ix, storage) in holders {
            mgr.add_replica(target, ix, storage, true, r.new_len);
        }
        mgr.needs_scan = true;
        info!(
            block = target,
            recovery_id = r.recovery_id,
            len = r.new_len,
            closed = r.close,
            "block recovery committed"
        );
        Ok(())
    }
}

/// The block whose replicas a recovery of open file `slot` works on: its last block, or
/// the block a copy-on-truncate copies from (the snapshots' now).
fn recovered_block(ns: &Namespace, slot: Slot) -> Option<crate::namespace::inode::Block> {
    let file = ns.inode(slot).file()?;
    let copied = file.uc().and_then(|uc| uc.cut).and_then(|c| c.copy_of);
    copied.or_else(|| ns.last_block(slot))
}

/// The records that apply a committed recovery to the open file at `slot`.
fn sync_ops(ns: &Namespace, slot: Slot, block_id: u64, r: &SyncReport, now: i64) -> Vec<Op> {
    let path = ns.path_of(slot);
    let mut ops = Vec::new();
    let len = if r.delete {
        ops.push(Op::AbandonBlock {
            path: path.clone(),
            id: block_id,
        });
        ns.length_with_last(slot, 0)
    } else {
        ops.push(Op::UpdateLastBlock {
            path: path.clone(),
            id: block_id,
            gs: r.recovery_id,
            len: r.new_len,
        });
        ns.length_with_last(slot, r.new_len)
    };
    if r.close {
        ops.push(Op::Close {
            path,
            mtime: now,
            len,
        });
    }
    ops
}
