//! Whether a writer's call may touch the file it names, checked as HDFS checks it: the
//! file calls (addBlock, getAdditionalDatanode, fsync, abandonBlock, complete) by
//! `checkLease`, the block calls of pipeline recovery (updateBlockForPipeline,
//! updatePipeline) by `checkUCBlock`. A writer that wakes after its file was recovered,
//! moved, deleted or replaced learns so with HDFS's exception and message, and changes
//! nothing.

use super::inode::{Block, Slot};
use super::Namespace;
use crate::error::{FsError, LeaseGone};

/// The file a writer's call found, and its path when that is no longer the one the call
/// named (the file was renamed while it was written).
pub struct Held {
    pub slot: Slot,
    pub moved: Option<String>,
}

impl Namespace {
    /// HDFS's `checkLease`: the file `holder` writes, found by its inode id (`file_id`;
    /// `0`, from an old client: by `src`), must still be a live file under construction
    /// whose lease `holder` holds.
    pub fn check_lease(&self, src: &str, holder: &str, file_id: u64) -> Result<Held, FsError> {
        let Some(held) = self.writer_file(src, file_id) else {
            return Err(FsError::file_not_found(
                self.lease_text(src, file_id, holder),
            ));
        };
        let at = held.moved.as_deref().unwrap_or(src);
        let gone = |gone| FsError::LeaseGone {
            gone,
            lease: self.lease_text(at, file_id, holder),
        };
        let Some(file) = self.inode(held.slot).file() else {
            return Err(gone(LeaseGone::NotAFile));
        };
        let Some(uc) = file.uc() else {
            return Err(gone(LeaseGone::Closed));
        };
        if uc.client_name != holder {
            return Err(FsError::NotLeaseOwner {
                client: holder.to_string(),
                owner: uc.client_name.to_string(),
                lease: self.lease_text(at, file_id, holder),
            });
        }
        Ok(held)
    }

    /// The inode a writer's call names: by path without an id; with one, the inode at
    /// `src` if it has that id, else wherever that inode is now in the live tree. A file
    /// neither open nor at its path is looked for by a scan of the inodes, on this error
    /// path only (see `slot_of_id`).
    pub(super) fn writer_file(&self, src: &str, file_id: u64) -> Option<Held> {
        let at_path = self.existing(src).ok();
        if file_id == 0 {
            return at_path.map(|slot| Held { slot, moved: None });
        }
        if let Some(slot) = at_path.filter(|&s| self.inode(s).id == file_id) {
            return Some(Held { slot, moved: None });
        }
        let slot = self.slot_of_id(file_id).filter(|&s| self.is_live(s))?;
        Some(Held {
            slot,
            moved: Some(self.path_of(slot)),
        })
    }

    /// What HDFS's lease messages end with: the path, the inode id the call gave, and the
    /// holder's lease (`[Lease.  Holder: H, pending creates: N]`, or that it has none).
    fn lease_text(&self, src: &str, file_id: u64, holder: &str) -> String {
        let held = self.open_files().filter(|&(_, h)| h == holder).count();
        let lease = if held == 0 {
            format!("Holder {holder} does not have any open files.")
        } else {
            format!("[Lease.  Holder: {holder}, pending creates: {held}]")
        };
        format!("{src} (inode {file_id}) {lease}")
    }

    /// HDFS's `checkUCBlock`: `block` (as the client names it, in block pool `pool`) must
    /// be the block under construction of a file `holder` writes. Answers that file.
    pub fn check_uc_block(&self, pool: &str, block: Block, holder: &str) -> Result<Slot, FsError> {
        let named = format!("{pool}:blk_{}_{}", block.id, block.gs);
        let Some(slot) = self.block_file(block.id) else {
            return Err(FsError::Io(format!("{named} does not exist.")));
        };
        let file = self.inode(slot).file();
        let uc = file.and_then(|f| f.uc());
        let last = file.and_then(|f| f.blocks().last());
        let Some(uc) = uc.filter(|_| last.map(|b| b.id) == Some(block.id)) else {
            return Err(FsError::Io(format!(
                "Unexpected BlockUCState: {named} is COMPLETE but not UNDER_CONSTRUCTION"
            )));
        };
        if !self.is_live(slot) {
            let stored = last.expect("the block is the file's last");
            return Err(FsError::Io(format!(
                "The file blk_{}_{} belonged to does not exist or it is not under construction.",
                stored.id, stored.gs
            )));
        }
        if uc.client_name != holder {
            return Err(FsError::LeaseMismatch {
                block: named,
                owner: uc.client_name.to_string(),
                client: holder.to_string(),
            });
        }
        Ok(slot)
    }
}
