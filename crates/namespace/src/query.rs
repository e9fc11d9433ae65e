//! Read-only questions about the tree: file status, paged listings, content summaries.

use super::inode::{Body, Slot, PERM_MASK, ROOT_INODE_ID};
use super::path::components;
use super::perm::{Caller, EXECUTE, READ};
use super::snapshot::space::{Kept, SnapshotSpace};
use super::{Namespace, Op};
use crate::error::FsError;

/// What `HdfsFileStatusProto` carries, without the wire encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileStatus {
    pub is_dir: bool,
    /// Local name (empty for the status of a path itself).
    pub name: Vec<u8>,
    pub len: u64,
    pub perm: u16,
    pub owner: String,
    pub group: String,
    pub mtime: i64,
    pub atime: i64,
    pub replication: u16,
    pub block_size: u64,
    pub file_id: u64,
    /// Entries of a directory; 0 for a file, as HDFS 3.4.1's NameNode answers (the
    /// protobuf field's default is -1, but HDFS sets it).
    pub children: i32,
    pub under_construction: bool,
    /// The storage policy in force (its own or inherited; 0: none).
    pub storage_policy: u8,
    /// It has an ACL (`ls` shows a `+`).
    pub has_acl: bool,
    /// A snapshottable directory (HDFS's `SNAPSHOT_ENABLED` flag; the root always is).
    pub snapshot_enabled: bool,
}

pub struct Listing {
    pub entries: Vec<FileStatus>,
    /// Each entry's inode, in the same order.
    pub slots: Vec<Slot>,
    pub remaining: u32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContentSummary {
    pub length: u64,
    pub files: u64,
    pub dirs: u64,
    pub space_consumed: u64,
    /// Of the figures above, what only snapshots keep (deleted subtrees they list).
    pub snapshot: Kept,
}

impl ContentSummary {
    /// Adds what snapshots keep, as HDFS counts it into a live path's summary.
    pub fn with_snapshots(mut self, s: SnapshotSpace) -> Self {
        self.length += s.deleted.length;
        self.files += s.deleted.files;
        self.dirs += s.deleted.dirs;
        self.space_consumed += s.deleted.space + s.cut_off_space;
        self.snapshot = s.deleted;
        self
    }
}

/// The status of the file a create record makes, as [`Namespace::status`] reads it once the
/// record is applied: create answers with it after the writers' turn is released, without
/// looking the file up again. `None` for any other record.
pub fn created_status(op: &Op) -> Option<FileStatus> {
    let Op::Create {
        id,
        perm,
        owner,
        group,
        mtime,
        replication,
        block_size,
        ..
    } = op
    else {
        return None;
    };
    Some(FileStatus {
        is_dir: false,
        name: Vec::new(),
        len: 0,
        perm: perm & PERM_MASK,
        owner: owner.clone(),
        group: group.clone(),
        mtime: *mtime,
        atime: *mtime,
        replication: *replication,
        block_size: *block_size,
        file_id: *id,
        children: 0,
        under_construction: true,
        // The caller knows the parent's policy and default ACL
        // (`Namespace::policy_for_new`, `Namespace::inherited_by_new`).
        storage_policy: 0,
        has_acl: false,
        snapshot_enabled: false,
    })
}

impl Namespace {
    pub fn status(&self, slot: Slot, with_name: bool) -> FileStatus {
        let inode = self.inode(slot);
        let (len, replication, block_size, children, uc) = match &inode.body {
            Body::Dir(c) => (0, 0, 0, c.len() as i32, false),
            Body::File(f) => (
                f.len(),
                inode.replication,
                f.block_size,
                0,
                f.uc().is_some(),
            ),
        };
        FileStatus {
            is_dir: inode.is_dir(),
            name: if with_name {
                self.name(slot).to_vec()
            } else {
                Vec::new()
            },
            len,
            perm: inode.perm,
            owner: self.user_name(inode.owner).to_string(),
            group: self.user_name(inode.group).to_string(),
            mtime: inode.mtime,
            atime: inode.atime,
            replication,
            block_size,
            file_id: inode.id,
            children,
            under_construction: uc,
            storage_policy: self.storage_policy_of(slot),
            has_acl: self.has_acl(slot),
            snapshot_enabled: inode.is_dir()
                && (inode.id == ROOT_INODE_ID || self.is_snapshot_root(slot)),
        }
    }

    /// `getFileInfo`: `Ok(None)` when the path does not exist.
    pub fn get_file_info(&self, caller: &Caller, src: &str) -> Result<Option<FileStatus>, FsError> {
        if let Some(r) = self.snapshot_lookup(caller, src)? {
            return Ok(r.map(|r| self.snapshot_status(&r)));
        }
        Ok(self.lookup(caller, src)?.map(|t| self.status(t, false)))
    }

    /// The inode at `src` after the traverse check, `Ok(None)` when there is none.
    pub fn lookup(&self, caller: &Caller, src: &str) -> Result<Option<Slot>, FsError> {
        let comps = components(src)?;
        let walk = self.walk(&comps)?;
        self.check_traverse(caller, &walk)?;
        Ok(walk.target())
    }

    /// `getListing`: entries named strictly after `start_after`, at most `limit` of them.
    /// `Ok(None)` when the path does not exist; a file lists as itself with an empty name.
    pub fn list(
        &self,
        caller: &Caller,
        src: &str,
        start_after: &[u8],
        limit: usize,
    ) -> Result<Option<Listing>, FsError> {
        if let Some(r) = self.snapshot_lookup(caller, src)? {
            return match r {
                Some(r) => Ok(Some(self.snapshot_listing(&r, start_after, limit)?)),
                None => Ok(None),
            };
        }
        let comps = components(src)?;
        let walk = self.walk(&comps)?;
        self.check_traverse(caller, &walk)?;
        let Some(t) = walk.target() else {
            return Ok(None);
        };
        let Some(children) = self.inode(t).children() else {
            return Ok(Some(Listing {
                entries: vec![self.status(t, false)],
                slots: vec![t],
                remaining: 0,
            }));
        };
        self.check_access(caller, t, READ | EXECUTE)?;
        let start = children.partition_point(|c| self.name(c) <= start_after);
        let end = (start + limit.max(1)).min(children.len());
        let slots: Vec<Slot> = children.range(start..end).collect();
        let entries = slots.iter().map(|&c| self.status(c, true)).collect();
        Ok(Some(Listing {
            entries,
            slots,
            remaining: (children.len() - end) as u32,
        }))
    }

    /// An exact walk of the subtree. Needs READ_EXECUTE on every directory in it, as in HDFS.
    pub fn content_summary(&self, caller: &Caller, src: &str) -> Result<ContentSummary, FsError> {
        let t = self.resolve_slot(caller, src)?;
        self.check_subtree(caller, t, READ | EXECUTE)?;
        let mut sum = ContentSummary::default();
        let mut stack = vec![t];
        while let Some(s) = stack.pop() {
            match &self.inode(s).body {
                Body::Dir(c) => {
                    sum.dirs += 1;
                    stack.extend(c.slots());
                }
                Body::File(f) => {
                    sum.files += 1;
                    sum.length += f.len();
                    sum.space_consumed += f.len() * self.inode(s).replication as u64;
                }
            }
        }
        Ok(sum.with_snapshots(self.snapshot_space(t)))
    }

    /// The file status at `src`, which must be a file (for block-size and closed queries).
    pub fn file_status(&self, caller: &Caller, src: &str) -> Result<FileStatus, FsError> {
        self.file_slot(caller, src)
            .map(|slot| self.status(slot, false))
    }

    /// The file at `src` after the traverse check; HDFS's errors for a missing path or a directory.
    pub fn file_slot(&self, caller: &Caller, src: &str) -> Result<Slot, FsError> {
        let slot = self.resolve_slot(caller, src)?;
        if self.inode(slot).is_dir() {
            return Err(FsError::not_a_file(src));
        }
        Ok(slot)
    }

    /// Every (path, status) under `dir`, depth first; used by the trash emptier and tests.
    pub fn children_names(&self, dir: Slot) -> Vec<(String, Slot)> {
        self.inode(dir)
            .children()
            .map(|c| {
                c.slots()
                    .map(|s| (String::from_utf8_lossy(self.name(s)).into_owned(), s))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A canonical text dump of the whole tree (one line per inode, sorted by path), used to
    /// compare namespaces built in different ways.
    pub fn dump(&self) -> String {
        let mut out = String::new();
        let mut stack = vec![(String::from("/"), super::inode::ROOT_SLOT)];
        let mut lines = Vec::new();
        while let Some((path, s)) = stack.pop() {
            let st = self.status(s, false);
            let blocks: Vec<String> = self
                .inode(s)
                .file()
                .map(|f| {
                    f.blocks()
                        .iter()
                        .map(|b| format!("{}:{}:{}", b.id, b.gs, b.len))
                        .collect()
                })
                .unwrap_or_default();
            let xattrs: Vec<String> = self
                .xattrs_of(s)
                .iter()
                .map(|x| format!("{}={:?}", x.prefixed(), x.value))
                .chain(
                    self.features
                        .get(&s)
                        .filter(|f| f.storage_policy != 0)
                        .map(|f| format!("policy={}", f.storage_policy)),
                )
                .chain(self.acl_of(s).iter().map(|e| format!("acl={e}")))
                .collect();
            lines.push(format!(
                "{path} id={} dir={} len={} perm={:o} {}:{} m={} a={} r={} bs={} uc={} blocks=[{}] xattrs=[{}]",
                st.file_id,
                st.is_dir,
                st.len,
                st.perm,
                st.owner,
                st.group,
                st.mtime,
                st.atime,
                st.replication,
                st.block_size,
                st.under_construction,
                blocks.join(","),
                xattrs.join(",")
            ));
            for (name, c) in self.children_names(s) {
                stack.push((super::path::child_of(&path, &name), c));
            }
        }
        lines.sort();
        for l in lines {
            out.push_str(&l);
            out.push('\n');
        }
        out
    }
}
