//! Where a new block's replicas go and in which order readers see them. Pure functions of
//! the candidates' state, so they are tested without a cluster.

use std::collections::HashSet;

use super::registry::{Liveness, NodeIx, Registry};

/// One chosen replica target: a node and one of its storages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub node: NodeIx,
    pub storage: u8,
}

pub struct PlacementRequest<'a> {
    pub replicas: usize,
    pub block_size: u64,
    /// The writer's IP: a DataNode on it goes first, as HDFS places the first replica
    /// on the writer's own node.
    pub writer_ip: &'a str,
    /// `ip:xferPort` addresses the client asked us to avoid.
    pub excluded: &'a HashSet<String>,
    /// Nodes that already hold the block (for additional targets).
    pub existing: &'a [NodeIx],
    pub now_ms: i64,
    pub stale_ms: u64,
    pub dead_ms: u64,
    /// Tie-breaker, so equal nodes share the load instead of one taking every block.
    pub seed: u64,
    /// The storage type each replica should go on, in order (the file's storage policy's
    /// choice); empty: any storage.
    pub storage_types: &'a [u8],
    /// Types to use, in order, where a node with the wanted type cannot be found (the
    /// policy's creation fallbacks).
    pub fallbacks: &'a [u8],
}

struct Cand {
    node: NodeIx,
    local: bool,
    stale: bool,
    score: u128,
}

/// The storage of `n` with the most room for a whole block, of `ty` (None: any type).
pub(crate) fn best_storage(reg: &Registry, node: NodeIx, ty: Option<u8>, need: u64) -> Option<u8> {
    let n = reg.get(node);
    n.storages
        .iter()
        .enumerate()
        .filter(|(i, s)| {
            !s.failed && s.remaining >= need && ty.is_none_or(|t| n.storage_type(*i as u8) == t)
        })
        .max_by_key(|(_, s)| s.remaining)
        .map(|(i, _)| i as u8)
}

/// Picks up to `replicas` distinct live nodes with room for a block, the writer's own node
/// first, then the others by most free space and fewest active transfers; each replica on
/// a storage of the type asked for it, else of the first fallback type a node has. Stale
/// nodes are used only when live ones run out. Returns fewer targets when fewer nodes
/// qualify.
pub fn choose_targets(reg: &Registry, req: &PlacementRequest) -> Vec<Target> {
    let mut cands: Vec<Cand> = Vec::new();
    for (ix, n) in reg.iter() {
        let live = n.liveness(req.now_ms, req.stale_ms, req.dead_ms);
        if live == Liveness::Dead
            || req.existing.contains(&ix)
            || req.excluded.contains(&n.id.xfer_addr())
        {
            continue;
        }
        let Some(six) = best_storage(reg, ix, None, req.block_size) else {
            continue;
        };
        let st = &n.storages[six as usize];
        // Free space dominates; load and a per-call hash break near-ties.
        let jitter = mix(req.seed ^ ix as u64) & 0xffff;
        let score = ((st.remaining >> 20) as u128) << 40
            | (((u32::MAX - n.xceivers.min(u32::MAX - 1)) as u128) << 16)
            | jitter as u128;
        cands.push(Cand {
            node: ix,
            local: n.id.ip == req.writer_ip,
            stale: live == Liveness::Stale,
            score,
        });
    }
    // Within the writer's own machine, balance by score too (`ferrite local` puts every
    // DataNode on one IP).
    cands.sort_by(|a, b| {
        (a.stale, !a.local, std::cmp::Reverse(a.score)).cmp(&(
            b.stale,
            !b.local,
            std::cmp::Reverse(b.score),
        ))
    });
    let mut out: Vec<Target> = Vec::with_capacity(req.replicas);
    for i in 0..req.replicas {
        let wanted = req.storage_types.get(i).copied();
        // The wanted type first, then each fallback: the first that some node can take.
        let kinds = std::iter::once(wanted).chain(
            req.fallbacks
                .iter()
                .filter(|&&f| wanted.is_some() && Some(f) != wanted)
                .map(|&f| Some(f)),
        );
        let mut chosen = None;
        for ty in kinds {
            chosen = pick(reg, &cands, &out, ty, req.block_size);
            if chosen.is_some() {
                break;
            }
        }
        match chosen {
            Some(t) => out.push(t),
            None => break,
        }
    }
    out
}

/// The next node for a replica on storage type `ty`: only the first replica may be on the
/// writer's own node (the others spread on score), unless no other node will do.
fn pick(
    reg: &Registry,
    cands: &[Cand],
    out: &[Target],
    ty: Option<u8>,
    need: u64,
) -> Option<Target> {
    let took_local = out
        .iter()
        .any(|t| cands.iter().any(|c| c.node == t.node && c.local));
    let unused = |c: &&Cand| !out.iter().any(|t| t.node == c.node);
    let with = |c: &Cand| {
        best_storage(reg, c.node, ty, need).map(|storage| Target {
            node: c.node,
            storage,
        })
    };
    cands
        .iter()
        .filter(unused)
        .filter(|c| !(c.local && took_local))
        .find_map(with)
        .or_else(|| cands.iter().filter(unused).find_map(with))
}

/// Orders a block's replicas for a reader: the reader's own node first, then live nodes,
/// then stale ones; ties are rotated by `seed` so readers spread over the replicas.
pub fn sort_for_reader(
    reg: &Registry,
    nodes: &mut [(NodeIx, u8)],
    reader_ip: &str,
    now_ms: i64,
    stale_ms: u64,
    seed: u64,
) {
    nodes.sort_by_key(|&(ix, _)| {
        let n = reg.get(ix);
        let stale = n.liveness(now_ms, stale_ms, u64::MAX) != Liveness::Live;
        (stale, n.id.ip != reader_ip, mix(seed ^ ix as u64))
    });
}

/// A cheap 64-bit mixer (splitmix64's finaliser).
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d049bb133111eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::super::registry::{NodeId, StorageState};
    use super::*;

    fn cluster(nodes: &[(&str, u64)]) -> Registry {
        let mut r = Registry::default();
        for (i, (ip, free)) in nodes.iter().enumerate() {
            let ix = r
                .register(
                    NodeId {
                        ip: ip.to_string(),
                        host: ip.to_string(),
                        uuid: format!("u{i}"),
                        xfer_port: 1000 + i as u32,
                        info_port: 0,
                        ipc_port: 0,
                    },
                    0,
                )
                .unwrap();
            r.get_mut(ix).storages.push(StorageState {
                storage_type: 1,
                uuid: format!("s{i}"),
                failed: false,
                capacity: 1 << 40,
                dfs_used: 0,
                remaining: *free,
            });
        }
        r
    }

    fn req<'a>(ip: &'a str, excluded: &'a HashSet<String>, n: usize) -> PlacementRequest<'a> {
        PlacementRequest {
            storage_types: &[],
            fallbacks: &[],
            replicas: n,
            block_size: 1 << 20,
            writer_ip: ip,
            excluded,
            existing: &[],
            now_ms: 0,
            stale_ms: 30_000,
            dead_ms: 600_000,
            seed: 7,
        }
    }

    #[test]
    fn replicas_go_on_the_storage_types_asked_for_with_fallbacks() {
        let mut r = cluster(&[
            ("10.0.0.1", 5 << 30),
            ("10.0.0.2", 9 << 30),
            ("10.0.0.3", 8 << 30),
        ]);
        // Node 0 and 1 also have an SSD (type 2); node 2 has only its DISK.
        for ix in [0, 1] {
            r.get_mut(ix).storages.push(StorageState {
                storage_type: 2,
                uuid: format!("ssd{ix}"),
                failed: false,
                capacity: 1 << 40,
                dfs_used: 0,
                remaining: 2 << 30,
            });
        }
        let ex = HashSet::new();
        let type_of = |t: &Target| r.get(t.node).storage_type(t.storage);
        // ONE_SSD: the first replica on an SSD, the others on DISK.
        let one_ssd = PlacementRequest {
            storage_types: &[2, 1, 1],
            fallbacks: &[2, 1],
            ..req("9.9.9.9", &ex, 3)
        };
        let t = choose_targets(&r, &one_ssd);
        assert_eq!(t.iter().map(type_of).collect::<Vec<_>>(), vec![2, 1, 1]);
        assert_eq!(t.len(), 3);
        // ALL_SSD on three replicas: two nodes have an SSD; the third falls back to DISK.
        let all_ssd = PlacementRequest {
            storage_types: &[2, 2, 2],
            fallbacks: &[1],
            ..req("9.9.9.9", &ex, 3)
        };
        let t = choose_targets(&r, &all_ssd);
        assert_eq!(t.iter().map(type_of).collect::<Vec<_>>(), vec![2, 2, 1]);
        // Without a fallback, the third cannot be placed.
        let strict = PlacementRequest {
            storage_types: &[2, 2, 2],
            fallbacks: &[],
            ..req("9.9.9.9", &ex, 3)
        };
        assert_eq!(choose_targets(&r, &strict).len(), 2);
    }

    #[test]
    fn writer_first_then_most_free_space_all_distinct() {
        let r = cluster(&[
            ("10.0.0.1", 5 << 30),
            ("10.0.0.2", 9 << 30),
            ("10.0.0.3", 1 << 30),
            ("10.0.0.4", 7 << 30),
        ]);
        let ex = HashSet::new();
        let t = choose_targets(&r, &req("10.0.0.3", &ex, 3));
        let nodes: Vec<_> = t.iter().map(|t| t.node).collect();
        assert_eq!(nodes, vec![2, 1, 3]);
    }

    #[test]
    fn excluded_full_and_dead_nodes_are_skipped() {
        let mut r = cluster(&[
            ("10.0.0.1", 5 << 30),
            ("10.0.0.2", 9 << 30),
            ("10.0.0.3", 1 << 10),
            ("10.0.0.4", 7 << 30),
        ]);
        r.get_mut(3).dead = true;
        let ex: HashSet<String> = ["10.0.0.2:1001".to_string()].into();
        let t = choose_targets(&r, &req("1.1.1.1", &ex, 3));
        assert_eq!(t.iter().map(|t| t.node).collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn several_nodes_on_the_writers_ip_still_give_distinct_targets() {
        let r = cluster(&[
            ("127.0.0.1", 5 << 30),
            ("127.0.0.1", 5 << 30),
            ("127.0.0.1", 5 << 30),
        ]);
        let ex = HashSet::new();
        let mut t: Vec<_> = choose_targets(&r, &req("127.0.0.1", &ex, 3))
            .iter()
            .map(|t| t.node)
            .collect();
        t.sort();
        assert_eq!(t, vec![0, 1, 2]);
    }

    #[test]
    fn readers_get_their_own_node_first_and_stale_last() {
        let mut r = cluster(&[("10.0.0.1", 1), ("10.0.0.2", 1), ("10.0.0.3", 1)]);
        r.get_mut(0).last_heartbeat_ms = -100_000; // stale
        let mut locs = vec![(0, 0), (1, 0), (2, 0)];
        sort_for_reader(&r, &mut locs, "10.0.0.3", 0, 30_000, 1);
        assert_eq!(locs[0].0, 2);
        assert_eq!(locs[2].0, 0);
    }
}
