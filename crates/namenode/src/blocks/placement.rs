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
}

/// Picks up to `replicas` distinct live nodes with room for a block, the writer's own node
/// first, then the others by most free space and fewest active transfers. Stale nodes are
/// used only when live ones run out. Returns fewer targets when fewer nodes qualify.
pub fn choose_targets(reg: &Registry, req: &PlacementRequest) -> Vec<Target> {
    struct Cand {
        node: NodeIx,
        storage: u8,
        local: bool,
        stale: bool,
        score: u128,
    }
    let mut cands: Vec<Cand> = Vec::new();
    for (ix, n) in reg.iter() {
        let live = n.liveness(req.now_ms, req.stale_ms, req.dead_ms);
        if live == Liveness::Dead
            || req.existing.contains(&ix)
            || req.excluded.contains(&n.id.xfer_addr())
        {
            continue;
        }
        // The storage with the most room that can hold a whole block.
        let Some((six, st)) = n
            .storages
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.failed && s.remaining >= req.block_size)
            .max_by_key(|(_, s)| s.remaining)
        else {
            continue;
        };
        // Free space dominates; load and a per-call hash break near-ties.
        let jitter = mix(req.seed ^ ix as u64) & 0xffff;
        let score = ((st.remaining >> 20) as u128) << 40
            | (((u32::MAX - n.xceivers.min(u32::MAX - 1)) as u128) << 16)
            | jitter as u128;
        cands.push(Cand {
            node: ix,
            storage: six as u8,
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
    let mut took_local = false;
    for c in &cands {
        if out.len() == req.replicas {
            break;
        }
        // Only the first replica is "the writer's own"; others spread on score.
        if c.local && took_local {
            continue;
        }
        took_local |= c.local;
        out.push(Target {
            node: c.node,
            storage: c.storage,
        });
    }
    // Fill from the skipped local nodes if there were not enough others.
    for c in &cands {
        if out.len() == req.replicas {
            break;
        }
        if !out.iter().any(|t| t.node == c.node) {
            out.push(Target {
                node: c.node,
                storage: c.storage,
            });
        }
    }
    out
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
