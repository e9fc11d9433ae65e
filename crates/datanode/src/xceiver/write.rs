//! WRITE_BLOCK: one node of a write pipeline. Packets are forwarded to the next node
//! first, then (on the last node) verified, then stored; acks go upstream with one status
//! per node from here to the tail. The last packet finalizes the replica and reports it to
//! the NameNode before it is acked.
//!
//! One task does all of a node's work for one pipeline: it waits for the next packet and
//! for the next node's ack at once (both read into buffers kept across waits, so either
//! wait can be dropped), and on the tail it acks a packet as soon as it is stored. A task
//! of its own for the acks (HDFS's PacketResponder) would cost a wake-up and a queue per
//! packet, which under an hflush after every small record is a large share of the
//! DataNode's work.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use bytes::BytesMut;
use ferrite_blocktoken::Modes;
use ferrite_proto::datanode::received_deleted_block_info_proto::BlockStatus;
use ferrite_proto::hdfs::op_write_block_proto::BlockConstructionStage as Stage;
use ferrite_proto::hdfs::{BlockOpResponseProto, OpWriteBlockProto, PipelineAckProto, Status};
use ferrite_transfer::checksum::{Checksum, Kind};
use ferrite_transfer::io::{decode_delimited, read_delimited, write_delimited, write_op};
use ferrite_transfer::packet::{self, Packet};
use ferrite_transfer::{op, TransferError};
use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio_util::codec::{Decoder, FramedRead};
use tracing::{debug, info, warn};

use super::access::allowed;
use super::{refuse, timed, DataIn, DataOut, Xceiver};
use crate::storage::{RbwFiles, StorageError};

/// Packets up to this size are written on the async worker itself (see `store`).
const SMALL_WRITE: usize = 4096;

/// How long the last packet's ack waits for the NameNode to take the RECEIVED report.
const IBR_WAIT: Duration = Duration::from_secs(10);

/// What each node after this one adds to the wait for the next node's ack (HDFS's
/// `READ_TIMEOUT_EXTENSION`): the node nearest a silent one gives up first and names it,
/// before the nodes (and the writer) upstream of it give up on theirs.
const PER_NODE_AFTER: Duration = Duration::from_secs(5);

/// What this node acks for one packet.
#[derive(Debug, Clone, Copy)]
struct Ack {
    seqno: i64,
    status: Status,
    /// The packet could not be forwarded: report the next node as failed without waiting
    /// for an ack from it, so the client knows which node to drop.
    downstream_lost: bool,
}

impl Ack {
    fn new(seqno: i64, status: Status) -> Ack {
        Ack {
            seqno,
            status,
            downstream_lost: false,
        }
    }

    /// Whether this ack goes upstream only with the next node's ack of the same packet:
    /// a failure here, or a next node already lost, is said at once.
    fn needs_downstream(&self) -> bool {
        self.status == Status::Success && !self.downstream_lost
    }
}

/// What the rest of the pipeline said about a packet.
enum Rest<'a> {
    /// Nothing to add: this is the tail, or this node's own status is a failure.
    Nothing,
    /// The next node's ack of the same packet.
    Said(&'a PipelineAckProto),
    /// The next node failed, sent no ack, or acked another packet.
    Lost,
}

/// The ack sent upstream for one packet: this node's status, then the statuses of the
/// nodes after it (pure, so the rules can be tested without sockets).
fn upstream_ack(a: &Ack, rest: Rest) -> PipelineAckProto {
    let mut replies = vec![a.status as i32];
    if a.downstream_lost {
        replies.push(Status::Error as i32);
    } else {
        match rest {
            Rest::Nothing => {}
            Rest::Said(down) => replies.extend(downstream(down)),
            Rest::Lost => replies.push(Status::Error as i32),
        }
    }
    PipelineAckProto {
        seqno: a.seqno,
        flag: replies.iter().map(|&s| s as u32).collect(),
        reply: replies,
        downstream_ack_time_nanos: Some(0),
    }
}

/// Packets off a stream, whole (see `packet::decode`).
struct PacketFrames {
    max: usize,
}

impl Decoder for PacketFrames {
    type Item = Packet;
    type Error = TransferError;
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Packet>, TransferError> {
        packet::decode(buf, self.max)
    }
}

/// Pipeline acks off a stream, whole.
struct AckFrames;

impl Decoder for AckFrames {
    type Item = PipelineAckProto;
    type Error = TransferError;
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<PipelineAckProto>, TransferError> {
        decode_delimited(buf)
    }
}

type Packets = FramedRead<BufReader<DataIn>, PacketFrames>;
type Acks = FramedRead<BufReader<DataIn>, AckFrames>;

pub(crate) async fn serve(
    x: &Xceiver,
    mut rd: BufReader<DataIn>,
    mut wr: DataOut,
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
    let (mirror_acks, mirror) = match mirror {
        // Only a client's pipeline reads the next node's acks; a transfer's next node
        // sends none.
        Some((r, w)) => (acked.then(|| FramedRead::new(r, AckFrames)), Some(w)),
        None => (None, None),
    };
    let (up, mut answer_to) = if acked {
        (Some(wr), None)
    } else {
        (None, Some(wr))
    };
    let mut packets = FramedRead::new(
        rd,
        PacketFrames {
            max: x.cfg.max_packet,
        },
    );
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
        mirror,
        mirror_acks,
        up,
        waiting: VecDeque::new(),
        clocks: Clocks::new(x.cfg.socket_timeout, op.targets.len(), Instant::now()),
    };
    let outcome = rx.run(&mut packets).await;
    let written = rx.written;
    let rx_storage = rx.storage_uuid.clone();
    if let Some(up) = rx.up.as_mut() {
        let _ = up.shutdown().await;
    }
    // Dropping half-closes the mirror (no more packets).
    drop(rx);
    if acked && matches!(outcome, Ok(false)) {
        // An error ack went upstream. Leave the connection for the writer to close, as
        // HDFS's DataNode does: closed here with its packets unread, it would be reset,
        // and a writer that meets the reset before it reads the ack blames this node
        // (hdfs-native then stalls when this is its first node) rather than the one the
        // ack names.
        drain(packets.get_mut(), x.cfg.socket_timeout).await;
    }
    if let (Some(up), true) = (answer_to.as_mut(), from_client && kind.is_transfer) {
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
    if !from_client && stage == Stage::PipelineSetupCreate && !matches!(outcome, Ok(true)) {
        // A replication copy that did not finish is of no use to anyone (HDFS keeps such
        // copies as temporary replicas for the same reason): it goes, and the NameNode,
        // told it was being received, hears that it is gone.
        if matches!(
            x.ds.off_thread(move |ds| ds.invalidate(id, gs)).await,
            Ok(true)
        ) {
            drop(
                x.link
                    .report_block(&rx_storage, id, gs, 0, BlockStatus::Deleted),
            );
        }
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
        ds.blocking(|| ds.append(id, old, gs, len, bs))
            .map(|(f, len, c)| (Some(f), len, c, gs))
    } else if kind.recovering {
        let gs = op.latest_generation_stamp;
        ds.blocking(|| ds.recover(id, gs, op.min_bytes_rcvd, x.cfg.block_size))
            .map(|(f, len, c)| (f, len, c, gs))
    } else {
        let Some(c) = requested_checksum(op) else {
            let msg = format!("unsupported checksum {:?}", op.requested_checksum);
            return Err((Status::ErrorInvalid, msg));
        };
        let gs = blk.generation_stamp;
        let ty = op.storage_type.and_then(|t| u8::try_from(t).ok());
        ds.blocking(|| ds.create_rbw_on(id, gs, &c, promise, ty))
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
async fn drain(rd: &mut BufReader<DataIn>, idle: Duration) {
    let mut buf = vec![0u8; 64 << 10];
    while let Ok(Ok(n)) = tokio::time::timeout(idle, rd.read(&mut buf)).await {
        if n == 0 {
            break;
        }
    }
}

/// One node's work for one block write: packets in, forwarded, stored; acks out.
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
    /// Packets go on to the next node here.
    mirror: Option<DataOut>,
    /// The next node's acks (a client's pipeline with a next node).
    mirror_acks: Option<Acks>,
    /// Where acks go: a client's pipeline only (transfers get none).
    up: Option<DataOut>,
    /// Acks not yet sent, in packet order: the first waits for the next node's ack of
    /// its packet; a failure queued behind it waits its turn.
    waiting: VecDeque<Ack>,
    /// Each peer answers to the socket timeout on its own clock: the writer from its last
    /// packet, the next node from when the oldest waiting packet began to wait for it (so
    /// a silent next node is caught while the writer's packets, or its heartbeats, still
    /// come in).
    clocks: Clocks,
}

/// When each side of a pipeline node last gave it something (pure; `now` is passed in).
struct Clocks {
    /// For the writer's (or the previous node's) packets.
    timeout: Duration,
    /// For the next node's acks: longer by `PER_NODE_AFTER` for each node after this one.
    next_timeout: Duration,
    last_packet: Instant,
    /// When the oldest waiting packet began to wait for the next node: the later of its
    /// own arrival and the next node's last ack.
    waiting_since: Option<Instant>,
}

/// Which peer has been silent past the timeout.
#[derive(Debug, PartialEq, Eq)]
enum Silent {
    Writer,
    NextNode,
}

impl Clocks {
    /// `after`: how many nodes follow this one in the pipeline.
    fn new(timeout: Duration, after: usize, now: Instant) -> Clocks {
        Clocks {
            timeout,
            next_timeout: timeout + PER_NODE_AFTER * after as u32,
            last_packet: now,
            waiting_since: None,
        }
    }

    /// The next moment one of the two may run out: when to look again (a full timeout
    /// from `now` when neither clock runs).
    fn deadline(&self, now: Instant, receiving: bool) -> Instant {
        let writer = receiving.then_some(self.last_packet + self.timeout);
        let next = self.waiting_since.map(|t| t + self.next_timeout);
        match (writer, next) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(now + self.timeout),
        }
    }

    /// Who is silent at `now`, if anyone; the next node first (its silence is what a
    /// writer waiting for acks needs named).
    fn silent(&self, now: Instant, receiving: bool) -> Option<Silent> {
        if self
            .waiting_since
            .is_some_and(|t| now.duration_since(t) >= self.next_timeout)
        {
            return Some(Silent::NextNode);
        }
        (receiving && now.duration_since(self.last_packet) >= self.timeout)
            .then_some(Silent::Writer)
    }
}

/// What one packet did to the write.
enum Step {
    More,
    /// The last packet is stored and its ack queued.
    Last,
    /// A failure's ack is queued (or nothing is acked any more): store nothing more.
    Failed,
}

impl Receive<'_> {
    /// Returns Ok(true) once the last packet is stored and every ack sent, Ok(false) after
    /// an error ack (this node's, or one passed up from downstream) or when acks can no
    /// longer be sent.
    async fn run(&mut self, packets: &mut Packets) -> Result<bool, TransferError> {
        let mut receiving = true;
        let mut outcome = true;
        let first = self.clocks.deadline(Instant::now(), receiving);
        let timer = tokio::time::sleep_until(first);
        tokio::pin!(timer);
        loop {
            if !receiving && self.waiting.is_empty() {
                return Ok(outcome);
            }
            let awaiting_ack = self.front_waits();
            tokio::select! {
                // An ack frees the oldest packet: take it before more packets.
                biased;
                down = next_ack(&mut self.mirror_acks), if awaiting_ack => {
                    if !self.downstream_acked(down).await {
                        return Ok(false);
                    }
                }
                pkt = packets.next(), if receiving => {
                    self.clocks.last_packet = Instant::now();
                    let pkt = match pkt {
                        Some(p) => p?,
                        None => {
                            let eof = std::io::ErrorKind::UnexpectedEof;
                            return Err(std::io::Error::from(eof).into());
                        }
                    };
                    match self.receive(pkt).await {
                        Step::More => {}
                        Step::Last => receiving = false,
                        Step::Failed => (receiving, outcome) = (false, false),
                    }
                    if !self.send_ready().await {
                        return Ok(false);
                    }
                }
                () = &mut timer => {
                    let now = Instant::now();
                    match self.clocks.silent(now, receiving) {
                        None => {
                            // Not yet: each clock moved since the timer was set.
                            let next = self.clocks.deadline(now, receiving);
                            timer.as_mut().reset(next);
                        }
                        Some(Silent::NextNode) => {
                            debug!(block = self.id, "no ack from downstream");
                            self.downstream_acked(None).await;
                            return Ok(false);
                        }
                        Some(Silent::Writer) => {
                            let t = self.clocks.timeout;
                            return Err(TransferError::Io(std::io::Error::new(
                                std::io::ErrorKind::TimedOut,
                                format!("no data from the peer for {t:?}"),
                            )));
                        }
                    }
                }
            }
            self.note_waiting();
        }
    }

    /// Starts the next node's clock when a packet begins to wait for it, and stops it
    /// when none does.
    fn note_waiting(&mut self) {
        match (self.front_waits(), self.clocks.waiting_since) {
            (true, None) => self.clocks.waiting_since = Some(Instant::now()),
            (false, Some(_)) => self.clocks.waiting_since = None,
            _ => {}
        }
    }

    /// Forwards, checks and stores one packet and queues its ack.
    async fn receive(&mut self, pkt: Packet) -> Step {
        let x = self.x;
        let h = pkt.header;
        if let Some(m) = self.mirror.as_mut() {
            if let Err(e) = m.write_all(&pkt.raw).await {
                // As HDFS's DataNode: the next node is gone. Say so in this packet's ack
                // (closing without one would leave the client guessing which node
                // failed), and stop; the client recovers the pipeline without it.
                warn!(block = self.id, error = %e, "pipeline: next DataNode lost");
                self.queue(Ack {
                    downstream_lost: true,
                    ..Ack::new(h.seqno, Status::Success)
                });
                return Step::Failed;
            }
        }
        if h.is_heartbeat() {
            return self.queue(Ack::new(h.seqno, Status::Success));
        }
        let stored = match self.files.as_ref() {
            Some(f) => store(x, f, &pkt, self.written, self.is_tail, &self.checksum),
            None if pkt.data.is_empty() => Ok(()),
            None => Err(Status::ErrorInvalid), // data for a finalized replica
        };
        if let Err(st) = stored {
            self.queue(Ack::new(h.seqno, st));
            return Step::Failed;
        }
        self.written = self
            .written
            .max(h.offset_in_block as u64 + h.data_len as u64);
        x.ds.set_len(self.id, self.written);
        if !h.last {
            return self.queue(Ack::new(h.seqno, Status::Success));
        }
        let status = self.finish().await;
        self.queue(Ack::new(h.seqno, status));
        if status == Status::Success {
            Step::Last
        } else {
            Step::Failed
        }
    }

    /// Queues a packet's ack (a transfer's are dropped: nobody reads them).
    fn queue(&mut self, ack: Ack) -> Step {
        if self.up.is_some() {
            self.waiting.push_back(ack);
        }
        if ack.status == Status::Success {
            Step::More
        } else {
            Step::Failed
        }
    }

    /// Whether `ack` waits for the next node's ack of its packet.
    fn waits(&self, ack: &Ack) -> bool {
        self.mirror_acks.is_some() && ack.needs_downstream()
    }

    /// Whether the oldest unsent ack waits for the next node.
    fn front_waits(&self) -> bool {
        self.waiting.front().is_some_and(|a| self.waits(a))
    }

    /// Sends the queued acks that need nothing from downstream, in order. False once an
    /// ack saying a failure has gone, or acks can no longer be sent.
    async fn send_ready(&mut self) -> bool {
        while let Some(a) = self.waiting.front().copied() {
            if self.waits(&a) {
                break;
            }
            self.waiting.pop_front();
            if !self.send_up(&a, Rest::Nothing).await {
                return false;
            }
        }
        true
    }

    /// The next node's answer (`None`: none came) for the oldest waiting packet: its
    /// ack goes up, then whatever queued behind it is ready.
    async fn downstream_acked(
        &mut self,
        down: Option<Result<PipelineAckProto, TransferError>>,
    ) -> bool {
        let Some(a) = self.waiting.pop_front() else {
            return false;
        };
        // The next waiting packet waits from now (the next node just answered).
        self.clocks.waiting_since = None;
        let rest = match &down {
            Some(Ok(d)) if d.seqno == a.seqno => Rest::Said(d),
            Some(Ok(d)) => {
                warn!(want = a.seqno, got = d.seqno, "downstream ack out of order");
                Rest::Lost
            }
            Some(Err(e)) => {
                debug!(error = %e, "no ack from downstream");
                Rest::Lost
            }
            None => Rest::Lost,
        };
        self.send_up(&a, rest).await && self.send_ready().await
    }

    /// Sends one ack upstream. False if it says a failure, or could not be sent: either
    /// way the write is over.
    async fn send_up(&mut self, a: &Ack, rest: Rest<'_>) -> bool {
        let ack = upstream_ack(a, rest);
        let failed = ack.reply.iter().any(|&s| s != Status::Success as i32);
        let Some(up) = self.up.as_mut() else {
            return !failed;
        };
        write_delimited(up, &ack).await.is_ok() && !failed
    }

    /// The last packet: finalize (or, for TRANSFER_RBW, keep the replica unfinished for
    /// the recovered pipeline) and report it before it is acked.
    async fn finish(&mut self) -> Status {
        let (id, len) = (self.id, self.written);
        if let Some(f) = self.files.take() {
            let ds = self.x.ds.clone();
            if let Err(e) = ds.blocking(|| f.truncate(len, &self.checksum)) {
                warn!(block = id, error = %e, "truncate failed");
                return Status::Error;
            }
            if self.stage == Stage::TransferRbw {
                return Status::Success;
            }
            if let Err(e) = ds.blocking(|| ds.finalize(f, len)) {
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

type Mirror = (BufReader<DataIn>, DataOut);

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
    let addr = x.link.peer_xfer_addr(&next.id);
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
    let r = if small { write() } else { x.ds.blocking(write) };
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
    let r = x.ds.blocking(|| {
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
    let stream = tokio::time::timeout(x.cfg.socket_timeout, x.link.dialer().dial(addr))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))??;
    let (r, mut w) = (stream.read, stream.write);
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

/// The next node's next ack; `None` when it has closed (or there is none).
async fn next_ack(acks: &mut Option<Acks>) -> Option<Result<PipelineAckProto, TransferError>> {
    acks.as_mut()?.next().await
}

/// The per-node statuses of a downstream ack (from `flag` when present, as Java reads it).
fn downstream(a: &PipelineAckProto) -> Vec<i32> {
    if !a.flag.is_empty() {
        a.flag.iter().map(|f| (f & 0xf) as i32).collect()
    } else {
        a.reply.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: i32 = Status::Success as i32;
    const ERR: i32 = Status::Error as i32;

    #[test]
    fn an_ack_names_this_node_then_every_node_after_it() {
        let ok = Ack::new(7, Status::Success);
        let tail = upstream_ack(&ok, Rest::Nothing);
        assert_eq!((tail.seqno, tail.reply.clone()), (7, vec![OK]));
        assert_eq!(tail.flag, vec![OK as u32]);
        // Java's flags carry more than the status in their high bits: only the low four
        // are the status.
        let down = PipelineAckProto {
            seqno: 7,
            reply: vec![OK, OK],
            flag: vec![0x10 | OK as u32, OK as u32],
            downstream_ack_time_nanos: None,
        };
        assert_eq!(upstream_ack(&ok, Rest::Said(&down)).reply, vec![OK, OK, OK]);
        assert_eq!(upstream_ack(&ok, Rest::Lost).reply, vec![OK, ERR]);
    }

    #[test]
    fn a_failure_here_or_a_lost_next_node_is_said_without_waiting() {
        let bad = Ack::new(3, Status::ErrorChecksum);
        assert!(!bad.needs_downstream());
        assert_eq!(
            upstream_ack(&bad, Rest::Nothing).reply,
            vec![Status::ErrorChecksum as i32]
        );
        let lost = Ack {
            downstream_lost: true,
            ..Ack::new(4, Status::Success)
        };
        assert!(!lost.needs_downstream());
        assert_eq!(upstream_ack(&lost, Rest::Nothing).reply, vec![OK, ERR]);
        assert!(Ack::new(5, Status::Success).needs_downstream());
    }

    #[test]
    fn a_silent_next_node_is_named_while_the_writer_still_sends() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        // One node after this one: its acks get 60 + 5 s.
        let mut c = Clocks::new(s(60), 1, t0);
        assert_eq!(c.silent(t0 + s(59), true), None);
        assert_eq!(c.silent(t0 + s(60), true), Some(Silent::Writer));
        // Once the pipeline's last packet is in, the writer owes nothing.
        assert_eq!(c.silent(t0 + s(60), false), None);
        // A packet starts waiting for the next node at 10 s; the writer's heartbeats keep
        // its own clock fresh, but the next node's runs on.
        c.waiting_since = Some(t0 + s(10));
        c.last_packet = t0 + s(70);
        assert_eq!(c.deadline(t0, true), t0 + s(75));
        assert_eq!(c.silent(t0 + s(74), true), None);
        assert_eq!(c.silent(t0 + s(75), true), Some(Silent::NextNode));
        c.waiting_since = None;
        assert_eq!(c.deadline(t0, true), t0 + s(130));
        assert_eq!(c.silent(t0 + s(75), true), None);
        assert_eq!(c.deadline(t0 + s(200), false), t0 + s(260));
    }

    #[test]
    fn the_node_nearest_a_silent_one_gives_up_first() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        // A three-node pipeline whose tail stops answering: the packet waits at the head
        // and the middle from (about) the same moment.
        let head = Clocks {
            waiting_since: Some(t0),
            ..Clocks::new(s(3), 2, t0)
        };
        let middle = Clocks {
            waiting_since: Some(t0),
            ..Clocks::new(s(3), 1, t0)
        };
        assert_eq!(middle.deadline(t0, false), t0 + s(8));
        assert_eq!(head.deadline(t0, false), t0 + s(13));
        assert_eq!(middle.silent(t0 + s(8), false), Some(Silent::NextNode));
        assert_eq!(head.silent(t0 + s(8), false), None);
    }
}
