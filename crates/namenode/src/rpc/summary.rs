//! org.ferrite.SummaryProtocol: the namespace summary of a path with its largest children
//! and size histogram (`ferrite summary`), and `readEdits`, the synced journal stream for a
//! summary service running in another process.

use std::time::Duration;

use ferrite_ipc::{Router, SUMMARY_PROTOCOL};
use ferrite_proto::ferrite::*;

use super::{Nn, Register, Res};
use crate::service::NameNodeService;
use crate::service::{Admitted, Operation};
use crate::summary::Summary;

pub fn register(r: &mut Router<NameNodeService>) {
    let p = SUMMARY_PROTOCOL;
    r.op(p, Operation::GetSummary, get_summary)
        .op(p, Operation::ReadEdits, read_edits)
        .op(p, Operation::GetImage, get_image);
}

/// The summary of a path with its largest children and size histogram.
pub async fn get_summary(
    nn: Nn,
    who: Admitted,
    req: GetSummaryRequestProto,
) -> Res<GetSummaryResponseProto> {
    let top = req.top.unwrap_or(0) as usize;
    let reply = nn
        .path_summary(
            &who,
            &req.path,
            |s, path| summary_reply(s, path, top),
            |r| {
                r.summary
                    .as_ref()
                    .is_some_and(|p| p.restricted.unwrap_or(0) > 0)
            },
        )
        .await?;
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

/// Synced records from `fromTxid` on, for a summary service in another process.
pub async fn read_edits(
    nn: Nn,
    who: Admitted,
    req: ReadEditsRequestProto,
) -> Res<ReadEditsResponseProto> {
    let max = req.max_bytes.unwrap_or(8 << 20).clamp(4096, 64 << 20) as usize;
    let wait = Duration::from_millis(u64::from(req.wait_ms.unwrap_or(1000).min(30_000)));
    let (records, last_synced) = nn.read_edits(&who, req.from_txid.max(1), max, wait).await?;
    Ok(ReadEditsResponseProto {
        records,
        last_synced,
    })
}

/// A stretch of a checkpoint image: where a summary service in another process starts.
pub async fn get_image(
    nn: Nn,
    who: Admitted,
    req: GetImageRequestProto,
) -> Res<GetImageResponseProto> {
    let max = req.max_bytes.unwrap_or(8 << 20).clamp(4096, 32 << 20) as u64;
    let chunk = nn
        .image_chunk(&who, req.txid.unwrap_or(0), req.offset, max)
        .await?;
    Ok(
        chunk.map_or_else(GetImageResponseProto::default, |c| GetImageResponseProto {
            txid: c.txid,
            total: c.total,
            data: c.data,
        }),
    )
}
