//! What a balancer asks of the NameNode (NamenodeProtocol.getBlocks): blocks a DataNode
//! holds, with where each block's replicas are, for it to choose moves from.

use crate::blocks::registry::Liveness;
use crate::clock::now_ms;
use crate::error::FsError;

use super::datanodes::expected;
use super::{Admitted, NameNodeService};

/// What getBlocks asks for.
#[derive(Clone, Debug)]
pub struct BlocksWanted {
    /// The node whose blocks are listed, by uuid (its transfer address in messages).
    pub uuid: String,
    pub xfer_addr: String,
    /// Stop once the blocks listed add up to this many bytes.
    pub size: u64,
    /// Smaller blocks are not worth a move.
    pub min_block_size: u64,
    /// Leave out blocks of files changed less than this many milliseconds ago (0: none).
    pub hot_ms: u64,
    /// Only replicas on this storage type (`StorageTypeProto`), when given.
    pub storage_type: Option<u8>,
}

/// One block and its replicas' places: (node uuid, storage uuid, storage type).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockWithPlaces {
    pub id: u64,
    pub gs: u64,
    pub len: u64,
    pub places: Vec<(String, String, u8)>,
}

impl NameNodeService {
    /// getBlocks, as HDFS's BlockManager answers it: from a random place among the
    /// node's blocks onwards (so balancers asking again get others), complete blocks of at
    /// least `min_block_size` with a finished replica on the node, until `size` bytes.
    ///
    /// This walks the namespace's block table: the NameNode keeps no list per node. Cheap
    /// next to the moves a balancer then makes, but proportional to the blocks.
    pub fn blocks_of_node(
        &self,
        _: &Admitted,
        want: &BlocksWanted,
    ) -> Result<Vec<BlockWithPlaces>, FsError> {
        if want.size == 0 {
            return Err(FsError::IllegalArgument(format!(
                "Unexpected not positive size: {}",
                want.size
            )));
        }
        if self.in_safe_mode() {
            return Err(self.safe_mode_refusal("Cannot execute getBlocks".into()));
        }
        let now = now_ms();
        let ns = self.ns.read();
        let mgr = self.blocks.lock();
        let node = mgr
            .reg
            .lookup(&want.uuid)
            .filter(|&ix| {
                mgr.reg
                    .get(ix)
                    .liveness(now, u64::MAX, self.cfg.dead_interval_ms())
                    != Liveness::Dead
            })
            .ok_or_else(|| {
                FsError::IllegalArgument(format!("Datanode {} not found.", want.xfer_addr))
            })?;
        let total = ns.block_count();
        let start = if total == 0 {
            0
        } else {
            (now as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as usize % total
        };
        let mut out = Vec::new();
        let mut bytes = 0u64;
        let ids = ns.blocks().skip(start).chain(ns.blocks().take(start));
        for (id, slot) in ids {
            if bytes >= want.size {
                break;
            }
            let Some(e) = mgr.entry(id) else { continue };
            let held = e.replicas.iter().any(|r| {
                r.node == node
                    && r.finalized
                    && !r.corrupt
                    && want
                        .storage_type
                        .is_none_or(|t| mgr.reg.get(node).storage_type(r.storage) == t)
            });
            if !held {
                continue;
            }
            let Some(x) = expected(&ns, id).filter(|x| x.complete) else {
                continue;
            };
            if x.len < want.min_block_size {
                continue;
            }
            if want.hot_ms > 0 && now - ns.inode(slot).mtime < want.hot_ms as i64 {
                continue;
            }
            let places = e
                .replicas
                .iter()
                .filter(|r| r.finalized && !r.corrupt)
                .map(|r| {
                    let n = mgr.reg.get(r.node);
                    (
                        n.id.uuid.clone(),
                        n.storage_uuid(r.storage),
                        n.storage_type(r.storage),
                    )
                })
                .collect();
            bytes += x.len;
            out.push(BlockWithPlaces {
                id,
                gs: x.gs,
                len: x.len,
                places,
            });
        }
        Ok(out)
    }
}
