//! READ_BLOCK: a range of a replica as packets of checksums and data, then the reader's
//! status. Simple blocking reads for now; the event-driven read server replaces this.

use std::fs::File;
use std::os::unix::fs::FileExt;

use bytes::BytesMut;
use ferrite_blocktoken::Modes;
use ferrite_proto::hdfs::{
    BlockOpResponseProto, ChecksumProto, ClientReadStatusProto, OpReadBlockProto,
    ReadOpChecksumInfoProto, Status,
};
use ferrite_transfer::checksum::{parse_meta_header, Checksum, META_HEADER_LEN};
use ferrite_transfer::io::{read_delimited, write_delimited};
use ferrite_transfer::packet::{self, Header};
use ferrite_transfer::TransferError;
use tokio::io::AsyncWriteExt;

use super::access::allowed;
use super::{refuse, timed, Reader, Writer, Xceiver};
use crate::storage::{Dataset, Replica};

/// Serves one READ_BLOCK. Returns whether the connection may carry another op.
pub async fn serve<R: Reader, W: Writer>(
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
    let visible = replica.len;
    if op.offset > visible || op.offset.saturating_add(op.len) > visible {
        let msg = format!(
            "Offset {} and length {} don't match block blk_{} ( blockLen {visible} )",
            op.offset, op.len, blk.block_id
        );
        refuse(wr, Status::ErrorInvalid, &msg).await;
        return Ok(false);
    }
    let files = match open(&x.ds, &replica) {
        Ok(v) => v,
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
    let checksum = files.checksum;
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
    send_range(wr, &files, chunk_offset, end, per_packet, with_sums).await?;
    wr.flush().await?;
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

/// A replica's open files and the checksum its meta header declares.
pub struct ReplicaFiles {
    pub data: File,
    pub meta: File,
    pub checksum: Checksum,
}

/// Opens a replica's data and meta files and reads the meta header.
pub fn open(ds: &Dataset, r: &Replica) -> std::io::Result<ReplicaFiles> {
    let (dp, mp) = ds.paths(r);
    let data = File::open(dp)?;
    let meta = File::open(mp)?;
    let mut head = [0u8; META_HEADER_LEN];
    meta.read_exact_at(&mut head, 0)?;
    let checksum = parse_meta_header(&head)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    Ok(ReplicaFiles {
        data,
        meta,
        checksum,
    })
}

/// Sends `[from, to)` of a replica (`from` chunk-aligned) as packets of at most
/// `per_packet` data bytes, seqnos from 0, then the empty last packet. Used by reads and
/// by copies to other DataNodes.
pub async fn send_range<W: Writer>(
    wr: &mut W,
    f: &ReplicaFiles,
    from: u64,
    to: u64,
    per_packet: u64,
    with_sums: bool,
) -> Result<(), TransferError> {
    let c = &f.checksum;
    let bpc = c.bytes_per_checksum as u64;
    let mut pos = from;
    let mut seqno = 0i64;
    let mut out = BytesMut::with_capacity(per_packet as usize + 1024);
    let mut buf = vec![0u8; per_packet as usize];
    let mut sums = vec![0u8; (per_packet / bpc) as usize * c.kind.size()];
    loop {
        let n = (to - pos).min(per_packet) as usize;
        let sum_len = if with_sums {
            c.chunks(n) * c.kind.size()
        } else {
            0
        };
        if n > 0 {
            let sum_at = META_HEADER_LEN as u64 + (pos / bpc) * c.kind.size() as u64;
            // Blocking reads (usually from the page cache): tell the runtime, so other
            // tasks move to another worker meanwhile. The event-driven read server
            // replaces this.
            tokio::task::block_in_place(|| {
                f.data.read_exact_at(&mut buf[..n], pos)?;
                f.meta.read_exact_at(&mut sums[..sum_len], sum_at)
            })?;
        }
        out.clear();
        let h = Header {
            offset_in_block: pos as i64,
            seqno,
            last: n == 0,
            data_len: n as i32,
            sync: false,
        };
        packet::encode(&h, &sums[..sum_len], &buf[..n], &mut out);
        wr.write_all(&out).await?;
        if n == 0 {
            return Ok(());
        }
        pos += n as u64;
        seqno += 1;
    }
}

/// Tells the NameNode about replicas lost with a failed volume.
pub fn report_lost(x: &Xceiver, r: &Replica, lost: &[u64]) {
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
