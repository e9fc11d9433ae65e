//! The in-memory namespace: a pure state machine with no sockets, clocks or locks.
//!
//! Mutations happen in two steps. A `plan_*` method (in [`plan`]) checks the caller's request
//! against the current tree and permissions and returns the [`Op`] records that carry it out;
//! [`Namespace::apply`] then performs each record. The RPC layer runs both under the
//! namespace write lock and hands the records to the journal; replay calls `apply` alone.

pub mod acl;
pub mod acl_ops;
mod append;
mod apply;
pub mod blocks;
pub mod cache;
mod children;
pub mod chunked;
pub mod codec;
pub mod error;
mod fast;
mod features;
pub mod id_map;
pub mod image;
pub mod inode;
mod lease_check;
mod names;
pub mod ops;
pub mod path;
pub mod perm;
pub mod plan;
pub mod query;
pub mod quota;
mod reserved;
pub mod snapshot;
pub mod storage_policy;
mod truncate;
pub mod xattr;

#[cfg(test)]
mod quota_tests;
#[cfg(test)]
mod tests;

use children::Children;
use inode::{Arena, Body, FileData, Inode, Slot, ROOT_INODE_ID, ROOT_SLOT};
use names::{Interner, NameArena};
pub use ops::{Op, RetryAnswer};
pub use perm::Caller;
pub use plan::{At, Planned};

use smallvec::SmallVec;

use crate::error::FsError;

/// What applying an operation changed beyond the tree itself, for the layers around it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Files that were open for write and no longer are (closed, deleted, or replaced),
    /// by inode id, with the client that held them: their leases end.
    pub closed_files: Vec<(u64, String)>,
    /// Blocks (id, generation stamp) that no longer belong to any file; their replicas
    /// are to be deleted.
    pub removed_blocks: Vec<(u64, u64)>,
    /// The inode a Mkdir or Create added.
    pub created: Option<Slot>,
}

/// How far [`Namespace::apply_planned`] got.
#[derive(Debug)]
pub struct Applied {
    /// Records applied: all of them unless one failed.
    pub count: usize,
    /// Why the record after the applied ones did not apply.
    pub failed: Option<FsError>,
}

/// Java's first allocated block id (ids up to 2^30 are reserved) and generation stamp.
pub const FIRST_BLOCK_ID: u64 = (1 << 30) + 1;
pub const FIRST_GENERATION_STAMP: u64 = 1001;

/// Slots whose names one mutation moves while freed names are reclaimed: 2 million names
/// move over some 2,000 mutations instead of in one 91 ms pause.
const NAME_MOVE_STEP: Slot = 1024;

/// HDFS's `dfs.namenode.fs-limits.*` that mutations are planned against. Replay never
/// checks them, as HDFS checks only once its image is loaded: a journal written under
/// higher limits still loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `max-directory-items`: the most entries a directory may hold.
    pub dir_items: usize,
    /// `max-blocks-per-file`: the most blocks a file may have.
    pub blocks_per_file: usize,
    /// `max-component-length`: the longest name, in bytes, an entry may be given.
    pub component_len: usize,
}

impl Default for Limits {
    /// HDFS 3.4's defaults.
    fn default() -> Self {
        Limits {
            dir_items: 1 << 20,
            blocks_per_file: 10_000,
            component_len: path::MAX_COMPONENT_LEN,
        }
    }
}

pub struct Namespace {
    arena: Arena,
    /// Files open for write: inode id → slot. Lease recovery and fileId lookups use it.
    /// A B-tree, not a hash table: ids are handed out in order, so a create inserts at the
    /// right edge, which stays in cache, where a hash insert missed the cache in a table as
    /// big as the open files (3.3% of an in-process create's CPU, against 0.9%).
    open_files: std::collections::BTreeMap<u64, Slot>,
    names: NameArena,
    /// While the names move to a fresh buffer, the next slot whose name is to move.
    name_move: Option<Slot>,
    /// The names' emptied buffer once a move ends, for [`take_retired`] to hand out.
    ///
    /// [`take_retired`]: Namespace::take_retired
    retired_names: Vec<u8>,
    users: Interner,
    /// Block id → the file that holds it: how block reports find their files. Consulted on
    /// every addBlock and block report under the namespace lock, so it is an [`IdMap`]
    /// (foldhash, and no growth that re-hashes millions of entries under that lock).
    ///
    /// [`IdMap`]: crate::id_map::IdMap
    /// (A block's index in its file never changes: blocks are only appended, and only the
    /// last is ever abandoned.)
    block_files: crate::id_map::IdMap<(Slot, u32)>,
    next_inode_id: u64,
    /// Never reused, even after a delete: a DataNode may still hold replicas of a dead block.
    next_block_id: u64,
    next_gs: u64,
    files: u64,
    dirs: u64,
    limits: Limits,
    /// Extended attributes and storage policies (and, later, ACLs), for the few inodes
    /// that have any.
    features: std::collections::HashMap<Slot, features::Features>,
    /// Inodes with a storage policy of their own: none, and no lookup walks up for one.
    policies_set: usize,
    /// The distinct ACLs inodes hold: empty, and no permission check looks for one.
    acls: acl_ops::SharedAcls,
    /// Directories with a quota: none, and no change looks for one above it.
    quotas_set: usize,
    /// Cache pools and directives (bookkeeping only: nothing is cached).
    pub cache: cache::CacheState,
    /// Snapshottable directories, their snapshots, and what keeps their views.
    snaps: snapshot::Snapshots,
}

/// A file open for write, as `listOpenFiles` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenFile {
    pub id: u64,
    pub path: String,
    pub client_name: String,
    pub client_machine: String,
}

/// The result of walking a path from the root.
pub struct Walk {
    /// Slots of the root and every component found, in order (on the stack up to 16 deep,
    /// as path components are).
    pub slots: SmallVec<[Slot; 17]>,
    /// Number of components in the path.
    pub depth: usize,
    /// The path went on past a file: the message of HDFS's ParentNotDirectoryException,
    /// naming that file. What it means depends on the caller: a lookup by the superuser
    /// finds nothing there, anyone else's is refused by the permission checker (as HDFS's
    /// traverse check does), and an operation that would add a name there is refused.
    pub not_dir: Option<String>,
}

impl Walk {
    /// The inode the full path names, if it exists.
    pub fn target(&self) -> Option<Slot> {
        (self.slots.len() == self.depth + 1)
            .then(|| *self.slots.last().expect("root is always there"))
    }
    /// The last slot found (the target if it exists, else its deepest existing ancestor).
    pub fn last(&self) -> Slot {
        *self.slots.last().expect("root is always there")
    }

    /// Refuses a path that goes on past a file, for operations that add a name.
    pub fn require_dirs(&self) -> Result<(), FsError> {
        match &self.not_dir {
            Some(m) => Err(FsError::ParentNotDirectory(m.clone())),
            None => Ok(()),
        }
    }
}

impl Namespace {
    /// A namespace holding only the root directory.
    pub fn new(root_owner: &str, root_group: &str, mtime: i64) -> Self {
        let mut ns = Namespace {
            arena: Arena::default(),
            open_files: Default::default(),
            names: NameArena::default(),
            name_move: None,
            retired_names: Vec::new(),
            users: Interner::default(),
            block_files: Default::default(),
            next_inode_id: ROOT_INODE_ID + 1,
            next_block_id: FIRST_BLOCK_ID,
            next_gs: FIRST_GENERATION_STAMP,
            files: 0,
            dirs: 1,
            limits: Limits::default(),
            features: Default::default(),
            policies_set: 0,
            acls: Default::default(),
            quotas_set: 0,
            cache: Default::default(),
            snaps: Default::default(),
        };
        let owner = ns.users.intern(root_owner);
        let group = ns.users.intern(root_group);
        let root = ns.arena.insert(Inode {
            id: ROOT_INODE_ID,
            mtime,
            atime: 0,
            body: Body::Dir(Children::default()),
            name: Default::default(),
            parent: ROOT_SLOT,
            owner,
            group,
            perm: 0o755,
            replication: 0,
        });
        debug_assert_eq!(root, ROOT_SLOT);
        ns
    }

    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Memory a mutation has finished with, to be dropped once the namespace lock is
    /// released (an emptied name buffer: tens of megabytes whose unmapping took 3 ms).
    /// Empty, and free to drop anywhere, almost always.
    pub fn take_retired(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.retired_names)
    }

    pub fn inode(&self, slot: Slot) -> &Inode {
        self.arena.get(slot)
    }

    pub fn name(&self, slot: Slot) -> &[u8] {
        self.names.get(self.arena.get(slot).name)
    }

    pub fn user_name(&self, id: u32) -> &str {
        self.users.name(id)
    }

    pub fn interned(&self, name: &str) -> Option<u32> {
        self.users.lookup(name)
    }

    pub fn file_count(&self) -> u64 {
        self.files
    }

    pub fn dir_count(&self) -> u64 {
        self.dirs
    }

    pub fn inode_count(&self) -> usize {
        self.arena.len()
    }

    /// The next inode id `plan_*` will hand out.
    pub fn next_inode_id(&self) -> u64 {
        self.next_inode_id
    }

    /// Finds `name` among a directory's children.
    pub fn child(&self, dir: Slot, name: &[u8]) -> Option<Slot> {
        self.arena.get(dir).children()?.find(name, |c| self.name(c))
    }

    /// Whether `slot` is among its parent's children (false, too, while the parent is
    /// being freed before it).
    pub(crate) fn listed(&self, slot: Slot) -> bool {
        let parent = self.arena.get(slot).parent;
        self.arena.contains(parent) && self.child(parent, self.name(slot)) == Some(slot)
    }

    /// Walks `comps` from the root, stopping at the first missing component. Passing
    /// through a file is an error, as in HDFS (`ParentNotDirectoryException`).
    pub fn walk(&self, comps: &[&str]) -> Result<Walk, FsError> {
        let mut slots = SmallVec::new();
        slots.push(ROOT_SLOT);
        let mut cur = ROOT_SLOT;
        let mut not_dir = None;
        for (i, c) in comps.iter().enumerate() {
            if !self.arena.get(cur).is_dir() {
                not_dir = Some(format!("{} (is not a directory)", path::join(&comps[..i])));
                break;
            }
            match self.child(cur, c.as_bytes()) {
                Some(s) => {
                    slots.push(s);
                    cur = s;
                }
                None => {
                    // No entry is ever named `.snapshot`: only a miss can be one. Reads of
                    // snapshots resolve elsewhere (`snapshot/view.rs`); what walks here
                    // changes something.
                    if *c == path::DOT_SNAPSHOT && self.snaps.is_root(cur) {
                        return Err(snapshot::ops::read_only());
                    }
                    break;
                }
            }
        }
        Ok(Walk {
            slots,
            depth: comps.len(),
            not_dir,
        })
    }

    /// Whether `s` is `top` or below it, by parent links (a kept inode's lead to where it
    /// was).
    pub(crate) fn is_at_or_under(&self, mut s: Slot, top: Slot) -> bool {
        loop {
            if s == top {
                return true;
            }
            if s == ROOT_SLOT {
                return false;
            }
            s = self.arena.get(s).parent;
        }
    }

    /// Full path of an inode, for messages.
    pub fn path_of(&self, mut slot: Slot) -> String {
        let mut parts = Vec::new();
        while slot != ROOT_SLOT {
            parts.push(String::from_utf8_lossy(self.name(slot)).into_owned());
            slot = self.arena.get(slot).parent;
        }
        parts.reverse();
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        path::join(&refs)
    }

    /// Applies one operation record. Records come from `plan_*` (already validated) or from
    /// the journal; an error here means the record does not fit this tree.
    pub fn apply(&mut self, op: &Op) -> Result<Effects, FsError> {
        self.apply_at(op, At::default())
    }

    /// Applies a plan's records in order, each where its plan found it, calling `each` after
    /// every record that applied; stops at the first that does not.
    pub fn apply_planned(
        &mut self,
        planned: &Planned,
        mut each: impl FnMut(&Op, &Effects),
    ) -> Applied {
        let mut created = None;
        for (i, op) in planned.ops.iter().enumerate() {
            match self.apply_at(op, planned.at_of(i, created)) {
                Ok(fx) => {
                    created = fx.created;
                    each(op, &fx);
                }
                Err(e) => {
                    return Applied {
                        count: i,
                        failed: Some(e),
                    }
                }
            }
        }
        Applied {
            count: planned.ops.len(),
            failed: None,
        }
    }

    /// The slot of an existing path, or FileNotFound.
    pub fn existing(&self, path: &str) -> Result<Slot, FsError> {
        let comps = path::components(path)?;
        self.walk(&comps)?
            .target()
            .ok_or_else(|| FsError::file_not_found(path))
    }

    /// [`existing`](Self::existing), or `found` when a plan has just walked `path`. Debug
    /// builds walk anyway and check that the two agree, so every test checks the plans.
    fn existing_at(&self, path: &str, found: Option<Slot>) -> Result<Slot, FsError> {
        match found {
            Some(slot) => {
                debug_assert_eq!(self.existing(path).ok(), Some(slot), "planned {path}");
                Ok(slot)
            }
            None => self.existing(path),
        }
    }

    /// The existing parent directory of `path` and the last component's name; `dir` is
    /// that directory when a plan has just found it (checked in debug builds, as in
    /// [`existing_at`](Self::existing_at)).
    fn parent_and_name<'p>(
        &self,
        path: &'p str,
        dir: Option<Slot>,
    ) -> Result<(Slot, &'p str), FsError> {
        if let Some(dir) = dir {
            // The plan has validated the path: only its last name is wanted.
            let name = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
            debug_assert_eq!(
                self.parent_and_name(path, None).ok(),
                Some((dir, name)),
                "planned parent of {path}"
            );
            return Ok((dir, name));
        }
        let comps = path::components(path)?;
        let (name, parent_comps) = comps
            .split_last()
            .ok_or_else(|| FsError::InvalidPath(format!("{path}: the root has no parent")))?;
        let walk = self.walk(parent_comps)?;
        let parent = walk
            .target()
            .ok_or_else(|| FsError::parent_missing(path::join(parent_comps)))?;
        if !self.arena.get(parent).is_dir() {
            return Err(FsError::ParentNotDirectory(format!(
                "{} (is not a directory)",
                path::join(parent_comps)
            )));
        }
        Ok((parent, name))
    }

    #[allow(clippy::too_many_arguments)]
    fn add_child(
        &mut self,
        parent: Slot,
        name: &str,
        id: u64,
        perm: u16,
        owner: &str,
        group: &str,
        mtime: i64,
        body: Body,
    ) -> Result<Slot, FsError> {
        if self.child(parent, name.as_bytes()).is_some() {
            return Err(FsError::AlreadyExists(format!(
                "{} already exists",
                self.join_child(parent, name)
            )));
        }
        let owner = self.users.intern(owner);
        let group = self.users.intern(group);
        let name = self.names.add(name.as_bytes());
        let atime = if matches!(body, Body::File(_)) {
            mtime
        } else {
            0
        };
        let slot = self.arena.insert(Inode {
            id,
            mtime,
            atime,
            body,
            name,
            parent,
            owner,
            group,
            perm: perm & inode::PERM_MASK,
            replication: 0,
        });
        self.attach(parent, slot);
        self.arena.get_mut(parent).mtime = mtime;
        self.next_inode_id = self.next_inode_id.max(id + 1);
        Ok(slot)
    }

    fn join_child(&self, parent: Slot, name: &str) -> String {
        let p = self.path_of(parent);
        if p == "/" {
            format!("/{name}")
        } else {
            format!("{p}/{name}")
        }
    }

    /// Inserts `slot` into its parent's sorted children.
    fn attach(&mut self, parent: Slot, slot: Slot) {
        self.edit_children(parent, |c, ns| {
            c.insert(slot, ns.name(slot), |s| ns.name(s))
        })
        .expect("parent is a directory");
    }

    /// Removes `slot` from its parent's children (the inode itself stays).
    fn detach(&mut self, slot: Slot) {
        let parent = self.arena.get(slot).parent;
        self.edit_children(parent, |c, ns| c.remove(ns.name(slot), |s| ns.name(s)))
            .flatten()
            .expect("child is listed in its parent");
    }

    /// Runs `f` on the children of `dir` with the namespace at hand to read the other
    /// entries' names (a big directory keeps copies of some as it changes); `None` if
    /// `dir` is not a directory. The children are taken out of the arena meanwhile: no
    /// entry's name is read through its own parent.
    fn edit_children<R>(
        &mut self,
        dir: Slot,
        f: impl FnOnce(&mut Children, &Namespace) -> R,
    ) -> Option<R> {
        let Body::Dir(c) = &mut self.arena.get_mut(dir).body else {
            return None;
        };
        let mut children = std::mem::take(c);
        let out = f(&mut children, self);
        if let Body::Dir(c) = &mut self.arena.get_mut(dir).body {
            *c = children;
        }
        Some(out)
    }

    /// Frees an inode and everything under it. The caller has already detached it (or is
    /// replacing it), so this only walks downwards.
    fn remove_subtree(&mut self, top: Slot, fx: &mut Effects) {
        if self.listed(top) {
            self.detach(top);
        }
        let mut stack = vec![top];
        // A snapshottable directory with no snapshot left keeps nothing, but it is still
        // listed as one: the state must forget it too.
        let snapshot_state = !self.snaps.idle() || self.snaps.has_roots();
        while let Some(s) = stack.pop() {
            if snapshot_state && !self.forget_snapshot_state(s, fx) {
                // A snapshot lists it elsewhere: it stays, with what is below it, no longer
                // live.
                self.retire(s, fx);
                continue;
            }
            let inode = self.arena.remove(s);
            self.names.free(inode.name);
            if !self.acls.is_empty() {
                self.acls.forget(s);
            }
            if !self.features.is_empty() {
                if let Some(f) = self.features.remove(&s) {
                    if f.storage_policy != storage_policy::UNSPECIFIED {
                        self.policies_set -= 1;
                    }
                    if f.quota.is_some() {
                        self.quotas_set -= 1;
                    }
                }
            }
            match inode.body {
                Body::Dir(children) => {
                    self.dirs -= 1;
                    stack.extend(children.into_slots());
                }
                Body::File(mut f) => {
                    self.files -= 1;
                    if let Some(uc) = f.close() {
                        fx.closed_files.push((inode.id, uc.client_name));
                    }
                    for b in f.blocks() {
                        self.block_files.remove(&b.id);
                        fx.removed_blocks.push((b.id, b.gs));
                    }
                }
            }
        }
    }

    /// Reclaims the names freed by deletes and renames a step at a time: once they outgrow
    /// the live ones, each mutation moves the names of the next [`NAME_MOVE_STEP`] slots
    /// to a fresh buffer, until every slot has been visited (see [`NameArena`]). Slots
    /// filled meanwhile already have their names there.
    ///
    /// [`NameArena`]: names::NameArena
    fn step_name_move(&mut self) {
        let Some(from) = self.name_move else {
            if self.names.wants_compaction() {
                self.names.begin_move();
                self.name_move = Some(0);
            }
            return;
        };
        let end = self.arena.end();
        let to = from.saturating_add(NAME_MOVE_STEP).min(end);
        for slot in from..to {
            if let Some(inode) = self.arena.try_get_mut(slot) {
                inode.name = self.names.relocate(inode.name);
            }
        }
        if to == end {
            self.retired_names = self.names.finish_move();
            self.name_move = None;
        } else {
            self.name_move = Some(to);
        }
    }

    /// The data of a file that must be open for write (block records apply only to those).
    fn open_file_data(&mut self, slot: Slot, path: &str) -> Result<&mut FileData, FsError> {
        match &mut self.arena.get_mut(slot).body {
            Body::File(f) if f.uc().is_some() => Ok(f),
            _ => Err(FsError::misfit(format!(
                "{path} is not a file open for write"
            ))),
        }
    }

    /// The file that holds a block, if any does.
    pub fn block_file(&self, id: u64) -> Option<Slot> {
        self.block_files.get(&id).map(|&(s, _)| s)
    }

    /// The file that holds a block and the block's index in it.
    pub fn block_position(&self, id: u64) -> Option<(Slot, usize)> {
        self.block_files.get(&id).map(|&(s, i)| (s, i as usize))
    }

    /// Every block with the file that holds it.
    pub fn blocks(&self) -> impl Iterator<Item = (u64, Slot)> + '_ {
        self.block_files.iter().map(|(&b, &(s, _))| (b, s))
    }

    /// The number of blocks in the namespace.
    pub fn block_count(&self) -> usize {
        self.block_files.len()
    }

    /// Blocks that are complete: all but the last block of each file open for write.
    /// Start-up safe mode counts only these, as HDFS's `getCompleteBlocksTotal` does: a
    /// block still being written has only unfinished replicas to report, and waiting for
    /// a finished one would hold safe mode until the writer's lease ran out.
    pub fn complete_block_count(&self) -> usize {
        self.block_files
            .len()
            .saturating_sub(self.open_last_blocks().count())
    }

    /// The last block of each file open for write: the blocks not yet complete.
    pub fn open_last_blocks(&self) -> impl Iterator<Item = u64> + '_ {
        self.open_files
            .values()
            .filter_map(|&slot| Some(self.arena.get(slot).file()?.blocks().last()?.id))
    }

    /// The id and generation stamp the next allocated block gets.
    pub fn next_block(&self) -> (u64, u64) {
        (self.next_block_id, self.next_gs)
    }

    /// Moves the inode id, block id and generation stamp counters past what `records`
    /// lost journal records could have handed out (each hands out at most one of each),
    /// after a recovery that skipped them: a block id a DataNode still holds must never be
    /// given to a new block.
    pub fn reserve_ids(&mut self, records: u64) {
        self.next_inode_id += records;
        self.next_block_id += records;
        self.next_gs += records;
    }

    /// A fresh generation stamp after `next_block`'s (for pipeline recovery).
    pub fn next_gs(&self) -> u64 {
        self.next_gs
    }

    /// The slot of a file open for write, by inode id.
    /// How many files are open for write (under construction).
    pub fn open_file_count(&self) -> usize {
        self.open_files.len()
    }

    pub fn open_file_slot(&self, id: u64) -> Option<Slot> {
        self.open_files.get(&id).copied()
    }

    /// Every file open for write, with its lease holder (to rebuild leases after a restart,
    /// and to find the files of holders whose leases expired).
    pub fn open_files(&self) -> impl Iterator<Item = (u64, &str)> + '_ {
        self.open_files.iter().filter_map(|(&id, &slot)| {
            let uc = self.arena.get(slot).file()?.uc()?;
            Some((id, uc.client_name.as_str()))
        })
    }

    /// `listOpenFiles`: files open for write after inode id `after`, in id order, whose
    /// path starts with `prefix` (as HDFS compares them: as strings), at most `max`; and
    /// whether more follow.
    pub fn open_files_after(&self, after: u64, prefix: &str, max: usize) -> (Vec<OpenFile>, bool) {
        let mut out = Vec::new();
        let range = (std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded);
        for (&id, &slot) in self.open_files.range(range) {
            let Some(uc) = self.arena.get(slot).file().and_then(|f| f.uc()) else {
                continue;
            };
            let path = self.path_of(slot);
            if !path.starts_with(prefix) {
                continue;
            }
            if out.len() == max {
                return (out, true);
            }
            out.push(OpenFile {
                id,
                path,
                client_name: uc.client_name.clone(),
                client_machine: uc.client_machine.clone(),
            });
        }
        (out, false)
    }

    /// Bytes held by the name buffer (for memory reports).
    pub fn name_heap_bytes(&self) -> usize {
        self.names.heap_bytes()
    }
}
