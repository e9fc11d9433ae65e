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
use crate::summary::Summary;

type Nn = Arc<NnState>;
type Res<T> = Result<T, RpcError>;

pub fn register(r: &mut Router<NnState>) {
    r.method(
        SUMMARY_PROTOCOL,
        "getSummary",
        MethodKind::READ,
        get_summary,
    )
    .method(SUMMARY_PROTOCOL, "readEdits", MethodKind::ADMIN, read_edits)
    .method(SUMMARY_PROTOCOL, "getImage", MethodKind::ADMIN, get_image);
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
    let reply = svc.read(|s| summary_reply(s, &path, req.top.unwrap_or(0) as usize));
    if reply
        .summary
        .as_ref()
        .is_some_and(|p| p.restricted.unwrap_or(0) > 0 && !caller.bypass())
    {
        nn.ns.read().check_subtree(&caller, slot, READ | EXECUTE)?;
    }
    Ok(reply)
}

/// The getSummary reply for `path` (no summary when the path is unknown to it). Shared with
/// the standalone summary service.
pub fn summary_reply(s: &Summary, path: &str, top: usize) -> GetSummaryResponseProto {
    let Some(p) = s.get(path) else {
        // Deleted since the caller's check, or not seen by the summary yet.
        return GetSummaryResponseProto::default();
    };
    GetSummaryResponseProto {
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
            txid: s.txid(),
            restricted: Some(p.tot.restricted),
        }),
        largest: s
            .largest_children(path, top)
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
    }
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
            None => {
                // A copy: two followers' reads need not wait for each other.
                let mut cursor = *nn2.edits_cursor.lock();
                let limit = journal.last_synced().unwrap_or(0);
                let r = from_segments(&nn2.journal_dirs, &mut cursor, from, limit, max);
                *nn2.edits_cursor.lock() = cursor;
                r
            }
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
/// `cursor` is where the last such read stopped: a follower catching up asks for the
/// stretch after the one it was sent, which starts there.
fn from_segments(
    dirs: &[std::path::PathBuf],
    cursor: &mut Option<recover::Cursor>,
    from: u64,
    limit: u64,
    max: usize,
) -> Result<Bytes, FsError> {
    const FULL: &str = "reply full";
    let mut out = Vec::new();
    let r = recover::follow(dirs, from - 1, limit, cursor, |txid, op| {
        if out.len() >= max {
            // Stop reading: the rest is for the follower's next call.
            return Err(FULL.into());
        }
        codec::encode_record(txid, op, &mut out);
        Ok(())
    });
    match r {
        Ok(_) => {}
        Err(recover::RecoverError::Apply { why, .. }) if why == FULL => {}
        Err(e) => {
            return Err(FsError::Io(format!(
                "reading the journal from txid {from}: {e}"
            )))
        }
    }
    Ok(out.into())
}

/// A stretch of a checkpoint image: where a summary service in another process starts.
pub async fn get_image(
    nn: Nn,
    _: CallCtx,
    req: GetImageRequestProto,
) -> Res<GetImageResponseProto> {
    let max = req.max_bytes.unwrap_or(8 << 20).clamp(4096, 32 << 20) as u64;
    let want = req.txid.unwrap_or(0);
    let images = crate::checkpoint::list(&nn.name_dirs);
    let found = images.into_iter().find(|(t, _)| want == 0 || *t == want);
    let Some((txid, path)) = found else {
        if want == 0 {
            return Ok(GetImageResponseProto::default());
        }
        return Err(FsError::NotFound(format!(
            "image {want} is gone; start again from the newest"
        ))
        .into());
    };
    let offset = req.offset;
    let data = tokio::task::spawn_blocking(move || -> std::io::Result<(u64, Vec<u8>)> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = std::fs::File::open(&path)?;
        let total = f.metadata()?.len();
        f.seek(SeekFrom::Start(offset.min(total)))?;
        let mut buf = Vec::new();
        f.take(max).read_to_end(&mut buf)?;
        Ok((total, buf))
    })
    .await
    .map_err(|e| FsError::Io(e.to_string()))?
    .map_err(|e| FsError::Io(e.to_string()))?;
    Ok(GetImageResponseProto {
        txid,
        total: data.0,
        data: data.1,
    })
}
