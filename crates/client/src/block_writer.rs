//! One block's write pipeline: WRITE_BLOCK to the first DataNode (which forwards to the
//! rest), packets of checksummed data with a bounded window of unacknowledged packets, and
//! an ack reader that checks every node's status for every packet, in order.
//!
//! Every packet stays queued until all nodes acknowledged it, so that when a node fails
//! the writer can rebuild the pipeline without it and send those packets again (HDFS's
//! pipeline recovery; see `FileWriter`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use ferrite_ipc::net::Dial;
use ferrite_proto::hdfs::op_write_block_proto::BlockConstructionStage as Stage;
use ferrite_proto::hdfs::*;
use ferrite_transfer::checksum::Checksum;
use ferrite_transfer::io::{read_delimited, write_op};
use ferrite_transfer::op;
use ferrite_transfer::packet::{self, Header};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::block_reader::{connect, op_header, xfer_addr, DataIn, DataOut};
use crate::error::Error;

/// Unacknowledged packets allowed in flight (Java's default is 80).
const WINDOW: usize = 80;
const TIMEOUT: Duration = Duration::from_secs(60);

/// A sent packet not yet acknowledged by every node.
#[derive(Clone, Debug)]
pub(crate) struct Unacked {
    pub seqno: i64,
    pub bytes: Bytes,
    /// Block offset just past the packet's data.
    pub end: u64,
    /// The empty packet that ends the block.
    pub last: bool,
}

type Queue = Arc<Mutex<VecDeque<Unacked>>>;

pub(crate) struct BlockWriter {
    wr: DataOut,
    in_flight: mpsc::Sender<i64>,
    acks: JoinHandle<std::result::Result<(), Failure>>,
    unacked: Queue,
    /// The block offset every node has acknowledged up to.
    acked: watch::Receiver<u64>,
    checksum: Checksum,
    seqno: i64,
    /// Bytes sent so far (the block offset of the next packet).
    pub written: u64,
    out: BytesMut,
    sums: Vec<u8>,
}

/// Why a pipeline could not be set up: the node to leave out next time.
#[derive(Debug)]
pub(crate) struct SetupFailure {
    pub bad_node: String,
    pub error: Error,
}

/// Why a running pipeline stopped: which node (by pipeline position) to drop, if known.
#[derive(Debug)]
pub(crate) struct Failure {
    pub bad_index: Option<usize>,
    pub error: Error,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure {
            bad_index: None,
            error,
        }
    }
}

/// How a pipeline is set up: a new block, or (recovery) one that already holds data.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Setup {
    pub stage: Stage,
    /// Bytes every node acknowledged (the nodes cut their replicas back to this).
    pub acked: u64,
    /// Bytes the client had sent.
    pub sent: u64,
    /// The generation stamp the nodes take (new after updateBlockForPipeline).
    pub gs: u64,
}

impl Setup {
    pub(crate) fn create(lb: &LocatedBlockProto) -> Setup {
        Setup {
            stage: Stage::PipelineSetupCreate,
            acked: 0,
            sent: 0,
            gs: lb.b.generation_stamp,
        }
    }
}

impl BlockWriter {
    pub(crate) async fn open(
        dial: &dyn Dial,
        lb: &LocatedBlockProto,
        client_name: &str,
        checksum: Checksum,
        setup: Setup,
    ) -> std::result::Result<BlockWriter, SetupFailure> {
        let first = lb.locs.first().ok_or_else(|| SetupFailure {
            bad_node: String::new(),
            error: Error::DataNode("no DataNodes to write to".into()),
        })?;
        let addr = xfer_addr(first);
        let fail = |e: Error| SetupFailure {
            bad_node: addr.clone(),
            error: e,
        };
        let (rd, mut wr) = connect(dial, &addr).await.map_err(fail)?;
        let n = lb.locs.len();
        let op = OpWriteBlockProto {
            header: op_header(lb, client_name),
            targets: lb.locs[1..].to_vec(),
            source: None,
            stage: setup.stage as i32,
            pipeline_size: n as u32,
            min_bytes_rcvd: setup.acked,
            max_bytes_rcvd: setup.sent,
            latest_generation_stamp: setup.gs,
            requested_checksum: ChecksumProto {
                r#type: checksum.kind.to_proto(),
                bytes_per_checksum: checksum.bytes_per_checksum,
            },
            caching_strategy: None,
            storage_type: lb.storage_types.first().copied(),
            target_storage_types: lb.storage_types.iter().skip(1).copied().collect(),
            allow_lazy_persist: Some(false),
            pinning: Some(false),
            target_pinnings: vec![false; n.saturating_sub(1)],
            storage_id: lb.storage_i_ds.first().cloned(),
            target_storage_ids: lb.storage_i_ds.iter().skip(1).cloned().collect(),
        };
        write_op(&mut wr, op::WRITE_BLOCK, &op)
            .await
            .map_err(|e| fail(e.into()))?;
        let mut rd = BufReader::new(rd);
        let resp: BlockOpResponseProto = tokio::time::timeout(TIMEOUT, read_delimited(&mut rd))
            .await
            .map_err(|_| fail(Error::DataNode("no answer to WRITE_BLOCK".into())))?
            .map_err(|e| fail(e.into()))?;
        if resp.status != Status::Success as i32 {
            let bad = resp
                .first_bad_link
                .clone()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| addr.clone());
            return Err(SetupFailure {
                bad_node: bad.clone(),
                error: Error::DataNode(format!(
                    "pipeline setup failed at {bad}: status {} {}",
                    resp.status,
                    resp.message.unwrap_or_default()
                )),
            });
        }
        let (tx, rx) = mpsc::channel::<i64>(WINDOW);
        let unacked: Queue = Arc::default();
        let (acked_tx, acked) = watch::channel(setup.acked);
        let acks = tokio::spawn(read_acks(rd, rx, unacked.clone(), acked_tx));
        Ok(BlockWriter {
            wr,
            in_flight: tx,
            acks,
            unacked,
            acked,
            checksum,
            seqno: 0,
            written: setup.acked,
            out: BytesMut::new(),
            sums: Vec::new(),
        })
    }

    /// Sends one packet of data (chunk-aligned except possibly the block's last).
    pub(crate) async fn send(&mut self, data: &[u8]) -> std::result::Result<(), Failure> {
        self.sums.clear();
        self.checksum.compute_into(data, &mut self.sums);
        let h = Header {
            offset_in_block: self.written as i64,
            seqno: self.seqno,
            last: false,
            data_len: data.len() as i32,
            sync: false,
        };
        self.out.clear();
        packet::encode(&h, &self.sums, data, &mut self.out);
        self.written += data.len() as u64;
        let bytes = self.out.split().freeze();
        let p = self.queue(bytes, false);
        self.transmit(p).await
    }

    /// Queues a packet (before sending it: if sending fails, recovery resends it).
    fn queue(&mut self, bytes: Bytes, last: bool) -> Unacked {
        let p = Unacked {
            seqno: self.seqno,
            bytes,
            end: self.written,
            last,
        };
        self.seqno += 1;
        self.unacked
            .lock()
            .expect("not poisoned")
            .push_back(p.clone());
        p
    }

    async fn transmit(&mut self, p: Unacked) -> std::result::Result<(), Failure> {
        let Unacked { seqno, bytes, .. } = p;
        if self.in_flight.send(seqno).await.is_err() {
            return Err(self.ack_failure().await);
        }
        if let Err(e) = self.wr.write_all(&bytes).await {
            let f = self.ack_failure().await;
            return Err(match f.error {
                Error::Ipc(_) => Failure::from(Error::from(e)),
                _ => f,
            });
        }
        Ok(())
    }

    /// Sends again the packets a failed pipeline left unacknowledged. All are queued
    /// first, so a failure partway leaves every one of them for the next attempt.
    pub(crate) async fn resend(
        &mut self,
        packets: Vec<Unacked>,
    ) -> std::result::Result<(), Failure> {
        if let Some(p) = packets.last() {
            self.seqno = p.seqno + 1;
            self.written = p.end;
        }
        self.unacked
            .lock()
            .expect("not poisoned")
            .extend(packets.iter().cloned());
        for p in packets {
            self.transmit(p).await?;
        }
        Ok(())
    }

    /// What the ack reader saw (it stopped early, so the pipeline failed).
    async fn ack_failure(&mut self) -> Failure {
        match (&mut self.acks).await {
            Ok(Err(f)) => f,
            Ok(Ok(())) => Error::Ipc("pipeline closed".into()).into(),
            Err(e) => Error::Ipc(format!("ack reader failed: {e}")).into(),
        }
    }

    /// Waits until every node has acknowledged every packet sent so far (hflush).
    pub(crate) async fn wait_acked(&mut self) -> std::result::Result<(), Failure> {
        self.wr
            .flush()
            .await
            .map_err(|e| Failure::from(Error::from(e)))?;
        let want = self.written;
        loop {
            if *self.acked.borrow_and_update() >= want {
                return Ok(());
            }
            // The ack reader only stops early when the pipeline has failed.
            if self.acked.changed().await.is_err() {
                return Err(self.ack_failure().await);
            }
        }
    }

    /// After a failure: the packets to send again, and the bytes every node acknowledged.
    pub(crate) fn leftovers(&self) -> (Vec<Unacked>, u64) {
        let q = self.unacked.lock().expect("not poisoned");
        (q.iter().cloned().collect(), *self.acked.borrow())
    }

    /// Sends the empty last packet (unless a resend already did) and waits until every
    /// packet is acknowledged: the replicas are finalized and reported by then.
    pub(crate) async fn finish(&mut self, last_sent: bool) -> std::result::Result<u64, Failure> {
        if !last_sent {
            let h = Header {
                offset_in_block: self.written as i64,
                seqno: self.seqno,
                last: true,
                data_len: 0,
                sync: true,
            };
            self.out.clear();
            packet::encode(&h, &[], &[], &mut self.out);
            let bytes = self.out.split().freeze();
            let p = self.queue(bytes, true);
            self.transmit(p).await?;
        }
        self.wr
            .flush()
            .await
            .map_err(|e| Failure::from(Error::from(e)))?;
        // Closing the queue lets the ack reader finish once it has seen every ack.
        let (closed, _) = mpsc::channel(1);
        drop(std::mem::replace(&mut self.in_flight, closed));
        match (&mut self.acks).await {
            Ok(Ok(())) => Ok(self.written),
            Ok(Err(f)) => Err(f),
            Err(e) => Err(Error::Ipc(format!("ack reader failed: {e}")).into()),
        }
    }
}

/// Reads acks in packet order; each one that every node passed retires its packet.
async fn read_acks(
    mut rd: BufReader<DataIn>,
    mut rx: mpsc::Receiver<i64>,
    unacked: Queue,
    acked: watch::Sender<u64>,
) -> std::result::Result<(), Failure> {
    while let Some(want) = rx.recv().await {
        let ack: PipelineAckProto = tokio::time::timeout(TIMEOUT, read_delimited(&mut rd))
            .await
            .map_err(|_| Failure {
                bad_index: Some(0),
                error: Error::DataNode("no ack from the pipeline".into()),
            })?
            .map_err(|e| {
                // No answer at all: as Java does, blame the first node.
                Failure {
                    bad_index: Some(0),
                    error: e.into(),
                }
            })?;
        if ack.seqno != want {
            return Err(Error::DataNode(format!(
                "ack for packet {} while waiting for {want}",
                ack.seqno
            ))
            .into());
        }
        let statuses: Vec<i32> = if ack.flag.is_empty() {
            ack.reply.clone()
        } else {
            ack.flag.iter().map(|f| (f & 0xf) as i32).collect()
        };
        if let Some(i) = statuses.iter().position(|&s| s != Status::Success as i32) {
            return Err(Failure {
                bad_index: Some(i),
                error: Error::DataNode(format!(
                    "pipeline node {i} answered status {} for packet {want}",
                    statuses[i]
                )),
            });
        }
        let mut q = unacked.lock().expect("not poisoned");
        if let Some(p) = q.pop_front() {
            acked.send_replace(p.end);
        }
    }
    Ok(())
}
