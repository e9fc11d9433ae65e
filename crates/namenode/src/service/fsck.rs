//! What `hdfs fsck` needs of the block map: each file's blocks with the replicas a reader
//! may use, which replicas are corrupt, and which copies are scheduled. Looked up a file at
//! a time (as HDFS's fsck asks per file), so no lock is held across a walk.

use super::{Admitted, NameNodeService, Operation};
use crate::blocks::registry::Liveness;
use crate::blocks::BlockManager;
use crate::clock::now_ms;
use crate::error::FsError;
use crate::fsck::report::{BlockFacts, FileFacts, LiveReplica};
use crate::namespace::blocks::Placed;
use crate::namespace::Caller;

impl NameNodeService {
    /// fsck's facts of the file at `path`; `None` for a directory or a missing path.
    pub fn fsck_file(&self, who: &Admitted, path: &str) -> Result<Option<FileFacts>, FsError> {
        who.check(Operation::Fsck);
        let su = Caller::superuser(&self.superuser);
        let ns = self.ns.read();
        let Some(slot) = ns.lookup(&su, path)? else {
            return Ok(None);
        };
        let st = ns.status(slot, false);
        if st.is_dir {
            return Ok(None);
        }
        let range = ns.block_range(slot, 0, u64::MAX);
        let mgr = self.blocks.lock();
        let now = now_ms();
        let mut complete: Vec<BlockFacts> = range
            .blocks
            .iter()
            .map(|p| self.block_facts(&mgr, p, now))
            .collect();
        let writing = if range.under_construction {
            // The block being written is the list's last: not validated, as in HDFS.
            range.last.and_then(|_| complete.pop())
        } else {
            None
        };
        Ok(Some(FileFacts {
            path: path.to_string(),
            len: st.len,
            replication: st.replication,
            under_construction: range.under_construction,
            blocks: complete,
            writing,
        }))
    }

    fn block_facts(&self, mgr: &BlockManager, p: &Placed, now: i64) -> BlockFacts {
        let dead_ms = self.cfg.dead_interval_ms();
        let mut live = Vec::new();
        let mut corrupt = 0;
        let mut held = 0;
        if let Some(e) = mgr.entry(p.block.id) {
            for r in &e.replicas {
                let n = mgr.reg.get(r.node);
                if n.liveness(now, u64::MAX, dead_ms) == Liveness::Dead {
                    continue;
                }
                held += 1;
                if r.corrupt {
                    corrupt += 1;
                } else {
                    live.push(LiveReplica {
                        addr: n.id.xfer_addr(),
                        rack: n.rack.clone(),
                        storage: n.storage_uuid(r.storage),
                        storage_type: crate::namespace::quota::type_index(
                            n.storage_type(r.storage),
                        )
                        .map_or("DISK", crate::namespace::quota::type_name),
                    });
                }
            }
        }
        let queued = mgr
            .reg
            .iter()
            .any(|(_, n)| n.transfers.iter().any(|t| t.id == p.block.id));
        BlockFacts {
            id: p.block.id,
            gs: p.block.gs,
            len: p.block.len,
            live,
            corrupt: held > 0 && corrupt == held,
            queued,
        }
    }
}
