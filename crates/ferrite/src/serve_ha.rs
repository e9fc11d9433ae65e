//! `ferrite namenode` as a member of an HA group (the configuration names a nameservice of
//! two or more NameNodes): it serves on its own addresses from that configuration, standby
//! until its Raft node leads.

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use ferrite_http::{BeanSlot, HttpServer};
use ferrite_namenode::ha_config::HaGroup;
use ferrite_namenode::jmx::StartingBeans;
use ferrite_namenode::startup_progress::StartupProgress;
use ferrite_namenode::{Config, NameNode};
use tokio::net::TcpListener;
use tracing::info;

use crate::serve::Shutdown;

/// Whether this host can serve on `addr` now (an address of its own, not taken).
fn can_serve(addr: &str) -> bool {
    std::net::TcpListener::bind(addr).is_ok()
}

pub(crate) async fn run(cfg: Config, group: HaGroup, http_fallback: &str) -> anyhow::Result<()> {
    let me = group.this_node(can_serve)?.clone();
    let listener = TcpListener::bind(&me.rpc)
        .await
        .with_context(|| format!("binding {} ({})", me.rpc, me.name))?;
    let raft_listener = TcpListener::bind(&me.raft)
        .await
        .with_context(|| format!("binding Raft {} ({})", me.raft, me.name))?;
    let http_addr = me.http.clone().unwrap_or_else(|| http_fallback.to_string());
    let http_listener = cfg
        .http
        .bind(&http_addr)
        .await
        .with_context(|| format!("binding HTTP {http_addr}"))?;
    let progress = Arc::new(StartupProgress::new(std::time::Instant::now()));
    let beans = Arc::new(BeanSlot::new(Arc::new(StartingBeans(progress))));
    let http = HttpServer::spawn(
        http_listener,
        beans.clone(),
        true,
        axum::Router::new(),
        &cfg.http,
    )?;
    let nn = NameNode::start_ha(cfg, &group, &me, listener, raft_listener).await?;
    let host = me.rpc.rsplit_once(':').map_or("127.0.0.1", |(h, _)| h);
    beans.set(Arc::new(nn.beans(host)));
    let shutdown = Shutdown::install()?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "ready hdfs://{} http://{} nameservice={} name={}",
            me.rpc, http.addr, group.nameservice, me.name
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
    nn.shutdown().await;
    if failed {
        anyhow::bail!(
            "the NameNode stopped: it lost leadership with changes in flight, or its log failed"
        );
    }
    Ok(())
}
