//! Starting and stopping a NameNode: load the newest image and replay the journal, then
//! serve IPC with the background tasks (lease monitor, trash emptier, checkpointer). The
//! caller binds the listener, so tests and `--port 0` get an ephemeral port.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrite_ipc::net::Listen;
use ferrite_ipc::server::{self, ServerConfig, ServerHandle};
use ferrite_ipc::Router;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::checkpoint::{self, DiskImages, ImageStore};
use crate::clock::now_ms;
use crate::config::{Config, Recovery};
use crate::groups::GroupMapping;
use crate::identity::Identity;
use crate::journal::{recover, salvage, segment, DirPolicy, Journal, JournalConfig};
use crate::namespace::Namespace;
use crate::service::retried::RetriedCalls;
use crate::service::{summary_dir, NameNodeService, StartupReport, Storage};
use crate::startup_progress::{EditSteps, Phase, SegmentInfo, StartupProgress};
use crate::summary::follow::SummaryService;
use crate::summary::Summary;

pub struct NameNode;

pub struct NameNodeHandle {
    pub addr: SocketAddr,
    pub state: Arc<NameNodeService>,
    pub router: Arc<Router<NameNodeService>>,
    /// Fires if the NameNode must stop on its own (every journal directory failed).
    pub fatal: CancellationToken,
    ipc: ServerHandle,
    cancel: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    summary_task: Option<std::thread::JoinHandle<()>>,
    /// A member of an HA group: its Raft node, stopped with the NameNode.
    pub(crate) ha: Option<crate::server_ha::HaParts>,
}

/// The user this process runs as: `$USER`, else the name of our uid in `/etc/passwd`.
pub fn current_user() -> String {
    if let Ok(u) = std::env::var("USER") {
        if !u.is_empty() {
            return u;
        }
    }
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(0);
    std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|p| {
            p.lines().find_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f.len() > 2 && f[2] == uid.to_string()).then(|| f[0].to_string())
            })
        })
        .unwrap_or_else(|| format!("uid{uid}"))
}

/// Replay in recovery mode: the journal up to its first damage, the rest set aside (see
/// `recover::replay_recovering`). Loud on purpose: edits are being given up.
fn recover_journal(
    dirs: &[PathBuf],
    image_txid: u64,
    apply: impl FnMut(u64, &crate::namespace::Op) -> Result<(), recover::ApplyError>,
) -> std::io::Result<recover::Replayed> {
    let replayed = recover::replay_recovering(dirs, image_txid, apply).map_err(io_err)?;
    let aside = recover::set_aside_after(dirs, replayed.last_txid)?;
    if replayed.stopped_by.is_none() && aside.is_empty() {
        info!(
            last_txid = replayed.last_txid,
            "recovery mode: the journal read to its end; nothing given up"
        );
    } else {
        error!(
            kept_through_txid = replayed.last_txid,
            damage = replayed.stopped_by.as_deref().unwrap_or("none found"),
            set_aside = ?aside,
            "RECOVERY: the journal is kept up to the damage; every edit after it is given up"
        );
    }
    Ok(replayed)
}

/// After a skipping replay ([`salvage::replay_skipping`]) that gave anything up: the
/// namespace is saved as an image at the last txid read, so that no later start-up reads
/// the journal's holes again, and only then are the damaged copies set aside as
/// `*.abandoned` (never deleted: they are the operator's to inspect). Loud on purpose:
/// edits are being given up. Returns whether anything was.
fn set_salvage_down(
    images: &dyn ImageStore,
    journal_dirs: &[PathBuf],
    ns: &mut Namespace,
    out: &salvage::Salvaged,
) -> std::io::Result<bool> {
    if out.given_up.is_empty() && out.damaged.is_empty() {
        info!(
            last_txid = out.last_txid,
            "recovery mode (skip): the journal read to its end; nothing given up"
        );
        return Ok(false);
    }
    for what in &out.given_up {
        error!(%what, "RECOVERY: edit given up");
    }
    ns.reserve_ids(out.lost);
    images.save(&mut |sink| {
        ns.write_image(out.last_txid, sink)?;
        Ok(out.last_txid)
    })?;
    let mut aside = Vec::new();
    for path in &out.damaged {
        let to = PathBuf::from(format!("{}.abandoned", path.display()));
        std::fs::rename(path, &to)?;
        aside.push(to);
    }
    for d in journal_dirs {
        std::fs::File::open(d)?.sync_all()?;
    }
    error!(
        last_txid = out.last_txid,
        edits_replayed = out.edits,
        given_up = out.given_up.len(),
        set_aside = ?aside,
        "RECOVERY: the journal was replayed past its damage; an image now holds the result"
    );
    Ok(true)
}

fn io_err(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// Loads the namespace (newest valid image + journal replay) and starts the journal.
pub fn load_storage(
    cfg: &Config,
    superuser: &str,
    fatal: CancellationToken,
) -> std::io::Result<Storage> {
    let progress = Arc::new(StartupProgress::new(Instant::now()));
    load_storage_tracked(cfg, superuser, fatal, progress)
}

/// [`load_storage`], advancing `progress` through the image and edits phases as it goes
/// (what `/startupProgress` shows while the NameNode starts).
pub fn load_storage_tracked(
    cfg: &Config,
    superuser: &str,
    fatal: CancellationToken,
    progress: Arc<StartupProgress>,
) -> std::io::Result<Storage> {
    let name_dirs = cfg.name_dirs.clone();
    let journal_dirs = journal_dirs(cfg);
    if name_dirs.is_empty() {
        let ns = Namespace::new(superuser, &cfg.superuser_group, now_ms());
        progress.skip_loading(Instant::now());
        return Ok(Storage {
            ns,
            journal: None,
            images: None,
            name_dirs,
            journal_dirs,
            startup: StartupReport::default(),
            summary: None,
            progress,
            retried: Default::default(),
        });
    }
    // A required directory that is not a journal directory is a configuration mistake:
    // said before the replay, not after.
    dir_policy(cfg).validate(&journal_dirs).map_err(io_err)?;
    let started = Instant::now();
    progress.begin_phase(Phase::LoadingFsImage, started);
    let images = DiskImages::new(name_dirs.clone());
    let (mut ns, image_txid) = match checkpoint::load_newest(&images, &progress).map_err(io_err)? {
        Some((ns, txid, place)) => {
            info!(image = %place, txid, inodes = ns.inode_count(), "checkpoint image loaded");
            (ns, txid)
        }
        None => (Namespace::new(superuser, &cfg.superuser_group, now_ms()), 0),
    };
    progress.end_phase(Phase::LoadingFsImage, Instant::now());
    progress.begin_phase(Phase::LoadingEdits, Instant::now());
    let mut steps = EditSteps::new(segments_for_progress(&journal_dirs), image_txid);
    let mut in_step = 0u64;
    let mut retried = RetriedCalls::with_capacity(cfg.retry_cache_entries());
    let apply = |txid, op: &_| {
        if let Some(spec) = steps.enter(txid) {
            progress.begin_step(Phase::LoadingEdits, spec, Instant::now());
            in_step = 0;
        }
        in_step += 1;
        if in_step.is_multiple_of(EDITS_PROGRESS_STRIDE) {
            progress.set_count(in_step);
        }
        retried.see(op);
        ns.apply(op).map(|_| ()).map_err(recover::ApplyError::from)
    };
    let mut salvaged = false;
    let replayed = match cfg.recovery {
        Recovery::Skip => {
            let out = salvage::replay_skipping(&journal_dirs, image_txid, apply);
            salvaged = set_salvage_down(&images, &journal_dirs, &mut ns, &out)?;
            recover::Replayed {
                last_txid: out.last_txid,
                edits: out.edits,
                ..Default::default()
            }
        }
        Recovery::Stop => recover_journal(&journal_dirs, image_txid, apply)?,
        Recovery::Off => {
            recover::replay(&journal_dirs, image_txid, apply).map_err(|e| match e {
                recover::RecoverError::Corrupt(_) | recover::RecoverError::Gap { .. } => {
                    io_err(format!(
                        "{e}. `ferrite oev -i SEGMENT` shows the damage and the edits past it. \
                     To start with the edits before the damage and set the rest aside \
                     (they are lost), run once with --recover; to replay every edit still \
                     readable past it too, with --recover skip"
                    ))
                }
                e => io_err(e),
            })?
        }
    };
    progress.set_count(in_step);
    recover::close_in_progress(&journal_dirs)?;
    // A recovery's image was saved during the edits phase; no other start-up saves one,
    // so the checkpoint phase is passed at once, as HDFS marks it when it has none to save.
    progress.end_phase(Phase::LoadingEdits, Instant::now());
    progress.end_phase(Phase::SavingCheckpoint, Instant::now());
    let startup = StartupReport {
        image_txid,
        edits_replayed: replayed.edits,
        last_txid: replayed.last_txid,
        millis: started.elapsed().as_millis() as u64,
    };
    info!(
        millis = startup.millis,
        image_txid,
        edits_replayed = startup.edits_replayed,
        segments = replayed.segments,
        last_txid = startup.last_txid,
        inodes = ns.inode_count(),
        "namespace loaded"
    );
    let jcfg = JournalConfig {
        dirs: journal_dirs.clone(),
        segment_max_bytes: cfg.journal_segment_bytes,
        segment_max_txns: cfg.journal_segment_txns,
        prealloc_chunk: cfg.journal_prealloc_bytes,
        tail_bytes: cfg.journal_tail_bytes as usize,
        group_delay: std::time::Duration::from_micros(cfg.journal_group_delay_us),
        dir_timeout: std::time::Duration::from_millis(cfg.journal_dir_timeout_ms),
        restore_failed: cfg.restore_failed_dirs,
        policy: dir_policy(cfg),
    };
    let journal = Journal::start(jcfg, replayed.last_txid, move |msg| {
        error!("stopping the NameNode: {msg}");
        fatal.cancel();
    })
    .map_err(io_err)?;
    // The summary resumes from its checkpoint (the follower then reads the segments after
    // it) or, without a usable one, is built from the namespace just loaded.
    let summary = cfg.summary_enabled.then(|| {
        let last = replayed.last_txid;
        if salvaged {
            // Its checkpoint may predate the damage: following the journal from there
            // would meet the holes the salvage left.
            let _ = std::fs::remove_file(
                summary_dir(&name_dirs).join(crate::summary::codec::FILE_NAME),
            );
        }
        SummaryService::load_or_rebuild(&summary_dir(&name_dirs), last, || {
            Summary::from_namespace(&ns, last)
        })
    });
    Ok(Storage {
        ns,
        journal: Some(Box::new(journal)),
        images: Some(Box::new(images)),
        name_dirs,
        journal_dirs,
        startup,
        summary,
        progress,
        retried,
    })
}

/// Records replayed between two updates of the running step's count: a store every few
/// milliseconds at a million records a second.
const EDITS_PROGRESS_STRIDE: u64 = 4096;

/// The journal's segments, for the edits phase's steps: every directory's, one copy per
/// first txid (a finalized copy over an in-progress one, whose end is unknown). Display
/// only: the replay itself chooses among the copies.
fn segments_for_progress(dirs: &[PathBuf]) -> Vec<SegmentInfo> {
    let mut by_first: std::collections::BTreeMap<u64, segment::SegmentFile> = Default::default();
    for s in dirs.iter().filter_map(|d| segment::list(d).ok()).flatten() {
        let known = by_first.get(&s.first).is_some_and(|k| k.last.is_some());
        if !known {
            by_first.insert(s.first, s);
        }
    }
    by_first
        .into_values()
        .map(|s| SegmentInfo {
            size: std::fs::metadata(&s.path).map_or(0, |m| m.len()),
            file: s.path.display().to_string(),
            first: s.first,
            last: s.last,
        })
        .collect()
}

/// The IPC server asks the NameNode's `hadoop.proxyuser` rules who may act for whom.
struct ProxyRules(Arc<NameNodeService>);

impl server::Impersonation for ProxyRules {
    fn authorize(&self, real: &str, user: &str, ip: &str) -> Result<(), server::Refusal> {
        use crate::proxy_users::ProxyRefused;
        self.0.authorize_proxy(real, user, ip).map_err(|e| match e {
            ProxyRefused::User { .. } => server::Refusal::NotAllowed,
            ProxyRefused::Host { .. } => server::Refusal::WrongHost,
        })
    }
}

impl NameNode {
    /// Serves on `listener` until [`NameNodeHandle::shutdown`].
    pub async fn start(cfg: Config, listener: TcpListener) -> std::io::Result<NameNodeHandle> {
        let progress = Arc::new(StartupProgress::new(Instant::now()));
        Self::start_tracked(cfg, listener, progress).await
    }

    /// [`start`](Self::start), advancing `progress` as the namespace loads (for an HTTP
    /// port that answers during start-up).
    pub async fn start_tracked(
        cfg: Config,
        listener: TcpListener,
        progress: Arc<StartupProgress>,
    ) -> std::io::Result<NameNodeHandle> {
        // Monotonic times count from here.
        crate::clock::monotonic_ms(now_ms());
        let addr = listener.local_addr()?;
        let host = ferrite_ipc::hostnames::server_host_name(addr.ip());
        let superuser = cfg.security.login_user(&host).unwrap_or_else(current_user);
        let groups = GroupMapping::from_host(&cfg.static_groups);
        let identity = match cfg.name_dirs.first() {
            Some(dir) => {
                ensure_dir(dir)?;
                Identity::load_or_create(dir, now_ms())?
            }
            None => Identity::generate(u64::from(addr.port()) << 20 ^ now_ms() as u64, now_ms()),
        };
        let fatal = CancellationToken::new();
        let storage = {
            let (cfg, user, fatal) = (cfg.clone(), superuser.clone(), fatal.clone());
            tokio::task::spawn_blocking(move || load_storage_tracked(&cfg, &user, fatal, progress))
                .await
                .map_err(io_err)??
        };
        let state = Arc::new(NameNodeService::new(
            cfg,
            superuser.clone(),
            groups,
            identity,
            storage,
        ));
        let nn = Self::serve(state, listener, fatal)?;
        info!(addr = %nn.addr, %superuser, "NameNode serving");
        Ok(nn)
    }

    /// Serves `state` on `listener`: the IPC server and the background monitors (and the
    /// summary's follower thread, when the summary is on). `fatal` is cancelled when the
    /// journal can no longer make edits durable. The simulator starts its NameNodes here,
    /// over its own network and storage.
    pub fn serve<L: Listen>(
        state: Arc<NameNodeService>,
        listener: L,
        fatal: CancellationToken,
    ) -> std::io::Result<NameNodeHandle> {
        let addr = listener.local_addr()?;
        let host = ferrite_ipc::hostnames::server_host_name(addr.ip());
        let security = state
            .config()
            .security
            .server_security(&host)
            .map_err(std::io::Error::other)?;
        let ipc_cfg = ServerConfig {
            max_frame_len: state.config().max_frame_len,
            read_batch_bytes: state.config().read_batch_bytes,
            security,
            impersonation: Some(Arc::new(ProxyRules(state.clone()))),
            ..Default::default()
        };
        let router = Arc::new(crate::rpc::router(state.clone()));
        // Weak: the router holds the service, which holds the hook.
        let weak = Arc::downgrade(&router);
        state.set_activation_hook(Box::new(move |nn| {
            if let Some(r) = weak.upgrade() {
                crate::rpc::prime_retried(&r, nn);
            }
        }));
        let ipc = server::spawn(listener, router.clone(), ipc_cfg);
        let cancel = CancellationToken::new();
        let mut tasks = vec![
            tokio::spawn(lease_monitor(state.clone(), cancel.clone())),
            tokio::spawn(datanode_monitor(state.clone(), cancel.clone())),
            tokio::spawn(replication_monitor(state.clone(), cancel.clone())),
        ];
        if state.config().satisfier.enabled {
            state.requeue_satisfier();
            tasks.push(tokio::spawn(satisfier_monitor(
                state.clone(),
                cancel.clone(),
            )));
        }
        if state.config().trash_interval_min > 0 {
            tasks.push(tokio::spawn(trash_emptier(state.clone(), cancel.clone())));
        }
        if state.has_journal() && state.has_image_store() {
            tasks.push(tokio::spawn(checkpointer(state.clone(), cancel.clone())));
        }
        if state.has_journal_dirs() {
            tasks.push(tokio::spawn(resource_monitor(
                state.clone(),
                cancel.clone(),
            )));
        }
        let summary_task = start_summary_task(&state)?;
        Ok(NameNodeHandle {
            addr,
            state,
            router,
            fatal,
            ipc,
            cancel,
            tasks,
            summary_task,
            ha: None,
        })
    }
}

/// Creates `dir` unless it exists. `create_dir_all` tries `mkdir` first, and on a file
/// system that takes no writes (frozen, a hung NFS mount) that waits, even for a
/// directory that is there: start-up would stop before reading anything, and before
/// `/startupProgress` could say where it is.
pub fn ensure_dir(dir: &std::path::Path) -> std::io::Result<()> {
    if dir.is_dir() {
        Ok(())
    } else {
        std::fs::create_dir_all(dir)
    }
}

/// Starts the thread that keeps the summary in step with the journal.
fn start_summary_task(
    state: &Arc<NameNodeService>,
) -> std::io::Result<Option<std::thread::JoinHandle<()>>> {
    if state.summary().is_none() || !state.has_journal() {
        return Ok(None);
    }
    let nn = state.clone();
    std::thread::Builder::new()
        .name("summary".into())
        .spawn(move || nn.follow_journal_with_summary())
        .map(Some)
}

impl NameNodeHandle {
    /// The Raft node of an HA member (for watching its metrics), None for a lone NameNode.
    pub fn raft(&self) -> Option<&ferrite_raft::Raft> {
        self.ha.as_ref().map(|h| &h.raft)
    }

    /// What `/jmx` shows of this NameNode; `host` is the address it was bound to.
    pub fn beans(&self, host: &str) -> crate::jmx::NameNodeBeans {
        crate::jmx::NameNodeBeans {
            nn: self.state.clone(),
            router: self.router.clone(),
            connections: self.ipc.connections(),
            host_and_port: format!("{host}:{}", self.addr.port()),
            port: self.addr.port(),
        }
    }

    /// Stops serving, syncs and closes the journal, and saves a checkpoint image.
    pub async fn shutdown(self) {
        self.cancel.cancel();
        if let Some(ha) = &self.ha {
            ha.stop.cancel();
            let _ = ha.raft.shutdown().await;
        }
        self.state.stop_summary();
        self.ipc.shutdown().await;
        for t in self.tasks {
            let _ = t.await;
        }
        let state = self.state.clone();
        let healthy = !self.fatal.is_cancelled();
        let _ = tokio::task::spawn_blocking(move || state.close(healthy)).await;
        // The journal is closed: the summary task applies what is left, checkpoints, ends.
        if let Some(t) = self.summary_task {
            let _ = tokio::task::spawn_blocking(move || t.join()).await;
        }
    }
}

/// Recovers the files of writers that stopped renewing for longer than the hard limit, and
/// starts again block recoveries whose primary has not reported back.
async fn lease_monitor(nn: Arc<NameNodeService>, cancel: CancellationToken) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = cancel.cancelled() => return,
        }
        nn.check_leases().await;
    }
}

/// Declares silent DataNodes dead (their replicas stop counting), ends start-up safe
/// mode once enough blocks are reported, and rolls block keys when due.
async fn datanode_monitor(nn: Arc<NameNodeService>, cancel: CancellationToken) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            _ = cancel.cancelled() => return,
        }
        nn.check_datanodes(now_ms());
    }
}

/// Checks the journal directories' free space now and every
/// `dfs.namenode.resource.check.interval`, entering safe mode when it runs short.
async fn resource_monitor(nn: Arc<NameNodeService>, cancel: CancellationToken) {
    let every = Duration::from_millis(nn.config().resource_check_interval_ms);
    loop {
        // statvfs may block on a hung NFS mount: keep it off the runtime's workers, and
        // do not let it hold up shutdown.
        let n = nn.clone();
        let check = tokio::task::spawn_blocking(move || n.check_resources());
        tokio::select! {
            _ = check => {}
            _ = cancel.cancelled() => return,
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = cancel.cancelled() => return,
        }
    }
}

/// Keeps every block at its file's replication: orders copies for blocks with too few
/// good replicas and deletions for surplus ones. Scans when something changed (a
/// setReplication, a lost node, a corrupt replica, a block report) and otherwise every
/// tenth interval.
async fn replication_monitor(nn: Arc<NameNodeService>, cancel: CancellationToken) {
    let every = Duration::from_secs(nn.config().replication_interval_sec.max(1));
    let mut round = 0u64;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = cancel.cancelled() => return,
        }
        round += 1;
        if nn.in_safe_mode() {
            continue;
        }
        let (ordered, deleted) = nn.replication_scan(round.is_multiple_of(10));
        if ordered + deleted > 0 {
            info!(ordered, deleted, "replication work scheduled");
        }
    }
}

/// Brings the replicas of the paths `satisfyStoragePolicy` was called on onto their
/// policy's storage types: a pass every second while any is waiting, its moves sent as
/// REPLACE_BLOCK (see `service/satisfier.rs`).
async fn satisfier_monitor(nn: Arc<NameNodeService>, cancel: CancellationToken) {
    let mover = crate::mover::Mover::default();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = cancel.cancelled() => return,
        }
        if nn.in_safe_mode() {
            continue;
        }
        let (orders, finished) = nn.satisfier_pass();
        for o in orders {
            let (n, id) = (nn.clone(), o.block.id);
            mover.dispatch(o, move |r| n.move_finished(id, r));
        }
        if !finished.is_empty() {
            nn.satisfier_finish(&finished).await;
        }
    }
}

/// Hadoop's trash emptier, run inside the NameNode as HDFS does.
async fn trash_emptier(nn: Arc<NameNodeService>, cancel: CancellationToken) {
    let interval = nn.config().trash_interval_min;
    let every = match nn.config().trash_checkpoint_interval_min {
        0 => interval,
        c => c.min(interval),
    };
    let interval_ms = interval as i64 * 60_000;
    info!(
        interval_min = interval,
        every_min = every,
        "trash emptier running"
    );
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(every * 60)) => {}
            _ = cancel.cancelled() => return,
        }
        nn.empty_trash(now_ms(), interval_ms).await;
    }
}

/// Saves an image every `dfs.namenode.checkpoint.txns` transactions or
/// `dfs.namenode.checkpoint.period` seconds, whichever comes first.
/// The period counts from the newest image, however it was taken (a `saveNamespace` too).
async fn checkpointer(nn: Arc<NameNodeService>, cancel: CancellationToken) {
    let period = Duration::from_secs(nn.config().checkpoint_period_sec);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1).min(period)) => {}
            _ = cancel.cancelled() => return,
        }
        let since = nn.txns_since_image();
        let due = since >= nn.config().checkpoint_txns
            || (nn.image_age_ms() >= period.as_millis() as i64 && since > 0);
        if !due {
            continue;
        }
        if let Err(e) = nn.checkpoint().await {
            warn!(error = %e, "periodic checkpoint failed");
        }
    }
}

/// Every journal directory the configuration names: `dfs.namenode.edits.dir`, else the name dirs.
fn dir_policy(cfg: &Config) -> DirPolicy {
    DirPolicy {
        required: cfg.required_edits_dirs.clone(),
        min_redundant: cfg.edits_dir_minimum,
    }
}

pub fn journal_dirs(cfg: &Config) -> Vec<PathBuf> {
    if cfg.edits_dirs.is_empty() {
        cfg.name_dirs.clone()
    } else {
        cfg.edits_dirs.clone()
    }
}
