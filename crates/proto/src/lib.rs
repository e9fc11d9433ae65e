//! Ferrite's protobuf types for the Hadoop wire subset it speaks.
//!
//! The `.proto` files under `proto/` are Ferrite's own, written to match Hadoop 3.4 field
//! numbers and types. They stay proto2 so that required fields are always encoded: Java
//! clients reject messages that leave one out.

#![allow(clippy::all, missing_docs)]

/// `hadoop.common`: IPC headers, SASL, connection context, tokens, HA state.
pub mod common {
    include!(concat!(env!("OUT_DIR"), "/hadoop.common.rs"));
}

/// `hadoop.hdfs`: shared HDFS structures, ClientNamenodeProtocol and DataTransferProtocol messages.
pub mod hdfs {
    include!(concat!(env!("OUT_DIR"), "/hadoop.hdfs.rs"));

    // Nested so that prost's `super::` paths to `hadoop.hdfs` types resolve.
    pub mod datanode {
        include!(concat!(env!("OUT_DIR"), "/hadoop.hdfs.datanode.rs"));
    }

    pub mod namenode {
        include!(concat!(env!("OUT_DIR"), "/hadoop.hdfs.namenode.rs"));
    }
}

/// `hadoop.hdfs.datanode`: DatanodeProtocol (DataNode → NameNode) messages.
pub use hdfs::datanode;
/// `hadoop.hdfs.namenode`: NamenodeProtocol (Balancer, Mover → NameNode) messages.
pub use hdfs::namenode;

/// `ferrite`: Ferrite's own messages (the block token identifier, the summary protocol).
pub mod ferrite {
    include!(concat!(env!("OUT_DIR"), "/ferrite.rs"));

    /// `ferrite.raft`: the NameNodes' replicated journal (Raft's calls between them).
    pub mod raft {
        include!(concat!(env!("OUT_DIR"), "/ferrite.raft.rs"));
    }
}

pub use prost::Message;

pub mod rpc_error;

/// The compact block-list form of block reports (`BlockListAsLongs` buffers), written by
/// DataNodes and read by the NameNode: per replica, four varints.
pub mod block_list {
    /// Replica states as the buffers carry them.
    pub const FINALIZED: u64 = 0;
    pub const RBW: u64 = 1;
    /// Waiting to be recovered: unfinished when its DataNode restarted.
    pub const RWR: u64 = 2;

    /// Appends one replica: zigzag block id, length, generation stamp, state.
    pub fn push(buf: &mut Vec<u8>, id: u64, len: u64, gs: u64, state: u64) {
        let zigzag = ((id as i64) << 1 ^ ((id as i64) >> 63)) as u64;
        for v in [zigzag, len, gs, state] {
            prost::encoding::encode_varint(v, buf);
        }
    }
}
