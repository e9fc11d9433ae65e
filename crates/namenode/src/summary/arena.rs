//! The summary's directories: one arena, each directory linked to its parent and indexed
//! by its path.
//!
//! An event names a path, and its patch goes to every directory above it. Walking down
//! from the root to find them cost three dependent cache misses a level (the directory,
//! its slots, its names); under NNThroughputBenchmark's mkdirs, whose trees are two wide
//! and some seventeen deep, that walk was most of the summary's CPU, and the summary a
//! quarter of the NameNode's (BENCHMARKS.md). Here the parent is found by hashing the
//! event's path into a key and probing one table, and the patch climbs by parent links,
//! one miss a level.
//!
//! A directory's key chains its path's names: `key(child) = h(key(parent), name)`, with a
//! seed of the process's own. A key stands for a path only while no other directory has
//! it: a lookup that finds two directories with the key answers nothing, and the caller
//! walks from the root, so a collision costs time, never a wrong answer. Every directory
//! is in the index, so a path that is a directory is always found. Keys depend on the
//! whole path: moving a directory re-keys everything below it (work in proportion to the
//! directories moved, where the namespace's rename is one entry).
//!
//! Slots live in fixed-size chunks ([`Chunked`]), so growing the arena never copies the
//! directories already in it, and freed slots are reused.

use hashbrown::HashTable;

use crate::chunked::Chunked;

use super::children::{Children, NodeRef};
use super::totals::{Patch, Totals};

/// A directory's slot in the arena.
pub(super) use super::children::DirId;

/// The root's slot.
pub(super) const ROOT: DirId = 0;

pub struct Dir {
    pub perm: u16,
    /// The time of the last change anywhere below (the newest operation time seen).
    pub updated: i64,
    pub tot: Totals,
    pub children: Children,
    /// The root's parent is itself.
    parent: DirId,
    /// The chained hash of its path (see the module comment).
    key: u64,
}

impl Dir {
    pub fn parent(&self) -> DirId {
        self.parent
    }
}

/// The directories' keys, in 64 tables by key bits. One table doubling moved every entry
/// on the summary's thread, under the lock content summaries wait on: 31 ms past 917,504
/// directories, 49 ms past 1.8 million. A part doubles alone, moving a 64th of them.
struct KeyIndex(Vec<HashTable<(u64, DirId)>>);

impl Default for KeyIndex {
    fn default() -> Self {
        KeyIndex((0..64).map(|_| HashTable::new()).collect())
    }
}

impl KeyIndex {
    /// Bits hashbrown uses neither for the bucket (the low ones) nor for the control byte
    /// (the top seven), so each part stays evenly spread.
    fn slot(key: u64) -> usize {
        (key >> 32) as usize & 63
    }

    fn part(&self, key: u64) -> &HashTable<(u64, DirId)> {
        &self.0[Self::slot(key)]
    }

    fn part_mut(&mut self, key: u64) -> &mut HashTable<(u64, DirId)> {
        &mut self.0[Self::slot(key)]
    }
}

/// What the index says about a path.
pub(super) enum Lookup {
    Found(DirId),
    /// No directory has the path's key, so the path is not a directory.
    NotADir,
    /// More than one directory has the key: the caller must walk.
    Ambiguous,
}

pub(super) struct Dirs {
    slots: Chunked<Dir>,
    /// (key, slot) of every directory. The key is kept in the entry so that neither a
    /// probe nor the table's growth reads the directories themselves (a cache miss each).
    index: KeyIndex,
    seed: foldhash::fast::RandomState,
}

impl Dirs {
    /// An arena holding only a root directory.
    pub(super) fn new(perm: u16, updated: i64) -> Dirs {
        let mut dirs = Dirs {
            slots: Chunked::default(),
            index: KeyIndex::default(),
            seed: foldhash::fast::RandomState::default(),
        };
        let root = dirs.alloc(ROOT, 0, perm, updated);
        debug_assert_eq!(root, ROOT);
        dirs
    }

    pub(super) fn get(&self, id: DirId) -> &Dir {
        self.slots.get(id)
    }

    pub(super) fn get_mut(&mut self, id: DirId) -> &mut Dir {
        self.slots.get_mut(id)
    }

    pub(super) fn root(&self) -> &Dir {
        self.get(ROOT)
    }

    /// The key of `name` in the directory keyed `parent`.
    fn child_key(&self, parent: u64, name: &str) -> u64 {
        let key = std::hash::BuildHasher::hash_one(&self.seed, (parent, name));
        #[cfg(test)]
        let key = key & KEY_MASK.with(std::cell::Cell::get);
        key
    }

    /// The key of the path made of `names` below the root.
    fn path_key<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> u64 {
        let root = self.root().key;
        names.into_iter().fold(root, |k, n| self.child_key(k, n))
    }

    /// The directory at the path made of `names` (empty: the root).
    pub(super) fn lookup<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Lookup {
        let key = self.path_key(names);
        let mut hits = self
            .index
            .part(key)
            .iter_hash(key)
            .filter(|&&(k, _)| k == key);
        match (hits.next(), hits.next()) {
            (Some(&(_, id)), None) => Lookup::Found(id),
            (None, _) => Lookup::NotADir,
            (Some(_), Some(_)) => Lookup::Ambiguous,
        }
    }

    /// A new directory `name` below `parent`, keyed and indexed; the caller links it into
    /// the parent's children.
    pub(super) fn add(&mut self, parent: DirId, name: &str, perm: u16, updated: i64) -> DirId {
        let key = self.child_key(self.get(parent).key, name);
        self.alloc(parent, key, perm, updated)
    }

    fn alloc(&mut self, parent: DirId, key: u64, perm: u16, updated: i64) -> DirId {
        let dir = Dir {
            perm,
            updated,
            tot: Totals::of_dir(perm),
            children: Children::default(),
            parent,
            key,
        };
        let id = self.slots.insert(dir);
        self.index_one(id);
        id
    }

    fn index_one(&mut self, id: DirId) {
        let key = self.get(id).key;
        self.index
            .part_mut(key)
            .insert_unique(key, (key, id), |&(k, _)| k);
    }

    fn unindex_one(&mut self, id: DirId) {
        let key = self.get(id).key;
        if let Ok(e) = self
            .index
            .part_mut(key)
            .find_entry(key, |&(k, v)| k == key && v == id)
        {
            e.remove();
        }
    }

    /// `id` and every directory below it, parents before children.
    fn subtree(&self, id: DirId) -> Vec<DirId> {
        let mut out = vec![id];
        let mut i = 0;
        while i < out.len() {
            let d = self.get(out[i]);
            out.extend(d.children.subdirs().map(|(_, c)| c));
            i += 1;
        }
        out
    }

    /// Links the subtree at `id` under `parent` as `name`: its parent link and every key
    /// below it follow the new path (the caller has put it in the parent's children).
    pub(super) fn relink(&mut self, id: DirId, parent: DirId, name: &str) {
        let below = self.subtree(id);
        for &d in &below {
            self.unindex_one(d);
        }
        let key = self.child_key(self.get(parent).key, name);
        let d = self.get_mut(id);
        d.parent = parent;
        d.key = key;
        // Parents come before their children in `below`, so each is re-keyed before its
        // children read its key.
        for &d in &below {
            let key = self.get(d).key;
            let kids: Vec<(DirId, u64)> = self
                .get(d)
                .children
                .subdirs()
                .map(|(n, c)| (c, self.child_key(key, n)))
                .collect();
            for (c, k) in kids {
                let child = self.get_mut(c);
                child.parent = d;
                child.key = k;
            }
            self.index_one(d);
        }
    }

    /// Frees `id` and everything below it (a deleted or replaced subtree, already unlinked
    /// from its parent's children).
    pub(super) fn free(&mut self, id: DirId) {
        for d in self.subtree(id) {
            self.unindex_one(d);
            self.slots.remove(d);
        }
    }

    /// Applies `patch` to `id` and every directory above it, and moves their `updated` to
    /// at least `now`.
    pub(super) fn patch_up(&mut self, mut id: DirId, patch: &Patch, now: i64) {
        loop {
            let d = self.get_mut(id);
            patch.apply(&mut d.tot);
            d.updated = d.updated.max(now);
            if id == ROOT {
                return;
            }
            id = d.parent;
        }
    }

    /// Recomputes `id`'s totals from its children, whose own totals must already be right
    /// (building or loading bottom-up).
    pub(super) fn recount(&mut self, id: DirId) {
        let mut tot = Totals::of_dir(self.get(id).perm);
        for node in self.get(id).children.values() {
            Patch {
                sub: super::totals::Part::Nothing,
                add: self.part(node),
            }
            .apply(&mut tot);
        }
        self.get_mut(id).tot = tot;
    }

    /// What `node` contributes to the totals above it.
    pub(super) fn part(&self, node: NodeRef) -> super::totals::Part {
        use super::totals::Part;
        match node {
            NodeRef::File(f) => Part::File {
                len: f.len,
                repl: f.repl,
            },
            NodeRef::Dir(d) => Part::Tree(Box::new(self.get(d).tot.clone())),
        }
    }

    /// Live directories (tests).
    #[cfg(test)]
    pub(super) fn live(&self) -> usize {
        self.slots.len()
    }

    /// Directories in the index (tests: every live one, once).
    #[cfg(test)]
    pub(super) fn indexed(&self) -> usize {
        self.index.0.iter().map(HashTable::len).sum()
    }
}

#[cfg(test)]
thread_local! {
    /// Tests narrow the keys to a few bits so that most directories share a key with
    /// another, and events must walk (the summary's own thread sees the full keys).
    pub static KEY_MASK: std::cell::Cell<u64> = const { std::cell::Cell::new(u64::MAX) };
}
