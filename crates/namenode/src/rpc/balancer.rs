//! NamenodeProtocol, the part Hadoop's Balancer and Mover (and `ferrite balancer`) use:
//! a node's blocks with their places, the block keys to sign moves with, and the facts
//! they check before starting. The checkpointing calls of a Secondary NameNode are not
//! served: Ferrite checkpoints itself.

use ferrite_ipc::{Router, NAMENODE_PROTOCOL};
use ferrite_proto::hdfs::namenode::*;
use ferrite_proto::hdfs::{
    BlockProto, BlockWithLocationsProto, BlocksWithLocationsProto, StorageTypeProto,
};

use super::{Nn, Register, Res};
use crate::service::balancing::BlocksWanted;
use crate::service::{Admitted, NameNodeService, Operation};

pub fn register(r: &mut Router<NameNodeService>) {
    let p = NAMENODE_PROTOCOL;
    r.op(p, Operation::GetBlocks, get_blocks);
    r.op(p, Operation::GetBlockKeys, get_block_keys);
    r.op(p, Operation::GetTransactionId, get_transaction_id);
    r.op(
        p,
        Operation::GetMostRecentCheckpointTxId,
        most_recent_checkpoint,
    );
    r.op(p, Operation::IsUpgradeFinalized, is_upgrade_finalized);
    r.op(p, Operation::IsRollingUpgrade, is_rolling_upgrade);
}

pub async fn get_blocks(
    nn: Nn,
    who: Admitted,
    req: GetBlocksRequestProto,
) -> Res<GetBlocksResponseProto> {
    let d = &req.datanode;
    let want = BlocksWanted {
        uuid: d.datanode_uuid.clone(),
        xfer_addr: format!("{}:{}", d.ip_addr, d.xfer_port),
        size: req.size,
        min_block_size: req.min_block_size.unwrap_or(10 << 20),
        hot_ms: req.time_interval.unwrap_or(0),
        storage_type: req.storage_type.map(|t| t as u8),
    };
    let blocks = nn
        .blocks_of_node(&who, &want)?
        .into_iter()
        .map(|b| {
            let mut block = BlockWithLocationsProto {
                block: BlockProto {
                    block_id: b.id,
                    gen_stamp: b.gs,
                    num_bytes: Some(b.len),
                },
                ..Default::default()
            };
            for (node, storage, ty) in b.places {
                block.datanode_uuids.push(node);
                block.storage_uuids.push(storage);
                let ty = StorageTypeProto::try_from(i32::from(ty)).unwrap_or_default();
                block.storage_types.push(ty as i32);
            }
            block
        })
        .collect();
    Ok(GetBlocksResponseProto {
        blocks: BlocksWithLocationsProto { blocks },
    })
}

/// The keys DataNodes check block tokens with; a balancer signs its moves with them.
pub async fn get_block_keys(
    nn: Nn,
    _: Admitted,
    _: GetBlockKeysRequestProto,
) -> Res<GetBlockKeysResponseProto> {
    Ok(GetBlockKeysResponseProto {
        keys: Some(nn.block_keys()),
    })
}

pub async fn get_transaction_id(
    nn: Nn,
    _: Admitted,
    _: GetTransactionIdRequestProto,
) -> Res<GetTransactionIdResponseProto> {
    Ok(GetTransactionIdResponseProto {
        tx_id: nn.last_txid(),
    })
}

pub async fn most_recent_checkpoint(
    nn: Nn,
    _: Admitted,
    _: GetMostRecentCheckpointTxIdRequestProto,
) -> Res<GetMostRecentCheckpointTxIdResponseProto> {
    Ok(GetMostRecentCheckpointTxIdResponseProto {
        tx_id: nn.last_image_txid(),
    })
}

/// Ferrite has no upgrade to finalize: its on-disk formats are versioned and read forward.
pub async fn is_upgrade_finalized(
    _: Nn,
    _: Admitted,
    _: IsUpgradeFinalizedRequestProto,
) -> Res<IsUpgradeFinalizedResponseProto> {
    Ok(IsUpgradeFinalizedResponseProto {
        is_upgrade_finalized: true,
    })
}

pub async fn is_rolling_upgrade(
    _: Nn,
    _: Admitted,
    _: IsRollingUpgradeRequestProto,
) -> Res<IsRollingUpgradeResponseProto> {
    Ok(IsRollingUpgradeResponseProto {
        is_rolling_upgrade: false,
    })
}
