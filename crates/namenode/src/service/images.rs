//! Checkpoint images and the journal's administration: periodic and requested images
//! (saveNamespace), rolling the journal (rollEdits), and restoring failed directories.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tracing::{info, warn};

use super::{Admitted, NameNodeService, Operation};
use crate::checkpoint::{self, ImageSink};
use crate::clock::now_ms;
use crate::error::FsError;
use crate::forked_writer;
use crate::journal::{recover, EditLog};

impl NameNodeService {
    /// The txid of the newest checkpoint image written or loaded.
    pub fn last_image_txid(&self) -> u64 {
        self.last_image_txid.load(Ordering::SeqCst)
    }

    /// `saveNamespace`: an image now, taken only in safe mode as HDFS requires. With
    /// `-beforeShutdown`'s bounds (`window_s`, `txn_gap`), no new image when the newest is
    /// recent enough. Answers whether an image was saved.
    pub async fn save_namespace_now(
        self: &Arc<Self>,
        who: &Admitted,
        window_s: u64,
        txn_gap: u64,
    ) -> Result<bool, FsError> {
        who.check(Operation::SaveNamespace);
        if !self.in_safe_mode() {
            return Err(FsError::Io(
                "Safe mode should be turned ON in order to create namespace image.".into(),
            ));
        }
        if self.image_recent_enough(window_s, txn_gap) {
            return Ok(false);
        }
        self.checkpoint()
            .await
            .map_err(|e| FsError::internal("saving the namespace failed", e))?;
        Ok(true)
    }

    /// The journal the admin calls act on; a NameNode configured without directories has none.
    fn journal_or_err(&self) -> Result<&dyn EditLog, FsError> {
        self.journal
            .as_deref()
            .ok_or_else(|| FsError::Io("this NameNode keeps no journal".into()))
    }

    /// `rollEdits`: ends the current journal segment and answers where the next one starts.
    /// Refused in safe mode, as HDFS does ("Log not rolled").
    pub async fn roll_edits(&self, who: &Admitted) -> Result<u64, FsError> {
        who.check(Operation::RollEdits);
        if self.in_safe_mode() {
            return Err(FsError::InSafeMode {
                refused: "Log not rolled".into(),
                reason: self.safe_mode_reason(),
            });
        }
        let txid = self
            .journal_or_err()?
            .roll()
            .await
            .map_err(|e| FsError::internal("rolling the journal", e))?;
        info!(new_segment_txid = txid, "journal rolled on request");
        Ok(txid)
    }

    /// `restoreFailedStorage true|false|check`: whether journal rolls bring failed journal
    /// directories back into service. Answers the setting in force after the call. (Name
    /// directories need no switch: every checkpoint tries each of them.)
    pub fn restore_failed_storage(&self, who: &Admitted, arg: &str) -> Result<bool, FsError> {
        who.check(Operation::RestoreFailedStorage);
        let journal = self.journal_or_err()?;
        match arg {
            "check" => {}
            "true" | "false" => journal.set_restore_failed(arg == "true"),
            other => {
                return Err(FsError::IllegalArgument(format!(
                    "restoreFailedStorage takes true, false or check, not {other:?}"
                )))
            }
        }
        Ok(journal.restore_failed())
    }

    /// A checkpoint as HDFS takes one (saveNamespace, and its checkpointers' rollEditLog):
    /// the journal segment ends first, then the image is written, so images and segments
    /// meet at a boundary. Saved in safe mode, where nothing is appended, the image's txid
    /// is the last of the finalized segment and the next segment starts after it; a later
    /// purge then drops whole segments. A roll that fails is logged and the image is
    /// written anyway: an image never depends on the roll.
    pub async fn checkpoint(self: &Arc<Self>) -> std::io::Result<u64> {
        if let Some(j) = &self.journal {
            if let Err(e) = j.roll().await {
                warn!(error = %e, "the journal did not roll before the checkpoint");
            }
        }
        let state = self.clone();
        tokio::task::spawn_blocking(move || state.save_namespace())
            .await
            .map_err(|e| std::io::Error::other(format!("checkpoint task failed: {e}")))?
    }

    /// Writes a checkpoint image of the current namespace to every name directory, prunes
    /// old images and the journal segments they make unnecessary. Blocking: run it off the
    /// async workers. Returns the image's txid.
    pub fn save_namespace(&self) -> std::io::Result<u64> {
        self.save_namespace_with(|| {})
    }

    /// [`save_namespace`](Self::save_namespace), with `in_writer` run by the image writer
    /// before it writes (in the forked child): tests hold the writer there to show that
    /// the namespace is free meanwhile.
    #[doc(hidden)]
    pub fn save_namespace_with(&self, in_writer: impl Fn()) -> std::io::Result<u64> {
        // Without an image store (a NameNode without name directories) there is nowhere
        // to write an image, and nothing to replay one against.
        let (Some(journal), Some(images)) = (self.journal.as_deref(), self.images.as_deref())
        else {
            return Ok(0);
        };
        let _one_at_a_time = self.saving.lock();
        let started = std::time::Instant::now();
        let mut locked_us = 0;
        let saved = images.save(&mut |sink| {
            // Appends happen under the write lock, so while we hold the read lock the
            // namespace is exactly the state as of `last_appended`. Into a file the lock is
            // held only until a writer is forked off with its snapshot (see
            // `forked_writer`); into memory, for the whole write.
            let ns = self.ns.read();
            let txid = journal.last_appended();
            let locked = std::time::Instant::now();
            let forked = match sink {
                ImageSink::File(file) => Some(forked_writer::spawn(|| {
                    in_writer();
                    ns.write_image(txid, &mut **file).map(drop)
                })),
                ImageSink::Memory(_) => None,
            };
            match forked {
                Some(Ok(writer)) => {
                    drop(ns);
                    locked_us = locked.elapsed().as_micros() as u64;
                    writer.wait()?;
                }
                Some(Err(e)) => {
                    warn!(error = %e, "could not fork the image writer; writing the image under the namespace lock");
                    ns.write_image(txid, sink)?;
                    locked_us = locked.elapsed().as_micros() as u64;
                }
                None => {
                    ns.write_image(txid, sink)?;
                    locked_us = locked.elapsed().as_micros() as u64;
                }
            }
            Ok(txid)
        })?;
        let (txid, bytes) = (saved.txid, saved.bytes);
        self.last_image_txid.store(txid, Ordering::SeqCst);
        self.last_image_ms.store(now_ms(), Ordering::SeqCst);
        if let Some(oldest) = images.prune(self.cfg.checkpoints_retained) {
            // As HDFS's retention: everything after the oldest image, plus some history.
            let keep_from = (oldest + 1).saturating_sub(self.cfg.extra_edits_retained);
            let purged = recover::purge_before(&self.journal_dirs, keep_from);
            if purged > 0 {
                info!(
                    purged,
                    before_txid = keep_from,
                    "journal segments covered by retained images removed"
                );
            }
        }
        info!(
            txid,
            bytes,
            millis = started.elapsed().as_millis() as u64,
            namespace_locked_us = locked_us,
            "checkpoint image saved"
        );
        Ok(txid)
    }

    /// Whether the newest image makes a save asked for with these bounds unnecessary
    /// (see [`checkpoint::recent_enough`]).
    pub fn image_recent_enough(&self, window_s: u64, txn_gap: u64) -> bool {
        let last = self.journal.as_ref().map_or(0, |j| j.last_appended());
        let image = self.last_image_txid();
        checkpoint::recent_enough(self.image_age_ms(), image, last, window_s, txn_gap)
    }

    /// When the newest image was written (ms since the epoch).
    pub fn last_image_ms(&self) -> i64 {
        self.last_image_ms.load(Ordering::SeqCst)
    }

    /// How long ago the newest image was written.
    pub fn image_age_ms(&self) -> i64 {
        now_ms() - self.last_image_ms.load(Ordering::SeqCst)
    }

    /// Transactions journaled since the last image.
    pub fn txns_since_image(&self) -> u64 {
        let last = self
            .journal
            .as_ref()
            .map(|j| j.last_appended())
            .unwrap_or(0);
        last.saturating_sub(self.last_image_txid.load(Ordering::SeqCst))
    }
}
