//! Moving replicas, as HDFS's Balancer, Mover and storage policy satisfier ask for it:
//! - REPLACE_BLOCK (op 83), to the node that is to hold the replica: copy it from the
//!   source node (COPY_BLOCK), or move it between this node's own volumes when the source
//!   is this node; either way onto the storage type asked for. The NameNode hears of the
//!   new replica with the source as its delete hint, and removes the surplus one.
//! - COPY_BLOCK (op 84), to the source: the whole finalized replica, sent as a read is.

use std::net::SocketAddr;

use ferrite_blocktoken::Modes;
use ferrite_proto::hdfs::*;
use ferrite_transfer::checksum::{Checksum, Kind};
use ferrite_transfer::io::{read_delimited, write_delimited, write_op};
use ferrite_transfer::{op, packet, TransferError};
use tokio::io::{AsyncWriteExt, BufReader};
use tracing::{info, warn};

use super::access::allowed;
use super::source::Source;
use super::{refuse, timed, Reader, Writer, Xceiver};
use crate::storage::{RbwFiles, State, StorageError};

/// REPLACE_BLOCK: answers SUCCESS once the replica is in place and reported.
pub(crate) async fn serve_replace<R: Reader, W: Writer>(
    x: &Xceiver,
    peer: SocketAddr,
    rd: &mut R,
    wr: &mut W,
) -> Result<(), TransferError> {
    let op: OpReplaceBlockProto = timed(x.cfg.socket_timeout, read_delimited(rd)).await?;
    let blk = op.header.block.clone();
    if !allowed(
        x,
        wr,
        "REPLACE_BLOCK",
        &blk,
        op.header.token.as_ref(),
        Modes::REPLACE,
        None,
    )
    .await
    {
        return Ok(());
    }
    let Some(_slot) = x.link.balance.try_start() else {
        let msg = format!(
            "Not able to receive block {} from /{peer} because threads quota is exceeded.",
            blk.block_id
        );
        warn!("{msg}");
        refuse(wr, Status::Error, &msg).await;
        return Ok(());
    };
    let ty = op.storage_type.unwrap_or(StorageTypeProto::Disk as i32) as u8;
    let local = op.source.id.datanode_uuid == x.link.uuid();
    let moved = if local {
        move_locally(x, &blk, ty).await
    } else {
        copy_from(x, &op, ty).await
    };
    match moved {
        Ok(()) => {
            let resp = BlockOpResponseProto {
                status: Status::Success as i32,
                ..Default::default()
            };
            write_delimited(wr, &resp).await?;
            wr.flush().await?;
        }
        Err(e) => {
            warn!(block = blk.block_id, error = %e, "replica move refused");
            refuse(wr, Status::Error, &e.to_string()).await;
        }
    }
    Ok(())
}

/// Why a REPLACE_BLOCK failed; its text is what the asker reads (HDFS's words where HDFS
/// has them).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReplaceError {
    #[error("Moving blk_{id}_{gs} to storage type {ty} failed: {source}")]
    Move {
        id: u64,
        gs: u64,
        ty: u8,
        #[source]
        source: StorageError,
    },
    /// The move's blocking task did not finish (the runtime is shutting down).
    #[error("moving blk_{id}_{gs} stopped: {source}")]
    Stopped {
        id: u64,
        gs: u64,
        #[source]
        source: tokio::task::JoinError,
    },
    #[error("Not able to receive block {id} from {source_ip} because the block already exists on this node")]
    AlreadyHere { id: u64, source_ip: String },
    #[error("Copying blk_{id}_{gs} from {addr} failed: {why}")]
    Copy {
        id: u64,
        gs: u64,
        addr: String,
        #[source]
        why: CopyFault,
    },
}

/// What went wrong copying a replica from its source.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CopyFault {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Transfer(#[from] TransferError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The source refused COPY_BLOCK, with its message.
    #[error("{0}")]
    Refused(String),
    #[error("the source named no usable checksum")]
    NoChecksum,
    #[error("packet at {got} while expecting {want}")]
    OutOfOrder { got: i64, want: u64 },
    #[error("checksum error in chunk {chunk} of the packet at {at}")]
    Checksum { chunk: usize, at: u64 },
}

/// The replica moves to one of this node's volumes of type `ty`.
async fn move_locally(x: &Xceiver, blk: &ExtendedBlockProto, ty: u8) -> Result<(), ReplaceError> {
    let (id, gs) = (blk.block_id, blk.generation_stamp);
    let r =
        x.ds.off_thread(move |ds| ds.move_to_type(id, gs, ty))
            .await
            .map_err(|source| ReplaceError::Stopped { id, gs, source })?
            .map_err(|source| ReplaceError::Move { id, gs, ty, source })?;
    let uuid = x.ds.volumes[r.volume].storage_uuid.clone();
    info!(block = id, storage = %uuid, "replica moved across storage");
    // The NameNode learns the replica's new storage; this node still holds it once.
    reported(x.link.report_moved(&uuid, id, gs, r.len, None)).await;
    Ok(())
}

/// Copies the replica from `op.source` onto a volume of type `ty`, then reports it with the
/// source as the NameNode's delete hint.
async fn copy_from(x: &Xceiver, op: &OpReplaceBlockProto, ty: u8) -> Result<(), ReplaceError> {
    let blk = &op.header.block;
    let (id, gs) = (blk.block_id, blk.generation_stamp);
    if x.ds.get(id).is_some() {
        return Err(ReplaceError::AlreadyHere {
            id,
            source_ip: op.source.id.ip_addr.clone(),
        });
    }
    let addr = x.link.peer_xfer_addr(&op.source.id);
    copy_replica(x, op, ty, &addr)
        .await
        .map_err(|why| ReplaceError::Copy { id, gs, addr, why })
}

async fn copy_replica(
    x: &Xceiver,
    op: &OpReplaceBlockProto,
    ty: u8,
    addr: &str,
) -> Result<(), CopyFault> {
    let blk = &op.header.block;
    let (id, gs) = (blk.block_id, blk.generation_stamp);
    let s = x.link.dialer().dial(addr).await?;
    let (r, mut w) = (s.read, s.write);
    let copy = OpCopyBlockProto {
        header: op.header.clone(),
    };
    write_op(&mut w, op::COPY_BLOCK, &copy).await?;
    let mut r = BufReader::new(r);
    let resp: BlockOpResponseProto = timed(x.cfg.socket_timeout, read_delimited(&mut r)).await?;
    if resp.status != Status::Success as i32 {
        return Err(CopyFault::Refused(resp.message.unwrap_or_default()));
    }
    let c = resp
        .read_op_checksum_info
        .and_then(|i| {
            let kind = Kind::from_proto(i.checksum.r#type)?;
            let bpc = i.checksum.bytes_per_checksum;
            (bpc > 0 && bpc <= 1 << 20).then_some(Checksum {
                kind,
                bytes_per_checksum: bpc,
            })
        })
        .ok_or(CopyFault::NoChecksum)?;
    let len = blk.num_bytes.unwrap_or(0);
    let files = x.ds.create_rbw_on(id, gs, &c, len.max(1), Some(ty))?;
    let got = receive(x, &mut r, &files, &c).await;
    let got = match got {
        Ok(n) => n,
        Err(e) => {
            drop(files);
            x.ds.invalidate(id, gs);
            return Err(e);
        }
    };
    let rep = x.ds.blocking(|| x.ds.finalize(files, got))?;
    let uuid = x.ds.volumes[rep.volume].storage_uuid.clone();
    info!(block = id, from = %addr, storage = %uuid, "replica copied for a move");
    reported(
        x.link
            .report_moved(&uuid, id, gs, got, Some(op.del_hint.clone())),
    )
    .await;
    Ok(())
}

/// Waits (a while) for the NameNode to have the report, so that whoever asked for the
/// move sees the new replica when it hears SUCCESS.
async fn reported(rx: tokio::sync::oneshot::Receiver<()>) {
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), rx).await;
}

/// Stores the packets of a COPY_BLOCK stream, each checked against its checksums. Returns
/// the bytes stored.
async fn receive<R: Reader>(
    x: &Xceiver,
    r: &mut R,
    files: &RbwFiles,
    c: &Checksum,
) -> Result<u64, CopyFault> {
    let mut at = 0u64;
    loop {
        let p = timed(x.cfg.socket_timeout, packet::read(r, x.cfg.max_packet)).await?;
        if p.header.last || p.header.data_len == 0 {
            return Ok(at);
        }
        if p.header.offset_in_block != at as i64 {
            return Err(CopyFault::OutOfOrder {
                got: p.header.offset_in_block,
                want: at,
            });
        }
        if let Err(chunk) = c.verify(&p.data, &p.sums) {
            return Err(CopyFault::Checksum { chunk, at });
        }
        x.ds.blocking(|| files.write_at(at, &p.data, &p.sums, c))?;
        at += p.data.len() as u64;
        x.link.balance.pace(p.data.len() as u64).await;
    }
}

/// COPY_BLOCK: the whole finalized replica, preceded by the checksum it is stored with.
pub(crate) async fn serve_copy<R: Reader, W: Writer>(
    x: &Xceiver,
    peer: SocketAddr,
    rd: &mut R,
    wr: &mut W,
) -> Result<(), TransferError> {
    let op: OpCopyBlockProto = timed(x.cfg.socket_timeout, read_delimited(rd)).await?;
    let blk = &op.header.block;
    if !allowed(
        x,
        wr,
        "COPY_BLOCK",
        blk,
        op.header.token.as_ref(),
        Modes::COPY,
        None,
    )
    .await
    {
        return Ok(());
    }
    let Some(_slot) = x.link.balance.try_start() else {
        let msg = format!(
            "Not able to copy block {} to /{peer} because threads quota is exceeded.",
            blk.block_id
        );
        info!("{msg}");
        refuse(wr, Status::Error, &msg).await;
        return Ok(());
    };
    let Some(r) =
        x.ds.get(blk.block_id)
            .filter(|r| r.state == State::Finalized && r.gs == blk.generation_stamp)
    else {
        let msg = format!(
            "Not able to copy block {} to {} because no finalized replica of stamp {} is here",
            blk.block_id,
            x.link.xfer_addr(),
            blk.generation_stamp
        );
        refuse(wr, Status::Error, &msg).await;
        return Ok(());
    };
    let h = match Source::open(&x.ds, &r).await {
        Ok(h) => h,
        Err(e) => {
            refuse(wr, Status::Error, &format!("cannot open blk_{}: {e}", r.id)).await;
            return Ok(());
        }
    };
    let c = h.checksum();
    let resp = BlockOpResponseProto {
        status: Status::Success as i32,
        read_op_checksum_info: Some(ReadOpChecksumInfoProto {
            checksum: ChecksumProto {
                r#type: c.kind.to_proto(),
                bytes_per_checksum: c.bytes_per_checksum,
            },
            chunk_offset: 0,
        }),
        ..Default::default()
    };
    write_delimited(wr, &resp).await?;
    let per = (64 << 10) / c.bytes_per_checksum as u64 * c.bytes_per_checksum as u64;
    let range = super::read::Range {
        from: 0,
        to: r.len,
        per_packet: per,
        with_sums: true,
    };
    super::read::send_range(wr, &x.ds, &h, range, Some(&x.link.balance)).await?;
    wr.flush().await?;
    Ok(())
}
