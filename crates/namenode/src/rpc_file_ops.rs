//! append, truncate and concat: the calls that change an existing file's blocks. The
//! namespace plans each; this layer settles a file still held by another writer first
//! (HDFS recovers a lease whose holder has not renewed within the soft limit), and starts
//! the block work that follows: the reopened last block's replicas for an appender, block
//! recovery for a cut inside a block.

use std::sync::Arc;

use ferrite_blocktoken::Modes;
use ferrite_ipc::{CallCtx, RpcError};
use ferrite_proto::hdfs::{
    AppendRequestProto, AppendResponseProto, ConcatRequestProto, ConcatResponseProto,
    TruncateRequestProto, TruncateResponseProto,
};

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
    take_over_if_abandoned(&nn, "APPEND_FILE", &req.src, &req.client_name, &machine).await?;
    let appended: Appended = nn
        .commit(|ns| ns.plan_append(&caller, &req.src, &req.client_name, &machine, new_block))
        .await?;
    let status = {
        let ns = nn.ns.read();
        ns.open_file_slot(appended.file_id)
            .map(|s| ns.status(s, false))
    };
    let block = appended.last.map(|last| {
        let mut mgr = nn.blocks.lock();
        mgr.reopen(last.block.id);
        let locs = mgr.places(last.block.id);
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
/// recovery), as HDFS does; the caller tries again once the file is closed. `op` names
/// the call in the message, as HDFS's do (APPEND_FILE, TRUNCATE_FILE).
async fn take_over_if_abandoned(
    nn: &NnState,
    op: &str,
    src: &str,
    client_name: &str,
    machine: &str,
) -> Result<(), FsError> {
    let (file_id, holder, last) = {
        let ns = nn.ns.read();
        let Ok(slot) = ns.existing(src) else {
            return Ok(());
        };
        let Some(uc) = ns.inode(slot).file().and_then(|f| f.uc()) else {
            return Ok(());
        };
        if uc.client_name == client_name {
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
            .in_progress(id, now, nn.recovery_timeout_ms())
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
        return Ok(()); // closed at once: the call goes ahead
    }
    Err(FsError::RecoveryInProgress(format!(
        "Failed to {op} {src} for {client_name} on {machine} because lease recovery is in progress. Try again later."
    )))
}

/// truncate: true when the file is ready at once (a cut on a block boundary), false while
/// block recovery cuts the replicas of the block the new end falls in; the file closes
/// when it has (`hdfs dfs -truncate -w` waits for that).
pub async fn truncate(
    nn: Arc<NnState>,
    ctx: CallCtx,
    req: TruncateRequestProto,
) -> Result<TruncateResponseProto, RpcError> {
    let caller = nn.caller(&ctx.user);
    let machine = ctx.peer_ip.clone();
    if being_cut_to(&nn, &req.src, req.new_length) {
        // A retry of the truncate under way, as HDFS answers it.
        return Ok(TruncateResponseProto { result: false });
    }
    take_over_if_abandoned(&nn, "TRUNCATE_FILE", &req.src, &req.client_name, &machine).await?;
    let now = now_ms();
    let t = nn
        .commit(|ns| {
            ns.plan_truncate(
                &caller,
                &req.src,
                req.new_length,
                &req.client_name,
                &machine,
                now,
            )
        })
        .await?;
    let Some((block, kept)) = t.recover else {
        return Ok(TruncateResponseProto { result: true });
    };
    nn.blocks.lock().reopen(block);
    nn.recover_file(t.file_id, Some(kept)).await?;
    Ok(TruncateResponseProto { result: false })
}

/// Whether `src` is open because a truncate to `len` is being carried out.
fn being_cut_to(nn: &NnState, src: &str, len: u64) -> bool {
    let ns = nn.ns.read();
    let Ok(slot) = ns.existing(src) else {
        return false;
    };
    let Some(f) = ns.inode(slot).file().filter(|f| f.uc().is_some()) else {
        return false;
    };
    let Some(last) = ns.last_block(slot) else {
        return false;
    };
    // The file shows the cut block whole until recovery: it starts at len - last.len.
    let start = f.len().saturating_sub(last.len);
    nn.blocks
        .lock()
        .recoveries
        .get(last.id)
        .and_then(|r| r.new_len)
        .is_some_and(|kept| start + kept == len)
}

pub async fn concat(
    nn: Arc<NnState>,
    ctx: CallCtx,
    req: ConcatRequestProto,
) -> Result<ConcatResponseProto, RpcError> {
    let caller = nn.caller(&ctx.user);
    let now = now_ms();
    nn.commit(|ns| Ok(((), ns.plan_concat(&caller, &req.trg, &req.srcs, now)?)))
        .await?;
    // The moved blocks keep their replicas; the target's replication may differ from a
    // source's, which the replication monitor evens out.
    nn.blocks.lock().needs_scan = true;
    Ok(ConcatResponseProto {})
}
