//! Heartbeats and what they bring back: the loop that sends one every interval (with
//! re-registration and periodic full reports), and the commands it carries out — replicas to
//! delete, copies to send, blocks to recover as primary, new block keys, the Balancer's
//! bandwidth. Kept apart from
//! `nn_link` (the protocol's calls) so that the link does not depend on the work its
//! commands start.

use std::sync::Arc;
use std::time::Duration;

use ferrite_ipc::client::ClientError;
use ferrite_proto::datanode::block_command_proto::Action;
use ferrite_proto::datanode::datanode_command_proto::Type as CmdType;
use ferrite_proto::datanode::received_deleted_block_info_proto::BlockStatus;
use ferrite_proto::datanode::DatanodeCommandProto;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::nn_link::NnLink;
use crate::storage::Dataset;

/// One heartbeat to NameNode `i`, carrying out the commands in the answer: all of them
/// from the active NameNode; from a standby only a request to register again and new
/// block keys (as HDFS's `processCommandFromStandby`). Returns whether the NameNode asked
/// us to register again.
pub(crate) async fn beat(
    link: &Arc<NnLink>,
    i: usize,
    ds: &Arc<Dataset>,
) -> Result<bool, ClientError> {
    let mut again = false;
    let beat = link.heartbeat(i, ds).await?;
    for cmd in beat.cmds {
        let always = matches!(
            CmdType::try_from(cmd.cmd_type),
            Ok(CmdType::RegisterCommand | CmdType::KeyUpdateCommand)
        );
        if beat.from_active || always {
            again |= execute(link, i, ds, cmd).await;
        } else {
            debug!(
                namenode = i,
                cmd = cmd.cmd_type,
                "command from a standby ignored"
            );
        }
    }
    Ok(again)
}

/// Registers with NameNode `i`, reports the storage space (so it can place blocks here at
/// once) and sends the first full block report, retrying until it takes all three or
/// `cancel` fires. A NameNode that restarts, or a network that drops, between the
/// handshake and the registration must not end the DataNode: HDFS's DataNodes retry too.
pub(crate) async fn join(
    link: &Arc<NnLink>,
    i: usize,
    ds: &Arc<Dataset>,
    cancel: &CancellationToken,
) -> bool {
    let mut wait = Duration::from_millis(100);
    loop {
        let attempt = async {
            link.register(i).await?;
            beat(link, i, ds).await?;
            link.full_report(i, ds).await
        };
        match attempt.await {
            Ok(()) => return true,
            Err(e) => warn!(namenode = i, error = %e, "could not join the NameNode; trying again"),
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = cancel.cancelled() => return false,
        }
        wait = (wait * 2).min(Duration::from_secs(3));
    }
}

/// How often to heartbeat and to send a full block report.
#[derive(Clone, Copy)]
pub(crate) struct Intervals {
    pub heartbeat: Duration,
    pub report: Duration,
}

/// One NameNode's side of the DataNode (HDFS's `BPServiceActor`): joins it, says so on
/// `joined`, then heartbeats until cancelled — re-registering and reporting again when it
/// asks or its heartbeats fail, and sending a full report every `intervals.report`.
pub(crate) async fn run(
    link: Arc<NnLink>,
    i: usize,
    ds: Arc<Dataset>,
    intervals: Intervals,
    joined: tokio::sync::mpsc::Sender<()>,
    cancel: CancellationToken,
) {
    if !join(&link, i, &ds, &cancel).await {
        return;
    }
    let _ = joined.send(()).await;
    drop(joined);
    let mut last_report = tokio::time::Instant::now();
    let mut need_register = false;
    loop {
        if need_register {
            // At once, and then soon and sooner than a heartbeat apart: a NameNode that
            // restarted is of little use (an HA standby cannot take over well) until its
            // DataNodes are back.
            if !join(&link, i, &ds, &cancel).await {
                return;
            }
            need_register = false;
            last_report = tokio::time::Instant::now();
        }
        tokio::select! {
            _ = tokio::time::sleep(intervals.heartbeat) => {}
            _ = cancel.cancelled() => return,
        }
        if i == 0 {
            // Once per node, not per NameNode: its reports go to all of them.
            link.check_volumes(&ds).await;
        }
        match beat(&link, i, &ds).await {
            Ok(again) => need_register |= again,
            Err(e) => {
                warn!(namenode = i, error = %e, "heartbeat failed");
                // A NameNode that restarted does not know us; register again.
                need_register = true;
                continue;
            }
        }
        if !need_register && last_report.elapsed() >= intervals.report {
            if let Err(e) = link.full_report(i, &ds).await {
                warn!(namenode = i, error = %e, "periodic block report failed");
            }
            last_report = tokio::time::Instant::now();
        }
    }
}

/// Carries out one command. Returns true if the NameNode wants us to register again.
async fn execute(
    link: &Arc<NnLink>,
    i: usize,
    ds: &Arc<Dataset>,
    cmd: DatanodeCommandProto,
) -> bool {
    match CmdType::try_from(cmd.cmd_type) {
        Ok(CmdType::RegisterCommand) => return true,
        Ok(CmdType::BlockCommand) => {
            let Some(bc) = cmd.blk_cmd else { return false };
            match Action::try_from(bc.action) {
                Ok(Action::Invalidate) => {
                    for b in &bc.blocks {
                        let Some(r) = ds.get(b.block_id) else {
                            continue;
                        };
                        let uuid = ds.volumes[r.volume].storage_uuid.clone();
                        let (id, gs) = (b.block_id, b.gen_stamp);
                        let deleted = ds
                            .off_thread(move |ds| ds.invalidate(id, gs))
                            .await
                            .unwrap_or(false);
                        if deleted {
                            drop(link.report_block(&uuid, id, gs, 0, BlockStatus::Deleted));
                        }
                    }
                    debug!(blocks = bc.blocks.len(), "invalidated");
                }
                Ok(Action::Transfer) => {
                    for (i, b) in bc.blocks.iter().enumerate() {
                        let targets = bc
                            .targets
                            .get(i)
                            .map(|t| t.datanodes.clone())
                            .unwrap_or_default();
                        let (ds, link, b) = (ds.clone(), link.clone(), *b);
                        tokio::spawn(async move {
                            if let Err(e) =
                                crate::xceiver::transfer::send(&ds, &link, &b, &targets).await
                            {
                                warn!(block = b.block_id, error = %e, "replication transfer failed");
                            }
                        });
                    }
                }
                _ => debug!(action = bc.action, "block command ignored"),
            }
        }
        Ok(CmdType::BlockRecoveryCommand) => {
            for rb in cmd.recovery_cmd.map(|c| c.blocks).unwrap_or_default() {
                tokio::spawn(crate::recovery::run(ds.clone(), link.clone(), rb));
            }
        }
        Ok(CmdType::BalancerBandwidthCommand) => {
            if let Some(b) = cmd.balancer_cmd {
                link.balance.set_bandwidth(b.bandwidth);
            }
        }
        Ok(CmdType::KeyUpdateCommand) => {
            if let Some(k) = cmd.key_update_cmd {
                link.update_keys(&k.keys);
            }
        }
        _ => debug!(namenode = i, cmd = cmd.cmd_type, "command ignored"),
    }
    false
}
