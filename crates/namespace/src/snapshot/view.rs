//! Reading the past: `/dir/.snapshot` (a snapshottable directory's snapshots) and
//! `/dir/.snapshot/NAME/...` (the subtree as snapshot NAME shows it). An inode's state at
//! snapshot `s` is its first version tagged `s` or later, else its live state; a
//! directory's children at `s` are its live ones with every later version's changes
//! undone (see `snapshot/mod.rs`). Read-only: nothing here changes the tree.

use crate::inode::{Block, Body, Slot};
use crate::path::DOT_SNAPSHOT;
use crate::perm::{Caller, EXECUTE};
use crate::query::{FileStatus, Listing};
use crate::snapshot::space::Kept;
use crate::snapshot::{Frozen, SnapId};
use crate::storage_policy::UNSPECIFIED;

use crate::error::FsError;
use crate::fast::{FastMap, FastSet};
use crate::Namespace;

/// What a path with a `.snapshot` in it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// `/dir/.snapshot`: the list of `dir`'s snapshots.
    DotSnapshot(Slot),
    /// An inode as snapshot `snap` shows it; `root_name` is the snapshot's name when the
    /// path names the snapshot itself (`/dir/.snapshot/NAME`), which is shown by that name.
    At {
        slot: Slot,
        snap: SnapId,
        root_name: Option<String>,
    },
}

/// A file as a snapshot shows it.
pub struct FileAt {
    pub id: u64,
    pub len: u64,
    pub blocks: Vec<Block>,
}

impl Namespace {
    /// What a path through a `.snapshot` names; `None` for any other path, which a byte
    /// search rules out before anything is split.
    pub fn snapshot_lookup(
        &self,
        caller: &Caller,
        src: &str,
    ) -> Result<Option<Option<Resolved>>, FsError> {
        if !src.contains(DOT_SNAPSHOT) {
            return Ok(None);
        }
        self.resolve_snapshot_path(caller, &crate::path::components(src)?)
    }

    /// `None` when `comps` has no `.snapshot` under a snapshottable directory (the path
    /// resolves as any other); `Some(None)` for a snapshot path that names nothing.
    pub fn resolve_snapshot_path(
        &self,
        caller: &Caller,
        comps: &[&str],
    ) -> Result<Option<Option<Resolved>>, FsError> {
        if self.snaps.roots.is_empty() {
            return Ok(None);
        }
        let Some(i) = comps.iter().position(|c| *c == DOT_SNAPSHOT) else {
            return Ok(None);
        };
        let walk = self.walk(&comps[..i])?;
        self.check_traverse(caller, &walk)?;
        let Some(dir) = walk.target() else {
            return Ok(Some(None));
        };
        let Some(root) = self.snaps.roots.get(&dir) else {
            return Ok(Some(None));
        };
        let Some(name) = comps.get(i + 1) else {
            return Ok(Some(Some(Resolved::DotSnapshot(dir))));
        };
        let Some(snap) = root.by_name(name) else {
            return Ok(Some(None));
        };
        let s = snap.id;
        let mut cur = dir;
        for c in &comps[i + 2..] {
            if !self.is_dir_at(cur, s) {
                return Ok(Some(None));
            }
            self.check_exec_at(caller, cur, s, comps)?;
            match self
                .children_at(cur, s)
                .into_iter()
                .find(|&k| self.name_at(k, s) == c.as_bytes())
            {
                Some(k) => cur = k,
                None => return Ok(Some(None)),
            }
        }
        Ok(Some(Some(Resolved::At {
            slot: cur,
            snap: s,
            root_name: (i + 2 == comps.len()).then(|| name.to_string()),
        })))
    }

    /// The version answering for snapshot `s`, if `slot` changed after it (none answers
    /// for the current state).
    pub(crate) fn version_at(&self, slot: Slot, s: SnapId) -> Option<&Frozen> {
        if s == crate::snapshot::CURRENT {
            return None;
        }
        self.snaps
            .versions
            .get(&slot)?
            .iter()
            .find(|v| v.tag >= s)
            .map(|v| &v.state)
    }

    pub fn name_at(&self, slot: Slot, s: SnapId) -> &[u8] {
        match self.version_at(slot, s) {
            Some(f) => &f.name,
            None => self.name(slot),
        }
    }

    pub(crate) fn is_dir_at(&self, slot: Slot, s: SnapId) -> bool {
        match self.version_at(slot, s) {
            Some(f) => f.file.is_none(),
            None => self.arena.get(slot).is_dir(),
        }
    }

    /// Directory `dir`'s entries as snapshot `s` shows them, sorted by their names then.
    pub fn children_at(&self, dir: Slot, s: SnapId) -> Vec<Slot> {
        let mut out: Vec<Slot> = match &self.arena.get(dir).body {
            Body::Dir(c) => c.slots().collect(),
            Body::File(_) => return Vec::new(),
        };
        let Some(vs) = self.snaps.versions.get(&dir) else {
            return out;
        };
        let mut undone = false;
        for v in vs.iter().rev().take_while(|v| v.tag >= s) {
            if !v.created().is_empty() {
                let made: std::collections::HashSet<Slot> = v.created().iter().copied().collect();
                out.retain(|c| !made.contains(c));
            }
            out.extend(v.deleted().iter().copied());
            undone = true;
        }
        if undone {
            // In name order as the snapshot shows them (each name looked up once).
            let mut named: Vec<(&[u8], Slot)> =
                out.iter().map(|&c| (self.name_at(c, s), c)).collect();
            named.sort_unstable();
            named.dedup();
            out = named.into_iter().map(|(_, c)| c).collect();
        }
        out
    }

    /// Which of `cands` are entries of `dir` now: the start of
    /// [`members_at`](Self::members_at), shared by the two states a diff compares.
    pub(crate) fn live_members(&self, dir: Slot, cands: &[Slot]) -> FastMap<Slot, bool> {
        let Body::Dir(children) = &self.inode(dir).body else {
            return cands.iter().map(|&c| (c, false)).collect();
        };
        if cands.len() * 64 < children.len() {
            // A few among many: each looked up by name.
            return cands
                .iter()
                .map(|&c| {
                    let live =
                        self.inode(c).parent == dir && self.child(dir, self.name(c)) == Some(c);
                    (c, live)
                })
                .collect();
        }
        // Many: one pass over the entries beats a name search (random reads) for each.
        let here: FastSet<Slot> = children.slots().collect();
        cands.iter().map(|&c| (c, here.contains(&c))).collect()
    }

    /// Which candidates are entries of `dir` as snapshot `s` shows them (`live`: which are
    /// now): what [`children_at`](Self::children_at) would list, without the others.
    pub(crate) fn members_at(
        &self,
        dir: Slot,
        mut member: FastMap<Slot, bool>,
        s: SnapId,
    ) -> FastSet<Slot> {
        for v in self.snaps.versions.get(&dir).into_iter().flatten().rev() {
            if v.tag < s {
                break;
            }
            for c in v.created() {
                if let Some(m) = member.get_mut(c) {
                    *m = false;
                }
            }
            for c in v.deleted() {
                if let Some(m) = member.get_mut(c) {
                    *m = true;
                }
            }
        }
        member
            .into_iter()
            .filter(|&(_, m)| m)
            .map(|(c, _)| c)
            .collect()
    }

    /// EXECUTE on a directory inside a snapshot, by its permission then.
    fn check_exec_at(
        &self,
        caller: &Caller,
        dir: Slot,
        s: SnapId,
        comps: &[&str],
    ) -> Result<(), FsError> {
        if caller.bypass() {
            return Ok(());
        }
        let (perm, owner, group) = match self.version_at(dir, s) {
            Some(f) => (f.perm, f.owner, f.group),
            None => {
                let i = self.arena.get(dir);
                (i.perm, i.owner, i.group)
            }
        };
        let owner_name = self.user_name(owner);
        let group_name = self.user_name(group);
        let bits = if owner_name == caller.user {
            perm >> 6
        } else if caller.groups.iter().any(|g| g == group_name) {
            perm >> 3
        } else {
            perm
        };
        if bits & EXECUTE != 0 {
            return Ok(());
        }
        Err(FsError::PermissionDenied(Box::new(crate::error::Denied {
            user: caller.user.to_string(),
            access: "EXECUTE",
            inode: crate::path::join(comps),
            owner: owner_name.to_string(),
            group: group_name.to_string(),
            mode: crate::perm::mode_string(true, perm),
        })))
    }

    /// The status of `slot` as snapshot `s` shows it, named `name` (empty: the path's own).
    /// Built from the inode alone: a kept inode's parent may be gone, so nothing walks up
    /// (a storage policy shows only when the inode has its own, and as it is now: HDFS
    /// 3.4.1 reads the policy of a snapshot path's inode without the snapshot).
    pub fn status_at(&self, slot: Slot, s: SnapId, name: &[u8]) -> FileStatus {
        let inode = self.arena.get(slot);
        let mut st = FileStatus {
            is_dir: inode.is_dir(),
            name: name.to_vec(),
            len: 0,
            perm: inode.perm,
            owner: self.user_name(inode.owner).to_string(),
            group: self.user_name(inode.group).to_string(),
            mtime: inode.mtime,
            atime: inode.atime,
            replication: 0,
            block_size: 0,
            file_id: inode.id,
            children: 0,
            under_construction: false,
            storage_policy: self.features.get(&slot).map_or(0, |f| f.storage_policy),
            has_acl: self.has_acl(slot),
            snapshot_enabled: false,
        };
        if let Body::File(f) = &inode.body {
            (st.len, st.replication, st.block_size) = (f.len(), inode.replication, f.block_size);
        }
        if let Some(f) = self.version_at(slot, s) {
            st.perm = f.perm;
            st.owner = self.user_name(f.owner).to_string();
            st.group = self.user_name(f.group).to_string();
            st.mtime = f.mtime;
            st.atime = f.atime;
            st.has_acl = f.acl.is_some();
            st.is_dir = f.file.is_none();
            if let Some(file) = &f.file {
                (st.len, st.replication, st.block_size) =
                    (file.len, f.replication, file.block_size);
            }
        }
        if st.is_dir {
            (st.len, st.replication, st.block_size) = (0, 0, 0);
            st.children = self.children_at(slot, s).len() as i32;
        }
        st
    }

    /// `getFileInfo` of a resolved snapshot path.
    pub fn snapshot_status(&self, r: &Resolved) -> FileStatus {
        match r {
            Resolved::DotSnapshot(_) => dot_snapshot_status(),
            Resolved::At {
                slot,
                snap,
                root_name,
            } => {
                let mut st = self.status_at(*slot, *snap, b"");
                if root_name.is_some() {
                    // HDFS shows a snapshot's root as a directory with the root's
                    // attributes then, at the snapshot's time.
                    st.mtime = self.snapshot_ctime(*slot, *snap).unwrap_or(st.mtime);
                }
                st
            }
        }
    }

    fn snapshot_ctime(&self, root: Slot, s: SnapId) -> Option<i64> {
        let r = self.snaps.roots.get(&root)?;
        r.snaps.iter().find(|x| x.id == s).map(|x| x.ctime)
    }

    /// `getListing` of a resolved snapshot path, entries named after `start_after`.
    pub fn snapshot_listing(
        &self,
        r: &Resolved,
        start_after: &[u8],
        limit: usize,
    ) -> Result<Listing, FsError> {
        let (slots, entries): (Vec<Slot>, Vec<FileStatus>) = match r {
            Resolved::DotSnapshot(dir) => {
                let root = &self.snaps.roots[dir];
                let mut snaps: Vec<_> = root.snaps.iter().collect();
                snaps.sort_by(|a, b| a.name.cmp(&b.name));
                snaps
                    .into_iter()
                    .filter(|x| x.name.as_bytes() > start_after)
                    .map(|x| {
                        let mut st = self.status_at(*dir, x.id, x.name.as_bytes());
                        st.mtime = x.ctime;
                        (*dir, st)
                    })
                    .unzip()
            }
            Resolved::At { slot, snap, .. } => {
                if !self.is_dir_at(*slot, *snap) {
                    let st = self.status_at(*slot, *snap, b"");
                    return Ok(Listing {
                        entries: vec![st],
                        slots: vec![*slot],
                        remaining: 0,
                    });
                }
                self.children_at(*slot, *snap)
                    .into_iter()
                    .filter(|&c| self.name_at(c, *snap) > start_after)
                    .map(|c| (c, self.status_at(c, *snap, self.name_at(c, *snap))))
                    .unzip()
            }
        };
        let n = slots.len();
        let keep = n.min(limit.max(1));
        let mut slots = slots;
        let mut entries = entries;
        slots.truncate(keep);
        entries.truncate(keep);
        Ok(Listing {
            entries,
            slots,
            remaining: (n - keep) as u32,
        })
    }

    /// A file as snapshot `s` shows it (`getBlockLocations`); `None` for a directory.
    pub fn file_at(&self, slot: Slot, s: SnapId) -> Option<FileAt> {
        let id = self.arena.get(slot).id;
        match self.version_at(slot, s) {
            Some(f) => f.file.as_ref().map(|file| FileAt {
                id,
                len: file.len,
                blocks: file.blocks.to_vec(),
            }),
            None => match &self.arena.get(slot).body {
                Body::File(f) => Some(FileAt {
                    id,
                    len: f.len(),
                    blocks: f.blocks().to_vec(),
                }),
                Body::Dir(_) => None,
            },
        }
    }

    /// getBlockLocations of a path through a `.snapshot`: `None` for any other path. A
    /// file in a snapshot is closed at its length then, whatever became of it since.
    pub fn snapshot_block_range(
        &self,
        caller: &Caller,
        src: &str,
        offset: u64,
        length: u64,
    ) -> Result<Option<crate::blocks::BlockRange>, FsError> {
        let Some(r) = self.snapshot_lookup(caller, src)? else {
            return Ok(None);
        };
        let missing = || FsError::file_not_found(src);
        let Resolved::At { slot, snap, .. } = r.ok_or_else(missing)? else {
            return Err(FsError::not_a_file(src));
        };
        let f = self
            .file_at(slot, snap)
            .ok_or_else(|| FsError::not_a_file(src))?;
        Ok(Some(crate::blocks::range_of(
            &f.blocks, f.len, false, offset, length,
        )))
    }

    /// The content summary of a subtree as a snapshot shows it (`.snapshot` itself: every
    /// snapshot's, with the directory it is).
    pub fn snapshot_content_summary(&self, r: &Resolved) -> crate::query::ContentSummary {
        let mut sum = crate::query::ContentSummary::default();
        let tops: Vec<(Slot, SnapId)> = match r {
            Resolved::DotSnapshot(dir) => {
                sum.dirs += 1;
                self.snaps.roots[dir]
                    .snaps
                    .iter()
                    .map(|x| (*dir, x.id))
                    .collect()
            }
            Resolved::At { slot, snap, .. } => vec![(*slot, *snap)],
        };
        let mut kept = Kept::default();
        for (top, s) in tops {
            let policy = self.storage_policy_of(self.arena.get(top).parent);
            self.count_at(top, s, policy, &mut kept);
        }
        sum.dirs += kept.dirs;
        sum.files = kept.files;
        sum.length = kept.length;
        sum.space_consumed = kept.space;
        sum
    }

    /// Adds the subtree at `top` as snapshot `s` shows it to `kept`.
    /// `inherited`: the storage policy `top` inherits, which decides the storage types its
    /// files' space is charged to (with each inode's own, as the snapshot shows it).
    pub(crate) fn count_at(&self, top: Slot, s: SnapId, inherited: u8, kept: &mut Kept) {
        let mut stack = vec![(top, inherited)];
        while let Some((n, inherited)) = stack.pop() {
            let version = self.version_at(n, s);
            let own = match version {
                Some(v) => v
                    .features
                    .as_ref()
                    .map_or(UNSPECIFIED, |f| f.storage_policy),
                None => self
                    .features
                    .get(&n)
                    .map_or(UNSPECIFIED, |f| f.storage_policy),
            };
            let policy = if own != UNSPECIFIED { own } else { inherited };
            if self.is_dir_at(n, s) {
                kept.dirs += 1;
                stack.extend(self.children_at(n, s).into_iter().map(|c| (c, policy)));
            } else if let Some(f) = self.file_at(n, s) {
                let replication = version.map_or(self.arena.get(n).replication, |v| v.replication);
                kept.add_file(policy, f.len, replication);
            }
        }
    }

    /// The live tree's snapshots, for `getSnapshottableDirListing`: each root with its
    /// snapshot count and quota.
    pub fn snapshot_roots(&self) -> Vec<(Slot, usize, u32)> {
        let mut out: Vec<(Slot, usize, u32)> = self
            .snaps
            .roots
            .iter()
            .map(|(&s, r)| (s, r.snaps.len(), r.quota))
            .collect();
        out.sort_by_key(|&(s, _, _)| self.path_of(s));
        out
    }

    /// A root's snapshots, oldest first: (HDFS's 0-based id, name, time).
    pub fn snapshots_of(&self, root: Slot) -> Vec<(u32, String, i64)> {
        self.snaps.roots.get(&root).map_or_else(Vec::new, |r| {
            r.snaps
                .iter()
                .map(|s| (s.id - 1, s.name.clone(), s.ctime))
                .collect()
        })
    }

    pub fn is_snapshot_root(&self, slot: Slot) -> bool {
        self.snaps.roots.contains_key(&slot)
    }
}

/// `getFileInfo` of `/dir/.snapshot`, as HDFS answers it: a directory with no owner, mode
/// 777 and no times.
fn dot_snapshot_status() -> FileStatus {
    FileStatus {
        is_dir: true,
        name: Vec::new(),
        len: 0,
        perm: 0o777,
        owner: String::new(),
        group: String::new(),
        mtime: 0,
        atime: 0,
        replication: 0,
        block_size: 0,
        file_id: u64::MAX,
        children: 0,
        under_construction: false,
        storage_policy: 0,
        has_acl: false,
        snapshot_enabled: false,
    }
}
