//! The service's own work, driven by the server's periodic tasks (`server.rs` owns the
//! timers; each step here is one pass): lease expiry, the trash emptier, the namespace
//! summary follower, and closing down.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use super::NameNodeService;
use crate::clock::now_ms;
use crate::namespace::Caller;
use crate::summary::follow::Rebuild;
use crate::summary::Summary;
use crate::trash::{self, TrashAction};

impl NameNodeService {
    /// One pass of the lease monitor: starts again block recoveries whose primary has not
    /// reported back, and recovers the files of writers that stopped renewing for longer
    /// than the hard limit.
    pub async fn check_leases(&self) {
        let hard_ms = self.cfg.lease_hard_limit_sec as i64 * 1000;
        self.retry_overdue_recoveries().await;
        let expired = self.leases.lock().expired(now_ms(), hard_ms);
        if expired.is_empty() {
            return;
        }
        // One scan of the open files, however many holders expired at once.
        let mut files: HashMap<String, Vec<u64>> =
            expired.iter().map(|h| (h.clone(), Vec::new())).collect();
        for (id, holder) in self.ns.read().open_files() {
            if let Some(ids) = files.get_mut(holder) {
                ids.push(id);
            }
        }
        let namenode = crate::leases::namenode_holder(now_ms());
        for holder in expired {
            for id in files.remove(&holder).unwrap_or_default() {
                // A close ends the file's lease as any close does (`Leases::on_op`); a
                // block recovery closes it when the primary reports back, and is started
                // again if it does not.
                match self.recover_file(id, Some(&namenode)).await {
                    Ok(outcome) => {
                        info!(%holder, file_id = id, ?outcome, "lease expired; recovering the file")
                    }
                    Err(e) => warn!(%holder, file_id = id, error = %e, "lease recovery failed"),
                }
            }
            self.leases
                .lock()
                .forget_expired(&holder, now_ms(), hard_ms);
        }
    }

    /// How many clients hold leases now.
    pub fn lease_holders(&self) -> usize {
        self.leases.lock().holder_count()
    }

    /// One trash emptier pass at `now`: checkpoints each user's current trash and deletes
    /// checkpoints older than `interval_ms`, as the superuser.
    pub async fn empty_trash(&self, now: i64, interval_ms: i64) {
        let su = Caller::superuser(&self.superuser);
        let actions = trash::plan(&self.ns.read(), now, interval_ms);
        for action in actions {
            let result = match &action {
                TrashAction::Delete { path } => {
                    self.commit(|ns| {
                        Ok((
                            (),
                            ns.plan_delete(&su, path, true, now)?.unwrap_or_default(),
                        ))
                    })
                    .await
                }
                TrashAction::Checkpoint { from, to } => {
                    self.commit(|ns| Ok(((), ns.plan_rename2(&su, from, to, false, now)?)))
                        .await
                }
            };
            match result {
                Ok(()) => info!(?action, "trash"),
                Err(e) => warn!(?action, error = %e, "trash emptier step failed"),
            }
        }
    }

    /// Keeps the summary in step with the journal until the journal closes; blocking, for
    /// a thread of its own. Does nothing without a summary or a journal.
    pub fn follow_journal_with_summary(self: &Arc<Self>) {
        let (Some(svc), Some(journal)) = (self.summary.clone(), &self.journal) else {
            return;
        };
        let me = self.clone();
        let rebuild: Rebuild = Box::new(move || {
            // Under the namespace lock, the journal's last appended txid is exactly the
            // state the namespace shows.
            let ns = me.ns.read();
            Summary::from_namespace(&ns, me.last_txid())
        });
        let c = &self.cfg;
        svc.run(
            journal.as_ref(),
            &self.journal_dirs,
            rebuild,
            c.summary_checkpoint_txns,
            Duration::from_secs(c.summary_checkpoint_period_sec),
            Duration::from_millis(c.summary_rest_ms),
        );
    }

    /// Whether anything runs beside the RPCs that needs a journal (checkpoints, resource
    /// checks, the summary follower).
    pub fn has_journal(&self) -> bool {
        self.journal.is_some()
    }

    /// Whether checkpoint images are kept anywhere (the checkpointer has work).
    pub fn has_image_store(&self) -> bool {
        self.images.is_some()
    }

    /// Whether the journal lives in directories whose free space can run short.
    pub fn has_journal_dirs(&self) -> bool {
        !self.journal_dirs.is_empty()
    }

    /// Closing down: the summary follower stops taking new work; then, on a healthy
    /// NameNode, a last checkpoint image; then the journal syncs and closes. Blocking.
    pub fn stop_summary(&self) {
        if let Some(s) = &self.summary {
            s.stop();
        }
    }

    /// See [`stop_summary`](Self::stop_summary): the image (when `healthy`) and the
    /// journal's close.
    pub fn close(&self, healthy: bool) {
        if healthy {
            if let Err(e) = self.save_namespace() {
                warn!(error = %e, "checkpoint at shutdown failed; the journal still has every edit");
            }
        }
        if let Some(j) = &self.journal {
            j.close();
        }
    }
}
