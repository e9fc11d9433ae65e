//! Three Raft nodes on loopback TCP, each with its own log directory: a leader is elected,
//! what it commits reaches every node in order, a killed leader is replaced and the
//! survivors go on committing, and a node restarted from its directory catches up —
//! from the log, or from a snapshot once the log it missed has been purged.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ferrite_raft::{Applier, Batch, FileDisk, Member, NodeId, Timing};
use openraft::BasicNode;
use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The applied batches, in order: the state a snapshot carries.
#[derive(Clone, Default)]
struct Applied(Arc<Mutex<Vec<Bytes>>>);

impl Applier for Applied {
    fn apply(&mut self, _: u64, batch: &Batch) -> io::Result<()> {
        self.0.lock().push(batch.0.clone());
        Ok(())
    }

    fn snapshot(&mut self) -> io::Result<Option<Vec<u8>>> {
        let mut out = Vec::new();
        for b in self.0.lock().iter() {
            out.extend_from_slice(&(b.len() as u32).to_be_bytes());
            out.extend_from_slice(b);
        }
        Ok(Some(out))
    }

    fn restore(&mut self, mut state: &[u8]) -> io::Result<()> {
        let mut all = Vec::new();
        while state.len() >= 4 {
            let len = u32::from_be_bytes(state[..4].try_into().unwrap()) as usize;
            all.push(Bytes::copy_from_slice(&state[4..4 + len]));
            state = &state[4 + len..];
        }
        *self.0.lock() = all;
        Ok(())
    }
}

struct Node {
    member: Member,
    applied: Applied,
    stop: CancellationToken,
}

fn timing() -> Timing {
    Timing {
        snapshot_every: 20,
        ..Timing::default()
    }
}

async fn start(id: NodeId, dir: &std::path::Path, listener: TcpListener) -> Node {
    let applied = Applied::default();
    let disk = Box::new(FileDisk::open(&dir.join(id.to_string())).unwrap());
    let member = ferrite_raft::start(
        id,
        &timing(),
        disk,
        Box::new(applied.clone()),
        ferrite_ipc::net::tcp(),
    )
    .await
    .unwrap();
    let stop = CancellationToken::new();
    tokio::spawn(ferrite_raft::serve(
        member.raft.clone(),
        listener,
        stop.clone(),
    ));
    Node {
        member,
        applied,
        stop,
    }
}

async fn stop(node: Node) {
    node.stop.cancel();
    node.member.raft.shutdown().await.unwrap();
}

/// Waits for a leader among `nodes` that all of them agree on.
async fn leader(nodes: &BTreeMap<NodeId, Node>) -> NodeId {
    for _ in 0..200 {
        let seen: BTreeSet<Option<NodeId>> = nodes
            .values()
            .map(|n| n.member.raft.metrics().borrow().current_leader)
            .collect();
        if let [Some(l)] = seen.into_iter().collect::<Vec<_>>()[..] {
            if nodes.contains_key(&l) {
                return l;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let states: Vec<String> = nodes
        .iter()
        .map(|(id, n)| {
            let m = n.member.raft.metrics().borrow().clone();
            format!(
                "node {id}: {:?} term {} leader {:?} vote {:?} last log {:?}",
                m.state, m.current_term, m.current_leader, m.vote, m.last_log_index
            )
        })
        .collect();
    panic!("no leader agreed on: {states:#?}");
}

async fn write(nodes: &BTreeMap<NodeId, Node>, leader: NodeId, from: u32, to: u32) {
    for i in from..to {
        let batch = Batch(Bytes::from(format!("batch {i}")));
        nodes[&leader]
            .member
            .raft
            .client_write(batch)
            .await
            .unwrap();
    }
}

async fn all_applied(nodes: &BTreeMap<NodeId, Node>, n: usize) {
    for _ in 0..200 {
        if nodes.values().all(|node| node.applied.0.lock().len() == n) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let want: Vec<Bytes> = (0..n).map(|i| Bytes::from(format!("batch {i}"))).collect();
    for (id, node) in nodes {
        assert_eq!(*node.applied.0.lock(), want, "node {id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_elects_commits_fails_over_and_catches_a_node_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut listeners = BTreeMap::new();
    let mut members = BTreeMap::new();
    for id in 1..=3u64 {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        members.insert(id, BasicNode::new(l.local_addr().unwrap()));
        listeners.insert(id, l);
    }
    let mut nodes = BTreeMap::new();
    for (id, l) in listeners {
        nodes.insert(id, start(id, dir.path(), l).await);
    }
    nodes[&1]
        .member
        .raft
        .initialize(members.clone())
        .await
        .unwrap();
    let first = leader(&nodes).await;
    write(&nodes, first, 0, 10).await;
    all_applied(&nodes, 10).await;

    // The leader dies; the other two elect one of themselves and go on.
    stop(nodes.remove(&first).unwrap()).await;
    let second = leader(&nodes).await;
    assert_ne!(second, first);
    write(&nodes, second, 10, 60).await;
    all_applied(&nodes, 60).await;

    // The old leader comes back from its directory; the log it missed was purged behind
    // snapshots (every 20 entries), so it catches up from one.
    let addr = members[&first].addr.clone();
    let l = TcpListener::bind(&addr).await.unwrap();
    nodes.insert(first, start(first, dir.path(), l).await);
    write(&nodes, second, 60, 65).await;
    all_applied(&nodes, 65).await;
    let back = nodes[&first].member.raft.metrics().borrow().snapshot;
    assert!(back.is_some(), "the returning node installed a snapshot");
    for (_, n) in nodes {
        stop(n).await;
    }
}
