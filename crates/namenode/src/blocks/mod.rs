//! Block management on the NameNode: which DataNodes hold which replicas, what they must
//! delete, and how many blocks are safely reported (for start-up safe mode).
//!
//! The namespace says which blocks exist and how long they are; this module holds only
//! what DataNodes report, which is volatile and rebuilt from block reports after a
//! restart. Callers take the namespace lock first and this one second.

pub mod placement;
pub mod registry;
pub mod report;

use std::collections::HashMap;

use smallvec::SmallVec;

use registry::{NodeIx, Registry};
use report::{ReplicaState, Reported};

/// One replica: where it is, whether it is finished, and whether a reader found it
/// corrupt (kept, unread, while it is the only copy). Six bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replica {
    pub node: NodeIx,
    pub storage: u8,
    pub finalized: bool,
    pub corrupt: bool,
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
    if r.gs != e.gs {
        return false;
    }
    !(e.complete && r.state == ReplicaState::Finalized && r.len != e.len)
}

#[derive(Default)]
pub struct BlockManager {
    pub reg: Registry,
    entries: HashMap<u64, Entry>,
    /// Blocks with at least one finalized replica.
    safe: usize,
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
        match e.replicas.iter_mut().find(|r| r.node == node) {
            Some(r) => {
                r.storage = storage;
                r.finalized |= finalized;
            }
            None => e.replicas.push(Replica {
                node,
                storage,
                finalized,
                corrupt: false,
            }),
        }
        if finalized {
            e.reported_len = e.reported_len.max(len);
        }
        if !was_safe && finalized {
            self.safe += 1;
        }
    }

    /// Forgets the replica of `id` on `node`, if there is one.
    pub fn remove_replica(&mut self, id: u64, node: NodeIx) {
        let Some(e) = self.entries.get_mut(&id) else {
            return;
        };
        let was_safe = e.replicas.iter().any(|r| r.finalized);
        e.replicas.retain(|r| r.node != node);
        let is_safe = e.replicas.iter().any(|r| r.finalized);
        if was_safe && !is_safe {
            self.safe -= 1;
        }
        if e.replicas.is_empty() {
            self.entries.remove(&id);
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
            let Some(e) = self.entries.remove(&id) else {
                continue;
            };
            if e.replicas.iter().any(|r| r.finalized) {
                self.safe -= 1;
            }
            for r in e.replicas {
                self.reg.get_mut(r.node).invalidate.push((id, gs));
            }
        }
    }

    /// A node declared dead: its replicas no longer count anywhere.
    pub fn node_lost(&mut self, node: NodeIx) {
        let ids: Vec<u64> = self
            .entries
            .iter()
            .filter(|(_, e)| e.replicas.iter().any(|r| r.node == node))
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            self.remove_replica(id, node);
        }
        self.reg.get_mut(node).invalidate.clear();
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
        match expect(r.id) {
            Some(e) if replica_matches(r, &e) => {
                self.add_replica(
                    r.id,
                    node,
                    storage,
                    r.state == ReplicaState::Finalized,
                    r.len,
                );
                out.accepted += 1;
            }
            _ => {
                self.invalidate(node, r.id, r.gs);
                out.invalidated += 1;
            }
        }
    }

    pub fn block_entries(&self) -> usize {
        self.entries.len()
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
    fn removed_blocks_are_sent_to_every_holder_and_dead_nodes_drop_out() {
        let mut m = mgr(3);
        for n in 0..3 {
            m.add_replica(7, n, 0, true, 64);
        }
        m.add_replica(8, 2, 0, false, 0);
        assert_eq!(m.safe_blocks(), 1);
        m.node_lost(2);
        assert_eq!(m.finalized_replicas(7), 2);
        assert!(m.entry(8).is_none());
        m.blocks_removed(&[(7, 1001)]);
        assert_eq!(m.safe_blocks(), 0);
        assert_eq!(m.reg.get(0).invalidate, vec![(7, 1001)]);
        assert_eq!(m.reg.get(1).invalidate, vec![(7, 1001)]);
    }
}
