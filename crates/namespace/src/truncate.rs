//! Planning truncate and concat: the calls that reshape closed files' block lists.

use super::perm::{Caller, READ, WRITE};
use super::{At, Namespace, Op, Planned};
use crate::error::{FsError, ReshapeError};

/// What truncate decided.
#[derive(Debug, PartialEq, Eq)]
pub struct Truncated {
    pub file_id: u64,
    /// The block the cut falls inside, with the bytes it keeps: block recovery cuts its
    /// replicas (or, copy-on-truncate, fills the new block that replaces it: this is then
    /// the new block's id), and the file stays open until then. None when the file is
    /// ready now.
    pub recover: Option<(u64, u64)>,
}

impl Namespace {
    /// Plans truncate of `src` to `len` bytes by `client_name`, with HDFS's checks. A file
    /// open for write is refused here as append refuses it; the caller settles an
    /// abandoned lease first.
    pub fn plan_truncate(
        &self,
        caller: &Caller,
        src: &str,
        len: u64,
        client_name: &str,
        client_machine: &str,
        now: i64,
    ) -> Result<(Truncated, Planned), FsError> {
        if len > i64::MAX as u64 {
            return Err(ReshapeError::NegativeLength(len as i64).into());
        }
        let (slot, path) = self.resolve_checked(caller, src)?;
        self.check_access(caller, slot, WRITE)?;
        let inode = self.inode(slot);
        let Some(file) = inode.file() else {
            return Err(FsError::not_a_file(&path));
        };
        if let Some(uc) = file.uc() {
            return Err(super::append::lease_conflict(
                "TRUNCATE_FILE",
                &path,
                client_name,
                client_machine,
                uc,
            ));
        }
        let old = file.len();
        let mut done = Truncated {
            file_id: inode.id,
            recover: None,
        };
        if old == len {
            return Ok((done, Planned::default()));
        }
        if old < len {
            return Err(ReshapeError::Longer {
                current: old,
                wanted: len,
            }
            .into());
        }
        let mut start = 0;
        let mut cut = None;
        for b in file.blocks() {
            if start < len && len < start + b.len {
                done.recover = Some((b.id, len - start));
                cut = Some((len - start, b.len));
                break;
            }
            start += b.len;
        }
        // A block a snapshot shows keeps its bytes: recovery copies what the cut keeps
        // into a new block instead (HDFS's copy-on-truncate).
        let copy = done
            .recover
            .filter(|&(id, _)| self.snapshot_needs_block(slot, id))
            .map(|_| self.next_block());
        // Cut inside a block, the file is open while its last block is recovered, and that
        // block is charged at the full preferred size meanwhile (as HDFS charges it).
        let charged = match cut {
            Some((keep, _)) => len - keep + file.block_size.max(keep),
            None => len,
        };
        self.check_file_growth(slot, charged, inode.replication)?;
        let mut ops = vec![Op::Truncate {
            path: path.clone(),
            len,
            mtime: now,
            client_name: client_name.to_string(),
            client_machine: client_machine.to_string(),
            cut,
        }];
        if let Some((id, gs)) = copy {
            ops.push(Op::CopyOnTruncate { path, id, gs });
            if let Some((block, _)) = done.recover.as_mut() {
                *block = id;
            }
        }
        Ok((done, Planned::at(At::slot(slot), ops)))
    }

    /// Plans concat of `srcs` onto `target`, with HDFS's rules: every file in the target's
    /// directory, closed, the sources non-empty, distinct, not the target, and with a
    /// preferred block size no larger than the target's.
    pub fn plan_concat(
        &self,
        caller: &Caller,
        target: &str,
        srcs: &[String],
        now: i64,
    ) -> Result<Planned, FsError> {
        if target.is_empty() {
            return Err(ReshapeError::NoTarget.into());
        }
        if srcs.is_empty() {
            return Err(ReshapeError::NoSources.into());
        }
        let (t, target_path) = self.resolve_checked(caller, target)?;
        self.check_access(caller, t, WRITE)?;
        let Some(tf) = self.inode(t).file() else {
            return Err(FsError::not_a_file(&target_path));
        };
        if tf.uc().is_some() {
            return Err(ReshapeError::TargetOpen {
                target: target_path,
            }
            .into());
        }
        let parent = self.inode(t).parent;
        let mut seen = std::collections::HashSet::new();
        let mut paths = Vec::with_capacity(srcs.len());
        for src in srcs {
            let (s, path) = self.resolve_checked(caller, src)?;
            self.check_access(caller, s, READ)?;
            self.check_access(caller, self.inode(s).parent, WRITE)?;
            let Some(sf) = self.inode(s).file() else {
                return Err(FsError::not_a_file(&path));
            };
            if self.inode(s).parent != parent {
                return Err(ReshapeError::OtherDirectory {
                    src: path,
                    target: target_path,
                }
                .into());
            }
            if s == t {
                return Err(ReshapeError::SourceIsTarget {
                    src: path,
                    target: target_path,
                }
                .into());
            }
            if self.in_snapshot(s) {
                return Err(
                    crate::snapshot::error::SnapshotError::ConcatSourceInSnapshot {
                        path: path.to_string(),
                    }
                    .into(),
                );
            }
            if sf.uc().is_some() || sf.blocks().is_empty() {
                return Err(ReshapeError::SourceUnusable { src: path }.into());
            }
            if sf.block_size > tf.block_size {
                return Err(ReshapeError::LargerBlocks {
                    src: path,
                    src_block: sf.block_size,
                    target_block: tf.block_size,
                }
                .into());
            }
            seen.insert(s);
            paths.push(path);
        }
        if seen.len() < srcs.len() {
            return Err(ReshapeError::RepeatedSource.into());
        }
        self.check_concat_quota(t, &seen.iter().copied().collect::<Vec<_>>())?;
        let op = Op::Concat {
            target: target_path,
            srcs: paths,
            mtime: now,
        };
        Ok(Planned::at(At::slot(t), vec![op]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{NewBlock, Previous};
    use crate::Namespace;

    fn su() -> Caller {
        Caller::superuser("hdfs")
    }

    /// Closed file `path` of `len` bytes in blocks of `bs`.
    fn file(ns: &mut Namespace, path: &str, id: u64, len: u64, bs: u64) {
        ns.apply(&crate::ops::create_record(path, id, bs, "w"))
            .unwrap();
        let (mut prev, mut left) = (None, len);
        while left > 0 {
            let (nb, planned) = ns.plan_add_block(path, "w", 0, prev).unwrap();
            ns.apply_planned(&planned, |_, _| {});
            let NewBlock::Fresh(p) = nb else { panic!() };
            let l = left.min(bs);
            prev = Some(Previous {
                id: p.block.id,
                gs: p.block.gs,
                len: l,
            });
            left -= l;
        }
        ns.apply(&Op::Close {
            path: path.into(),
            mtime: 2,
            len,
        })
        .unwrap();
    }

    fn len_of(ns: &Namespace, path: &str) -> (u64, bool) {
        let st = ns.status(ns.existing(path).unwrap(), false);
        (st.len, st.under_construction)
    }

    #[test]
    fn a_cut_on_a_boundary_is_done_at_once_and_one_inside_a_block_waits_for_recovery() {
        let mut ns = Namespace::new("hdfs", "supergroup", 0);
        file(&mut ns, "/f", 16400, 2500, 1024);
        let (t, planned) = ns.plan_truncate(&su(), "/f", 2048, "c", "m", 5).unwrap();
        assert_eq!(t.recover, None);
        let applied = ns.apply_planned(&planned, |_, fx| assert_eq!(fx.removed_blocks.len(), 1));
        assert!(applied.failed.is_none());
        assert_eq!(len_of(&ns, "/f"), (2048, false));
        // Inside the second block: it shows whole, open, until recovery cuts it.
        let (t, planned) = ns.plan_truncate(&su(), "/f", 1100, "c", "m", 6).unwrap();
        let (block, kept) = t.recover.expect("a block to recover");
        assert_eq!(kept, 76);
        ns.apply_planned(&planned, |_, _| {});
        assert_eq!(len_of(&ns, "/f"), (2048, true));
        ns.apply(&Op::UpdateLastBlock {
            path: "/f".into(),
            id: block,
            gs: 5000,
            len: kept,
        })
        .unwrap();
        ns.apply(&Op::Close {
            path: "/f".into(),
            mtime: 7,
            len: 1100,
        })
        .unwrap();
        assert_eq!(len_of(&ns, "/f"), (1100, false));
        assert!(matches!(
            ns.plan_truncate(&su(), "/f", 1101, "c", "m", 8),
            Err(FsError::Reshape(ReshapeError::Longer {
                current: 1100,
                wanted: 1101
            }))
        ));
        assert!(matches!(
            ns.plan_truncate(&su(), "/", 0, "c", "m", 8),
            Err(e) if e.is_not_found()
        ));
        let (t, planned) = ns.plan_truncate(&su(), "/f", 1100, "c", "m", 8).unwrap();
        assert!(
            t.recover.is_none() && planned.ops.is_empty(),
            "same length: nothing to do"
        );
    }

    #[test]
    fn concat_moves_blocks_in_order_and_refuses_what_hdfs_refuses() {
        let mut ns = Namespace::new("hdfs", "supergroup", 0);
        for (i, d) in ["/d", "/e"].iter().enumerate() {
            ns.apply(&crate::ops::mkdir_record(d, 16390 + i as u64, 1))
                .unwrap();
        }
        file(&mut ns, "/d/t", 16400, 1500, 1024);
        file(&mut ns, "/d/a", 16401, 300, 1024);
        file(&mut ns, "/d/b", 16402, 2048, 1024);
        file(&mut ns, "/d/empty", 16403, 0, 1024);
        file(&mut ns, "/d/big", 16404, 10, 4096);
        file(&mut ns, "/e/x", 16405, 10, 1024);
        let refused = |ns: &Namespace, srcs: &[&str]| {
            let srcs: Vec<String> = srcs.iter().map(|s| s.to_string()).collect();
            match ns.plan_concat(&su(), "/d/t", &srcs, 9) {
                Err(e @ FsError::Reshape(_)) => e.to_string(),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(
            refused(&ns, &["/d/t"]),
            "concat: the src file /d/t is the same with the target file /d/t"
        );
        assert_eq!(
            refused(&ns, &["/d/empty"]),
            "concat: source file /d/empty is invalid or empty or underConstruction"
        );
        assert_eq!(
            refused(&ns, &["/e/x"]),
            "Source file /e/x is not in the same directory with the target /d/t"
        );
        assert_eq!(
            refused(&ns, &["/d/a", "/d/a"]),
            "concat: at least two of the source files are the same"
        );
        assert!(refused(&ns, &["/d/big"])
            .contains("which is greater than the target file's preferred block size 1024"));
        let before: Vec<u64> = ["/d/t", "/d/a", "/d/b"]
            .iter()
            .flat_map(|p| {
                ns.inode(ns.existing(p).unwrap())
                    .file()
                    .unwrap()
                    .blocks()
                    .iter()
                    .map(|b| b.id)
                    .collect::<Vec<_>>()
            })
            .collect();
        let planned = ns
            .plan_concat(&su(), "/d/t", &["/d/a".into(), "/d/b".into()], 9)
            .unwrap();
        let applied = ns.apply_planned(&planned, |_, fx| assert!(fx.removed_blocks.is_empty()));
        assert!(applied.failed.is_none());
        let t = ns.existing("/d/t").unwrap();
        let after: Vec<u64> = ns
            .inode(t)
            .file()
            .unwrap()
            .blocks()
            .iter()
            .map(|b| b.id)
            .collect();
        assert_eq!(after, before);
        assert_eq!(len_of(&ns, "/d/t"), (1500 + 300 + 2048, false));
        assert!(ns.existing("/d/a").is_err() && ns.existing("/d/b").is_err());
        for (i, id) in after.iter().enumerate() {
            assert_eq!(ns.block_position(*id), Some((t, i)));
        }
        let r = ns.block_range(t, 1600, 10);
        assert_eq!(
            r.blocks[0].offset, 1500,
            "the moved block starts where the target ended"
        );
    }
}
