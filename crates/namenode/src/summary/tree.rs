//! The summary's own tree: the namespace's shape, with for every directory its subtree
//! totals kept current as operation records arrive. Pure: no clock, no I/O.
//!
//! An event finds the directory its path's last name sits in (by the arena's path index,
//! or by walking from the root when the index cannot say), changes the entry there, and
//! adds the resulting [`Patch`] to that directory and every one above it, by parent links.
//! Subtrees stay where they are in the arena, so a rename or delete of a whole subtree
//! moves or drops one entry of its parent and patches the two ancestor chains by the
//! subtree's totals.

use super::arena::{DirId, Dirs, Lookup, ROOT};
use super::totals::{restricts, Part, Patch, Totals};
use crate::namespace::Op;

pub use super::arena::Dir;
pub use super::children::{Children, File, FileView, Node, NodeRef, MAX_NAME};

/// Why a record does not fit the tree: the summary has diverged from the namespace (which
/// checked the record before it was journaled), and must be rebuilt.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    #[error("{0} does not exist")]
    Missing(String),
    #[error("{0} is a directory")]
    IsDirectory(String),
    #[error("{0} is a file")]
    IsFile(String),
    #[error("{0} already exists")]
    Exists(String),
    #[error("{0} is not open for write")]
    NotOpen(String),
    #[error("{0} has no block being written")]
    NoBlock(String),
    #[error("rename destination {0} already exists")]
    DestinationExists(String),
    #[error("concat source {0} is a directory")]
    ConcatSourceIsDirectory(String),
    #[error("cannot move {src} below itself ({dst})")]
    BelowItself { src: String, dst: String },
    #[error("the root has no parent")]
    RootHasNoParent,
    #[error("a name of {0} bytes (at most {MAX_NAME})")]
    NameTooLong(usize),
    /// A shard's thread panicked part way through a batch (`shard.rs`): its tree is in
    /// no known state.
    #[error("a shard panicked")]
    ShardPanicked,
}

/// An entry taken out of one tree with everything below it, to be put into another
/// (a rename between shards, splitting a tree into shards).
pub enum Detached {
    File(File),
    Dir {
        perm: u16,
        updated: i64,
        children: Vec<(String, Detached)>,
    },
}

/// A journaled path's names, split at the last: (the directory's names, the last name).
/// No validation: the namespace checked the path before the record was written.
fn split_last(path: &str) -> Option<(impl Iterator<Item = &str> + Clone, &str)> {
    let path = path.trim_end_matches('/');
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    (!name.is_empty()).then(|| (names(dir), name))
}

/// A path's names, root first.
pub fn names(path: &str) -> impl Iterator<Item = &str> + Clone {
    path.split('/').filter(|c| !c.is_empty())
}

/// Changes one file in place; the patch moves it from its old figures to its new ones.
fn change_file(
    dir: &mut Dir,
    name: &str,
    f: impl FnOnce(&mut File) -> Result<(), Mismatch>,
) -> Result<Patch, Mismatch> {
    let figures = |file: &File| Part::File {
        len: file.len,
        repl: file.repl,
    };
    let changed = dir.children.update_file(name, |file| {
        let sub = figures(file);
        f(file)?;
        Ok::<_, Mismatch>(Patch {
            sub,
            add: figures(file),
        })
    });
    match changed {
        Some(patch) => patch,
        None if dir.children.contains_key(name) => Err(Mismatch::IsDirectory(name.to_string())),
        None => Err(Mismatch::Missing(name.to_string())),
    }
}

/// The whole summary tree.
pub struct Tree {
    dirs: Dirs,
    /// The newest operation time seen: the clock of `updated` for events that carry none.
    pub clock: i64,
}

pub enum Found<'a> {
    Dir(&'a Dir),
    File(FileView<'a>),
}

impl Tree {
    pub fn new(root_perm: u16, mtime: i64) -> Tree {
        Tree {
            dirs: Dirs::new(root_perm, mtime),
            clock: mtime,
        }
    }

    pub fn root(&self) -> &Dir {
        self.dirs.root()
    }

    pub fn dir(&self, id: DirId) -> &Dir {
        self.dirs.get(id)
    }

    /// What `node` contributes to the totals above it.
    pub fn part(&self, node: NodeRef) -> Part {
        self.dirs.part(node)
    }

    /// The directory whose names are `names`, for an event: by the index, or by walking
    /// when two directories share the path's key or none has it (then the walk names the
    /// first name that is missing or not a directory).
    ///
    /// The index answers for paths that are directories. A record naming a directory that
    /// does not exist does not fit the tree; should its path's key also be another
    /// directory's (a 64-bit collision, with a seed of this process's own), it would be
    /// applied there instead of being refused. Queries walk, so no answer depends on that.
    fn dir_at<'a>(&self, names: impl Iterator<Item = &'a str> + Clone) -> Result<DirId, Mismatch> {
        match self.dirs.lookup(names.clone()) {
            Lookup::Found(id) => Ok(id),
            Lookup::NotADir | Lookup::Ambiguous => self.walk(names),
        }
    }

    /// The directory whose names are `names`, found from the root name by name.
    fn walk<'a>(&self, names: impl Iterator<Item = &'a str>) -> Result<DirId, Mismatch> {
        let mut at = ROOT;
        for name in names {
            match self.dirs.get(at).children.get_dir(name) {
                Some(NodeRef::Dir(d)) => at = d,
                Some(NodeRef::File(_)) => return Err(Mismatch::IsFile(name.to_string())),
                None => return Err(Mismatch::Missing(name.to_string())),
            }
        }
        Ok(at)
    }

    /// Finds the directory holding `path`'s last name, runs `leaf` there, and applies the
    /// patch it returns to that directory and every one above it.
    fn at_parent<R>(
        &mut self,
        path: &str,
        now: i64,
        leaf: impl FnOnce(&mut Tree, DirId, &str) -> Result<(Patch, R), Mismatch>,
    ) -> Result<R, Mismatch> {
        let (parent, name) = self.place(path)?;
        self.in_dir(parent, name, now, leaf)
    }

    /// Runs `leaf` on `name` in directory `parent` and applies the patch it returns to
    /// `parent` and every directory above it.
    fn in_dir<R>(
        &mut self,
        parent: DirId,
        name: &str,
        now: i64,
        leaf: impl FnOnce(&mut Tree, DirId, &str) -> Result<(Patch, R), Mismatch>,
    ) -> Result<R, Mismatch> {
        let (patch, out) = leaf(self, parent, name)?;
        self.dirs.patch_up(parent, &patch, now);
        Ok(out)
    }

    /// The directory `path`'s last name is in (which must exist), and that name.
    fn place<'p>(&self, path: &'p str) -> Result<(DirId, &'p str), Mismatch> {
        let (dir, name) = split_last(path).ok_or(Mismatch::RootHasNoParent)?;
        if name.len() > MAX_NAME {
            return Err(Mismatch::NameTooLong(name.len()));
        }
        Ok((self.dir_at(dir)?, name))
    }

    pub fn find(&self, path: &str) -> Option<Found<'_>> {
        let Some((dir, name)) = split_last(path) else {
            return Some(Found::Dir(self.root()));
        };
        let parent = self.walk(dir).ok()?;
        match self.dirs.get(parent).children.get(name)? {
            NodeRef::Dir(d) => Some(Found::Dir(self.dirs.get(d))),
            NodeRef::File(f) => Some(Found::File(f)),
        }
    }

    /// Applies one operation record. An error means the record does not fit this tree
    /// (the summary has diverged from the namespace and must be rebuilt).
    pub fn apply(&mut self, op: &Op) -> Result<(), Mismatch> {
        let now = op_time(op).map_or(self.clock, |t| t.max(self.clock));
        self.clock = now;
        match op {
            Op::Mkdir {
                path, perm, mtime, ..
            } => {
                let (perm, mtime) = (*perm, *mtime);
                self.at_parent(path, now, |t, parent, name| {
                    if t.dirs.get(parent).children.contains_key(name) {
                        return Err(Mismatch::Exists(path.clone()));
                    }
                    t.add_dir(parent, name, perm, mtime);
                    let add = Part::Tree(Box::new(Totals::of_dir(perm)));
                    Ok((
                        Patch {
                            sub: Part::Nothing,
                            add,
                        },
                        (),
                    ))
                })?;
            }
            Op::Create {
                path, replication, ..
            } => {
                let repl = *replication;
                self.at_parent(path, now, |t, parent, name| {
                    if let Some(NodeRef::Dir(_)) = t.dirs.get(parent).children.get(name) {
                        return Err(Mismatch::IsDirectory(path.clone()));
                    }
                    let file = File {
                        len: 0,
                        repl,
                        open: Some(Vec::new()),
                    };
                    // Replaces an old file of that name, if any.
                    let sub = t.link_replacing(parent, name, Node::File(file));
                    let add = Part::File { len: 0, repl };
                    Ok((Patch { sub, add }, ()))
                })?;
            }
            Op::AddBlock { path, prev_len, .. } => {
                let prev_len = *prev_len;
                self.change_file(path, now, |f| {
                    let blocks = f.open.as_mut().ok_or_else(|| Mismatch::NotOpen(path.clone()))?;
                    let mut was = 0;
                    if let Some(last) = blocks.last_mut() {
                        was = *last;
                        *last = prev_len;
                    }
                    blocks.push(0);
                    f.len = f.len.saturating_sub(was) + prev_len;
                    Ok(())
                })?;
            }
            Op::AbandonBlock { path, .. } => {
                self.change_file(path, now, |f| {
                    let blocks = f.open.as_mut().ok_or_else(|| Mismatch::NotOpen(path.clone()))?;
                    blocks.pop().ok_or_else(|| Mismatch::NoBlock(path.clone()))?;
                    Ok(())
                })?;
            }
            Op::Append { path, last_len, .. } => {
                let last_len = *last_len;
                self.change_file(path, now, |f| {
                    // Only the last block's length matters to the records that follow.
                    f.open = Some(vec![last_len]);
                    Ok(())
                })?;
            }
            Op::Truncate { path, len, cut, .. } => {
                let (len, cut) = (*len, *cut);
                self.change_file(path, now, |f| {
                    // As the namespace: the cut block counts whole until recovery.
                    match cut {
                        Some((kept, had)) => {
                            f.len = len - kept + had;
                            f.open = Some(vec![had]);
                        }
                        None => f.len = len,
                    }
                    Ok(())
                })?;
            }
            Op::Concat { target, srcs, .. } => {
                let mut added = 0;
                for src in srcs {
                    match self.detach(src, now)? {
                        Node::File(f) => added += f.len,
                        Node::Dir(_) => return Err(Mismatch::ConcatSourceIsDirectory(src.clone())),
                    }
                }
                self.change_file(target, now, |f| {
                    f.len += added;
                    Ok(())
                })?;
            }
            Op::UpdateLastBlock { path, len, .. } => {
                let len = *len;
                self.change_file(path, now, |f| {
                    let open = f.open.as_mut().ok_or_else(|| Mismatch::NotOpen(path.clone()))?;
                    let last = open.last_mut().ok_or_else(|| Mismatch::NoBlock(path.clone()))?;
                    let was = std::mem::replace(last, len);
                    f.len = f.len.saturating_sub(was) + len;
                    Ok(())
                })?;
            }
            Op::Close { path, len, .. } => {
                let len = *len;
                self.change_file(path, now, |f| {
                    f.len = len;
                    f.open = None;
                    Ok(())
                })?;
            }
            Op::SetReplication { path, replication } => {
                let repl = *replication;
                self.change_file(path, now, |f| {
                    f.repl = repl;
                    Ok(())
                })?;
            }
            Op::SetPermission { path, perm } => self.set_permission(path, *perm, now)?,
            Op::Delete { path, .. } => {
                if let Node::Dir(id) = self.detach(path, now)? {
                    self.dirs.free(id);
                }
            }
            Op::Rename {
                src,
                dst,
                overwrite,
                ..
            } => self.rename(src, dst, *overwrite, now)?,
            Op::BumpGenerationStamp { .. }
            | Op::SetGenerationStamp { .. }
            | Op::ReassignLease { .. }
            | Op::RetryId { .. }
            | Op::SetCachePool { .. }
            | Op::RemoveCachePool { .. }
            | Op::SetCacheDirective { .. }
            | Op::RemoveCacheDirective { .. }
            | Op::AllowSnapshot { .. }
            | Op::DisallowSnapshot { .. }
            | Op::CreateSnapshot { .. }
            | Op::DeleteSnapshot { .. }
            | Op::RenameSnapshot { .. }
            // The new block is as long as the one it replaces until recovery reports.
            | Op::CopyOnTruncate { .. }
            | Op::SetOwner { .. }
            | Op::SetXAttr { .. }
            | Op::RemoveXAttr { .. }
            | Op::SetStoragePolicy { .. }
            | Op::SetAcl { .. }
            | Op::SetQuota { .. }
            | Op::SetTypeQuota { .. }
            | Op::SetTimes { .. } => {}
        }
        Ok(())
    }

    fn change_file(
        &mut self,
        path: &str,
        now: i64,
        f: impl FnOnce(&mut File) -> Result<(), Mismatch>,
    ) -> Result<(), Mismatch> {
        self.at_parent(path, now, |t, parent, name| {
            Ok((change_file(t.dirs.get_mut(parent), name, f)?, ()))
        })
    }

    fn set_permission(&mut self, path: &str, perm: u16, now: i64) -> Result<(), Mismatch> {
        let flip = |d: &mut Dir| {
            let was = restricts(d.perm);
            d.perm = perm;
            let is = restricts(perm);
            let unit = || {
                Part::Tree(Box::new(Totals {
                    restricted: 1,
                    ..Default::default()
                }))
            };
            let patch = match (was, is) {
                (false, true) => Patch {
                    sub: Part::Nothing,
                    add: unit(),
                },
                (true, false) => Patch {
                    sub: unit(),
                    add: Part::Nothing,
                },
                _ => Patch::default(),
            };
            patch.apply(&mut d.tot);
            patch
        };
        if split_last(path).is_none() {
            flip(self.dirs.get_mut(ROOT));
            return Ok(());
        }
        self.at_parent(path, now, |t, parent, name| {
            match t.dirs.get(parent).children.get_dir(name) {
                Some(NodeRef::Dir(d)) => Ok((flip(t.dirs.get_mut(d)), ())),
                Some(NodeRef::File(_)) => Ok((Patch::default(), ())),
                None => Err(Mismatch::Missing(path.to_string())),
            }
        })
    }

    /// Unlinks the entry at `path` from its directory and returns it; a directory stays
    /// in the arena, to be linked again or freed.
    pub fn detach(&mut self, path: &str, now: i64) -> Result<Node, Mismatch> {
        self.at_parent(path, now, |t, parent, name| t.unlink(parent, name, path))
    }

    /// Takes `name` (at `path`) out of `parent`, with the patch that takes it out of the
    /// totals above.
    fn unlink(&mut self, parent: DirId, name: &str, path: &str) -> Result<(Patch, Node), Mismatch> {
        let node = self.remove_child(parent, name, path)?;
        Ok((Patch::removing(self.part(node.as_ref())), node))
    }

    /// Takes `name` (at `path`) out of `parent`'s children, totals untouched.
    fn remove_child(&mut self, parent: DirId, name: &str, path: &str) -> Result<Node, Mismatch> {
        self.dirs
            .get_mut(parent)
            .children
            .remove(name)
            .ok_or_else(|| Mismatch::Missing(path.to_string()))
    }

    /// Puts `node` (a file, or a directory of this tree's arena) as `name` in `parent`,
    /// replacing what is there.
    fn attach(&mut self, parent: DirId, name: &str, node: Node, now: i64) -> Result<(), Mismatch> {
        self.in_dir(parent, name, now, |t, parent, name| {
            let add = t.part(node.as_ref());
            let sub = t.link_replacing(parent, name, node);
            Ok((Patch { sub, add }, ()))
        })
    }

    /// Links `node` as `name` in `parent`, re-keying it if it is a directory, and frees
    /// what it replaces. Returns what the replaced entry contributed to the totals above.
    fn link_replacing(&mut self, parent: DirId, name: &str, node: Node) -> Part {
        let moved = match node {
            Node::Dir(id) => Some(id),
            Node::File(_) => None,
        };
        let old = self.dirs.get_mut(parent).children.insert(name, node);
        if let Some(id) = moved {
            self.dirs.relink(id, parent, name);
        }
        let Some(old) = old else {
            return Part::Nothing;
        };
        let sub = self.part(old.as_ref());
        if let Node::Dir(o) = old {
            self.dirs.free(o);
        }
        sub
    }

    /// A rename within one directory: the entry keeps its totals where they are, so the
    /// directories above lose only what it replaces, in one climb (moved out and back in,
    /// it took two, and a directory's totals were copied twice). `hdfs dfs -put` renames
    /// every file it copies this way (`name._COPYING_` to `name`), as NNThroughputBenchmark's
    /// rename does (`name` to `name.r`). With the path checks `rename` skips for siblings,
    /// the summary's thread spent 2.4–2.5 µs per remote NNThroughputBenchmark rename against
    /// 3.4–3.6 (three alternating pairs); the second climb alone had not shown.
    fn rename_within(
        &mut self,
        parent: DirId,
        src: &str,
        from: &str,
        to: &str,
        now: i64,
    ) -> Result<(), Mismatch> {
        self.in_dir(parent, to, now, |t, parent, to| {
            let node = t.remove_child(parent, from, src)?;
            Ok((Patch::removing(t.link_replacing(parent, to, node)), ()))
        })
    }

    fn rename(&mut self, src: &str, dst: &str, overwrite: bool, now: i64) -> Result<(), Mismatch> {
        // Both directories are found before the source is unlinked: a directory unlinked
        // and then refused would stay in the arena and its index, reachable by a key but by
        // no walk. The destination's stays valid through the unlinking: it is not below
        // `src` (checked below).
        let (src_parent, src_name) = self.place(src)?;
        let (parent, name) = self.place(dst)?;
        if src_parent == parent {
            // Siblings: neither is below the other, so the check on whole paths below,
            // which splits and compares both (most of a rename's cost here, with
            // NNThroughputBenchmark's ten-level paths), is not needed.
            if src_name == name {
                return Ok(());
            }
            self.check_free(parent, name, dst, overwrite)?;
            return self.rename_within(parent, src, src_name, name, now);
        }
        // The namespace never journals one, but linked below itself a directory would make
        // a cycle in the arena, and every later walk of it would not end.
        let mut below = names(dst);
        if names(src).all(|n| below.next() == Some(n)) {
            return Err(Mismatch::BelowItself {
                src: src.to_string(),
                dst: dst.to_string(),
            });
        }
        self.check_free(parent, name, dst, overwrite)?;
        let node = self.in_dir(src_parent, src_name, now, |t, parent, name| {
            t.unlink(parent, name, src)
        })?;
        self.attach(parent, name, node, now)
    }

    /// Refuses a rename to `name` in `parent` (at `dst`) that would replace an entry
    /// without `overwrite`.
    fn check_free(
        &self,
        parent: DirId,
        name: &str,
        dst: &str,
        overwrite: bool,
    ) -> Result<(), Mismatch> {
        if !overwrite && self.dirs.get(parent).children.contains_key(name) {
            return Err(Mismatch::DestinationExists(dst.to_string()));
        }
        Ok(())
    }

    /// Whether a rename could [`put`](Self::put) an entry at `dst`: checked before the
    /// source is [`take`](Self::take)n from another tree, which must not lose it to a
    /// refused destination.
    pub fn accepts(&self, dst: &str, overwrite: bool) -> Result<(), Mismatch> {
        let (parent, name) = self.place(dst)?;
        self.check_free(parent, name, dst, overwrite)
    }

    /// Takes the entry at `path` out of this tree with everything below it.
    pub fn take(&mut self, path: &str, now: i64) -> Result<Detached, Mismatch> {
        let node = self.detach(path, now)?;
        Ok(self.own(node))
    }

    /// `node`, taken out of the arena (a directory's slots are freed).
    fn own(&mut self, node: Node) -> Detached {
        match node {
            Node::File(f) => Detached::File(f),
            Node::Dir(id) => {
                let d = self.dirs.get_mut(id);
                let (perm, updated) = (d.perm, d.updated);
                let children = std::mem::take(&mut d.children)
                    .drain()
                    .into_iter()
                    .map(|(name, n)| (name, self.own(n)))
                    .collect();
                self.dirs.free(id);
                Detached::Dir {
                    perm,
                    updated,
                    children,
                }
            }
        }
    }

    /// Puts `entry` at `path`, replacing what is there.
    pub fn put(&mut self, path: &str, entry: Detached, now: i64) -> Result<(), Mismatch> {
        // Found first, so that a refused entry is never built into the arena.
        let (parent, name) = self.place(path)?;
        let node = match entry {
            Detached::File(f) => Node::File(f),
            // Built under the root, then moved into place by `attach`, which re-keys it.
            Detached::Dir { .. } => Node::Dir(self.build(ROOT, "", entry)),
        };
        self.attach(parent, name, node, now)
    }

    /// Builds a detached directory in the arena below `parent` (not linked into its
    /// children) and returns its slot, its totals counted.
    fn build(&mut self, parent: DirId, name: &str, entry: Detached) -> DirId {
        let Detached::Dir {
            perm,
            updated,
            children,
        } = entry
        else {
            unreachable!("build takes a directory");
        };
        let id = self.dirs.add(parent, name, perm, updated);
        for (n, child) in children {
            let node = match child {
                Detached::File(f) => Node::File(f),
                d @ Detached::Dir { .. } => Node::Dir(self.build(id, &n, d)),
            };
            self.link(id, &n, node);
        }
        self.dirs.recount(id);
        id
    }

    /// A new directory `name` in `parent`, linked into its children. A new directory's
    /// totals are its own; when building or loading bottom-up, [`recount`](Self::recount)
    /// counts its children in once they are.
    pub fn add_dir(&mut self, parent: DirId, name: &str, perm: u16, updated: i64) -> DirId {
        let id = self.dirs.add(parent, name, perm, updated);
        self.link(parent, name, Node::Dir(id));
        id
    }

    /// Links a file into `parent`'s children, its totals counted by `recount`.
    pub fn add_file(&mut self, parent: DirId, name: &str, file: File) {
        self.link(parent, name, Node::File(file));
    }

    /// Links `node` into `parent`'s children; a directory it replaces (a name twice in a
    /// checkpoint) is freed rather than left in the arena.
    fn link(&mut self, parent: DirId, name: &str, node: Node) {
        if let Some(Node::Dir(old)) = self.dirs.get_mut(parent).children.insert(name, node) {
            self.dirs.free(old);
        }
    }

    /// Recomputes a directory's totals from its children's.
    pub fn recount(&mut self, id: DirId) {
        self.dirs.recount(id);
    }

    pub fn dir_mut(&mut self, id: DirId) -> &mut Dir {
        self.dirs.get_mut(id)
    }

    /// Checks the arena against the tree (tests): every directory reachable from the root
    /// links to its parent and is found by its path through the index, and no slot or
    /// index entry is left over.
    #[cfg(test)]
    pub fn check_arena(&self) {
        let mut reachable = 0;
        let mut stack = vec![(ROOT, Vec::<String>::new())];
        while let Some((id, path)) = stack.pop() {
            reachable += 1;
            match self.dirs.lookup(path.iter().map(String::as_str)) {
                Lookup::Found(found) => assert_eq!(found, id, "/{}", path.join("/")),
                Lookup::Ambiguous => {}
                Lookup::NotADir => panic!("/{} is not in the index", path.join("/")),
            }
            for (name, c) in self.dirs.get(id).children.subdirs() {
                assert_eq!(self.dirs.get(c).parent(), id, "the parent of {name}");
                let mut p = path.clone();
                p.push(name.to_string());
                stack.push((c, p));
            }
        }
        assert_eq!(self.dirs.live(), reachable, "live slots");
        assert_eq!(self.dirs.indexed(), reachable, "index entries");
    }
}

/// The time an operation carries, if any.
pub fn op_time(op: &Op) -> Option<i64> {
    match op {
        Op::Mkdir { mtime, .. }
        | Op::Create { mtime, .. }
        | Op::Close { mtime, .. }
        | Op::Rename { mtime, .. }
        | Op::Delete { mtime, .. } => Some(*mtime),
        _ => None,
    }
}
