//! READ_BLOCK: a range of a replica as packets of checksums and data, then the reader's
//! status. Simple blocking reads for now; the event-driven read server replaces this.

use std::fs::File;
use std::os::unix::fs::FileExt;

use bytes::BytesMut;
use ferrite_proto::hdfs::{
    BlockOpResponseProto, ChecksumProto, ClientReadStatusProto, OpReadBlockProto,
    ReadOpChecksumInfoProto, Status,
};
use ferrite_transfer::checksum::{parse_meta_header, Checksum, META_HEADER_LEN};
use ferrite_transfer::io::{read_delimited, write_delimited};
use ferrite_transfer::packet::{self, Header};
use ferrite_transfer::TransferError;
use tokio::io::AsyncWriteExt;

use super::{refuse, timed, Reader, Writer, Xceiver};
use crate::storage::Replica;

/// Serves one READ_BLOCK. Returns whether the connection may carry another op.
pub async fn serve<R: Reader, W: Writer>(
    x: &Xceiver,
    rd: &mut R,
    wr: &mut W,
) -> Result<bool, TransferError> {
    let op: OpReadBlockProto = timed(x.cfg.socket_timeout, read_delimited(rd)).await?;
    let blk = &op.header.base_header.block;
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
    let (data, meta, checksum) = match open(x, &replica) {
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
    let send_sums = op.send_checksums.unwrap_or(true);
    let per_packet = (x.cfg.read_packet_bytes as u64 / bpc).max(1) * bpc;
    let mut pos = chunk_offset;
    let mut seqno = 0i64;
    let mut out = BytesMut::with_capacity(per_packet as usize + 1024);
    let mut buf = vec![0u8; per_packet as usize];
    let mut sums = vec![0u8; (per_packet / bpc) as usize * checksum.kind.size()];
    while pos < end {
        let n = (end - pos).min(per_packet) as usize;
        let sum_len = if send_sums {
            checksum.chunks(n) * checksum.kind.size()
        } else {
            0
        };
        let sum_at = META_HEADER_LEN as u64 + (pos / bpc) * checksum.kind.size() as u64;
        // Blocking reads (usually from the page cache): tell the runtime, so other tasks
        // move to another worker meanwhile. The event-driven read server replaces this.
        tokio::task::block_in_place(|| {
            data.read_exact_at(&mut buf[..n], pos)?;
            meta.read_exact_at(&mut sums[..sum_len], sum_at)
        })?;
        out.clear();
        let h = Header {
            offset_in_block: pos as i64,
            seqno,
            last: false,
            data_len: n as i32,
            sync: false,
        };
        packet::encode(&h, &sums[..sum_len], &buf[..n], &mut out);
        wr.write_all(&out).await?;
        pos += n as u64;
        seqno += 1;
    }
    out.clear();
    let h = Header {
        offset_in_block: end as i64,
        seqno,
        last: true,
        data_len: 0,
        sync: false,
    };
    packet::encode(&h, &[], &[], &mut out);
    wr.write_all(&out).await?;
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

/// Opens a replica's data and meta files and reads the meta header.
pub fn open(x: &Xceiver, r: &Replica) -> std::io::Result<(File, File, Checksum)> {
    let (dp, mp) = x.ds.paths(r);
    let data = File::open(dp)?;
    let meta = File::open(mp)?;
    let mut head = [0u8; META_HEADER_LEN];
    meta.read_exact_at(&mut head, 0)?;
    let c = parse_meta_header(&head)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    Ok((data, meta, c))
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
