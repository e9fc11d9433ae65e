//! Planning and reading a file's blocks: addBlock, abandonBlock and complete as operation
//! records, and the block list of a byte range for getBlockLocations. Where replicas live
//! is not the namespace's business (see `crate::blocks`).

use super::inode::{Block, Slot};
use super::lease_check::Held;
use super::{At, Namespace, Op, Planned};
use crate::error::FsError;

/// A block with its offset in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    pub block: Block,
    pub offset: u64,
}

/// What addBlock decided.
#[derive(Debug, PartialEq, Eq)]
pub enum NewBlock {
    /// Allocate this block (the ops carry it).
    Fresh(Placed),
    /// A retried addBlock whose block was already allocated: hand out the same one.
    Retry(Placed),
}

/// The client's view of the previous block: id, generation stamp and final length.
#[derive(Clone, Copy, Debug)]
pub struct Previous {
    pub id: u64,
    pub gs: u64,
    pub len: u64,
}

/// The blocks of a byte range, for getBlockLocations.
#[derive(Debug, Default)]
pub struct BlockRange {
    pub file_len: u64,
    pub blocks: Vec<Placed>,
    pub under_construction: bool,
    pub last: Option<Placed>,
}

fn placed(blocks: &[Block]) -> impl Iterator<Item = Placed> + '_ {
    blocks.iter().scan(0u64, |off, b| {
        let p = Placed {
            block: *b,
            offset: *off,
        };
        *off += b.len;
        Some(p)
    })
}

/// The blocks of a file (`blocks`, `file_len` bytes, being written when `uc`) that cover
/// `offset..offset+len`.
pub fn range_of(blocks: &[Block], file_len: u64, uc: bool, offset: u64, len: u64) -> BlockRange {
    let end = offset.saturating_add(len);
    let all: Vec<Placed> = placed(blocks).collect();
    let blocks = all
        .iter()
        .filter(|p| {
            let b_end = p.offset + p.block.len;
            // Empty blocks (a file being written) count when they sit in the range.
            p.offset < end && (b_end > offset || (p.block.len == 0 && p.offset >= offset))
        })
        .copied()
        .collect();
    // A file being written reports its length without the block being written, as
    // HDFS does: readers add what the DataNodes say that block holds.
    let file_len = match (uc, all.last()) {
        (true, Some(last)) => file_len - last.block.len,
        _ => file_len,
    };
    BlockRange {
        file_len,
        blocks,
        under_construction: uc,
        last: all.last().copied(),
    }
}

impl Namespace {
    /// Plans addBlock for `src`, whose writer holds the lease. `previous` is the block the
    /// client just finished (None for the first). A retry of an addBlock that already
    /// happened gets the same block back and changes nothing.
    pub fn plan_add_block(
        &self,
        src: &str,
        client_name: &str,
        file_id: u64,
        previous: Option<Previous>,
    ) -> Result<(NewBlock, Planned), FsError> {
        let Held { slot, moved } = self.check_lease(src, client_name, file_id)?;
        let blocks = self.inode(slot).file().map(|f| f.blocks()).unwrap_or(&[]);
        let last = blocks.last();
        // After an append that starts a new block (the last one full, or NEW_BLOCK), the
        // writer has no previous block of its own: the file's last one is finished.
        let previous = match (previous, last) {
            (None, Some(b)) if b.len > 0 => Some(Previous {
                id: b.id,
                gs: b.gs,
                len: b.len,
            }),
            _ => previous,
        };
        let prev_id = previous.map(|p| p.id);
        if last.map(|b| b.id) != prev_id {
            // The client's "previous" is our second-to-last: its first try succeeded and
            // the answer was lost. HDFS answers such a retry with the same block.
            let penultimate = blocks.len().checked_sub(2).map(|i| blocks[i].id);
            let is_retry = match prev_id {
                None => blocks.len() == 1,
                Some(id) => penultimate == Some(id),
            };
            if is_retry && last.map(|b| b.len) == Some(0) {
                let p = placed(blocks).last().expect("a last block");
                return Ok((NewBlock::Retry(p), Planned::default()));
            }
            return Err(FsError::Io(format!(
                "addBlock of {src}: previous block {prev_id:?} is not the file's last block {:?}",
                last.map(|b| b.id)
            )));
        }
        // After the retry above, as in HDFS: a lost answer is still answered.
        if blocks.len() >= self.limits.blocks_per_file {
            return Err(FsError::Io(format!(
                "File has reached the limit on maximum number of blocks (dfs.namenode.fs-limits.max-blocks-per-file): {} >= {}",
                blocks.len(),
                self.limits.blocks_per_file
            )));
        }
        let prev_len = previous.map(|p| p.len).unwrap_or(0);
        // The new block is charged at the full preferred size until it completes; the
        // previous one at what it holds.
        if self.quotas_set > 0 {
            let inode = self.inode(slot);
            let block_size = inode.file().map_or(0, |f| f.block_size);
            let earlier: u64 =
                blocks.iter().map(|b| b.len).sum::<u64>() - last.map_or(0, |b| b.len);
            let last_now = match (previous, last) {
                (Some(p), Some(_)) => p.len,
                (None, Some(b)) => b.len,
                _ => 0,
            };
            self.check_file_growth(slot, earlier + last_now + block_size, inode.replication)?;
        }
        let (id, gs) = self.next_block();
        let offset =
            blocks.iter().map(|b| b.len).sum::<u64>() - last.map(|b| b.len).unwrap_or(0) + prev_len;
        let op = Op::AddBlock {
            path: moved.unwrap_or_else(|| src.to_string()),
            id,
            gs,
            prev_len,
        };
        let block = Block { id, gs, len: 0 };
        let planned = Planned::at(At::slot(slot), vec![op]);
        Ok((NewBlock::Fresh(Placed { block, offset }), planned))
    }

    /// Plans abandonBlock: only the last block of a file the caller writes can go.
    pub fn plan_abandon_block(
        &self,
        src: &str,
        client_name: &str,
        file_id: u64,
        block_id: u64,
    ) -> Result<((), Vec<Op>), FsError> {
        let Held { slot, moved } = self.check_lease(src, client_name, file_id)?;
        let blocks = self.inode(slot).file().map(|f| f.blocks()).unwrap_or(&[]);
        if blocks.last().map(|b| b.id) != Some(block_id) {
            // Already abandoned (a retry) or never ours: nothing to do, as in HDFS.
            return Ok(((), Vec::new()));
        }
        Ok((
            (),
            vec![Op::AbandonBlock {
                path: moved.unwrap_or_else(|| src.to_string()),
                id: block_id,
            }],
        ))
    }

    /// Plans updateBlockForPipeline: a new generation stamp for the block `client_name` is
    /// writing (`block`, as the client names it, in block pool `pool`). Returns the block as
    /// the new pipeline will write it, and where it starts. Only the stamp is handed out
    /// (journaled, so none is given twice); the block keeps the stamp its replicas have
    /// until updatePipeline confirms the new one, as in HDFS, so a writer that dies between
    /// the two leaves a block that lease recovery finds its replicas for.
    pub fn plan_bump_gs(
        &self,
        pool: &str,
        block: Block,
        client_name: &str,
    ) -> Result<(Placed, Vec<Op>), FsError> {
        let slot = self.check_uc_block(pool, block, client_name)?;
        let last = self.last_block(slot).expect("a block under construction");
        let gs = self.next_gs();
        let placed = Placed {
            block: Block { gs, ..last },
            offset: self.length_with_last(slot, 0),
        };
        Ok((placed, vec![Op::SetGenerationStamp { gs }]))
    }

    /// Plans updatePipeline: `old` (as the client names it) must be the block the client
    /// is writing, and `gs` a stamp updateBlockForPipeline handed out since; the block
    /// takes it. The same call again (a retry) changes nothing.
    pub fn plan_update_pipeline(
        &self,
        pool: &str,
        client_name: &str,
        old: Block,
        gs: u64,
    ) -> Result<((), Vec<Op>), FsError> {
        let slot = self.check_uc_block(pool, old, client_name)?;
        let Some(b) = self.last_block(slot) else {
            return Err(FsError::Io(format!(
                "updatePipeline of blk_{}: no block",
                old.id
            )));
        };
        if b.gs == gs {
            return Ok(((), Vec::new()));
        }
        if gs < b.gs || gs >= self.next_gs() {
            return Err(FsError::Io(format!(
                "updatePipeline of blk_{}_{gs}: the file is writing blk_{}_{}, and stamp {gs} was not handed out for it",
                old.id, b.id, b.gs
            )));
        }
        Ok((
            (),
            vec![Op::BumpGenerationStamp {
                path: self.path_of(slot),
                id: b.id,
                gs,
            }],
        ))
    }

    /// The length the file has once its last block holds `last_len` bytes.
    pub fn length_with_last(&self, slot: Slot, last_len: u64) -> u64 {
        let blocks = self.inode(slot).file().map(|f| f.blocks()).unwrap_or(&[]);
        match blocks.split_last() {
            Some((_, earlier)) => earlier.iter().map(|b| b.len).sum::<u64>() + last_len,
            None => 0,
        }
    }

    /// The file's last block, if it has any.
    pub fn last_block(&self, slot: Slot) -> Option<Block> {
        self.inode(slot).file()?.blocks().last().copied()
    }

    /// The blocks of a file that overlap `[offset, offset + len)`, with the file's last
    /// block separately (clients use it to see whether the file is still being written).
    pub fn block_range(&self, slot: Slot, offset: u64, len: u64) -> BlockRange {
        let Some(f) = self.inode(slot).file() else {
            return BlockRange::default();
        };
        range_of(f.blocks(), f.len(), f.uc().is_some(), offset, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Namespace;

    fn open_file() -> Namespace {
        let mut ns = Namespace::new("hdfs", "supergroup", 0);
        ns.apply(&crate::ops::create_record("/f", 20000, 1024, "c"))
            .unwrap();
        ns
    }

    fn add(ns: &mut Namespace, prev: Option<Previous>) -> NewBlock {
        let (nb, planned) = ns.plan_add_block("/f", "c", 0, prev).unwrap();
        let applied = ns.apply_planned(&planned, |_, _| {});
        assert!(applied.failed.is_none(), "{applied:?}");
        nb
    }

    #[test]
    fn blocks_are_added_committed_and_retried_idempotently() {
        let mut ns = open_file();
        let NewBlock::Fresh(b1) = add(&mut ns, None) else {
            panic!("fresh")
        };
        assert_eq!(b1.offset, 0);
        // A lost reply: the same call again gets the same block.
        assert_eq!(add(&mut ns, None), NewBlock::Retry(b1));
        let p1 = Previous {
            id: b1.block.id,
            gs: b1.block.gs,
            len: 1024,
        };
        let NewBlock::Fresh(b2) = add(&mut ns, Some(p1)) else {
            panic!("fresh")
        };
        assert_eq!(b2.offset, 1024);
        assert_ne!(b2.block.id, b1.block.id);
        assert!(b2.block.gs > b1.block.gs);
        assert_eq!(add(&mut ns, Some(p1)), NewBlock::Retry(b2));
        // Someone else's previous block is refused, and so is another client.
        assert!(ns
            .plan_add_block(
                "/f",
                "c",
                0,
                Some(Previous {
                    id: 1,
                    gs: 1,
                    len: 0
                })
            )
            .is_err());
        assert!(matches!(
            ns.plan_add_block("/f", "other", 0, Some(p1)),
            Err(e) if e.is_lease_expired()
        ));
    }

    #[test]
    fn a_file_at_its_block_limit_gets_no_new_block_but_a_retry_is_answered() {
        let mut ns = open_file();
        ns.set_limits(crate::Limits {
            blocks_per_file: 2,
            ..Default::default()
        });
        let NewBlock::Fresh(b1) = add(&mut ns, None) else {
            panic!("fresh")
        };
        let p1 = Previous {
            id: b1.block.id,
            gs: b1.block.gs,
            len: 1024,
        };
        let NewBlock::Fresh(b2) = add(&mut ns, Some(p1)) else {
            panic!("fresh")
        };
        // The second block's answer was lost: asked again, it is still given.
        assert_eq!(add(&mut ns, Some(p1)), NewBlock::Retry(b2));
        let p2 = Previous {
            id: b2.block.id,
            gs: b2.block.gs,
            len: 1024,
        };
        match ns.plan_add_block("/f", "c", 0, Some(p2)) {
            Err(FsError::Io(m)) => assert_eq!(
                m,
                "File has reached the limit on maximum number of blocks \
                 (dfs.namenode.fs-limits.max-blocks-per-file): 2 >= 2"
            ),
            other => panic!("expected the limit, got {other:?}"),
        }
    }

    #[test]
    fn close_fixes_the_last_length_and_ranges_follow_offsets() {
        let mut ns = open_file();
        let NewBlock::Fresh(b1) = add(&mut ns, None) else {
            panic!()
        };
        add(
            &mut ns,
            Some(Previous {
                id: b1.block.id,
                gs: b1.block.gs,
                len: 1024,
            }),
        );
        let slot = ns.existing("/f").unwrap();
        assert_eq!(ns.length_with_last(slot, 100), 1124);
        ns.apply(&Op::Close {
            path: "/f".into(),
            mtime: 2,
            len: 1124,
        })
        .unwrap();
        let r = ns.block_range(slot, 0, u64::MAX);
        assert_eq!(r.file_len, 1124);
        assert_eq!(r.blocks.len(), 2);
        assert_eq!(r.blocks[1].block.len, 100);
        assert_eq!(r.blocks[1].offset, 1024);
        assert_eq!(ns.block_range(slot, 1024, 1).blocks.len(), 1);
        assert_eq!(ns.block_range(slot, 1000, 100).blocks.len(), 2);
        assert!(!r.under_construction);
        // Deleting the file frees both blocks.
        let fx = ns
            .apply(&Op::Delete {
                path: "/f".into(),
                mtime: 3,
            })
            .unwrap();
        assert_eq!(fx.removed_blocks.len(), 2);
        assert_eq!(ns.block_count(), 0);
    }

    #[test]
    fn pipeline_recovery_bumps_the_generation_stamp_of_the_last_block_only() {
        let mut ns = open_file();
        let NewBlock::Fresh(b1) = add(&mut ns, None) else {
            panic!()
        };
        let last_gs = |ns: &Namespace| {
            let slot = ns.block_file(b1.block.id).unwrap();
            ns.last_block(slot).unwrap().gs
        };
        let (p, ops) = ns.plan_bump_gs("BP", b1.block, "c").unwrap();
        assert!(p.block.gs > b1.block.gs);
        ns.apply(&ops[0]).unwrap();
        // Handed out, not yet the block's: a writer that dies now leaves the block at the
        // stamp its replicas have.
        assert_eq!(last_gs(&ns), b1.block.gs);
        // A stamp never handed out is refused; the one handed out is taken, once.
        assert!(ns
            .plan_update_pipeline("BP", "c", b1.block, p.block.gs + 1)
            .is_err());
        let ((), ops) = ns
            .plan_update_pipeline("BP", "c", b1.block, p.block.gs)
            .unwrap();
        ns.apply(&ops[0]).unwrap();
        assert_eq!(last_gs(&ns), p.block.gs);
        let ((), again) = ns
            .plan_update_pipeline("BP", "c", b1.block, p.block.gs)
            .unwrap();
        assert!(again.is_empty());
        assert!(ns
            .plan_update_pipeline("BP", "c", b1.block, b1.block.gs)
            .is_err());
        let e = ns.plan_bump_gs("BP", b1.block, "intruder").unwrap_err();
        assert!(e.is_lease_expired(), "{e}");
        // The next block's stamp stays above every stamp handed out.
        let NewBlock::Fresh(b2) = add(
            &mut ns,
            Some(Previous {
                id: b1.block.id,
                gs: b1.block.gs,
                len: 1024,
            }),
        ) else {
            panic!()
        };
        assert!(b2.block.gs > p.block.gs);
        let e = ns.plan_bump_gs("BP", b1.block, "c").unwrap_err();
        assert!(
            e.to_string()
                .contains("is COMPLETE but not UNDER_CONSTRUCTION"),
            "no longer the last block: {e}"
        );
    }

    #[test]
    fn abandon_drops_only_the_last_block() {
        let mut ns = open_file();
        let NewBlock::Fresh(b1) = add(&mut ns, None) else {
            panic!()
        };
        let (_, ops) = ns.plan_abandon_block("/f", "c", 0, 12345).unwrap();
        assert!(ops.is_empty());
        let (_, ops) = ns.plan_abandon_block("/f", "c", 0, b1.block.id).unwrap();
        let fx = ns.apply(&ops[0]).unwrap();
        assert_eq!(fx.removed_blocks, vec![(b1.block.id, b1.block.gs)]);
        // The id is not reused.
        let NewBlock::Fresh(b) = add(&mut ns, None) else {
            panic!()
        };
        assert!(b.block.id > b1.block.id);
    }
}
