//! The DataNode's Hadoop IPC port (ClientDatanodeProtocol). Readers of a file that is still
//! being written ask it how much of the last block they may read.

use std::sync::Arc;

use ferrite_ipc::{CallCtx, MethodKind, Router, RpcError, Service, CLIENT_DATANODE_PROTOCOL};
use ferrite_proto::hdfs::{
    GetReplicaVisibleLengthRequestProto, GetReplicaVisibleLengthResponseProto,
};

use crate::storage::Dataset;

pub struct DnService {
    pub ds: Arc<Dataset>,
}

impl Service for DnService {}

pub fn router(ds: Arc<Dataset>) -> Router<DnService> {
    let mut r =
        Router::new(Arc::new(DnService { ds })).with_retry_cache(std::time::Duration::ZERO, 0);
    r.method(
        CLIENT_DATANODE_PROTOCOL,
        "getReplicaVisibleLength",
        MethodKind::READ,
        visible_length,
    );
    r
}

async fn visible_length(
    s: Arc<DnService>,
    _: CallCtx,
    req: GetReplicaVisibleLengthRequestProto,
) -> Result<GetReplicaVisibleLengthResponseProto, RpcError> {
    let b = &req.block;
    match s.ds.get(b.block_id) {
        Some(r) if r.gs >= b.generation_stamp => Ok(GetReplicaVisibleLengthResponseProto {
            length: r.len as i64,
        }),
        _ => Err(RpcError::app(
            "org.apache.hadoop.hdfs.server.datanode.ReplicaNotFoundException",
            format!(
                "Replica not found for BP-{}:blk_{}_{}",
                b.pool_id, b.block_id, b.generation_stamp
            ),
        )),
    }
}
