//! The DataNode's Hadoop IPC port (ClientDatanodeProtocol). Readers of a file that is still
//! being written ask it how much of the last block they may read; operators ask it for the
//! read server's counters (org.ferrite.DataNodeStatsProtocol) and the Balancer's
//! bandwidth.

use std::sync::Arc;

use ferrite_ipc::{
    CallCtx, MethodKind, OpenService, Router, RpcError, CLIENT_DATANODE_PROTOCOL,
    DATANODE_STATS_PROTOCOL, INTER_DATANODE_PROTOCOL,
};
use ferrite_proto::ferrite::{GetReadStatsRequestProto, ReadStatsProto};
use ferrite_proto::hdfs::{
    GetBalancerBandwidthRequestProto, GetBalancerBandwidthResponseProto,
    GetReplicaVisibleLengthRequestProto, GetReplicaVisibleLengthResponseProto,
    InitReplicaRecoveryRequestProto, InitReplicaRecoveryResponseProto,
    UpdateReplicaUnderRecoveryRequestProto, UpdateReplicaUnderRecoveryResponseProto,
};

use crate::nn_link::NnLink;
use crate::readserver::metrics::Snapshot;
use crate::storage::Dataset;

pub(crate) struct DnService {
    pub ds: Arc<Dataset>,
    /// Where a replica this port changed (a block recovery's update) is reported.
    pub link: Arc<NnLink>,
}

impl OpenService for DnService {}

pub(crate) fn router(ds: Arc<Dataset>, link: Arc<NnLink>) -> Router<DnService> {
    let mut r = Router::new(Arc::new(DnService { ds, link }));
    r.method(
        CLIENT_DATANODE_PROTOCOL,
        "getReplicaVisibleLength",
        MethodKind::READ,
        visible_length,
    );
    r.method(
        CLIENT_DATANODE_PROTOCOL,
        "getBalancerBandwidth",
        MethodKind::READ,
        balancer_bandwidth,
    );
    r.method(
        INTER_DATANODE_PROTOCOL,
        "initReplicaRecovery",
        MethodKind::READ,
        init_replica_recovery,
    );
    r.method(
        INTER_DATANODE_PROTOCOL,
        "updateReplicaUnderRecovery",
        MethodKind::READ,
        update_replica_under_recovery,
    );
    r.method(
        DATANODE_STATS_PROTOCOL,
        "getReadStats",
        MethodKind::READ,
        read_stats,
    );
    r
}

/// `dfsadmin -getBalancerBandwidth`: the rate replica moves are held to now.
async fn balancer_bandwidth(
    s: Arc<DnService>,
    _: CallCtx,
    _: GetBalancerBandwidthRequestProto,
) -> Result<GetBalancerBandwidthResponseProto, RpcError> {
    Ok(GetBalancerBandwidthResponseProto {
        bandwidth: s.link.balance.bandwidth(),
    })
}

async fn read_stats(
    s: Arc<DnService>,
    _: CallCtx,
    _: GetReadStatsRequestProto,
) -> Result<ReadStatsProto, RpcError> {
    Ok(to_proto(s.ds.reads().snapshot()))
}

pub(crate) fn to_proto(s: Snapshot) -> ReadStatsProto {
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
        // -1 for a replica none of whose bytes are readable, as HDFS answers: the reader
        // asks the next DataNode.
        Some(r) if r.gs >= b.generation_stamp => Ok(GetReplicaVisibleLengthResponseProto {
            length: r.readable_len().map_or(-1, |l| l as i64),
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

/// The class HDFS's DataNodes answer a refused recovery step with.
const RECOVERY_IN_PROGRESS: &str = "org.apache.hadoop.hdfs.protocol.RecoveryInProgressException";

async fn init_replica_recovery(
    s: Arc<DnService>,
    _: CallCtx,
    req: InitReplicaRecoveryRequestProto,
) -> Result<InitReplicaRecoveryResponseProto, RpcError> {
    crate::recovery::init_local(s.ds.clone(), req.block)
        .await
        .map_err(|e| RpcError::app(RECOVERY_IN_PROGRESS, e.to_string()))
}

async fn update_replica_under_recovery(
    s: Arc<DnService>,
    _: CallCtx,
    req: UpdateReplicaUnderRecoveryRequestProto,
) -> Result<UpdateReplicaUnderRecoveryResponseProto, RpcError> {
    let (id, rid, len) = (req.block.block_id, req.recovery_id, req.new_length);
    let copy_to = req.new_block_id.filter(|&n| n != 0 && n != id);
    let storage = crate::recovery::update_local(s.ds.clone(), &s.link, id, rid, copy_to, len)
        .await
        .map_err(|e| RpcError::app("java.io.IOException", e.to_string()))?;
    Ok(UpdateReplicaUnderRecoveryResponseProto {
        storage_uuid: Some(storage),
    })
}
