//! Replica reports a standby NameNode cannot place yet (HDFS's `PendingDataNodeMessages`).
//! A standby's namespace trails the active's by the records not yet committed to it, so a
//! DataNode may report a replica of a block the standby has not heard of, or of another
//! generation stamp than it knows (see [`crate::unfit_on_standby`]). Such a report is kept, not answered with a deletion,
//! and tried again as the log catches up; when the node becomes active whatever is still
//! kept goes through the usual checks (and a replica that still fits nothing is deleted).

use std::collections::BTreeMap;

use crate::registry::NodeIx;
use crate::report::Reported;
use crate::{BlockManager, Expected, ReportOutcome};

/// One kept report: the node and storage it came from, and the replica.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kept {
    node: NodeIx,
    storage: u8,
    replica: Reported,
}

/// Kept reports by block id, retried in id order.
#[derive(Default)]
pub(crate) struct Postponed(BTreeMap<u64, Vec<Kept>>);

impl BlockManager {
    /// Keeps a replica the namespace has no place for yet. A later report from the same
    /// node of the same block replaces it.
    pub fn postpone(&mut self, node: NodeIx, storage: u8, replica: Reported) {
        let kept = self.postponed.0.entry(replica.id).or_default();
        kept.retain(|k| k.node != node);
        kept.push(Kept {
            node,
            storage,
            replica,
        });
    }

    /// Forgets a kept report (the node has since deleted the replica).
    pub fn forget_postponed(&mut self, id: u64, node: NodeIx) {
        if let Some(kept) = self.postponed.0.get_mut(&id) {
            kept.retain(|k| k.node != node);
            if kept.is_empty() {
                self.postponed.0.remove(&id);
            }
        }
    }

    /// How many replica reports are kept.
    pub fn postponed_count(&self) -> usize {
        self.postponed.0.values().map(Vec::len).sum()
    }

    /// Takes every kept report that now fits the namespace (`expect`); keeps the rest.
    /// Cheap when nothing is kept, as it is almost always.
    pub fn retry_postponed(&mut self, expect: &impl Fn(u64) -> Option<Expected>) -> usize {
        if self.postponed.0.is_empty() {
            return 0;
        }
        let mut out = ReportOutcome::default();
        let fitting: Vec<u64> = self
            .postponed
            .0
            .iter()
            .filter(|(_, kept)| {
                kept.iter()
                    .any(|k| !crate::unfit_on_standby(&k.replica, expect(k.replica.id).as_ref()))
            })
            .map(|(&id, _)| id)
            .collect();
        for id in fitting {
            let kept = self.postponed.0.remove(&id).unwrap_or_default();
            for k in kept {
                if crate::unfit_on_standby(&k.replica, expect(id).as_ref()) {
                    self.postpone(k.node, k.storage, k.replica);
                } else {
                    self.one_replica(k.node, k.storage, &k.replica, expect, &mut out);
                }
            }
        }
        out.accepted
    }

    /// Becoming active: every kept report goes through the usual checks, so a replica that
    /// still fits nothing is ordered deleted. A kept report from a node the block map
    /// already places a replica of that block on is older than the report that placed
    /// it (a replica's report of an earlier generation, arriving after the standby had
    /// applied the append or recovery that moved it on): it is dropped, as deleting on
    /// its say-so would make the map forget the good replica.
    pub fn release_postponed(
        &mut self,
        expect: &impl Fn(u64) -> Option<Expected>,
    ) -> ReportOutcome {
        let mut out = ReportOutcome::default();
        for (id, kept) in std::mem::take(&mut self.postponed.0) {
            for k in kept {
                if self.reg.get(k.node).dead || self.replica_mut(id, k.node).is_some() {
                    continue;
                }
                self.one_replica(k.node, k.storage, &k.replica, expect, &mut out);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::NodeId;
    use crate::report::ReplicaState;

    fn node(mgr: &mut BlockManager, n: u8) -> NodeIx {
        let id = NodeId {
            uuid: format!("dn{n}"),
            ip: format!("127.0.0.{n}"),
            host: "localhost".into(),
            xfer_port: 9866,
            info_port: 0,
            ipc_port: 0,
        };
        mgr.reg.register(id, 0).unwrap()
    }

    fn finalized(id: u64, gs: u64) -> Reported {
        Reported {
            id,
            len: 10,
            gs,
            state: ReplicaState::Finalized,
        }
    }

    /// A replica of a block the namespace has not heard of is kept, not deleted; it joins
    /// the block map once the block exists, and only what still fits nothing is ordered
    /// deleted when the node becomes active.
    #[test]
    fn kept_reports_join_when_their_block_appears_and_the_rest_are_deleted_on_taking_over() {
        let mut mgr = BlockManager::default();
        let a = node(&mut mgr, 1);
        mgr.postpone(a, 0, finalized(7, 1001));
        mgr.postpone(a, 0, finalized(8, 1001));
        mgr.postpone(a, 0, finalized(8, 1001)); // the same report again replaces it
        assert_eq!(mgr.postponed_count(), 2);

        let nothing = |_| None;
        assert_eq!(mgr.retry_postponed(&nothing), 0);
        assert_eq!(mgr.postponed_count(), 2);

        let block_7 = |id| {
            (id == 7).then_some(Expected {
                gs: 1001,
                len: 10,
                complete: true,
            })
        };
        assert_eq!(mgr.retry_postponed(&block_7), 1);
        assert_eq!(mgr.postponed_count(), 1);
        assert!(mgr.entry(7).is_some_and(|e| e.replicas.len() == 1));

        let out = mgr.release_postponed(&block_7);
        assert_eq!((out.accepted, out.invalidated), (0, 1));
        assert_eq!(mgr.postponed_count(), 0);
        assert_eq!(mgr.reg.get(a).invalidate, [(8, 1001)]);
    }

    /// A standby keeps a replica's report of an older generation (it had applied the
    /// append already); the replica's next report fits and is placed. Taking over, the
    /// old report must not cost the map that replica.
    #[test]
    fn a_kept_report_older_than_the_placed_replica_is_dropped_on_taking_over() {
        let mut mgr = BlockManager::default();
        let a = node(&mut mgr, 1);
        let appended = |id| {
            (id == 8).then_some(Expected {
                gs: 1002,
                len: 10,
                complete: true,
            })
        };
        mgr.postpone(a, 0, finalized(8, 1001));
        assert_eq!(mgr.retry_postponed(&appended), 0);
        let mut out = ReportOutcome::default();
        mgr.one_replica(a, 0, &finalized(8, 1002), &appended, &mut out);
        assert_eq!(out.accepted, 1);

        let out = mgr.release_postponed(&appended);
        assert_eq!((out.accepted, out.invalidated), (0, 0));
        assert!(mgr.entry(8).is_some_and(|e| e.replicas.len() == 1));
        assert!(mgr.reg.get(a).invalidate.is_empty());
    }

    /// A standby placed a replica at the block's stamp, then heard from another node of a
    /// newer stamp (a pipeline recovery that left the first node out) before the record
    /// of it arrived. When the record arrives the stale replica is forgotten and the kept
    /// one placed: the map never lists a node that lacks the block's current generation.
    #[test]
    fn a_new_stamp_forgets_the_replicas_of_the_old_and_places_the_kept_ones() {
        let mut mgr = BlockManager::default();
        let (left_out, carried_on) = (node(&mut mgr, 1), node(&mut mgr, 2));
        let stamp = |gs| {
            move |id| {
                (id == 8).then_some(Expected {
                    gs,
                    len: 10,
                    complete: false,
                })
            }
        };
        let old = stamp(1001);
        let newer = finalized(8, 1002);
        assert!(
            !crate::unfit(&newer, old(8).as_ref()),
            "an active places it"
        );
        assert!(
            crate::unfit_on_standby(&newer, old(8).as_ref()),
            "a standby keeps it"
        );

        let mut out = ReportOutcome::default();
        mgr.one_replica(left_out, 0, &finalized(8, 1001), &old, &mut out);
        mgr.postpone(carried_on, 0, newer);
        assert_eq!(mgr.retry_postponed(&old), 0);

        mgr.forget_replicas(8);
        assert_eq!(mgr.retry_postponed(&stamp(1002)), 1);
        assert_eq!(mgr.holders_except(8, &[]), [carried_on]);
    }

    #[test]
    fn a_deleted_replica_is_no_longer_kept() {
        let mut mgr = BlockManager::default();
        let a = node(&mut mgr, 1);
        mgr.postpone(a, 0, finalized(7, 1001));
        mgr.forget_postponed(7, a);
        assert_eq!(mgr.postponed_count(), 0);
    }
}
