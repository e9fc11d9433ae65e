//! Planning append: a closed file opens for write again, going on in its last block when
//! that block has room, else in a new one.

use super::blocks::Placed;
use super::inode::UnderConstruction;
use super::perm::{Caller, WRITE};
use super::{At, Namespace, Op, Planned};
use crate::error::{FsError, HeldBy};

/// What append decided.
#[derive(Debug, PartialEq, Eq)]
pub struct Appended {
    /// The file's inode id.
    pub file_id: u64,
    /// The last block to go on writing (None: the next write starts a new block).
    pub last: Option<Placed>,
}

/// HDFS's answer to a call that needs a file someone holds open: the holder itself
/// (`… is already the current lease holder`), or another client.
pub(super) fn lease_conflict(
    op: &str,
    src: &str,
    client_name: &str,
    client_machine: &str,
    uc: &UnderConstruction,
) -> FsError {
    let held = if uc.client_name == client_name {
        HeldBy::Caller
    } else {
        HeldBy::Other {
            client: uc.client_name.to_string(),
            machine: uc.client_machine.to_string(),
        }
    };
    FsError::LeaseConflict(Box::new(crate::error::Conflict {
        op: op.to_string(),
        path: src.to_string(),
        client: client_name.to_string(),
        machine: client_machine.to_string(),
        held,
    }))
}

impl Namespace {
    /// Plans append of `src` by `client_name`. A file open for write is refused here with
    /// HDFS's message for a file owned by another client; the caller decides first whether
    /// that holder's lease should be recovered (see `rpc::append`).
    pub fn plan_append(
        &self,
        caller: &Caller,
        src: &str,
        client_name: &str,
        client_machine: &str,
        new_block: bool,
    ) -> Result<(Appended, Planned), FsError> {
        let comps = super::path::components(src)?;
        let walk = self.walk(&comps)?;
        self.check_traverse(caller, &walk)?;
        let Some(slot) = walk.target() else {
            return Err(FsError::NotFound(format!(
                "Failed to append to non-existent file {src} for client {client_machine}"
            )));
        };
        let inode = self.inode(slot);
        let Some(file) = inode.file() else {
            return Err(FsError::AlreadyExists(format!(
                "Cannot append to directory {src}; already exists as a directory."
            )));
        };
        self.check_access(caller, slot, WRITE)?;
        if let Some(uc) = file.uc() {
            return Err(lease_conflict(
                "APPEND_FILE",
                src,
                client_name,
                client_machine,
                uc,
            ));
        }
        let blocks = file.blocks();
        let last = blocks.last().copied();
        let last_len = last.map_or(0, |b| b.len);
        let offset = file.len() - last_len;
        let go_on = last
            .filter(|b| !new_block && b.len < file.block_size)
            .map(|block| Placed { block, offset });
        // Reopened, the last block is charged at the full preferred size, as HDFS charges a
        // block being written.
        if let Some(b) = last {
            let bytes = file.len() - b.len + file.block_size.max(b.len);
            self.check_file_growth(slot, bytes, inode.replication)?;
        }
        let op = Op::Append {
            path: self.path_of(slot),
            client_name: client_name.to_string(),
            client_machine: client_machine.to_string(),
            last_len,
        };
        let appended = Appended {
            file_id: inode.id,
            last: go_on,
        };
        Ok((appended, Planned::at(At::slot(slot), vec![op])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{NewBlock, Previous};

    /// A file of `len` bytes in blocks of 1,024, closed.
    fn closed_file(len: u64) -> Namespace {
        let mut ns = Namespace::new("hdfs", "supergroup", 0);
        ns.apply(&crate::ops::create_record("/f", 20000, 1024, "writer"))
            .unwrap();
        let mut prev: Option<Previous> = None;
        let mut left = len;
        while left > 0 {
            let (nb, planned) = ns.plan_add_block("/f", "writer", 0, prev).unwrap();
            ns.apply_planned(&planned, |_, _| {});
            let NewBlock::Fresh(p) = nb else { panic!() };
            let l = left.min(1024);
            prev = Some(Previous {
                id: p.block.id,
                gs: p.block.gs,
                len: l,
            });
            left -= l;
        }
        ns.apply(&Op::Close {
            path: "/f".into(),
            mtime: 2,
            len,
        })
        .unwrap();
        ns
    }

    fn su() -> Caller {
        Caller::superuser("hdfs")
    }

    #[test]
    fn append_goes_on_in_a_partial_last_block_or_starts_a_new_one() {
        let mut ns = closed_file(1500);
        let (a, planned) = ns.plan_append(&su(), "/f", "c2", "m2", false).unwrap();
        let last = a.last.expect("room in the last block");
        assert_eq!((last.offset, last.block.len), (1024, 476));
        ns.apply_planned(&planned, |_, _| {});
        let slot = ns.existing("/f").unwrap();
        assert_eq!(ns.status(slot, false).len, 1500, "the length is kept");
        assert!(ns.status(slot, false).under_construction);
        // A second append while it is open: HDFS's answers for both holders.
        match ns.plan_append(&su(), "/f", "c2", "m2", false) {
            Err(e @ FsError::LeaseConflict(_)) => {
                let m = e.to_string();
                assert!(
                    m == "Failed to APPEND_FILE /f for c2 on m2 because c2 is already the current lease holder.",
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
        match ns.plan_append(&su(), "/f", "c3", "m3", false) {
            Err(e @ FsError::LeaseConflict(_)) => assert_eq!(
                e.to_string(),
                "Failed to APPEND_FILE /f for c3 on m3 because this file lease is currently owned by c2 on m2"
            ),
            other => panic!("{other:?}"),
        }
        // Writing on: the next addBlock names the reopened block as previous.
        let (nb, _) = ns
            .plan_add_block(
                "/f",
                "c2",
                0,
                Some(Previous {
                    id: last.block.id,
                    gs: last.block.gs,
                    len: 1024,
                }),
            )
            .unwrap();
        let NewBlock::Fresh(p) = nb else { panic!() };
        assert_eq!(p.offset, 2048);
    }

    #[test]
    fn a_full_last_block_or_new_block_starts_a_fresh_block_after_it() {
        for (len, new_block) in [(2048, false), (1500, true)] {
            let mut ns = closed_file(len);
            let (a, planned) = ns.plan_append(&su(), "/f", "c2", "m2", new_block).unwrap();
            assert_eq!(a.last, None);
            ns.apply_planned(&planned, |_, _| {});
            let (nb, planned) = ns.plan_add_block("/f", "c2", 0, None).unwrap();
            let NewBlock::Fresh(p) = nb else { panic!() };
            assert_eq!(p.offset, len);
            ns.apply_planned(&planned, |_, _| {});
            let slot = ns.existing("/f").unwrap();
            assert_eq!(ns.length_with_last(slot, 10), len + 10);
        }
    }

    #[test]
    fn append_refuses_what_hdfs_refuses() {
        let ns = closed_file(10);
        assert!(matches!(
            ns.plan_append(&su(), "/missing", "c", "m", false),
            Err(FsError::NotFound(m)) if m == "Failed to append to non-existent file /missing for client m"
        ));
        assert!(matches!(
            ns.plan_append(&su(), "/", "c", "m", false),
            Err(FsError::AlreadyExists(_))
        ));
    }
}
