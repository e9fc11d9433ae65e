//! Domain values to and from their protobuf forms: file statuses, blocks, DataNodes,
//! located blocks and tokens.

use ferrite_blocktoken::Token;
use ferrite_proto::common::TokenProto;
use ferrite_proto::hdfs::hdfs_file_status_proto::FileType;
use ferrite_proto::hdfs::*;

use crate::blocks::registry::{Node, NodeId};
use crate::namespace::blocks::Previous;
use crate::namespace::inode::Block;
use crate::namespace::query::FileStatus;
use crate::service::{DatanodeInfo, LocatedBlock, LocatedBlocks};

/// The wire form of a file status.
pub fn status_proto(s: &FileStatus) -> HdfsFileStatusProto {
    HdfsFileStatusProto {
        file_type: if s.is_dir {
            FileType::IsDir
        } else {
            FileType::IsFile
        } as i32,
        path: s.name.clone(),
        length: s.len,
        permission: FsPermissionProto {
            perm: u32::from(s.perm),
        },
        owner: s.owner.clone(),
        group: s.group.clone(),
        modification_time: s.mtime.max(0) as u64,
        access_time: s.atime.max(0) as u64,
        block_replication: Some(s.replication as u32),
        blocksize: Some(s.block_size),
        file_id: Some(s.file_id),
        children_num: Some(s.children),
        storage_policy: Some(u32::from(s.storage_policy)),
        flags: Some(
            if s.has_acl { HAS_ACL } else { 0 }
                | if s.snapshot_enabled {
                    SNAPSHOT_ENABLED
                } else {
                    0
                },
        ),
        ..Default::default()
    }
}

/// `HdfsFileStatusProto.Flags.HAS_ACL`.
const HAS_ACL: u32 = 1;
/// `HdfsFileStatusProto.Flags.SNAPSHOT_ENABLED`.
const SNAPSHOT_ENABLED: u32 = 8;

pub fn perm_bits(p: &FsPermissionProto) -> u16 {
    (p.perm & 0o7777) as u16
}

/// A token as the wire carries it; tokens off is an empty one, as HDFS sends.
pub fn token_proto(t: &Option<Token>) -> TokenProto {
    t.as_ref().map(Token::to_proto).unwrap_or_default()
}

pub fn extended(pool: &str, b: &Block) -> ExtendedBlockProto {
    ExtendedBlockProto {
        pool_id: pool.to_string(),
        block_id: b.id,
        generation_stamp: b.gs,
        num_bytes: Some(b.len),
    }
}

/// A block the client names, as the namespace takes it.
pub fn block_of(b: &ExtendedBlockProto) -> Block {
    Block {
        id: b.block_id,
        gs: b.generation_stamp,
        len: b.num_bytes.unwrap_or(0),
    }
}

/// A finished block with its length, as addBlock's `previous` and complete's `last`.
pub fn previous_of(b: &ExtendedBlockProto) -> Previous {
    Previous {
        id: b.block_id,
        gs: b.generation_stamp,
        len: b.num_bytes.unwrap_or(0),
    }
}

pub fn block_proto(b: &Block) -> BlockProto {
    BlockProto {
        block_id: b.id,
        gen_stamp: b.gs,
        num_bytes: Some(b.len),
    }
}

pub fn datanode_id(id: &NodeId) -> DatanodeIdProto {
    DatanodeIdProto {
        ip_addr: id.ip.clone(),
        host_name: id.host.clone(),
        datanode_uuid: id.uuid.clone(),
        xfer_port: id.xfer_port,
        info_port: id.info_port,
        ipc_port: id.ipc_port,
        info_secure_port: Some(0),
    }
}

pub fn node_id_of(d: &DatanodeIdProto) -> NodeId {
    NodeId {
        ip: d.ip_addr.clone(),
        host: d.host_name.clone(),
        uuid: d.datanode_uuid.clone(),
        xfer_port: d.xfer_port,
        info_port: d.info_port,
        ipc_port: d.ipc_port,
    }
}

/// The numbers of a DataNode's wire form, around its id.
fn info_proto(
    id: DatanodeIdProto,
    (rack, admin): (&str, crate::blocks::registry::AdminState),
    capacity: u64,
    dfs_used: u64,
    remaining: u64,
    last_update_ms: i64,
    xceivers: u32,
) -> DatanodeInfoProto {
    DatanodeInfoProto {
        id,
        capacity: Some(capacity),
        dfs_used: Some(dfs_used),
        remaining: Some(remaining),
        block_pool_used: Some(dfs_used),
        last_update: Some(last_update_ms.max(0) as u64),
        xceiver_count: Some(xceivers),
        location: Some(rack.into()),
        // What the disks hold besides blocks, as HDFS derives it.
        non_dfs_used: Some(capacity.saturating_sub(dfs_used.saturating_add(remaining))),
        admin_state: Some(admin.proto()),
        ..Default::default()
    }
}

pub fn datanode_info(n: &DatanodeInfo) -> DatanodeInfoProto {
    info_proto(
        datanode_id(&n.id),
        (&n.rack, n.admin),
        n.capacity,
        n.dfs_used,
        n.remaining,
        n.last_update_ms,
        n.xceivers,
    )
}

/// A node as getDatanodeReport shows it: a location's fields, plus its last block report
/// and how many finished replicas it holds (`dfsadmin -report`).
pub fn datanode_report_info(n: &DatanodeInfo) -> DatanodeInfoProto {
    DatanodeInfoProto {
        last_block_report_time: Some(n.last_block_report_ms.max(0) as u64),
        num_blocks: Some(u32::try_from(n.blocks).unwrap_or(u32::MAX)),
        ..datanode_info(n)
    }
}

/// A registered node as a location shows it, straight from the block map (the
/// getBlockLocations encoder's form: no copy of the node first).
pub fn node_info(n: &Node) -> DatanodeInfoProto {
    info_proto(
        datanode_id(&n.id),
        (&n.rack, n.admin),
        n.capacity(),
        n.dfs_used(),
        n.remaining(),
        n.last_heartbeat_ms,
        n.xceivers,
    )
}

pub fn located_block(pool: &str, lb: &LocatedBlock) -> LocatedBlockProto {
    let n = lb.locations.len();
    LocatedBlockProto {
        b: extended(pool, &lb.block),
        offset: lb.offset,
        locs: lb
            .locations
            .iter()
            .map(|l| datanode_info(&l.node))
            .collect(),
        corrupt: false,
        block_token: token_proto(&lb.token),
        is_cached: vec![false; n],
        storage_types: lb
            .locations
            .iter()
            .map(|l| i32::from(l.storage_type))
            .collect(),
        storage_i_ds: lb
            .locations
            .iter()
            .map(|l| l.storage_uuid.clone())
            .collect(),
        block_indices: None,
        block_tokens: Vec::new(),
    }
}

pub fn located_blocks(pool: &str, l: &LocatedBlocks) -> LocatedBlocksProto {
    LocatedBlocksProto {
        file_length: l.file_len,
        blocks: l.blocks.iter().map(|b| located_block(pool, b)).collect(),
        under_construction: l.under_construction,
        last_block: l.last.as_ref().map(|b| located_block(pool, b)),
        is_last_block_complete: !l.under_construction,
    }
}

/// DataNodes (`ip:xferPort`) a client asks to leave out.
pub fn xfer_addrs(nodes: &[DatanodeInfoProto]) -> std::collections::HashSet<String> {
    nodes
        .iter()
        .map(|d| format!("{}:{}", d.id.ip_addr, d.id.xfer_port))
        .collect()
}
