//! org.ferrite.NameNodeStatsProtocol: what an operator needs to see of the journal (sync
//! accounting, and which directories are in service and why not) and of the namespace.
//! `ferrite admin namenode-stats` prints it; `/jmx` shows the same (`jmx.rs`).

use ferrite_ipc::{Router, NAMENODE_STATS_PROTOCOL};
use ferrite_proto::ferrite::*;

use super::{Nn, Register, Res};
use crate::service::facts::{Facts, RpcFacts};
use crate::service::NameNodeService;
use crate::service::{Admitted, Operation};

pub fn register(r: &mut Router<NameNodeService>) {
    r.op(
        NAMENODE_STATS_PROTOCOL,
        Operation::GetNameNodeStats,
        get_stats,
    );
}

async fn get_stats(
    nn: Nn,
    _: Admitted,
    _: GetNameNodeStatsRequestProto,
) -> Res<NameNodeStatsProto> {
    let f = Facts::gather(&nn, "", RpcFacts::default());
    let mut out = NameNodeStatsProto {
        last_image_txid: f.last_image_txid,
        safe_mode: f.safe_mode.is_some(),
        files: f.files,
        dirs: f.dirs,
        blocks: f.blocks,
        summary_txid: f.summary.as_ref().map(|s| s.applied_txid),
        ..Default::default()
    };
    if let Some(f) = f.journal {
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
