//! org.ferrite.NameNodeStatsProtocol: what an operator needs to see of the journal (sync
//! accounting, and which directories are in service and why not) and of the namespace.
//! `ferrite admin namenode-stats` prints it; `/jmx` shows the same (`jmx.rs`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use ferrite_ipc::{CallCtx, MethodKind, Router, RpcError, NAMENODE_STATS_PROTOCOL};
use ferrite_proto::ferrite::*;

use crate::state::NnState;

pub fn register(r: &mut Router<NnState>) {
    r.method(
        NAMENODE_STATS_PROTOCOL,
        "getNameNodeStats",
        MethodKind::READ,
        get_stats,
    );
}

async fn get_stats(
    nn: Arc<NnState>,
    _: CallCtx,
    _: GetNameNodeStatsRequestProto,
) -> Result<NameNodeStatsProto, RpcError> {
    let (files, dirs, blocks) = {
        let ns = nn.ns.read();
        (ns.file_count(), ns.dir_count(), ns.block_count() as u64)
    };
    let mut out = NameNodeStatsProto {
        last_image_txid: nn.last_image_txid(),
        safe_mode: nn.in_safe_mode(),
        files,
        dirs,
        blocks,
        summary_txid: nn.summary.as_ref().map(|s| s.txid()),
        ..Default::default()
    };
    if let Some(j) = &nn.journal {
        let m = j.metrics();
        out.last_appended_txid = j.last_appended();
        out.last_synced_txid = j.last_synced().ok();
        out.syncs = m.syncs.load(Ordering::Relaxed);
        out.txns_synced = m.txns_synced.load(Ordering::Relaxed);
        out.bytes_synced = m.bytes_synced.load(Ordering::Relaxed);
        out.sync_micros = m.sync_micros.load(Ordering::Relaxed);
        out.segments_rolled = m.segments_rolled.load(Ordering::Relaxed);
        out.failed_journal_dirs = m.failed_dirs();
        out.journal_dirs = m
            .dirs()
            .into_iter()
            .map(|d| JournalDirStatusProto {
                path: d.path.display().to_string(),
                in_service: d.failed.is_none(),
                error: d.failed,
            })
            .collect();
    }
    Ok(out)
}
