//! The NameNode's `/jmx` beans: the names and attributes HDFS 3.4.1's NameNode shows for
//! what Ferrite has (its storage directories and their failures, the journal's sync
//! accounting, start-up, safe mode, namespace size), so that monitoring pointed at an
//! HDFS NameNode's HTTP port reads a Ferrite one unchanged. Attributes Ferrite cannot fill
//! truthfully are left out rather than shown as zeros. `Ferrite:service=NameNode,name=Journal`
//! adds what HDFS's beans have no place for: why a directory was taken out of service.
//!
//! [`Facts`] is gathered by the service (`service/facts.rs`); [`beans`] is pure.

use std::sync::Arc;

use ferrite_http::{Bean, Beans};
use ferrite_ipc::server::Connections;
use ferrite_ipc::Router;
use serde_json::{json, Map, Value};

use crate::activity::op_counters;
use crate::blocks::registry::AdminState;
use crate::service::facts::{Facts, JournalFacts, RpcFacts, SummaryFacts};
use crate::service::NameNodeService;
use crate::startup_progress::{StartupProgress, View};

const NN: &str = "Hadoop:service=NameNode,name=";

impl Facts {
    /// (live, dead) DataNodes.
    /// Nodes (dead or alive) in admin state `kind`.
    fn admin_count(&self, dead: bool, kind: fn(AdminState) -> bool) -> u64 {
        self.datanodes
            .iter()
            .filter(|n| n.dead == dead && kind(n.admin))
            .count() as u64
    }

    fn datanode_counts(&self) -> (u64, u64) {
        let dead = self.datanodes.iter().filter(|n| n.dead).count() as u64;
        (self.datanodes.len() as u64 - dead, dead)
    }

    /// The live DataNodes' storage added up, as HDFS's capacity figures count it.
    fn capacity(&self) -> Capacity {
        let mut c = Capacity::default();
        for n in self.datanodes.iter().filter(|n| !n.dead) {
            c.total += n.capacity;
            c.used += n.used;
            c.remaining += n.remaining;
        }
        c
    }
}

#[derive(Default)]
struct Capacity {
    total: u64,
    used: u64,
    remaining: u64,
}

impl Capacity {
    /// What the disks hold besides blocks.
    fn non_dfs_used(&self) -> u64 {
        self.total.saturating_sub(self.used + self.remaining)
    }

    /// `part` as a percentage of the total, as HDFS's float (0 with no capacity).
    fn percent(&self, part: u64) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            part as f64 * 100.0 / self.total as f64
        }
    }
}

/// The NameNode's beans, answered afresh for every request.
pub struct NameNodeBeans {
    pub nn: Arc<NameNodeService>,
    pub router: Arc<Router<NameNodeService>>,
    pub connections: Connections,
    pub host_and_port: String,
    pub port: u16,
}

impl Beans for NameNodeBeans {
    fn beans(&self) -> Vec<Bean> {
        let rpc = RpcFacts {
            port: self.port,
            open_connections: self.connections.open() as u64,
            methods: self.router.metrics(),
        };
        beans(&Facts::gather(&self.nn, &self.host_and_port, rpc))
    }

    fn startup_progress(&self) -> Option<Value> {
        Some(self.nn.startup_progress().json())
    }
}

/// What the NameNode's HTTP port answers while the namespace loads: its start-up progress,
/// as HDFS's does before its other beans exist.
pub struct StartingBeans(pub Arc<StartupProgress>);

impl Beans for StartingBeans {
    fn beans(&self) -> Vec<Bean> {
        vec![startup_progress_bean(
            &self.0.view(std::time::Instant::now()),
        )]
    }

    fn startup_progress(&self) -> Option<Value> {
        Some(self.0.view(std::time::Instant::now()).json())
    }
}

/// Every bean for `f`.
pub fn beans(f: &Facts) -> Vec<Bean> {
    let mut out = vec![
        name_node_info(f),
        fs_namesystem(f),
        fs_namesystem_state(f),
        startup_progress(f),
        name_node_status(f),
        rpc_activity(&f.rpc),
        rpc_detailed_activity(&f.rpc),
        activity(f),
    ];
    if let Some(j) = &f.journal {
        out.push(journal(j));
    }
    if let Some(s) = &f.summary {
        out.push(summary(s, last_written(f)));
    }
    out
}

fn name_node_info(f: &Facts) -> Bean {
    // HDFS shows "" when out of safe mode, else its tip behind "Safe mode is ON. ".
    let safe_mode = f
        .safe_mode
        .as_ref()
        .map_or(String::new(), |why| format!("Safe mode is ON. {why}"));
    let mut bean = Bean::new(format!("{NN}NameNodeInfo"), "NameNodeInfo")
        .with("Version", format!("ferrite {}", env!("CARGO_PKG_VERSION")))
        .with("SoftwareVersion", env!("CARGO_PKG_VERSION"))
        .with("ClusterId", f.cluster_id.clone())
        .with("BlockPoolId", f.block_pool_id.clone())
        .with("Safemode", safe_mode)
        .with("TotalBlocks", f.blocks)
        .with("NNStartedTimeInMillis", f.started_ms);
    let c = f.capacity();
    bean = bean
        .with("Total", c.total)
        .with("Used", c.used)
        .with("Free", c.remaining)
        .with("NonDfsUsedSpace", c.non_dfs_used())
        .with("PercentUsed", c.percent(c.used))
        .with("PercentRemaining", c.percent(c.remaining));
    if f.threads > 0 {
        bean = bean.with("Threads", f.threads);
    }
    // HDFS gives these three as JSON inside a string; scrapers parse them a second time.
    bean.with("LiveNodes", nodes(f, false).to_string())
        .with("DeadNodes", nodes(f, true).to_string())
        .with(
            "DecomNodes",
            leaving_nodes(f, AdminState::Decommissioning).to_string(),
        )
        .with(
            "EnteringMaintenanceNodes",
            leaving_nodes(f, AdminState::EnteringMaintenance { until_ms: 0 }).to_string(),
        )
        .with("NameDirStatuses", name_dir_statuses(f).to_string())
        .with("NameJournalStatus", name_journal_status(f).to_string())
        .with(
            "JournalTransactionInfo",
            json!({
                "MostRecentCheckpointTxId": f.last_image_txid.to_string(),
                "LastAppliedOrWrittenTxId": last_written(f).to_string(),
            })
            .to_string(),
        )
}

/// HDFS's `LiveNodes` (or `DeadNodes`): every such DataNode keyed by `host:xferPort`.
fn nodes(f: &Facts, dead: bool) -> Value {
    let mut out = Map::new();
    for n in f.datanodes.iter().filter(|n| n.dead == dead) {
        let entry = if dead {
            json!({
                "lastContact": n.last_contact_s,
                "xferaddr": n.xfer_addr,
                "adminState": admin_words(n.admin),
                "decommissioned": n.admin == AdminState::Decommissioned,
            })
        } else {
            json!({
                "infoAddr": n.info_addr,
                "xferaddr": n.xfer_addr,
                "lastContact": n.last_contact_s,
                "adminState": admin_words(n.admin),
                "capacity": n.capacity,
                "usedSpace": n.used,
                "remaining": n.remaining,
                "volfails": n.failed_volumes,
            })
        };
        out.insert(n.key.clone(), entry);
    }
    Value::Object(out)
}

/// HDFS's words for an admin state (`AdminStates.toString`).
fn admin_words(a: AdminState) -> &'static str {
    match a {
        AdminState::Normal => "In Service",
        AdminState::Decommissioning => "Decommission In Progress",
        AdminState::Decommissioned => "Decommissioned",
        AdminState::EnteringMaintenance { .. } => "Entering Maintenance",
        AdminState::InMaintenance { .. } => "In Maintenance",
    }
}

/// HDFS's `DecomNodes` (or `EnteringMaintenanceNodes`): the live nodes leaving that way,
/// with the blocks that still need their replicas.
fn leaving_nodes(f: &Facts, kind: AdminState) -> Value {
    let mut out = Map::new();
    let same = |a: AdminState| std::mem::discriminant(&a) == std::mem::discriminant(&kind);
    for n in f.datanodes.iter().filter(|n| !n.dead && same(n.admin)) {
        out.insert(
            n.key.clone(),
            json!({
                "xferaddr": n.xfer_addr,
                "underReplicatedBlocks": n.leaving_blocks,
                "decommissionOnlyReplicas": 0,
                "underReplicateInOpenFiles": 0,
            }),
        );
    }
    Value::Object(out)
}

fn last_written(f: &Facts) -> u64 {
    f.journal
        .as_ref()
        .map_or(f.startup.last_txid, |j| j.last_appended)
}

/// `{"active": {dir: type}, "failed": {dir: type}}`, with HDFS's storage types: a
/// directory holding images and the journal is `IMAGE_AND_EDITS`.
fn name_dir_statuses(f: &Facts) -> Value {
    let mut active = Map::new();
    let mut failed = Map::new();
    let journal_dirs = f.journal.as_ref().map_or(&[][..], |j| &j.dirs[..]);
    for d in &f.name_dirs {
        if !journal_dirs.iter().any(|j| j.path == *d) {
            active.insert(d.display().to_string(), "IMAGE".into());
        }
    }
    for j in journal_dirs {
        let kind = if f.name_dirs.contains(&j.path) {
            "IMAGE_AND_EDITS"
        } else {
            "EDITS"
        };
        let side = if j.failed.is_some() {
            &mut failed
        } else {
            &mut active
        };
        side.insert(j.path.display().to_string(), kind.into());
    }
    json!({ "active": active, "failed": failed })
}

/// One entry per journal directory: the segment being written, or that it is disabled.
fn name_journal_status(f: &Facts) -> Value {
    let Some(j) = &f.journal else {
        return json!([]);
    };
    let entries: Vec<Value> = j
        .dirs
        .iter()
        .map(|d| {
            let stream = match &d.failed {
                Some(_) => "failed".to_string(),
                None => d
                    .path
                    .join(format!("edits_inprogress_{:019}", j.segment_first))
                    .display()
                    .to_string(),
            };
            json!({
                "manager": format!("JournalDir(root={})", d.path.display()),
                "stream": stream,
                "disabled": d.failed.is_some().to_string(),
                "required": j.required.contains(&d.path).to_string(),
            })
        })
        .collect();
    Value::Array(entries)
}

fn fs_namesystem(f: &Facts) -> Bean {
    let written = last_written(f);
    let (live, dead) = f.datanode_counts();
    let c = f.capacity();
    let mut bean = Bean::new(format!("{NN}FSNamesystem"), "FSNamesystem")
        .with("tag.Context", "dfs")
        .with("tag.HAState", f.ha_state)
        // HDFS counts every inode, directories too (a fresh namespace shows 1: the root).
        .with("FilesTotal", f.files + f.dirs)
        .with("BlocksTotal", f.blocks)
        .with("NumFilesUnderConstruction", f.open_files)
        .with("NumActiveClients", f.lease_holders)
        .with("NumLiveDataNodes", live)
        .with("NumDeadDataNodes", dead)
        .with("CapacityTotal", c.total)
        .with("CapacityUsed", c.used)
        .with("CapacityRemaining", c.remaining)
        .with("CapacityUsedNonDFS", c.non_dfs_used())
        .with("LastWrittenTransactionId", written)
        .with(
            "TransactionsSinceLastCheckpoint",
            written.saturating_sub(f.last_image_txid),
        )
        .with("LastCheckpointTime", f.last_image_ms);
    if let Some(j) = &f.journal {
        bean = bean.with(
            "TransactionsSinceLastLogRoll",
            (j.last_appended + 1).saturating_sub(j.segment_first),
        );
    }
    bean
}

fn fs_namesystem_state(f: &Facts) -> Bean {
    let state = if f.safe_mode.is_some() {
        "safeMode"
    } else {
        "Operational"
    };
    let (live, dead) = f.datanode_counts();
    let decom = |a: AdminState| a == AdminState::Decommissioned;
    let decomming = |a: AdminState| a == AdminState::Decommissioning;
    let entering = |a: AdminState| matches!(a, AdminState::EnteringMaintenance { .. });
    let in_maint = |a: AdminState| matches!(a, AdminState::InMaintenance { .. });
    Bean::new(format!("{NN}FSNamesystemState"), "FSNamesystemState")
        .with("FSState", state)
        .with("FilesTotal", f.files + f.dirs)
        .with("BlocksTotal", f.blocks)
        .with("NumLiveDataNodes", live)
        .with("NumDeadDataNodes", dead)
        .with("NumDecomLiveDataNodes", f.admin_count(false, decom))
        .with("NumDecomDeadDataNodes", f.admin_count(true, decom))
        .with(
            "NumDecommissioningDataNodes",
            f.admin_count(false, decomming),
        )
        .with(
            "NumEnteringMaintenanceDataNodes",
            f.admin_count(false, entering),
        )
        .with(
            "NumInMaintenanceLiveDataNodes",
            f.admin_count(false, in_maint),
        )
        .with(
            "NumInMaintenanceDeadDataNodes",
            f.admin_count(true, in_maint),
        )
}

fn startup_progress(f: &Facts) -> Bean {
    startup_progress_bean(&f.progress)
}

/// The `StartupProgress` bean, the same while loading and once serving.
fn startup_progress_bean(view: &View) -> Bean {
    view.bean(format!("{NN}StartupProgress"))
}

fn name_node_status(f: &Facts) -> Bean {
    Bean::new(format!("{NN}NameNodeStatus"), "NameNodeStatus")
        .with("State", f.ha_state)
        .with("NNRole", "NameNode")
        .with("HostAndPort", f.host_and_port.clone())
        .with("SecurityEnabled", false)
}

/// Mean milliseconds from a total in microseconds over `n`.
fn mean_ms(total_us: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        total_us as f64 / n as f64 / 1000.0
    }
}

/// HDFS's `RpcActivityForPort<port>`: the RPC server as a whole. Times are means since
/// start (HDFS's cover its last metrics interval).
fn rpc_activity(r: &RpcFacts) -> Bean {
    let calls: u64 = r.methods.iter().map(|m| m.calls).sum();
    let errors: u64 = r.methods.iter().map(|m| m.errors).sum();
    let micros: u64 = r.methods.iter().map(|m| m.total_micros).sum();
    let name = format!("RpcActivityForPort{}", r.port);
    Bean::new(format!("{NN}{name}"), name)
        .with("tag.port", r.port.to_string())
        .with("tag.Context", "rpc")
        .with("NumOpenConnections", r.open_connections)
        .with("TotalRequests", calls)
        .with("RpcCallSuccesses", calls - errors)
        .with("RpcProcessingTimeNumOps", calls)
        .with("RpcProcessingTimeAvgTime", mean_ms(micros, calls))
}

/// HDFS's `RpcDetailedActivityForPort<port>`: `<Method>NumOps` and `<Method>AvgTime`
/// (milliseconds) for every method served, its name capitalized as HDFS does. A name
/// served by two protocols is counted once, summed.
fn rpc_detailed_activity(r: &RpcFacts) -> Bean {
    let mut by_name: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for m in &r.methods {
        let mut chars = m.method.chars();
        let Some(first) = chars.next() else { continue };
        let name = first.to_uppercase().chain(chars).collect::<String>();
        let e = by_name.entry(name).or_default();
        e.0 += m.calls;
        e.1 += m.total_micros;
    }
    let name = format!("RpcDetailedActivityForPort{}", r.port);
    let mut bean = Bean::new(format!("{NN}{name}"), name)
        .with("tag.port", r.port.to_string())
        .with("tag.Context", "rpcdetailed");
    for (method, (calls, micros)) in by_name {
        bean = bean
            .with(&format!("{method}NumOps"), calls)
            .with(&format!("{method}AvgTime"), mean_ms(micros, calls));
    }
    bean
}

/// HDFS's `NameNodeActivity`: the operation counters (see [`crate::activity`]), and with a
/// journal its edit-log counters: syncs and their mean time (ms), the transactions
/// synced, and those that rode in another's sync.
fn activity(f: &Facts) -> Bean {
    let mut bean = Bean::new(format!("{NN}NameNodeActivity"), "NameNodeActivity")
        .with("tag.ProcessName", "NameNode")
        .with("tag.Context", "dfs");
    for (name, n) in op_counters(&f.rpc.methods, &f.activity) {
        bean = bean.with(name, n);
    }
    let Some(j) = &f.journal else {
        return bean;
    };
    bean.with("SyncsNumOps", j.syncs)
        .with("SyncsAvgTime", mean_ms(j.sync_micros, j.syncs))
        .with("TransactionsNumOps", j.txns_synced)
        .with(
            "TransactionsBatchedInSync",
            j.txns_synced.saturating_sub(j.syncs),
        )
}

/// Ferrite's own: every journal directory with its state and the error that took it out,
/// and the sync accounting `ferrite admin namenode-stats` prints.
fn journal(j: &JournalFacts) -> Bean {
    let dirs: Vec<Value> = j
        .dirs
        .iter()
        .map(|d| {
            json!({
                "path": d.path.display().to_string(),
                "inService": d.failed.is_none(),
                "required": j.required.contains(&d.path),
                "error": d.failed,
            })
        })
        .collect();
    let per_sync = if j.syncs == 0 {
        0.0
    } else {
        j.txns_synced as f64 / j.syncs as f64
    };
    Bean::new("Ferrite:service=NameNode,name=Journal", "Journal")
        .with("tag.Context", "ferrite")
        .with("Directories", Value::Array(dirs))
        .with("FailedDirectories", j.failed_dirs())
        .with("LastAppendedTxId", j.last_appended)
        .with("LastSyncedTxId", j.last_synced)
        .with("SegmentFirstTxId", j.segment_first)
        .with("Syncs", j.syncs)
        .with("TransactionsPerSync", per_sync)
        .with("SyncMicrosTotal", j.sync_micros)
        .with("BytesSynced", j.bytes_synced)
        .with("SegmentsRolled", j.segments_rolled)
        .with("GathersTimedOut", j.gathers_timed_out)
}

/// Ferrite's own: how far the summary behind getContentSummary has applied the journal.
fn summary(s: &SummaryFacts, last_written: u64) -> Bean {
    let lag_mean_ms = if s.lag_batches == 0 {
        0.0
    } else {
        s.lag_sum_us as f64 / s.lag_batches as f64 / 1000.0
    };
    Bean::new("Ferrite:service=NameNode,name=Summary", "Summary")
        .with("tag.Context", "ferrite")
        .with("AppliedTxId", s.applied_txid)
        .with(
            "TransactionsBehind",
            last_written.saturating_sub(s.applied_txid),
        )
        .with("RecordsApplied", s.records)
        .with("BatchesApplied", s.batches)
        .with("LagMeanMs", lag_mean_ms)
        .with("LagMaxMs", s.lag_max_us as f64 / 1000.0)
        .with("DiskCatchUps", s.disk_catch_ups)
        .with("Rebuilds", s.rebuilds)
        .with("Checkpoints", s.checkpoints)
        .with("AnsweredFromSummary", s.answered)
        .with("AnsweredByWalk", s.walked)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use ferrite_ipc::metrics::MethodSnapshot;

    use super::*;
    use crate::journal::DirStatus;
    use crate::service::facts::NodeFacts;

    fn facts() -> Facts {
        let name = PathBuf::from("/data/name");
        let extra = PathBuf::from("/nfs/edits");
        Facts {
            cluster_id: "CID-1".into(),
            files: 5,
            dirs: 3,
            name_dirs: vec![name.clone()],
            last_image_txid: 10,
            journal: Some(JournalFacts {
                dirs: vec![
                    DirStatus {
                        path: name,
                        failed: None,
                    },
                    DirStatus {
                        path: extra,
                        failed: Some("sync: Input/output error (os error 5)".into()),
                    },
                ],
                last_appended: 42,
                segment_first: 40,
                syncs: 4,
                txns_synced: 32,
                sync_micros: 1000,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn bean<'a>(all: &'a [Bean], name: &str) -> &'a Bean {
        all.iter().find(|b| b.name.ends_with(name)).unwrap()
    }

    fn json_in(b: &Bean, attr: &str) -> Value {
        serde_json::from_str(b.get(attr).unwrap().as_str().unwrap()).unwrap()
    }

    #[test]
    fn a_failed_journal_directory_is_listed_as_failed_with_its_reason() {
        let all = beans(&facts());
        let info = bean(&all, "name=NameNodeInfo");
        assert_eq!(
            json_in(info, "NameDirStatuses"),
            json!({
                "active": { "/data/name": "IMAGE_AND_EDITS" },
                "failed": { "/nfs/edits": "EDITS" },
            })
        );
        let streams = json_in(info, "NameJournalStatus");
        assert_eq!(
            streams[0]["stream"],
            "/data/name/edits_inprogress_0000000000000000040"
        );
        assert_eq!(streams[1]["disabled"], "true");
        assert_eq!(streams[0]["required"], "false");
        let j = bean(&all, "name=Journal");
        assert_eq!(j.get("FailedDirectories"), Some(&json!(1)));
        assert_eq!(
            j.get("Directories").unwrap()[1]["error"],
            "sync: Input/output error (os error 5)"
        );
    }

    #[test]
    fn datanodes_are_listed_live_or_dead_under_host_and_port() {
        let node = |key: &str, dead| NodeFacts {
            key: key.into(),
            info_addr: "127.0.0.1:9864".into(),
            dead,
            ..Default::default()
        };
        let f = Facts {
            datanodes: vec![node("localhost:1", false), node("localhost:2", true)],
            ..facts()
        };
        let all = beans(&f);
        let info = bean(&all, "name=NameNodeInfo");
        let live = json_in(info, "LiveNodes");
        assert_eq!(live["localhost:1"]["infoAddr"], "127.0.0.1:9864");
        assert!(live.get("localhost:2").is_none());
        let dead = json_in(info, "DeadNodes");
        assert_eq!(dead["localhost:2"]["adminState"], "In Service");
    }

    #[test]
    fn counts_follow_hdfs_meanings() {
        let all = beans(&facts());
        let ns = bean(&all, "name=FSNamesystem");
        assert_eq!(
            ns.get("FilesTotal"),
            Some(&json!(8)),
            "files and directories"
        );
        assert_eq!(ns.get("TransactionsSinceLastCheckpoint"), Some(&json!(32)));
        assert_eq!(ns.get("TransactionsSinceLastLogRoll"), Some(&json!(3)));
        assert_eq!(
            bean(&all, "name=FSNamesystemState").get("FSState"),
            Some(&json!("Operational"))
        );
        let act = bean(&all, "name=NameNodeActivity");
        assert_eq!(act.get("SyncsAvgTime"), Some(&json!(0.25)));
        assert_eq!(act.get("TransactionsBatchedInSync"), Some(&json!(28)));
        let info = bean(&all, "name=NameNodeInfo");
        assert_eq!(info.get("Safemode"), Some(&json!("")));
        assert_eq!(
            json_in(info, "JournalTransactionInfo"),
            json!({ "MostRecentCheckpointTxId": "10", "LastAppliedOrWrittenTxId": "42" })
        );
    }

    #[test]
    fn operation_counters_show_even_without_a_journal() {
        let mut f = Facts::default();
        f.activity.files_created = 5;
        let all = beans(&f);
        let act = bean(&all, "name=NameNodeActivity");
        assert_eq!(act.get("FilesCreated"), Some(&json!(5)));
        assert_eq!(act.get("CreateFileOps"), Some(&json!(0)));
        assert_eq!(act.get("SyncsNumOps"), None, "no journal, no syncs to show");
    }

    #[test]
    fn safe_mode_shows_its_reason_as_hdfs_does() {
        let mut f = facts();
        f.safe_mode = Some("It was turned on manually.".into());
        let all = beans(&f);
        assert_eq!(
            bean(&all, "name=NameNodeInfo").get("Safemode"),
            Some(&json!("Safe mode is ON. It was turned on manually."))
        );
        assert_eq!(
            bean(&all, "name=FSNamesystemState").get("FSState"),
            Some(&json!("safeMode"))
        );
    }

    #[test]
    fn rpc_beans_count_calls_per_method_as_hdfs_names_them() {
        let snap = |protocol, method, calls, total_micros| MethodSnapshot {
            protocol,
            method,
            calls,
            errors: 0,
            total_micros,
            retry_cache_hits: 0,
        };
        let f = Facts {
            rpc: RpcFacts {
                port: 9000,
                open_connections: 3,
                methods: vec![
                    snap("p1", "getFileInfo", 4, 10_000),
                    snap("p1", "versionRequest", 1, 1_000),
                    snap("p2", "versionRequest", 1, 3_000),
                ],
            },
            ..facts()
        };
        let all = beans(&f);
        let detailed = bean(&all, "name=RpcDetailedActivityForPort9000");
        assert_eq!(detailed.get("GetFileInfoNumOps"), Some(&json!(4)));
        assert_eq!(detailed.get("GetFileInfoAvgTime"), Some(&json!(2.5)));
        assert_eq!(detailed.get("VersionRequestNumOps"), Some(&json!(2)));
        assert_eq!(detailed.get("VersionRequestAvgTime"), Some(&json!(2.0)));
        let rpc = bean(&all, "name=RpcActivityForPort9000");
        assert_eq!(rpc.get("NumOpenConnections"), Some(&json!(3)));
        assert_eq!(rpc.get("RpcProcessingTimeNumOps"), Some(&json!(6)));
        assert_eq!(rpc.get("tag.port"), Some(&json!("9000")));
    }

    #[test]
    fn the_summary_bean_says_how_far_behind_it_is() {
        let f = Facts {
            summary: Some(SummaryFacts {
                applied_txid: 40,
                lag_sum_us: 3000,
                lag_batches: 2,
                ..Default::default()
            }),
            ..facts()
        };
        let all = beans(&f);
        let s = bean(&all, "name=Summary");
        assert_eq!(s.get("TransactionsBehind"), Some(&json!(2)));
        assert_eq!(s.get("LagMeanMs"), Some(&json!(1.5)));
    }

    #[test]
    fn without_a_journal_there_are_no_journal_beans() {
        let f = Facts {
            name_dirs: vec![],
            journal: None,
            ..facts()
        };
        let all = beans(&f);
        assert!(all.iter().all(|b| !b.name.ends_with("name=Journal")));
        assert_eq!(
            json_in(bean(&all, "name=NameNodeInfo"), "NameDirStatuses"),
            json!({ "active": {}, "failed": {} })
        );
    }
}
