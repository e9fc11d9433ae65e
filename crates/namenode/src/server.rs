//! Starting and stopping a NameNode: the IPC listener plus its background tasks (lease
//! monitor, trash emptier). The caller binds the listener, so tests and `--port 0` get an
//! ephemeral port.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ferrite_ipc::server::{self, ServerConfig, ServerHandle};
use ferrite_ipc::Router;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::config::Config;
use crate::groups::GroupMapping;
use crate::identity::Identity;
use crate::namespace::{Caller, Op};
use crate::state::{now_ms, NnState};
use crate::trash::{self, TrashAction};

pub struct NameNode;

pub struct NameNodeHandle {
    pub addr: SocketAddr,
    pub state: Arc<NnState>,
    pub router: Arc<Router<NnState>>,
    ipc: ServerHandle,
    cancel: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
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

impl NameNode {
    /// Serves on `listener` until [`NameNodeHandle::shutdown`].
    pub async fn start(cfg: Config, listener: TcpListener) -> std::io::Result<NameNodeHandle> {
        let addr = listener.local_addr()?;
        let superuser = current_user();
        let groups = GroupMapping::from_host(&cfg.static_groups);
        let ipc_cfg = ServerConfig {
            max_frame_len: cfg.max_frame_len,
            ..Default::default()
        };
        let identity = match cfg.name_dirs.first() {
            Some(dir) => {
                std::fs::create_dir_all(dir)?;
                Identity::load_or_create(dir, now_ms())?
            }
            None => Identity::generate(u64::from(addr.port()) << 20 ^ now_ms() as u64, now_ms()),
        };
        let state = Arc::new(NnState::new(cfg, superuser.clone(), groups, identity));
        let router = Arc::new(crate::rpc::router(state.clone()));
        let ipc = server::spawn(listener, router.clone(), ipc_cfg);
        let cancel = CancellationToken::new();
        let mut tasks = vec![tokio::spawn(lease_monitor(state.clone(), cancel.clone()))];
        if state.cfg.trash_interval_min > 0 {
            tasks.push(tokio::spawn(trash_emptier(state.clone(), cancel.clone())));
        }
        info!(%addr, %superuser, "NameNode serving");
        Ok(NameNodeHandle {
            addr,
            state,
            router,
            ipc,
            cancel,
            tasks,
        })
    }
}

impl NameNodeHandle {
    pub async fn shutdown(self) {
        self.cancel.cancel();
        self.ipc.shutdown().await;
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// Closes files whose writers stopped renewing for longer than the hard limit.
async fn lease_monitor(nn: Arc<NnState>, cancel: CancellationToken) {
    let hard_ms = nn.cfg.lease_hard_limit_sec as i64 * 1000;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            _ = cancel.cancelled() => return,
        }
        let expired = nn.leases.lock().expired(now_ms(), hard_ms);
        for (holder, files) in expired {
            for id in files {
                let now = now_ms();
                let result = nn.commit(|ns| {
                    let Some(slot) = ns.open_file_slot(id) else {
                        return Ok(((), Vec::new()));
                    };
                    let len = ns.inode(slot).file().map(|f| f.len).unwrap_or(0);
                    Ok((
                        (),
                        vec![Op::Close {
                            path: ns.path_of(slot),
                            mtime: now,
                            len,
                        }],
                    ))
                });
                match result {
                    Ok(()) => info!(%holder, file_id = id, "lease expired; file closed"),
                    Err(e) => warn!(%holder, file_id = id, error = %e, "lease recovery failed"),
                }
                nn.leases.lock().remove_file(id);
            }
        }
    }
}

/// Hadoop's trash emptier, run inside the NameNode as HDFS does.
async fn trash_emptier(nn: Arc<NnState>, cancel: CancellationToken) {
    let interval = nn.cfg.trash_interval_min;
    let every = match nn.cfg.trash_checkpoint_interval_min {
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
        run_trash_once(&nn, now_ms(), interval_ms);
    }
}

/// One emptier pass; public so tests can drive it with a chosen time.
pub fn run_trash_once(nn: &NnState, now: i64, interval_ms: i64) {
    let su = Caller::superuser(&nn.superuser);
    let actions = trash::plan(&nn.ns.read(), now, interval_ms);
    for action in actions {
        let result = match &action {
            TrashAction::Delete { path } => nn.commit(|ns| {
                Ok((
                    (),
                    ns.plan_delete(&su, path, true, now)?.unwrap_or_default(),
                ))
            }),
            TrashAction::Checkpoint { from, to } => {
                nn.commit(|ns| Ok(((), ns.plan_rename2(&su, from, to, false, now)?)))
            }
        };
        match result {
            Ok(()) => info!(?action, "trash"),
            Err(e) => warn!(?action, error = %e, "trash emptier step failed"),
        }
    }
}
