//! The block half of ClientNamenodeProtocol: addBlock, abandonBlock, complete, pipeline
//! recovery, getBlockLocations (encoded straight into the reply, see `located_reply.rs`),
//! reportBadBlocks and the cluster reports clients ask for.

use ferrite_ipc::{Router, CLIENT_PROTOCOL};
use ferrite_proto::hdfs::*;

use super::convert::{block_of, datanode_report_info, located_block, previous_of, xfer_addrs};
use super::located_reply::LocatedReply;
use super::{Nn, Register, Res};
use crate::service::{AddBlock, AdditionalDatanodes, NameNodeService, NodeFilter};
use crate::service::{Admitted, Operation};

pub fn register(r: &mut Router<NameNodeService>) {
    let p = CLIENT_PROTOCOL;
    r.op(p, Operation::GetBlockLocations, get_block_locations);
    r.op(p, Operation::GetFsStats, get_fs_stats);
    r.op(
        p,
        Operation::GetFsReplicatedBlockStats,
        get_fs_replicated_block_stats,
    );
    r.op(
        p,
        Operation::GetFsECBlockGroupStats,
        get_fs_ec_block_group_stats,
    );
    r.op(p, Operation::ListOpenFiles, list_open_files);
    r.op(
        p,
        Operation::GetSlowDatanodeReport,
        get_slow_datanode_report,
    );
    r.op(p, Operation::GetDatanodeReport, get_datanode_report);
    r.op(p, Operation::Complete, complete);
    r.op(p, Operation::AddBlock, add_block);
    r.op(p, Operation::AbandonBlock, abandon_block);
    r.op(
        p,
        Operation::UpdateBlockForPipeline,
        update_block_for_pipeline,
    );
    r.op(p, Operation::UpdatePipeline, update_pipeline);
    r.op(p, Operation::GetAdditionalDatanode, get_additional_datanode);
    r.op(p, Operation::ReportBadBlocks, report_bad_blocks);
}

pub async fn add_block(
    nn: Nn,
    who: Admitted,
    req: AddBlockRequestProto,
) -> Res<AddBlockResponseProto> {
    let add = AddBlock {
        src: &req.src,
        client_name: &req.client_name,
        file_id: req.file_id.unwrap_or(0),
        previous: req.previous.as_ref().map(previous_of),
        excluded: xfer_addrs(&req.exclude_nodes),
    };
    let lb = nn.add_block(&who, &add).await?;
    Ok(AddBlockResponseProto {
        block: located_block(&nn.identity().block_pool_id, &lb),
    })
}

/// Pipeline recovery, step 1: a new generation stamp for the block being written.
pub async fn update_block_for_pipeline(
    nn: Nn,
    who: Admitted,
    req: UpdateBlockForPipelineRequestProto,
) -> Res<UpdateBlockForPipelineResponseProto> {
    let lb = nn
        .update_block_for_pipeline(&who, block_of(&req.block), &req.client_name)
        .await?;
    Ok(UpdateBlockForPipelineResponseProto {
        block: located_block(&nn.identity().block_pool_id, &lb),
    })
}

/// Pipeline recovery, last step: the client names the nodes that carry on.
pub async fn update_pipeline(
    nn: Nn,
    who: Admitted,
    req: UpdatePipelineRequestProto,
) -> Res<UpdatePipelineResponseProto> {
    let nodes: Vec<&str> = req
        .new_nodes
        .iter()
        .map(|d| d.datanode_uuid.as_str())
        .collect();
    nn.update_pipeline(
        &who,
        &req.client_name,
        block_of(&req.old_block),
        block_of(&req.new_block),
        &nodes,
    )
    .await?;
    Ok(UpdatePipelineResponseProto {})
}

/// More targets for a pipeline that lost nodes (the client then copies the block there).
pub async fn get_additional_datanode(
    nn: Nn,
    who: Admitted,
    req: GetAdditionalDatanodeRequestProto,
) -> Res<GetAdditionalDatanodeResponseProto> {
    let existing: Vec<(&str, &str)> = req
        .existings
        .iter()
        .zip(
            req.existing_storage_uuids
                .iter()
                .map(String::as_str)
                .chain(std::iter::repeat("")),
        )
        .map(|(d, s)| (d.id.datanode_uuid.as_str(), s))
        .collect();
    let excluded = xfer_addrs(&req.excludes);
    let ask = AdditionalDatanodes {
        src: &req.src,
        client_name: &req.client_name,
        file_id: req.file_id.unwrap_or(0),
        block: block_of(&req.blk),
        existing: &existing,
        excluded: &excluded,
        wanted: req.num_additional_nodes as usize,
    };
    let lb = nn.additional_datanodes(&who, &ask)?;
    Ok(GetAdditionalDatanodeResponseProto {
        block: located_block(&nn.identity().block_pool_id, &lb),
    })
}

pub async fn abandon_block(
    nn: Nn,
    who: Admitted,
    req: AbandonBlockRequestProto,
) -> Res<AbandonBlockResponseProto> {
    let file_id = req.file_id.unwrap_or(0);
    nn.abandon_block(&who, &req.src, &req.holder, file_id, req.b.block_id)
        .await?;
    Ok(AbandonBlockResponseProto {})
}

pub async fn complete(
    nn: Nn,
    who: Admitted,
    req: CompleteRequestProto,
) -> Res<CompleteResponseProto> {
    let last = req.last.as_ref().map(previous_of);
    let result = nn
        .complete(
            &who,
            &req.src,
            &req.client_name,
            req.file_id.unwrap_or(0),
            last,
        )
        .await?;
    Ok(CompleteResponseProto { result })
}

pub async fn get_block_locations(
    nn: Nn,
    who: Admitted,
    req: GetBlockLocationsRequestProto,
) -> Res<LocatedReply> {
    let reply: LocatedReply = nn
        .block_locations(&who, &req.src, req.offset, req.length)
        .await?;
    Ok(reply.finish())
}

/// Corrupt replicas, as the service takes them: (block, the nodes holding them).
pub(super) fn bad_replicas(blocks: &[LocatedBlockProto]) -> Vec<(u64, Vec<&str>)> {
    blocks
        .iter()
        .map(|lb| {
            let nodes = lb
                .locs
                .iter()
                .map(|d| d.id.datanode_uuid.as_str())
                .collect();
            (lb.b.block_id, nodes)
        })
        .collect()
}

pub async fn report_bad_blocks(
    nn: Nn,
    who: Admitted,
    req: ReportBadBlocksRequestProto,
) -> Res<ReportBadBlocksResponseProto> {
    nn.mark_bad_blocks(&who, &bad_replicas(&req.blocks));
    Ok(ReportBadBlocksResponseProto {})
}

/// A report's `DatanodeReportTypeProto` as the nodes it asks for.
pub(super) fn node_filter(t: i32) -> NodeFilter {
    match DatanodeReportTypeProto::try_from(t) {
        Ok(DatanodeReportTypeProto::All) | Err(_) => NodeFilter::All,
        Ok(DatanodeReportTypeProto::Live) => NodeFilter::Live,
        Ok(DatanodeReportTypeProto::Dead) => NodeFilter::Dead,
        Ok(DatanodeReportTypeProto::Decommissioning) => NodeFilter::Decommissioning,
        Ok(DatanodeReportTypeProto::EnteringMaintenance) => NodeFilter::EnteringMaintenance,
        Ok(DatanodeReportTypeProto::InMaintenance) => NodeFilter::InMaintenance,
    }
}

pub async fn get_datanode_report(
    nn: Nn,
    _: Admitted,
    req: GetDatanodeReportRequestProto,
) -> Res<GetDatanodeReportResponseProto> {
    let filter = node_filter(req.r#type);
    Ok(GetDatanodeReportResponseProto {
        di: nn
            .datanode_report(filter)
            .iter()
            .map(datanode_report_info)
            .collect(),
    })
}

pub async fn get_fs_stats(
    nn: Nn,
    _: Admitted,
    _: GetFsStatusRequestProto,
) -> Res<GetFsStatsResponseProto> {
    let s = nn.fs_stats();
    Ok(GetFsStatsResponseProto {
        capacity: s.capacity,
        used: s.used,
        remaining: s.remaining,
        under_replicated: s.under_replicated,
        corrupt_blocks: s.corrupt_blocks,
        missing_blocks: s.missing_blocks,
        missing_repl_one_blocks: Some(0),
        blocks_in_future: Some(0),
        pending_deletion_blocks: Some(s.pending_deletion_blocks),
    })
}

/// `dfsadmin -report`'s "Replicated Blocks": the same health counts as getFsStats.
pub async fn get_fs_replicated_block_stats(
    nn: Nn,
    _: Admitted,
    _: GetFsReplicatedBlockStatsRequestProto,
) -> Res<GetFsReplicatedBlockStatsResponseProto> {
    let s = nn.fs_stats();
    Ok(GetFsReplicatedBlockStatsResponseProto {
        low_redundancy: s.under_replicated,
        corrupt_blocks: s.corrupt_blocks,
        missing_blocks: s.missing_blocks,
        missing_repl_one_blocks: 0,
        blocks_in_future: 0,
        pending_deletion_blocks: s.pending_deletion_blocks,
        highest_prio_low_redundancy_blocks: Some(s.last_replica),
    })
}

/// Slow DataNodes, by peer latency: Ferrite keeps no such statistics (HDFS neither, unless
/// `dfs.datanode.peer.stats.enabled`), so none.
pub async fn get_slow_datanode_report(
    _: Nn,
    _: Admitted,
    _: GetSlowDatanodeReportRequestProto,
) -> Res<GetSlowDatanodeReportResponseProto> {
    Ok(GetSlowDatanodeReportResponseProto::default())
}

/// `dfsadmin -report`'s "Erasure Coded Block Groups": Ferrite has no erasure coding, so
/// there are none.
pub async fn get_fs_ec_block_group_stats(
    _: Nn,
    _: Admitted,
    _: GetFsEcBlockGroupStatsRequestProto,
) -> Res<GetFsEcBlockGroupStatsResponseProto> {
    Ok(GetFsEcBlockGroupStatsResponseProto {
        highest_prio_low_redundancy_blocks: Some(0),
        ..Default::default()
    })
}

/// `dfsadmin -listOpenFiles [-path P]`: a batch after inode id `id`.
pub async fn list_open_files(
    nn: Nn,
    who: Admitted,
    req: ListOpenFilesRequestProto,
) -> Res<ListOpenFilesResponseProto> {
    let after = u64::try_from(req.id).unwrap_or(0);
    let (files, has_more) = nn.list_open_files(&who, after, req.path.as_deref().unwrap_or("/"));
    Ok(ListOpenFilesResponseProto {
        entries: files
            .into_iter()
            .map(|f| OpenFilesBatchResponseProto {
                id: f.id as i64,
                path: f.path,
                client_name: f.client_name,
                client_machine: f.client_machine,
            })
            .collect(),
        has_more,
        types: req.types,
    })
}
