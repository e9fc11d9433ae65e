//! `ferrite admin`: operator commands over the NameNode's RPC port, as `hdfs dfsadmin` has.

use anyhow::Context;
use clap::{Args, Subcommand};
use ferrite_ipc::client::IpcClient;
use ferrite_ipc::{CLIENT_PROTOCOL, DATANODE_STATS_PROTOCOL, NAMENODE_STATS_PROTOCOL};
use ferrite_proto::ferrite::{
    GetNameNodeStatsRequestProto, GetReadStatsRequestProto, NameNodeStatsProto, ReadStatsProto,
};
use ferrite_proto::hdfs::*;

#[derive(Args)]
pub(crate) struct AdminArgs {
    /// NameNode (hdfs://HOST:PORT). Default: $FERRITE_FS, then fs.defaultFS from
    /// $HADOOP_CONF_DIR/core-site.xml.
    #[arg(long = "fs")]
    fs: Option<String>,
    #[command(subcommand)]
    cmd: AdminCmd,
}

#[derive(Subcommand)]
enum AdminCmd {
    /// Safe mode: get, enter or leave.
    Safemode {
        #[arg(value_parser = ["get", "enter", "leave", "forceExit"])]
        action: String,
    },
    /// Write a checkpoint image now (enters safe mode for the save if needed, as
    /// `hdfs dfsadmin -saveNamespace` requires it, and leaves it again afterwards).
    SaveNamespace,
    /// End the current journal segment and start the next (`hdfs dfsadmin -rollEdits`).
    RollEdits,
    /// Read the hosts files again and start or end decommission and maintenance to match
    /// (`hdfs dfsadmin -refreshNodes`).
    RefreshNodes,
    /// Whether journal rolls bring failed journal directories back into service: set it
    /// (true, false) or read it (check), as `hdfs dfsadmin -restoreFailedStorage`.
    RestoreFailedStorage {
        #[arg(value_parser = ["true", "false", "check"])]
        arg: String,
    },
    /// The NameNode's journal (sync accounting; each directory, in service or why not),
    /// last image, safe mode and namespace size.
    NamenodeStats,
    /// Each NameNode of an HA nameservice: its role, Raft term, log and commit index, the
    /// transaction its namespace has applied, and how far it trails the leader's log.
    /// The NameNodes come from the nameservice's keys (`--fs hdfs://<ns>`, with
    /// `$HADOOP_CONF_DIR/hdfs-site.xml` or `--conf`), or a comma-separated list.
    HaStatus {
        /// KEY=VALUE, as `ferrite namenode --conf` (repeatable).
        #[arg(long = "conf")]
        conf: Vec<String>,
    },
    /// A DataNode's read-server counters: active reads, sendfile vs copied bytes, open-file
    /// cache, I/O queue depths per volume, threads and descriptors.
    DatanodeStats {
        /// The DataNode's IPC address (HOST:PORT, `dfs.datanode.ipc.address`).
        #[arg(long)]
        dn: String,
    },
}

async fn namenode_stats(addr: std::net::SocketAddr) -> anyhow::Result<()> {
    let c = IpcClient::connect(addr, &user(), NAMENODE_STATS_PROTOCOL).await?;
    let s: NameNodeStatsProto = c
        .call("getNameNodeStats", &GetNameNodeStatsRequestProto {})
        .await?;
    let synced = s
        .last_synced_txid
        .map_or("none (the journal has failed)".to_string(), |t| {
            t.to_string()
        });
    println!("last_appended_txid  {}", s.last_appended_txid);
    println!("last_synced_txid    {synced}");
    println!("last_image_txid     {}", s.last_image_txid);
    println!("syncs               {}", s.syncs);
    println!("txns_synced         {}", s.txns_synced);
    println!(
        "txns_per_sync       {:.1}",
        s.txns_synced as f64 / s.syncs.max(1) as f64
    );
    println!("mean_sync_us        {}", s.sync_micros / s.syncs.max(1));
    println!("bytes_synced        {}", s.bytes_synced);
    println!("segments_rolled     {}", s.segments_rolled);
    println!("failed_journal_dirs {}", s.failed_journal_dirs);
    for d in &s.journal_dirs {
        match &d.error {
            None => println!("journal_dir         {} in service", d.path),
            Some(e) => println!("journal_dir         {} FAILED: {e}", d.path),
        }
    }
    println!(
        "safe_mode           {}",
        if s.safe_mode { "ON" } else { "OFF" }
    );
    println!("files               {}", s.files);
    println!("dirs                {}", s.dirs);
    println!("blocks              {}", s.blocks);
    match s.summary_txid {
        Some(t) => println!("summary_txid        {t}"),
        None => println!("summary_txid        off"),
    }
    Ok(())
}

async fn datanode_stats(dn: &str) -> anyhow::Result<()> {
    let addr = std::net::ToSocketAddrs::to_socket_addrs(dn)?
        .next()
        .with_context(|| format!("resolving {dn}"))?;
    let c = IpcClient::connect(addr, &user(), DATANODE_STATS_PROTOCOL).await?;
    let s: ReadStatsProto = c.call("getReadStats", &GetReadStatsRequestProto {}).await?;
    println!("active_reads     {}", s.active_reads);
    println!("reads            {}", s.reads);
    println!("bytes_sendfile   {}", s.bytes_sendfile);
    println!("bytes_copy       {}", s.bytes_copy);
    println!("handles_open     {}", s.handles_open);
    println!("handles_cached   {}", s.handles_cached);
    println!("cache_hits       {}", s.cache_hits);
    println!("cache_misses     {}", s.cache_misses);
    println!("cache_evictions  {}", s.cache_evictions);
    println!("io_queued        {:?}", s.io_queued);
    println!("io_running       {:?}", s.io_running);
    println!("threads          {}", s.threads);
    println!("fds              {}", s.fds);
    Ok(())
}

/// Where to connect: --fs, then $FERRITE_FS, then fs.defaultFS from the Hadoop config.
pub(crate) fn default_fs(explicit: Option<String>) -> anyhow::Result<std::net::SocketAddr> {
    let url = explicit
        .or_else(|| std::env::var("FERRITE_FS").ok())
        .or_else(|| {
            let dir = std::env::var_os("HADOOP_CONF_DIR")?;
            let mut cfg = ferrite_namenode::Config::default();
            cfg.apply_site_dir(std::path::Path::new(&dir)).ok()?;
            cfg.default_fs
        })
        .context("no NameNode given: pass --fs hdfs://HOST:PORT or set FERRITE_FS")?;
    let hostport = url.trim_start_matches("hdfs://").trim_end_matches('/');
    std::net::ToSocketAddrs::to_socket_addrs(hostport)?
        .next()
        .with_context(|| format!("resolving {url}"))
}

/// The NameNodes to talk to, with the URL to show them by: --fs, then $FERRITE_FS, then
/// fs.defaultFS from the Hadoop config (`$HADOOP_CONF_DIR` and `conf`). An HA nameservice
/// (`hdfs://<ns>`, named by the same keys) gives each of its NameNodes.
pub(crate) fn namenodes(
    explicit: Option<String>,
    conf: &[String],
) -> anyhow::Result<(String, Vec<std::net::SocketAddr>)> {
    let pairs = crate::serve::config_pairs(conf)?;
    let url = explicit
        .or_else(|| std::env::var("FERRITE_FS").ok())
        .or_else(|| {
            let v = pairs.iter().rev().find(|(k, _)| k == "fs.defaultFS")?;
            Some(v.1.clone())
        })
        .context(
            "no NameNode given: pass --fs hdfs://HOST:PORT (or a nameservice) or set FERRITE_FS",
        )?;
    let addrs = crate::serve::datanode_namenodes(&url, &pairs)?;
    // Shown as HDFS qualifies paths: by the NameNode's address, or by the nameservice.
    let host = url.trim_start_matches("hdfs://").trim_end_matches('/');
    let url = if host.contains(':') {
        format!("hdfs://{}", addrs[0])
    } else {
        format!("hdfs://{host}")
    };
    Ok((url, addrs))
}

pub(crate) fn user() -> String {
    std::env::var("HADOOP_USER_NAME")
        .or_else(|_| std::env::var("USER"))
        .unwrap_or_else(|_| "root".into())
}

async fn safemode(c: &IpcClient, action: SafeModeActionProto) -> anyhow::Result<bool> {
    let r: SetSafeModeResponseProto = c
        .call(
            "setSafeMode",
            &SetSafeModeRequestProto {
                action: action as i32,
                checked: None,
            },
        )
        .await?;
    Ok(r.result)
}

pub(crate) async fn run(args: AdminArgs) -> anyhow::Result<()> {
    if let AdminCmd::DatanodeStats { dn } = &args.cmd {
        return datanode_stats(dn).await;
    }
    if let AdminCmd::HaStatus { conf } = &args.cmd {
        return crate::ha_status::run(args.fs, conf).await;
    }
    let addr = default_fs(args.fs)?;
    if let AdminCmd::NamenodeStats = &args.cmd {
        return namenode_stats(addr).await;
    }
    let c = IpcClient::connect(addr, &user(), CLIENT_PROTOCOL).await?;
    match args.cmd {
        AdminCmd::Safemode { action } => {
            let a = match action.as_str() {
                "get" => SafeModeActionProto::SafemodeGet,
                "enter" => SafeModeActionProto::SafemodeEnter,
                "leave" => SafeModeActionProto::SafemodeLeave,
                _ => SafeModeActionProto::SafemodeForceExit,
            };
            let on = safemode(&c, a).await?;
            println!("Safe mode is {}", if on { "ON" } else { "OFF" });
        }
        AdminCmd::SaveNamespace => {
            let was_on = safemode(&c, SafeModeActionProto::SafemodeGet).await?;
            if !was_on {
                safemode(&c, SafeModeActionProto::SafemodeEnter).await?;
            }
            let r = c
                .call::<_, SaveNamespaceResponseProto>(
                    "saveNamespace",
                    &SaveNamespaceRequestProto::default(),
                )
                .await;
            if !was_on {
                safemode(&c, SafeModeActionProto::SafemodeLeave).await?;
            }
            r?;
            println!("Save namespace successful");
        }
        AdminCmd::RefreshNodes => {
            let _: RefreshNodesResponseProto =
                c.call("refreshNodes", &RefreshNodesRequestProto {}).await?;
            println!("Refresh nodes successful");
        }
        AdminCmd::RollEdits => {
            let r: RollEditsResponseProto = c.call("rollEdits", &RollEditsRequestProto {}).await?;
            println!(
                "Successfully rolled edit logs.\nNew segment starts at txid {}",
                r.new_segment_tx_id
            );
        }
        AdminCmd::RestoreFailedStorage { arg } => {
            let r: RestoreFailedStorageResponseProto = c
                .call(
                    "restoreFailedStorage",
                    &RestoreFailedStorageRequestProto { arg },
                )
                .await?;
            println!("restoreFailedStorage is set to {}", r.result);
        }
        AdminCmd::DatanodeStats { .. } | AdminCmd::NamenodeStats | AdminCmd::HaStatus { .. } => {
            unreachable!("answered above")
        }
    }
    Ok(())
}
