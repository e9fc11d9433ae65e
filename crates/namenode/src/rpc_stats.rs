//! org.ferrite.NameNodeStatsProtocol: what an operator needs to see of the journal (sync
//! accounting, and which directories are in service and why not) and of the namespace.
//! `ferrite admin namenode-stats` prints it; `/jmx` shows the same (`jmx.rs`).

use std::sync::Arc;

use ferrite_ipc::{CallCtx, MethodKind, Router, RpcError, NAMENODE_STATS_PROTOCOL};
use ferrite_proto::ferrite::*;

use crate::jmx::JournalFacts;
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
        let f = JournalFacts::read(j, &nn.cfg.required_edits_dirs);
        out.last_appended_txid = f.last_appended;
        out.last_synced_txid = f.last_synced;
        out.syncs = f.syncs;
        out.txns_synced = f.txns_synced;
        out.bytes_synced = f.bytes_synced;
        out.sync_micros = f.sync_micros;
        out.segments_rolled = f.segments_rolled;
        out.failed_journal_dirs = f.failed_dirs();
        out.journal_dirs = f
            .dirs
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
