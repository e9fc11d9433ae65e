//! Heartbeats and what they bring back: the loop that sends one every interval (with
//! re-registration and periodic full reports), and the commands it carries out — replicas to
//! delete, copies to send, blocks to recover as primary, new block keys. Kept apart from
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

/// One heartbeat, carrying out the commands in the answer. Returns whether the NameNode
/// asked us to register again.
pub(crate) async fn beat(link: &Arc<NnLink>, ds: &Arc<Dataset>) -> Result<bool, ClientError> {
    let mut again = false;
    for cmd in link.heartbeat(ds).await? {
        again |= execute(link, ds, cmd).await;
    }
    Ok(again)
}

/// Heartbeats until cancelled, carrying out the commands that come back.
pub(crate) async fn run(
    link: Arc<NnLink>,
    ds: Arc<Dataset>,
    interval: Duration,
    report_interval: Duration,
    cancel: CancellationToken,
) {
    let mut last_report = tokio::time::Instant::now();
    let mut need_register = false;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = cancel.cancelled() => return,
        }
        if need_register {
            match link.register().await {
                Ok(()) => need_register = false,
                Err(e) => {
                    warn!(error = %e, "re-registration failed");
                    continue;
                }
            }
            if let Err(e) = link.full_report(&ds).await {
                warn!(error = %e, "block report failed");
            }
            last_report = tokio::time::Instant::now();
        }
        link.check_volumes(&ds).await;
        match beat(&link, &ds).await {
            Ok(again) => need_register |= again,
            Err(e) => {
                warn!(error = %e, "heartbeat failed");
                // A NameNode that restarted does not know us; register again.
                need_register = true;
                continue;
            }
        }
        if !need_register && last_report.elapsed() >= report_interval {
            if let Err(e) = link.full_report(&ds).await {
                warn!(error = %e, "periodic block report failed");
            }
            last_report = tokio::time::Instant::now();
        }
    }
}

/// Carries out one command. Returns true if the NameNode wants us to register again.
async fn execute(link: &Arc<NnLink>, ds: &Arc<Dataset>, cmd: DatanodeCommandProto) -> bool {
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
        Ok(CmdType::KeyUpdateCommand) => {
            if let Some(k) = cmd.key_update_cmd {
                link.update_keys(&k.keys);
            }
        }
        _ => debug!(cmd = cmd.cmd_type, "command ignored"),
    }
    false
}
