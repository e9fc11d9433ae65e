//! What snapshots keep under a directory beyond its live tree, as HDFS's content summary
//! counts it: inodes deleted while a snapshot listed them (with everything below them),
//! inodes renamed away (as the snapshot shows them, although the live tree counts them
//! again where they went: HDFS 3.4.1's figures), and blocks a live file no longer has but
//! a snapshot's version of it does (cut off by a truncate). HDFS adds both to a live path's summary, and reports the deleted inodes
//! again as its `snapshot*` figures, which `-count -x` and `-du -x` subtract.
//!
//! Only inodes that saved a version can keep anything, so this visits the versions under
//! the directory, never the whole subtree: its cost follows what changed since the
//! snapshots, as their memory does.

use std::collections::HashSet;

use crate::inode::{Body, Slot};
use crate::quota::{Usage, N_TYPES};
use crate::storage_policy::UNSPECIFIED;
use crate::Namespace;

/// Counts of kept inodes (or extra bytes), in HDFS's content summary terms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    pub length: u64,
    pub files: u64,
    pub dirs: u64,
    /// Bytes with replication.
    pub space: u64,
    /// The same space by storage type, as type quotas charge it (only under a policy).
    pub types: [i64; N_TYPES],
}

impl Kept {
    /// One file of `len` bytes at `replication`, under storage policy `policy`.
    pub fn add_file(&mut self, policy: u8, len: u64, replication: u16) {
        self.files += 1;
        self.length += len;
        self.space += len * u64::from(replication);
        add_types(&mut self.types, policy, len, replication);
    }
}

/// Adds a file of `len` bytes at `replication` under `policy` to space by storage type.
fn add_types(types: &mut [i64; N_TYPES], policy: u8, len: u64, replication: u16) {
    let u = Namespace::usage_for(policy, len, replication);
    for (t, b) in types.iter_mut().zip(u.types) {
        *t += b;
    }
}

/// What snapshots keep under one directory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SnapshotSpace {
    /// Deleted subtrees snapshots still list: HDFS's `snapshotLength`, `snapshotFileCount`,
    /// `snapshotDirectoryCount` and `snapshotSpaceConsumed`.
    pub deleted: Kept,
    /// Space of blocks live files lost but their snapshot versions keep (counted in the
    /// summary's space, not in the snapshot figures, as HDFS counts a file's diffs).
    pub cut_off_space: u64,
    /// That space by storage type.
    pub cut_off_types: [i64; N_TYPES],
}

impl Namespace {
    /// What snapshots keep under live directory (or file) `top`.
    pub fn snapshot_space(&self, top: Slot) -> SnapshotSpace {
        let mut out = SnapshotSpace::default();
        if self.snaps.versions.is_empty() {
            return out;
        }
        let mut seen = HashSet::new();
        for (&slot, versions) in &self.snaps.versions {
            if !self.is_live(slot) || !self.is_at_or_under(slot, top) {
                continue;
            }
            // The storage types kept space is charged to: those of the policy in force
            // here (a deleted inode's own, if it has one, below).
            let policy = self.storage_policy_of(slot);
            match &self.inode(slot).body {
                Body::File(f) => {
                    let repl = self.inode(slot).replication;
                    let cut = self.file_space(slot) - f.len() * u64::from(repl);
                    out.cut_off_space += cut;
                    if repl > 0 {
                        let bytes = cut / u64::from(repl);
                        add_types(&mut out.cut_off_types, policy, bytes, repl);
                    }
                }
                Body::Dir(_) => {
                    for v in versions {
                        for &gone in v.deleted() {
                            if self.is_live(gone) {
                                // Renamed away: counted as the snapshot shows it (as HDFS
                                // counts the reference its snapshots keep).
                                self.count_at(gone, v.tag, policy, &mut out.deleted);
                            } else if seen.insert(gone) {
                                self.count_deleted(gone, policy, &mut out.deleted, &mut seen);
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// What snapshots keep under quota directory `dir`, as its quotas count it (HDFS
    /// charges a deleted inode a snapshot keeps, and its blocks, until the snapshot goes):
    /// names and space. Remembered until a record that could change it.
    pub fn snapshot_usage(&self, dir: Slot) -> Usage {
        if self.snaps.versions.is_empty() {
            return Usage::default();
        }
        if let Some(u) = self.snaps.usage_cache.lock().get(&dir) {
            return *u;
        }
        let s = self.snapshot_space(dir);
        let mut types = s.deleted.types;
        for (t, c) in types.iter_mut().zip(s.cut_off_types) {
            *t += c;
        }
        let u = Usage {
            ns: (s.deleted.files + s.deleted.dirs) as i64,
            space: (s.deleted.space + s.cut_off_space) as i64,
            types,
        };
        self.snaps.usage_cache.lock().insert(dir, u);
        u
    }

    /// A deleted subtree a snapshot keeps, counted whole: what it held when deleted, and
    /// what its directories had lost before that while a snapshot listed it.
    fn count_deleted(&self, top: Slot, inherited: u8, kept: &mut Kept, seen: &mut HashSet<Slot>) {
        let mut stack = vec![(top, inherited)];
        while let Some((s, inherited)) = stack.pop() {
            let own = self
                .features
                .get(&s)
                .map_or(UNSPECIFIED, |f| f.storage_policy);
            let policy = if own != UNSPECIFIED { own } else { inherited };
            match &self.inode(s).body {
                Body::File(f) => {
                    let repl = self.inode(s).replication;
                    let space = self.file_space(s);
                    kept.files += 1;
                    kept.length += f.len();
                    kept.space += space;
                    if repl > 0 {
                        add_types(&mut kept.types, policy, space / u64::from(repl), repl);
                    }
                }
                Body::Dir(children) => {
                    kept.dirs += 1;
                    stack.extend(children.slots().map(|c| (c, policy)));
                    let lost = self.snaps.versions.get(&s).into_iter().flatten();
                    for &gone in lost.flat_map(|v| v.deleted()) {
                        if !self.is_live(gone) && seen.insert(gone) {
                            stack.push((gone, policy));
                        }
                    }
                }
            }
        }
    }

    /// The space of every distinct block file `slot` has or a version of it keeps (a
    /// block it still has counts at its current length), with the file's replication.
    fn file_space(&self, slot: Slot) -> u64 {
        let inode = self.inode(slot);
        let Some(f) = inode.file() else {
            return 0;
        };
        let mut bytes = f.len();
        let mut counted: HashSet<u64> = f.blocks().iter().map(|b| b.id).collect();
        for b in self.blocks_kept_for_snapshots(slot) {
            if counted.insert(b.id) {
                bytes += b.len;
            }
        }
        bytes * u64::from(inode.replication)
    }
}
