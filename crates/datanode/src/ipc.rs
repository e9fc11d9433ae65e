//! The DataNode's Hadoop IPC port (ClientDatanodeProtocol). Readers of a file that is still
//! being written ask it how much of the last block they may read; operators ask it for the
//! read server's counters (org.ferrite.DataNodeStatsProtocol).

use std::sync::Arc;

use ferrite_ipc::{
    CallCtx, MethodKind, Router, RpcError, Service, CLIENT_DATANODE_PROTOCOL,
    DATANODE_STATS_PROTOCOL,
};
use ferrite_proto::ferrite::{GetReadStatsRequestProto, ReadStatsProto};
use ferrite_proto::hdfs::{
    GetReplicaVisibleLengthRequestProto, GetReplicaVisibleLengthResponseProto,
};

use crate::readserver::metrics::Snapshot;
use crate::storage::Dataset;

pub struct DnService {
    pub ds: Arc<Dataset>,
}

impl Service for DnService {}

pub fn router(ds: Arc<Dataset>) -> Router<DnService> {
    let mut r = Router::new(Arc::new(DnService { ds }));
    r.method(
        CLIENT_DATANODE_PROTOCOL,
        "getReplicaVisibleLength",
        MethodKind::READ,
        visible_length,
    );
    r.method(
        DATANODE_STATS_PROTOCOL,
        "getReadStats",
        MethodKind::READ,
        read_stats,
    );
    r
}

async fn read_stats(
    s: Arc<DnService>,
    _: CallCtx,
    _: GetReadStatsRequestProto,
) -> Result<ReadStatsProto, RpcError> {
    Ok(to_proto(s.ds.reads().snapshot()))
}

pub fn to_proto(s: Snapshot) -> ReadStatsProto {
    ReadStatsProto {
        active_reads: s.active_reads,
        reads: s.reads,
        bytes_sendfile: s.bytes_sendfile,
        bytes_copy: s.bytes_copy,
        handles_open: s.handles_open,
        handles_cached: s.handles_cached,
        cache_hits: s.cache_hits,
        cache_misses: s.cache_misses,
        cache_evictions: s.cache_evictions,
        io_queued: s.io_queued,
        io_running: s.io_running,
        threads: s.threads,
        fds: s.fds,
    }
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
