//! What the NameNode's monitoring shows (`/jmx`, `ferrite admin namenode-stats`), read
//! from the service at one moment. The presentation is `jmx.rs`'s and `rpc/stats.rs`'s.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use ferrite_ipc::metrics::MethodSnapshot;

use super::{NameNodeService, StartupReport};
use crate::activity::ActivityFacts;
use crate::blocks::registry::Liveness;
use crate::clock::now_ms;
use crate::journal::{DirStatus, EditLog};
use crate::startup_progress::View;
use crate::summary::follow::SummaryService;

/// What the beans show, read from the NameNode at one moment.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub cluster_id: String,
    pub block_pool_id: String,
    pub host_and_port: String,
    pub started_ms: i64,
    /// `active` or `standby` (HDFS's words).
    pub ha_state: &'static str,
    /// Why, when in safe mode.
    pub safe_mode: Option<String>,
    pub files: u64,
    pub dirs: u64,
    pub blocks: u64,
    pub open_files: u64,
    pub lease_holders: u64,
    /// Every DataNode registered, live or dead.
    pub datanodes: Vec<NodeFacts>,
    /// Where images are written.
    pub name_dirs: Vec<PathBuf>,
    pub journal: Option<JournalFacts>,
    pub summary: Option<SummaryFacts>,
    pub rpc: RpcFacts,
    pub startup: StartupReport,
    /// Start-up's phases (HDFS's `StartupProgress`).
    pub progress: View,
    /// What `NameNodeActivity` counts beyond the router's per-method calls.
    pub activity: ActivityFacts,
    pub last_image_txid: u64,
    pub last_image_ms: i64,
    pub threads: u64,
}

#[derive(Debug, Clone, Default)]
pub struct JournalFacts {
    pub dirs: Vec<DirStatus>,
    /// Those of `dirs` whose failure stops the NameNode.
    pub required: Vec<PathBuf>,
    pub last_appended: u64,
    pub last_synced: Option<u64>,
    pub segment_first: u64,
    pub syncs: u64,
    pub txns_synced: u64,
    pub bytes_synced: u64,
    pub sync_micros: u64,
    pub segments_rolled: u64,
    pub gathers_timed_out: u64,
}

/// One DataNode as HDFS's `LiveNodes` / `DeadNodes` show it.
#[derive(Debug, Clone, Default)]
pub struct NodeFacts {
    /// `host:xferPort`, HDFS's key for it.
    pub key: String,
    pub xfer_addr: String,
    /// Where its `/jmx` is (`ip:infoPort`).
    pub info_addr: String,
    /// Seconds since its last heartbeat.
    pub last_contact_s: i64,
    pub dead: bool,
    pub capacity: u64,
    pub used: u64,
    pub remaining: u64,
    pub failed_volumes: u64,
    pub admin: crate::blocks::registry::AdminState,
    /// While leaving: blocks that still need its replicas.
    pub leaving_blocks: u64,
}

/// The RPC server: its port, open connections, and every method's counters.
#[derive(Debug, Clone, Default)]
pub struct RpcFacts {
    pub port: u16,
    pub open_connections: u64,
    pub methods: Vec<MethodSnapshot>,
}

/// The namespace summary's progress behind the journal.
#[derive(Debug, Clone, Default)]
pub struct SummaryFacts {
    pub applied_txid: u64,
    pub records: u64,
    pub batches: u64,
    pub rebuilds: u64,
    pub checkpoints: u64,
    pub answered: u64,
    pub walked: u64,
    pub lag_sum_us: u64,
    pub lag_batches: u64,
    pub lag_max_us: u64,
    pub disk_catch_ups: u64,
}

impl NodeFacts {
    pub(crate) fn of(n: &crate::blocks::registry::Node, now: i64, dead_ms: u64) -> NodeFacts {
        let live = n.storages.iter().filter(|s| !s.failed);
        NodeFacts {
            key: format!("{}:{}", n.id.host, n.id.xfer_port),
            xfer_addr: n.id.xfer_addr(),
            info_addr: format!("{}:{}", n.id.ip, n.id.info_port),
            last_contact_s: (now - n.last_heartbeat_ms).max(0) / 1000,
            dead: n.liveness(now, u64::MAX, dead_ms) == Liveness::Dead,
            capacity: live.clone().map(|s| s.capacity).sum(),
            used: live.clone().map(|s| s.dfs_used).sum(),
            remaining: live.map(|s| s.remaining).sum(),
            failed_volumes: n.storages.iter().filter(|s| s.failed).count() as u64,
            admin: n.admin,
            leaving_blocks: n.leaving_blocks,
        }
    }
}

impl JournalFacts {
    /// Directories out of service now.
    pub fn failed_dirs(&self) -> u64 {
        self.dirs.iter().filter(|d| d.failed.is_some()).count() as u64
    }

    /// The journal's counters and directories now; `required` as configured.
    pub fn read(j: &dyn EditLog, required: &[PathBuf]) -> JournalFacts {
        let m = j.metrics();
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        JournalFacts {
            dirs: m.dirs(),
            required: required.to_vec(),
            last_appended: j.last_appended(),
            last_synced: j.last_synced().ok(),
            segment_first: get(&m.segment_first),
            syncs: get(&m.syncs),
            txns_synced: get(&m.txns_synced),
            bytes_synced: get(&m.bytes_synced),
            sync_micros: get(&m.sync_micros),
            segments_rolled: get(&m.segments_rolled),
            gathers_timed_out: get(&m.gathers_timed_out),
        }
    }
}

impl SummaryFacts {
    pub fn read(s: &SummaryService) -> SummaryFacts {
        let m = &s.metrics;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        SummaryFacts {
            applied_txid: s.txid(),
            records: get(&m.events),
            batches: get(&m.batches),
            rebuilds: get(&m.rebuilds),
            checkpoints: get(&m.checkpoints),
            answered: get(&m.answered),
            walked: get(&m.walked),
            lag_sum_us: get(&m.lag_sum_us),
            lag_batches: get(&m.lag_batches),
            lag_max_us: get(&m.lag_max_us),
            disk_catch_ups: get(&m.disk_catch_ups),
        }
    }
}

impl Facts {
    /// Everything the beans show, now.
    pub fn gather(nn: &NameNodeService, host_and_port: &str, rpc: RpcFacts) -> Facts {
        let (files, dirs, blocks, open_files) = {
            let ns = nn.ns.read();
            let open = ns.open_file_count() as u64;
            (
                ns.file_count(),
                ns.dir_count(),
                ns.block_count() as u64,
                open,
            )
        };
        let datanodes: Vec<NodeFacts> = {
            let (now, dead_ms) = (now_ms(), nn.cfg.dead_interval_ms());
            let mgr = nn.blocks.lock();
            mgr.reg
                .iter()
                .map(|(_, n)| NodeFacts::of(n, now, dead_ms))
                .collect()
        };
        let journal = nn
            .journal
            .as_ref()
            .map(|j| JournalFacts::read(j.as_ref(), &nn.cfg.required_edits_dirs));
        let summary = nn.summary.as_deref().map(SummaryFacts::read);
        Facts {
            cluster_id: nn.identity.cluster_id.clone(),
            block_pool_id: nn.identity.block_pool_id.clone(),
            host_and_port: host_and_port.to_string(),
            started_ms: nn.started_ms,
            ha_state: nn.ha_state().word(),
            safe_mode: nn.in_safe_mode().then(|| nn.safe_mode_reason()),
            files,
            dirs,
            blocks,
            open_files,
            lease_holders: nn.leases.lock().holder_count() as u64,
            datanodes,
            name_dirs: nn.name_dirs.clone(),
            journal,
            summary,
            rpc,
            startup: nn.startup.clone(),
            progress: nn.progress.view(std::time::Instant::now()),
            activity: nn.activity.facts(),
            last_image_txid: nn.last_image_txid(),
            last_image_ms: nn.last_image_ms(),
            threads: ferrite_http::process_threads(),
        }
    }
}

impl NameNodeService {
    /// Start-up's phases as they stand (HDFS's `StartupProgress`).
    pub fn startup_progress(&self) -> View {
        self.progress.view(std::time::Instant::now())
    }
}
