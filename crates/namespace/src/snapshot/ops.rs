//! The snapshot calls: allowSnapshot, disallowSnapshot, createSnapshot, deleteSnapshot and
//! renameSnapshot, planned with HDFS 3.4.1's rules and messages and applied from their
//! records; and deleting a snapshot's share of what was kept (see `snapshot/mod.rs`).

use crate::error::FsError;
use crate::inode::{Slot, ROOT_SLOT};
use crate::path::{components, join, DOT_SNAPSHOT};
use crate::perm::Caller;
use crate::snapshot::error::SnapshotError;
use crate::snapshot::{Root, Snap, SnapId, Version, DEFAULT_SNAPSHOT_QUOTA, NONE};
use crate::{Effects, Namespace, Op};

/// What a change under `.snapshot` is told.
pub fn read_only() -> FsError {
    FsError::SnapshotAccess("Modification on a read-only snapshot is disallowed".into())
}

fn not_snapshottable(path: &str) -> FsError {
    SnapshotError::NotSnapshottable {
        path: path.to_string(),
    }
    .into()
}

/// HDFS's default snapshot name for a snapshot taken at `ms`: `sYYYYMMDD-HHMMSS.mmm` (UTC).
pub fn default_name(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "s{y:04}{m:02}{d:02}-{:02}{:02}{:02}.{:03}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms.rem_euclid(1000)
    )
}

impl Namespace {
    /// The snapshottable directory at `src` and its normalized path, checked as the
    /// snapshot calls check it: traverse, then owner (or the superuser).
    fn snapshot_root(&self, caller: &Caller, src: &str) -> Result<(Slot, String), FsError> {
        let (slot, path) = self.resolve_checked(caller, src)?;
        if !self.snaps.roots.contains_key(&slot) {
            return Err(not_snapshottable(&path));
        }
        if !caller.bypass() {
            self.check_owner(caller, slot)?;
        }
        Ok((slot, path))
    }

    fn root(&self, slot: Slot) -> &Root {
        &self.snaps.roots[&slot]
    }

    /// What allow/disallowSnapshot name, found without permission checks (they are the
    /// superuser's), and its normalized path; missing in HDFS's words for them.
    fn admin_target(&self, src: &str) -> Result<(Slot, String), FsError> {
        let comps = components(src)?;
        let path = join(&comps);
        match self.walk(&comps)?.target() {
            Some(slot) => Ok((slot, path)),
            None => Err(FsError::NotFound(format!(
                "Directory does not exist: {path}"
            ))),
        }
    }

    /// `allowSnapshot` (the superuser's, as admission checks).
    pub fn plan_allow_snapshot(&self, src: &str) -> Result<Vec<Op>, FsError> {
        let (slot, path) = self.admin_target(src)?;
        if !self.arena.get(slot).is_dir() {
            return Err(FsError::NotDirectory(format!(
                "`{path}': Is not a directory"
            )));
        }
        if !self.snaps.roots.contains_key(&slot) {
            for &r in self.snaps.roots.keys() {
                let (what, other) = if self.is_at_or_under(slot, r) {
                    ("ancestor", r)
                } else if self.is_at_or_under(r, slot) {
                    ("subdirectory", r)
                } else {
                    continue;
                };
                return Err(SnapshotError::Nested {
                    path,
                    relation: what,
                    other: self.path_of(other),
                }
                .into());
            }
        }
        Ok(vec![Op::AllowSnapshot { path }])
    }

    /// `disallowSnapshot`: refused while the directory has snapshots; nothing to do when
    /// it is not snapshottable.
    pub fn plan_disallow_snapshot(&self, src: &str) -> Result<Vec<Op>, FsError> {
        let (slot, path) = self.admin_target(src)?;
        match self.snaps.roots.get(&slot) {
            None => Ok(Vec::new()),
            Some(r) if !r.snaps.is_empty() => Err(SnapshotError::StillHasSnapshots { path }.into()),
            Some(_) => Ok(vec![Op::DisallowSnapshot { path }]),
        }
    }

    /// `createSnapshot`: returns the new snapshot's path. `name` None takes HDFS's default
    /// from `now`.
    pub fn plan_create_snapshot(
        &self,
        caller: &Caller,
        src: &str,
        name: Option<&str>,
        now: i64,
    ) -> Result<(String, Vec<Op>), FsError> {
        let (slot, path) = self.snapshot_root(caller, src)?;
        let name = name.map_or_else(|| default_name(now), str::to_string);
        check_snapshot_name(&name)?;
        let root = self.root(slot);
        if root.by_name(&name).is_some() {
            return Err(SnapshotError::NameTaken { name }.into());
        }
        if root.snaps.len() as u32 >= root.quota {
            return Err(SnapshotError::QuotaReached {
                count: root.snaps.len(),
                quota: root.quota,
            }
            .into());
        }
        let at = snapshot_path(&path, &name);
        let id = u64::from(self.snaps.next_id.max(1));
        Ok((
            at,
            vec![Op::CreateSnapshot {
                path,
                name,
                id,
                mtime: now,
            }],
        ))
    }

    pub fn plan_delete_snapshot(
        &self,
        caller: &Caller,
        src: &str,
        name: &str,
        now: i64,
    ) -> Result<Vec<Op>, FsError> {
        let (slot, path) = self.snapshot_root(caller, src)?;
        if self.root(slot).by_name(name).is_none() {
            return Err(SnapshotError::NoSuchSnapshotToDelete {
                name: name.to_string(),
                path,
            }
            .into());
        }
        Ok(vec![Op::DeleteSnapshot {
            path,
            name: name.into(),
            mtime: now,
        }])
    }

    pub fn plan_rename_snapshot(
        &self,
        caller: &Caller,
        src: &str,
        old: &str,
        new: &str,
        now: i64,
    ) -> Result<Vec<Op>, FsError> {
        let (slot, path) = self.snapshot_root(caller, src)?;
        let root = self.root(slot);
        if root.by_name(old).is_none() {
            return Err(SnapshotError::NoSuchSnapshotToRename {
                name: old.to_string(),
                path,
            }
            .into());
        }
        if old == new {
            return Ok(Vec::new());
        }
        check_snapshot_name(new)?;
        if root.by_name(new).is_some() {
            return Err(SnapshotError::RenameTaken {
                name: new.to_string(),
                path,
            }
            .into());
        }
        Ok(vec![Op::RenameSnapshot {
            path,
            old: old.into(),
            new: new.into(),
            mtime: now,
        }])
    }

    /// Refuses to delete `slot` (or replace it) while it or a directory below it has
    /// snapshots, as HDFS does.
    pub(crate) fn check_no_snapshots_below(&self, slot: Slot) -> Result<(), FsError> {
        // HDFS names the first it meets walking the subtree (itself, then each child in
        // name order, depth first): the least path, compared component by component.
        let first = self
            .snaps
            .roots
            .iter()
            .filter(|&(&r, root)| !root.snaps.is_empty() && self.is_at_or_under(r, slot))
            .map(|(&r, _)| self.path_of(r))
            .min_by(|a, b| a.split('/').cmp(b.split('/')));
        match first {
            Some(path) => Err(SnapshotError::RootHasSnapshots { path }.into()),
            None => Ok(()),
        }
    }

    pub(crate) fn apply_snapshot_op(&mut self, op: &Op, fx: &mut Effects) -> Result<(), FsError> {
        match op {
            Op::AllowSnapshot { path } => {
                let slot = self.snapshot_dir(path)?;
                let root = self.snaps.roots.entry(slot).or_default();
                root.quota = DEFAULT_SNAPSHOT_QUOTA;
            }
            Op::DisallowSnapshot { path } => {
                let slot = self.snapshot_dir(path)?;
                if self
                    .snaps
                    .roots
                    .get(&slot)
                    .is_some_and(|r| !r.snaps.is_empty())
                {
                    return Err(FsError::misfit(format!("{path} still has snapshots")));
                }
                self.snaps.roots.remove(&slot);
            }
            Op::CreateSnapshot {
                path,
                name,
                id,
                mtime,
            } => {
                let slot = self.snapshot_dir(path)?;
                let first_unseen = self.next_inode_id;
                // The root's time moves first: the snapshot shows its root as of now.
                self.preserve(slot);
                self.arena.get_mut(slot).mtime = *mtime;
                let root = self
                    .snaps
                    .roots
                    .get_mut(&slot)
                    .ok_or_else(|| FsError::misfit(format!("{path} is not snapshottable")))?;
                let id = SnapId::try_from(*id)
                    .map_err(|_| FsError::misfit(format!("snapshot id {id} out of range")))?;
                root.snaps.push(Snap {
                    id,
                    name: name.clone(),
                    ctime: *mtime,
                });
                self.snaps.taken.insert(id, first_unseen);
                self.snaps.root_of.insert(id, slot);
                self.snaps.next_id = self.snaps.next_id.max(id + 1);
            }
            Op::DeleteSnapshot { path, name, mtime } => {
                let (root, i) = self.touched_snapshot(path, name, *mtime)?;
                let gone = root.snaps.remove(i);
                self.snaps.taken.remove(&gone.id);
                self.forget_snapshot(gone.id, fx);
            }
            Op::RenameSnapshot {
                path,
                old,
                new,
                mtime,
            } => {
                let (root, i) = self.touched_snapshot(path, old, *mtime)?;
                root.snaps[i].name = new.clone();
            }
            _ => return Err(FsError::misfit(format!("not a snapshot record: {op:?}"))),
        }
        Ok(())
    }

    /// A record about snapshot `name` of root `path`: the root's time moves to `mtime` (its
    /// earlier state saved for older snapshots first); returns the root and the snapshot's
    /// index in it.
    fn touched_snapshot(
        &mut self,
        path: &str,
        name: &str,
        mtime: i64,
    ) -> Result<(&mut Root, usize), FsError> {
        let slot = self.snapshot_dir(path)?;
        self.preserve(slot);
        self.arena.get_mut(slot).mtime = mtime;
        let root = self
            .snaps
            .roots
            .get_mut(&slot)
            .ok_or_else(|| FsError::misfit(format!("{path} is not snapshottable")))?;
        let i = root
            .snaps
            .iter()
            .position(|s| s.name == name)
            .ok_or_else(|| FsError::misfit(format!("no snapshot {name} of {path}")))?;
        Ok((root, i))
    }

    fn snapshot_dir(&self, path: &str) -> Result<Slot, FsError> {
        let slot = self.existing(path)?;
        if !self.arena.get(slot).is_dir() {
            return Err(FsError::misfit(format!("{path} is not a directory")));
        }
        Ok(slot)
    }

    /// Snapshot `gone` no longer exists: each version that answered for it either still
    /// answers for an older snapshot (it takes the newest such id), or merges its child
    /// changes into the version before it, or, the oldest, goes. Children that no remaining
    /// snapshot lists are freed, with their blocks.
    fn forget_snapshot(&mut self, gone: SnapId, fx: &mut Effects) {
        let slots: Vec<Slot> = self
            .snaps
            .versions
            .iter()
            .filter(|(_, vs)| vs.iter().any(|v| v.tag == gone))
            .map(|(&s, _)| s)
            .collect();
        let mut released = Vec::new();
        for slot in slots {
            let Some(vs) = self.snaps.versions.get_mut(&slot) else {
                continue;
            };
            let i = vs.iter().position(|v| v.tag == gone).expect("filtered");
            let prev_tag = if i > 0 { vs[i - 1].tag } else { NONE };
            // Any snapshot left in (prev_tag, gone] that can see the inode still needs this
            // state (another root's snapshots never saw it).
            let seeing = self.roots_seeing(slot);
            let Some(vs) = self.snaps.versions.get_mut(&slot) else {
                continue;
            };
            let still = self
                .snaps
                .taken
                .range(prev_tag + 1..gone)
                .rev()
                .map(|(&id, _)| id)
                .find(|id| {
                    let root = self.snaps.root_of.get(id);
                    seeing
                        .as_ref()
                        .is_none_or(|r| root.is_some_and(|x| r.contains(x)))
                });
            if let Some(id) = still {
                vs[i].tag = id;
                continue;
            }
            let v = vs.remove(i);
            if i > 0 {
                merge_into(&mut vs[i - 1], v, &mut released);
            } else {
                released.extend(v.into_deleted());
            }
            if vs.is_empty() {
                self.snaps.versions.remove(&slot);
            }
        }
        for child in released {
            self.release_held(child, fx);
        }
        // A root left without snapshots needs nothing pinned for it any more.
        if let Some(root) = self.snaps.root_of.remove(&gone) {
            if self
                .snaps
                .roots
                .get(&root)
                .is_none_or(|r| r.snaps.is_empty())
            {
                self.snaps.pins.retain(|_, p| {
                    p.retain(|&r| r != root);
                    !p.is_empty()
                });
            }
        }
        self.drop_unlisted_blocks(fx);
    }

    /// One `deleted` list dropped `child`: once none lists it and it is not in the live
    /// tree, it is freed with its subtree.
    pub(crate) fn release_held(&mut self, child: Slot, fx: &mut Effects) {
        let Some(n) = self.snaps.held.get_mut(&child) else {
            return;
        };
        *n -= 1;
        if *n > 0 {
            return;
        }
        self.snaps.held.remove(&child);
        // A kept subtree's top points at the root (`retire`), so a parent that is gone is
        // one being freed right now, with its children: the same removal frees this one,
        // counted out as the live child it still is. Freeing it here as well freed it
        // twice, through a parent slot no longer there.
        if !self.arena.contains(self.arena.get(child).parent) {
            return;
        }
        // Still in a directory's children (a live one, or one a snapshot keeps), it goes
        // when that directory goes; only a kept subtree's top, listed nowhere else, goes now.
        if !self.listed(child) {
            // Kept inodes are not counted as live ones; freeing counts them out again.
            self.count_back(child);
            self.remove_subtree(child, fx);
        }
    }

    /// Counts a kept subtree among the live files and directories again, just before it is
    /// freed (which counts them out).
    fn count_back(&mut self, top: Slot) {
        let mut stack = vec![top];
        while let Some(s) = stack.pop() {
            match self.arena.get(s).children() {
                Some(c) => {
                    self.dirs += 1;
                    stack.extend(c.slots());
                }
                None => self.files += 1,
            }
        }
    }

    /// Whether `slot` is in the live tree (every step up finds it among its parent's
    /// children).
    pub(crate) fn is_live(&self, mut slot: Slot) -> bool {
        while slot != ROOT_SLOT {
            if !self.listed(slot) {
                return false;
            }
            slot = self.arena.get(slot).parent;
        }
        true
    }

    /// Blocks kept for versions that no longer exist are released.
    fn drop_unlisted_blocks(&mut self, fx: &mut Effects) {
        if self.snaps.kept_blocks.is_empty() {
            return;
        }
        let unlisted: Vec<u64> = self
            .snaps
            .kept_blocks
            .iter()
            .filter(|(id, (slot, _))| {
                !self
                    .blocks_kept_for_snapshots(*slot)
                    .iter()
                    .any(|b| b.id == **id)
            })
            .map(|(&id, _)| id)
            .collect();
        for id in unlisted {
            if let Some((_, b)) = self.snaps.kept_blocks.remove(&id) {
                fx.removed_blocks.push((b.id, b.gs));
            }
        }
    }
}

/// `later`'s child changes (after its tag) follow `earlier`'s (after its own): one list of
/// what changed after `earlier`'s tag. A child made after `earlier` and gone after `later`
/// was never seen by a remaining snapshot: it is released. One gone then back is no change.
fn merge_into(earlier: &mut Version, later: Version, released: &mut Vec<Slot>) {
    let Some(later) = later.children else {
        return;
    };
    let earlier = earlier.children_mut();
    for &c in later.created() {
        if earlier.note_added(c) {
            released.push(c);
        }
    }
    for &d in later.deleted() {
        if earlier.note_removed(d) {
            released.push(d);
        }
    }
}

/// HDFS refuses names a path component cannot have.
fn check_snapshot_name(name: &str) -> Result<(), FsError> {
    if name.contains('/') || name.is_empty() || name == "." || name == ".." || name == DOT_SNAPSHOT
    {
        return Err(FsError::InvalidPath(format!(
            "Invalid path name Invalid snapshot name: {name}"
        )));
    }
    Ok(())
}

/// `/dir/.snapshot/name`.
pub fn snapshot_path(root: &str, name: &str) -> String {
    if root == "/" {
        format!("/{DOT_SNAPSHOT}/{name}")
    } else {
        format!("{root}/{DOT_SNAPSHOT}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names_are_hdfs_s() {
        // 2026-11-28 08:55:12.345 UTC
        assert_eq!(default_name(1_795_856_112_345), "s20261128-085512.345");
        assert_eq!(default_name(0), "s19700101-000000.000");
    }
}
