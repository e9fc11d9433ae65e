//! org.ferrite.SummaryProtocol: the namespace summary of a path with its largest children
//! and size histogram (`ferrite summary`), and `readEdits`, the synced journal stream for a
//! summary service running in another process.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ferrite_ipc::{CallCtx, MethodKind, Router, RpcError, SUMMARY_PROTOCOL};
use ferrite_proto::ferrite::*;

use crate::error::FsError;
use crate::journal::{codec, recover};
use crate::namespace::perm::{EXECUTE, READ};
use crate::state::NnState;

type Nn = Arc<NnState>;
type Res<T> = Result<T, RpcError>;

pub fn register(r: &mut Router<NnState>) {
    r.method(
        SUMMARY_PROTOCOL,
        "getSummary",
        MethodKind::READ,
        get_summary,
    )
    .method(SUMMARY_PROTOCOL, "readEdits", MethodKind::ADMIN, read_edits);
}

fn off() -> RpcError {
    FsError::Unsupported("the namespace summary is off (ferrite.summary.enabled)".into()).into()
}

/// The summary as of the latest txid it has applied (it waits briefly to catch up with the
/// namespace first). Reading it needs what `getContentSummary` needs: traverse to the
/// path, and READ_EXECUTE on every directory below unless none withholds it.
pub async fn get_summary(
    nn: Nn,
    ctx: CallCtx,
    req: GetSummaryRequestProto,
) -> Res<GetSummaryResponseProto> {
    let (Some(svc), Some(journal)) = (&nn.summary, &nn.journal) else {
        return Err(off());
    };
    let caller = nn.caller(&ctx.user);
    let (slot, path) = nn.ns.read().resolve_checked(&caller, &req.path)?;
    let seen = journal.last_appended();
    svc.caught_up(seen, Duration::from_millis(nn.cfg.summary_wait_ms))
        .await;
    let (found, largest, txid) = svc.read(|s| {
        let top = req.top.unwrap_or(0) as usize;
        (s.get(&path), s.largest_children(&path, top), s.txid())
    });
    let Some(p) = found else {
        // Deleted since the check, or the summary has not seen it yet.
        return Ok(GetSummaryResponseProto::default());
    };
    if p.tot.restricted > 0 && !caller.bypass() {
        nn.ns.read().check_subtree(&caller, slot, READ | EXECUTE)?;
    }
    Ok(GetSummaryResponseProto {
        summary: Some(PathSummaryProto {
            is_dir: p.is_dir,
            direct_files: p.direct_files,
            direct_dirs: p.direct_dirs,
            files: p.tot.files,
            dirs: p.tot.dirs,
            bytes: p.tot.bytes,
            raw_bytes: p.tot.raw,
            updated: p.updated,
            histogram: p.tot.hist.to_vec(),
            txid,
        }),
        largest: largest
            .unwrap_or_default()
            .into_iter()
            .map(|c| ChildUsageProto {
                name: c.name,
                is_dir: c.is_dir,
                files: c.files,
                bytes: c.bytes,
                raw_bytes: c.raw,
            })
            .collect(),
    })
}

/// Synced records from `fromTxid` on (the first batch may begin a little earlier; a
/// follower skips what it has), from memory, or from the segments when the follower is
/// further behind than the in-memory tail reaches.
pub async fn read_edits(
    nn: Nn,
    _: CallCtx,
    req: ReadEditsRequestProto,
) -> Res<ReadEditsResponseProto> {
    let Some(journal) = &nn.journal else {
        return Err(off());
    };
    let max = req.max_bytes.unwrap_or(8 << 20).clamp(4096, 64 << 20) as usize;
    let wait = Duration::from_millis(u64::from(req.wait_ms.unwrap_or(1000).min(30_000)));
    let from = req.from_txid.max(1);
    let nn2 = nn.clone();
    let records = tokio::task::spawn_blocking(move || {
        let journal = nn2.journal.as_ref().expect("checked above");
        match journal.read_from(from, max, wait) {
            Some(batches) => Ok(concat(batches.iter().map(|b| &b.bytes[..]))),
            None => from_segments(
                &nn2.journal_dirs,
                from,
                journal.last_synced().unwrap_or(0),
                max,
            ),
        }
    })
    .await
    .map_err(|e| FsError::Io(e.to_string()))??;
    Ok(ReadEditsResponseProto {
        records,
        last_synced: journal.last_synced().unwrap_or(0),
    })
}

fn concat<'a>(parts: impl Iterator<Item = &'a [u8]>) -> Bytes {
    let mut out = Vec::new();
    for p in parts {
        out.extend_from_slice(p);
    }
    out.into()
}

/// Re-encodes records `from..=limit` read from the segments, up to about `max` bytes.
fn from_segments(
    dirs: &[std::path::PathBuf],
    from: u64,
    limit: u64,
    max: usize,
) -> Result<Bytes, FsError> {
    let mut out = Vec::new();
    let r = recover::follow(dirs, from - 1, |txid, op| {
        if txid <= limit && out.len() < max {
            codec::encode_record(txid, op, &mut out);
        }
        Ok(())
    });
    r.map_err(|e| FsError::Io(format!("reading the journal from txid {from}: {e}")))?;
    Ok(out.into())
}
