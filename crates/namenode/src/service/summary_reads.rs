//! What the namespace summary and its followers read: a path's summary (`ferrite
//! summary`), and for a summary service in another process, the synced journal stream
//! (`readEdits`) and stretches of a checkpoint image (`getImage`).

use std::time::Duration;

use bytes::Bytes;

use super::{Admitted, NameNodeService, Operation};
use crate::error::FsError;
use crate::journal::{codec, recover};
use crate::namespace::perm::{EXECUTE, READ};
use crate::summary::Summary;

fn off() -> FsError {
    FsError::Unsupported("the namespace summary is off (ferrite.summary.enabled)".into())
}

/// A stretch of a checkpoint image.
#[derive(Debug, Default)]
pub struct ImageChunk {
    pub txid: u64,
    /// The whole image's size.
    pub total: u64,
    pub data: Vec<u8>,
}

impl NameNodeService {
    /// The summary of `path` as of the latest txid it has applied (it waits briefly to
    /// catch up with the namespace first), read by `read`. Reading it needs what
    /// getContentSummary needs: traverse to the path, and READ_EXECUTE on every directory
    /// below unless none withholds it (`restricted` says whether the answer counts any
    /// that do).
    pub async fn path_summary<R>(
        &self,
        who: &Admitted,
        path: &str,
        read: impl FnOnce(&Summary, &str) -> R,
        restricted: impl FnOnce(&R) -> bool,
    ) -> Result<R, FsError> {
        let user = who.user();
        let (Some(svc), Some(journal)) = (&self.summary, &self.journal) else {
            return Err(off());
        };
        let caller = self.caller(user);
        let (slot, path) = self.ns.read().resolve_checked(&caller, path)?;
        let seen = journal.last_appended();
        svc.caught_up(seen, Duration::from_millis(self.cfg.summary_wait_ms))
            .await;
        let answer = svc.read(|s| read(s, &path));
        if restricted(&answer) && !caller.bypass() {
            self.ns
                .read()
                .check_subtree(&caller, slot, READ | EXECUTE)?;
        }
        Ok(answer)
    }

    /// Synced records from `from` on, about `max` bytes, waiting up to `wait` for new ones
    /// (the first batch may begin a little earlier; a follower skips what it has): from
    /// memory, or from the segments when the follower is further behind than the
    /// in-memory tail reaches. Answers the records and the last synced txid.
    pub async fn read_edits(
        self: &std::sync::Arc<Self>,
        who: &Admitted,
        from: u64,
        max: usize,
        wait: Duration,
    ) -> Result<(Bytes, u64), FsError> {
        who.check(Operation::ReadEdits);
        if self.journal.is_none() {
            return Err(off());
        }
        let me = self.clone();
        let records = tokio::task::spawn_blocking(move || {
            let journal = me.journal.as_ref().expect("checked above");
            match journal.read_from(from, max, wait) {
                Some(batches) => Ok(concat(batches.iter().map(|b| &b.bytes[..]))),
                None => {
                    // A copy: two followers' reads need not wait for each other.
                    let mut cursor = *me.edits_cursor.lock();
                    let limit = journal.last_synced().unwrap_or(0);
                    let r = from_segments(&me.journal_dirs, &mut cursor, from, limit, max);
                    *me.edits_cursor.lock() = cursor;
                    r
                }
            }
        })
        .await
        .map_err(|e| FsError::internal("reading the journal", e))??;
        let synced = self
            .journal
            .as_ref()
            .map_or(0, |j| j.last_synced().unwrap_or(0));
        Ok((records, synced))
    }

    /// A stretch of checkpoint image `txid` (0: the newest) from `offset`, at most `max`
    /// bytes; `None` when there is no image at all.
    pub async fn image_chunk(
        &self,
        who: &Admitted,
        txid: u64,
        offset: u64,
        max: u64,
    ) -> Result<Option<ImageChunk>, FsError> {
        who.check(Operation::GetImage);
        let Some(store) = self.images.as_deref() else {
            return Ok(None);
        };
        let found = store
            .list()
            .into_iter()
            .find(|i| txid == 0 || i.txid == txid);
        let Some(image) = found else {
            if txid == 0 {
                return Ok(None);
            }
            return Err(FsError::NotFound(format!(
                "image {txid} is gone; start again from the newest"
            )));
        };
        let txid = image.txid;
        let bytes = store
            .read(txid)
            .map_err(|e| FsError::internal(format!("reading image {txid}"), e))?;
        // Copying out of a mapped file may wait on the disk: not on an async worker.
        let (total, data) = tokio::task::spawn_blocking(move || {
            let total = bytes.len() as u64;
            let from = offset.min(total) as usize;
            let to = offset.saturating_add(max).min(total) as usize;
            (total, bytes[from..to].to_vec())
        })
        .await
        .map_err(|e| FsError::internal(format!("copying from image {txid}"), e))?;
        Ok(Some(ImageChunk { txid, total, data }))
    }
}

fn concat<'a>(parts: impl Iterator<Item = &'a [u8]>) -> Bytes {
    let mut out = Vec::new();
    for p in parts {
        out.extend_from_slice(p);
    }
    out.into()
}

/// What stops a read of the segments once a reply is full.
#[derive(Debug, thiserror::Error)]
#[error("reply full")]
struct ReplyFull;

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
    let mut out = Vec::new();
    let r = recover::follow(dirs, from - 1, limit, cursor, |txid, op| {
        if out.len() >= max {
            // Stop reading: the rest is for the follower's next call.
            return Err(ReplyFull.into());
        }
        codec::encode_record(txid, op, &mut out);
        Ok(())
    });
    match r {
        Ok(_) => {}
        Err(recover::RecoverError::Apply { source, .. }) if source.is::<ReplyFull>() => {}
        Err(e) => {
            return Err(FsError::Io(format!(
                "reading the journal from txid {from}: {e}"
            )))
        }
    }
    Ok(out.into())
}
