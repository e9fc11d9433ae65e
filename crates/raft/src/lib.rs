//! The NameNodes' replicated journal: Raft, by openraft, over Ferrite's own pieces — a log
//! that is synced before an append is acknowledged ([`log_store`] on a [`LogDisk`]), Raft's
//! calls as protobuf frames on any stream ([`network`], through the same `Dial`/`Listen`
//! seams the NameNode's IPC uses, so the simulator runs it on its network), and committed
//! batches handed in log order to an [`Applier`] (a NameNode's namespace).
//!
//! A batch is opaque here: the NameNode's journal records, encoded as the journal writes
//! them. Raft decides order and durability; what the bytes mean is the namespace's.

mod contact;
mod election;
mod log_disk;
mod log_store;
mod network;
mod runtime;
mod state_machine;
mod wire;

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ferrite_ipc::net::Dial;

pub use contact::{Acks, LeaderContact};
pub use log_disk::{FileDisk, LogDisk, MemoryDisk};
pub use log_store::{Blobs, LogStore};
pub use network::{
    campaign, hand_over, serve, serve_with, HandOver, HandOverFuture, Network, Peer,
};
pub use runtime::{seed_elections, Runtime};
pub use state_machine::{Applier, StateMachine};
pub use wire::Malformed;

/// A NameNode's number in its Raft group.
pub type NodeId = u64;

/// One replicated entry's payload: a batch of journal records, as bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Batch(pub Bytes);

impl fmt::Debug for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Batch({} bytes)", self.0.len())
    }
}

impl fmt::Display for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

openraft::declare_raft_types!(
    /// Ferrite's Raft: batches of journal records, nodes known by number and address.
    pub TypeConfig:
        D = Batch,
        R = (),
        NodeId = NodeId,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = std::io::Cursor<Vec<u8>>,
        AsyncRuntime = Runtime,
);

/// A running Raft node.
pub type Raft = openraft::Raft<TypeConfig>;

/// How quickly the group notices a lost leader, and how big its pieces are.
#[derive(Clone, Debug)]
pub struct Timing {
    /// The leader's heartbeat to each follower.
    pub heartbeat: Duration,
    /// A follower that hears no leader for a time drawn from this range stands for
    /// election. Several heartbeats long, so one lost message does not cost a leader.
    pub election_min: Duration,
    pub election_max: Duration,
    /// Entries since the last snapshot before a new one is taken and the log purged.
    pub snapshot_every: u64,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            heartbeat: Duration::from_millis(100),
            election_min: Duration::from_millis(500),
            election_max: Duration::from_millis(1_000),
            snapshot_every: 10_000,
        }
    }
}

/// Why a Raft node could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("Raft configuration: {0}")]
    Config(#[from] openraft::ConfigError),
    #[error("Raft storage: {0}")]
    Storage(#[from] io::Error),
    #[error("Raft: {0}")]
    Fatal(#[from] openraft::error::Fatal<NodeId>),
}

/// A node's parts, as [`start`] returns them: the Raft handle and its state machine.
pub struct Member {
    pub raft: Raft,
    pub state: StateMachine,
    /// The followers' acknowledgements, while this node leads.
    pub acks: Arc<Acks>,
}

/// Starts node `id` on its log `disk` (reading back what a previous life left there),
/// feeding committed batches to `applier`, reaching the others through `dial`.
pub async fn start(
    id: NodeId,
    timing: &Timing,
    disk: Box<dyn LogDisk>,
    applier: Box<dyn Applier>,
    dial: Arc<dyn Dial>,
) -> Result<Member, StartError> {
    let config = openraft::Config {
        cluster_name: "ferrite".into(),
        heartbeat_interval: timing.heartbeat.as_millis() as u64,
        election_timeout_min: timing.election_min.as_millis() as u64,
        election_timeout_max: timing.election_max.as_millis() as u64,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(timing.snapshot_every),
        // Keep some entries past a snapshot, so a follower a little behind catches up from
        // the log rather than by a whole snapshot.
        max_in_snapshot_log_to_keep: timing.snapshot_every / 10,
        ..Default::default()
    }
    .validate()?;
    let log = LogStore::open(disk)?;
    let state = StateMachine::open(applier, log.blobs())?;
    let acks = Arc::new(Acks::default());
    let network = Network {
        dial,
        acks: acks.clone(),
    };
    let raft = Raft::new(id, Arc::new(config), network, log, state.clone()).await?;
    tokio::spawn(election::stand_again_after_split_votes(
        raft.clone(),
        timing.clone(),
    ));
    Ok(Member { raft, state, acks })
}
