//! A NameNode host: the real service, IPC server and monitors, started from what its
//! simulated disk holds (every record that verifies, replayed as start-up replays), serving
//! on the simulated network until the host is crashed.

use std::net::SocketAddr;
use std::sync::Arc;

use ferrite_namenode::config::Config;
use ferrite_namenode::groups::GroupMapping;
use ferrite_namenode::identity::Identity;
use ferrite_namenode::namespace::Namespace;
use ferrite_namenode::service::retried::RetriedCalls;
use ferrite_namenode::service::{NameNodeService, StartupReport, Storage};
use ferrite_namenode::startup_progress::StartupProgress;
use ferrite_namenode::NameNode;
use tokio_util::sync::CancellationToken;

use crate::disk::{Disk, SimJournal};
use crate::net::{Reaper, SimListener, Sockets};

/// The NameNode's user: the superuser, as whoever starts a NameNode is.
pub(crate) const SUPERUSER: &str = "hdfs";
/// The port it serves ClientProtocol on.
pub(crate) const PORT: u16 = 8020;

/// The host name of NameNode `k` of `n`: `nn` alone, `nn1`… in an HA nameservice.
pub(crate) fn host(k: usize, n: usize) -> String {
    match n {
        1 => "nn".into(),
        _ => format!("nn{}", k + 1),
    }
}

/// The client addresses of the run's `n` NameNodes (only inside the simulation).
pub(crate) fn addrs(n: usize) -> Vec<SocketAddr> {
    (0..n)
        .map(|k| SocketAddr::new(turmoil::lookup(host(k, n)), PORT))
        .collect()
}

/// Runs one life of the NameNode host (until the simulator crashes it).
pub(crate) async fn run(
    disk: Arc<Disk>,
    sockets: Arc<Sockets>,
    seed: u64,
    life: u64,
) -> turmoil::Result {
    let _reaper = Reaper(sockets.clone());
    let now = ferrite_namenode::clock::now_ms();
    let recovered = disk.recover();
    let cfg = config();
    let mut ns = Namespace::new(SUPERUSER, "supergroup", now);
    let mut retried = RetriedCalls::with_capacity(cfg.retry_cache_entries());
    for (txid, op) in &recovered.records {
        retried.see(op);
        if let Err(e) = ns.apply(op) {
            panic!("replaying txid {txid} ({op:?}) failed: {e}");
        }
    }
    let last = recovered.records.last().map_or(0, |(t, _)| *t);
    tracing::info!(
        life,
        replayed = recovered.records.len(),
        torn = recovered.torn_bytes,
        "NameNode starting"
    );
    let progress = Arc::new(StartupProgress::new(std::time::Instant::now()));
    progress.skip_loading(std::time::Instant::now());
    let storage = Storage {
        ns,
        journal: Some(Box::new(SimJournal::start(disk, last, seed ^ life))),
        images: None,
        name_dirs: Vec::new(),
        journal_dirs: Vec::new(),
        startup: StartupReport {
            last_txid: last,
            edits_replayed: recovered.records.len() as u64,
            ..Default::default()
        },
        summary: None,
        progress,
        retried,
    };
    let state = Arc::new(NameNodeService::new(
        cfg,
        SUPERUSER.into(),
        GroupMapping::parse("", "", ""),
        // Kept across lives, as the name directory's VERSION file keeps it: DataNodes
        // refuse a NameNode of another cluster.
        Identity::generate(seed, 0),
        storage,
    ));
    let listener = SimListener::bind(turmoil::lookup("nn"), PORT, &sockets).await?;
    let _nn = NameNode::serve(state, listener, CancellationToken::new())?;
    std::future::pending::<()>().await;
    Ok(())
}

/// HDFS's defaults, less what needs a real disk (images, the summary's files, trash),
/// with DataNode timings shortened so that runs stay short: heartbeats every second, a
/// silent node dead after 20 s, replication work every second, a 1 s safe-mode
/// extension. Blocks as small as the simulated writers use; no block tokens (the
/// DataNodes' token clock is the host's, not the simulated one).
pub(crate) fn config() -> Config {
    Config {
        summary_enabled: false,
        trash_interval_min: 0,
        min_block_size: 512,
        heartbeat_interval_sec: 1,
        heartbeat_recheck_ms: 5_000,
        replication_interval_sec: 1,
        safemode_extension_ms: 1_000,
        block_tokens: false,
        ..Config::default()
    }
}
