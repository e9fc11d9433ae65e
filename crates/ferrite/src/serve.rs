//! `ferrite local` and `ferrite namenode`: load configuration, bind, print the ready line,
//! serve until SIGTERM or Ctrl-C.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use ferrite_namenode::{Config, NameNode};
use tokio::net::TcpListener;
use tracing::{info, warn};

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Data folder (NameNode metadata now; DataNode volumes join it later).
    #[arg(long)]
    pub data: PathBuf,
    /// NameNode RPC port; 0 picks a free one.
    #[arg(long, default_value_t = 9000)]
    pub port: u16,
    /// HTTP port (accepted now; the HTTP server arrives in a later issue).
    #[arg(long = "http-port", default_value_t = 9870)]
    pub http_port: u16,
    /// DataNodes to run in `local` (accepted now; DataNodes arrive in a later issue).
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
}

#[derive(Clone, Copy, Debug)]
pub enum Role {
    Local,
    NameNode,
}

/// Defaults, then `$HADOOP_CONF_DIR/{core,hdfs}-site.xml`, then `--conf`.
pub fn load_config(args: &ServeArgs) -> anyhow::Result<Config> {
    let mut cfg = Config::default();
    let mut unknown = Vec::new();
    if let Some(dir) = std::env::var_os("HADOOP_CONF_DIR") {
        unknown.extend(cfg.apply_site_dir(std::path::Path::new(&dir))?);
    }
    unknown.extend(cfg.apply_cli(&args.conf)?);
    if !unknown.is_empty() {
        info!(keys = ?unknown, "configuration keys Ferrite does not use (ignored)");
    }
    if cfg.name_dirs.is_empty() {
        cfg.name_dirs.push(args.data.join("name"));
    }
    if !args.journal_dirs.is_empty() {
        // Extra journal directories join the configured ones (by default the name dirs).
        if cfg.edits_dirs.is_empty() {
            cfg.edits_dirs = cfg.name_dirs.clone();
        }
        cfg.edits_dirs.extend(args.journal_dirs.iter().cloned());
    }
    Ok(cfg)
}

pub async fn run(args: ServeArgs, role: Role) -> anyhow::Result<()> {
    let cfg = load_config(&args)?;
    for d in &cfg.name_dirs {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    if matches!(role, Role::Local) && args.datanodes > 0 {
        warn!(
            datanodes = args.datanodes,
            "DataNodes are not implemented yet; serving metadata only"
        );
    }
    let listener = TcpListener::bind((args.bind.as_str(), args.port))
        .await
        .with_context(|| format!("binding {}:{}", args.bind, args.port))?;
    let nn = NameNode::start(cfg, listener).await?;
    let port = nn.addr.port();
    {
        // Exactly one line on stdout, so scripts can wait for it and read the port.
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready hdfs://127.0.0.1:{port}")?;
        out.flush()?;
    }
    let fatal = nn.fatal.clone();
    tokio::select! {
        _ = wait_for_signal() => {}
        _ = fatal.cancelled() => {}
    }
    let failed = nn.fatal.is_cancelled();
    info!("shutting down");
    nn.shutdown().await;
    if failed {
        anyhow::bail!("the NameNode stopped because no journal directory is usable");
    }
    Ok(())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
