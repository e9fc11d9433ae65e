//! The asking side of a replica move: REPLACE_BLOCK sent to the node that is to hold the
//! replica, as HDFS's Balancer and Mover send it (Ferrite's `balancer` and the NameNode's
//! storage policy satisfier both use this).

use ferrite_proto::hdfs::{BlockOpResponseProto, OpReplaceBlockProto, Status};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::io::{read_delimited, write_op};
use crate::{op, TransferError};

#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    #[error(transparent)]
    Transfer(#[from] TransferError),
    /// The target DataNode refused, with its message or its status.
    #[error("{0}")]
    Refused(String),
}

impl From<std::io::Error> for MoveError {
    fn from(e: std::io::Error) -> Self {
        MoveError::Transfer(e.into())
    }
}

/// Sends `req` on a connection to the target and waits for its answer: `Ok` once the
/// replica is in place and reported. The target's keep-alives (IN_PROGRESS, sent during a
/// long copy) are skipped.
pub async fn replace_block<R, W>(r: R, mut w: W, req: &OpReplaceBlockProto) -> Result<(), MoveError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    write_op(&mut w, op::REPLACE_BLOCK, req).await?;
    w.flush().await?;
    let mut r = BufReader::new(r);
    loop {
        let resp: BlockOpResponseProto = read_delimited(&mut r).await?;
        match Status::try_from(resp.status) {
            Ok(Status::InProgress) => continue,
            Ok(Status::Success) => return Ok(()),
            _ => {
                return Err(MoveError::Refused(
                    resp.message
                        .unwrap_or_else(|| format!("status {}", resp.status)),
                ))
            }
        }
    }
}
