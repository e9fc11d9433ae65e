//! What the Balancer decides, free of sockets and clocks: which nodes are over- and
//! under-used against the cluster's mean, how many bytes should go from which node to
//! which (HDFS's `Balancer.init` and `chooseStorageGroups`), and which replicas carry them
//! (its `Dispatcher`'s choice of blocks, targets and proxies).

use std::collections::HashSet;

/// A live DataNode as the storage report shows it.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub(crate) uuid: String,
    pub(crate) rack: String,
    pub(crate) capacity: u64,
    pub(crate) used: u64,
    pub(crate) remaining: u64,
}

impl Node {
    /// Percent of its capacity in use (HDFS's policy `datanode`: DFS used over capacity).
    fn utilization(&self) -> f64 {
        self.used as f64 * 100.0 / self.capacity as f64
    }
}

/// Bytes to move from `source` to `target` (indices into the node list).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Task {
    pub(crate) source: usize,
    pub(crate) target: usize,
    pub(crate) bytes: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// How far the cluster is from balanced: the larger of the bytes above the threshold
    /// band on over-used nodes and below it on under-used ones.
    pub(crate) bytes_left_to_move: u64,
    pub(crate) tasks: Vec<Task>,
}

impl Plan {
    pub(crate) fn bytes_being_moved(&self) -> u64 {
        self.tasks.iter().map(|t| t.bytes).sum()
    }
}

/// HDFS's `percentage2bytes`.
fn percent_of(p: f64, capacity: u64) -> u64 {
    (p * capacity as f64 / 100.0).max(0.0) as u64
}

/// A node's room to give (source) or take (target) in one iteration.
struct Side {
    node: usize,
    left: u64,
}

/// Classifies the nodes against the mean within `threshold` percent and pairs sources with
/// targets, at most `max_per_node` bytes for any node in an iteration: over-used with
/// under-used first, then over-used with below-average, then above-average with
/// under-used, each first within a rack, then across racks.
pub(crate) fn plan(nodes: &[Node], threshold: f64, max_per_node: u64) -> Plan {
    let (used, capacity) = nodes
        .iter()
        .filter(|n| n.capacity > 0)
        .fold((0u64, 0u64), |(u, c), n| (u + n.used, c + n.capacity));
    if capacity == 0 {
        return Plan::default();
    }
    let mean = used as f64 * 100.0 / capacity as f64;
    let (mut over, mut above, mut below, mut under) = (vec![], vec![], vec![], vec![]);
    let (mut over_bytes, mut under_bytes) = (0u64, 0u64);
    for (i, n) in nodes.iter().enumerate().filter(|(_, n)| n.capacity > 0) {
        let diff = n.utilization() - mean;
        let beyond = diff.abs() - threshold;
        let mut left = percent_of(diff.abs(), n.capacity).min(max_per_node);
        if diff > 0.0 {
            if beyond > 0.0 {
                over_bytes += percent_of(beyond, n.capacity);
                over.push(Side { node: i, left });
            } else {
                above.push(Side { node: i, left });
            }
        } else {
            left = left.min(n.remaining);
            if beyond > 0.0 {
                under_bytes += percent_of(beyond, n.capacity);
                under.push(Side { node: i, left });
            } else {
                below.push(Side { node: i, left });
            }
        }
    }
    let mut tasks = Vec::new();
    for same_rack in [true, false] {
        pair(nodes, &mut over, &mut under, same_rack, &mut tasks);
        pair(nodes, &mut over, &mut below, same_rack, &mut tasks);
        pair(nodes, &mut above, &mut under, same_rack, &mut tasks);
    }
    Plan {
        bytes_left_to_move: over_bytes.max(under_bytes),
        tasks,
    }
}

/// Gives each source's room to targets (of its rack, or any), as far as both have room.
fn pair(
    nodes: &[Node],
    sources: &mut [Side],
    targets: &mut [Side],
    same_rack: bool,
    tasks: &mut Vec<Task>,
) {
    for s in sources.iter_mut() {
        for t in targets.iter_mut() {
            if s.left == 0 {
                break;
            }
            if t.left == 0 || (same_rack && nodes[s.node].rack != nodes[t.node].rack) {
                continue;
            }
            let bytes = s.left.min(t.left);
            s.left -= bytes;
            t.left -= bytes;
            match tasks
                .iter_mut()
                .find(|k| k.source == s.node && k.target == t.node)
            {
                Some(k) => k.bytes += bytes,
                None => tasks.push(Task {
                    source: s.node,
                    target: t.node,
                    bytes,
                }),
            }
        }
    }
}

/// A block `getBlocks` offered from a source, with the nodes holding it.
#[derive(Clone, Debug)]
pub(crate) struct Offered {
    pub(crate) id: u64,
    pub(crate) gs: u64,
    pub(crate) len: u64,
    /// Indices into the node list; holders the report does not show are left out.
    pub(crate) holders: Vec<usize>,
}

/// One replica to move: the target copies it from `proxy` (a holder, on the target's rack
/// when one is), and the NameNode then drops the source's replica.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Move {
    pub(crate) id: u64,
    pub(crate) gs: u64,
    pub(crate) len: u64,
    pub(crate) source: usize,
    pub(crate) target: usize,
    pub(crate) proxy: usize,
}

/// Chooses, for the blocks `source` was offered, targets among its tasks: a target that
/// holds no replica yet, never one that would leave the block on fewer racks, and never a
/// block already moving (`moving`). Each task's bytes go down as moves are chosen.
pub(crate) fn choose_moves(
    nodes: &[Node],
    source: usize,
    offered: &[Offered],
    tasks: &mut [Task],
    moving: &mut HashSet<u64>,
) -> Vec<Move> {
    let mut moves = Vec::new();
    for b in offered {
        if !b.holders.contains(&source) || moving.contains(&b.id) {
            continue;
        }
        let fits = |t: &&mut Task| {
            t.source == source
                && t.bytes > 0
                && !b.holders.contains(&t.target)
                && keeps_racks(nodes, &b.holders, source, t.target)
        };
        let Some(task) = tasks.iter_mut().find(fits) else {
            continue;
        };
        task.bytes = task.bytes.saturating_sub(b.len);
        let target = task.target;
        let proxy = b
            .holders
            .iter()
            .copied()
            .find(|&h| nodes[h].rack == nodes[target].rack)
            .unwrap_or(source);
        moving.insert(b.id);
        moves.push(Move {
            id: b.id,
            gs: b.gs,
            len: b.len,
            source,
            target,
            proxy,
        });
    }
    moves
}

/// Whether the block still spans as many racks once `source`'s replica is on `target`
/// (HDFS's placement policy `isMovable`).
fn keeps_racks(nodes: &[Node], holders: &[usize], source: usize, target: usize) -> bool {
    let racks = |it: &mut dyn Iterator<Item = usize>| -> usize {
        it.map(|i| nodes[i].rack.as_str())
            .collect::<HashSet<_>>()
            .len()
    };
    let before = racks(&mut holders.iter().copied());
    let after = racks(
        &mut holders
            .iter()
            .copied()
            .filter(|&h| h != source)
            .chain([target]),
    );
    after >= before
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: u64 = 1 << 30;

    fn node(i: usize, rack: &str, capacity: u64, used: u64) -> Node {
        Node {
            uuid: format!("dn{i}"),
            rack: rack.into(),
            capacity,
            used,
            remaining: capacity - used,
        }
    }

    #[test]
    fn a_balanced_cluster_has_nothing_to_move() {
        let nodes = [node(0, "/r", 100, 50), node(1, "/r", 100, 55)];
        let p = plan(&nodes, 10.0, u64::MAX);
        assert_eq!(p.bytes_left_to_move, 0);
    }

    #[test]
    fn full_nodes_give_to_empty_ones_down_to_the_mean() {
        // Three nodes 60% full, two empty: the mean is 36%.
        let mut nodes: Vec<Node> = (0..3).map(|i| node(i, "/r", 100 * GB, 60 * GB)).collect();
        nodes.extend((3..5).map(|i| node(i, "/r", 100 * GB, 0)));
        let p = plan(&nodes, 10.0, u64::MAX);
        // Over-used by 24 points, 14 beyond the band: 3 × 14 GB; under-used 2 × 26 GB.
        assert_eq!(p.bytes_left_to_move, 52 * GB);
        for t in &p.tasks {
            assert!(t.source < 3 && t.target >= 3, "{t:?}");
        }
        // Each source gives at most its distance to the mean; each target takes as much.
        for s in 0..3 {
            let out: u64 = p
                .tasks
                .iter()
                .filter(|t| t.source == s)
                .map(|t| t.bytes)
                .sum();
            assert!(out <= 24 * GB + 1);
        }
        let into: u64 = p.tasks.iter().map(|t| t.bytes).sum();
        assert!((70 * GB..=72 * GB + 2).contains(&into), "{into}");
    }

    #[test]
    fn pairs_stay_within_a_rack_first_and_respect_the_per_node_cap() {
        let nodes = [
            node(0, "/a", 100, 90),
            node(1, "/b", 100, 90),
            node(2, "/a", 100, 10),
            node(3, "/b", 100, 10),
        ];
        let p = plan(&nodes, 10.0, 30);
        assert!(p.tasks.contains(&Task {
            source: 0,
            target: 2,
            bytes: 30
        }));
        assert!(p.tasks.contains(&Task {
            source: 1,
            target: 3,
            bytes: 30
        }));
        assert_eq!(p.tasks.len(), 2);
    }

    #[test]
    fn a_node_between_the_mean_and_the_band_still_takes_from_an_over_used_one() {
        // Mean 40%: node 1 at 35% is below average but inside the band.
        let nodes = [
            node(0, "/r", 100, 85),
            node(1, "/r", 100, 35),
            node(2, "/r", 100, 0),
        ];
        let p = plan(&nodes, 10.0, u64::MAX);
        assert!(p.tasks.iter().any(|t| t.source == 0 && t.target == 1));
        assert!(p.tasks.iter().any(|t| t.source == 0 && t.target == 2));
    }

    fn offered(id: u64, holders: &[usize]) -> Offered {
        Offered {
            id,
            gs: 1,
            len: 10,
            holders: holders.to_vec(),
        }
    }

    #[test]
    fn moves_skip_holders_keep_racks_and_prefer_a_proxy_on_the_targets_rack() {
        let nodes = [
            node(0, "/a", 100, 90),
            node(1, "/b", 100, 50),
            node(2, "/a", 100, 0),
            node(3, "/b", 100, 0),
        ];
        let mut tasks = vec![
            Task {
                source: 0,
                target: 2,
                bytes: 15,
            },
            Task {
                source: 0,
                target: 3,
                bytes: 100,
            },
        ];
        let mut moving = HashSet::new();
        let blocks = [
            offered(1, &[0, 1]), // to 2: its racks stay {a, b}
            offered(2, &[0, 2]), // node 2 holds it: to 3, which adds rack b
            offered(3, &[0, 1]), // the task to 2 has 5 bytes left: still taken
            offered(4, &[1]),    // not on the source
        ];
        let m = choose_moves(&nodes, 0, &blocks, &mut tasks, &mut moving);
        assert_eq!(m[0].target, 2);
        assert_eq!(m[0].proxy, 0, "the source is on the target's rack");
        // No holder of block 2 is on the target's rack: the source sends it.
        assert_eq!((m[1].id, m[1].target, m[1].proxy), (2, 3, 0));
        assert_eq!((m[2].id, m[2].target), (3, 2));
        assert_eq!(m.len(), 3);
        assert_eq!(tasks[0].bytes, 0);
        // Offered again, a block already moving is not chosen twice.
        assert!(choose_moves(&nodes, 0, &blocks, &mut tasks, &mut moving).is_empty());
    }

    #[test]
    fn a_move_that_would_leave_a_block_on_one_rack_is_not_made() {
        let nodes = [
            node(0, "/a", 100, 90),
            node(1, "/b", 100, 50),
            node(2, "/b", 100, 0),
        ];
        let mut tasks = vec![Task {
            source: 0,
            target: 2,
            bytes: 100,
        }];
        let m = choose_moves(
            &nodes,
            0,
            &[offered(1, &[0, 1])],
            &mut tasks,
            &mut HashSet::new(),
        );
        assert!(m.is_empty(), "{m:?}");
        // A block whose other replica is on the source's rack may go.
        let nodes = [
            node(0, "/a", 100, 90),
            node(1, "/a", 100, 50),
            node(2, "/b", 100, 0),
        ];
        let m = choose_moves(
            &nodes,
            0,
            &[offered(1, &[0, 1])],
            &mut tasks,
            &mut HashSet::new(),
        );
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].proxy, 0);
    }
}
