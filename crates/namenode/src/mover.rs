//! Sends replica moves to DataNodes: REPLACE_BLOCK to the node that is to hold the
//! replica, as HDFS's Mover, Balancer and external storage policy satisfier send it, and
//! waits for its answer (`ferrite_transfer::moves`). The one place the NameNode speaks
//! the data-transfer protocol.

use std::sync::Arc;
use std::time::Duration;

use ferrite_proto::hdfs::{BaseHeaderProto, ExtendedBlockProto, OpReplaceBlockProto};
use ferrite_transfer::moves;
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use crate::namespace::inode::Block;
use crate::rpc::convert::{datanode_info, token_proto};
use crate::service::locations::DatanodeInfo;
use ferrite_blocktoken::Token;

/// Moves under way at once, cluster-wide: a satisfied directory of thousands of blocks
/// must not open thousands of connections (HDFS's DataNodes allow 100 moves each by
/// default; a NameNode-driven satisfier shares them with the Balancer).
const CONCURRENT_MOVES: usize = 16;

/// How long a DataNode may take to copy and report one replica.
const MOVE_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// One REPLACE_BLOCK to send: everything the mover needs, without the locks.
#[derive(Clone, Debug)]
pub struct MoveOrder {
    pub block: Block,
    pub pool: String,
    pub token: Option<Token>,
    /// The node that is to hold the replica, and the storage type it goes on.
    pub target: DatanodeInfo,
    pub storage_type: u8,
    /// Where the replica comes from (the target itself for a move between its volumes);
    /// also the NameNode's delete hint.
    pub source: DatanodeInfo,
}

pub(crate) struct Mover {
    slots: Arc<Semaphore>,
}

impl Default for Mover {
    fn default() -> Self {
        Mover {
            slots: Arc::new(Semaphore::new(CONCURRENT_MOVES)),
        }
    }
}

/// A replica move that did not happen, and where.
#[derive(Debug, thiserror::Error)]
#[error("moving blk_{block}_{gs} from {source_addr} to {target_addr}: {why}")]
pub struct MoveFailed {
    pub block: u64,
    pub gs: u64,
    pub source_addr: String,
    pub target_addr: String,
    #[source]
    pub why: MoveError,
}

#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    #[error("no answer in {0:?}")]
    Timeout(Duration),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Move(#[from] moves::MoveError),
}

impl Mover {
    /// Sends `order` once a slot is free; `done` gets the outcome.
    pub(crate) fn dispatch(
        &self,
        order: MoveOrder,
        done: impl FnOnce(Result<(), MoveFailed>) + Send + 'static,
    ) {
        let slots = self.slots.clone();
        tokio::spawn(async move {
            let _slot = slots.acquire_owned().await;
            let r = tokio::time::timeout(MOVE_TIMEOUT, replace_block(&order))
                .await
                .unwrap_or(Err(MoveError::Timeout(MOVE_TIMEOUT)));
            done(r.map_err(|why| MoveFailed {
                block: order.block.id,
                gs: order.block.gs,
                source_addr: order.source.id.xfer_addr(),
                target_addr: order.target.id.xfer_addr(),
                why,
            }));
        });
    }
}

/// One REPLACE_BLOCK: SUCCESS once the replica is in place and the NameNode has its report.
async fn replace_block(o: &MoveOrder) -> Result<(), MoveError> {
    let s = TcpStream::connect(o.target.id.xfer_addr()).await?;
    s.set_nodelay(true)?;
    let (r, w) = s.into_split();
    let req = OpReplaceBlockProto {
        header: BaseHeaderProto {
            block: ExtendedBlockProto {
                pool_id: o.pool.clone(),
                block_id: o.block.id,
                generation_stamp: o.block.gs,
                num_bytes: Some(o.block.len),
            },
            token: Some(token_proto(&o.token)),
            trace_info: None,
        },
        del_hint: o.source.id.uuid.clone(),
        source: datanode_info(&o.source),
        storage_type: Some(i32::from(o.storage_type)),
        storage_id: None,
    };
    Ok(moves::replace_block(r, w, &req).await?)
}
