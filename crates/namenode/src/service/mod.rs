//! The NameNode service: the one place where the NameNode decides.
//!
//! [`NameNodeService`] alone owns the namespace, the block map, the leases, the journal and
//! the summary; its fields are private, so no other module takes their locks and the lock
//! order (`writers`, then `ns`, then `blocks` or `leases`) is kept here. It offers typed
//! operations that take and return domain types (`FileStatus`, `LocatedBlocks`,
//! `DnCommand`, `FsError`), never protobuf messages: the IPC handlers in `rpc/` translate
//! ClientProtocol and DatanodeProtocol onto it, and other front ends (WebHDFS) do the same.
//! Who may call what, and when (safe mode, superuser), is a per-operation table inside the
//! service ([`admission`]), so every front end gets the same answer.
//!
//! Every namespace change goes through [`NameNodeService::commit`]: plan under the write
//! lock, apply each record keeping leases in step, append the records to the journal; then,
//! after the lock is released, make the answer rest on them: a served call's reply is held
//! by its connection's writer until the journal has them on disk, and any other caller
//! waits here.

mod acls;
mod admin_ops;
mod admin_states;
pub mod admission;
mod background;
pub mod balancing;
mod cache;
mod datanodes;
pub mod facts;
mod files;
mod fsck;
pub mod ha;
mod images;
mod lease_recovery;
pub mod locations;
#[cfg(test)]
mod operation_tests;
mod quotas;
pub mod retried;
mod safe_mode;
pub mod satisfier;
pub mod snapshots;
mod storage_policies;
mod summary_reads;
mod writes;
mod xattrs;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};
use std::sync::Arc;

use ferrite_ipc::durable::Durability;
use parking_lot::{Mutex, RwLock};
use tracing::error;

use crate::activity::Activity;
use crate::blocks::BlockManager;
use crate::checkpoint::{self, ImageStore, MemoryImages};
use crate::clock::now_ms;
use crate::config::Config;
use crate::error::FsError;
use crate::groups::GroupMapping;
use crate::identity::Identity;
use crate::journal::{EditLog, MemoryJournal};
use crate::leases::Leases;
use crate::namespace::{Applied, Caller, Namespace, Op, Planned};
use crate::startup_progress::{Phase, StartupProgress, StepKind, StepSpec};
use crate::summary::follow::SummaryService;
use crate::summary::Summary;
use crate::tokens::BlockTokens;

pub use admission::{Admitted, CallId, Operation};
pub use datanodes::{
    DnCommand, FsStats, HeartbeatReport, NodeFilter, NodeRegistration, RecoveringBlock,
    ReplicaEvent,
};
pub use files::{CreateRequest, Listing, ServerDefaults};
pub use lease_recovery::{Outcome, SyncReport};
pub use locations::{DatanodeInfo, LocatedBlock, LocatedBlocks, LocatedSink, Location};
pub use safe_mode::SafeModeAction;
pub use snapshots::{SnapshotEntry, SnapshottableDir};
pub use summary_reads::ImageChunk;
pub use writes::{AddBlock, AdditionalDatanodes, Appended};

/// What start-up did, for logs and `ferrite admin report`.
#[derive(Clone, Debug, Default)]
pub struct StartupReport {
    pub image_txid: u64,
    pub edits_replayed: u64,
    pub last_txid: u64,
    pub millis: u64,
}

/// See [`NameNodeService::set_activation_hook`].
pub type ActivationHook = Box<dyn Fn(&NameNodeService) + Send + Sync>;

pub struct NameNodeService {
    ns: RwLock<Namespace>,
    /// Mutations take turns here before they take `ns` for writing. Waiting on this is a
    /// suspended task, where waiting on `ns` would be a parked runtime worker: with two
    /// workers both committing, one slept in the lock most of the time (in-process
    /// creates ran 40% faster on a single worker).
    writers: tokio::sync::Mutex<()>,
    leases: Mutex<Leases>,
    cfg: Config,
    /// The user that started the NameNode.
    superuser: String,
    groups: GroupMapping,
    identity: Identity,
    /// On disk, or in memory for a service made by [`in_memory`](Self::in_memory); `None`
    /// for a NameNode configured without any directory.
    journal: Option<Box<dyn EditLog>>,
    /// Where checkpoint images go: the name directories, or memory beside a memory
    /// journal; `None` for a NameNode configured without any directory.
    images: Option<Box<dyn ImageStore>>,
    name_dirs: Vec<PathBuf>,
    journal_dirs: Vec<PathBuf>,
    /// Where `readEdits` last stopped reading the segments (see `recover::Cursor`).
    edits_cursor: Mutex<Option<crate::journal::recover::Cursor>>,
    startup: StartupReport,
    /// Start-up's phases, for `/jmx` and `/startupProgress`; safe mode's ends here.
    progress: Arc<StartupProgress>,
    /// `NameNodeActivity`'s operation counters the RPC router cannot keep.
    activity: Activity,
    /// When this NameNode started serving (ms since the epoch).
    started_ms: i64,
    last_image_txid: AtomicU64,
    /// When that image was written (ms since the epoch; its file's time at start-up).
    last_image_ms: AtomicI64,
    /// One checkpoint at a time: the periodic one and saveNamespace must not write the same
    /// image file concurrently.
    saving: Mutex<()>,
    /// Safe mode entered by an administrator.
    safe_mode: AtomicBool,
    /// Whether this NameNode serves clients (active) or only follows (standby): a lone
    /// NameNode is active; in an HA group, the Raft leader is.
    ha: ha::HaCell,
    /// In an HA group, what HAServiceProtocol's transitions and `ha-status` go through.
    ha_control: std::sync::OnceLock<Arc<crate::ha_control::HaControl>>,
    /// Run as a standby turns active, before it admits a change: the IPC front end primes
    /// its retry cache with the calls the log brought (see `ha.rs`).
    activation_hook: std::sync::OnceLock<ActivationHook>,
    /// Start-up safe mode: on until enough blocks are reported (see `check_startup_safe_mode`).
    startup_safe_mode: AtomicBool,
    /// Safe mode for want of journal space (see `check_resources`); the administrator
    /// leaves it, and the next check enters it again while space is still short.
    resources_low: AtomicBool,
    /// When the start-up threshold was first met (the extension counts from there).
    threshold_met_at: Mutex<Option<i64>>,
    /// Replica locations and DataNodes. Lock order: `ns` first, then `blocks`.
    blocks: Mutex<BlockManager>,
    /// Block access tokens: keys, signing, and the keys DataNodes get.
    tokens: BlockTokens,
    /// Which rack each DataNode (and reader) is on.
    topology: crate::topology::Topology,
    /// The hosts files as last read (start-up, `refreshNodes`).
    host_rules: parking_lot::RwLock<crate::hosts::HostRules>,
    /// When the replication scan last said which nodes are still leaving, and why.
    leaving_logged_ms: std::sync::atomic::AtomicI64,
    /// Per-directory usage kept from the journal (`None` when off or without a journal).
    summary: Option<Arc<SummaryService>>,
    /// Paths waiting for their replicas to match their storage policy, and moves under way.
    /// Lock order: after `ns` and `blocks`.
    satisfier: Mutex<crate::satisfier::Satisfier>,
    /// The replayed journal's at-most-once calls, until the IPC front end takes them.
    retried: Mutex<retried::RetriedCalls>,
    /// Varies placement and reader order between calls (see `locations::seed`). Kept per
    /// NameNode, not per process, so that a NameNode started the same way decides the
    /// same way (the simulator runs many in one process, one after another).
    placement_seed: AtomicU64,
}

pub struct Storage {
    pub ns: Namespace,
    pub journal: Option<Box<dyn EditLog>>,
    pub images: Option<Box<dyn ImageStore>>,
    pub name_dirs: Vec<PathBuf>,
    pub journal_dirs: Vec<PathBuf>,
    pub startup: StartupReport,
    /// The initial namespace summary, when the summary is on.
    pub summary: Option<Summary>,
    /// Start-up's phases so far; the NameNode ends the last one, safe mode.
    pub progress: Arc<StartupProgress>,
    /// The at-most-once calls the replayed journal answered, for the retry cache.
    pub retried: retried::RetriedCalls,
}

/// Where the summary checkpoint lives: beside the images in the first name directory.
pub fn summary_dir(name_dirs: &[PathBuf]) -> PathBuf {
    name_dirs
        .first()
        .map(|d| d.join("summary"))
        .unwrap_or_default()
}

impl NameNodeService {
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
        let startup_safe = storage.ns.complete_block_count() > 0;
        for (_, holder) in storage.ns.open_files() {
            leases.add(holder, now);
        }
        let tokens = BlockTokens::new(cfg.block_tokens, cfg.block_key_times);
        let topology = crate::topology::Topology::new(&cfg.topology);
        let host_rules = parking_lot::RwLock::new(
            admin_states::read_host_rules(&cfg.hosts).unwrap_or_else(|e| {
                tracing::error!(error = %e, "cannot read the hosts files; every DataNode may join");
                Default::default()
            }),
        );
        let summary_dir = summary_dir(&storage.name_dirs);
        let summary = storage
            .summary
            .map(|s| SummaryService::new(s, Some(summary_dir)));
        let image_ms = storage
            .images
            .as_deref()
            .and_then(|i| checkpoint::written_ms(i, storage.startup.image_txid));
        let progress = storage.progress;
        let started = std::time::Instant::now();
        progress.begin_phase(Phase::SafeMode, started);
        let awaiting = StepSpec {
            kind: Some(StepKind::AwaitingReportedBlocks),
            total: safe_mode::threshold_blocks(
                cfg.safemode_threshold,
                storage.ns.complete_block_count(),
            ) as u64,
            ..Default::default()
        };
        progress.begin_step(Phase::SafeMode, awaiting, started);
        if !startup_safe {
            progress.end_phase(Phase::SafeMode, started);
        }
        NameNodeService {
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
            images: storage.images,
            name_dirs: storage.name_dirs,
            journal_dirs: storage.journal_dirs,
            edits_cursor: Mutex::new(None),
            startup: storage.startup,
            progress,
            activity: Activity::default(),
            saving: Mutex::new(()),
            safe_mode: AtomicBool::new(false),
            ha: ha::HaCell::default(),
            ha_control: std::sync::OnceLock::new(),
            activation_hook: std::sync::OnceLock::new(),
            startup_safe_mode: AtomicBool::new(startup_safe),
            resources_low: AtomicBool::new(false),
            threshold_met_at: Mutex::new(None),
            blocks: Mutex::new(BlockManager::default()),
            topology,
            host_rules,
            leaving_logged_ms: Default::default(),
            tokens,
            summary,
            satisfier: Mutex::new(Default::default()),
            retried: Mutex::new(storage.retried),
            placement_seed: AtomicU64::new(0),
        }
    }

    /// A NameNode with no directories: its journal in memory (records are appended,
    /// synced and followed as on disk, and lost with the process), started by `superuser`.
    /// For tests, fuzzing and the in-process benchmark.
    pub fn in_memory(cfg: Config, superuser: &str) -> Self {
        let now = now_ms();
        let progress = Arc::new(StartupProgress::new(std::time::Instant::now()));
        progress.skip_loading(std::time::Instant::now());
        let storage = Storage {
            ns: Namespace::new(superuser, &cfg.superuser_group, now),
            journal: Some(Box::new(MemoryJournal::default())),
            images: Some(Box::new(MemoryImages::default())),
            name_dirs: Vec::new(),
            journal_dirs: Vec::new(),
            startup: StartupReport::default(),
            summary: None,
            progress,
            retried: Default::default(),
        };
        let groups = GroupMapping::from_host(&cfg.static_groups);
        let identity = Identity::generate(now as u64, now);
        Self::new(cfg, superuser.to_string(), groups, identity, storage)
    }

    pub fn is_superuser(&self, user: &str, groups: &[String]) -> bool {
        user == self.superuser || groups.contains(&self.cfg.superuser_group)
    }

    /// Whether `real` may act as `user` from `ip` (`hadoop.proxyuser.*`), with HDFS's
    /// `AuthorizationException` message when not.
    pub fn authorize_proxy(
        &self,
        real: &str,
        user: &str,
        ip: &str,
    ) -> Result<(), crate::proxy_users::ProxyRefused> {
        let groups = self.groups.groups(user);
        self.cfg.proxy_users.authorize(real, user, &groups, ip)
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

    /// The at-most-once calls the replayed journal answered (once: the IPC front end's
    /// retry cache takes them when it is built).
    pub fn take_retried(&self) -> impl Iterator<Item = retried::Retried> {
        self.retried.lock().take().into_calls()
    }

    /// The status of `path` as the NameNode sees it, for rebuilding a replayed create's
    /// answer (no caller: the answer goes only to the call that created the file).
    pub fn replayed_status(&self, path: &str) -> Option<crate::namespace::query::FileStatus> {
        let su = Caller::superuser(&self.superuser);
        let ns = self.ns.read();
        ns.get_file_info(&su, path).ok().flatten()
    }

    /// The configuration this NameNode runs with.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The cluster, namespace and block pool this NameNode serves.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The user that started the NameNode (HDFS's superuser).
    pub fn superuser(&self) -> &str {
        &self.superuser
    }

    /// The last txid appended to the journal (0 without one).
    pub fn last_txid(&self) -> u64 {
        self.journal.as_ref().map_or(0, |j| j.last_appended())
    }

    /// What start-up did (image loaded, edits replayed).
    pub fn startup_report(&self) -> &StartupReport {
        &self.startup
    }

    /// The journal's sync counters, when there is a journal.
    pub fn journal_metrics(&self) -> Option<&crate::journal::JournalMetrics> {
        self.journal.as_deref().map(|j| j.metrics())
    }

    /// Holds the in-memory journal's syncs back, or lets them go: tests see that answers
    /// wait for durability. Nothing for a journal on disk.
    #[doc(hidden)]
    pub fn hold_memory_syncs(&self, held: bool) -> bool {
        self.journal.as_deref().is_some_and(|j| j.hold_syncs(held))
    }

    /// The namespace summary service, when it runs in this process.
    pub fn summary(&self) -> Option<&Arc<SummaryService>> {
        self.summary.as_ref()
    }

    /// What replies wait on before they go out: the journal, when there is one.
    pub fn durability(&self) -> Option<&dyn Durability> {
        self.journal.as_deref().map(|j| j as &dyn Durability)
    }

    /// Reads the namespace under its read lock: for tests and benchmarks that compare it
    /// with what the service answered. Nothing the service serves goes through here.
    #[doc(hidden)]
    pub fn with_namespace<R>(&self, f: impl FnOnce(&Namespace) -> R) -> R {
        f(&self.ns.read())
    }

    /// Plans a mutation under the write lock, applies and journals the records it returns,
    /// and (outside the lock) makes the answer rest on them being durable: held back with
    /// the reply of the RPC being served, or waited for here.
    ///
    /// Front ends call the typed operations, never this; it is public for the durability
    /// and summary tests, which drive the namespace's plans with chosen times.
    #[doc(hidden)]
    pub async fn commit<T, P: Into<Planned>>(
        &self,
        plan: impl FnOnce(&Namespace) -> Result<(T, P), FsError>,
    ) -> Result<T, FsError> {
        self.commit_then(plan, |out, _| out).await
    }

    /// [`commit`](Self::commit) for an at-most-once operation: its call's ids are journaled
    /// after its records, so that a NameNode replaying the journal answers the call's retry
    /// as this one (see `retried.rs`).
    async fn commit_once<T, P: Into<Planned>>(
        &self,
        who: &Admitted,
        plan: impl FnOnce(&Namespace) -> Result<(T, P), FsError>,
    ) -> Result<T, FsError> {
        self.commit_with(Some(who), plan, |out, _| out).await
    }

    /// [`commit`](Self::commit), then `after` makes the answer from the plan's result and
    /// the records applied, once the writers' turn is released (create answers with the new
    /// file's status, which its record holds). The records are freed there too: every
    /// nanosecond under the turn is one no other writer can use.
    async fn commit_then<T, P: Into<Planned>, R>(
        &self,
        plan: impl FnOnce(&Namespace) -> Result<(T, P), FsError>,
        after: impl FnOnce(T, &[Op]) -> R,
    ) -> Result<R, FsError> {
        self.commit_with(None, plan, after).await
    }

    /// The commit path; `once` is the caller of an at-most-once operation.
    async fn commit_with<T, P: Into<Planned>, R>(
        &self,
        once: Option<&Admitted>,
        plan: impl FnOnce(&Namespace) -> Result<(T, P), FsError>,
        after: impl FnOnce(T, &[Op]) -> R,
    ) -> Result<R, FsError> {
        let (out, ops, wait_for, ids) = {
            let _turn = self.writers.lock().await;
            // No change on a standby, whoever asks (a client is refused at admission; the
            // monitors' own changes — lease recovery, trash — are the active's to make).
            if self.ha_state() == ha::HaState::Standby {
                return Err(FsError::Standby { category: "WRITE" });
            }
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
            // An at-most-once call that succeeded journals its ids, first (`retried.rs`: a
            // replay answers a retry from them only where the call's effect shows).
            let succeeded = applied.count > 0 && applied.failed.is_none() && then_fail.is_none();
            let id = once
                .filter(|_| succeeded)
                .and_then(|who| retried::record(who, &ops));
            let ids = usize::from(id.is_some());
            if let Some(id) = id {
                ops.insert(0, id);
            }
            let journaled = ids + applied.count;
            // What was applied is journaled even when a later record failed: memory and the
            // journal must agree.
            let last = match &self.journal {
                Some(j) if applied.count > 0 => Some(j.append_all(&ops[..journaled])),
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
            ops.truncate(journaled);
            (out, ops, last, ids)
        };
        let out = after(out, &ops[ids..]);
        drop(ops);
        if let (Some(j), Some(txid)) = (&self.journal, wait_for) {
            // Served over RPC, the reply is held until `txid` is synced; otherwise wait here.
            if !ferrite_ipc::durable::defer_reply(txid) {
                j.wait_synced(txid)
                    .await
                    .map_err(|e| FsError::internal("making the change durable", e))?;
            }
        }
        Ok(out)
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
            applied.failed = Some(FsError::internal(format!("applying {op:?}"), e));
        }
        applied
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
                "service::tests::a_panic_in_a_critical_section_stops_the_process",
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
