//! `ferrite local`, `ferrite namenode` and `ferrite datanode`: load configuration, bind,
//! print the ready line, serve until SIGTERM or Ctrl-C.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use ferrite_datanode::{DataNode, DataNodeHandle, DnConfig};
use ferrite_http::{BeanSlot, HttpServer};
use ferrite_namenode::jmx::StartingBeans;
use ferrite_namenode::server::ensure_dir;
use ferrite_namenode::startup_progress::StartupProgress;
use ferrite_namenode::{config, Config, NameNode};
use tokio::net::TcpListener;
use tracing::info;

#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// Data folder: `name/` holds the NameNode's metadata, `dn<N>/` each local DataNode's
    /// volume.
    #[arg(long)]
    pub data: PathBuf,
    /// NameNode RPC port; 0 picks a free one.
    #[arg(long, default_value_t = 9000)]
    pub port: u16,
    /// HTTP port for `/jmx` metrics; 0 picks a free one. Default 9870, or a free one when
    /// `--port` is 0 (so that test servers never meet on 9870).
    #[arg(long = "http-port")]
    pub http_port: Option<u16>,
    /// DataNodes to run in `local`.
    #[arg(long, default_value_t = 3)]
    pub datanodes: u32,
    /// An extra journal directory (repeatable), for example on another disk or NFS.
    #[arg(long = "journal-dir")]
    pub journal_dirs: Vec<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    /// Configuration override, Hadoop key names (repeatable): --conf fs.trash.interval=60
    #[arg(long = "conf", value_name = "KEY=VALUE")]
    pub conf: Vec<String>,
    /// Recovery mode, for a journal damaged in the middle (as `hdfs namenode -recover`),
    /// which without it stops start-up. `stop` (the default): keep every edit before the
    /// damage, set the segments holding anything after it aside as `*.abandoned`, and
    /// start; the edits after the damage are lost. `skip` (HDFS's "continue"): replay
    /// every edit still readable past the damage, skipping what is lost and what no
    /// longer applies (each logged), save an image of the result, and set the damaged
    /// segment copies aside.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "stop")]
    pub recover: Option<Recovery>,
    /// NameNodes to run in `local`: more than one starts an HA nameservice (`hdfs://ferrite`)
    /// of that many `ferrite namenode` processes sharing a Raft journal.
    #[arg(long, default_value_t = 1)]
    pub namenodes: u32,
    /// Racks to spread `local`'s DataNodes over (0: no topology). Each DataNode then
    /// serves on an address of its own, `127.0.1.<n>`, so the NameNode tells them apart as
    /// hosts, and a topology table (`<data>/topology.table`, Hadoop's `TableMapping`)
    /// puts DataNode n on `/rack<n mod racks + 1>`.
    #[arg(long, default_value_t = 0)]
    pub racks: u32,
}

/// The address `local`'s DataNode `i` serves on: its own when racks are asked for.
fn local_datanode_ip(args: &ServeArgs, i: u32) -> String {
    if args.racks > 0 {
        format!("127.0.1.{}", i + 1)
    } else {
        args.bind.clone()
    }
}

/// For `local --racks N`: writes the topology table of its DataNodes and returns the keys
/// that make the NameNode read it (none without racks).
pub(crate) fn local_topology(args: &ServeArgs) -> anyhow::Result<Vec<(String, String)>> {
    if args.racks == 0 {
        return Ok(Vec::new());
    }
    anyhow::ensure!(
        args.datanodes <= 254,
        "--racks gives each DataNode an address 127.0.1.<n>: at most 254 DataNodes"
    );
    ensure_dir(&args.data).with_context(|| format!("creating {}", args.data.display()))?;
    let table = args.data.join("topology.table");
    let lines: String = (0..args.datanodes)
        .map(|i| {
            format!(
                "{} /rack{}\n",
                local_datanode_ip(args, i),
                i % args.racks + 1
            )
        })
        .collect();
    std::fs::write(&table, lines).with_context(|| format!("writing {}", table.display()))?;
    Ok(vec![
        (
            "net.topology.node.switch.mapping.impl".into(),
            "org.apache.hadoop.net.TableMapping".into(),
        ),
        (
            "net.topology.table.file.name".into(),
            table.display().to_string(),
        ),
    ])
}

/// What `--recover` does at damage in the journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Recovery {
    Stop,
    Skip,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Role {
    Local,
    NameNode,
}

/// Every configuration pair in force: `$HADOOP_CONF_DIR/{core,hdfs}-site.xml`, then
/// `--conf` (later wins).
pub(crate) fn config_pairs(conf: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    use ferrite_namenode::config::{cli_pairs, site_pairs};
    let mut pairs = match std::env::var_os("HADOOP_CONF_DIR") {
        Some(dir) => site_pairs(std::path::Path::new(&dir))?,
        None => Vec::new(),
    };
    pairs.extend(cli_pairs(conf)?);
    Ok(pairs)
}

/// Logs keys that neither the NameNode nor the DataNode uses.
fn log_unknown(nn: Vec<String>, dn: Option<Vec<String>>) {
    let unknown: Vec<String> = match dn {
        Some(dn) => nn.into_iter().filter(|k| dn.contains(k)).collect(),
        None => nn,
    };
    if !unknown.is_empty() {
        info!(keys = ?unknown, "configuration keys Ferrite does not use (ignored)");
    }
}

/// NameNode configuration: defaults, then the site files, then `--conf`.
fn nn_config(args: &ServeArgs, local: bool) -> anyhow::Result<(Config, Vec<String>)> {
    let mut cfg = Config::default();
    if local {
        // The DataNodes start in the same process and report at once: no need to wait
        // out HDFS's 30 s safe-mode extension after a restart.
        cfg.safemode_extension_ms = 0;
    }
    let mut pairs = config_pairs(&args.conf)?;
    if local {
        pairs.extend(local_topology(args)?);
    }
    let unknown = cfg.apply(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    if cfg.name_dirs.is_empty() {
        cfg.name_dirs.push(args.data.join("name"));
    }
    cfg.recovery = match args.recover {
        None => config::Recovery::Off,
        Some(Recovery::Stop) => config::Recovery::Stop,
        Some(Recovery::Skip) => config::Recovery::Skip,
    };
    if !args.journal_dirs.is_empty() {
        // Extra journal directories join the configured ones (by default the name dirs).
        if cfg.edits_dirs.is_empty() {
            cfg.edits_dirs = cfg.name_dirs.clone();
        }
        cfg.edits_dirs.extend(args.journal_dirs.iter().cloned());
    }
    Ok((cfg, unknown))
}

pub(crate) async fn run(args: ServeArgs, role: Role) -> anyhow::Result<()> {
    let local = matches!(role, Role::Local);
    if local && args.namenodes > 1 {
        return crate::local_ha::run(args).await;
    }
    let (cfg, unknown) = nn_config(&args, local)?;
    if let (Role::NameNode, Some(group)) = (&role, cfg.ha_group()?) {
        log_unknown(unknown, None);
        for d in &cfg.name_dirs {
            ensure_dir(d).with_context(|| format!("creating {}", d.display()))?;
        }
        let http = format!("{}:{}", args.bind, args.http_port.unwrap_or(0));
        return crate::serve_ha::run(cfg, group, &http).await;
    }
    let dn_template = DnConfig::new(Vec::new(), "127.0.0.1:0".parse()?);
    let mut dn_unknown = None;
    let mut dn_cfg = dn_template.clone();
    if local {
        let pairs = config_pairs(&args.conf)?;
        dn_unknown = Some(
            dn_cfg
                .apply(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .map_err(|e| anyhow::anyhow!(e))?,
        );
    }
    log_unknown(unknown, dn_unknown);
    for d in &cfg.name_dirs {
        ensure_dir(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let listener = TcpListener::bind((args.bind.as_str(), args.port))
        .await
        .with_context(|| format!("binding {}:{}", args.bind, args.port))?;
    // Both ports are bound before start-up, so a port in use stops us before the journal
    // is opened.
    let http_port = args
        .http_port
        .unwrap_or(if args.port == 0 { 0 } else { 9870 });
    let http_listener = cfg
        .http
        .bind((args.bind.as_str(), http_port))
        .await
        .with_context(|| format!("binding HTTP {}:{http_port}", args.bind))?;
    // The HTTP port answers from the first moment: `/startupProgress` and the
    // `StartupProgress` bean while the namespace loads, every bean once it serves.
    let progress = Arc::new(StartupProgress::new(Instant::now()));
    let beans = Arc::new(BeanSlot::new(Arc::new(StartingBeans(progress.clone()))));
    // WebHDFS answers once the NameNode serves (it says "still not started" before).
    let webhdfs = Arc::new(ferrite_namenode::webhdfs::WebHdfsSlot::new());
    let routes = ferrite_namenode::webhdfs::router(webhdfs.clone())
        .merge(ferrite_namenode::fsck::router(webhdfs.clone()))
        .merge(ferrite_namenode::webui::router(webhdfs.clone()));
    let http = HttpServer::spawn(http_listener, beans.clone(), true, routes, &cfg.http)?;
    let nn = match NameNode::start_tracked(cfg, listener, progress).await {
        Ok(nn) => nn,
        Err(e) => {
            http.shutdown().await;
            return Err(e.into());
        }
    };
    let port = nn.addr.port();
    beans.set(Arc::new(nn.beans(&args.bind)));
    let _ = webhdfs.set(ferrite_namenode::webhdfs::WebHdfs {
        nn: nn.state.clone(),
        rpc_addr: nn.addr.to_string(),
    });
    let mut datanodes: Vec<DataNodeHandle> = Vec::new();
    if local {
        datanodes = start_local_datanodes(&args, &dn_cfg, vec![nn.addr]).await?;
    }
    let shutdown = Shutdown::install()?;
    {
        // Exactly one line on stdout, so scripts can wait for it and read the port.
        let mut out = std::io::stdout().lock();
        let http_port = http.addr.port();
        writeln!(
            out,
            "ready hdfs://127.0.0.1:{port} http://127.0.0.1:{http_port}"
        )?;
        out.flush()?;
    }
    let fatal = nn.fatal.clone();
    tokio::select! {
        _ = shutdown.wait() => {}
        _ = fatal.cancelled() => {}
    }
    let failed = nn.fatal.is_cancelled();
    info!("shutting down");
    http.shutdown().await;
    for dn in datanodes {
        dn.shutdown().await;
    }
    nn.shutdown().await;
    if failed {
        anyhow::bail!("the NameNode stopped because no journal directory is usable");
    }
    Ok(())
}

/// `local`'s DataNodes, in this process, reporting to `namenodes`: `dn<N>/` under the data
/// folder each, on free ports.
pub(crate) async fn start_local_datanodes(
    args: &ServeArgs,
    dn_cfg: &DnConfig,
    namenodes: Vec<std::net::SocketAddr>,
) -> anyhow::Result<Vec<DataNodeHandle>> {
    let mut datanodes = Vec::new();
    for i in 0..args.datanodes {
        let mut c = dn_cfg.clone();
        c.namenodes = namenodes.clone();
        let ip = local_datanode_ip(args, i);
        c.bind = format!("{ip}:0").parse()?;
        c.ipc_bind = format!("{ip}:0").parse()?;
        // Each local DataNode's `/jmx` on a port of its own, as in a real cluster; the
        // NameNode's LiveNodes says where.
        c.http_bind = Some(format!("{ip}:0").parse()?);
        if let Some(last) = c.local_storage_types.last() {
            // One volume per type asked for, tagged as `dfs.datanode.data.dir` tags it.
            let types = c.local_storage_types.get(i as usize).unwrap_or(last);
            c.data_dirs = types
                .iter()
                .enumerate()
                .map(|(j, t)| {
                    let dir = args.data.join(format!("dn{i}")).join(format!("v{j}"));
                    PathBuf::from(format!("[{t}]{}", dir.display()))
                })
                .collect();
        } else if c.data_dirs.is_empty() || args.datanodes > 1 {
            c.data_dirs = vec![args.data.join(format!("dn{i}"))];
        }
        datanodes.push(DataNode::start(c).await?);
    }
    if args.datanodes > 0 {
        info!(datanodes = args.datanodes, "local DataNodes serving");
    }
    Ok(datanodes)
}

/// SIGTERM and Ctrl-C, caught from the moment this is made: made before the ready line
/// is printed, so that a stop sent as soon as the line is read is a clean shutdown, not
/// the signal's default death.
pub(crate) struct Shutdown {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Shutdown {
    pub(crate) fn install() -> anyhow::Result<Shutdown> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Shutdown {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    pub(crate) async fn wait(mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}

#[derive(Args, Debug)]
pub(crate) struct DataNodeArgs {
    /// The NameNode's RPC address, HOST:PORT; several separated by commas, or
    /// `hdfs://<nameservice>` for every NameNode the configuration names for it (an HA
    /// group: the DataNode reports to all of them).
    #[arg(long)]
    pub namenode: String,
    /// Volume directories, comma separated (one per disk).
    #[arg(long)]
    pub data: String,
    /// Data-transfer port; 0 picks a free one.
    #[arg(long, default_value_t = 9866)]
    pub port: u16,
    /// IPC port (ClientDatanodeProtocol); 0 picks a free one.
    #[arg(long = "ipc-port", default_value_t = 9867)]
    pub ipc_port: u16,
    /// HTTP port for `/jmx`; 0 picks a free one. Default 9864, or a free one when `--port`
    /// is 0.
    #[arg(long = "http-port")]
    pub http_port: Option<u16>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    /// Configuration override, Hadoop key names (repeatable).
    #[arg(long = "conf", value_name = "KEY=VALUE")]
    pub conf: Vec<String>,
}

/// The NameNodes a DataNode reports to: `--namenode host:port`, several separated by
/// commas, or `hdfs://<nameservice>` with the nameservice's NameNodes in the configuration
/// (every member of an HA group, as HDFS's DataNodes report to all of them).
pub(crate) fn datanode_namenodes(
    namenode: &str,
    pairs: &[(String, String)],
) -> anyhow::Result<Vec<std::net::SocketAddr>> {
    use std::net::ToSocketAddrs;
    let target = namenode.trim_start_matches("hdfs://").trim_end_matches('/');
    let keys = pairs.iter().cloned().collect();
    let named = ferrite_namenode::ha_config::namenodes_of(&keys, target)?;
    let addrs = named.unwrap_or_else(|| target.split(',').map(str::to_string).collect());
    addrs
        .iter()
        .map(|a| {
            a.to_socket_addrs()
                .with_context(|| format!("resolving {a}"))?
                .next()
                .ok_or_else(|| anyhow::anyhow!("{a} resolves to nothing"))
        })
        .collect()
}

/// `ferrite datanode`: one DataNode that joins a NameNode, or every NameNode of an HA group.
pub(crate) async fn run_datanode(args: DataNodeArgs) -> anyhow::Result<()> {
    let pairs = config_pairs(&args.conf)?;
    let namenodes = datanode_namenodes(&args.namenode, &pairs)?;
    let dirs = args.data.split(',').map(PathBuf::from).collect();
    let mut cfg = DnConfig::new(dirs, namenodes[0]);
    cfg.namenodes = namenodes;
    cfg.bind = format!("{}:{}", args.bind, args.port).parse()?;
    cfg.ipc_bind = format!("{}:{}", args.bind, args.ipc_port).parse()?;
    let http_port = args
        .http_port
        .unwrap_or(if args.port == 0 { 0 } else { 9864 });
    cfg.http_bind = Some(format!("{}:{http_port}", args.bind).parse()?);
    let unknown = cfg
        .apply(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|e| anyhow::anyhow!(e))?;
    log_unknown(unknown, None);
    let dn = DataNode::start(cfg).await?;
    let shutdown = Shutdown::install()?;
    {
        let mut out = std::io::stdout().lock();
        match dn.http_addr {
            Some(http) => writeln!(out, "ready {} http://{http}", dn.xfer_addr)?,
            None => writeln!(out, "ready {}", dn.xfer_addr)?,
        }
        out.flush()?;
    }
    shutdown.wait().await;
    info!("shutting down");
    dn.shutdown().await;
    Ok(())
}
