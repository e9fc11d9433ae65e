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
    free_ppm: u64,
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
/// first, then the others by most free space and fewest active transfers, spread over the
/// racks as HDFS's default policy spreads them (see [`RackRule`]); each replica on a
/// storage of the type asked for it, else of the first fallback type a node has. Stale
/// nodes are used only when live ones run out. Returns fewer targets when fewer nodes
/// qualify.
pub fn choose_targets(reg: &Registry, req: &PlacementRequest) -> Vec<Target> {
    let mut cands: Vec<Cand> = Vec::new();
    for (ix, n) in reg.iter() {
        let live = n.liveness(req.now_ms, req.stale_ms, req.dead_ms);
        if live == Liveness::Dead
            || !n.admin.in_service()
            || req.existing.contains(&ix)
            || req.excluded.contains(&n.id.xfer_addr())
        {
            continue;
        }
        let Some(six) = best_storage(reg, ix, None, req.block_size) else {
            continue;
        };
        let st = &n.storages[six as usize];
        cands.push(Cand {
            node: ix,
            local: n.id.ip == req.writer_ip,
            stale: live == Liveness::Stale,
            free_ppm: free_ppm(st.remaining, st.capacity),
            score: 0,
        });
    }
    // Free space dominates, in bands below the emptiest node (see `FREE_BAND_PPM`); then
    // a node busier than twice the average goes after the others, as HDFS's considerLoad
    // rule has it; a per-call hash breaks the remaining ties, so equal nodes share blocks.
    let most_free = cands.iter().map(|c| c.free_ppm).max().unwrap_or(0);
    let load = |c: &Cand| reg.get(c.node).xceivers as u64;
    let total_load: u64 = cands.iter().map(load).sum();
    let count = cands.len() as u64;
    for c in &mut cands {
        let below = (most_free - c.free_ppm) / FREE_BAND_PPM;
        let overloaded = load(c) * count > 2 * total_load;
        let jitter = mix(req.seed ^ c.node as u64) & 0xffff;
        c.score = ((u16::MAX as u64 - below) as u128) << 48
            | (!overloaded as u128) << 32
            | jitter as u128;
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
    let racks = RackRule::new(reg, &cands, req);
    let mut chosen: Vec<NodeIx> = req.existing.to_vec();
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
        let mut picked = None;
        for ty in kinds {
            picked = pick(
                reg,
                &cands,
                &out,
                &racks.tiers(reg, &chosen),
                ty,
                req.block_size,
            );
            if picked.is_some() {
                break;
            }
        }
        match picked {
            Some(t) => {
                chosen.push(t.node);
                out.push(t);
            }
            None => break,
        }
    }
    out
}

/// Nodes whose free share of capacity is within this many parts per million of each other
/// (5%, HDFS's `AvailableSpaceBlockPlacementPolicy` tolerance) count as equally free. On
/// exact figures the node that last reported the most room (several DataNodes on one disk,
/// whose free space moves between their heartbeats, or nodes a few megabytes apart) took
/// every block until the next report, so a burst of writes landed on one node.
const FREE_BAND_PPM: u64 = 50_000;

/// A storage's free space in parts per million of its capacity.
fn free_ppm(remaining: u64, capacity: u64) -> u64 {
    if capacity == 0 {
        return 0;
    }
    (remaining.min(capacity) as u128 * 1_000_000 / capacity as u128) as u64
}

/// HDFS's default rack policy (`BlockPlacementPolicyDefault`): while every replica so far
/// is on one rack the next goes to another (so the second is off the first's rack), the
/// third joins the second's rack on another node, the rest go anywhere; and no rack takes
/// more than `(replicas - 1) / racks + 2` of a block's replicas (one less if that would
/// allow them all on one). With fewer than two racks it asks nothing.
struct RackRule {
    spread: bool,
    max_per_rack: usize,
}

/// Which racks suit the next replica, best first: each tier is a predicate on a node.
type Tier<'a> = Box<dyn Fn(NodeIx) -> bool + 'a>;

impl RackRule {
    fn new(reg: &Registry, cands: &[Cand], req: &PlacementRequest) -> RackRule {
        let mut racks: Vec<&str> = cands
            .iter()
            .map(|c| c.node)
            .chain(req.existing.iter().copied())
            .map(|n| reg.get(n).rack.as_str())
            .collect();
        racks.sort_unstable();
        racks.dedup();
        let total = req.existing.len() + req.replicas;
        let mut max_per_rack = (total.saturating_sub(1)) / racks.len().max(1) + 2;
        if max_per_rack == total {
            max_per_rack -= 1;
        }
        RackRule {
            spread: racks.len() > 1,
            max_per_rack,
        }
    }

    /// The tiers for the replica after `chosen`: the preferred racks within the per-rack
    /// limit, then any rack within it, then anything.
    fn tiers<'a>(&self, reg: &'a Registry, chosen: &'a [NodeIx]) -> Vec<Tier<'a>> {
        if !self.spread {
            return vec![Box::new(|_| true)];
        }
        let rack = move |n: NodeIx| reg.get(n).rack.as_str();
        let max = self.max_per_rack;
        let room = move |n: NodeIx| chosen.iter().filter(|&&c| rack(c) == rack(n)).count() < max;
        let preferred: Tier<'a> = match chosen {
            [] => Box::new(room),
            [first, rest @ ..] if rest.iter().all(|&c| rack(c) == rack(*first)) => {
                Box::new(move |n| rack(n) != rack(*first) && room(n))
            }
            [_, second] => Box::new(move |n| rack(n) == rack(*second) && room(n)),
            _ => Box::new(room),
        };
        vec![preferred, Box::new(room), Box::new(|_| true)]
    }
}

/// The next node for a replica on storage type `ty`, from the first of `tiers` that has
/// one: only the first replica may be on the writer's own node (the others spread on
/// score), unless no other node will do.
fn pick(
    reg: &Registry,
    cands: &[Cand],
    out: &[Target],
    tiers: &[Tier],
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
    tiers
        .iter()
        .find_map(|fits| {
            cands
                .iter()
                .filter(unused)
                .filter(|c| !(c.local && took_local) && fits(c.node))
                .find_map(with)
        })
        .or_else(|| cands.iter().filter(unused).find_map(with))
}

/// Orders a block's replicas for a reader by network distance, as HDFS does: nodes in
/// service before decommissioning or maintenance ones, live before stale, and within each the reader's own node, then nodes on its rack
/// (`reader_rack`, when it is known), then the rest; ties are rotated by `seed` so
/// readers spread over the replicas.
pub fn sort_for_reader(
    reg: &Registry,
    nodes: &mut [(NodeIx, u8)],
    reader: (&str, Option<&str>),
    now_ms: i64,
    stale_ms: u64,
    seed: u64,
) {
    let (reader_ip, reader_rack) = reader;
    nodes.sort_by_key(|&(ix, _)| {
        let n = reg.get(ix);
        let stale = n.liveness(now_ms, stale_ms, u64::MAX) != Liveness::Live;
        let distance = if n.id.ip == reader_ip {
            0
        } else if reader_rack == Some(n.rack.as_str()) {
            2
        } else {
            4
        };
        // Nodes on their way out (or gone) last, as HDFS lists them.
        (
            !n.admin.in_service(),
            stale,
            distance,
            mix(seed ^ ix as u64),
        )
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
                capacity: 10 << 30,
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
    fn nodes_a_few_megabytes_apart_share_the_blocks() {
        let r = cluster(&[
            ("10.0.0.1", 5 << 30),
            ("10.0.0.2", (5 << 30) + (3 << 20)),
            ("10.0.0.3", (5 << 30) - (7 << 20)),
            ("10.0.0.4", (5 << 30) + (1 << 20)),
        ]);
        let ex = HashSet::new();
        let mut held = [0; 4];
        for seed in 0..2000 {
            let one = PlacementRequest {
                seed,
                ..req("9.9.9.9", &ex, 2)
            };
            for t in choose_targets(&r, &one) {
                held[t.node as usize] += 1;
            }
        }
        // 4,000 replicas: about 1,000 each (the most-free node took them all before).
        assert!(held.iter().all(|&h| (800..1200).contains(&h)), "{held:?}");
    }

    #[test]
    fn a_node_busier_than_twice_the_average_goes_last() {
        let mut r = cluster(&[
            ("10.0.0.1", 5 << 30),
            ("10.0.0.2", 5 << 30),
            ("10.0.0.3", 5 << 30),
        ]);
        r.get_mut(0).xceivers = 7;
        r.get_mut(1).xceivers = 1;
        let ex = HashSet::new();
        for seed in 0..200 {
            let one = PlacementRequest {
                seed,
                ..req("9.9.9.9", &ex, 2)
            };
            let mut nodes: Vec<_> = choose_targets(&r, &one).iter().map(|t| t.node).collect();
            nodes.sort();
            assert_eq!(nodes, vec![1, 2], "seed {seed}");
        }
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

    /// Six nodes, two per rack on three racks (`/r0`, `/r1`, `/r2`), equal space.
    fn racked() -> Registry {
        let mut r = cluster(&[
            ("10.0.0.1", 5 << 30),
            ("10.0.0.2", 5 << 30),
            ("10.0.1.1", 5 << 30),
            ("10.0.1.2", 5 << 30),
            ("10.0.2.1", 5 << 30),
            ("10.0.2.2", 5 << 30),
        ]);
        for ix in 0..6 {
            r.get_mut(ix).rack = format!("/r{}", ix / 2);
        }
        r
    }

    fn racks_of(r: &Registry, t: &[Target]) -> Vec<String> {
        t.iter().map(|t| r.get(t.node).rack.clone()).collect()
    }

    #[test]
    fn the_second_replica_goes_off_rack_and_the_third_joins_it() {
        let r = racked();
        let ex = HashSet::new();
        for seed in 0..50 {
            // From a writer on node 0 (rack /r0), and from outside the cluster.
            for writer in ["10.0.0.1", "9.9.9.9"] {
                let t = choose_targets(
                    &r,
                    &PlacementRequest {
                        seed,
                        ..req(writer, &ex, 3)
                    },
                );
                let racks = racks_of(&r, &t);
                assert_eq!(t.len(), 3);
                if writer == "10.0.0.1" {
                    assert_eq!(t[0].node, 0, "the writer's node first");
                }
                assert_ne!(racks[0], racks[1], "second off the first's rack: {racks:?}");
                assert_eq!(racks[1], racks[2], "third on the second's rack: {racks:?}");
                assert_ne!(t[1].node, t[2].node);
            }
        }
    }

    #[test]
    fn no_rack_takes_more_than_its_share_and_one_rack_means_no_rule() {
        // Rack /big has four roomy nodes, /a and /b one small node each.
        let mut r = cluster(&[
            ("10.0.0.1", 9 << 30),
            ("10.0.0.2", 9 << 30),
            ("10.0.0.3", 9 << 30),
            ("10.0.0.4", 9 << 30),
            ("10.0.1.1", 1 << 30),
            ("10.0.2.1", 1 << 30),
        ]);
        for ix in 0..6 {
            r.get_mut(ix).rack = ["/big", "/big", "/big", "/big", "/a", "/b"][ix as usize].into();
        }
        let ex = HashSet::new();
        // Five replicas on three racks: at most (5 - 1) / 3 + 2 = 3 on /big, roomy as it is.
        let t = choose_targets(&r, &req("9.9.9.9", &ex, 5));
        let racks = racks_of(&r, &t);
        assert_eq!(
            racks.iter().filter(|x| *x == "/big").count(),
            3,
            "{racks:?}"
        );
        assert_eq!(t.len(), 5);
        // Every node on one rack: placement as without racks.
        let flat = cluster(&[
            ("10.0.0.1", 5 << 30),
            ("10.0.0.2", 9 << 30),
            ("10.0.0.3", 7 << 30),
        ]);
        let t = choose_targets(&flat, &req("10.0.0.1", &ex, 3));
        assert_eq!(t.iter().map(|t| t.node).collect::<Vec<_>>(), vec![0, 1, 2]);
    }

    #[test]
    fn a_block_on_one_rack_gets_its_next_replica_elsewhere() {
        let r = racked();
        let ex = HashSet::new();
        // Two replicas on /r1 (nodes 2 and 3): the next goes to another rack.
        for seed in 0..20 {
            let t = choose_targets(
                &r,
                &PlacementRequest {
                    existing: &[2, 3],
                    seed,
                    ..req("", &ex, 1)
                },
            );
            assert_ne!(racks_of(&r, &t), vec!["/r1".to_string()]);
        }
        // One replica on /r2 and one on /r0: the third joins the second's rack.
        let t = choose_targets(
            &r,
            &PlacementRequest {
                existing: &[4, 0],
                ..req("", &ex, 1)
            },
        );
        assert_eq!(racks_of(&r, &t), vec!["/r0".to_string()]);
        assert_eq!(t[0].node, 1);
    }

    #[test]
    fn readers_get_their_own_node_then_their_rack() {
        let r = racked();
        let mut locs = vec![(4, 0), (2, 0), (3, 0)];
        sort_for_reader(&r, &mut locs, ("10.0.1.2", Some("/r1")), 0, 30_000, 1);
        assert_eq!(locs.iter().map(|l| l.0).collect::<Vec<_>>(), vec![3, 2, 4]);
        // A reader on no DataNode, whose rack is known.
        let mut locs = vec![(0, 0), (4, 0), (2, 0)];
        sort_for_reader(&r, &mut locs, ("10.0.2.9", Some("/r2")), 0, 30_000, 1);
        assert_eq!(locs[0].0, 4);
    }

    #[test]
    fn readers_get_their_own_node_first_and_stale_last() {
        let mut r = cluster(&[("10.0.0.1", 1), ("10.0.0.2", 1), ("10.0.0.3", 1)]);
        r.get_mut(0).last_heartbeat_ms = -100_000; // stale
        let mut locs = vec![(0, 0), (1, 0), (2, 0)];
        sort_for_reader(&r, &mut locs, ("10.0.0.3", None), 0, 30_000, 1);
        assert_eq!(locs[0].0, 2);
        assert_eq!(locs[2].0, 0);
    }
}
