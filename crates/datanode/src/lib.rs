//! The Ferrite DataNode.
//!
//! [`storage`] keeps replicas on volumes; [`xceiver`] serves DataTransferProtocol (write
//! pipeline, reads, checksums, replication); [`nn_link`] registers with the NameNode,
//! heartbeats, reports blocks and carries out the commands that come back.
//! [`DataNode::start`] wires them together.

pub mod balancing;
mod heartbeats;
mod ipc;
mod jmx;
pub mod nn_link;
pub mod readserver;
mod recovery;
pub mod storage;
mod webhdfs;
mod xceiver;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ferrite_ipc::net::{Dial, Listen};
use ferrite_proto::hdfs::NamespaceInfoProto;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::info;

use balancing::BalanceThrottle;
use nn_link::{Identity, LinkSettings, NnLink};
use storage::Dataset;
use xceiver::{Xceiver, XceiverConfig};

/// Wall-clock ms, for token expiry (tokens carry absolute times).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A Hadoop key given a value it cannot take.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("bad value {value:?} for {key}: wants {wants}")]
pub struct ConfigError {
    pub key: String,
    pub value: String,
    pub wants: &'static str,
}

#[derive(Clone, Debug)]
pub struct DnConfig {
    /// `dfs.datanode.data.dir`: one directory per volume, each optionally tagged with its
    /// storage type as HDFS writes it (`[SSD]/disks/ssd0`; untagged is DISK).
    pub data_dirs: Vec<PathBuf>,
    /// `ferrite.local.datanode.storage.types` (`ferrite local` only): one volume per
    /// listed type (`SSD,DISK`), as MiniDFSCluster's storage types; groups separated by `;`
    /// go to successive DataNodes (`DISK;DISK;SSD`: the third node has an SSD), the last
    /// group repeating.
    pub local_storage_types: Vec<Vec<String>>,
    /// The NameNodes to report to: one, or every member of an HA group.
    pub namenodes: Vec<SocketAddr>,
    /// Address to serve data transfer on (`dfs.datanode.address`); port 0 picks one.
    pub bind: SocketAddr,
    /// Address of the IPC port (`dfs.datanode.ipc.address`); port 0 picks one.
    pub ipc_bind: SocketAddr,
    /// Address of the HTTP port serving `/jmx` (`dfs.datanode.http.address`); `None`: none.
    pub http_bind: Option<SocketAddr>,
    /// The HTTP port's keys (`hadoop.http.*`).
    pub http: ferrite_http::HttpSettings,
    /// `dfs.heartbeat.interval`
    pub heartbeat_interval: Duration,
    /// `dfs.blockreport.intervalMsec`
    pub block_report_interval: Duration,
    pub xceiver: XceiverConfig,
    /// The read server: I/O threads per volume, open-file cache.
    pub reads: readserver::ReadConfig,
    /// The user the DataNode talks to the NameNode as.
    pub user: String,
    /// `ipc.client.rpc-timeout.ms`, for calls to the NameNode (Hadoop's default of 0
    /// leaves it to pings, which give up after about two minutes).
    pub rpc_timeout: Duration,
    /// `dfs.datanode.hostname`: the name this node registers under; the machine's host
    /// name when unset, as HDFS's DataNode takes it.
    pub hostname: Option<String>,
    /// `dfs.datanode.balance.bandwidthPerSec`: replica moves' rate, all together.
    pub balance_bandwidth: u64,
    /// `dfs.datanode.balance.max.concurrent.moves`
    pub balance_max_moves: usize,
    /// `dfs.datanode.use.datanode.hostname`: reach other DataNodes by host name.
    pub peers_by_host_name: bool,
    /// Secure mode: `hadoop.security.authentication=kerberos`, with the node's
    /// `dfs.datanode.kerberos.principal` (`_HOST` allowed) and `dfs.datanode.keytab.file`.
    pub kerberos: bool,
    pub kerberos_principal: Option<String>,
    pub keytab: Option<String>,
}

impl DnConfig {
    pub fn new(data_dirs: Vec<PathBuf>, namenode: SocketAddr) -> Self {
        DnConfig {
            data_dirs,
            local_storage_types: Vec::new(),
            namenodes: vec![namenode],
            bind: "127.0.0.1:0".parse().expect("literal"),
            ipc_bind: "127.0.0.1:0".parse().expect("literal"),
            http_bind: None,
            http: Default::default(),
            heartbeat_interval: Duration::from_secs(3),
            block_report_interval: Duration::from_secs(6 * 3600),
            xceiver: XceiverConfig::default(),
            reads: readserver::ReadConfig::default(),
            user: std::env::var("USER").unwrap_or_else(|_| "root".into()),
            rpc_timeout: Duration::from_secs(120),
            hostname: None,
            balance_bandwidth: balancing::DEFAULT_BANDWIDTH,
            balance_max_moves: balancing::DEFAULT_MAX_MOVES,
            peers_by_host_name: false,
            kerberos: false,
            kerberos_principal: None,
            keytab: None,
        }
    }

    /// The host name this node registers under.
    pub fn host_name(&self) -> String {
        self.hostname.clone().unwrap_or_else(machine_host_name)
    }

    /// Applies Hadoop keys; returns the ones that mean nothing to a DataNode.
    pub fn apply<'a>(
        &mut self,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Vec<String>, ConfigError> {
        let mut unknown = Vec::new();
        for (k, v) in pairs {
            let bad = |wants: &'static str| ConfigError {
                key: k.to_string(),
                value: v.to_string(),
                wants,
            };
            let num = || v.trim().parse::<u64>().map_err(|_| bad("a number"));
            if self.http.set(k, v).map_err(bad)? {
                continue;
            }
            match k {
                "dfs.datanode.data.dir" => {
                    self.data_dirs = v
                        .split(',')
                        .map(|d| PathBuf::from(d.trim().trim_start_matches("file://")))
                        .filter(|p| !p.as_os_str().is_empty())
                        .collect()
                }
                "ferrite.local.datanode.storage.types" => {
                    self.local_storage_types = v
                        .split(';')
                        .map(|group| {
                            group
                                .split(',')
                                .map(|t| t.trim().to_ascii_uppercase())
                                .filter(|t| !t.is_empty())
                                .collect::<Vec<_>>()
                        })
                        .filter(|g| !g.is_empty())
                        .collect()
                }
                "dfs.heartbeat.interval" => {
                    self.heartbeat_interval = Duration::from_secs(num()?.max(1))
                }
                "dfs.blockreport.intervalMsec" => {
                    self.block_report_interval = Duration::from_millis(num()?.max(1000))
                }
                "dfs.datanode.socket.reuse.keepalive" => {
                    self.xceiver.keepalive = Duration::from_millis(num()?)
                }
                "dfs.client.socket-timeout" => {
                    self.xceiver.socket_timeout = Duration::from_millis(num()?.max(1000))
                }
                "dfs.datanode.ipc.address" => {
                    self.ipc_bind = v.trim().parse().map_err(|_| bad("an address"))?
                }
                "dfs.datanode.http.address" => {
                    self.http_bind = Some(v.trim().parse().map_err(|_| bad("an address"))?)
                }
                "ipc.client.rpc-timeout.ms" => {
                    let ms = num()?;
                    if ms > 0 {
                        self.rpc_timeout = Duration::from_millis(ms)
                    }
                }
                "hadoop.security.authentication" => {
                    self.kerberos = match v.trim().to_ascii_lowercase().as_str() {
                        "kerberos" => true,
                        "simple" => false,
                        _ => return Err(bad("simple or kerberos")),
                    }
                }
                "dfs.datanode.kerberos.principal" => {
                    self.kerberos_principal = Some(v.trim().to_string())
                }
                "dfs.datanode.keytab.file" => self.keytab = Some(v.trim().to_string()),
                "dfs.datanode.hostname" => {
                    self.hostname = Some(v.trim().to_string()).filter(|h| !h.is_empty())
                }
                "dfs.datanode.balance.bandwidthPerSec" => {
                    self.balance_bandwidth = ferrite_ipc::conf::parse_size(v)
                        .filter(|&b| b > 0)
                        .ok_or_else(|| bad("a positive size"))?
                }
                "dfs.datanode.use.datanode.hostname" => {
                    self.peers_by_host_name = v.trim().parse().map_err(|_| bad("true or false"))?
                }
                "dfs.datanode.balance.max.concurrent.moves" => {
                    self.balance_max_moves = num()? as usize
                }
                "dfs.data.transfer.max.packet.size" => self.xceiver.max_packet = num()? as usize,
                "dfs.blocksize" => {
                    self.xceiver.block_size =
                        ferrite_ipc::conf::parse_size(v).ok_or_else(|| bad("a size"))?
                }
                "ferrite.datanode.read.packet.bytes" => {
                    self.xceiver.read_packet_bytes = (num()? as usize).clamp(512, 8 << 20)
                }
                "ferrite.datanode.read.io.threads" => {
                    self.reads.io_threads = (num()? as usize).clamp(1, 256)
                }
                "ferrite.datanode.read.io.queue" => self.reads.io_queue = (num()? as usize).max(1),
                "ferrite.datanode.read.handle.cache" => {
                    self.reads.cache_cap = (num()? as usize).max(1)
                }
                "ferrite.datanode.fault.read.delay" => {
                    let bad = || bad("VOLUME:MILLISECONDS");
                    let (vol, ms) = v.trim().split_once(':').ok_or_else(bad)?;
                    let vol = vol.parse().map_err(|_| bad())?;
                    let ms = ms.parse().map_err(|_| bad())?;
                    self.reads.slow_volume = Some((vol, Duration::from_millis(ms)));
                }
                _ => unknown.push(k.to_string()),
            }
        }
        Ok(unknown)
    }
}

pub use ferrite_ipc::hostnames::machine_host_name;

/// Secure mode: this process's connections authenticate as the node's principal, from
/// its keytab (read now, so a wrong one stops the DataNode at start-up, as HDFS's login).
fn kerberos_login(cfg: &DnConfig) -> anyhow::Result<()> {
    let (Some(pattern), Some(keytab)) = (&cfg.kerberos_principal, &cfg.keytab) else {
        anyhow::bail!(
            "secure mode needs dfs.datanode.kerberos.principal and dfs.datanode.keytab.file"
        );
    };
    let principal = ferrite_kerberos::auth_to_local::fill_host(pattern, &cfg.host_name());
    let cred = ferrite_kerberos::gss::Credential::initiator_keytab(&principal, keytab)
        .map_err(|e| anyhow::anyhow!("Login failure for {principal} from keytab {keytab}: {e}"))?;
    ferrite_ipc::client_sasl::login(ferrite_ipc::client_sasl::KerberosLogin {
        principal,
        cred: Arc::new(cred),
    })
    .map_err(|e| anyhow::anyhow!(e))
}

pub struct DataNodeHandle {
    pub xfer_addr: SocketAddr,
    /// Where `/jmx` is served, if anywhere.
    pub http_addr: Option<SocketAddr>,
    pub uuid: String,
    pub dataset: Arc<Dataset>,
    cancel: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl DataNodeHandle {
    pub async fn shutdown(self) {
        self.cancel.cancel();
        for t in self.tasks {
            let _ = t.await;
        }
    }

    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }
}

pub struct DataNode;

/// What [`DataNode::serve`] runs on: the replicas, the two listening sockets and how the
/// node connects out. A real process opens disks and binds TCP ports
/// ([`DataNode::start`]); the simulator hands in memory volumes and simulated sockets.
pub struct Parts<X: Listen, I: Listen> {
    pub ds: Arc<Dataset>,
    pub uuid: String,
    /// The NameNode's answer to `versionRequest`.
    pub ns: NamespaceInfoProto,
    /// Data transfer.
    pub xfer: X,
    /// InterDatanodeProtocol (block recovery) and the client's DataNode calls.
    pub ipc: I,
    pub dial: Arc<dyn Dial>,
    /// `/jmx` and WebHDFS, where served.
    pub http: Option<TcpListener>,
}

impl DataNode {
    /// Starts a DataNode: waits for its NameNode, opens the volumes, starts serving, then
    /// registers and sends its first full block report.
    pub async fn start(cfg: DnConfig) -> anyhow::Result<DataNodeHandle> {
        if cfg.kerberos {
            kerberos_login(&cfg)?;
        }
        let cancel = CancellationToken::new();
        // Calls out from the address it serves on: the NameNode knows a DataNode by the
        // address its registration comes from.
        let dial = ferrite_ipc::net::tcp_from(cfg.bind.ip());
        let Some(ns) = nn_link::handshake(&*dial, &cfg.namenodes, &cfg.user, &cancel).await else {
            anyhow::bail!("cancelled before the NameNode answered");
        };
        let dirs = cfg.data_dirs.clone();
        let pool = ns.block_pool_id.clone();
        let cluster = ns.storage_info.cluster_id.clone();
        let (ds, uuid) =
            tokio::task::spawn_blocking(move || Dataset::open(&dirs, &pool, &cluster)).await??;
        let http = match cfg.http_bind {
            Some(a) => Some(
                cfg.http
                    .bind(a)
                    .await
                    .map_err(|e| anyhow::anyhow!("binding the HTTP port {a}: {e}"))?,
            ),
            None => None,
        };
        let parts = Parts {
            ds: Arc::new(ds),
            uuid,
            ns,
            xfer: TcpListener::bind(cfg.bind).await?,
            ipc: TcpListener::bind(cfg.ipc_bind).await?,
            dial,
            http,
        };
        Self::serve(&cfg, parts, cancel).await
    }

    /// Serves on `parts` until the handle's shutdown: registers, reports, then heartbeats.
    pub async fn serve<X: Listen, I: Listen>(
        cfg: &DnConfig,
        parts: Parts<X, I>,
        cancel: CancellationToken,
    ) -> anyhow::Result<DataNodeHandle> {
        let Parts {
            ds,
            uuid,
            ns,
            xfer,
            ipc,
            dial,
            http,
        } = parts;
        ds.start_reads(&cfg.reads)?;
        let xfer_addr = xfer.local_addr()?;
        let ipc_addr = ipc.local_addr()?;
        let http_addr = http.as_ref().map(|l| l.local_addr()).transpose()?;
        let me = Identity {
            uuid: uuid.clone(),
            ip: xfer_addr.ip().to_string(),
            host: cfg.host_name(),
            xfer_port: xfer_addr.port() as u32,
            // Registered, so the NameNode's reports point at this node's `/jmx`.
            info_port: http_addr.map_or(0, |a| u32::from(a.port())),
            ipc_port: ipc_addr.port() as u32,
        };
        let settings = LinkSettings {
            rpc_timeout: cfg.rpc_timeout,
            user: cfg.user.clone(),
            balance: BalanceThrottle::new(cfg.balance_bandwidth, cfg.balance_max_moves),
            peers_by_host_name: cfg.peers_by_host_name,
        };
        let link = NnLink::new(dial, &cfg.namenodes, &ns, &me, settings);
        let ipc = ferrite_ipc::server::spawn(
            ipc,
            Arc::new(ipc::router(ds.clone(), link.clone())),
            Default::default(),
        );
        let x = Arc::new(Xceiver {
            ds: ds.clone(),
            link: link.clone(),
            cfg: cfg.xceiver.clone(),
        });
        let mut tasks = vec![tokio::spawn(xceiver::serve(x, xfer, cancel.clone()))];
        if let Some(l) = http {
            let beans = jmx::DataNodeBeans {
                ds: ds.clone(),
                node: jmx::NodeInfo {
                    uuid: uuid.clone(),
                    cluster_id: ns.storage_info.cluster_id.clone(),
                    started_ms: now_ms(),
                    data_port: xfer_addr.port(),
                    ipc_port: ipc_addr.port(),
                    http_port: http_addr.map_or(0, |a| a.port()),
                },
            };
            let http = ferrite_http::HttpServer::spawn(
                l,
                Arc::new(beans),
                false,
                webhdfs::router(),
                &cfg.http,
            )?;
            let cancel = cancel.clone();
            tasks.push(tokio::spawn(async move {
                cancel.cancelled().await;
                http.shutdown().await;
            }));
        }
        {
            // The IPC server stops with everything else.
            let cancel = cancel.clone();
            tasks.push(tokio::spawn(async move {
                cancel.cancelled().await;
                ipc.shutdown().await;
            }));
        }
        let intervals = heartbeats::Intervals {
            heartbeat: cfg.heartbeat_interval,
            report: cfg.block_report_interval,
        };
        let (joined_tx, mut joined) = tokio::sync::mpsc::channel(link.namenodes());
        for i in 0..link.namenodes() {
            tasks.push(tokio::spawn(link.clone().run_ibr_sender(i, cancel.clone())));
            tasks.push(tokio::spawn(heartbeats::run(
                link.clone(),
                i,
                ds.clone(),
                intervals,
                joined_tx.clone(),
                cancel.clone(),
            )));
        }
        // Serving once one NameNode has taken this node; the others join as they can
        // (an HA group's member may be down).
        tokio::select! {
            _ = joined.recv() => {}
            _ = cancel.cancelled() => anyhow::bail!("stopped before the NameNode took this DataNode"),
        }
        tasks.push(tokio::spawn(log_read_stats(ds.clone(), cancel.clone())));
        info!(%xfer_addr, %ipc_addr, http_addr = ?http_addr, %uuid, volumes = ds.volumes.len(), "DataNode serving");
        Ok(DataNodeHandle {
            xfer_addr,
            http_addr,
            uuid,
            dataset: ds,
            cancel,
            tasks,
        })
    }
}

/// Logs the read server's counters every minute while there are reads.
async fn log_read_stats(ds: Arc<Dataset>, cancel: CancellationToken) {
    let mut last = 0;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(60)) => {}
            _ = cancel.cancelled() => return,
        }
        let s = ds.reads().snapshot();
        if s.reads != last || s.active_reads > 0 {
            last = s.reads;
            info!("read server: {}", s.log_line());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hadoop_address_keys_set_the_ports_and_bad_ones_are_refused() {
        let mut cfg = DnConfig::new(Vec::new(), "127.0.0.1:9000".parse().unwrap());
        let unknown = cfg
            .apply([
                ("dfs.datanode.http.address", "127.0.0.1:19864"),
                ("dfs.datanode.ipc.address", "127.0.0.1:19867"),
                ("no.such.key", "1"),
            ])
            .unwrap();
        assert_eq!(cfg.http_bind, Some("127.0.0.1:19864".parse().unwrap()));
        assert_eq!(cfg.ipc_bind, "127.0.0.1:19867".parse().unwrap());
        assert_eq!(unknown, ["no.such.key"]);
        let e = cfg
            .apply([("dfs.datanode.http.address", "nowhere")])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad value \"nowhere\" for dfs.datanode.http.address: wants an address"
        );
    }
}
