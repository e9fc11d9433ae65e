//! DatanodeProtocol on the NameNode: registration, heartbeats (which carry commands back),
//! full and incremental block reports, and error reports.

use std::sync::Arc;

use ferrite_ipc::{CallCtx, MethodKind, Router, RpcError, DATANODE_PROTOCOL};
use ferrite_proto::datanode::datanode_command_proto::Type as CmdType;
use ferrite_proto::datanode::received_deleted_block_info_proto::BlockStatus;
use ferrite_proto::datanode::*;
use ferrite_proto::hdfs::{
    BlockProto, DatanodeInfosProto, NnhaStatusHeartbeatProto, StorageTypeProto, StorageTypesProto,
    StorageUuidsProto,
};
use tracing::{debug, info, warn};

use crate::blocks::registry::{NodeId, NodeIx};
use crate::blocks::report::{self, ReplicaState, Reported};
use crate::blocks::{Expected, ReportOutcome};
use crate::error::FsError;
use crate::namespace::Namespace;
use crate::state::{now_ms, NnState};

type Nn = Arc<NnState>;
type Res<T> = Result<T, RpcError>;

/// Blocks to delete per heartbeat, as HDFS's `dfs.block.invalidate.limit` (1000).
const INVALIDATE_PER_HEARTBEAT: usize = 1000;

pub fn register(r: &mut Router<NnState>) {
    let p = DATANODE_PROTOCOL;
    use MethodKind as K;
    r.method(p, "versionRequest", K::READ, crate::rpc::version_request)
        .method(p, "registerDatanode", K::READ, register_datanode)
        .method(p, "sendHeartbeat", K::READ, send_heartbeat)
        .method(p, "blockReport", K::READ, block_report)
        .method(
            p,
            "blockReceivedAndDeleted",
            K::READ,
            block_received_and_deleted,
        )
        .method(p, "errorReport", K::READ, error_report)
        .method(p, "reportBadBlocks", K::READ, report_bad_blocks)
        .method(p, "commitBlockSynchronization", K::READ, commit_block_sync);
}

/// What the namespace expects of block `id`, for checking a reported replica.
pub fn expected(ns: &Namespace, id: u64) -> Option<Expected> {
    let (slot, i) = ns.block_position(id)?;
    let f = ns.inode(slot).file()?;
    let blocks = f.blocks();
    let b = *blocks.get(i).filter(|b| b.id == id)?;
    let being_written = f.uc().is_some() && i + 1 == blocks.len();
    Some(Expected {
        gs: b.gs,
        len: b.len,
        complete: !being_written,
    })
}

fn unregistered(uuid: &str) -> RpcError {
    RpcError::app(
        "org.apache.hadoop.hdfs.protocol.UnregisteredNodeException",
        format!("Unregistered server: DatanodeRegistration({uuid})"),
    )
}

fn node_of(nn: &NnState, reg: &DatanodeRegistrationProto) -> Result<NodeIx, RpcError> {
    let uuid = &reg.datanode_id.datanode_uuid;
    nn.blocks
        .lock()
        .reg
        .lookup(uuid)
        .ok_or_else(|| unregistered(uuid))
}

pub async fn register_datanode(
    nn: Nn,
    ctx: CallCtx,
    req: RegisterDatanodeRequestProto,
) -> Res<RegisterDatanodeResponseProto> {
    let mut reg = req.registration;
    let si = &reg.storage_info;
    if si.cluster_id != nn.identity.cluster_id && !si.cluster_id.is_empty() {
        return Err(FsError::Io(format!(
            "DataNode {} belongs to cluster {}, this NameNode to {}",
            reg.datanode_id.datanode_uuid, si.cluster_id, nn.identity.cluster_id
        ))
        .into());
    }
    // As a Java NameNode does: the address the node connects from is its address.
    reg.datanode_id.ip_addr = ctx.peer_ip.to_string();
    let d = &reg.datanode_id;
    let id = NodeId {
        ip: d.ip_addr.clone(),
        host: d.host_name.clone(),
        uuid: d.datanode_uuid.clone(),
        xfer_port: d.xfer_port,
        info_port: d.info_port,
        ipc_port: d.ipc_port,
    };
    let ix = nn
        .blocks
        .lock()
        .reg
        .register(id, now_ms())
        .map_err(|_| FsError::Io("too many DataNodes".into()))?;
    info!(node = ix, uuid = %d.datanode_uuid, addr = %format!("{}:{}", d.ip_addr, d.xfer_port), "DataNode registered");
    // The generation first, then the keys: a roll in between is sent again at the next
    // heartbeat rather than missed.
    let generation = nn.tokens.generation();
    reg.keys = nn.tokens.export();
    nn.blocks.lock().reg.get_mut(ix).keys_generation = generation;
    Ok(RegisterDatanodeResponseProto { registration: reg })
}

pub async fn send_heartbeat(
    nn: Nn,
    _: CallCtx,
    req: HeartbeatRequestProto,
) -> Res<HeartbeatResponseProto> {
    let txid = nn.journal.as_ref().map(|j| j.last_appended()).unwrap_or(0);
    let ha_status = NnhaStatusHeartbeatProto { state: 0, txid };
    let mut mgr = nn.blocks.lock();
    let register_again = || HeartbeatResponseProto {
        cmds: vec![DatanodeCommandProto {
            cmd_type: CmdType::RegisterCommand as i32,
            register_cmd: Some(RegisterCommandProto {}),
            ..Default::default()
        }],
        ha_status,
        full_block_report_lease_id: None,
    };
    // Unknown (after a NameNode restart, say), or declared dead and its replicas
    // forgotten: it must register and report its blocks again.
    let Some(ix) = mgr.reg.lookup(&req.registration.datanode_id.datanode_uuid) else {
        return Ok(register_again());
    };
    let node = mgr.reg.get_mut(ix);
    if node.dead {
        return Ok(register_again());
    }
    node.last_heartbeat_ms = now_ms();
    node.xceivers = req.xceiver_count.unwrap_or(0);
    for r in &req.reports {
        let uuid = r
            .storage
            .as_ref()
            .map(|s| s.storage_uuid.as_str())
            .unwrap_or(&r.storage_uuid);
        let s = node.storage_ix(uuid) as usize;
        let st = &mut node.storages[s];
        st.failed = r.failed.unwrap_or(false);
        st.capacity = r.capacity.unwrap_or(0);
        st.dfs_used = r.dfs_used.unwrap_or(0);
        st.remaining = r.remaining.unwrap_or(0);
    }
    let mut cmds = Vec::new();
    let generation = nn.tokens.generation();
    if node.keys_generation < generation {
        node.keys_generation = generation;
        cmds.push(DatanodeCommandProto {
            cmd_type: CmdType::KeyUpdateCommand as i32,
            key_update_cmd: Some(KeyUpdateCommandProto {
                keys: nn.tokens.export(),
            }),
            ..Default::default()
        });
    }
    if !node.invalidate.is_empty() {
        let n = node.invalidate.len().min(INVALIDATE_PER_HEARTBEAT);
        let blocks = node
            .invalidate
            .drain(..n)
            .map(|(id, gs)| BlockProto {
                block_id: id,
                gen_stamp: gs,
                num_bytes: Some(0),
            })
            .collect();
        cmds.push(block_command(
            &nn.identity.block_pool_id,
            block_command_proto::Action::Invalidate,
            blocks,
        ));
    }
    let transfers = std::mem::take(&mut node.transfers);
    for t in transfers {
        cmds.push(transfer_command(&mgr, &nn.identity.block_pool_id, t));
    }
    let synced = nn
        .journal
        .as_ref()
        .map_or(u64::MAX, |j| j.last_synced().unwrap_or(0));
    let orders = mgr.recoveries.take_orders(ix, synced);
    if !orders.is_empty() {
        cmds.push(recovery_command(&mgr, &nn.identity.block_pool_id, orders));
    }
    Ok(HeartbeatResponseProto {
        cmds,
        ha_status,
        // Any non-zero id grants the full report the node asked for; we never throttle.
        full_block_report_lease_id: req
            .request_full_block_report_lease
            .unwrap_or(false)
            .then_some(1),
    })
}

fn transfer_command(
    mgr: &crate::blocks::BlockManager,
    pool: &str,
    t: crate::blocks::registry::Transfer,
) -> DatanodeCommandProto {
    let mut cmd = block_command(
        pool,
        block_command_proto::Action::Transfer,
        vec![BlockProto {
            block_id: t.id,
            gen_stamp: t.gs,
            num_bytes: Some(t.len),
        }],
    );
    let bc = cmd.blk_cmd.as_mut().expect("just built");
    let nodes: Vec<_> = t.targets.iter().map(|&(n, _)| mgr.reg.get(n)).collect();
    bc.targets = vec![DatanodeInfosProto {
        datanodes: nodes
            .iter()
            .map(|n| crate::rpc_blocks::datanode_info(n))
            .collect(),
    }];
    bc.target_storage_uuids = vec![StorageUuidsProto {
        storage_uuids: t
            .targets
            .iter()
            .zip(&nodes)
            .map(|(&(_, s), n)| n.storage_uuid(s))
            .collect(),
    }];
    bc.target_storage_types = vec![StorageTypesProto {
        storage_types: vec![StorageTypeProto::Disk as i32; nodes.len()],
    }];
    cmd
}

/// Orders the primary to recover blocks: each with its replicas and the new stamp.
fn recovery_command(
    mgr: &crate::blocks::BlockManager,
    pool: &str,
    orders: Vec<(u64, crate::blocks::recovery::Recovery)>,
) -> DatanodeCommandProto {
    let blocks = orders
        .into_iter()
        .map(|(id, r)| {
            let placed = crate::namespace::blocks::Placed {
                block: crate::namespace::inode::Block {
                    id,
                    gs: r.gs,
                    len: r.len,
                },
                offset: 0,
            };
            let empty = ferrite_proto::common::TokenProto::default();
            let block = crate::rpc_blocks::located(pool, &placed, &mgr.reg, &r.replicas, empty);
            ferrite_proto::hdfs::RecoveringBlockProto {
                new_gen_stamp: r.recovery_id,
                block,
                truncate_block: r.new_len.map(|len| BlockProto {
                    block_id: id,
                    gen_stamp: r.recovery_id,
                    num_bytes: Some(len),
                }),
            }
        })
        .collect();
    DatanodeCommandProto {
        cmd_type: CmdType::BlockRecoveryCommand as i32,
        recovery_cmd: Some(BlockRecoveryCommandProto { blocks }),
        ..Default::default()
    }
}

pub fn block_command(
    pool: &str,
    action: block_command_proto::Action,
    blocks: Vec<BlockProto>,
) -> DatanodeCommandProto {
    DatanodeCommandProto {
        cmd_type: CmdType::BlockCommand as i32,
        blk_cmd: Some(BlockCommandProto {
            action: action as i32,
            block_pool_id: pool.to_string(),
            blocks,
            targets: Vec::new(),
            target_storage_uuids: Vec::new(),
            target_storage_types: Vec::new(),
        }),
        ..Default::default()
    }
}

pub async fn block_report(
    nn: Nn,
    _: CallCtx,
    req: BlockReportRequestProto,
) -> Res<BlockReportResponseProto> {
    let ix = node_of(&nn, &req.registration)?;
    // Decode everything first, so a malformed report changes nothing.
    let mut decoded = Vec::with_capacity(req.reports.len());
    for r in &req.reports {
        let replicas = report::decode(r).map_err(|e| {
            FsError::Io(format!(
                "malformed block report for storage {}: {e}",
                r.storage.storage_uuid
            ))
        })?;
        decoded.push((r.storage.storage_uuid.clone(), replicas));
    }
    let mut total = ReportOutcome::default();
    {
        let ns = nn.ns.read();
        let mut mgr = nn.blocks.lock();
        for (uuid, replicas) in &decoded {
            let s = mgr.reg.get_mut(ix).storage_ix(uuid);
            let o = mgr.full_report(ix, s, replicas, |id| expected(&ns, id));
            total.accepted += o.accepted;
            total.invalidated += o.invalidated;
            total.forgotten += o.forgotten;
        }
        mgr.needs_scan = true;
    }
    info!(
        node = ix,
        accepted = total.accepted,
        invalidated = total.invalidated,
        forgotten = total.forgotten,
        "full block report processed"
    );
    nn.check_startup_safe_mode(now_ms());
    Ok(BlockReportResponseProto { cmd: None })
}

pub async fn block_received_and_deleted(
    nn: Nn,
    _: CallCtx,
    req: BlockReceivedAndDeletedRequestProto,
) -> Res<BlockReceivedAndDeletedResponseProto> {
    let ix = node_of(&nn, &req.registration)?;
    {
        let ns = nn.ns.read();
        let mut mgr = nn.blocks.lock();
        let mut out = ReportOutcome::default();
        for s in &req.blocks {
            let uuid = s
                .storage
                .as_ref()
                .map(|st| st.storage_uuid.as_str())
                .unwrap_or(&s.storage_uuid);
            let six = mgr.reg.get_mut(ix).storage_ix(uuid);
            for b in &s.blocks {
                let r = Reported {
                    id: b.block.block_id,
                    len: b.block.num_bytes.unwrap_or(0),
                    gs: b.block.gen_stamp,
                    state: ReplicaState::Finalized,
                };
                match BlockStatus::try_from(b.status) {
                    Ok(BlockStatus::Received) => {
                        mgr.one_replica(ix, six, &r, &|id| expected(&ns, id), &mut out)
                    }
                    Ok(BlockStatus::Receiving) => {
                        let r = Reported {
                            state: ReplicaState::Unfinished,
                            ..r
                        };
                        mgr.one_replica(ix, six, &r, &|id| expected(&ns, id), &mut out)
                    }
                    Ok(BlockStatus::Deleted) => mgr.remove_replica(r.id, ix),
                    Err(_) => warn!(node = ix, status = b.status, "unknown IBR status"),
                }
            }
        }
        debug!(
            node = ix,
            accepted = out.accepted,
            invalidated = out.invalidated,
            "IBR"
        );
    }
    nn.check_startup_safe_mode(now_ms());
    Ok(BlockReceivedAndDeletedResponseProto {})
}

pub async fn error_report(
    nn: Nn,
    _: CallCtx,
    req: ErrorReportRequestProto,
) -> Res<ErrorReportResponseProto> {
    let uuid = &req.registartion.datanode_id.datanode_uuid;
    warn!(datanode = %uuid, code = req.error_code, msg = %req.msg, "DataNode error report");
    if req.error_code == error_report_request_proto::ErrorCode::FatalDiskError as u32 {
        let mut mgr = nn.blocks.lock();
        if let Some(ix) = mgr.reg.lookup(uuid) {
            mgr.reg.get_mut(ix).dead = true;
            mgr.node_lost(ix);
        }
    }
    Ok(ErrorReportResponseProto {})
}

pub async fn report_bad_blocks(
    nn: Nn,
    _: CallCtx,
    req: ReportBadBlocksRequestProto,
) -> Res<ReportBadBlocksResponseProto> {
    crate::rpc_blocks::mark_bad_blocks(&nn, &req.blocks);
    Ok(ReportBadBlocksResponseProto {})
}

pub async fn commit_block_sync(
    nn: Nn,
    _: CallCtx,
    req: CommitBlockSynchronizationRequestProto,
) -> Res<CommitBlockSynchronizationResponseProto> {
    let holders = req
        .new_taragets
        .iter()
        .zip(
            req.new_target_storages
                .iter()
                .chain(std::iter::repeat(&String::new())),
        )
        .map(|(d, s)| (d.datanode_uuid.clone(), s.clone()))
        .collect();
    let report = crate::lease_recovery::SyncReport {
        block_id: req.block.block_id,
        old_gs: req.block.generation_stamp,
        recovery_id: req.new_gen_stamp,
        new_len: req.new_length,
        close: req.close_file,
        delete: req.delete_block,
        holders,
    };
    nn.commit_block_sync(report).await?;
    Ok(CommitBlockSynchronizationResponseProto {})
}
