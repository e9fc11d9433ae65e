//! Replicas against their file's storage policy: which replicas sit on a storage type the
//! policy does not ask for, and where each should move (the storage policy satisfier's
//! decision, as HDFS's `StoragePolicySatisfier` makes it: the same node's storage of the
//! wanted type first, which costs no network, then another node's). Pure: the registry's
//! state and the clock come in.

use std::collections::HashSet;

use smallvec::SmallVec;

use super::placement::{self, PlacementRequest, Target};
use super::registry::{Liveness, NodeIx, Registry};

/// Which of a block's replicas fill a storage type the policy wants (`matched[i]` for
/// replica type `types[i]`), and the wanted types no replica fills. Each wanted type is
/// filled at most once, so two SSD replicas under ONE_SSD leave one unmatched.
pub fn match_types(types: &[u8], wanted: &[u8]) -> (SmallVec<[bool; 4]>, SmallVec<[u8; 4]>) {
    let mut missing: SmallVec<[u8; 4]> = wanted.iter().copied().collect();
    let matched = types
        .iter()
        .map(|t| match missing.iter().position(|m| m == t) {
            Some(i) => {
                missing.remove(i);
                true
            }
            None => false,
        })
        .collect();
    (matched, missing)
}

/// One replica move: the replica on `source` goes to `target` (the same node when only
/// the volume changes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    pub source: NodeIx,
    pub target: Target,
}

/// What a block needs: the moves that can be made now, and how many misplaced replicas
/// have nowhere to go (no storage of the wanted type with room on any usable node).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MovePlan {
    pub moves: Vec<Move>,
    pub stuck: usize,
}

impl MovePlan {
    /// The block already matches its policy.
    pub fn satisfied(&self) -> bool {
        self.moves.is_empty() && self.stuck == 0
    }
}

/// The cluster facts a move decision needs.
pub struct MoveCtx {
    pub now_ms: i64,
    pub stale_ms: u64,
    pub dead_ms: u64,
    pub seed: u64,
}

/// Plans the moves that bring a block's good replicas `(node, storage)` onto the storage
/// types `wanted` (the policy's choice for the file's replication). Each type no replica
/// fills takes one replica of a type the policy has too many of: preferably one whose own
/// node has a storage of the wanted type (a move between volumes), else any, to another
/// node. A replica on a node that is not live stays put.
pub fn plan_moves(
    reg: &Registry,
    replicas: &[(NodeIx, u8)],
    wanted: &[u8],
    block_len: u64,
    ctx: &MoveCtx,
) -> MovePlan {
    let types: SmallVec<[u8; 4]> = replicas
        .iter()
        .map(|&(n, s)| reg.get(n).storage_type(s))
        .collect();
    let (matched, missing) = match_types(&types, wanted);
    // The replicas that may move: one per surplus of their type. Which of several
    // same-type replicas "matched" is arbitrary, so any replica of a surplus type qualifies.
    let mut surplus: SmallVec<[u8; 4]> = types
        .iter()
        .zip(&matched)
        .filter(|(_, &m)| !m)
        .map(|(&t, _)| t)
        .collect();
    let holders: Vec<NodeIx> = replicas.iter().map(|r| r.0).collect();
    let live =
        |n: NodeIx| reg.get(n).liveness(ctx.now_ms, ctx.stale_ms, ctx.dead_ms) == Liveness::Live;
    let mut used: SmallVec<[usize; 4]> = SmallVec::new();
    let mut taken: Vec<NodeIx> = Vec::new();
    let mut plan = MovePlan::default();
    for ty in missing {
        if surplus.is_empty() {
            break; // fewer replicas than the policy has types for: replication's business
        }
        let movable =
            |i: &usize| !used.contains(i) && surplus.contains(&types[*i]) && live(replicas[*i].0);
        let local = (0..replicas.len()).filter(movable).find_map(|i| {
            let node = replicas[i].0;
            placement::best_storage(reg, node, Some(ty), block_len)
                .map(|storage| (i, Target { node, storage }))
        });
        let chosen = local.or_else(|| {
            let i = (0..replicas.len()).find(movable)?;
            let busy: Vec<NodeIx> = holders.iter().chain(&taken).copied().collect();
            other_node(reg, &busy, ty, block_len, ctx).map(|t| (i, t))
        });
        let Some((i, target)) = chosen else {
            plan.stuck += 1;
            continue;
        };
        let k = surplus
            .iter()
            .position(|&t| t == types[i])
            .expect("movable has surplus");
        surplus.remove(k);
        used.push(i);
        if target.node != replicas[i].0 {
            taken.push(target.node);
        }
        plan.moves.push(Move {
            source: replicas[i].0,
            target,
        });
    }
    plan
}

/// A live node not in `busy` with a storage of type `ty` that has room for the block.
fn other_node(
    reg: &Registry,
    busy: &[NodeIx],
    ty: u8,
    block_len: u64,
    ctx: &MoveCtx,
) -> Option<Target> {
    let none = HashSet::new();
    placement::choose_targets(
        reg,
        &PlacementRequest {
            replicas: 1,
            block_size: block_len,
            writer_ip: "",
            excluded: &none,
            existing: busy,
            now_ms: ctx.now_ms,
            stale_ms: ctx.stale_ms,
            dead_ms: ctx.dead_ms,
            seed: ctx.seed,
            storage_types: &[ty],
            fallbacks: &[],
        },
    )
    .into_iter()
    .find(|t| reg.get(t.node).storage_type(t.storage) == ty)
}

#[cfg(test)]
mod tests {
    use super::super::registry::{NodeId, StorageState};
    use super::*;

    const DISK: u8 = 1;
    const SSD: u8 = 2;
    const ARCHIVE: u8 = 3;

    /// Nodes with one storage per listed type, each with 1 TiB free.
    fn cluster(nodes: &[&[u8]]) -> Registry {
        let mut r = Registry::default();
        for (i, types) in nodes.iter().enumerate() {
            let id = NodeId {
                ip: "127.0.0.1".into(),
                host: "h".into(),
                uuid: format!("u{i}"),
                xfer_port: 1000 + i as u32,
                info_port: 0,
                ipc_port: 0,
            };
            let ix = r.register(id, 0).unwrap();
            let n = r.get_mut(ix);
            n.last_heartbeat_ms = 0;
            for (j, &t) in types.iter().enumerate() {
                n.storages.push(StorageState {
                    uuid: format!("s{i}-{j}"),
                    storage_type: t,
                    failed: false,
                    capacity: 1 << 40,
                    dfs_used: 0,
                    remaining: 1 << 40,
                });
            }
        }
        r
    }

    fn ctx() -> MoveCtx {
        MoveCtx {
            now_ms: 0,
            stale_ms: 30_000,
            dead_ms: 600_000,
            seed: 7,
        }
    }

    #[test]
    fn types_match_as_a_multiset() {
        let (m, missing) = match_types(&[SSD, SSD, DISK], &[SSD, DISK, DISK]);
        assert_eq!(
            (m.as_slice(), missing.as_slice()),
            (&[true, false, true][..], &[DISK][..])
        );
        let (m, missing) = match_types(&[DISK, DISK], &[DISK, DISK]);
        assert!(m.iter().all(|&x| x) && missing.is_empty());
    }

    #[test]
    fn a_replica_moves_within_its_node_when_the_node_has_the_type() {
        let reg = cluster(&[&[DISK, SSD], &[DISK, SSD], &[DISK, SSD]]);
        let replicas = [(0, 0), (1, 0), (2, 0)];
        let p = plan_moves(&reg, &replicas, &[SSD, SSD, SSD], 1 << 20, &ctx());
        assert_eq!(p.stuck, 0);
        assert_eq!(p.moves.len(), 3);
        for (m, &(n, _)) in p.moves.iter().zip(&replicas) {
            assert_eq!((m.source, m.target.node, m.target.storage), (n, n, 1));
        }
        // ONE_SSD: one replica moves, the other two are where they should be.
        let p = plan_moves(&reg, &replicas, &[SSD, DISK, DISK], 1 << 20, &ctx());
        assert_eq!(p.moves.len(), 1);
        // Already satisfied.
        let p = plan_moves(
            &reg,
            &[(0, 1), (1, 0), (2, 0)],
            &[SSD, DISK, DISK],
            1,
            &ctx(),
        );
        assert!(p.satisfied());
    }

    #[test]
    fn the_replica_that_moves_is_one_whose_node_has_the_type() {
        // Only node 2 has an SSD; its DISK replica moves there, not a copy across nodes.
        let reg = cluster(&[&[DISK], &[DISK], &[DISK, SSD]]);
        let p = plan_moves(
            &reg,
            &[(0, 0), (1, 0), (2, 0)],
            &[SSD, DISK, DISK],
            1,
            &ctx(),
        );
        assert_eq!(
            p.moves,
            vec![Move {
                source: 2,
                target: Target {
                    node: 2,
                    storage: 1
                }
            }]
        );
    }

    #[test]
    fn otherwise_to_another_node_that_does_not_hold_the_block() {
        let reg = cluster(&[&[DISK], &[DISK], &[DISK], &[ARCHIVE], &[ARCHIVE]]);
        let replicas = [(0, 0), (1, 0), (2, 0)];
        let p = plan_moves(
            &reg,
            &replicas,
            &[ARCHIVE, ARCHIVE, ARCHIVE],
            1 << 20,
            &ctx(),
        );
        // Two ARCHIVE nodes: two moves, to different nodes; the third has nowhere to go.
        assert_eq!(p.moves.len(), 2);
        assert_eq!(p.stuck, 1);
        let targets: HashSet<NodeIx> = p.moves.iter().map(|m| m.target.node).collect();
        assert_eq!(targets, HashSet::from([3, 4]));
        assert!(p
            .moves
            .iter()
            .all(|m| m.source < 3 && m.target.storage == 0));
    }

    #[test]
    fn no_storage_of_the_type_or_a_dead_source_leaves_the_replica_stuck() {
        let mut reg = cluster(&[&[DISK], &[DISK, SSD]]);
        let p = plan_moves(&reg, &[(0, 0)], &[ARCHIVE], 1, &ctx());
        assert_eq!(
            p,
            MovePlan {
                moves: vec![],
                stuck: 1
            }
        );
        reg.get_mut(1).dead = true;
        let p = plan_moves(&reg, &[(1, 0)], &[SSD], 1, &ctx());
        assert_eq!(p.stuck, 1);
        // A full storage of the wanted type does not take it either.
        let mut reg = cluster(&[&[DISK, SSD]]);
        reg.get_mut(0).storages[1].remaining = 10;
        assert_eq!(
            plan_moves(&reg, &[(0, 0)], &[SSD], 1 << 20, &ctx()).stuck,
            1
        );
    }
}
