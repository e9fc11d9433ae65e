//! The block half of ClientNamenodeProtocol: addBlock, abandonBlock, complete,
//! getBlockLocations, reportBadBlocks and the DataNode reports clients ask for. The
//! namespace plans the journaled part; the block manager supplies replica locations.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ferrite_ipc::{CallCtx, RpcError};
use ferrite_proto::common::TokenProto;
use ferrite_proto::hdfs::*;

use crate::blocks::placement::{choose_targets, sort_for_reader, PlacementRequest, Target};
use crate::blocks::registry::{Liveness, Node, NodeIx, Registry};
use crate::blocks::BlockManager;
use crate::error::FsError;
use crate::located_reply::LocatedReply;
use crate::namespace::blocks::{NewBlock, Placed, Previous};
use crate::namespace::inode::Block;
use crate::state::{now_ms, NnState};
use ferrite_blocktoken::Modes;

type Nn = Arc<NnState>;
type Res<T> = Result<T, RpcError>;

/// A per-process counter that varies placement and reader order between calls.
fn seed() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    NEXT.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
}

pub fn extended(pool: &str, b: &Block) -> ExtendedBlockProto {
    ExtendedBlockProto {
        pool_id: pool.to_string(),
        block_id: b.id,
        generation_stamp: b.gs,
        num_bytes: Some(b.len),
    }
}

pub fn datanode_id(n: &Node) -> DatanodeIdProto {
    DatanodeIdProto {
        ip_addr: n.id.ip.clone(),
        host_name: n.id.host.clone(),
        datanode_uuid: n.id.uuid.clone(),
        xfer_port: n.id.xfer_port,
        info_port: n.id.info_port,
        ipc_port: n.id.ipc_port,
        info_secure_port: Some(0),
    }
}

pub fn datanode_info(n: &Node) -> DatanodeInfoProto {
    DatanodeInfoProto {
        id: datanode_id(n),
        capacity: Some(n.capacity()),
        dfs_used: Some(n.dfs_used()),
        remaining: Some(n.remaining()),
        block_pool_used: Some(n.dfs_used()),
        last_update: Some(n.last_heartbeat_ms.max(0) as u64),
        xceiver_count: Some(n.xceivers),
        location: Some("/default-rack".into()),
        non_dfs_used: Some(0),
        admin_state: Some(0),
        ..Default::default()
    }
}

/// A LocatedBlock for `locs` in the given order, carrying `token`.
pub(crate) fn located(
    pool: &str,
    p: &Placed,
    reg: &Registry,
    locs: &[(NodeIx, u8)],
    token: TokenProto,
) -> LocatedBlockProto {
    let nodes: Vec<&Node> = locs.iter().map(|&(ix, _)| reg.get(ix)).collect();
    LocatedBlockProto {
        b: extended(pool, &p.block),
        offset: p.offset,
        locs: nodes.iter().map(|n| datanode_info(n)).collect(),
        corrupt: false,
        block_token: token,
        is_cached: vec![false; locs.len()],
        storage_types: vec![StorageTypeProto::Disk as i32; locs.len()],
        storage_i_ds: locs
            .iter()
            .zip(&nodes)
            .map(|(&(_, s), n)| n.storage_uuid(s))
            .collect(),
        block_indices: None,
        block_tokens: Vec::new(),
    }
}

/// The readable replicas of a block, closest to `reader_ip` first (ties broken by
/// `seed`), into `locs`.
fn reader_locations(
    nn: &NnState,
    mgr: &BlockManager,
    id: u64,
    reader_ip: &str,
    now: i64,
    seed: u64,
    locs: &mut Vec<(NodeIx, u8)>,
) {
    let dead_ms = nn.cfg.dead_interval_ms();
    locs.clear();
    if let Some(e) = mgr.entry(id) {
        locs.extend(
            e.replicas
                .iter()
                .filter(|r| {
                    !r.corrupt
                        && mgr.reg.get(r.node).liveness(now, u64::MAX, dead_ms) != Liveness::Dead
                })
                .map(|r| (r.node, r.storage)),
        );
    }
    sort_for_reader(
        &mgr.reg,
        locs,
        reader_ip,
        now,
        nn.cfg.stale_interval_ms,
        seed,
    );
}

fn xfer_addr(d: &DatanodeInfoProto) -> String {
    format!("{}:{}", d.id.ip_addr, d.id.xfer_port)
}

pub async fn add_block(
    nn: Nn,
    ctx: CallCtx,
    req: AddBlockRequestProto,
) -> Res<AddBlockResponseProto> {
    let excluded: HashSet<String> = req.exclude_nodes.iter().map(xfer_addr).collect();
    let previous = req.previous.as_ref().map(|b| Previous {
        id: b.block_id,
        len: b.num_bytes.unwrap_or(0),
    });
    let writer_ip = ctx.peer_ip.clone();
    let user = ctx.user.clone();
    let file_id = req.file_id.unwrap_or(0);
    let min = nn.cfg.min_replication as usize;
    let pool = nn.identity.block_pool_id.clone();
    let nn2 = nn.clone();
    let block = nn
        .commit(|ns| {
            let mgr = nn2.blocks.lock();
            if let Some(p) = previous {
                if mgr.finalized_replicas(p.id) < min {
                    return Err(FsError::NotReplicatedYet(format!(
                        "Not replicated yet: {}",
                        req.src
                    )));
                }
            }
            let (nb, planned) = ns.plan_add_block(&req.src, &req.client_name, file_id, previous)?;
            // The plan found the file; only a retried addBlock (no record) walks again.
            let slot = match planned.first_at.slot {
                Some(slot) => slot,
                None => ns.existing(&req.src)?,
            };
            let inode = ns.inode(slot);
            let block_size = inode.file().map(|f| f.block_size).unwrap_or(0);
            let targets = choose_targets(
                &mgr.reg,
                &PlacementRequest {
                    replicas: inode.replication as usize,
                    block_size,
                    writer_ip: &writer_ip,
                    excluded: &excluded,
                    existing: &[],
                    now_ms: now_ms(),
                    stale_ms: nn2.cfg.stale_interval_ms,
                    dead_ms: nn2.cfg.dead_interval_ms(),
                    seed: seed(),
                },
            );
            if targets.len() < min.max(1) {
                let running = mgr
                    .reg
                    .iter()
                    .filter(|(_, n)| {
                        n.liveness(now_ms(), u64::MAX, nn2.cfg.dead_interval_ms())
                            != Liveness::Dead
                    })
                    .count();
                return Err(FsError::Io(format!(
                    "File {} could only be written to {} of the {min} minReplication nodes. There are {running} datanode(s) running and {} node(s) are excluded in this operation.",
                    req.src,
                    targets.len(),
                    excluded.len()
                )));
            }
            let placed = match nb {
                NewBlock::Fresh(p) | NewBlock::Retry(p) => p,
            };
            let token = nn2
                .tokens
                .for_block(&user, &pool, Modes::WRITE, placed.block.id);
            let lb = located(
                &pool,
                &placed,
                &mgr.reg,
                &targets
                    .iter()
                    .map(|t: &Target| (t.node, t.storage))
                    .collect::<Vec<_>>(),
                token,
            );
            Ok((lb, planned))
        })
        .await?;
    Ok(AddBlockResponseProto { block })
}

/// Pipeline recovery, step 1: a new generation stamp for the block being written.
pub async fn update_block_for_pipeline(
    nn: Nn,
    ctx: CallCtx,
    req: UpdateBlockForPipelineRequestProto,
) -> Res<UpdateBlockForPipelineResponseProto> {
    let pool = nn.identity.block_pool_id.clone();
    let placed = nn
        .commit(|ns| ns.plan_bump_gs(req.block.block_id, &req.client_name))
        .await?;
    let token = nn
        .tokens
        .for_block(&ctx.user, &pool, Modes::WRITE, placed.block.id);
    let mgr = nn.blocks.lock();
    Ok(UpdateBlockForPipelineResponseProto {
        block: located(&pool, &placed, &mgr.reg, &[], token),
    })
}

/// Pipeline recovery, last step: the client names the nodes that carry on. Replicas on
/// nodes that dropped out are forgotten (they are stale; their reports are refused).
pub async fn update_pipeline(
    nn: Nn,
    _: CallCtx,
    req: UpdatePipelineRequestProto,
) -> Res<UpdatePipelineResponseProto> {
    let nb = &req.new_block;
    if nb.block_id != req.old_block.block_id {
        return Err(FsError::Io(format!(
            "updatePipeline: blk_{} cannot become blk_{}",
            req.old_block.block_id, nb.block_id
        ))
        .into());
    }
    let ns = nn.ns.read();
    ns.check_update_pipeline(&req.client_name, nb.block_id, nb.generation_stamp)?;
    let mut mgr = nn.blocks.lock();
    let keep: Vec<_> = req
        .new_nodes
        .iter()
        .filter_map(|d| mgr.reg.lookup(&d.datanode_uuid))
        .collect();
    let gone = mgr.holders_except(nb.block_id, &keep);
    for n in gone {
        mgr.remove_replica(nb.block_id, n);
    }
    Ok(UpdatePipelineResponseProto {})
}

/// More targets for a pipeline that lost nodes (the client then copies the block there).
pub async fn get_additional_datanode(
    nn: Nn,
    ctx: CallCtx,
    req: GetAdditionalDatanodeRequestProto,
) -> Res<GetAdditionalDatanodeResponseProto> {
    let excluded: HashSet<String> = req.excludes.iter().map(xfer_addr).collect();
    let ns = nn.ns.read();
    let slot = ns
        .block_file(req.blk.block_id)
        .ok_or_else(|| FsError::Io(format!("Block blk_{} does not exist", req.blk.block_id)))?;
    let block_size = ns.inode(slot).file().map(|f| f.block_size).unwrap_or(0);
    let offset = ns.length_with_last(slot, 0);
    let mgr = nn.blocks.lock();
    let mut locs: Vec<(NodeIx, u8)> = Vec::new();
    for (d, uuid) in req.existings.iter().zip(
        req.existing_storage_uuids
            .iter()
            .chain(std::iter::repeat(&String::new())),
    ) {
        if let Some(ix) = mgr.reg.lookup(&d.id.datanode_uuid) {
            let n = mgr.reg.get(ix);
            let s = n
                .storages
                .iter()
                .position(|st| &st.uuid == uuid)
                .unwrap_or(0);
            locs.push((ix, s as u8));
        }
    }
    let existing: Vec<NodeIx> = locs.iter().map(|l| l.0).collect();
    let more = choose_targets(
        &mgr.reg,
        &PlacementRequest {
            replicas: req.num_additional_nodes as usize,
            block_size,
            writer_ip: &ctx.peer_ip,
            excluded: &excluded,
            existing: &existing,
            now_ms: now_ms(),
            stale_ms: nn.cfg.stale_interval_ms,
            dead_ms: nn.cfg.dead_interval_ms(),
            seed: seed(),
        },
    );
    // As HDFS: fewer (even no) new nodes is an answer, not an error; the client decides
    // whether it can go on with what it has.
    if more.is_empty() {
        tracing::warn!(block = req.blk.block_id, src = %req.src, "no additional DataNode available");
    }
    locs.extend(more.iter().map(|t| (t.node, t.storage)));
    let placed = Placed {
        block: Block {
            id: req.blk.block_id,
            gs: req.blk.generation_stamp,
            len: req.blk.num_bytes.unwrap_or(0),
        },
        offset,
    };
    // As HDFS: the client hands this token to an existing node, which copies the
    // replica to the new ones (TRANSFER_BLOCK needs COPY).
    let pool = &nn.identity.block_pool_id;
    let token = nn
        .tokens
        .for_block(&ctx.user, pool, Modes::COPY, placed.block.id);
    Ok(GetAdditionalDatanodeResponseProto {
        block: located(pool, &placed, &mgr.reg, &locs, token),
    })
}

pub async fn abandon_block(
    nn: Nn,
    _: CallCtx,
    req: AbandonBlockRequestProto,
) -> Res<AbandonBlockResponseProto> {
    let file_id = req.file_id.unwrap_or(0);
    nn.commit(|ns| ns.plan_abandon_block(&req.src, &req.holder, file_id, req.b.block_id))
        .await?;
    Ok(AbandonBlockResponseProto {})
}

pub async fn complete(nn: Nn, _: CallCtx, req: CompleteRequestProto) -> Res<CompleteResponseProto> {
    let now = now_ms();
    let file_id = req.file_id.unwrap_or(0);
    let last = req.last.as_ref().map(|b| Previous {
        id: b.block_id,
        len: b.num_bytes.unwrap_or(0),
    });
    let min = nn.cfg.min_replication as usize;
    let nn2 = nn.clone();
    let done = nn
        .commit(|ns| {
            ns.plan_complete(&req.src, &req.client_name, file_id, last, now, |id| {
                nn2.blocks.lock().finalized_replicas(id) >= min
            })
        })
        .await?;
    Ok(CompleteResponseProto { result: done })
}

pub async fn get_block_locations(
    nn: Nn,
    ctx: CallCtx,
    req: GetBlockLocationsRequestProto,
) -> Res<LocatedReply> {
    let caller = nn.caller(&ctx.user);
    let reader_ip = ctx.peer_ip.clone();
    let now = now_ms();
    let (range, touch) = {
        let ns = nn.ns.read();
        let slot = ns.file_slot(&caller, &ns.resolve_reserved(&req.src)?)?;
        ns.check_access(&caller, slot, crate::namespace::perm::READ)?;
        let range = ns.block_range(slot, req.offset, req.length);
        // The file's own path, for the access time's record (rare: an inode path, or a
        // time to move).
        let touch = nn
            .access_time_due(ns.inode(slot).atime, now)
            .then(|| ns.path_of(slot));
        (range, touch)
    };
    if let Some(path) = touch {
        // Boxed: the commit's future is large and this path is rare (once per file per
        // precision); inline, it would grow every open's future.
        Box::pin(nn.record_access(&caller, &path, now)).await;
    }
    let pool = &nn.identity.block_pool_id;
    let placed: Vec<Placed> = range
        .blocks
        .iter()
        .chain(range.last.as_ref())
        .copied()
        .collect();
    // One token, signed once, for every block of the reply (HDFS signs one per block).
    let ids: Vec<u64> = placed.iter().map(|p| p.block.id).collect();
    let tokens = nn.tokens.for_reply(&ctx.user, pool, Modes::READ, &ids);
    let mut reply = LocatedReply::new(pool, range.file_len, range.under_construction, &tokens);
    let mgr = nn.blocks.lock();
    let mut locs = Vec::new();
    let last_id = range.last.map(|l| l.block.id);
    // One draw per call (an atomic add); each block mixes in its id, so equal replicas
    // still come in different orders from block to block.
    let call_seed = seed();
    for (i, p) in placed.iter().enumerate() {
        let is_last = last_id.is_some() && i + 1 == placed.len();
        let mut p = *p;
        if range.under_construction && Some(p.block.id) == last_id {
            // The block being written: as long as its finished replicas say, or as an
            // hsync recorded.
            let reported = mgr.entry(p.block.id).map_or(0, |e| e.reported_len);
            p.block.len = p.block.len.max(reported);
        }
        let block_seed = call_seed ^ p.block.id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        reader_locations(
            &nn, &mgr, p.block.id, &reader_ip, now, block_seed, &mut locs,
        );
        reply.push(&p, &locs, &mgr.reg, is_last);
    }
    Ok(reply.finish())
}

/// A file's blocks with their replicas as a message, for the statuses that carry them (a
/// listing with locations, getLocatedFileInfo). No tokens, as in HDFS: a reader asks
/// getBlockLocations when it opens the file.
pub(crate) fn located_blocks(
    nn: &NnState,
    mgr: &BlockManager,
    range: &crate::namespace::blocks::BlockRange,
    reader_ip: &str,
    now: i64,
) -> LocatedBlocksProto {
    let pool = &nn.identity.block_pool_id;
    let mut locs = Vec::new();
    let mut one = |p: &Placed, being_written: bool| {
        let mut p = *p;
        if being_written {
            let reported = mgr.entry(p.block.id).map_or(0, |e| e.reported_len);
            p.block.len = p.block.len.max(reported);
        }
        reader_locations(nn, mgr, p.block.id, reader_ip, now, seed(), &mut locs);
        located(pool, &p, &mgr.reg, &locs, TokenProto::default())
    };
    let last_id = range.last.map(|l| l.block.id);
    let uc = range.under_construction;
    let blocks = range
        .blocks
        .iter()
        .map(|p| one(p, uc && Some(p.block.id) == last_id))
        .collect();
    LocatedBlocksProto {
        file_length: range.file_len,
        blocks,
        under_construction: uc,
        last_block: range.last.as_ref().map(|p| one(p, uc)),
        is_last_block_complete: !uc,
    }
}

/// A client or DataNode found a corrupt replica. It stops being handed out, and is deleted
/// once re-replication has restored enough good copies.
pub fn mark_bad_blocks(nn: &NnState, blocks: &[LocatedBlockProto]) {
    let ns = nn.ns.read();
    let mut mgr = nn.blocks.lock();
    for lb in blocks {
        let id = lb.b.block_id;
        if ns.block_file(id).is_none() {
            continue;
        }
        for d in &lb.locs {
            let Some(node) = mgr.reg.lookup(&d.id.datanode_uuid) else {
                continue;
            };
            let others = mgr
                .entry(id)
                .map(|e| {
                    e.replicas
                        .iter()
                        .filter(|r| r.node != node && r.finalized)
                        .count()
                })
                .unwrap_or(0);
            tracing::warn!(
                block = id,
                datanode = %d.id.datanode_uuid,
                good_copies_left = others,
                "replica reported corrupt"
            );
            // Kept (unread) until re-replication has made enough good copies.
            mgr.mark_corrupt(id, node);
            mgr.needs_scan = true;
        }
    }
}

pub async fn report_bad_blocks(
    nn: Nn,
    _: CallCtx,
    req: ReportBadBlocksRequestProto,
) -> Res<ReportBadBlocksResponseProto> {
    mark_bad_blocks(&nn, &req.blocks);
    Ok(ReportBadBlocksResponseProto {})
}

pub async fn get_datanode_report(
    nn: Nn,
    _: CallCtx,
    req: GetDatanodeReportRequestProto,
) -> Res<GetDatanodeReportResponseProto> {
    let now = now_ms();
    let mgr = nn.blocks.lock();
    let want =
        DatanodeReportTypeProto::try_from(req.r#type).unwrap_or(DatanodeReportTypeProto::All);
    let di = mgr
        .reg
        .iter()
        .filter(|(_, n)| {
            let dead = n.liveness(now, u64::MAX, nn.cfg.dead_interval_ms()) == Liveness::Dead;
            match want {
                DatanodeReportTypeProto::Live => !dead,
                DatanodeReportTypeProto::Dead => dead,
                DatanodeReportTypeProto::All => true,
                _ => false,
            }
        })
        .map(|(_, n)| datanode_info(n))
        .collect();
    Ok(GetDatanodeReportResponseProto { di })
}

pub async fn get_fs_stats(
    nn: Nn,
    _: CallCtx,
    _: GetFsStatusRequestProto,
) -> Res<GetFsStatsResponseProto> {
    let now = now_ms();
    let mgr = nn.blocks.lock();
    let live: Vec<&Node> = mgr
        .reg
        .iter()
        .map(|(_, n)| n)
        .filter(|n| n.liveness(now, u64::MAX, nn.cfg.dead_interval_ms()) != Liveness::Dead)
        .collect();
    let missing = (nn.ns.read().block_count() as u64).saturating_sub(mgr.block_entries() as u64);
    Ok(GetFsStatsResponseProto {
        capacity: live.iter().map(|n| n.capacity()).sum(),
        used: live.iter().map(|n| n.dfs_used()).sum(),
        remaining: live.iter().map(|n| n.remaining()).sum(),
        under_replicated: 0,
        corrupt_blocks: 0,
        missing_blocks: missing,
        missing_repl_one_blocks: Some(0),
        blocks_in_future: Some(0),
        pending_deletion_blocks: Some(mgr.reg.iter().map(|(_, n)| n.invalidate.len() as u64).sum()),
    })
}
