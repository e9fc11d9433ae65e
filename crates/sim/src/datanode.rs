//! A DataNode host: the real DataNode (xceiver, write pipeline, block recovery, heartbeats
//! and reports) over one memory volume that outlives the host's crashes as a disk does:
//! what was synced or written back survives, and a crash keeps a seeded part of the rest.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferrite_datanode::nn_link;
use ferrite_datanode::readserver::ReadConfig;
use ferrite_datanode::storage::memory_files::MemoryFiles;
use ferrite_datanode::storage::{Dataset, Volume};
use ferrite_datanode::{DataNode, DnConfig, Parts};
use ferrite_ipc::net::Dial;
use tokio_util::sync::CancellationToken;

use crate::namenode::SUPERUSER;
use crate::net::{Reaper, SimDial, SimListener, Sockets};

/// The ports every DataNode host serves on (each host has its own address).
pub(crate) const XFER_PORT: u16 = 9866;
pub(crate) const IPC_PORT: u16 = 9867;
/// The block size the simulated writers use: small, so files span several blocks.
pub(crate) const BLOCK_SIZE: u64 = 16 << 10;
/// A volume's capacity.
const CAPACITY: u64 = 1 << 30;

/// The host name of DataNode `i`.
pub(crate) fn host(i: usize) -> String {
    format!("dn{i}")
}

/// A DataNode's disk, kept by the run across the host's lives.
pub(crate) fn disk() -> Arc<MemoryFiles> {
    Arc::new(MemoryFiles::new(CAPACITY))
}

/// Runs one life of DataNode `i` (until the simulator crashes it); `serving[i]` is set
/// once it has joined the NameNode and serves.
pub(crate) async fn run(
    i: usize,
    disk: Arc<MemoryFiles>,
    sockets: Arc<Sockets>,
    serving: Arc<Vec<AtomicBool>>,
    namenodes: usize,
) -> turmoil::Result {
    let _reaper = Reaper(sockets.clone());
    serving[i].store(false, Ordering::SeqCst);
    let me = turmoil::lookup(host(i));
    let nns = crate::namenode::addrs(namenodes);
    let dial: Arc<dyn Dial> = Arc::new(SimDial(Some(sockets.clone())));
    let cancel = CancellationToken::new();
    let Some(ns) = nn_link::handshake(&*dial, &nns, SUPERUSER, &cancel).await else {
        return Ok(());
    };
    let root = PathBuf::from(format!("/{}", host(i)));
    let volume = Volume::with_files(&root, &format!("DS-{}", host(i)), disk);
    let parts = Parts {
        ds: Arc::new(Dataset::from_volumes(vec![volume])),
        // Kept across lives, as the volume's VERSION file keeps it.
        uuid: format!("uuid-{}", host(i)),
        ns,
        xfer: SimListener::bind(me, XFER_PORT, &sockets).await?,
        ipc: SimListener::bind(me, IPC_PORT, &sockets).await?,
        dial,
        http: None,
    };
    let _dn = DataNode::serve(&config(nns), parts, cancel).await?;
    serving[i].store(true, Ordering::SeqCst);
    std::future::pending::<()>().await;
    Ok(())
}

/// Reporting to every NameNode of the run, as HDFS's DataNodes do in an HA nameservice.
fn config(nns: Vec<SocketAddr>) -> DnConfig {
    let mut cfg = DnConfig::new(Vec::new(), nns[0]);
    cfg.namenodes = nns;
    cfg.user = SUPERUSER.into();
    cfg.heartbeat_interval = Duration::from_secs(1);
    cfg.rpc_timeout = Duration::from_secs(10);
    cfg.xceiver.block_size = BLOCK_SIZE;
    // A silent peer is given up on sooner than HDFS's minute, to keep runs short.
    cfg.xceiver.socket_timeout = Duration::from_secs(5);
    cfg.reads = ReadConfig {
        io_threads: 1,
        ..ReadConfig::default()
    };
    cfg
}
