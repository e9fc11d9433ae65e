//! Block recovery as the NameNode tracks it (pure; times passed in).
//!
//! When a file's writer is gone (recoverLease, the lease hard limit) or a truncate cuts
//! inside a block, the last block's replicas may disagree: each DataNode holds what it
//! received before the pipeline broke. The NameNode does not decide the length itself. It
//! picks a primary DataNode among the replicas and orders it (in a heartbeat reply) to
//! recover the block under a new generation stamp, the *recovery id*: the primary asks
//! every replica what it holds, cuts them all to the length every good one has, and
//! reports back with `commitBlockSynchronization`, which closes the file at that length.
//!
//! A recovery that does not report back in time (the primary died, a replica hung) is
//! started again with a new id and, where there is one, another primary. The ids only grow,
//! so a DataNode can always tell the newer of two recoveries of the same replica.

use std::collections::BTreeMap;

use super::registry::{Liveness, NodeIx, Registry};

/// A recovery under way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// The file whose last block this is (inode id).
    pub file_id: u64,
    /// The generation stamp the replicas take if this recovery commits.
    pub recovery_id: u64,
    /// The block as the namespace records it.
    pub gs: u64,
    pub len: u64,
    /// A truncate's new length of the block, or None to keep what the replicas agree on.
    pub new_len: Option<u64>,
    /// Copy-on-truncate: the file's new last block, which the replicas' first `new_len`
    /// bytes are copied into (the recovered block itself stays as it is).
    pub copy_to: Option<u64>,
    pub primary: NodeIx,
    /// The replicas asked to take part, the primary among them (with their storages).
    pub replicas: Vec<(NodeIx, u8)>,
    pub started_ms: i64,
    /// The journal transaction that reserved the recovery id: the order goes out only once
    /// it is durable, so a NameNode that restarts never hands the same id out again.
    pub txid: u64,
    /// Whether the primary has been sent its order.
    pub sent: bool,
}

/// Every recovery under way, by block id: ordered, so a primary's orders go out in the
/// same order on every run (the simulator replays a seed exactly).
#[derive(Debug, Default)]
pub struct Recoveries {
    by_block: BTreeMap<u64, Recovery>,
}

/// What a new recovery needs.
pub struct Start {
    pub block_id: u64,
    pub file_id: u64,
    pub recovery_id: u64,
    pub gs: u64,
    pub len: u64,
    pub new_len: Option<u64>,
    pub copy_to: Option<u64>,
    pub txid: u64,
}

impl Recoveries {
    pub fn get(&self, block_id: u64) -> Option<&Recovery> {
        self.by_block.get(&block_id)
    }

    /// Whether the recovery of `block_id` is under way and not yet overdue at `now_ms`.
    pub fn in_progress(&self, block_id: u64, now_ms: i64, timeout_ms: i64) -> bool {
        self.by_block
            .get(&block_id)
            .is_some_and(|r| now_ms - r.started_ms <= timeout_ms)
    }

    /// Recoveries started before `now_ms - timeout_ms` that have not reported back.
    pub fn overdue(&self, now_ms: i64, timeout_ms: i64) -> Vec<(u64, Recovery)> {
        self.by_block
            .iter()
            .filter(|(_, r)| now_ms - r.started_ms > timeout_ms)
            .map(|(&id, r)| (id, r.clone()))
            .collect()
    }

    /// Starts (or restarts) the recovery of a block held by `replicas`. The primary is the
    /// live replica that heartbeated last, passing over the one that led the previous
    /// attempt when another will do. None when no replica is on a live node.
    pub fn start(
        &mut self,
        reg: &Registry,
        s: Start,
        replicas: &[(NodeIx, u8)],
        now_ms: i64,
        dead_ms: u64,
    ) -> Option<&Recovery> {
        let live: Vec<(NodeIx, u8)> = replicas
            .iter()
            .copied()
            .filter(|&(n, _)| reg.get(n).liveness(now_ms, u64::MAX, dead_ms) != Liveness::Dead)
            .collect();
        let previous = self.by_block.get(&s.block_id).map(|r| r.primary);
        let primary = live
            .iter()
            .filter(|&&(n, _)| live.len() == 1 || Some(n) != previous)
            .max_by_key(|&&(n, _)| reg.get(n).last_heartbeat_ms)
            .map(|&(n, _)| n)?;
        let r = Recovery {
            file_id: s.file_id,
            recovery_id: s.recovery_id,
            gs: s.gs,
            len: s.len,
            new_len: s.new_len,
            copy_to: s.copy_to,
            primary,
            replicas: live,
            started_ms: now_ms,
            txid: s.txid,
            sent: false,
        };
        self.by_block.insert(s.block_id, r);
        self.by_block.get(&s.block_id)
    }

    /// The orders `node` should get now: recoveries it leads whose id is durable (journal
    /// synced up to `synced_txid`) and that it has not been sent yet.
    pub fn take_orders(&mut self, node: NodeIx, synced_txid: u64) -> Vec<(u64, Recovery)> {
        let mut out = Vec::new();
        for (&id, r) in self.by_block.iter_mut() {
            if r.primary == node && !r.sent && r.txid <= synced_txid {
                r.sent = true;
                out.push((id, r.clone()));
            }
        }
        out
    }

    /// Records the txid that reserved the ids of `file_id`'s recoveries just started.
    pub fn set_txid_if_pending(&mut self, file_id: u64, txid: u64) {
        for r in self.by_block.values_mut() {
            if r.file_id == file_id && r.txid == u64::MAX {
                r.txid = txid;
            }
        }
    }

    /// Forgets the recoveries of `file_id` other than that of block `keep` (the file was
    /// closed or deleted meanwhile, or its last block changed): nothing will commit them.
    pub fn forget_file_except(&mut self, file_id: u64, keep: Option<u64>) {
        self.by_block
            .retain(|&id, r| r.file_id != file_id || Some(id) == keep);
    }

    /// The recovery ended (committed, or its block left the namespace).
    pub fn finish(&mut self, block_id: u64) -> Option<Recovery> {
        self.by_block.remove(&block_id)
    }

    pub fn is_empty(&self) -> bool {
        self.by_block.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::NodeId;

    fn registry(n: usize) -> Registry {
        let mut reg = Registry::default();
        for i in 0..n {
            let id = NodeId {
                ip: "127.0.0.1".into(),
                host: "h".into(),
                uuid: format!("dn{i}"),
                xfer_port: 1000 + i as u32,
                info_port: 0,
                ipc_port: 0,
            };
            reg.register(id, 0).unwrap();
        }
        reg
    }

    fn start(id: u64, recovery_id: u64, txid: u64) -> Start {
        Start {
            block_id: id,
            file_id: 16400,
            recovery_id,
            gs: 1001,
            len: 0,
            new_len: None,
            copy_to: None,
            txid,
        }
    }

    #[test]
    fn the_primary_is_the_freshest_live_replica_and_another_one_on_a_retry() {
        let mut reg = registry(3);
        reg.get_mut(0).last_heartbeat_ms = 100;
        reg.get_mut(1).last_heartbeat_ms = 300;
        reg.get_mut(2).last_heartbeat_ms = 200;
        let all = [(0, 0), (1, 0), (2, 0)];
        let mut r = Recoveries::default();
        let dead_ms = 10_000;
        assert_eq!(
            r.start(&reg, start(7, 2000, 5), &all, 400, dead_ms)
                .unwrap()
                .primary,
            1
        );
        assert!(r.in_progress(7, 1_000, 30_000));
        assert!(r.overdue(1_000, 30_000).is_empty());
        assert_eq!(r.overdue(40_000, 30_000).len(), 1);
        // The retry passes over the last primary.
        let again = r
            .start(&reg, start(7, 2001, 6), &all, 400, dead_ms)
            .unwrap();
        assert_eq!((again.primary, again.recovery_id), (2, 2001));
        // A dead node is never chosen, nor asked to take part.
        reg.get_mut(2).dead = true;
        let third = r
            .start(&reg, start(7, 2002, 7), &all, 400, dead_ms)
            .unwrap();
        assert_eq!(third.primary, 1);
        assert_eq!(third.replicas, vec![(0, 0), (1, 0)]);
        // The only live replica leads again, even if it led before.
        let only = r
            .start(&reg, start(7, 2003, 8), &[(1, 0)], 400, dead_ms)
            .unwrap();
        assert_eq!(only.primary, 1);
        assert!(r
            .start(&reg, start(8, 2004, 9), &[(2, 0)], 400, dead_ms)
            .is_none());
    }

    #[test]
    fn orders_go_out_once_and_only_when_the_id_is_durable() {
        let reg = registry(2);
        let mut r = Recoveries::default();
        r.start(&reg, start(7, 2000, 5), &[(0, 0)], 0, 10_000);
        assert!(r.take_orders(0, 4).is_empty(), "id not yet synced");
        assert!(r.take_orders(1, 5).is_empty(), "not the primary");
        let sent = r.take_orders(0, 5);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].0, 7);
        assert!(r.take_orders(0, 9).is_empty(), "sent once");
        assert_eq!(r.finish(7).map(|x| x.recovery_id), Some(2000));
        assert!(r.is_empty());
        r.start(&reg, start(7, 2001, 5), &[(0, 0)], 0, 10_000);
        r.start(&reg, start(8, 2002, 5), &[(0, 0)], 0, 10_000);
        r.forget_file_except(16400, Some(8));
        assert!(r.get(7).is_none() && r.get(8).is_some());
        r.forget_file_except(16400, None);
        assert!(r.is_empty());
    }
}
