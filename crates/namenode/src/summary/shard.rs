//! The summary split over disjoint parts of the tree, for applying large batches on several
//! cores (HDDS-15335's second change: sub-tasks on disjoint data, no shared writes).
//!
//! Shard `i` owns the top-level entries whose name hashes to `i`, with everything below
//! them; each shard is a [`Tree`] whose root holds only its share. An event touches one
//! shard, except a rename between shards (moved as a whole subtree, between parallel runs)
//! and a change to the root itself (applied to every shard). The root's figures are the
//! shards' roots added up.

use std::hash::BuildHasher;

use super::totals::Totals;
use super::tree::{names, op_time, Mismatch, Tree};
use crate::namespace::Op;

pub struct Sharded {
    shards: Vec<Tree>,
}

enum Route {
    One(usize),
    Across(usize, usize),
    /// A concat whose sources sit in other shards than its target (files at the top):
    /// they move to the target's shard first.
    Gather(usize),
    All,
}

fn shard_of(name: &str, n: usize) -> usize {
    // Fixed seed: the split must be the same for every event of a run.
    (foldhash::fast::FixedState::with_seed(0x5eed).hash_one(name) % n as u64) as usize
}

impl Sharded {
    /// Splits `tree` into `n` shards by top-level name.
    pub fn split(mut tree: Tree, n: usize) -> Sharded {
        let n = n.max(1);
        let (perm, updated, clock) = (tree.root().perm, tree.root().updated, tree.clock);
        let mut shards: Vec<Tree> = (0..n)
            .map(|_| {
                let mut t = Tree::new(perm, updated);
                t.clock = clock;
                t
            })
            .collect();
        let top: Vec<String> = tree
            .root()
            .children
            .iter()
            .map(|(n, _)| n.to_string())
            .collect();
        for name in top {
            let path = format!("/{name}");
            let entry = tree.take(&path, updated).expect("a listed entry");
            shards[shard_of(&name, n)]
                .put(&path, entry, updated)
                .expect("the shard's root takes it");
        }
        Sharded { shards }
    }

    fn route(&self, op: &Op) -> Route {
        let n = self.shards.len();
        let first = |p: &str| names(p).next().map(|c| shard_of(c, n));
        match op {
            Op::Rename { src, dst, .. } => match (first(src), first(dst)) {
                (Some(a), Some(b)) if a != b => Route::Across(a, b),
                (Some(a), _) => Route::One(a),
                _ => Route::All,
            },
            Op::Mkdir { path, .. }
            | Op::Create { path, .. }
            | Op::AddBlock { path, .. }
            | Op::BumpGenerationStamp { path, .. }
            | Op::AbandonBlock { path, .. }
            | Op::Close { path, .. }
            | Op::Delete { path, .. }
            | Op::SetPermission { path, .. }
            | Op::SetOwner { path, .. }
            | Op::SetXAttr { path, .. }
            | Op::RemoveXAttr { path, .. }
            | Op::SetStoragePolicy { path, .. }
            | Op::SetAcl { path, .. }
            | Op::SetQuota { path, .. }
            | Op::SetTypeQuota { path, .. }
            | Op::SetTimes { path, .. }
            | Op::SetReplication { path, .. }
            | Op::UpdateLastBlock { path, .. }
            | Op::Append { path, .. }
            | Op::Truncate { path, .. }
            | Op::CopyOnTruncate { path, .. } => first(path).map_or(Route::All, Route::One),
            Op::Concat { target, srcs, .. } => match first(target) {
                Some(t) if srcs.iter().all(|s| first(s) == Some(t)) => Route::One(t),
                Some(t) => Route::Gather(t),
                None => Route::All,
            },
            // Changes nothing a summary counts.
            Op::SetGenerationStamp { .. } | Op::RetryId { .. } => Route::All,
            Op::ReassignLease { path, .. } => first(path).map_or(Route::All, Route::One),
            // Cache pools and directives are no part of the tree the summary counts.
            Op::SetCachePool { .. }
            | Op::RemoveCachePool { .. }
            | Op::SetCacheDirective { .. }
            | Op::RemoveCacheDirective { .. } => Route::All,
            // Snapshots keep what the live tree lost; the summary counts the live tree.
            Op::AllowSnapshot { .. }
            | Op::DisallowSnapshot { .. }
            | Op::CreateSnapshot { .. }
            | Op::DeleteSnapshot { .. }
            | Op::RenameSnapshot { .. } => Route::All,
        }
    }

    /// Applies `ops` in order: runs of single-shard events in parallel, one thread per
    /// shard, and the events that span shards between those runs.
    pub fn apply_all(&mut self, ops: &[Op]) -> Result<(), Mismatch> {
        let n = self.shards.len();
        let mut groups: Vec<Vec<&Op>> = vec![Vec::new(); n];
        for op in ops {
            match self.route(op) {
                Route::One(i) => groups[i].push(op),
                route => {
                    self.run_parallel(&mut groups)?;
                    self.apply_spanning(op, route)?;
                }
            }
        }
        self.run_parallel(&mut groups)
    }

    fn run_parallel(&mut self, groups: &mut [Vec<&Op>]) -> Result<(), Mismatch> {
        if groups.iter().all(Vec::is_empty) {
            return Ok(());
        }
        let results: Vec<Result<(), Mismatch>> = std::thread::scope(|s| {
            let handles: Vec<_> = self
                .shards
                .iter_mut()
                .zip(groups.iter())
                .map(|(tree, ops)| s.spawn(move || ops.iter().try_for_each(|op| tree.apply(op))))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(Err(Mismatch::ShardPanicked)))
                .collect()
        });
        for g in groups.iter_mut() {
            g.clear();
        }
        results.into_iter().collect()
    }

    fn apply_spanning(&mut self, op: &Op, route: Route) -> Result<(), Mismatch> {
        match (route, op) {
            (
                Route::Across(a, b),
                Op::Rename {
                    src,
                    dst,
                    overwrite,
                    mtime,
                },
            ) => {
                self.shards[b].accepts(dst, *overwrite)?;
                let entry = self.shards[a].take(src, *mtime)?;
                self.shards[b].put(dst, entry, *mtime)
            }
            (Route::Gather(t), Op::Concat { srcs, mtime, .. }) => {
                // Concat's sources share the target's directory: one at the top lives in
                // every shard's root, so it can move to the target's shard as it is.
                let n = self.shards.len();
                for src in srcs {
                    let i = names(src).next().map_or(t, |c| shard_of(c, n));
                    if i != t {
                        let entry = self.shards[i].take(src, *mtime)?;
                        self.shards[t].put(src, entry, *mtime)?;
                    }
                }
                self.shards[t].apply(op)
            }
            _ => self.shards.iter_mut().try_for_each(|t| t.apply(op)),
        }
        .map(|()| {
            if let Some(t) = op_time(op) {
                for s in &mut self.shards {
                    s.clock = s.clock.max(t);
                }
            }
        })
    }

    /// The totals of `path`: the shards' roots added up for `/`.
    pub fn totals(&self, path: &str) -> Option<Totals> {
        let Some(first) = names(path).next() else {
            let mut t = Totals::of_dir(self.shards[0].root().perm);
            for s in &self.shards {
                t.add(&s.root().tot);
                t.sub(&Totals::of_dir(s.root().perm));
            }
            return Some(t);
        };
        let shard = &self.shards[shard_of(first, self.shards.len())];
        match shard.find(path)? {
            super::tree::Found::Dir(d) => Some(d.tot.clone()),
            super::tree::Found::File(f) => Some(Totals::of_file(f.len, f.repl)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkdir(path: &str) -> Op {
        crate::namespace::ops::mkdir_record(path, 0, 1)
    }

    #[test]
    fn a_refused_rename_between_shards_leaves_the_source_in_place() {
        let sharded = |ops: &[Op]| {
            let mut s = Sharded::split(Tree::new(0o755, 0), 2);
            s.apply_all(ops).unwrap();
            s
        };
        // Two top-level names in different shards.
        let names: Vec<String> = (0..64).map(|i| format!("t{i}")).collect();
        let a = &names[0];
        let b = names
            .iter()
            .find(|n| shard_of(n, 2) != shard_of(a, 2))
            .expect("64 names fall in both of two shards");
        let mut s = sharded(&[mkdir(&format!("/{a}")), mkdir(&format!("/{a}/d"))]);
        let before = s.totals(&format!("/{a}")).unwrap();

        // The destination's directory does not exist.
        let rename = Op::Rename {
            src: format!("/{a}/d"),
            dst: format!("/{b}/missing/d"),
            overwrite: false,
            mtime: 2,
        };
        assert!(matches!(s.route(&rename), Route::Across(..)));
        let e = s.apply_all(&[rename]).unwrap_err();
        assert_eq!(
            e,
            Mismatch::Missing(b.to_string()),
            "the destination shard lacks /{b}"
        );
        assert_eq!(s.totals(&format!("/{a}")).unwrap(), before);
        assert!(s.totals(&format!("/{a}/d")).is_some(), "the source stays");

        // The destination exists and overwrite is not asked for.
        s.apply_all(&[mkdir(&format!("/{b}")), mkdir(&format!("/{b}/d"))])
            .unwrap();
        let rename = Op::Rename {
            src: format!("/{a}/d"),
            dst: format!("/{b}/d"),
            overwrite: false,
            mtime: 3,
        };
        let e = s.apply_all(&[rename]).unwrap_err();
        assert_eq!(e, Mismatch::DestinationExists(format!("/{b}/d")));
        assert!(s.totals(&format!("/{a}/d")).is_some(), "the source stays");
    }
}
