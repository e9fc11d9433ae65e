//! WRITE_BLOCK: one node of a write pipeline. Packets are forwarded to the next node
//! first, then (on the last node) verified, then stored; a responder passes acks upstream
//! with one status per node from here to the tail. The last packet finalizes the replica
//! and reports it to the NameNode before it is acked.

use std::time::Duration;

use ferrite_blocktoken::Modes;
use ferrite_proto::datanode::received_deleted_block_info_proto::BlockStatus;
use ferrite_proto::hdfs::op_write_block_proto::BlockConstructionStage as Stage;
use ferrite_proto::hdfs::{BlockOpResponseProto, OpWriteBlockProto, PipelineAckProto, Status};
use ferrite_transfer::checksum::{Checksum, Kind};
use ferrite_transfer::io::{read_delimited, write_delimited, write_op};
use ferrite_transfer::packet::{self, Packet};
use ferrite_transfer::{op, TransferError};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use super::access::allowed;
use super::{refuse, timed, Xceiver};
use crate::storage::{RbwFiles, StorageError};

/// Packets up to this size are written on the async worker itself (see `store`).
const SMALL_WRITE: usize = 4096;

/// How long the last packet's ack waits for the NameNode to take the RECEIVED report.
const IBR_WAIT: Duration = Duration::from_secs(10);

/// What the responder acks for one packet.
struct Ack {
    seqno: i64,
    status: Status,
    /// The packet could not be forwarded: report the next node as failed without waiting
    /// for an ack from it, so the client knows which node to drop.
    downstream_lost: bool,
}

pub async fn serve(
    x: &Xceiver,
    mut rd: BufReader<OwnedReadHalf>,
    mut wr: OwnedWriteHalf,
) -> Result<(), TransferError> {
    let op: OpWriteBlockProto = timed(x.cfg.socket_timeout, read_delimited(&mut rd)).await?;
    let blk = op.header.base_header.block.clone();
    let token = op.header.base_header.token.as_ref();
    let me = Some(x.link.xfer_addr());
    if !allowed(x, &mut wr, "WRITE_BLOCK", &blk, token, Modes::WRITE, me).await {
        return Ok(());
    }
    let from_client = !op.header.client_name.is_empty();
    let stage = Stage::try_from(op.stage).unwrap_or(Stage::DataStreaming);
    let Some(kind) = WriteKind::of(stage) else {
        let msg = format!("write stage {stage:?} is not supported");
        refuse(&mut wr, Status::ErrorUnsupported, &msg).await;
        return Ok(());
    };
    // Only a client's own pipeline gets a setup answer and per-packet acks; transfers
    // (replication, and TRANSFER_BLOCK's copies) do not.
    let acked = from_client && !kind.is_transfer;
    let id = blk.block_id;
    let (files, written, checksum, gs) = match open_replica(x, &op, stage, kind) {
        Ok(v) => v,
        Err((status, msg)) => {
            refuse(&mut wr, status, &msg).await;
            return Ok(());
        }
    };
    let volume = x.ds.get(id).map(|r| r.volume).unwrap_or(0);
    let storage_uuid = x.ds.volumes[volume].storage_uuid.clone();
    drop(
        x.link
            .report_block(&storage_uuid, id, gs, written, BlockStatus::Receiving),
    );

    let (mirror, status, first_bad_link) = setup_mirror(x, &op, acked).await;
    if acked {
        let resp = BlockOpResponseProto {
            status: status as i32,
            first_bad_link: Some(first_bad_link),
            ..Default::default()
        };
        write_delimited(&mut wr, &resp).await?;
    }
    if status != Status::Success {
        return Ok(());
    }
    let (mirror_rd, mirror_wr) = match mirror {
        Some((r, w)) => (Some(r), Some(w)),
        None => (None, None),
    };
    let (ack_tx, ack_rx) = mpsc::channel::<Ack>(1024);
    let mut upstream = Some(wr);
    let responder = acked.then(|| {
        let up = upstream.take().expect("not taken yet");
        tokio::spawn(respond(ack_rx, mirror_rd, up, x.cfg.socket_timeout))
    });
    let mut rx = Receive {
        x,
        id,
        gs,
        stage,
        files,
        written,
        checksum,
        storage_uuid,
        is_tail: op.targets.is_empty(),
        mirror: mirror_wr,
        acks: ack_tx,
        acked,
    };
    let outcome = rx.run(&mut rd).await;
    let written = rx.written;
    // Dropping closes the ack queue and half-closes the mirror (no more packets).
    drop(rx);
    if let Some(r) = responder {
        let _ = r.await;
    }
    if acked && matches!(outcome, Ok(false)) {
        // An error ack went upstream. Leave the connection for the writer to close, as
        // HDFS's DataNode does: closed here with its packets unread, it would be reset,
        // and a writer that meets the reset before it reads the ack blames this node
        // (hdfs-native then stalls when this is its first node) rather than the one the
        // ack names.
        drain(&mut rd, x.cfg.socket_timeout).await;
    }
    if let (Some(up), true) = (upstream.as_mut(), from_client && kind.is_transfer) {
        // TRANSFER_BLOCK's copy: one answer once everything is stored.
        let status = if matches!(outcome, Ok(true)) {
            Status::Success
        } else {
            Status::Error
        };
        let resp = BlockOpResponseProto {
            status: status as i32,
            ..Default::default()
        };
        let _ = write_delimited(up, &resp).await;
    }
    match outcome {
        Ok(true) => debug!(block = id, bytes = written, ?stage, "replica received"),
        Ok(false) => {}
        // The writer went away mid-block: the replica stays unfinished (never finalized)
        // until the NameNode decides its fate.
        Err(e) => {
            info!(block = id, bytes = written, error = %e, "write ended before the last packet")
        }
    }
    Ok(())
}

/// What a write stage asks of this node.
#[derive(Clone, Copy)]
struct WriteKind {
    /// Pipeline recovery: the replica this node had, under a new stamp.
    recovering: bool,
    /// A closed file's last block reopened.
    appending: bool,
    /// Replication or TRANSFER_BLOCK's copy, not a client's pipeline.
    is_transfer: bool,
}

impl WriteKind {
    /// `None` for a stage this DataNode does not serve.
    fn of(stage: Stage) -> Option<WriteKind> {
        let recovering = matches!(
            stage,
            Stage::PipelineSetupStreamingRecovery
                | Stage::PipelineCloseRecovery
                | Stage::PipelineSetupAppendRecovery
        );
        let appending = stage == Stage::PipelineSetupAppend;
        let is_transfer = matches!(stage, Stage::TransferRbw | Stage::TransferFinalized);
        (recovering || appending || is_transfer || stage == Stage::PipelineSetupCreate).then_some(
            WriteKind {
                recovering,
                appending,
                is_transfer,
            },
        )
    }
}

/// A replica opened for a write: its files, the bytes already in it, its checksum, its
/// generation stamp.
type Opened = (Option<RbwFiles>, u64, Checksum, u64);

/// The replica a write goes to, opened for writing: (its files, bytes already in it, its
/// checksum, its generation stamp). A new replica; or (pipeline recovery) the one this
/// node had, under the new stamp and cut back to what every node acknowledged, `files`
/// being None when it was already finalized (the failure came while closing); or (append)
/// the finalized replica reopened. A refusal carries the status and message to answer.
fn open_replica(
    x: &Xceiver,
    op: &OpWriteBlockProto,
    stage: Stage,
    kind: WriteKind,
) -> Result<Opened, (Status, String)> {
    let ds = &x.ds;
    let blk = &op.header.base_header.block;
    let id = blk.block_id;
    // The room a new replica is promised: the block's length when the sender gives one (a
    // copy), else a whole block of the configured size, as HDFS's DataNodes do. A replica
    // resumed by recovery is promised the rest of a configured block.
    let promise = blk.num_bytes.filter(|&n| n > 0).unwrap_or(x.cfg.block_size);
    let append_again = kind.recovering
        && stage == Stage::PipelineSetupAppendRecovery
        && ds
            .get(id)
            .is_some_and(|r| r.state == crate::storage::State::Finalized);
    let opened = if kind.appending || append_again {
        // Java bumps the stamp first and names the new one; hdfs-native keeps the block's.
        let gs = match op.latest_generation_stamp {
            0 => blk.generation_stamp,
            gs => gs,
        };
        let (old, len) = (blk.generation_stamp, op.min_bytes_rcvd);
        let bs = x.cfg.block_size;
        let old = if append_again {
            ds.get(id).map_or(old, |r| r.gs)
        } else {
            old
        };
        tokio::task::block_in_place(|| ds.append(id, old, gs, len, bs))
            .map(|(f, len, c)| (Some(f), len, c, gs))
    } else if kind.recovering {
        let gs = op.latest_generation_stamp;
        tokio::task::block_in_place(|| ds.recover(id, gs, op.min_bytes_rcvd, x.cfg.block_size))
            .map(|(f, len, c)| (f, len, c, gs))
    } else {
        let Some(c) = requested_checksum(op) else {
            let msg = format!("unsupported checksum {:?}", op.requested_checksum);
            return Err((Status::ErrorInvalid, msg));
        };
        let gs = blk.generation_stamp;
        let ty = op.storage_type.and_then(|t| u8::try_from(t).ok());
        tokio::task::block_in_place(|| ds.create_rbw_on(id, gs, &c, promise, ty))
            .map(|f| (Some(f), 0, c, gs))
    };
    opened.map_err(|e| {
        let status = match e {
            StorageError::Exists(_) => Status::ErrorExists,
            _ => Status::Error,
        };
        (status, e.to_string())
    })
}

/// Reads and drops whatever the peer still sends until it closes, fails, or is silent for
/// `idle`.
async fn drain(rd: &mut BufReader<OwnedReadHalf>, idle: Duration) {
    let mut buf = vec![0u8; 64 << 10];
    while let Ok(Ok(n)) = tokio::time::timeout(idle, rd.read(&mut buf)).await {
        if n == 0 {
            break;
        }
    }
}

/// The receiving side of one block write: packets in, stored, forwarded, acks queued.
struct Receive<'a> {
    x: &'a Xceiver,
    id: u64,
    gs: u64,
    stage: Stage,
    /// None for a replica that was already finalized (close recovery).
    files: Option<RbwFiles>,
    written: u64,
    checksum: Checksum,
    storage_uuid: String,
    is_tail: bool,
    mirror: Option<OwnedWriteHalf>,
    acks: mpsc::Sender<Ack>,
    /// A client's pipeline, whose acks a responder sends upstream.
    acked: bool,
}

impl Receive<'_> {
    /// Queues an ack; false once the responder has stopped after sending an error upstream
    /// (a transfer has no responder, and always gets true).
    async fn ack(&self, seqno: i64, status: Status) -> bool {
        let ack = Ack {
            seqno,
            status,
            downstream_lost: false,
        };
        self.acks.send(ack).await.is_ok() || !self.acked
    }

    /// Returns Ok(true) once the last packet is stored, Ok(false) after an error ack (this
    /// node's, or one the responder passed up from downstream).
    async fn run(&mut self, rd: &mut BufReader<OwnedReadHalf>) -> Result<bool, TransferError> {
        let x = self.x;
        loop {
            let pkt = timed(x.cfg.socket_timeout, packet::read(rd, x.cfg.max_packet)).await?;
            let h = pkt.header;
            if let Some(m) = self.mirror.as_mut() {
                if let Err(e) = m.write_all(&pkt.raw).await {
                    // As HDFS's DataNode: the next node is gone. Say so in this packet's
                    // ack (closing without one would leave the client guessing which node
                    // failed), and stop; the client recovers the pipeline without it.
                    warn!(block = self.id, error = %e, "pipeline: next DataNode lost");
                    let lost = Ack {
                        seqno: h.seqno,
                        status: Status::Success,
                        downstream_lost: true,
                    };
                    let _ = self.acks.send(lost).await;
                    return Ok(false);
                }
            }
            // Once the pipeline has failed (the responder sent an error ack and stopped),
            // nothing more is stored: the writer is about to recover the replica, and must
            // not find this node still writing to it.
            if h.is_heartbeat() {
                if !self.ack(h.seqno, Status::Success).await {
                    return Ok(false);
                }
                continue;
            }
            let stored = match self.files.as_ref() {
                Some(f) => store(x, f, &pkt, self.written, self.is_tail, &self.checksum),
                None if pkt.data.is_empty() => Ok(()),
                None => Err(Status::ErrorInvalid), // data for a finalized replica
            };
            if let Err(st) = stored {
                self.ack(h.seqno, st).await;
                return Ok(false);
            }
            self.written = self
                .written
                .max(h.offset_in_block as u64 + h.data_len as u64);
            x.ds.set_len(self.id, self.written);
            if !h.last {
                if !self.ack(h.seqno, Status::Success).await {
                    return Ok(false);
                }
                continue;
            }
            let status = self.finish().await;
            self.ack(h.seqno, status).await;
            return Ok(status == Status::Success);
        }
    }

    /// The last packet: finalize (or, for TRANSFER_RBW, keep the replica unfinished for
    /// the recovered pipeline) and report it before it is acked.
    async fn finish(&mut self) -> Status {
        let (id, len) = (self.id, self.written);
        if let Some(f) = self.files.take() {
            if let Err(e) = f_truncate(&f, len, &self.checksum) {
                warn!(block = id, error = %e, "truncate failed");
                return Status::Error;
            }
            if self.stage == Stage::TransferRbw {
                return Status::Success;
            }
            let ds = self.x.ds.clone();
            if let Err(e) = tokio::task::block_in_place(|| ds.finalize(f, len)) {
                warn!(block = id, error = %e, "finalize failed");
                return Status::Error;
            }
        }
        let done =
            self.x
                .link
                .report_block(&self.storage_uuid, id, self.gs, len, BlockStatus::Received);
        if tokio::time::timeout(IBR_WAIT, done).await.is_err() {
            warn!(
                block = id,
                "NameNode slow to take the RECEIVED report; acking anyway"
            );
        }
        Status::Success
    }
}

type Mirror = (BufReader<OwnedReadHalf>, OwnedWriteHalf);

/// Sets up the rest of the pipeline before this node answers: the mirror connection, and
/// the status (with the first node that failed) to pass upstream.
async fn setup_mirror(
    x: &Xceiver,
    op: &OpWriteBlockProto,
    acked: bool,
) -> (Option<Mirror>, Status, String) {
    let Some(next) = op.targets.first() else {
        return (None, Status::Success, String::new());
    };
    let addr = format!("{}:{}", next.id.ip_addr, next.id.xfer_port);
    match connect_mirror(x, op, &addr, acked).await {
        Ok((m, Some(resp))) if resp.status != Status::Success as i32 => {
            let status = Status::try_from(resp.status).unwrap_or(Status::Error);
            let bad = resp
                .first_bad_link
                .filter(|b| !b.is_empty())
                .unwrap_or(addr);
            (Some(m), status, bad)
        }
        Ok((m, _)) => (Some(m), Status::Success, String::new()),
        Err(e) => {
            warn!(%addr, error = %e, "pipeline: next DataNode unreachable");
            (None, Status::Error, addr)
        }
    }
}

fn f_truncate(f: &RbwFiles, len: u64, c: &Checksum) -> std::io::Result<()> {
    tokio::task::block_in_place(|| f.truncate(len, c))
}

/// The checksum a writer asked for, if we support it.
fn requested_checksum(op: &OpWriteBlockProto) -> Option<Checksum> {
    let rc = &op.requested_checksum;
    let kind = Kind::from_proto(rc.r#type)?;
    (rc.bytes_per_checksum > 0 && rc.bytes_per_checksum <= 1 << 20).then_some(Checksum {
        kind,
        bytes_per_checksum: rc.bytes_per_checksum,
    })
}

/// Checks and stores one data packet. Only the tail verifies checksums, as HDFS does:
/// every byte still crosses a verification before the client hears SUCCESS.
fn store(
    x: &Xceiver,
    files: &RbwFiles,
    pkt: &Packet,
    written: u64,
    is_tail: bool,
    c: &Checksum,
) -> Result<(), Status> {
    let h = pkt.header;
    let offset = h.offset_in_block;
    let bpc = c.bytes_per_checksum as u64;
    if offset < 0 || offset as u64 > written {
        warn!(
            block = files.id,
            offset, written, "packet at an unexpected offset"
        );
        return Err(Status::ErrorInvalid);
    }
    if offset as u64 % bpc != 0 && h.data_len > 0 {
        // An append's first packet finishes the replica's partial last chunk.
        return store_mid_chunk(x, files, pkt, c);
    }
    if pkt.sums.len() != c.chunks(pkt.data.len()) * c.kind.size() {
        warn!(
            block = files.id,
            "packet checksum length does not match its data"
        );
        return Err(Status::ErrorChecksum);
    }
    if is_tail {
        if let Err(chunk) = c.verify(&pkt.data, &pkt.sums) {
            warn!(
                block = files.id,
                offset, chunk, "checksum error in a received packet"
            );
            return Err(Status::ErrorChecksum);
        }
    }
    if pkt.data.is_empty() && !h.sync {
        return Ok(());
    }
    // hsync: the packet is acked only once its bytes (and every earlier one) are on disk.
    let write = || {
        if !pkt.data.is_empty() {
            files.write_at(offset as u64, &pkt.data, &pkt.sums, c)?;
        }
        if h.sync {
            files.sync()?;
        }
        Ok::<_, std::io::Error>(())
    };
    // A small write into the page cache takes a few microseconds; handing the worker's
    // other tasks to another thread around it (block_in_place) costs more than that, and
    // an hflush-heavy writer sends nothing but small packets.
    let small = pkt.data.len() <= SMALL_WRITE && !h.sync;
    let r = if small {
        write()
    } else {
        tokio::task::block_in_place(write)
    };
    if let Err(e) = r {
        warn!(block = files.id, error = %e, "write to disk failed");
        if let Some(rep) = x.ds.get(files.id) {
            let lost = x.ds.check_volume(rep.volume);
            super::read::report_lost(x, &rep, &lost);
        }
        return Err(Status::Error);
    }
    Ok(())
}

/// Stores a packet that starts inside a chunk (an append's first packet, which carries
/// only the bytes that finish the replica's partial last chunk). Its checksums cover its
/// own bytes: every node checks them, since each then computes the whole chunk's checksum
/// afresh from the bytes already stored and these, which verification of the stored
/// chunk alone could not catch.
fn store_mid_chunk(
    x: &Xceiver,
    files: &RbwFiles,
    pkt: &Packet,
    c: &Checksum,
) -> Result<(), Status> {
    let offset = pkt.header.offset_in_block as u64;
    if c.verify(&pkt.data, &pkt.sums).is_err() {
        warn!(
            block = files.id,
            offset, "checksum error in an append's first packet"
        );
        return Err(Status::ErrorChecksum);
    }
    let start = offset - offset % c.bytes_per_checksum as u64;
    let head = (offset - start) as usize;
    let mut whole = vec![0u8; head];
    whole.extend_from_slice(&pkt.data);
    let r = tokio::task::block_in_place(|| {
        files.read_at(start, &mut whole[..head])?;
        let mut sums = Vec::new();
        c.compute_into(&whole, &mut sums);
        files.write_at(start, &whole, &sums, c)?;
        if pkt.header.sync {
            files.sync()?;
        }
        Ok::<_, std::io::Error>(())
    });
    r.map_err(|e| {
        warn!(block = files.id, error = %e, "append to the partial chunk failed");
        if let Some(rep) = x.ds.get(files.id) {
            let lost = x.ds.check_volume(rep.volume);
            super::read::report_lost(x, &rep, &lost);
        }
        Status::Error
    })
}

/// Connects to the next node and sends it the op with itself removed from the targets.
/// For a client's own pipeline (`answered`), also reads its setup answer.
async fn connect_mirror(
    x: &Xceiver,
    op: &OpWriteBlockProto,
    addr: &str,
    answered: bool,
) -> Result<(Mirror, Option<BlockOpResponseProto>), TransferError> {
    let stream = tokio::time::timeout(x.cfg.socket_timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))??;
    stream.set_nodelay(true)?;
    let (r, mut w) = stream.into_split();
    let mut next = op.clone();
    next.targets = op.targets[1..].to_vec();
    next.storage_type = op.target_storage_types.first().copied();
    next.target_storage_types = op.target_storage_types.iter().skip(1).copied().collect();
    next.storage_id = op.target_storage_ids.first().cloned();
    next.target_storage_ids = op.target_storage_ids.iter().skip(1).cloned().collect();
    write_op(&mut w, op::WRITE_BLOCK, &next).await?;
    let mut r = BufReader::new(r);
    let resp = if answered {
        Some(
            timed(
                x.cfg.socket_timeout,
                read_delimited::<BlockOpResponseProto, _>(&mut r),
            )
            .await?,
        )
    } else {
        None
    };
    Ok(((r, w), resp))
}

/// Sends acks upstream in packet order: this node's status, then what the rest of the
/// pipeline said about the same packet.
async fn respond(
    mut acks: mpsc::Receiver<Ack>,
    mut mirror: Option<BufReader<OwnedReadHalf>>,
    mut up: OwnedWriteHalf,
    timeout: Duration,
) {
    while let Some(a) = acks.recv().await {
        let mut replies = vec![a.status as i32];
        if a.downstream_lost {
            replies.push(Status::Error as i32);
        } else if a.status == Status::Success {
            if let Some(m) = mirror.as_mut() {
                match timed(timeout, read_delimited::<PipelineAckProto, _>(m)).await {
                    Ok(down) if down.seqno == a.seqno => replies.extend(downstream(&down)),
                    Ok(down) => {
                        warn!(
                            want = a.seqno,
                            got = down.seqno,
                            "downstream ack out of order"
                        );
                        replies.push(Status::Error as i32);
                    }
                    Err(e) => {
                        debug!(error = %e, "no ack from downstream");
                        replies.push(Status::Error as i32);
                    }
                }
            }
        }
        let failed = replies.iter().any(|&s| s != Status::Success as i32);
        let ack = PipelineAckProto {
            seqno: a.seqno,
            flag: replies.iter().map(|&s| s as u32).collect(),
            reply: replies,
            downstream_ack_time_nanos: Some(0),
        };
        if write_delimited(&mut up, &ack).await.is_err() || failed {
            break;
        }
    }
    let _ = up.shutdown().await;
}

/// The per-node statuses of a downstream ack (from `flag` when present, as Java reads it).
fn downstream(a: &PipelineAckProto) -> Vec<i32> {
    if !a.flag.is_empty() {
        a.flag.iter().map(|f| (f & 0xf) as i32).collect()
    } else {
        a.reply.clone()
    }
}
