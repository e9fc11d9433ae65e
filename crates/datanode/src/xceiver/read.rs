//! READ_BLOCK: a range of a replica as packets of checksums and data, then the reader's
//! status. The connection's task never touches the disk: cached pages go out with
//! sendfile, everything else is read on the volume's I/O pool (see `crate::readserver`).

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::BytesMut;
use ferrite_blocktoken::Modes;
use ferrite_ipc::net::WriteHalf;
use ferrite_proto::hdfs::{
    BlockOpResponseProto, ChecksumProto, ClientReadStatusProto, OpReadBlockProto,
    ReadOpChecksumInfoProto, Status,
};
use ferrite_transfer::checksum::META_HEADER_LEN;
use ferrite_transfer::io::{read_delimited, write_delimited};
use ferrite_transfer::packet::{self, Header};
use ferrite_transfer::TransferError;
use tokio::io::AsyncWriteExt;

use super::access::allowed;
use super::source::Source;
use super::{refuse, timed, Reader, Writer, Xceiver};
use crate::balancing::BalanceThrottle;
use crate::readserver::os;
use crate::storage::{Dataset, Part, Replica};

/// Serves one READ_BLOCK. Returns whether the connection may carry another op.
pub(crate) async fn serve<R: Reader, W: WriteHalf>(
    x: &Xceiver,
    rd: &mut R,
    wr: &mut W,
) -> Result<bool, TransferError> {
    let op: OpReadBlockProto = timed(x.cfg.socket_timeout, read_delimited(rd)).await?;
    let blk = &op.header.base_header.block;
    let token = op.header.base_header.token.as_ref();
    if !allowed(x, wr, "READ_BLOCK", blk, token, Modes::READ, None).await {
        return Ok(false);
    }
    let replica = match x.ds.get(blk.block_id) {
        Some(r) if r.gs >= blk.generation_stamp => r,
        _ => {
            let msg = format!(
                "Replica not found for BP-{}:blk_{}_{}",
                blk.pool_id, blk.block_id, blk.generation_stamp
            );
            refuse(wr, Status::Error, &msg).await;
            return Ok(false);
        }
    };
    let Some(visible) = replica.readable_len() else {
        // As HDFS's BlockSender refuses it.
        let msg = format!(
            "Replica is not readable, block=blk_{}_{} (waiting to be recovered)",
            blk.block_id, replica.gs
        );
        refuse(wr, Status::Error, &msg).await;
        return Ok(false);
    };
    if op.offset > visible || op.offset.saturating_add(op.len) > visible {
        let msg = format!(
            "Offset {} and length {} don't match block blk_{} ( blockLen {visible} )",
            op.offset, op.len, blk.block_id
        );
        refuse(wr, Status::ErrorInvalid, &msg).await;
        return Ok(false);
    }
    let h = match Source::open(&x.ds, &replica).await {
        Ok(h) => h,
        Err(e) => {
            let lost = x.ds.check_volume(replica.volume);
            report_lost(x, &replica, &lost);
            refuse(
                wr,
                Status::Error,
                &format!("cannot open blk_{}: {e}", blk.block_id),
            )
            .await;
            return Ok(false);
        }
    };
    let checksum = h.checksum();
    let bpc = checksum.bytes_per_checksum as u64;
    let chunk_offset = op.offset - op.offset % bpc;
    let end = (op.offset + op.len)
        .div_ceil(bpc)
        .saturating_mul(bpc)
        .min(visible);
    let resp = BlockOpResponseProto {
        status: Status::Success as i32,
        read_op_checksum_info: Some(ReadOpChecksumInfoProto {
            checksum: ChecksumProto {
                r#type: checksum.kind.to_proto(),
                bytes_per_checksum: checksum.bytes_per_checksum,
            },
            chunk_offset,
        }),
        ..Default::default()
    };
    write_delimited(wr, &resp).await?;
    let per_packet = (x.cfg.read_packet_bytes as u64 / bpc).max(1) * bpc;
    let with_sums = op.send_checksums.unwrap_or(true);
    let stats = &x.ds.reads().stats;
    stats.reads.fetch_add(1, Ordering::Relaxed);
    stats.active.fetch_add(1, Ordering::Relaxed);
    let range = Range {
        from: chunk_offset,
        to: end,
        per_packet,
        with_sums,
    };
    let sent = stream(x, wr, &h, range).await;
    stats.active.fetch_sub(1, Ordering::Relaxed);
    sent?;
    // The reader says whether the checksums matched; without it the connection is over.
    match timed(
        x.cfg.socket_timeout,
        read_delimited::<ClientReadStatusProto, _>(rd),
    )
    .await
    {
        Ok(st) => Ok(st.status == Status::ChecksumOk as i32 || st.status == Status::Success as i32),
        Err(_) => Ok(false),
    }
}

/// What to send: `[from, to)` (`from` chunk-aligned) in packets of `per_packet` data bytes.
#[derive(Clone, Copy)]
pub(crate) struct Range {
    pub from: u64,
    pub to: u64,
    pub per_packet: u64,
    pub with_sums: bool,
}

/// Data bytes per packet when it must be read into a buffer (see `stream`).
const COPY_PACKET: u64 = 128 << 10;

/// A packet's checksums and, when it goes out by copy, its data, read into buffers that
/// travel to the volume's I/O thread and back (so they are reused, not reallocated).
struct Bufs {
    data: Vec<u8>,
    sums: Vec<u8>,
}

/// Reads a packet's `n` data bytes at `pos` and its `sum_len` checksum bytes at `sum_at`
/// into `b` (a disk replica's on the volume's I/O pool), and hands the buffers back.
async fn read_packet(
    ds: &Dataset,
    src: &Source,
    mut b: Bufs,
    pos: u64,
    n: usize,
    sum_at: u64,
    sum_len: usize,
) -> std::io::Result<Bufs> {
    src.run(ds, move |src| {
        src.read_exact(Part::Data, &mut b.data[..n], pos)?;
        src.read_exact(Part::Meta, &mut b.sums[..sum_len], sum_at)?;
        Ok(b)
    })
    .await
}

/// Writes `buf` to a reader's stream: to the kernel's socket directly where there is one
/// (`more`: further bytes follow at once), else through the stream. Either way a reader
/// that takes nothing for `stall` is given up on.
async fn send<W: WriteHalf>(
    wr: &mut W,
    buf: &[u8],
    more: bool,
    stall: Duration,
) -> std::io::Result<()> {
    if let Some(sock) = wr.tcp() {
        return os::send_all(sock, buf, more, stall).await;
    }
    match tokio::time::timeout(stall, wr.write_all(buf)).await {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("the reader took nothing for {stall:?}"),
        )),
    }
}

/// Streams a range to a reader. Per packet: the checksums are read without waiting for
/// the disk when the page cache has them; the data goes out with sendfile when all of its
/// pages are resident and the reader is a kernel socket; anything else is read on the
/// volume's I/O pool (in place for memory volumes), and the data is then written from the
/// buffer. A reader that takes nothing for the socket timeout is dropped.
async fn stream<W: WriteHalf>(
    x: &Xceiver,
    wr: &mut W,
    src: &Source,
    r: Range,
) -> Result<(), TransferError> {
    let c = src.checksum();
    let bpc = c.bytes_per_checksum as u64;
    let stats = &x.ds.reads().stats;
    // The data buffer is only needed when a packet misses the page cache: thousands of
    // readers of cached blocks then hold no more than their checksum buffers.
    let mut bufs = Some(Bufs {
        data: Vec::new(),
        sums: vec![0u8; (r.per_packet / bpc) as usize * c.kind.size()],
    });
    let mut head = BytesMut::with_capacity(1024);
    let (mut pos, mut seqno) = (r.from, 0i64);
    // Copied packets are capped smaller than sendfile ones: their buffer is this process's
    // memory, held by every reader of a cold block at once.
    let copy_max = r.per_packet.min(COPY_PACKET.max(bpc) / bpc * bpc);
    loop {
        let mut n = (r.to - pos).min(r.per_packet) as usize;
        let sums_of = |n: usize| {
            if r.with_sums {
                c.chunks(n) * c.kind.size()
            } else {
                0
            }
        };
        let mut sum_len = sums_of(n);
        let sum_at = META_HEADER_LEN as u64 + (pos / bpc) * c.kind.size() as u64;
        let mut b = bufs.take().expect("buffers come back after every packet");
        let cached = match (src.files(), wr.tcp().is_some()) {
            (Some(h), true) => h
                .residency
                .as_ref()
                .is_some_and(|m| m.resident(pos, n as u64))
                .then_some(h),
            _ => None,
        };
        let zero_copy = match cached {
            Some(h) => os::read_cached(&h.meta, &mut b.sums[..sum_len], sum_at)?,
            None => false,
        };
        if !zero_copy && n > 0 {
            n = n.min(copy_max as usize);
            sum_len = sums_of(n);
            if b.data.len() < n {
                b.data.resize(copy_max as usize, 0);
            }
            b = read_packet(&x.ds, src, b, pos, n, sum_at, sum_len).await?;
        }
        head.clear();
        let hdr = Header {
            offset_in_block: pos as i64,
            seqno,
            last: n == 0,
            data_len: n as i32,
            sync: false,
        };
        packet::encode_head(&hdr, &b.sums[..sum_len], n, &mut head);
        // Each write may wait up to the socket timeout for the reader to take something;
        // a slow reader that keeps reading is served however long the packet takes.
        let stall = x.cfg.socket_timeout;
        send(wr, &head, n > 0, stall).await?;
        match (cached.filter(|_| zero_copy), wr.tcp()) {
            (Some(h), Some(sock)) => os::send_file(sock, &h.data, pos, n as u64, stall).await?,
            _ => send(wr, &b.data[..n], false, stall).await?,
        }
        let counter = if zero_copy {
            &stats.bytes_sendfile
        } else {
            &stats.bytes_copy
        };
        counter.fetch_add(n as u64, Ordering::Relaxed);
        bufs = Some(b);
        if n == 0 {
            return Ok(());
        }
        pos += n as u64;
        seqno += 1;
    }
}

/// Sends `[from, to)` of a replica to another DataNode (replication, TRANSFER_BLOCK; a
/// move's COPY_BLOCK, paced by `throttle`), the disk reads on the volume's I/O pool.
pub(crate) async fn send_range<W: Writer>(
    wr: &mut W,
    ds: &Dataset,
    src: &Source,
    r: Range,
    throttle: Option<&BalanceThrottle>,
) -> Result<(), TransferError> {
    let c = src.checksum();
    let bpc = c.bytes_per_checksum as u64;
    let (mut pos, mut seqno) = (r.from, 0i64);
    let mut out = BytesMut::with_capacity(r.per_packet as usize + 1024);
    let mut bufs = Some(Bufs {
        data: vec![0u8; r.per_packet as usize],
        sums: vec![0u8; (r.per_packet / bpc) as usize * c.kind.size()],
    });
    loop {
        let n = (r.to - pos).min(r.per_packet) as usize;
        let sum_len = c.chunks(n) * c.kind.size();
        let sum_at = META_HEADER_LEN as u64 + (pos / bpc) * c.kind.size() as u64;
        let mut b = bufs.take().expect("buffers come back after every packet");
        if n > 0 {
            b = read_packet(ds, src, b, pos, n, sum_at, sum_len).await?;
        }
        out.clear();
        let hdr = Header {
            offset_in_block: pos as i64,
            seqno,
            last: n == 0,
            data_len: n as i32,
            sync: false,
        };
        packet::encode(&hdr, &b.sums[..sum_len], &b.data[..n], &mut out);
        wr.write_all(&out).await?;
        bufs = Some(b);
        if n == 0 {
            return Ok(());
        }
        if let Some(t) = throttle {
            t.pace(n as u64).await;
        }
        pos += n as u64;
        seqno += 1;
    }
}

/// Tells the NameNode about replicas lost with a failed volume.
pub(crate) fn report_lost(x: &Xceiver, r: &Replica, lost: &[u64]) {
    if lost.is_empty() {
        return;
    }
    let uuid = x.ds.volumes[r.volume].storage_uuid.clone();
    for &id in lost {
        drop(x.link.report_block(
            &uuid,
            id,
            0,
            0,
            ferrite_proto::datanode::received_deleted_block_info_proto::BlockStatus::Deleted,
        ));
    }
}
