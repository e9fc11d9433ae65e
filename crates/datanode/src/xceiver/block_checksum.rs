//! BLOCK_CHECKSUM: the MD5 of a replica's chunk CRCs, from which clients build HDFS's
//! MD5-of-MD5-of-CRC file checksum (`hdfs dfs -checksum`).

use std::os::unix::fs::FileExt;

use ferrite_blocktoken::Modes;
use ferrite_proto::hdfs::{
    BlockOpResponseProto, OpBlockChecksumProto, OpBlockChecksumResponseProto, Status,
};
use ferrite_transfer::checksum::META_HEADER_LEN;
use ferrite_transfer::io::{read_delimited, write_delimited};
use ferrite_transfer::TransferError;
use md5::{Digest, Md5};

use super::access::allowed;
use super::{refuse, timed, Reader, Writer, Xceiver};

pub(crate) async fn serve<R: Reader, W: Writer>(
    x: &Xceiver,
    rd: &mut R,
    wr: &mut W,
) -> Result<(), TransferError> {
    let op: OpBlockChecksumProto = timed(x.cfg.socket_timeout, read_delimited(rd)).await?;
    let blk = &op.header.block;
    let token = op.header.token.as_ref();
    if !allowed(x, wr, "BLOCK_CHECKSUM", blk, token, Modes::READ, None).await {
        return Ok(());
    }
    let Some(replica) = x.ds.get(blk.block_id) else {
        let msg = format!("Replica not found for blk_{}", blk.block_id);
        refuse(wr, Status::Error, &msg).await;
        return Ok(());
    };
    // A client may ask for a prefix of the block (its view of the length).
    let len = blk.num_bytes.unwrap_or(replica.len).min(replica.len);
    let replica_len = replica.len;
    let reads = x.ds.reads();
    let result = match x.ds.read_handle(&replica).await {
        Err(e) => Err(e),
        Ok(h) => reads
            .pool(replica.volume)
            .run(move || -> std::io::Result<(u32, u64, Vec<u8>, i32)> {
                let c = h.checksum;
                let bpc = c.bytes_per_checksum as u64;
                let size = c.kind.size();
                let chunks = c.chunks(len as usize);
                let mut sums = vec![0u8; chunks * size];
                h.meta.read_exact_at(&mut sums, META_HEADER_LEN as u64)?;
                // A prefix ending mid-chunk: that chunk's CRC is over fewer bytes than stored.
                let tail = len % bpc;
                if tail != 0 && len != replica_len && size > 0 {
                    let mut last = vec![0u8; tail as usize];
                    h.data.read_exact_at(&mut last, len - tail)?;
                    let crc = c.kind.crc(&last).to_be_bytes();
                    let n = sums.len();
                    sums[n - size..].copy_from_slice(&crc);
                }
                let md5 = Md5::digest(&sums).to_vec();
                Ok((c.bytes_per_checksum, chunks as u64, md5, c.kind.to_proto()))
            })
            .await
            .and_then(|r| r),
    };
    match result {
        Ok((bytes_per_crc, crc_per_block, md5, crc_type)) => {
            let resp = BlockOpResponseProto {
                status: Status::Success as i32,
                checksum_response: Some(OpBlockChecksumResponseProto {
                    bytes_per_crc,
                    crc_per_block,
                    block_checksum: md5,
                    crc_type: Some(crc_type),
                    block_checksum_options: None,
                }),
                ..Default::default()
            };
            write_delimited(wr, &resp).await?;
        }
        Err(e) => {
            refuse(
                wr,
                Status::Error,
                &format!("checksum of blk_{}: {e}", blk.block_id),
            )
            .await;
        }
    }
    Ok(())
}
