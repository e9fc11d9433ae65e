//! DN-to-DN replication (the NameNode's TRANSFER command): stream a finalized replica to
//! the targets as a WRITE_BLOCK with an empty client name, which receivers take as a
//! transfer (no setup answer, no acks; they finalize and report on the last packet).

use std::os::unix::fs::FileExt;

use bytes::BytesMut;
use ferrite_proto::common::TokenProto;
use ferrite_proto::hdfs::op_write_block_proto::BlockConstructionStage as Stage;
use ferrite_proto::hdfs::*;
use ferrite_transfer::checksum::META_HEADER_LEN;
use ferrite_transfer::io::write_op;
use ferrite_transfer::packet::{self, Header};
use ferrite_transfer::{op, TransferError};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::nn_link::NnLink;
use crate::storage::{Dataset, State};

pub async fn send(
    ds: &Dataset,
    link: &NnLink,
    b: &BlockProto,
    targets: &[DatanodeInfoProto],
) -> Result<(), TransferError> {
    let Some(first) = targets.first() else {
        return Ok(());
    };
    let r = ds
        .get(b.block_id)
        .filter(|r| r.state == State::Finalized && r.gs == b.gen_stamp)
        .ok_or_else(|| {
            TransferError::malformed(
                "transfer",
                format!("no finalized replica of blk_{}", b.block_id),
            )
        })?;
    let (dp, mp) = ds.paths(&r);
    let data = std::fs::File::open(dp)?;
    let meta = std::fs::File::open(mp)?;
    let mut head = [0u8; META_HEADER_LEN];
    meta.read_exact_at(&mut head, 0)?;
    let c = ferrite_transfer::checksum::parse_meta_header(&head)
        .map_err(|e| TransferError::malformed("meta header", e))?;
    let mut s = TcpStream::connect(format!("{}:{}", first.id.ip_addr, first.id.xfer_port)).await?;
    s.set_nodelay(true)?;
    let opw = OpWriteBlockProto {
        header: ClientOperationHeaderProto {
            base_header: BaseHeaderProto {
                block: ExtendedBlockProto {
                    pool_id: link.pool.clone(),
                    block_id: r.id,
                    generation_stamp: r.gs,
                    num_bytes: Some(r.len),
                },
                token: Some(TokenProto {
                    identifier: vec![],
                    password: vec![],
                    kind: String::new(),
                    service: String::new(),
                }),
                trace_info: None,
            },
            client_name: String::new(),
        },
        targets: targets[1..].to_vec(),
        source: None,
        stage: Stage::PipelineSetupCreate as i32,
        pipeline_size: targets.len() as u32,
        min_bytes_rcvd: 0,
        max_bytes_rcvd: 0,
        latest_generation_stamp: r.gs,
        requested_checksum: ChecksumProto {
            r#type: c.kind.to_proto(),
            bytes_per_checksum: c.bytes_per_checksum,
        },
        ..Default::default()
    };
    write_op(&mut s, op::WRITE_BLOCK, &opw).await?;
    let bpc = c.bytes_per_checksum as u64;
    let per = (64 << 10) / bpc * bpc;
    let mut pos = 0u64;
    let mut seqno = 0;
    let mut out = BytesMut::new();
    let mut buf = vec![0u8; per as usize];
    let mut sums = vec![0u8; (per / bpc) as usize * c.kind.size()];
    loop {
        let n = (r.len - pos).min(per) as usize;
        let last = n == 0;
        let sl = c.chunks(n) * c.kind.size();
        if n > 0 {
            data.read_exact_at(&mut buf[..n], pos)?;
            meta.read_exact_at(
                &mut sums[..sl],
                META_HEADER_LEN as u64 + pos / bpc * c.kind.size() as u64,
            )?;
        }
        out.clear();
        let h = Header {
            offset_in_block: pos as i64,
            seqno,
            last,
            data_len: n as i32,
            sync: false,
        };
        packet::encode(&h, &sums[..sl], &buf[..n], &mut out);
        s.write_all(&out).await?;
        if last {
            break;
        }
        pos += n as u64;
        seqno += 1;
    }
    s.flush().await?;
    // Wait for the receiver to close: it finalizes and reports before that.
    let mut sink = [0u8; 64];
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::io::AsyncReadExt::read(&mut s, &mut sink),
    )
    .await;
    Ok(())
}
