//! The namespace summary: for every directory, file and directory counts (direct and
//! subtree), logical and raw bytes, and a file-size histogram, kept current from the
//! stream of operation records (HDDS-15335's Recon NSSummary, for HDFS).
//!
//! [`Summary`] is pure state: records go in with their txids, answers come out. The task
//! that feeds it from the journal lives in [`follow`]; its checkpoint format in [`codec`].

mod arena;
mod children;
pub mod codec;
pub mod follow;
pub mod shard;
pub mod totals;
pub mod tree;

#[cfg(test)]
pub(crate) mod tests;

use crate::namespace::inode::{Body, ROOT_SLOT};
use crate::namespace::{Namespace, Op};
use arena::{DirId, ROOT};
use totals::{Totals, BUCKETS};
use tree::{File, Found, NodeRef, Tree};

/// What the summary knows about one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathSummary {
    pub is_dir: bool,
    pub direct_files: u64,
    pub direct_dirs: u64,
    /// Subtree totals, the path itself included (a directory counts itself in `dirs`).
    pub tot: Totals,
    pub updated: i64,
}

/// One child's usage, for "largest children" listings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildUsage {
    pub name: String,
    pub is_dir: bool,
    pub files: u64,
    pub bytes: u64,
    pub raw: u64,
}

/// A directory's own share: the files directly in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirUsage {
    pub path: String,
    pub own_bytes: u64,
    pub own_files: u64,
}

/// The `top` heaviest, heaviest first, ties by path.
pub(crate) fn rank(mut dirs: Vec<DirUsage>, top: usize) -> Vec<DirUsage> {
    dirs.sort_by(|a, b| {
        b.own_bytes
            .cmp(&a.own_bytes)
            .then_with(|| a.path.cmp(&b.path))
    });
    dirs.truncate(top);
    dirs
}

/// Why the summary cannot take the next record: it has diverged from the namespace and
/// is rebuilt from it.
#[derive(Debug, thiserror::Error)]
pub enum Diverged {
    #[error("txid {txid} follows {after}: records are missing")]
    Gap { txid: u64, after: u64 },
    #[error("txid {txid} ({op}): {cause}")]
    Misfit {
        txid: u64,
        /// The record, as `ferrite oev` prints it.
        op: String,
        #[source]
        cause: tree::Mismatch,
    },
}

pub struct Summary {
    tree: Tree,
    txid: u64,
}

impl Summary {
    /// An empty namespace (only the root) before txid 1.
    pub fn empty(root_perm: u16) -> Summary {
        Summary {
            tree: Tree::new(root_perm, 0),
            txid: 0,
        }
    }

    /// A full rebuild from a namespace that reflects every txid up to `txid`.
    pub fn from_namespace(ns: &Namespace, txid: u64) -> Summary {
        let root = ns.inode(ROOT_SLOT);
        let mut tree = Tree::new(root.perm, root.mtime);
        build_dir(ns, ROOT_SLOT, &mut tree, ROOT);
        tree.clock = tree.root().updated;
        Summary { tree, txid }
    }

    pub(crate) fn from_parts(tree: Tree, txid: u64) -> Summary {
        Summary { tree, txid }
    }

    pub(crate) fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The tree alone, to split over shards.
    pub fn into_tree(self) -> Tree {
        self.tree
    }

    /// The last txid applied.
    pub fn txid(&self) -> u64 {
        self.txid
    }

    /// Applies the record with `txid`. Records at or below the current txid are skipped
    /// (a replayed stretch); a gap or a record that does not fit is an error, after which
    /// the summary must be rebuilt.
    pub fn apply(&mut self, txid: u64, op: &Op) -> Result<(), Diverged> {
        if txid <= self.txid {
            return Ok(());
        }
        if txid != self.txid + 1 {
            return Err(Diverged::Gap {
                txid,
                after: self.txid,
            });
        }
        self.tree.apply(op).map_err(|cause| Diverged::Misfit {
            txid,
            op: op.to_string(),
            cause,
        })?;
        self.txid = txid;
        Ok(())
    }

    pub fn get(&self, path: &str) -> Option<PathSummary> {
        Some(match self.tree.find(path)? {
            Found::Dir(d) => PathSummary {
                is_dir: true,
                direct_files: d.children.file_count() as u64,
                direct_dirs: d.children.dir_count() as u64,
                tot: d.tot.clone(),
                updated: d.updated,
            },
            Found::File(f) => {
                let tot = Totals::of_file(f.len, f.repl);
                PathSummary {
                    is_dir: false,
                    direct_files: 0,
                    direct_dirs: 0,
                    tot,
                    updated: 0,
                }
            }
        })
    }

    /// The `top` largest children of a directory by logical bytes (ties by name).
    pub fn largest_children(&self, path: &str, top: usize) -> Option<Vec<ChildUsage>> {
        let Found::Dir(d) = self.tree.find(path)? else {
            return Some(Vec::new());
        };
        let mut out: Vec<ChildUsage> = d
            .children
            .iter()
            .map(|(name, node)| match node {
                NodeRef::Dir(c) => {
                    let tot = &self.tree.dir(c).tot;
                    ChildUsage {
                        name: name.to_string(),
                        is_dir: true,
                        files: tot.files,
                        bytes: tot.bytes,
                        raw: tot.raw,
                    }
                }
                NodeRef::File(f) => ChildUsage {
                    name: name.to_string(),
                    is_dir: false,
                    files: 1,
                    bytes: f.len,
                    raw: f.len.wrapping_mul(u64::from(f.repl)),
                },
            })
            .collect();
        out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
        out.truncate(top);
        Some(out)
    }

    /// The `top` directories under `path` (itself included) holding the most bytes in
    /// their own files (those with none are left out), heaviest first (ties by path): where the data sits, which the
    /// subtree totals cannot show, since every ancestor of a heavy directory is heavier
    /// still. Looks at no more than `budget` directories, so that a UI page cannot hold the
    /// summary's lock for a walk of millions; the flag says whether every one was seen.
    /// `None` when the path is not known to the summary.
    pub fn heaviest_dirs(
        &self,
        path: &str,
        top: usize,
        budget: usize,
    ) -> Option<(Vec<DirUsage>, bool)> {
        let start = match self.tree.find(path)? {
            Found::Dir(d) => d,
            Found::File(_) => return Some((Vec::new(), true)),
        };
        let base = path.trim_end_matches('/').to_string();
        let mut stack = vec![(start, base)];
        let mut seen = Vec::new();
        let mut looked = 0;
        while let Some((dir, at)) = stack.pop() {
            if looked == budget {
                return Some((rank(seen, top), false));
            }
            looked += 1;
            let mut below = 0u64;
            for (name, id) in dir.children.subdirs() {
                let sub = self.tree.dir(id);
                below = below.wrapping_add(sub.tot.bytes);
                stack.push((sub, format!("{at}/{name}")));
            }
            let own_bytes = dir.tot.bytes.wrapping_sub(below);
            if own_bytes > 0 {
                seen.push(DirUsage {
                    path: if at.is_empty() { "/".into() } else { at },
                    own_bytes,
                    own_files: dir.children.file_count() as u64,
                });
            }
            // Keep the list short while walking: only the top ever matter.
            if seen.len() >= top.max(1) * 4 {
                seen = rank(seen, top);
            }
        }
        Some((rank(seen, top), true))
    }

    /// The number of directories (for sizing and logs).
    pub fn dirs(&self) -> u64 {
        self.tree.root().tot.dirs
    }

    pub fn files(&self) -> u64 {
        self.tree.root().tot.files
    }
}

/// Fills the summary directory `id` from the namespace directory `slot`, bottom-up: its
/// totals are counted once its children's are, and its `updated` is its newest entry's.
fn build_dir(ns: &Namespace, slot: u32, tree: &mut Tree, id: DirId) {
    if let Body::Dir(children) = &ns.inode(slot).body {
        tree.dir_mut(id).children.reserve(children.len());
        for c in children.slots() {
            let child = ns.inode(c);
            let name = String::from_utf8_lossy(ns.name(c));
            let updated = match &child.body {
                Body::Dir(_) => {
                    let d = tree.add_dir(id, &name, child.perm, child.mtime);
                    build_dir(ns, c, tree, d);
                    tree.dir(d).updated
                }
                Body::File(f) => {
                    let file = File {
                        len: f.len(),
                        repl: child.replication,
                        open: f.uc().map(|_| f.blocks().iter().map(|b| b.len).collect()),
                    };
                    tree.add_file(id, &name, file);
                    child.mtime
                }
            };
            let dir = tree.dir_mut(id);
            dir.updated = dir.updated.max(updated);
        }
    }
    tree.recount(id);
}

/// Bucket bounds for display: (lower, upper-exclusive) bytes of each histogram bucket.
pub fn bucket_bounds() -> impl Iterator<Item = (u64, u64)> {
    (0..BUCKETS).map(|i| {
        let lo = if i == 0 {
            0
        } else {
            totals::bucket_limit(i - 1)
        };
        (lo, totals::bucket_limit(i))
    })
}
