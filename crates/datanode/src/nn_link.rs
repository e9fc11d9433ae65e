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

use crate::storage::{Dataset, State};

/// One incremental report entry, with an optional waiter for the NameNode's answer.
struct Ibr {
    storage_uuid: String,
    info: ReceivedDeletedBlockInfoProto,
    done: Option<oneshot::Sender<()>>,
}

pub struct NnLink {
    addr: SocketAddr,
    /// How long a call may go unanswered before its connection is dropped and made
    /// again: a NameNode that lost power sends no reset, and without a limit a DataNode
    /// would wait on the dead connection for ever (Hadoop's IPC client pings and times
    /// out for the same reason).
    rpc_timeout: Duration,
    /// How this node connects out: to the NameNode, and to other DataNodes.
    dial: Arc<dyn Dial>,
    user: String,
    client: tokio::sync::Mutex<Option<Arc<IpcClient>>>,
    registration: Mutex<DatanodeRegistrationProto>,
    pub pool: String,
    ibr_tx: mpsc::UnboundedSender<Ibr>,
    ibr_rx: Mutex<Option<mpsc::UnboundedReceiver<Ibr>>>,
    /// Active data transfers, reported in heartbeats as the xceiver count.
    pub xceivers: std::sync::atomic::AtomicU32,
    /// Block keys from the NameNode (registration and key updates), for token checks.
    pub keys: RwLock<KeyRing>,
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

/// Asks the NameNode who it is, retrying until it answers or `cancel` fires.
pub async fn handshake(
    dial: &dyn Dial,
    addr: SocketAddr,
    user: &str,
    cancel: &CancellationToken,
) -> Option<NamespaceInfoProto> {
    let mut wait = Duration::from_millis(100);
    loop {
        let attempt = async {
            let c = connect(dial, addr, user).await?;
            let r: VersionResponseProto = c.call("versionRequest", &VersionRequestProto {}).await?;
            Ok::<_, ClientError>(r.info)
        };
        match attempt.await {
            Ok(info) => return Some(info),
            Err(e) => debug!(%addr, error = %e, "NameNode not reachable yet"),
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = cancel.cancelled() => return None,
        }
        wait = (wait * 2).min(Duration::from_secs(3));
    }
}

impl NnLink {
    pub fn new(
        dial: Arc<dyn Dial>,
        rpc_timeout: Duration,
        addr: SocketAddr,
        user: &str,
        ns: &NamespaceInfoProto,
        me: &Identity,
    ) -> Arc<Self> {
        let (ibr_tx, ibr_rx) = mpsc::unbounded_channel();
        let registration = DatanodeRegistrationProto {
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
        };
        Arc::new(NnLink {
            addr,
            rpc_timeout,
            dial,
            user: user.to_string(),
            client: tokio::sync::Mutex::new(None),
            registration: Mutex::new(registration),
            pool: ns.block_pool_id.clone(),
            ibr_tx,
            ibr_rx: Mutex::new(Some(ibr_rx)),
            xceivers: Default::default(),
            keys: RwLock::new(KeyRing::default()),
        })
    }

    /// How this node connects out (TCP, or the simulator's network).
    pub fn dialer(&self) -> &dyn Dial {
        &*self.dial
    }

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
                        "{method}: no answer from the NameNode in {:?}",
                        self.rpc_timeout
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

    /// This node's DataNode uuid.
    pub fn uuid(&self) -> String {
        self.registration.lock().datanode_id.datanode_uuid.clone()
    }

    /// The user this node speaks to other servers as.
    pub fn user(&self) -> String {
        self.user.clone()
    }

    /// Reports the end of a block recovery this node led.
    pub async fn commit_block_sync(
        &self,
        req: &CommitBlockSynchronizationRequestProto,
    ) -> Result<(), ClientError> {
        let _: CommitBlockSynchronizationResponseProto =
            self.call("commitBlockSynchronization", req).await?;
        Ok(())
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

    /// This node's data-transfer address as the NameNode knows it (`ip:port`).
    pub fn xfer_addr(&self) -> String {
        let r = self.registration.lock();
        format!("{}:{}", r.datanode_id.ip_addr, r.datanode_id.xfer_port)
    }

    fn registration(&self) -> DatanodeRegistrationProto {
        self.registration.lock().clone()
    }

    pub async fn register(&self) -> Result<(), ClientError> {
        let req = RegisterDatanodeRequestProto {
            registration: self.registration(),
        };
        let mut resp: RegisterDatanodeResponseProto = self.call("registerDatanode", &req).await?;
        // The keys go to the key ring; the secrets are not sent back with every heartbeat.
        let keys = std::mem::replace(&mut resp.registration.keys, tokens_off());
        self.update_keys(&keys);
        // Keep what the NameNode corrected (our address as it sees it).
        *self.registration.lock() = resp.registration;
        info!(namenode = %self.addr, "registered with the NameNode");
        Ok(())
    }

    pub async fn full_report(&self, ds: &Dataset) -> Result<(), ClientError> {
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
            registration: self.registration(),
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
        let _: BlockReportResponseProto = self.call("blockReport", &req).await?;
        Ok(())
    }

    /// Queues an incremental report. For RECEIVED, the returned receiver fires once the
    /// NameNode has it, so the writer can wait before acking the last packet (then the
    /// client's complete() succeeds at its first try).
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
        let (tx, rx) = oneshot::channel();
        let _ = self.ibr_tx.send(Ibr {
            storage_uuid: storage_uuid.to_string(),
            info: ReceivedDeletedBlockInfoProto {
                block: BlockProto {
                    block_id: id,
                    gen_stamp: gs,
                    num_bytes: Some(len),
                },
                delete_hint,
                status: status as i32,
            },
            done: Some(tx),
        });
        rx
    }

    /// Sends queued incremental reports, batching whatever piled up during a call.
    pub async fn run_ibr_sender(self: Arc<Self>, cancel: CancellationToken) {
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
                block_pool_id: self.pool.clone(),
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
                        warn!(error = %e, "incremental block report failed; retrying");
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

    /// One heartbeat: this node's load and space; answers the NameNode's commands.
    pub async fn heartbeat(&self, ds: &Dataset) -> Result<Vec<DatanodeCommandProto>, ClientError> {
        let req = self.heartbeat_request(ds);
        let resp: HeartbeatResponseProto = self.call("sendHeartbeat", &req).await?;
        Ok(resp.cmds)
    }

    fn heartbeat_request(&self, ds: &Dataset) -> HeartbeatRequestProto {
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
            registration: self.registration(),
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
