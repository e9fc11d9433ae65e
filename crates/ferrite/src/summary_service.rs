//! `ferrite summary-service`: the namespace summary as its own process. It starts from its
//! checkpoint, or from the NameNode's newest image (`getImage`), follows the NameNode's
//! synced journal over RPC (`readEdits`), checkpoints into its own folder, and answers
//! `getSummary` on its own port, so `ferrite summary --fs hdfs://SERVICE PATH` works
//! against it. It reads no namespace permissions: bind it where only operators reach it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use ferrite_ipc::client::IpcClient;
use ferrite_ipc::server::{self, ServerConfig};
use ferrite_ipc::{CallCtx, OpenService, Router, RpcError, SUMMARY_PROTOCOL};
use ferrite_namenode::error::FsError;
use ferrite_namenode::namespace::Namespace;
use ferrite_namenode::rpc::summary::summary_reply;
use ferrite_namenode::summary::follow::SummaryService;
use ferrite_namenode::summary::{codec, Summary};
use ferrite_proto::ferrite::*;
use tokio::net::TcpListener;
use tracing::{info, warn};

use crate::admin::{default_fs, user};

#[derive(Args)]
pub(crate) struct ServiceArgs {
    /// The NameNode to follow (hdfs://HOST:PORT). Default: $FERRITE_FS, then fs.defaultFS.
    #[arg(long = "fs")]
    fs: Option<String>,
    /// Folder for the summary checkpoint.
    #[arg(long)]
    dir: PathBuf,
    /// Port to answer getSummary on (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,
    /// Checkpoint after this many records …
    #[arg(long, default_value_t = 1_000_000)]
    checkpoint_txns: u64,
    /// … or seconds.
    #[arg(long, default_value_t = 600)]
    checkpoint_secs: u64,
}

struct Standalone {
    svc: Arc<SummaryService>,
}

impl OpenService for Standalone {}

async fn get_summary(
    st: Arc<Standalone>,
    _: CallCtx,
    req: GetSummaryRequestProto,
) -> Result<GetSummaryResponseProto, RpcError> {
    let top = req.top.unwrap_or(0) as usize;
    let reply = st.svc.read(|s| summary_reply(s, &req.path, top));
    if reply.summary.is_none() {
        // As the NameNode answers for a path that does not exist.
        let e = FsError::file_not_found(&req.path);
        return Err(e.into());
    }
    Ok(reply)
}

/// The namespace at the NameNode's newest image (or an empty one before the first image).
async fn bootstrap(nn: &IpcClient) -> anyhow::Result<Summary> {
    let started = Instant::now();
    let mut image = Vec::new();
    let mut txid = 0;
    loop {
        let req = GetImageRequestProto {
            txid: Some(txid),
            offset: image.len() as u64,
            max_bytes: None,
        };
        let r: GetImageResponseProto = nn.call("getImage", &req).await?;
        if r.txid == 0 {
            info!("the NameNode has no image yet; following its journal from the start");
            return Ok(Summary::from_namespace(&Namespace::new("", "", 0), 0));
        }
        txid = r.txid;
        image.extend_from_slice(&r.data);
        if image.len() as u64 >= r.total || r.data.is_empty() {
            break;
        }
    }
    let (ns, at) = Namespace::decode_image(&image).context("decoding the NameNode's image")?;
    let s = Summary::from_namespace(&ns, at);
    info!(
        txid = at,
        files = s.files(),
        bytes = image.len(),
        millis = started.elapsed().as_millis() as u64,
        "summary built from the NameNode's image"
    );
    Ok(s)
}

/// Follows the NameNode's journal until the process is stopped, reconnecting when the
/// NameNode goes away (a restarted one serves the records after ours from its segments).
async fn follow(addr: SocketAddr, svc: Arc<SummaryService>, every_txns: u64, every: Duration) {
    let (mut saved_txid, mut saved_at) = (svc.txid(), Instant::now());
    let mut nn: Option<IpcClient> = None;
    loop {
        if nn.is_none() {
            match IpcClient::connect(addr, &user(), SUMMARY_PROTOCOL).await {
                Ok(c) => nn = Some(c),
                Err(e) => {
                    warn!(error = %e, %addr, "cannot reach the NameNode; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            }
        }
        let c = nn.as_ref().expect("connected above");
        let req = ReadEditsRequestProto {
            from_txid: svc.txid() + 1,
            max_bytes: None,
            wait_ms: Some(1000),
        };
        let r: Result<ReadEditsResponseProto, _> = c.call("readEdits", &req).await;
        match r {
            Ok(r) => {
                if let Err(e) = svc.apply_bytes(&r.records) {
                    warn!(error = %e, "cannot follow the NameNode's journal from here; starting again from its image");
                    match bootstrap(c).await {
                        Ok(s) => svc.replace(s),
                        Err(e) => warn!(error = %e, "bootstrap failed; retrying"),
                    }
                }
            }
            Err(e) => {
                warn!(error = %e, "readEdits failed; reconnecting");
                nn = None;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        // A fresh start from an image may put us behind the last checkpoint.
        let behind = svc.txid().saturating_sub(saved_txid);
        if behind >= every_txns || (behind > 0 && saved_at.elapsed() >= every) {
            let s = svc.clone();
            let _ = tokio::task::spawn_blocking(move || s.checkpoint()).await;
            (saved_txid, saved_at) = (svc.txid(), Instant::now());
        }
    }
}

pub(crate) async fn run(a: ServiceArgs) -> anyhow::Result<()> {
    let addr = default_fs(a.fs)?;
    let nn = IpcClient::connect(addr, &user(), SUMMARY_PROTOCOL).await?;
    let summary = match codec::load(&a.dir) {
        Ok(Some(s)) => {
            info!(txid = s.txid(), "summary checkpoint loaded");
            s
        }
        Ok(None) => bootstrap(&nn).await?,
        Err(e) => {
            warn!(error = %e, "summary checkpoint unusable; starting from the NameNode's image");
            bootstrap(&nn).await?
        }
    };
    let svc = SummaryService::new(summary, Some(a.dir.clone()));
    let state = Arc::new(Standalone { svc: svc.clone() });
    let mut router = Router::new(state);
    router.method(
        SUMMARY_PROTOCOL,
        "getSummary",
        ferrite_ipc::MethodKind::READ,
        get_summary,
    );
    let listener = TcpListener::bind((a.bind.as_str(), a.port)).await?;
    let local = listener.local_addr()?;
    let handle = server::spawn(listener, Arc::new(router), ServerConfig::default());
    let every = Duration::from_secs(a.checkpoint_secs.max(1));
    drop(nn);
    let follower = tokio::spawn(follow(addr, svc.clone(), a.checkpoint_txns.max(1), every));
    let shutdown = crate::serve::Shutdown::install()?;
    println!("ready hdfs://{local}");
    info!(%local, namenode = %addr, "summary service serving");
    shutdown.wait().await;
    follower.abort();
    handle.shutdown().await;
    tokio::task::spawn_blocking(move || svc.checkpoint()).await?;
    Ok(())
}
