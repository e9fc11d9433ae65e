//! Snapshots: read-only views of a directory's subtree as it was, kept as what changed.
//!
//! Taking a snapshot stores nothing but its id, name and time: O(1). Every snapshot id is
//! drawn from one counter, so ids order snapshots in time across every root. What changes
//! afterwards keeps its past:
//! - An inode about to change, when a snapshot that can see it was taken since its last
//!   saved state, saves a [`Version`] first: its attributes (and a file's length and
//!   blocks) as they were, tagged with that snapshot's id. A version tagged `t` answers for
//!   every snapshot in `(previous tag, t]`; a snapshot with no version at or after it sees
//!   the live inode, which has not changed since.
//! - A directory's version also records which children it gained (`created`) and lost
//!   (`deleted`) from then until its next version: its children as of a snapshot are the
//!   live ones with every later version's changes undone. A lost child is not freed while
//!   a snapshot lists it: it stays in the arena, detached, with its blocks (`held` counts
//!   the lists it is in).
//! - An inode renamed out from under a snapshot root stays visible to that root's older
//!   snapshots at its old place; a `pin` on it carries that snapshot's id, so that changes
//!   below it keep saving versions although no ancestor of its new place is a root.
//!
//! So memory grows with what changes after a snapshot, never with what it covers (as HDFS's
//! diff lists do, without its `INodeReference`s). Pure: callers pass every id and time.

mod attrs;
pub(crate) mod children;
pub mod diff;
pub mod error;
pub(crate) mod id;
pub(crate) mod image;
pub mod ops;
pub(crate) mod space;
pub(crate) mod view;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::acl::AclEntry;
use crate::fast::FastMap;
use crate::features::Features;
use crate::inode::{Block, Body, Slot, ROOT_SLOT};
pub use crate::snapshot::children::ChildChanges;
use crate::{Effects, Namespace};

pub use crate::snapshot::id::{SnapId, CURRENT, NONE};

/// HDFS's `DirectorySnapshottableFeature.SNAPSHOT_QUOTA_DEFAULT`, which
/// `dfs.namenode.snapshot.max.limit` also defaults to.
pub const DEFAULT_SNAPSHOT_QUOTA: u32 = 65_536;

/// A snapshot of one root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snap {
    /// 1 and up (0 is [`NONE`]); HDFS shows `id - 1` nowhere, so ours start at 1.
    pub id: SnapId,
    pub name: String,
    /// When it was taken (ms since the epoch): its root's time as the snapshot shows it.
    pub ctime: i64,
}

/// A snapshottable directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Root {
    /// Oldest first (by id).
    pub snaps: Vec<Snap>,
    pub quota: u32,
}

impl Root {
    pub fn latest(&self) -> SnapId {
        self.snaps.last().map_or(NONE, |s| s.id)
    }

    pub fn by_name(&self, name: &str) -> Option<&Snap> {
        self.snaps.iter().find(|s| s.name == name)
    }
}

/// An inode's saved state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frozen {
    pub name: Box<[u8]>,
    pub perm: u16,
    pub owner: u32,
    pub group: u32,
    pub mtime: i64,
    pub atime: i64,
    pub replication: u16,
    pub file: Option<FrozenFile>,
    /// Boxed, as few inodes have any (40 bytes inline in every version otherwise).
    pub features: Option<Box<Features>>,
    pub acl: Option<Arc<[AclEntry]>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrozenFile {
    pub len: u64,
    pub block_size: u64,
    /// A boxed slice: a kept block list never grows (8 bytes less than a `Vec`).
    pub blocks: Box<[Block]>,
    pub under_construction: bool,
}

/// What an inode was up to snapshot `tag`, and (a directory) how its children changed
/// after that until its next version.
#[derive(Clone, Debug)]
pub struct Version {
    pub tag: SnapId,
    pub state: Frozen,
    /// Boxed and only once a child changes: most versions are files' (two empty `Vec`s
    /// would be 48 bytes in each).
    pub children: Option<Box<ChildChanges>>,
}

impl Version {
    pub fn new(tag: SnapId, state: Frozen) -> Self {
        Version {
            tag,
            state,
            children: None,
        }
    }

    pub fn created(&self) -> &[Slot] {
        self.children.as_ref().map_or(&[], |c| c.created())
    }

    pub fn deleted(&self) -> &[Slot] {
        self.children.as_ref().map_or(&[], |c| c.deleted())
    }

    pub fn children_mut(&mut self) -> &mut ChildChanges {
        self.children.get_or_insert_with(Default::default)
    }

    pub fn into_deleted(self) -> Vec<Slot> {
        self.children.map_or_else(Vec::new, |c| c.into_deleted())
    }
}

/// Every snapshot, and the versions and pins that keep their views.
#[derive(Debug, Default)]
pub struct Snapshots {
    roots: FastMap<Slot, Root>,
    /// The next id to hand out.
    next_id: SnapId,
    /// Every snapshot id, with the first inode id it did not see (inodes made later need
    /// no version for it).
    taken: BTreeMap<SnapId, u64>,
    versions: FastMap<Slot, Vec<Version>>,
    /// Subtrees moved out from under snapshottable directories: the roots they were under,
    /// whose snapshots may still show them where they were.
    pins: FastMap<Slot, Vec<Slot>>,
    /// Detached inodes kept because a snapshot lists them: in how many `deleted` lists.
    held: FastMap<Slot, u32>,
    /// Each snapshot's root.
    root_of: FastMap<SnapId, Slot>,
    /// Blocks a live file let go of (a truncate, an abandoned block) that one of its
    /// versions still lists, with that file: what block reports check their replicas by.
    kept_blocks: FastMap<u64, (Slot, Block)>,
    /// What snapshots keep under each quota directory asked about since the last record
    /// that could change it (see `space.rs`); emptied by such records.
    usage_cache: parking_lot::Mutex<HashMap<Slot, crate::quota::Usage>>,
}

impl Snapshots {
    /// No snapshot exists and nothing is kept for one: every hook returns at once.
    pub fn idle(&self) -> bool {
        self.taken.is_empty()
            && self.versions.is_empty()
            && self.pins.is_empty()
            && self.held.is_empty()
    }

    /// Whether `dir` is snapshottable.
    pub fn is_root(&self, dir: Slot) -> bool {
        self.roots.contains_key(&dir)
    }

    /// Whether any directory is snapshottable.
    pub fn has_roots(&self) -> bool {
        !self.roots.is_empty()
    }

    /// Block `id`, let go of by the live file at `file`, stays while a version of that
    /// file lists it: block reports must go on finding it.
    pub fn keep_block(&mut self, id: u64, file: Slot, block: Block) {
        self.kept_blocks.insert(id, (file, block));
    }

    /// A record changed what snapshots may keep: quotas count it again when asked.
    pub fn forget_usage(&mut self) {
        self.usage_cache.get_mut().clear();
    }
}

impl Namespace {
    /// The newest snapshot that can see `slot`: the latest of any root at or above it, or
    /// of a root a pin on the way up names. [`NONE`] when none.
    pub(crate) fn coverage(&self, slot: Slot) -> SnapId {
        let s = &self.snaps;
        let latest = |r: &Slot| s.roots.get(r).map_or(NONE, Root::latest);
        match self.roots_seeing(slot) {
            Some(roots) => roots.iter().map(latest).max().unwrap_or(NONE),
            // Not in the live tree (only kept inodes are): nothing changes them.
            None => s.roots.values().map(Root::latest).max().unwrap_or(NONE),
        }
    }

    /// Whether a snapshot shows `slot` (HDFS's `isInLatestSnapshot`): one that can see it
    /// was taken while it existed, or it has saved a state for one.
    pub(crate) fn in_snapshot(&self, slot: Slot) -> bool {
        if self.snaps.idle() {
            return false;
        }
        if self.snaps.versions.contains_key(&slot) {
            return true;
        }
        let cov = self.coverage(slot);
        cov != NONE
            && self
                .snaps
                .taken
                .get(&cov)
                .is_some_and(|&first_unseen| self.arena.get(slot).id < first_unseen)
    }

    /// The snapshottable directories whose snapshots can see `slot` where it is: roots at
    /// or above it, and those of pins on the way up. `None` when it is not in the live tree
    /// (kept for a snapshot): then any root may.
    pub(crate) fn roots_seeing(&self, mut slot: Slot) -> Option<Vec<Slot>> {
        if self.snaps.roots.is_empty() {
            return Some(Vec::new());
        }
        let mut out = Vec::new();
        loop {
            if self.snaps.roots.contains_key(&slot) {
                out.push(slot);
            }
            if let Some(pinned) = self.snaps.pins.get(&slot) {
                out.extend(pinned.iter().filter(|r| self.snaps.roots.contains_key(r)));
            }
            if slot == ROOT_SLOT {
                return Some(out);
            }
            let parent = self.arena.get(slot).parent;
            if self.child(parent, self.name(slot)) != Some(slot) {
                return None;
            }
            slot = parent;
        }
    }

    /// Saves `slot`'s state before it changes, if a snapshot taken since its last saved
    /// state can see it. Returns the snapshot that sees it ([`NONE`]: none).
    pub(crate) fn preserve(&mut self, slot: Slot) -> SnapId {
        let cov = match self.version_due(slot) {
            Ok(cov) => cov,
            Err(seen_by) => return seen_by,
        };
        let state = self.freeze(slot);
        let versions = self.snaps.versions.entry(slot).or_default();
        // Most inodes ever save one version or two: a `Vec`'s first growth would make
        // room for four (three unused, ~600 bytes).
        versions.reserve_exact(1);
        versions.push(Version::new(cov, state));
        cov
    }

    /// Whether a change to `slot` now saves a version: Ok with the snapshot it is for, or
    /// Err with the snapshot that sees `slot` ([`NONE`]: none) when its state is saved
    /// already or it was made after that snapshot.
    fn version_due(&self, slot: Slot) -> Result<SnapId, SnapId> {
        if self.snaps.idle() {
            return Err(NONE);
        }
        let cov = self.coverage(slot);
        if cov == NONE {
            return Err(NONE);
        }
        let last = self
            .snaps
            .versions
            .get(&slot)
            .and_then(|v| v.last())
            .map_or(NONE, |v| v.tag);
        let born_after = self
            .snaps
            .taken
            .get(&cov)
            .is_some_and(|&first_unseen| self.arena.get(slot).id >= first_unseen);
        if last >= cov || born_after {
            return Err(cov);
        }
        Ok(cov)
    }

    /// Whether a snapshot shows block `id` of file `slot`, or will once the file's next
    /// change saves its state: a truncate must then leave the block whole.
    pub(crate) fn snapshot_needs_block(&self, slot: Slot, id: u64) -> bool {
        let listed = |f: &FrozenFile| f.blocks.iter().any(|b| b.id == id);
        self.version_due(slot).is_ok()
            || self
                .snaps
                .versions
                .get(&slot)
                .is_some_and(|vs| vs.iter().filter_map(|v| v.state.file.as_ref()).any(listed))
    }

    /// `slot`'s state as a version keeps it.
    pub(crate) fn freeze(&self, slot: Slot) -> Frozen {
        let inode = self.arena.get(slot);
        let file = match &inode.body {
            Body::File(f) => Some(FrozenFile {
                len: f.len(),
                block_size: f.block_size,
                blocks: f.blocks().into(),
                under_construction: f.uc().is_some(),
            }),
            Body::Dir(_) => None,
        };
        let acl = self.acl_of(slot);
        Frozen {
            name: self.name(slot).into(),
            perm: inode.perm,
            owner: inode.owner,
            group: inode.group,
            mtime: inode.mtime,
            atime: inode.atime,
            replication: inode.replication,
            file,
            features: self.features.get(&slot).cloned().map(Box::new),
            acl: (!acl.is_empty()).then(|| Arc::from(acl)),
        }
    }

    /// The version of `slot`'s parent `dir` that records child changes now, if any: the
    /// one tagged with the snapshot that sees `dir` (none when no snapshot sees it, or it
    /// was made after that snapshot).
    fn current_version(&mut self, dir: Slot) -> Option<&mut Version> {
        let cov = self.coverage(dir);
        self.snaps
            .versions
            .get_mut(&dir)
            .and_then(|v| v.last_mut())
            .filter(|v| cov != NONE && v.tag == cov)
    }

    /// `child` joined `dir` (made there, or moved in). Call after [`preserve`] on `dir`.
    ///
    /// [`preserve`]: Self::preserve
    pub(crate) fn note_child_added(&mut self, dir: Slot, child: Slot) {
        if self.snaps.idle() {
            return;
        }
        let Some(v) = self.current_version(dir) else {
            return;
        };
        if v.children_mut().note_added(child) {
            // Back where a snapshot saw it (a rename there and back).
            self.release(child);
        }
    }

    /// `child` left `dir` (deleted, replaced, or moved out). Call after [`preserve`] on
    /// `dir`. Returns whether a snapshot still lists it, so that a delete must keep it
    /// (detached) rather than free it.
    ///
    /// [`preserve`]: Self::preserve
    pub(crate) fn note_child_removed(&mut self, dir: Slot, child: Slot) -> bool {
        if self.snaps.idle() {
            return false;
        }
        if let Some(v) = self.current_version(dir) {
            // Made after the snapshot, it is simply forgotten: it never saw it.
            if !v.children_mut().note_removed(child) {
                *self.snaps.held.entry(child).or_insert(0) += 1;
                // Kept for a snapshot now (a create over it, a delete, a move away):
                // quotas count it again when next asked.
                self.snaps.usage_cache.get_mut().clear();
            }
        }
        self.snaps.held.contains_key(&child)
    }

    /// One `deleted` list no longer names `child`.
    fn release(&mut self, child: Slot) {
        if let Some(n) = self.snaps.held.get_mut(&child) {
            *n -= 1;
            if *n == 0 {
                self.snaps.held.remove(&child);
            }
        }
    }

    /// `slot` moved from under the roots `were` (as [`roots_seeing`] named them before):
    /// a pin names those it left that have snapshots, so that its subtree's changes go on
    /// saving versions for them, and their versions are kept for them.
    ///
    /// [`roots_seeing`]: Self::roots_seeing
    pub(crate) fn pin_if_leaving(&mut self, slot: Slot, were: Option<Vec<Slot>>) {
        let (Some(were), Some(now)) = (were, self.roots_seeing(slot)) else {
            return;
        };
        let left: Vec<Slot> = were
            .into_iter()
            .filter(|r| !now.contains(r))
            .filter(|r| self.snaps.roots.get(r).is_some_and(|x| !x.snaps.is_empty()))
            .collect();
        if left.is_empty() {
            return;
        }
        let p = self.snaps.pins.entry(slot).or_default();
        for r in left {
            if !p.contains(&r) {
                p.push(r);
            }
        }
    }

    /// Blocks of file `slot` that a version still lists (they stay when the live file lets
    /// them go: a truncate, a concat's source).
    pub(crate) fn blocks_kept_for_snapshots(&self, slot: Slot) -> Vec<Block> {
        self.snaps
            .versions
            .get(&slot)
            .map(|vs| {
                vs.iter()
                    .filter_map(|v| v.state.file.as_ref())
                    .flat_map(|f| f.blocks.iter().copied())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A block no live file has but a snapshot's version of one does.
    pub fn snapshot_block(&self, id: u64) -> Option<Block> {
        self.snaps.kept_blocks.get(&id).map(|&(_, b)| b)
    }

    /// Before `slot` is freed: false when a snapshot lists it (it must stay); else drops
    /// whatever snapshots kept of it (its versions, a pin, blocks only a version held).
    pub(crate) fn forget_snapshot_state(&mut self, slot: Slot, fx: &mut Effects) -> bool {
        if self.snaps.held.contains_key(&slot) {
            return false;
        }
        // Children its versions kept are no longer kept by them.
        let kept: Vec<Slot> = self
            .snaps
            .versions
            .remove(&slot)
            .into_iter()
            .flatten()
            .flat_map(Version::into_deleted)
            .collect();
        for child in kept {
            self.release_held(child, fx);
        }
        self.snaps.pins.remove(&slot);
        if self
            .snaps
            .roots
            .get(&slot)
            .is_some_and(|r| r.snaps.is_empty())
        {
            self.snaps.roots.remove(&slot);
        }
        if !self.snaps.kept_blocks.is_empty() {
            let gone: Vec<(u64, u64)> = self
                .snaps
                .kept_blocks
                .iter()
                .filter(|(_, (s, _))| *s == slot)
                .map(|(&id, (_, b))| (id, b.gs))
                .collect();
            for (id, gs) in gone {
                self.snaps.kept_blocks.remove(&id);
                fx.removed_blocks.push((id, gs));
            }
        }
        true
    }

    /// A subtree leaves the live tree but a snapshot still lists it: it stays in the arena
    /// as it is (blocks and all), no longer counted among the live files and directories,
    /// and files in it that were open are closed for their writers.
    pub(crate) fn retire(&mut self, top: Slot, fx: &mut Effects) {
        // Its parent may be freed (and its slot reused) while it is kept: it points at the
        // root, which does not list it, so nothing follows a stale parent.
        self.arena.get_mut(top).parent = ROOT_SLOT;
        let mut stack = vec![top];
        while let Some(s) = stack.pop() {
            let inode = self.arena.get_mut(s);
            match &mut inode.body {
                Body::Dir(c) => {
                    self.dirs -= 1;
                    stack.extend(c.slots());
                }
                Body::File(f) => {
                    self.files -= 1;
                    if let Some(uc) = f.close() {
                        fx.closed_files.push((inode.id, uc.client_name));
                    }
                }
            }
        }
    }
}
