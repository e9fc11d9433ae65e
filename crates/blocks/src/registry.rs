//! The DataNodes this NameNode knows: identity, storages, load, and liveness computed from
//! the time of the last heartbeat. Pure state: the caller passes the clock in.

use std::collections::HashMap;

/// Where a node is when no topology mapping says otherwise (Hadoop's `NetworkTopology
/// .DEFAULT_RACK`).
pub const DEFAULT_RACK: &str = "/default-rack";

/// Index of a DataNode in the registry. Stable for the NameNode's life: a node that
/// re-registers (same uuid) keeps its index, so replica locations stay valid.
pub type NodeIx = u16;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeId {
    pub ip: String,
    pub host: String,
    pub uuid: String,
    pub xfer_port: u32,
    pub info_port: u32,
    pub ipc_port: u32,
}

impl NodeId {
    /// `ip:xferPort`, the form clients and `firstBadLink` use.
    pub fn xfer_addr(&self) -> String {
        format!("{}:{}", self.ip, self.xfer_port)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StorageState {
    pub uuid: String,
    /// `StorageTypeProto` (1 DISK, 2 SSD, 3 ARCHIVE, 4 RAM_DISK, 6 NVDIMM); 0 until the
    /// node reports it, taken as DISK.
    pub storage_type: u8,
    pub failed: bool,
    pub capacity: u64,
    pub dfs_used: u64,
    pub remaining: u64,
}

/// A node's administrative state, HDFS's `AdminStates`, as the hosts files set it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AdminState {
    #[default]
    Normal,
    /// Excluded: its replicas are copied to nodes in service while it goes on serving
    /// reads; it takes no new ones.
    Decommissioning,
    /// Every block it holds has its replicas elsewhere.
    Decommissioned,
    /// Going into maintenance until `until_ms` (ms since the epoch): blocks with too few
    /// replicas on nodes in service are copied first.
    EnteringMaintenance { until_ms: i64 },
    /// In maintenance until `until_ms`: it may go away without its replicas being copied.
    InMaintenance { until_ms: i64 },
}

impl AdminState {
    pub fn in_service(self) -> bool {
        self == AdminState::Normal
    }

    pub fn decommission(self) -> bool {
        matches!(
            self,
            AdminState::Decommissioning | AdminState::Decommissioned
        )
    }

    /// Entering or in maintenance, with the window's end.
    pub fn maintenance_until(self) -> Option<i64> {
        match self {
            AdminState::EnteringMaintenance { until_ms }
            | AdminState::InMaintenance { until_ms } => Some(until_ms),
            _ => None,
        }
    }

    /// On its way out: its blocks are checked for copies elsewhere at each scan.
    pub fn leaving(self) -> bool {
        matches!(
            self,
            AdminState::Decommissioning | AdminState::EnteringMaintenance { .. }
        )
    }

    /// `AdminState` of `DatanodeInfoProto` (HDFS's wire numbers).
    pub fn proto(self) -> i32 {
        match self {
            AdminState::Normal => 0,
            AdminState::Decommissioning => 1,
            AdminState::Decommissioned => 2,
            AdminState::EnteringMaintenance { .. } => 3,
            AdminState::InMaintenance { .. } => 4,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    Live,
    /// Missed heartbeats for longer than the stale interval: still used, but last.
    Stale,
    Dead,
}

/// A replication order: copy this block to these nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub id: u64,
    pub gs: u64,
    pub len: u64,
    pub targets: Vec<(NodeIx, u8)>,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub id: NodeId,
    pub storages: Vec<StorageState>,
    pub last_heartbeat_ms: i64,
    pub xceivers: u32,
    /// Blocks (id, generation stamp) this node should delete, sent with the next heartbeat.
    pub invalidate: Vec<(u64, u64)>,
    /// Replicas this node should copy to other nodes, sent with the next heartbeat.
    pub transfers: Vec<Transfer>,
    /// Set once the node has been declared dead and its replicas forgotten.
    pub dead: bool,
    /// The block-key generation this node was last sent (see `tokens::BlockTokens`).
    pub keys_generation: u64,
    /// A Balancer bandwidth (bytes/s) set by `setBalancerBandwidth` and not yet sent with
    /// a heartbeat; 0 when none is waiting.
    pub balancer_bandwidth: u64,
    /// When its last full block report was processed (ms since the epoch; 0: none yet).
    pub last_block_report_ms: i64,
    /// Replicas the block map records on this node (`dfsadmin -report`'s "Num of Blocks").
    pub blocks: u64,
    /// Its network location (`/dc1/rack1`), as the topology mapping resolved it when it
    /// registered.
    pub rack: String,
    pub admin: AdminState,
    /// While it is leaving: blocks the last replication scan found it still needed for
    /// (HDFS's "under replicated blocks" of a decommissioning node).
    pub leaving_blocks: u64,
}

impl Node {
    pub fn liveness(&self, now_ms: i64, stale_ms: u64, dead_ms: u64) -> Liveness {
        let silent = now_ms.saturating_sub(self.last_heartbeat_ms).max(0) as u64;
        if self.dead || silent > dead_ms {
            Liveness::Dead
        } else if silent > stale_ms {
            Liveness::Stale
        } else {
            Liveness::Live
        }
    }

    pub fn remaining(&self) -> u64 {
        self.storages
            .iter()
            .filter(|s| !s.failed)
            .map(|s| s.remaining)
            .sum()
    }

    pub fn capacity(&self) -> u64 {
        self.storages.iter().map(|s| s.capacity).sum()
    }

    pub fn dfs_used(&self) -> u64 {
        self.storages.iter().map(|s| s.dfs_used).sum()
    }

    /// The storage type of storage `ix` (DISK when unknown).
    pub fn storage_type(&self, ix: u8) -> u8 {
        match self.storages.get(ix as usize).map_or(0, |s| s.storage_type) {
            0 => 1,
            t => t,
        }
    }

    pub fn storage_uuid(&self, ix: u8) -> String {
        self.storages
            .get(ix as usize)
            .map(|s| s.uuid.clone())
            .unwrap_or_default()
    }

    /// The index of a storage by uuid, adding it if it is new.
    pub fn storage_ix(&mut self, uuid: &str) -> u8 {
        if let Some(i) = self.storages.iter().position(|s| s.uuid == uuid) {
            return i as u8;
        }
        self.storages.push(StorageState {
            uuid: uuid.to_string(),
            ..Default::default()
        });
        (self.storages.len() - 1) as u8
    }
}

#[derive(Default)]
pub struct Registry {
    nodes: Vec<Node>,
    by_uuid: HashMap<String, NodeIx>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum RegisterError {
    TooMany,
}

impl Registry {
    /// Registers (or re-registers) a node. A node coming back under the same uuid keeps its
    /// index; a different uuid claiming the same transfer address replaces the old entry's
    /// liveness (it is a restarted node with a new identity).
    pub fn register(&mut self, id: NodeId, now_ms: i64) -> Result<NodeIx, RegisterError> {
        if let Some(&ix) = self.by_uuid.get(&id.uuid) {
            let n = &mut self.nodes[ix as usize];
            n.id = id;
            n.last_heartbeat_ms = now_ms;
            n.dead = false;
            return Ok(ix);
        }
        // The old identity stops counting at once; the dead-node monitor then forgets its
        // replicas as for any node that went silent.
        let addr = id.xfer_addr();
        for n in &mut self.nodes {
            if n.id.xfer_addr() == addr {
                n.last_heartbeat_ms = i64::MIN / 2;
            }
        }
        let ix = NodeIx::try_from(self.nodes.len()).map_err(|_| RegisterError::TooMany)?;
        self.by_uuid.insert(id.uuid.clone(), ix);
        self.nodes.push(Node {
            id,
            storages: Vec::new(),
            last_heartbeat_ms: now_ms,
            xceivers: 0,
            invalidate: Vec::new(),
            transfers: Vec::new(),
            dead: false,
            keys_generation: 0,
            balancer_bandwidth: 0,
            last_block_report_ms: 0,
            blocks: 0,
            rack: DEFAULT_RACK.to_string(),
            admin: AdminState::Normal,
            leaving_blocks: 0,
        });
        Ok(ix)
    }

    /// The racks of the nodes not dead at `now_ms`: with fewer than two, placement has no
    /// racks to spread over.
    pub fn live_racks(&self, now_ms: i64, dead_ms: u64) -> usize {
        let mut racks: Vec<&str> = self
            .nodes
            .iter()
            .filter(|n| n.liveness(now_ms, u64::MAX, dead_ms) != Liveness::Dead)
            .map(|n| n.rack.as_str())
            .collect();
        racks.sort_unstable();
        racks.dedup();
        racks.len()
    }

    /// The rack of a node on `ip`, if one is registered there.
    pub fn rack_of_ip(&self, ip: &str) -> Option<&str> {
        self.nodes
            .iter()
            .find(|n| n.id.ip == ip)
            .map(|n| n.rack.as_str())
    }

    pub fn lookup(&self, uuid: &str) -> Option<NodeIx> {
        self.by_uuid.get(uuid).copied()
    }

    pub fn get(&self, ix: NodeIx) -> &Node {
        &self.nodes[ix as usize]
    }

    pub fn get_mut(&mut self, ix: NodeIx) -> &mut Node {
        &mut self.nodes[ix as usize]
    }

    pub fn iter(&self) -> impl Iterator<Item = (NodeIx, &Node)> {
        self.nodes.iter().enumerate().map(|(i, n)| (i as NodeIx, n))
    }

    /// Nodes whose heartbeats stopped more than `dead_ms` ago and that were not yet marked.
    /// Marks them, so each is reported once.
    pub fn newly_dead(&mut self, now_ms: i64, dead_ms: u64) -> Vec<NodeIx> {
        let mut out = Vec::new();
        for (i, n) in self.nodes.iter_mut().enumerate() {
            if !n.dead && n.liveness(now_ms, u64::MAX, dead_ms) == Liveness::Dead {
                n.dead = true;
                out.push(i as NodeIx);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(uuid: &str, port: u32) -> NodeId {
        NodeId {
            ip: "127.0.0.1".into(),
            host: "localhost".into(),
            uuid: uuid.into(),
            xfer_port: port,
            info_port: 0,
            ipc_port: 0,
        }
    }

    #[test]
    fn same_uuid_keeps_its_index_and_nodes_share_an_ip() {
        let mut r = Registry::default();
        let a = r.register(id("a", 1), 0).unwrap();
        let b = r.register(id("b", 2), 0).unwrap();
        assert_ne!(a, b);
        assert_eq!(r.register(id("a", 1), 5).unwrap(), a);
        assert_eq!(r.get(a).last_heartbeat_ms, 5);
    }

    #[test]
    fn liveness_goes_stale_then_dead_once() {
        let mut r = Registry::default();
        let a = r.register(id("a", 1), 0).unwrap();
        assert_eq!(r.get(a).liveness(10, 100, 1000), Liveness::Live);
        assert_eq!(r.get(a).liveness(500, 100, 1000), Liveness::Stale);
        assert_eq!(r.get(a).liveness(2000, 100, 1000), Liveness::Dead);
        assert_eq!(r.newly_dead(2000, 1000), vec![a]);
        assert!(r.newly_dead(3000, 1000).is_empty());
        // A heartbeat-less re-registration brings it back.
        r.register(id("a", 1), 3000).unwrap();
        assert_eq!(r.get(a).liveness(3001, 100, 1000), Liveness::Live);
    }

    #[test]
    fn a_new_identity_on_an_old_address_retires_the_old_entry() {
        let mut r = Registry::default();
        let a = r.register(id("a", 1), 0).unwrap();
        r.register(id("a2", 1), 0).unwrap();
        assert_eq!(r.get(a).liveness(0, 100, 1000), Liveness::Dead);
        assert_eq!(
            r.newly_dead(0, 1000),
            vec![a],
            "so its replicas get forgotten"
        );
    }
}
