//! append: a closed file opens for write again. The namespace plans the reopening; this
//! layer settles a file still held by another writer first (HDFS recovers a lease whose
//! holder has not renewed within the soft limit) and answers with the last block's
//! replicas for the writer to go on in.

use std::sync::Arc;

use ferrite_blocktoken::Modes;
use ferrite_ipc::{CallCtx, RpcError};
use ferrite_proto::hdfs::{AppendRequestProto, AppendResponseProto};

use crate::error::FsError;
use crate::lease_recovery::Outcome;
use crate::namespace::append::Appended;
use crate::rpc::status_proto;
use crate::state::{now_ms, NnState};

/// A writer that has not renewed for this long may lose its lease to another client
/// (HDFS's soft limit, fixed at one minute).
const LEASE_SOFT_LIMIT_MS: i64 = 60_000;
const FLAG_NEW_BLOCK: u32 = 0x20;

pub async fn append(
    nn: Arc<NnState>,
    ctx: CallCtx,
    req: AppendRequestProto,
) -> Result<AppendResponseProto, RpcError> {
    let caller = nn.caller(&ctx.user);
    let new_block = req.flag.unwrap_or(0) & FLAG_NEW_BLOCK != 0;
    let machine = ctx.peer_ip.clone();
    take_over_if_abandoned(&nn, &req, &machine).await?;
    let (appended, status) = nn
        .commit_then(
            |ns| {
                let (a, planned) =
                    ns.plan_append(&caller, &req.src, &req.client_name, &machine, new_block)?;
                Ok((a, planned))
            },
            |a, _| a,
        )
        .await
        .map(|a: Appended| {
            let ns = nn.ns.read();
            let status = ns.open_file_slot(a.file_id).map(|s| ns.status(s, false));
            (a, status)
        })?;
    let block = appended.last.map(|last| {
        let mut mgr = nn.blocks.lock();
        mgr.reopen(last.block.id);
        let locs: Vec<_> = mgr
            .entry(last.block.id)
            .map(|e| e.replicas.iter().map(|r| (r.node, r.storage)).collect())
            .unwrap_or_default();
        let pool = &nn.identity.block_pool_id;
        let token = nn
            .tokens
            .for_block(&ctx.user, pool, Modes::WRITE, last.block.id);
        crate::rpc_blocks::located(pool, &last, &mgr.reg, &locs, token)
    });
    Ok(AppendResponseProto {
        block,
        stat: status.as_ref().map(status_proto),
    })
}

/// A file still open by another client whose lease has lapsed the soft limit, or whose
/// last block is being recovered, answers RecoveryInProgressException (after starting the
/// recovery), as HDFS does; the appender tries again once the file is closed.
async fn take_over_if_abandoned(
    nn: &NnState,
    req: &AppendRequestProto,
    machine: &str,
) -> Result<(), FsError> {
    let (file_id, holder, last) = {
        let ns = nn.ns.read();
        let Ok(slot) = ns.existing(&req.src) else {
            return Ok(());
        };
        let Some(uc) = ns.inode(slot).file().and_then(|f| f.uc()) else {
            return Ok(());
        };
        if uc.client_name == req.client_name {
            return Ok(()); // the plan answers this one
        }
        let last = ns.last_block(slot).map(|b| b.id);
        (ns.inode(slot).id, uc.client_name.clone(), last)
    };
    let now = now_ms();
    let recovering = last.is_some_and(|id| {
        nn.blocks
            .lock()
            .recoveries
            .in_progress(id, now, nn.cfg.block_recovery_timeout_ms as i64)
    });
    let lapsed = nn
        .leases
        .lock()
        .renewed_ms(&holder)
        .is_none_or(|t| now - t > LEASE_SOFT_LIMIT_MS);
    if !recovering && !lapsed {
        return Ok(()); // still owned: the plan answers AlreadyBeingCreated
    }
    if !recovering && nn.recover_file(file_id, None).await? == Outcome::Closed {
        return Ok(()); // closed at once: the append goes ahead
    }
    Err(FsError::RecoveryInProgress(format!(
        "Failed to APPEND_FILE {} for {} on {machine} because lease recovery is in progress. Try again later.",
        req.src, req.client_name
    )))
}
