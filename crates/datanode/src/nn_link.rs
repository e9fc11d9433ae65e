//! The DataNode's side of DatanodeProtocol: handshake (versionRequest, registerDatanode),
//! full block reports, heartbeats and the commands they bring back, and incremental block
//! reports. The connection is re-made, and the node re-registers, whenever it breaks.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ferrite_blocktoken::keys::tokens_off;
use ferrite_blocktoken::KeyRing;
use ferrite_ipc::client::{ClientError, IpcClient};
use ferrite_ipc::net::Dial;
use ferrite_ipc::DATANODE_PROTOCOL;
use ferrite_proto::block_list;
use ferrite_proto::datanode::received_deleted_block_info_proto::BlockStatus;
use ferrite_proto::datanode::*;
use ferrite_proto::hdfs::{
    BlockProto, DatanodeIdProto, DatanodeStorageProto, ExportedBlockKeysProto, NamespaceInfoProto,
    StorageInfoProto, StorageReportProto, VersionRequestProto, VersionResponseProto,
};
use parking_lot::{Mutex, RwLock};
use prost::Message;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::balancing::BalanceThrottle;
use crate::storage::{Dataset, State};

/// One incremental report entry, with an optional waiter for the NameNode's answer.
struct Ibr {
    storage_uuid: String,
    info: ReceivedDeletedBlockInfoProto,
    done: Option<oneshot::Sender<()>>,
}

/// This DataNode's link to its NameNodes: one connection to each (the members of an HA
/// group, or the one NameNode), as HDFS's `BPOfferService` keeps one actor per NameNode.
/// Every NameNode hears the registrations, heartbeats and block reports, so a standby's
/// block map is as warm as the active's; commands are obeyed from the active only.
pub struct NnLink {
    nns: Vec<NnConn>,
    /// The NameNode obeyed now, with the transaction id of its claim to be active: as
    /// in HDFS, a later claim (a higher txid) wins, so a deposed active that still says
    /// "active" for a moment is not obeyed over its successor.
    active: Mutex<Option<(usize, u64)>>,
    /// How this node connects out: to the NameNodes, and to other DataNodes.
    dial: Arc<dyn Dial>,
    pub pool: String,
    /// Active data transfers, reported in heartbeats as the xceiver count.
    pub xceivers: std::sync::atomic::AtomicU32,
    /// Block keys from every NameNode (registration and key updates), for token checks:
    /// each NameNode signs with keys of its own, and a token from one that has just
    /// stepped down must still be honoured.
    pub keys: RwLock<KeyRing>,
    /// Limits on replica moves; the NameNode changes their rate with a heartbeat answer.
    pub balance: BalanceThrottle,
    peers_by_host_name: bool,
}

/// One NameNode's connection, registration and queue of incremental reports.
struct NnConn {
    addr: SocketAddr,
    /// How long a call may go unanswered before its connection is dropped and made
    /// again: a NameNode that lost power sends no reset, and without a limit a DataNode
    /// would wait on the dead connection for ever (Hadoop's IPC client pings and times
    /// out for the same reason).
    rpc_timeout: Duration,
    dial: Arc<dyn Dial>,
    user: String,
    client: tokio::sync::Mutex<Option<Arc<IpcClient>>>,
    registration: Mutex<DatanodeRegistrationProto>,
    ibr_tx: mpsc::UnboundedSender<Ibr>,
    ibr_rx: Mutex<Option<mpsc::UnboundedReceiver<Ibr>>>,
}

/// A heartbeat's answer: the commands, and whether they are to be obeyed (they come
/// from the active NameNode).
pub struct Beat {
    pub cmds: Vec<DatanodeCommandProto>,
    pub from_active: bool,
}

/// Who this DataNode is, for registration.
pub struct Identity {
    pub uuid: String,
    pub ip: String,
    pub host: String,
    pub xfer_port: u32,
    pub info_port: u32,
    pub ipc_port: u32,
}

async fn connect(dial: &dyn Dial, addr: SocketAddr, user: &str) -> Result<IpcClient, ClientError> {
    IpcClient::dial(dial, &addr.to_string(), user, DATANODE_PROTOCOL).await
}

/// Asks the NameNodes who they are, one after another, until one answers or `cancel`
/// fires (any member of an HA group knows the namespace, active or not).
pub async fn handshake(
    dial: &dyn Dial,
    addrs: &[SocketAddr],
    user: &str,
    cancel: &CancellationToken,
) -> Option<NamespaceInfoProto> {
    let mut wait = Duration::from_millis(100);
    loop {
        for &addr in addrs {
            let attempt = async {
                let c = connect(dial, addr, user).await?;
                let r: VersionResponseProto =
                    c.call("versionRequest", &VersionRequestProto {}).await?;
                Ok::<_, ClientError>(r.info)
            };
            match attempt.await {
                Ok(info) => return Some(info),
                Err(e) => debug!(%addr, error = %e, "NameNode not reachable yet"),
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = cancel.cancelled() => return None,
        }
        wait = (wait * 2).min(Duration::from_secs(3));
    }
}

fn registration_of(ns: &NamespaceInfoProto, me: &Identity) -> DatanodeRegistrationProto {
    DatanodeRegistrationProto {
        datanode_id: DatanodeIdProto {
            ip_addr: me.ip.clone(),
            host_name: me.host.clone(),
            datanode_uuid: me.uuid.clone(),
            xfer_port: me.xfer_port,
            info_port: me.info_port,
            ipc_port: me.ipc_port,
            info_secure_port: Some(0),
        },
        storage_info: StorageInfoProto {
            layout_version: (-57i32) as u32,
            namespce_id: ns.storage_info.namespce_id,
            cluster_id: ns.storage_info.cluster_id.clone(),
            c_time: ns.storage_info.c_time,
        },
        keys: tokens_off(),
        software_version: "3.4.1".into(),
    }
}

impl NnConn {
    /// Calls the NameNode, reconnecting once if the connection had died.
    async fn call<Req: Message, Resp: Message + Default>(
        &self,
        method: &str,
        req: &Req,
    ) -> Result<Resp, ClientError> {
        for attempt in 0..2 {
            let answer = tokio::time::timeout(self.rpc_timeout, async {
                let c = {
                    let mut guard = self.client.lock().await;
                    match guard.as_ref() {
                        Some(c) => c.clone(),
                        None => {
                            let c = Arc::new(connect(&*self.dial, self.addr, &self.user).await?);
                            *guard = Some(c.clone());
                            c
                        }
                    }
                };
                c.call(method, req).await
            })
            .await
            .unwrap_or_else(|_| {
                Err(ClientError::Io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "{method}: no answer from the NameNode {} in {:?}",
                        self.addr, self.rpc_timeout
                    ),
                )))
            });
            match answer {
                Err(e @ (ClientError::Io(_) | ClientError::Closed)) => {
                    *self.client.lock().await = None;
                    if attempt == 1 {
                        return Err(e);
                    }
                }
                other => return other,
            }
        }
        unreachable!("the loop returns")
    }

    fn registration(&self) -> DatanodeRegistrationProto {
        self.registration.lock().clone()
    }

    fn queue(
        &self,
        storage_uuid: &str,
        info: ReceivedDeletedBlockInfoProto,
    ) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let _ = self.ibr_tx.send(Ibr {
            storage_uuid: storage_uuid.to_string(),
            info,
            done: Some(tx),
        });
        rx
    }

    /// Sends queued incremental reports, batching whatever piled up during a call.
    async fn run_ibr_sender(&self, pool: &str, cancel: CancellationToken) {
        let Some(mut rx) = self.ibr_rx.lock().take() else {
            return;
        };
        loop {
            let first = tokio::select! {
                m = rx.recv() => match m { Some(m) => m, None => return },
                _ = cancel.cancelled() => return,
            };
            let mut batch = vec![first];
            while let Ok(m) = rx.try_recv() {
                batch.push(m);
            }
            let mut by_storage: Vec<StorageReceivedDeletedBlocksProto> = Vec::new();
            for m in &batch {
                match by_storage
                    .iter_mut()
                    .find(|s| s.storage_uuid == m.storage_uuid)
                {
                    Some(s) => s.blocks.push(m.info.clone()),
                    None => by_storage.push(StorageReceivedDeletedBlocksProto {
                        storage_uuid: m.storage_uuid.clone(),
                        blocks: vec![m.info.clone()],
                        // The NameNode knows each storage's type from the heartbeats.
                        storage: None,
                    }),
                }
            }
            let req = BlockReceivedAndDeletedRequestProto {
                registration: self.registration(),
                block_pool_id: pool.to_string(),
                blocks: by_storage,
            };
            let mut backoff = Duration::from_millis(50);
            loop {
                match self
                    .call::<_, BlockReceivedAndDeletedResponseProto>(
                        "blockReceivedAndDeleted",
                        &req,
                    )
                    .await
                {
                    Ok(_) => break,
                    Err(e) => {
                        warn!(namenode = %self.addr, error = %e, "incremental block report failed; retrying");
                        tokio::select! {
                            _ = tokio::time::sleep(backoff) => {}
                            _ = cancel.cancelled() => return,
                        }
                        backoff = (backoff * 2).min(Duration::from_secs(3));
                    }
                }
            }
            for m in batch {
                if let Some(tx) = m.done {
                    let _ = tx.send(());
                }
            }
        }
    }
}

/// A DataNode's `port`, by host name (when it registered one) or address.
fn peer_addr_of(id: &DatanodeIdProto, port: u32, by_host_name: bool) -> String {
    let host = if by_host_name && !id.host_name.is_empty() {
        &id.host_name
    } else {
        &id.ip_addr
    };
    format!("{host}:{port}")
}

/// How a link behaves: its calls' timeout and user, the move limits its heartbeats adjust,
/// and how it names other DataNodes.
pub struct LinkSettings {
    pub rpc_timeout: Duration,
    pub user: String,
    pub balance: BalanceThrottle,
    /// `dfs.datanode.use.datanode.hostname`: reach other DataNodes by the host names they
    /// registered rather than their addresses.
    pub peers_by_host_name: bool,
}

impl NnLink {
    /// A link to the NameNodes at `addrs` (one, or an HA group's members).
    pub fn new(
        dial: Arc<dyn Dial>,
        addrs: &[SocketAddr],
        ns: &NamespaceInfoProto,
        me: &Identity,
        settings: LinkSettings,
    ) -> Arc<Self> {
        let LinkSettings {
            rpc_timeout,
            user,
            balance,
            peers_by_host_name,
        } = settings;
        let nns = addrs
            .iter()
            .map(|&addr| {
                let (ibr_tx, ibr_rx) = mpsc::unbounded_channel();
                NnConn {
                    addr,
                    rpc_timeout,
                    dial: dial.clone(),
                    user: user.clone(),
                    client: tokio::sync::Mutex::new(None),
                    registration: Mutex::new(registration_of(ns, me)),
                    ibr_tx,
                    ibr_rx: Mutex::new(Some(ibr_rx)),
                }
            })
            .collect();
        Arc::new(NnLink {
            nns,
            active: Mutex::new(None),
            dial,
            pool: ns.block_pool_id.clone(),
            xceivers: Default::default(),
            keys: RwLock::new(KeyRing::default()),
            balance,
            peers_by_host_name,
        })
    }

    /// How many NameNodes this node reports to.
    pub fn namenodes(&self) -> usize {
        self.nns.len()
    }

    /// How this node connects out (TCP, or the simulator's network).
    pub fn dialer(&self) -> &dyn Dial {
        &*self.dial
    }

    /// This node's DataNode uuid.
    pub fn uuid(&self) -> String {
        self.nns[0]
            .registration
            .lock()
            .datanode_id
            .datanode_uuid
            .clone()
    }

    /// The user this node speaks to other servers as.
    pub fn user(&self) -> String {
        self.nns[0].user.clone()
    }

    /// The NameNode obeyed now, if any has claimed to be active.
    fn active(&self) -> Option<usize> {
        self.active.lock().map(|(i, _)| i)
    }

    /// Notes NameNode `i`'s state from its heartbeat answer; returns whether it is the one
    /// to obey.
    fn note_state(&self, i: usize, state: i32, txid: u64) -> bool {
        let mut active = self.active.lock();
        if state == ferrite_proto::hdfs::nnha_status_heartbeat_proto::State::Active as i32 {
            let newer = active.is_none_or(|(j, claimed)| j == i || txid >= claimed);
            if newer {
                if active.is_none_or(|(j, _)| j != i) {
                    info!(namenode = %self.nns[i].addr, txid, "obeying the active NameNode");
                }
                *active = Some((i, txid));
            }
        } else if active.is_some_and(|(j, _)| j == i) {
            *active = None;
        }
        active.is_some_and(|(j, _)| j == i)
    }

    /// Reports the end of a block recovery this node led: to the active NameNode, or, when
    /// it has just changed, to whichever takes it (a standby refuses).
    pub async fn commit_block_sync(
        &self,
        req: &CommitBlockSynchronizationRequestProto,
    ) -> Result<(), ClientError> {
        let first = self.active().unwrap_or(0);
        let order = (0..self.nns.len()).map(|k| (first + k) % self.nns.len());
        let mut last = None;
        for i in order {
            match self.nns[i]
                .call::<_, CommitBlockSynchronizationResponseProto>(
                    "commitBlockSynchronization",
                    req,
                )
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("at least one NameNode"))
    }

    pub fn update_keys(&self, keys: &ExportedBlockKeysProto) {
        let mut ring = self.keys.write();
        ring.update(keys, crate::now_ms());
        debug!(
            enabled = ring.enabled(),
            keys = ring.key_count(),
            "block keys updated"
        );
    }

    /// Where to reach another DataNode's data-transfer port: by its address, or by its
    /// registered host name with `dfs.datanode.use.datanode.hostname` (as HDFS's
    /// `connectToDnViaHostname`).
    pub fn peer_xfer_addr(&self, id: &DatanodeIdProto) -> String {
        peer_addr_of(id, id.xfer_port, self.peers_by_host_name)
    }

    /// Another DataNode's IPC address (InterDatanodeProtocol), named as
    /// [`peer_xfer_addr`](Self::peer_xfer_addr) names its data-transfer address.
    pub fn peer_ipc_addr(&self, id: &DatanodeIdProto) -> String {
        peer_addr_of(id, id.ipc_port, self.peers_by_host_name)
    }

    /// This node's data-transfer address as the NameNode knows it (`ip:port`).
    pub fn xfer_addr(&self) -> String {
        let r = self.nns[0].registration.lock();
        format!("{}:{}", r.datanode_id.ip_addr, r.datanode_id.xfer_port)
    }

    /// Registers with NameNode `i`.
    pub async fn register(&self, i: usize) -> Result<(), ClientError> {
        let nn = &self.nns[i];
        let req = RegisterDatanodeRequestProto {
            registration: nn.registration(),
        };
        let mut resp: RegisterDatanodeResponseProto = nn.call("registerDatanode", &req).await?;
        // The keys go to the key ring; the secrets are not sent back with every heartbeat.
        let keys = std::mem::replace(&mut resp.registration.keys, tokens_off());
        self.update_keys(&keys);
        // Keep what the NameNode corrected (our address as it sees it).
        *nn.registration.lock() = resp.registration;
        info!(namenode = %nn.addr, "registered with the NameNode");
        Ok(())
    }

    /// Sends NameNode `i` a full block report.
    pub async fn full_report(&self, i: usize, ds: &Dataset) -> Result<(), ClientError> {
        let nn = &self.nns[i];
        let reports = ds
            .report()
            .into_iter()
            .map(|(uuid, _failed, replicas)| {
                let mut buf = Vec::with_capacity(replicas.len() * 16);
                for r in &replicas {
                    let st = match (r.state, r.restarted) {
                        (State::Finalized, _) => block_list::FINALIZED,
                        (State::Rbw, false) => block_list::RBW,
                        (State::Rbw, true) => block_list::RWR,
                    };
                    block_list::push(&mut buf, r.id, r.len, r.gs, st);
                }
                StorageBlockReportProto {
                    storage: storage(&uuid, ds.storage_type_of(&uuid)),
                    blocks: Vec::new(),
                    number_of_blocks: Some(replicas.len() as u64),
                    blocks_buffers: vec![buf],
                }
            })
            .collect();
        let req = BlockReportRequestProto {
            registration: nn.registration(),
            block_pool_id: self.pool.clone(),
            reports,
            context: Some(BlockReportContextProto {
                total_rpcs: 1,
                cur_rpc: 0,
                id: rand_id(),
                lease_id: Some(0),
                sorted: Some(false),
            }),
        };
        let _: BlockReportResponseProto = nn.call("blockReport", &req).await?;
        Ok(())
    }

    /// Queues an incremental report for every NameNode. For RECEIVED, the returned
    /// receiver fires once the active NameNode has it, so the writer can wait before
    /// acking the last packet (then the client's complete() succeeds at its first try).
    pub fn report_block(
        &self,
        storage_uuid: &str,
        id: u64,
        gs: u64,
        len: u64,
        status: BlockStatus,
    ) -> oneshot::Receiver<()> {
        self.queue_report(storage_uuid, id, gs, len, status, None)
    }

    /// Reports a replica received by a move (REPLACE_BLOCK): `delete_hint`, the node it
    /// came from, is the replica the NameNode should drop as surplus (`None` for a move
    /// between this node's own volumes).
    pub fn report_moved(
        &self,
        storage_uuid: &str,
        id: u64,
        gs: u64,
        len: u64,
        delete_hint: Option<String>,
    ) -> oneshot::Receiver<()> {
        self.queue_report(
            storage_uuid,
            id,
            gs,
            len,
            BlockStatus::Received,
            delete_hint,
        )
    }

    fn queue_report(
        &self,
        storage_uuid: &str,
        id: u64,
        gs: u64,
        len: u64,
        status: BlockStatus,
        delete_hint: Option<String>,
    ) -> oneshot::Receiver<()> {
        let info = ReceivedDeletedBlockInfoProto {
            block: BlockProto {
                block_id: id,
                gen_stamp: gs,
                num_bytes: Some(len),
            },
            delete_hint,
            status: status as i32,
        };
        let waited = self.active().unwrap_or(0);
        let mut answer = None;
        for (i, nn) in self.nns.iter().enumerate() {
            let rx = nn.queue(storage_uuid, info.clone());
            if i == waited {
                answer = Some(rx);
            }
        }
        answer.expect("at least one NameNode")
    }

    /// Sends NameNode `i` its queued incremental reports until `cancel`.
    pub async fn run_ibr_sender(self: Arc<Self>, i: usize, cancel: CancellationToken) {
        self.nns[i].run_ibr_sender(&self.pool, cancel).await
    }

    /// Probes every volume still in service (as HDFS's disk checker does); one that fails is
    /// taken out and its replicas are reported deleted, so the NameNode copies them elsewhere.
    pub async fn check_volumes(&self, ds: &Arc<Dataset>) {
        for vi in 0..ds.volumes.len() {
            if ds.volumes[vi].is_failed() {
                continue;
            }
            let lost = ds
                .off_thread(move |ds| ds.check_volume(vi))
                .await
                .unwrap_or_default();
            let uuid = &ds.volumes[vi].storage_uuid;
            for id in lost {
                drop(self.report_block(uuid, id, 0, 0, BlockStatus::Deleted));
            }
        }
    }

    /// One heartbeat to NameNode `i`: this node's load and space; answers its commands.
    pub async fn heartbeat(&self, i: usize, ds: &Dataset) -> Result<Beat, ClientError> {
        let req = self.heartbeat_request(i, ds);
        let resp: HeartbeatResponseProto = self.nns[i].call("sendHeartbeat", &req).await?;
        let from_active = self.note_state(i, resp.ha_status.state, resp.ha_status.txid);
        Ok(Beat {
            cmds: resp.cmds,
            from_active,
        })
    }

    fn heartbeat_request(&self, i: usize, ds: &Dataset) -> HeartbeatRequestProto {
        let reports = ds
            .volumes
            .iter()
            .enumerate()
            .map(|(vi, v)| {
                let (capacity, remaining) = if v.is_failed() { (0, 0) } else { v.usable() };
                let used = ds.used(vi);
                StorageReportProto {
                    storage_uuid: v.storage_uuid.clone(),
                    failed: Some(v.is_failed()),
                    capacity: Some(capacity),
                    dfs_used: Some(used),
                    remaining: Some(remaining),
                    block_pool_used: Some(used),
                    storage: Some(storage(&v.storage_uuid, v.storage_type)),
                    non_dfs_used: Some(0),
                    mount: None,
                }
            })
            .collect();
        HeartbeatRequestProto {
            registration: self.nns[i].registration(),
            reports,
            xmits_in_progress: Some(0),
            xceiver_count: Some(self.xceivers.load(std::sync::atomic::Ordering::Relaxed)),
            failed_volumes: Some(ds.failed_volumes() as u32),
            cache_capacity: Some(0),
            cache_used: Some(0),
            volume_failure_summary: None,
            request_full_block_report_lease: Some(false),
        }
    }
}

pub(crate) fn storage(uuid: &str, storage_type: u8) -> DatanodeStorageProto {
    DatanodeStorageProto {
        storage_uuid: uuid.to_string(),
        state: Some(0),
        storage_type: Some(i32::from(storage_type)),
    }
}

fn rand_id() -> i64 {
    (uuid::Uuid::new_v4().as_u128() as i64).abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_reached_by_host_name_only_when_asked_and_known() {
        let id = DatanodeIdProto {
            ip_addr: "10.0.0.7".into(),
            host_name: "dn7.example".into(),
            xfer_port: 9866,
            ..Default::default()
        };
        assert_eq!(peer_addr_of(&id, 9866, false), "10.0.0.7:9866");
        assert_eq!(peer_addr_of(&id, 9867, true), "dn7.example:9867");
        let nameless = DatanodeIdProto {
            host_name: String::new(),
            ..id
        };
        assert_eq!(peer_addr_of(&nameless, 9866, true), "10.0.0.7:9866");
    }
}
