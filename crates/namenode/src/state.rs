//! The NameNode's shared state and its single mutation path.
//!
//! Every namespace change goes through [`NnState::commit`]: plan under the write lock, apply
//! each record keeping leases in step, append the records to the journal; then, after the
//! lock is released, make the answer rest on them: a served call's reply is held by its
//! connection's writer until the journal has them on disk, and any other caller waits here.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use ferrite_ipc::durable::Durability;
use ferrite_ipc::{CallCtx, MethodKind, RpcError, Service};
use parking_lot::{Mutex, RwLock};
use tracing::{error, info, warn};

use crate::activity::Activity;
use crate::blocks::BlockManager;
use crate::checkpoint;
use crate::config::Config;
use crate::error::FsError;
use crate::forked_writer;
use crate::groups::GroupMapping;
use crate::identity::Identity;
use crate::journal::{recover, Journal};
use crate::leases::Leases;
use crate::namespace::{Applied, Caller, Namespace, Op, Planned};
use crate::startup_progress::{Phase, StartupProgress, StepKind, StepSpec};
use crate::summary::follow::SummaryService;
use crate::summary::Summary;
use crate::tokens::BlockTokens;

/// Wall-clock milliseconds: the only clock the namespace ever sees, read at the edge.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// What start-up did, for logs and `ferrite admin report`.
#[derive(Clone, Debug, Default)]
pub struct StartupReport {
    pub image_txid: u64,
    pub edits_replayed: u64,
    pub last_txid: u64,
    pub millis: u64,
}

pub struct NnState {
    pub ns: RwLock<Namespace>,
    /// Mutations take turns here before they take `ns` for writing. Waiting on this is a
    /// suspended task, where waiting on `ns` would be a parked runtime worker: with two
    /// workers both committing, one slept in the lock most of the time (in-process
    /// creates ran 40% faster on a single worker).
    writers: tokio::sync::Mutex<()>,
    pub leases: Mutex<Leases>,
    pub cfg: Config,
    /// The user that started the NameNode.
    pub superuser: String,
    pub groups: GroupMapping,
    pub identity: Identity,
    /// `None` only for a NameNode configured without any directory (memory only).
    pub journal: Option<Journal>,
    pub name_dirs: Vec<PathBuf>,
    pub journal_dirs: Vec<PathBuf>,
    /// Where `readEdits` last stopped reading the segments (see `recover::Cursor`).
    pub edits_cursor: Mutex<Option<crate::journal::recover::Cursor>>,
    pub startup: StartupReport,
    /// Start-up's phases, for `/jmx` and `/startupProgress`; safe mode's ends here.
    pub progress: Arc<StartupProgress>,
    /// `NameNodeActivity`'s operation counters the RPC router cannot keep.
    pub activity: Activity,
    /// When this NameNode started serving (ms since the epoch).
    pub started_ms: i64,
    last_image_txid: AtomicU64,
    /// When that image was written (ms since the epoch; its file's time at start-up).
    last_image_ms: AtomicI64,
    /// One checkpoint at a time: the periodic one and saveNamespace must not write the same
    /// image file concurrently.
    saving: Mutex<()>,
    /// Safe mode entered by an administrator.
    safe_mode: AtomicBool,
    /// Start-up safe mode: on until enough blocks are reported (see `check_startup_safe_mode`).
    startup_safe_mode: AtomicBool,
    /// Safe mode for want of journal space (see `check_resources`); the administrator
    /// leaves it, and the next check enters it again while space is still short.
    resources_low: AtomicBool,
    /// When the start-up threshold was first met (the extension counts from there).
    threshold_met_at: Mutex<Option<i64>>,
    /// Replica locations and DataNodes. Lock order: `ns` first, then `blocks`.
    pub blocks: Mutex<BlockManager>,
    /// Block access tokens: keys, signing, and the keys DataNodes get.
    pub tokens: BlockTokens,
    /// Per-directory usage kept from the journal (`None` when off or without a journal).
    pub summary: Option<Arc<SummaryService>>,
}

/// Blocks that must have a reported replica before start-up safe mode may end.
fn safe_threshold_blocks(threshold: f64, total: usize) -> usize {
    (threshold * total as f64).ceil() as usize
}

pub struct Storage {
    pub ns: Namespace,
    pub journal: Option<Journal>,
    pub name_dirs: Vec<PathBuf>,
    pub journal_dirs: Vec<PathBuf>,
    pub startup: StartupReport,
    /// The initial namespace summary, when the summary is on.
    pub summary: Option<Summary>,
    /// Start-up's phases so far; the NameNode ends the last one, safe mode.
    pub progress: Arc<StartupProgress>,
}

impl NnState {
    pub fn new(
        cfg: Config,
        superuser: String,
        groups: GroupMapping,
        identity: Identity,
        storage: Storage,
    ) -> Self {
        let mut leases = Leases::default();
        let now = now_ms();
        // As HDFS: a NameNode that knows of blocks waits in safe mode for their reports.
        let startup_safe = storage.ns.block_count() > 0;
        for (_, holder) in storage.ns.open_files() {
            leases.add(holder, now);
        }
        let tokens = BlockTokens::new(cfg.block_tokens, cfg.block_key_times);
        let summary_dir = crate::server::summary_dir(&storage.name_dirs);
        let summary = storage
            .summary
            .map(|s| SummaryService::new(s, Some(summary_dir)));
        let image_ms = checkpoint::image_mtime_ms(&storage.name_dirs, storage.startup.image_txid);
        let progress = storage.progress;
        let started = std::time::Instant::now();
        progress.begin_phase(Phase::SafeMode, started);
        let awaiting = StepSpec {
            kind: Some(StepKind::AwaitingReportedBlocks),
            total: safe_threshold_blocks(cfg.safemode_threshold, storage.ns.block_count()) as u64,
            ..Default::default()
        };
        progress.begin_step(Phase::SafeMode, awaiting, started);
        if !startup_safe {
            progress.end_phase(Phase::SafeMode, started);
        }
        NnState {
            started_ms: now,
            last_image_txid: AtomicU64::new(storage.startup.image_txid),
            last_image_ms: AtomicI64::new(image_ms.unwrap_or(now)),
            ns: RwLock::new({
                let mut ns = storage.ns;
                ns.set_limits(crate::namespace::Limits {
                    dir_items: cfg.max_dir_items,
                    blocks_per_file: cfg.max_blocks_per_file,
                    component_len: cfg.max_component_len,
                });
                ns
            }),
            writers: tokio::sync::Mutex::new(()),
            leases: Mutex::new(leases),
            cfg,
            superuser,
            groups,
            identity,
            journal: storage.journal,
            name_dirs: storage.name_dirs,
            journal_dirs: storage.journal_dirs,
            edits_cursor: Mutex::new(None),
            startup: storage.startup,
            progress,
            activity: Activity::default(),
            saving: Mutex::new(()),
            safe_mode: AtomicBool::new(false),
            startup_safe_mode: AtomicBool::new(startup_safe),
            resources_low: AtomicBool::new(false),
            threshold_met_at: Mutex::new(None),
            blocks: Mutex::new(BlockManager::default()),
            tokens,
            summary,
        }
    }

    pub fn is_superuser(&self, user: &str, groups: &[String]) -> bool {
        user == self.superuser || groups.contains(&self.cfg.superuser_group)
    }

    /// Resolves who a call runs as.
    pub fn caller(&self, user: &str) -> Caller {
        let groups = self.groups.groups(user);
        Caller {
            superuser: self.is_superuser(user, &groups),
            user: user.to_string(),
            groups,
            checks_enabled: self.cfg.permissions_enabled,
        }
    }

    /// The txid of the newest checkpoint image written or loaded.
    pub fn last_image_txid(&self) -> u64 {
        self.last_image_txid.load(Ordering::SeqCst)
    }

    pub fn in_safe_mode(&self) -> bool {
        self.safe_mode.load(Ordering::SeqCst)
            || self.startup_safe_mode.load(Ordering::SeqCst)
            || self.resources_low.load(Ordering::SeqCst)
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
        let Some(j) = &self.journal else {
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
        let total = self.ns.read().block_count();
        let safe = self.blocks.lock().safe_blocks();
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

    fn safe_threshold_blocks(&self, total: usize) -> usize {
        safe_threshold_blocks(self.cfg.safemode_threshold, total)
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
        let total = self.ns.read().block_count();
        let (safe, live) = {
            let b = self.blocks.lock();
            let live = b
                .reg
                .iter()
                .filter(|(_, n)| {
                    n.liveness(now, u64::MAX, self.cfg.dead_interval_ms())
                        != crate::blocks::registry::Liveness::Dead
                })
                .count();
            (b.safe_blocks(), live)
        };
        self.progress.set_count(safe as u64);
        let met =
            safe >= self.safe_threshold_blocks(total) && live >= self.cfg.safemode_min_datanodes;
        let mut since = self.threshold_met_at.lock();
        if !met {
            *since = None;
            return;
        }
        let started = *since.get_or_insert(now);
        if now - started >= self.cfg.safemode_extension_ms as i64 {
            self.end_startup_safe_mode();
            info!(safe, total, live, "start-up safe mode is off");
        }
    }

    /// Plans a mutation under the write lock, applies and journals the records it returns,
    /// and (outside the lock) makes the answer rest on them being durable: held back with
    /// the reply of the RPC being served, or waited for here.
    pub async fn commit<T, P: Into<Planned>>(
        &self,
        plan: impl FnOnce(&Namespace) -> Result<(T, P), FsError>,
    ) -> Result<T, FsError> {
        self.commit_then(plan, |out, _| out).await
    }

    /// [`commit`](Self::commit), then `after` makes the answer from the plan's result and
    /// the records applied, once the writers' turn is released (create answers with the new
    /// file's status, which its record holds). The records are freed there too: every
    /// nanosecond under the turn is one no other writer can use.
    pub async fn commit_then<T, P: Into<Planned>, R>(
        &self,
        plan: impl FnOnce(&Namespace) -> Result<(T, P), FsError>,
        after: impl FnOnce(T, &[Op]) -> R,
    ) -> Result<R, FsError> {
        let (out, ops, wait_for) = {
            let _turn = self.writers.lock().await;
            let now = now_ms();
            let mut ns = self.ns.write();
            let (out, planned) = plan(&ns)?;
            let mut planned: Planned = planned.into();
            let then_fail = planned.then_fail.take();
            // From here until the records are in the journal, a panic would leave memory
            // ahead of the journal, under a lock that does not poison: later records would
            // build on a change that never replays. Stopping lets a restart replay a journal
            // that agrees with every answer given.
            let critical = AbortOnUnwind("applying planned records");
            let inodes_before = ns.inode_count();
            let applied = self.apply_all(&mut ns, &planned, now);
            let mut ops = planned.ops;
            self.activity
                .applied(&ops[..applied.count], inodes_before, ns.inode_count());
            // What was applied is journaled even when a later record failed: memory and the
            // journal must agree.
            let last = match &self.journal {
                Some(j) if applied.count > 0 => Some(j.append_all(&ops[..applied.count])),
                // Even an answer that changed nothing may rest on records not yet durable
                // (another client's mkdir, say), so wait for everything appended so far.
                Some(j) => Some(j.last_appended()),
                None => None,
            };
            drop(critical);
            let retired = ns.take_retired();
            drop(ns);
            drop(retired);
            if let Some(e) = applied.failed.or(then_fail) {
                return Err(e);
            }
            ops.truncate(applied.count);
            (out, ops, last)
        };
        let out = after(out, &ops);
        drop(ops);
        if let (Some(j), Some(txid)) = (&self.journal, wait_for) {
            // Served over RPC, the reply is held until `txid` is synced; otherwise wait here.
            if !ferrite_ipc::durable::defer_reply(txid) {
                j.wait_synced(txid)
                    .await
                    .map_err(|e| FsError::Io(e.to_string()))?;
            }
        }
        Ok(out)
    }

    /// Whether an open at `now` should move a file's access time last set at `atime`. Never
    /// in safe mode, where HDFS leaves access times alone too.
    pub fn access_time_due(&self, atime: i64, now: i64) -> bool {
        crate::namespace::plan::access_time_due(atime, now, self.cfg.access_time_precision_ms)
            && !self.in_safe_mode()
    }

    /// Moves a file's access time for an open (a journaled `OP_TIMES`, at most once per
    /// precision). Its failure does not fail the read, as in HDFS: it is logged.
    pub async fn record_access(&self, caller: &Caller, src: &str, now: i64) {
        let precision = self.cfg.access_time_precision_ms;
        let planned = self
            .commit(|ns| Ok(((), ns.plan_access_time(caller, src, now, precision)?)))
            .await;
        if let Err(e) = planned {
            warn!(src, error = %e, "could not move the access time of a file being read");
        }
    }

    /// Applies planned records in order, keeping leases and blocks in step; stops at the
    /// first that fails.
    fn apply_all(&self, ns: &mut Namespace, planned: &Planned, now: i64) -> Applied {
        let mut applied = ns.apply_planned(planned, |op, fx| {
            let closed = fx.closed_files.iter().map(|(_, holder)| holder.as_str());
            self.leases.lock().on_op(op, closed, now);
            if !fx.removed_blocks.is_empty() {
                self.blocks.lock().blocks_removed(&fx.removed_blocks);
            }
            if matches!(op, Op::SetReplication { .. }) {
                self.blocks.lock().needs_scan = true;
            }
        });
        if let Some(e) = applied.failed.take() {
            // A planned record that does not apply is a bug; refuse loudly, keep serving.
            let op = &planned.ops[applied.count];
            error!(?op, error = %e, "planned operation failed to apply");
            applied.failed = Some(FsError::Io(format!("internal error applying {op:?}: {e}")));
        }
        applied
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
        let Some(journal) = &self.journal else {
            return Ok(0);
        };
        let _one_at_a_time = self.saving.lock();
        let started = std::time::Instant::now();
        let mut locked_us = 0;
        let (txid, bytes, _) = checkpoint::save(&self.name_dirs, |file| {
            // Appends happen under the write lock, so while we hold the read lock the
            // namespace is exactly the state as of `last_appended`. The lock is held only
            // until the writer is forked off with its snapshot (see `forked_writer`).
            let ns = self.ns.read();
            let txid = journal.last_appended();
            let locked = std::time::Instant::now();
            let forked = forked_writer::spawn(|| {
                in_writer();
                ns.write_image(txid, file).map(drop)
            });
            match forked {
                Ok(writer) => {
                    drop(ns);
                    locked_us = locked.elapsed().as_micros() as u64;
                    writer.wait()?;
                }
                Err(e) => {
                    warn!(error = %e, "could not fork the image writer; writing the image under the namespace lock");
                    ns.write_image(txid, file)?;
                    locked_us = locked.elapsed().as_micros() as u64;
                }
            }
            Ok(txid)
        })?;
        self.last_image_txid.store(txid, Ordering::SeqCst);
        self.last_image_ms.store(now_ms(), Ordering::SeqCst);
        if let Some(oldest) = checkpoint::prune(&self.name_dirs, self.cfg.checkpoints_retained) {
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

    /// One replication pass over every block (when `force` or something changed).
    /// Returns (copies ordered, replicas to delete).
    pub fn replication_scan(&self, force: bool) -> (usize, usize) {
        use crate::blocks::{Decision, ReplicationCtx};
        let ns = self.ns.read();
        let mut mgr = self.blocks.lock();
        if !force && !mgr.needs_scan {
            return (0, 0);
        }
        mgr.needs_scan = false;
        let ctx = ReplicationCtx {
            now_ms: now_ms(),
            stale_ms: self.cfg.stale_interval_ms,
            dead_ms: self.cfg.dead_interval_ms(),
            pending_timeout_ms: 60_000,
            seed: now_ms() as u64,
        };
        let (mut ordered, mut deleted) = (0, 0);
        for (id, slot) in ns.blocks() {
            let Some(e) = crate::rpc_datanode::expected(&ns, id) else {
                continue;
            };
            if !e.complete {
                continue; // still being written: its pipeline decides
            }
            let want = ns.inode(slot).replication as usize;
            match mgr.check_replication(id, want, &e, &ctx) {
                Decision::Replicate { targets, .. } => ordered += targets,
                Decision::Excess(nodes) => deleted += nodes.len(),
                Decision::Waiting => mgr.needs_scan = true,
                Decision::Fine => {}
            }
        }
        (ordered, deleted)
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

impl Service for NnState {
    fn admit(&self, ctx: &CallCtx, method: &'static str, kind: MethodKind) -> Result<(), RpcError> {
        if kind.superuser {
            let groups = self.groups.groups(&ctx.user);
            if !self.is_superuser(&ctx.user, &groups) {
                return Err(FsError::AccessDenied(format!(
                    "Access denied for user {}. Superuser privilege is required",
                    ctx.user
                ))
                .into());
            }
        }
        if kind.mutating && self.in_safe_mode() {
            return Err(FsError::SafeMode(format!(
                "Cannot {method}. Name node is in safe mode.\n{}",
                self.safe_mode_reason()
            ))
            .into());
        }
        Ok(())
    }

    fn durability(&self) -> Option<&dyn Durability> {
        self.journal.as_ref().map(|j| j as &dyn Durability)
    }
}

/// Aborts the process if dropped by a panic's unwinding; an ordinary drop (the section
/// ended, or returned early) does nothing.
struct AbortOnUnwind(&'static str);

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        if std::thread::panicking() {
            error!(
                "panic while {}: stopping so the journal replays to a state every answer agreed with",
                self.0
            );
            std::process::abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AbortOnUnwind;

    /// Set in the child this test starts, which runs the panicking section.
    const CHILD: &str = "FERRITE_ABORT_ON_UNWIND_CHILD";

    /// A panic inside the guarded section stops the process rather than unwinding past it;
    /// a section that ends normally goes on. Aborting can only be seen from outside, so the
    /// test runs itself again as a child.
    #[test]
    fn a_panic_in_a_critical_section_stops_the_process() {
        if std::env::var_os(CHILD).is_some() {
            drop(AbortOnUnwind("a section that ends"));
            let _ = std::panic::catch_unwind(|| {
                let _critical = AbortOnUnwind("a test");
                panic!("inside the section");
            });
            // Reached only if the guard let the panic unwind past it.
            std::process::exit(0);
        }
        let me = std::env::current_exe().unwrap();
        let out = std::process::Command::new(me)
            .args([
                "--exact",
                "state::tests::a_panic_in_a_critical_section_stops_the_process",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            out.status.signal(),
            Some(6),
            "the child should abort (SIGABRT): {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
