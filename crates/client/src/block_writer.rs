//! One block's write pipeline: WRITE_BLOCK to the first DataNode (which forwards to the
//! rest), packets of checksummed data with a bounded window of unacknowledged packets, and
//! an ack reader that checks every node's status for every packet, in order.

use std::time::Duration;

use bytes::BytesMut;
use ferrite_proto::hdfs::op_write_block_proto::BlockConstructionStage as Stage;
use ferrite_proto::hdfs::*;
use ferrite_transfer::checksum::Checksum;
use ferrite_transfer::io::{read_delimited, write_op};
use ferrite_transfer::op;
use ferrite_transfer::packet::{self, Header};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::block_reader::{connect, op_header, xfer_addr};
use crate::error::{Error, Result};

/// Unacknowledged packets allowed in flight (Java's default is 80).
const WINDOW: usize = 80;
const TIMEOUT: Duration = Duration::from_secs(60);

pub struct BlockWriter {
    wr: OwnedWriteHalf,
    in_flight: mpsc::Sender<i64>,
    acks: JoinHandle<Result<()>>,
    checksum: Checksum,
    seqno: i64,
    pub written: u64,
    out: BytesMut,
    sums: Vec<u8>,
}

/// Why a pipeline could not be set up: the node to leave out next time.
#[derive(Debug)]
pub struct SetupFailure {
    pub bad_node: String,
    pub error: Error,
}

impl BlockWriter {
    pub async fn open(
        lb: &LocatedBlockProto,
        client_name: &str,
        checksum: Checksum,
    ) -> std::result::Result<BlockWriter, SetupFailure> {
        let first = lb.locs.first().ok_or_else(|| SetupFailure {
            bad_node: String::new(),
            error: Error::DataNode("addBlock returned no DataNodes".into()),
        })?;
        let addr = xfer_addr(first);
        let fail = |e: Error| SetupFailure {
            bad_node: addr.clone(),
            error: e,
        };
        let (rd, mut wr) = connect(&addr).await.map_err(fail)?.into_split();
        let n = lb.locs.len();
        let op = OpWriteBlockProto {
            header: op_header(lb, client_name),
            targets: lb.locs[1..].to_vec(),
            source: None,
            stage: Stage::PipelineSetupCreate as i32,
            pipeline_size: n as u32,
            min_bytes_rcvd: 0,
            max_bytes_rcvd: 0,
            latest_generation_stamp: lb.b.generation_stamp,
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
        let (tx, mut rx) = mpsc::channel::<i64>(WINDOW);
        let acks = tokio::spawn(async move {
            while let Some(want) = rx.recv().await {
                let ack: PipelineAckProto = tokio::time::timeout(TIMEOUT, read_delimited(&mut rd))
                    .await
                    .map_err(|_| Error::DataNode("no ack from the pipeline".into()))??;
                if ack.seqno != want {
                    return Err(Error::DataNode(format!(
                        "ack for packet {} while waiting for {want}",
                        ack.seqno
                    )));
                }
                let statuses: Vec<i32> = if ack.flag.is_empty() {
                    ack.reply.clone()
                } else {
                    ack.flag.iter().map(|f| (f & 0xf) as i32).collect()
                };
                if let Some(i) = statuses.iter().position(|&s| s != Status::Success as i32) {
                    return Err(Error::DataNode(format!(
                        "pipeline node {i} answered status {} for packet {want}",
                        statuses[i]
                    )));
                }
            }
            Ok(())
        });
        Ok(BlockWriter {
            wr,
            in_flight: tx,
            acks,
            checksum,
            seqno: 0,
            written: 0,
            out: BytesMut::new(),
            sums: Vec::new(),
        })
    }

    /// Sends one packet of data (chunk-aligned except possibly the block's last).
    pub async fn send(&mut self, data: &[u8]) -> Result<()> {
        self.sums.clear();
        self.checksum.compute_into(data, &mut self.sums);
        self.packet(data.len(), false).await?;
        self.out.extend_from_slice(&self.sums);
        self.out.extend_from_slice(data);
        self.flush_packet().await?;
        self.written += data.len() as u64;
        Ok(())
    }

    /// Builds the packet header into `out` (the body is appended by the caller).
    async fn packet(&mut self, data_len: usize, last: bool) -> Result<()> {
        if self.in_flight.send(self.seqno).await.is_err() {
            return Err(self.ack_error().await);
        }
        let h = Header {
            offset_in_block: self.written as i64,
            seqno: self.seqno,
            last,
            data_len: data_len as i32,
            sync: last,
        };
        self.seqno += 1;
        self.out.clear();
        // Header only; `encode` with empty body, then patch PLEN for the real body.
        packet::encode(&h, &[], &[], &mut self.out);
        let plen = 4 + self.sums.len() + data_len;
        self.out[..4].copy_from_slice(&(plen as u32).to_be_bytes());
        Ok(())
    }

    async fn flush_packet(&mut self) -> Result<()> {
        if let Err(e) = self.wr.write_all(&self.out).await {
            let ack = self.ack_error().await;
            return Err(match ack {
                Error::Ipc(_) => e.into(),
                other => other,
            });
        }
        Ok(())
    }

    /// What the ack reader saw (it stopped early, so the pipeline failed).
    async fn ack_error(&mut self) -> Error {
        match (&mut self.acks).await {
            Ok(Err(e)) => e,
            Ok(Ok(())) => Error::Ipc("pipeline closed".into()),
            Err(e) => Error::Ipc(format!("ack reader failed: {e}")),
        }
    }

    /// Sends the empty last packet and waits until every packet is acknowledged (the
    /// replicas are finalized and reported by then).
    pub async fn finish(mut self) -> Result<u64> {
        self.sums.clear();
        self.packet(0, true).await?;
        self.flush_packet().await?;
        self.wr.flush().await?;
        drop(self.in_flight);
        match self.acks.await {
            Ok(Ok(())) => Ok(self.written),
            Ok(Err(e)) => Err(e),
            Err(e) => Err(Error::Ipc(format!("ack reader failed: {e}"))),
        }
    }
}
