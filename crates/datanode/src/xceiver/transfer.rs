//! Copying a replica to other DataNodes as a WRITE_BLOCK stream:
//! - replication (the NameNode's TRANSFER command): a finalized replica, sent with an empty
//!   client name, which receivers take as DN-to-DN (no answers at all; they finalize);
//! - TRANSFER_BLOCK (op 86, pipeline recovery adding a node): the writer's half-written
//!   replica, sent with stage TRANSFER_RBW; the receiver keeps it unfinished for the
//!   recovered pipeline and answers once, at the end.

use ferrite_blocktoken::keys::Grant;
use ferrite_blocktoken::Modes;
use ferrite_proto::common::TokenProto;
use ferrite_proto::hdfs::op_write_block_proto::BlockConstructionStage as Stage;
use ferrite_proto::hdfs::*;
use ferrite_transfer::io::{read_delimited, write_delimited, write_op};
use ferrite_transfer::{op, TransferError};
use tokio::io::{AsyncWriteExt, BufReader};

use super::access::allowed;
use super::source::Source;
use super::{refuse, timed, Reader, Writer, Xceiver};
use crate::nn_link::NnLink;
use crate::storage::{Dataset, Replica, State};

/// What to send and how the receiver should treat it.
struct Copy<'a> {
    replica: Replica,
    /// Bytes to send (a half-written replica: what the client knows was acknowledged).
    len: u64,
    client_name: &'a str,
    stage: Stage,
    token: TokenProto,
    pool: &'a str,
}

/// Replication ordered by the NameNode.
pub(crate) async fn send(
    ds: &Dataset,
    link: &NnLink,
    b: &BlockProto,
    targets: &[DatanodeInfoProto],
) -> Result<(), TransferError> {
    let r = ds
        .get(b.block_id)
        .filter(|r| r.state == State::Finalized && r.gs == b.gen_stamp)
        .ok_or_else(|| {
            TransferError::malformed(
                "transfer",
                format!("no finalized replica of blk_{}", b.block_id),
            )
        })?;
    let copy = Copy {
        len: r.len,
        replica: r,
        client_name: "",
        stage: Stage::PipelineSetupCreate,
        token: copy_token(link, b.block_id)?,
        pool: &link.pool,
    };
    stream(ds, link, &copy, targets).await
}

/// TRANSFER_BLOCK: copy this node's replica of the block to `targets`, then answer.
pub(crate) async fn serve<R: Reader, W: Writer>(
    x: &Xceiver,
    rd: &mut R,
    wr: &mut W,
) -> Result<(), TransferError> {
    let op: OpTransferBlockProto = timed(x.cfg.socket_timeout, read_delimited(rd)).await?;
    let blk = &op.header.base_header.block;
    let token = op.header.base_header.token.as_ref();
    if !allowed(x, wr, "TRANSFER_BLOCK", blk, token, Modes::COPY, None).await {
        return Ok(());
    }
    let Some(r) =
        x.ds.get(blk.block_id)
            .filter(|r| r.gs >= blk.generation_stamp)
    else {
        let msg = format!(
            "Replica not found for blk_{}_{}",
            blk.block_id, blk.generation_stamp
        );
        refuse(wr, Status::Error, &msg).await;
        return Ok(());
    };
    let copy = Copy {
        len: blk.num_bytes.unwrap_or(r.len).min(r.len),
        stage: if r.state == State::Finalized {
            Stage::TransferFinalized
        } else {
            Stage::TransferRbw
        },
        replica: r,
        client_name: &op.header.client_name,
        token: copy_token(&x.link, blk.block_id)?,
        pool: &blk.pool_id,
    };
    match stream(&x.ds, &x.link, &copy, &op.targets).await {
        Ok(()) => {
            let ok = BlockOpResponseProto {
                status: Status::Success as i32,
                ..Default::default()
            };
            write_delimited(wr, &ok).await?;
        }
        Err(e) => refuse(wr, Status::Error, &format!("transfer failed: {e}")).await,
    }
    Ok(())
}

/// The token a copy carries: signed by this node for WRITE, as HDFS DataNodes sign the
/// copies they start (the client's token, if any, allowed COPY here, not WRITE there).
fn copy_token(link: &NnLink, block_id: u64) -> Result<TokenProto, TransferError> {
    let grant = Grant {
        user: "datanode",
        pool: &link.pool,
        modes: Modes::WRITE,
    };
    link.keys
        .read()
        .issue(crate::now_ms(), grant, block_id)
        .map_err(|e| TransferError::malformed("transfer", e.to_string()))
}

/// Streams `copy` to the first target (which forwards to the rest).
async fn stream(
    ds: &Dataset,
    link: &NnLink,
    copy: &Copy<'_>,
    targets: &[DatanodeInfoProto],
) -> Result<(), TransferError> {
    let Some(first) = targets.first() else {
        return Ok(());
    };
    let r = &copy.replica;
    let files = Source::open(ds, r).await?;
    let c = files.checksum();
    let addr = link.peer_xfer_addr(&first.id);
    let s = link.dialer().dial(&addr).await?;
    let (rd, mut s) = (s.read, s.write);
    let opw = OpWriteBlockProto {
        header: ClientOperationHeaderProto {
            base_header: BaseHeaderProto {
                block: ExtendedBlockProto {
                    pool_id: copy.pool.to_string(),
                    block_id: r.id,
                    generation_stamp: r.gs,
                    num_bytes: Some(copy.len),
                },
                token: Some(copy.token.clone()),
                trace_info: None,
            },
            client_name: copy.client_name.to_string(),
        },
        targets: targets[1..].to_vec(),
        stage: copy.stage as i32,
        pipeline_size: targets.len() as u32,
        min_bytes_rcvd: copy.len,
        max_bytes_rcvd: copy.len,
        latest_generation_stamp: r.gs,
        requested_checksum: ChecksumProto {
            r#type: c.kind.to_proto(),
            bytes_per_checksum: c.bytes_per_checksum,
        },
        ..Default::default()
    };
    write_op(&mut s, op::WRITE_BLOCK, &opw).await?;
    let per = (64 << 10) / c.bytes_per_checksum as u64 * c.bytes_per_checksum as u64;
    let range = super::read::Range {
        from: 0,
        to: copy.len,
        per_packet: per,
        with_sums: true,
    };
    // Re-replication is the NameNode's to pace (its streams limit), not the Balancer's.
    super::read::send_range(&mut s, ds, &files, range, None).await?;
    s.flush().await?;
    let mut rd = BufReader::new(rd);
    let timeout = std::time::Duration::from_secs(60);
    if copy.client_name.is_empty() {
        // Replication: the receiver finalizes, reports and closes; wait for the close.
        let mut sink = [0u8; 64];
        let _ =
            tokio::time::timeout(timeout, tokio::io::AsyncReadExt::read(&mut rd, &mut sink)).await;
        return Ok(());
    }
    // A client's transfer: the receiver answers once it has everything.
    let ack: BlockOpResponseProto = timed(timeout, read_delimited(&mut rd)).await?;
    if ack.status != Status::Success as i32 {
        return Err(TransferError::malformed(
            "transfer",
            format!(
                "target answered {}: {}",
                ack.status,
                ack.message.unwrap_or_default()
            ),
        ));
    }
    Ok(())
}
