//! DatanodeProtocol on the NameNode: registration, heartbeats (which carry commands back),
//! full and incremental block reports, error reports and block recovery's commit.

use ferrite_ipc::{Router, DATANODE_PROTOCOL};
use ferrite_proto::datanode::datanode_command_proto::Type as CmdType;
use ferrite_proto::datanode::received_deleted_block_info_proto::BlockStatus;
use ferrite_proto::datanode::*;
use ferrite_proto::hdfs::nnha_status_heartbeat_proto as ha_heartbeat;
use ferrite_proto::hdfs::{
    BlockProto, DatanodeInfosProto, NnhaStatusHeartbeatProto, RecoveringBlockProto,
    StorageReportProto, StorageTypesProto, StorageUuidsProto,
};
use tracing::warn;

use super::convert::{block_proto, datanode_info, located_block, node_id_of};
use super::{Nn, Register, Res};
use crate::blocks::registry::StorageState;
use crate::blocks::report::{self, ReplicaState, Reported};
use crate::error::FsError;
use crate::service::ha::HaState;
use crate::service::{Admitted, Operation};
use crate::service::{
    DnCommand, HeartbeatReport, NameNodeService, NodeRegistration, ReplicaEvent, SyncReport,
};

pub fn register(r: &mut Router<NameNodeService>) {
    let p = DATANODE_PROTOCOL;
    r.op(p, Operation::VersionRequest, super::client::version_request);
    r.op(p, Operation::RegisterDatanode, register_datanode);
    r.op(p, Operation::SendHeartbeat, send_heartbeat);
    r.op(p, Operation::BlockReport, block_report);
    r.op(
        p,
        Operation::BlockReceivedAndDeleted,
        block_received_and_deleted,
    );
    r.op(p, Operation::ErrorReport, error_report);
    r.op(p, Operation::ReportBadBlocks, report_bad_blocks);
    r.op(p, Operation::CommitBlockSynchronization, commit_block_sync);
}

pub async fn register_datanode(
    nn: Nn,
    who: Admitted,
    req: RegisterDatanodeRequestProto,
) -> Res<RegisterDatanodeResponseProto> {
    let mut reg = req.registration;
    let rack = nn.rack_of(who.ip(), &reg.datanode_id.host_name).await;
    let id = nn.register_datanode(
        &who,
        NodeRegistration {
            id: node_id_of(&reg.datanode_id),
            cluster_id: reg.storage_info.cluster_id.clone(),
            rack,
        },
    )?;
    reg.datanode_id.ip_addr = id.ip;
    reg.keys = nn.block_keys();
    Ok(RegisterDatanodeResponseProto { registration: reg })
}

fn storage_state(r: &StorageReportProto) -> StorageState {
    let uuid = r
        .storage
        .as_ref()
        .map(|s| s.storage_uuid.clone())
        .unwrap_or_else(|| r.storage_uuid.clone());
    StorageState {
        uuid,
        storage_type: r
            .storage
            .as_ref()
            .and_then(|s| s.storage_type)
            .and_then(|t| u8::try_from(t).ok())
            .unwrap_or(1),
        failed: r.failed.unwrap_or(false),
        capacity: r.capacity.unwrap_or(0),
        dfs_used: r.dfs_used.unwrap_or(0),
        remaining: r.remaining.unwrap_or(0),
    }
}

pub async fn send_heartbeat(
    nn: Nn,
    who: Admitted,
    req: HeartbeatRequestProto,
) -> Res<HeartbeatResponseProto> {
    let txid = nn.last_txid();
    let report = HeartbeatReport {
        xceivers: req.xceiver_count.unwrap_or(0),
        storages: req.reports.iter().map(storage_state).collect(),
    };
    let uuid = &req.registration.datanode_id.datanode_uuid;
    let pool = &nn.identity().block_pool_id;
    let cmds = nn
        .heartbeat(&who, uuid, report)
        .into_iter()
        .map(|c| command_proto(&nn, pool, c))
        .collect();
    Ok(HeartbeatResponseProto {
        cmds,
        ha_status: NnhaStatusHeartbeatProto {
            state: match nn.ha_state() {
                HaState::Active => ha_heartbeat::State::Active,
                HaState::Standby => ha_heartbeat::State::Standby,
            } as i32,
            txid,
        },
        // Any non-zero id grants the full report the node asked for; we never throttle.
        full_block_report_lease_id: req
            .request_full_block_report_lease
            .unwrap_or(false)
            .then_some(1),
    })
}

fn command_proto(nn: &NameNodeService, pool: &str, c: DnCommand) -> DatanodeCommandProto {
    match c {
        DnCommand::Register => DatanodeCommandProto {
            cmd_type: CmdType::RegisterCommand as i32,
            register_cmd: Some(RegisterCommandProto {}),
            ..Default::default()
        },
        DnCommand::KeyUpdate => DatanodeCommandProto {
            cmd_type: CmdType::KeyUpdateCommand as i32,
            key_update_cmd: Some(KeyUpdateCommandProto {
                keys: nn.block_keys(),
            }),
            ..Default::default()
        },
        DnCommand::Invalidate(blocks) => block_command(
            pool,
            block_command_proto::Action::Invalidate,
            blocks
                .iter()
                .map(|b| BlockProto {
                    num_bytes: Some(0),
                    ..block_proto(b)
                })
                .collect(),
        ),
        DnCommand::Transfer { block, targets } => {
            let mut cmd = block_command(
                pool,
                block_command_proto::Action::Transfer,
                vec![block_proto(&block)],
            );
            if let Some(bc) = cmd.blk_cmd.as_mut() {
                bc.targets = vec![DatanodeInfosProto {
                    datanodes: targets.iter().map(|l| datanode_info(&l.node)).collect(),
                }];
                bc.target_storage_uuids = vec![StorageUuidsProto {
                    storage_uuids: targets.iter().map(|l| l.storage_uuid.clone()).collect(),
                }];
                bc.target_storage_types = vec![StorageTypesProto {
                    storage_types: targets.iter().map(|l| i32::from(l.storage_type)).collect(),
                }];
            }
            cmd
        }
        DnCommand::BalancerBandwidth(bandwidth) => DatanodeCommandProto {
            cmd_type: CmdType::BalancerBandwidthCommand as i32,
            balancer_cmd: Some(BalancerBandwidthCommandProto { bandwidth }),
            ..Default::default()
        },
        DnCommand::Recover(blocks) => DatanodeCommandProto {
            cmd_type: CmdType::BlockRecoveryCommand as i32,
            recovery_cmd: Some(BlockRecoveryCommandProto {
                blocks: blocks
                    .iter()
                    .map(|r| RecoveringBlockProto {
                        new_gen_stamp: r.recovery_id,
                        block: located_block(pool, &r.block),
                        // A truncate's block: the recovered one cut in place, or (a
                        // different id) the new block a copy-on-truncate fills.
                        truncate_block: r.new_len.map(|len| BlockProto {
                            block_id: r.copy_to.unwrap_or(r.block.block.id),
                            gen_stamp: r.recovery_id,
                            num_bytes: Some(len),
                        }),
                    })
                    .collect(),
            }),
            ..Default::default()
        },
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
    who: Admitted,
    req: BlockReportRequestProto,
) -> Res<BlockReportResponseProto> {
    // Decode everything first, so a malformed report changes nothing.
    let mut decoded = Vec::with_capacity(req.reports.len());
    for r in &req.reports {
        let replicas = report::decode(r).map_err(|e| {
            FsError::internal(
                format!(
                    "malformed block report for storage {}",
                    r.storage.storage_uuid
                ),
                e,
            )
        })?;
        decoded.push((r.storage.storage_uuid.clone(), replicas));
    }
    nn.block_report(&who, &req.registration.datanode_id.datanode_uuid, &decoded)?;
    Ok(BlockReportResponseProto { cmd: None })
}

pub async fn block_received_and_deleted(
    nn: Nn,
    who: Admitted,
    req: BlockReceivedAndDeletedRequestProto,
) -> Res<BlockReceivedAndDeletedResponseProto> {
    let uuid = &req.registration.datanode_id.datanode_uuid;
    let storages: Vec<(String, Vec<(Reported, ReplicaEvent)>)> = req
        .blocks
        .iter()
        .map(|s| {
            let storage = s
                .storage
                .as_ref()
                .map(|st| st.storage_uuid.clone())
                .unwrap_or_else(|| s.storage_uuid.clone());
            let events = s
                .blocks
                .iter()
                .filter_map(|b| {
                    let event = match BlockStatus::try_from(b.status) {
                        Ok(BlockStatus::Received) => ReplicaEvent::Received,
                        Ok(BlockStatus::Receiving) => ReplicaEvent::Receiving,
                        Ok(BlockStatus::Deleted) => ReplicaEvent::Deleted,
                        Err(_) => {
                            warn!(datanode = %uuid, status = b.status, "unknown IBR status");
                            return None;
                        }
                    };
                    let r = Reported {
                        id: b.block.block_id,
                        len: b.block.num_bytes.unwrap_or(0),
                        gs: b.block.gen_stamp,
                        state: ReplicaState::Finalized,
                    };
                    Some((r, event))
                })
                .collect();
            (storage, events)
        })
        .collect();
    // A replica received by a move names the node whose copy is now surplus.
    let hints: Vec<(u64, String)> = req
        .blocks
        .iter()
        .flat_map(|s| &s.blocks)
        .filter(|b| b.status == BlockStatus::Received as i32)
        .filter_map(|b| {
            Some((
                b.block.block_id,
                b.delete_hint.clone().filter(|h| !h.is_empty())?,
            ))
        })
        .collect();
    nn.incremental_report(&who, uuid, &storages, &hints)?;
    Ok(BlockReceivedAndDeletedResponseProto {})
}

pub async fn error_report(
    nn: Nn,
    who: Admitted,
    req: ErrorReportRequestProto,
) -> Res<ErrorReportResponseProto> {
    let fatal = req.error_code == error_report_request_proto::ErrorCode::FatalDiskError as u32;
    nn.datanode_error(
        &who,
        &req.registartion.datanode_id.datanode_uuid,
        fatal,
        req.error_code,
        &req.msg,
    );
    Ok(ErrorReportResponseProto {})
}

pub async fn report_bad_blocks(
    nn: Nn,
    who: Admitted,
    req: ReportBadBlocksRequestProto,
) -> Res<ReportBadBlocksResponseProto> {
    nn.mark_bad_blocks(&who, &super::blocks::bad_replicas(&req.blocks));
    Ok(ReportBadBlocksResponseProto {})
}

pub async fn commit_block_sync(
    nn: Nn,
    who: Admitted,
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
    let report = SyncReport {
        block_id: req.block.block_id,
        old_gs: req.block.generation_stamp,
        recovery_id: req.new_gen_stamp,
        new_len: req.new_length,
        close: req.close_file,
        delete: req.delete_block,
        holders,
    };
    nn.commit_block_sync(&who, report).await?;
    Ok(CommitBlockSynchronizationResponseProto {})
}
