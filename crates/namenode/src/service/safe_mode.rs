//! Safe mode: the administrator's switch, start-up's wait for block reports, and the
//! journal-space guard. Mutations are refused while any of them is on (see `admission`).

use std::sync::atomic::Ordering;

use tracing::{error, info, warn};

use super::admission::superuser_required;
use super::{Admitted, NameNodeService, Operation};
use crate::error::FsError;
use crate::startup_progress::Phase;

/// What `setSafeMode` asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SafeModeAction {
    Get,
    Enter,
    Leave,
    ForceExit,
}

/// Blocks that must have a reported replica before start-up safe mode may end.
pub(super) fn threshold_blocks(threshold: f64, total: usize) -> usize {
    (threshold * total as f64).ceil() as usize
}

impl NameNodeService {
    /// `setSafeMode`: any user may ask whether it is on; changing it is the superuser's.
    /// Answers whether safe mode is on after the action.
    pub fn safe_mode_action(
        &self,
        who: &Admitted,
        action: SafeModeAction,
    ) -> Result<bool, FsError> {
        let user = who.user_for(Operation::SetSafeMode);
        if action != SafeModeAction::Get && !self.caller(user).superuser {
            return Err(superuser_required(user, "setSafeMode"));
        }
        match action {
            SafeModeAction::Enter => self.set_safe_mode(true),
            SafeModeAction::Leave | SafeModeAction::ForceExit => self.set_safe_mode(false),
            SafeModeAction::Get => {}
        }
        Ok(self.in_safe_mode())
    }

    pub fn in_safe_mode(&self) -> bool {
        self.safe_mode.load(Ordering::SeqCst)
            || self.startup_safe_mode.load(Ordering::SeqCst)
            || self.resources_low.load(Ordering::SeqCst)
    }

    /// Whether only start-up safe mode is on (not the administrator's, nor low resources).
    pub fn in_startup_safe_mode_only(&self) -> bool {
        self.startup_safe_mode.load(Ordering::SeqCst)
            && !self.safe_mode.load(Ordering::SeqCst)
            && !self.resources_low.load(Ordering::SeqCst)
    }

    /// Whether the journal's disks ran short of their reserved space (HDFS's "no
    /// resources available": an unhealthy NameNode to a failover controller).
    pub fn resources_low(&self) -> bool {
        self.resources_low.load(Ordering::SeqCst)
    }

    /// The administrator's switch. Leaving also ends start-up safe mode, as
    /// `hdfs dfsadmin -safemode leave` does.
    pub fn set_safe_mode(&self, on: bool) {
        self.safe_mode.store(on, Ordering::SeqCst);
        if !on {
            self.end_startup_safe_mode();
            self.resources_low.store(false, Ordering::SeqCst);
        }
    }

    /// Enters safe mode when the journal directories in service that keep the reserved
    /// free space are not enough by HDFS's policy (`resources.rs`); never leaves it by
    /// itself (HDFS's resource monitor).
    pub fn check_resources(&self) {
        // Only journal directories can run short of space.
        let Some(j) = self
            .journal
            .as_deref()
            .filter(|_| !self.journal_dirs.is_empty())
        else {
            return;
        };
        let reserved = self.cfg.resource_reserved_bytes;
        let dirs: Vec<_> = j
            .metrics()
            .dirs()
            .into_iter()
            .filter(|d| d.failed.is_none())
            .map(|d| (crate::resources::available(&d.path), d.path))
            .collect();
        let policy = crate::journal::DirPolicy {
            required: self.cfg.required_edits_dirs.clone(),
            min_redundant: self.cfg.resource_checked_minimum,
        };
        let spaces = dirs.iter().map(|(s, d)| (d.as_path(), s));
        if crate::resources::has_room(spaces, reserved, &policy) {
            return;
        }
        if !self.resources_low.swap(true, Ordering::SeqCst) {
            for (space, dir) in &dirs {
                match space {
                    Ok(free) => {
                        warn!(dir = %dir.display(), free, reserved, "journal directory below its reserved free space")
                    }
                    Err(e) => {
                        warn!(dir = %dir.display(), error = %e, "journal directory's free space unknown")
                    }
                }
            }
            error!("NameNode low on available disk space: entering safe mode");
        }
    }

    /// Why mutations are refused right now, in HDFS's words.
    pub fn safe_mode_reason(&self) -> String {
        if self.resources_low.load(Ordering::SeqCst) {
            return "Resources are low on NN: the journal directories lack the free space dfs.namenode.resource.du.reserved asks for (every directory in dfs.namenode.edits.dir.required, and dfs.namenode.resource.checked.volumes.minimum of the others, must have it). Free or add space, then turn safe mode off with \"hdfs dfsadmin -safemode leave\"; while space is still short, the NameNode enters safe mode again at its next check.".into();
        }
        if self.safe_mode.load(Ordering::SeqCst) {
            return "It was turned on manually. Use \"hdfs dfsadmin -safemode leave\" to turn safe mode off.".into();
        }
        let (total, safe) = self.safe_block_counts();
        let needed = self.safe_threshold_blocks(total);
        if safe < needed {
            format!(
                "The reported blocks {safe} needs additional {} blocks to reach the threshold {:.4} of total blocks {total}.\nThe minimum number of live datanodes is not required. Safe mode will be turned off automatically once the thresholds have been reached.",
                needed - safe,
                self.cfg.safemode_threshold
            )
        } else {
            format!(
                "The reported blocks {safe} has reached the threshold {:.4} of total blocks {total}. In safe mode extension. Safe mode will be turned off automatically soon.",
                self.cfg.safemode_threshold
            )
        }
    }

    /// (complete blocks, complete blocks with a finished replica): start-up safe mode
    /// counts complete blocks only, as HDFS's does. A file open for write may have a
    /// finished replica of its last block (a recovery finalized it, an append reopened
    /// it), and counting it would let the count pass the total.
    pub(crate) fn safe_block_counts(&self) -> (usize, usize) {
        let ns = self.ns.read();
        let b = self.blocks.lock();
        let open_safe = ns
            .open_last_blocks()
            .filter(|&id| b.finalized_replicas(id) > 0)
            .count();
        (
            ns.complete_block_count(),
            b.safe_blocks().saturating_sub(open_safe),
        )
    }

    fn safe_threshold_blocks(&self, total: usize) -> usize {
        threshold_blocks(self.cfg.safemode_threshold, total)
    }

    /// Start-up safe mode is over (for good: it is never entered again), and so is start-up.
    fn end_startup_safe_mode(&self) {
        if self.startup_safe_mode.swap(false, Ordering::SeqCst) {
            self.progress
                .end_phase(Phase::SafeMode, std::time::Instant::now());
        }
    }

    /// Ends start-up safe mode once enough blocks have a reported replica, enough DataNodes
    /// are live, and the extension has passed. Called periodically and after reports.
    pub fn check_startup_safe_mode(&self, now: i64) {
        if !self.startup_safe_mode.load(Ordering::SeqCst) {
            return;
        }
        let met = self.startup_threshold_met(now);
        let mut since = self.threshold_met_at.lock();
        if !met {
            *since = None;
            return;
        }
        let started = *since.get_or_insert(now);
        // An HA active leaves as soon as the threshold is met: its DataNodes report to
        // every NameNode, and its clients are retrying meanwhile.
        let extension = match self.ha_control() {
            Some(_) => 0,
            None => self.cfg.safemode_extension_ms as i64,
        };
        if now - started >= extension {
            self.end_startup_safe_mode();
            info!("start-up safe mode is off");
        }
    }

    /// For an HA standby turning active: no start-up safe mode, as the DataNodes have
    /// been reporting to it all along — unless none has registered yet while the
    /// namespace has blocks (a NameNode restarted moments ago): then it is in start-up
    /// safe mode, as after any restart, until their reports meet the threshold.
    pub fn startup_safe_mode_on_activation(&self, now: i64) {
        if !self.cold(now) {
            self.end_startup_safe_mode();
        } else if !self.startup_safe_mode.swap(true, Ordering::SeqCst) {
            info!("active before any DataNode registered: start-up safe mode");
        }
    }

    /// Whether this NameNode knows of no live DataNode while its namespace has blocks:
    /// made active now, it could place and locate nothing, so it would start in safe mode.
    pub fn cold(&self, now: i64) -> bool {
        self.live_datanode_count(now) == 0 && self.ns.read().complete_block_count() > 0
    }

    fn live_datanode_count(&self, now: i64) -> usize {
        self.live_datanodes(&self.blocks.lock().reg, now)
    }

    /// Whether start-up safe mode's threshold is met now.
    fn startup_threshold_met(&self, now: i64) -> bool {
        let (total, safe) = self.safe_block_counts();
        let live = self.live_datanode_count(now);
        self.progress.set_count(safe as u64);
        safe >= self.safe_threshold_blocks(total) && live >= self.cfg.safemode_min_datanodes
    }
}
