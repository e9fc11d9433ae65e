//! What changed under a snapshottable directory between two of its snapshots (or one and
//! now): `getSnapshotDiffReport`, in HDFS's order and labels. Both states are read as the
//! snapshots show them (`snapshot_view`); an inode changed between them when it saved a
//! version in that span (it saves one at its first change after each snapshot that sees
//! it). Renames are told from a delete and a create by the inode they move.

use std::collections::HashMap;

use super::inode::Slot;
use super::perm::Caller;
use super::snapshot::SnapId;
use super::Namespace;
use crate::error::FsError;

/// The state a diff compares against when a snapshot name is empty or `.`.
pub const CURRENT: SnapId = SnapId::MAX;

/// One line of the report. Paths are relative to the snapshot root, components joined by
/// `/` (empty for the root itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffEntry {
    /// `M`, `+`, `-` or `R`.
    pub kind: char,
    pub path: Vec<u8>,
    /// Where a renamed entry went.
    pub target: Option<Vec<u8>>,
}

impl Namespace {
    /// The snapshot of root `slot` named `name` (empty or `.`: the current state).
    fn snapshot_id(&self, slot: Slot, name: &str) -> Result<SnapId, FsError> {
        if name.is_empty() || name == "." {
            return Ok(CURRENT);
        }
        self.snaps.roots[&slot]
            .by_name(name)
            .map(|s| s.id)
            .ok_or_else(|| {
                FsError::Snapshot(format!(
                    "Cannot find the snapshot of directory {} with name {name}",
                    self.path_of(slot)
                ))
            })
    }

    /// The snapshottable directory whose snapshots a diff of directory `slot` compares:
    /// the deepest at or above it (HDFS diffs a root's descendant too, as its
    /// `dfs.namenode.snapshotdiff.allow.snap-root-descendant` defaults).
    fn diff_root(&self, slot: Slot, path: &str) -> Result<Slot, FsError> {
        if !self.arena.get(slot).is_dir() {
            // HDFS checks read access to `path/.snapshot/NAME` first, which a file cannot
            // be traversed to.
            return Err(FsError::AccessDenied(format!(
                "{path} (is not a directory)"
            )));
        }
        let mut at = slot;
        let root = loop {
            if self.snaps.roots.contains_key(&at) {
                break at;
            }
            if at == super::inode::ROOT_SLOT {
                return Err(FsError::Snapshot(format!(
                    "The path {path} is neither snapshottable nor under a snapshot root!"
                )));
            }
            at = self.arena.get(at).parent;
        };
        Ok(root)
    }

    /// `getSnapshotDiffReport`: the changes under `src` (a snapshottable directory or a
    /// directory below one) from snapshot `from` to `to`, and the snapshottable directory's
    /// path (which HDFS's report names).
    pub fn snapshot_diff(
        &self,
        caller: &Caller,
        src: &str,
        from: &str,
        to: &str,
    ) -> Result<(String, Vec<DiffEntry>), FsError> {
        let (slot, path) = self.resolve_checked(caller, src)?;
        let root = self.diff_root(slot, &path)?;
        let x = self.snapshot_id(root, from)?;
        let y = self.snapshot_id(root, to)?;
        if x == y {
            return Ok((self.path_of(root), Vec::new()));
        }
        Ok((self.path_of(root), self.diff_walk(slot, x, y).finish()))
    }

    /// `getSnapshotDiffReportListing`, all in one page: the lists computed from the older
    /// state to the newer, as HDFS sends them, with which of the two the caller began at.
    pub fn snapshot_diff_listing(
        &self,
        caller: &Caller,
        src: &str,
        from: &str,
        to: &str,
    ) -> Result<(String, DiffListing), FsError> {
        let (slot, path) = self.resolve_checked(caller, src)?;
        let root = self.diff_root(slot, &path)?;
        let x = self.snapshot_id(root, from)?;
        let y = self.snapshot_id(root, to)?;
        let mut listing = if x == y {
            DiffListing::default()
        } else {
            self.diff_walk(slot, x.min(y), x.max(y)).listing()
        };
        listing.from_earlier = x <= y;
        Ok((self.path_of(root), listing))
    }

    /// Both states of directory `slot` (a root or below one) compared, from `x` to `y`.
    fn diff_walk(&self, slot: Slot, x: SnapId, y: SnapId) -> DiffWalk<'_> {
        let mut w = DiffWalk {
            ns: self,
            x,
            y,
            out: Vec::new(),
            moved_from: HashMap::new(),
            moved_to: HashMap::new(),
        };
        w.dir(slot, Vec::new());
        w
    }

    /// Whether `slot` changed between snapshots `a` and `b` (either order): it saved a
    /// version tagged in `[min, max)`.
    fn changed_between(&self, slot: Slot, a: SnapId, b: SnapId) -> bool {
        let (lo, hi) = (a.min(b), a.max(b));
        self.snaps
            .versions
            .get(&slot)
            .is_some_and(|vs| vs.iter().any(|v| v.tag >= lo && v.tag < hi))
    }
}

/// A report line with its inode and the directory it was found in (a directory's own line:
/// itself).
type Line = (DiffEntry, Slot, Slot);

struct DiffWalk<'a> {
    ns: &'a Namespace,
    x: SnapId,
    y: SnapId,
    out: Vec<Line>,
    /// Entries gone from one place and made at another (a rename across directories):
    /// slot → index of its `-` / `+` line.
    moved_from: HashMap<Slot, usize>,
    moved_to: HashMap<Slot, usize>,
}

fn child_path(dir: &[u8], name: &[u8]) -> Vec<u8> {
    if dir.is_empty() {
        name.to_vec()
    } else {
        [dir, b"/", name].concat()
    }
}

impl DiffWalk<'_> {
    /// One line about inode `slot`, found in directory `dir` (a directory's own line: itself).
    fn push(&mut self, kind: char, path: Vec<u8>, target: Option<Vec<u8>>, slot: Slot, dir: Slot) {
        let i = self.out.len();
        match kind {
            '-' => {
                self.moved_from.insert(slot, i);
            }
            '+' => {
                self.moved_to.insert(slot, i);
            }
            _ => {}
        }
        self.out.push((DiffEntry { kind, path, target }, slot, dir));
    }

    /// Directory `d` (at `path`) in both states: its own line and its children's changes,
    /// then each child present in both, in name order.
    fn dir(&mut self, d: Slot, path: Vec<u8>) {
        let ns = self.ns;
        let (x, y) = (self.x, self.y);
        let ys = ns.children_at(d, y);
        if !ns.changed_between(d, x, y) {
            // Children come and go only through a change to the directory itself: the
            // same entries in both states, under the same names; only what is below moves.
            for c in ys {
                self.entry(c, d, child_path(&path, ns.name_at(c, y)));
            }
            return;
        }
        let xs = ns.children_at(d, x);
        let in_x: std::collections::HashSet<Slot> = xs.iter().copied().collect();
        let in_y: std::collections::HashSet<Slot> = ys.iter().copied().collect();
        // HDFS keeps a directory's changes as made and removed in time order, and lists
        // what was made first: forward that reads `+` then `-`, backward `-` then `+`.
        let forward = x < y;
        let appeared: Vec<Slot> = ys.iter().copied().filter(|c| !in_x.contains(c)).collect();
        // Gone, or renamed in place (HDFS lists renames with what went), by old name.
        let mut gone: Vec<(&[u8], Slot, bool)> = xs
            .iter()
            .copied()
            .filter(|c| !in_y.contains(c))
            .map(|c| (ns.name_at(c, x), c, false))
            .collect();
        gone.extend(
            ys.iter()
                .copied()
                .filter(|c| in_x.contains(c) && ns.name_at(*c, x) != ns.name_at(*c, y))
                .map(|c| (ns.name_at(c, x), c, true)),
        );
        gone.sort();
        {
            self.push('M', path.clone(), None, d, d);
            if forward {
                self.appeared(d, &path, &appeared);
            }
            for (name, c, renamed) in gone {
                let from = child_path(&path, name);
                if renamed {
                    let to = child_path(&path, ns.name_at(c, y));
                    self.push('R', from, Some(to), c, d);
                } else {
                    self.push('-', from, None, c, d);
                }
            }
            if !forward {
                self.appeared(d, &path, &appeared);
            }
        }
        for c in ys.iter().copied().filter(|c| in_x.contains(c)) {
            self.entry(c, d, child_path(&path, ns.name_at(c, y)));
        }
    }

    fn appeared(&mut self, d: Slot, path: &[u8], appeared: &[Slot]) {
        for &c in appeared {
            let name = self.ns.name_at(c, self.y);
            self.push('+', child_path(path, name), None, c, d);
        }
    }

    /// A child present in both states: a directory is walked; a file that changed between
    /// them is a `M` line.
    fn entry(&mut self, c: Slot, d: Slot, at: Vec<u8>) {
        let ns = self.ns;
        if ns.is_dir_at_both(c, self.x, self.y) {
            self.dir(c, at);
        } else if ns.changed_between(c, self.x, self.y) && ns.differs_beyond_name(c, self.x, self.y)
        {
            // A rename alone is its `R` line, not a modification (as HDFS reports it).
            self.push('M', at, None, c, d);
        }
    }

    /// The renames across directories: each `-` whose inode has a `+` elsewhere, with
    /// both lines' indexes.
    fn moves(&self) -> Vec<(usize, usize, Slot)> {
        let mut pairs: Vec<(usize, usize, Slot)> = self
            .moved_from
            .iter()
            .filter_map(|(s, &i)| self.moved_to.get(s).map(|&j| (i, j, *s)))
            .collect();
        pairs.sort_unstable();
        pairs
    }

    /// What changed inside a moved entry, compared at its new place.
    fn inside(&self, s: Slot, dir: Slot, target: &[u8]) -> Vec<Line> {
        let mut inner = DiffWalk {
            ns: self.ns,
            x: self.x,
            y: self.y,
            out: Vec::new(),
            moved_from: HashMap::new(),
            moved_to: HashMap::new(),
        };
        inner.entry(s, dir, target.to_vec());
        inner.out
    }

    /// The report's lines: each `-` paired with a `+` of the same inode (a rename across
    /// directories) becomes one `R` line where the `-` was, the `+` dropped, and the moved
    /// entry's own changes follow it.
    fn finish(mut self) -> Vec<DiffEntry> {
        let pairs = self.moves();
        let mut drop = vec![false; self.out.len()];
        let mut extra: Vec<(usize, Vec<Line>)> = Vec::new();
        for (i, j, s) in pairs {
            let (target, to_dir) = (self.out[j].0.path.clone(), self.out[j].2);
            let e = &mut self.out[i].0;
            e.kind = 'R';
            e.target = Some(target.clone());
            drop[j] = true;
            extra.push((i, self.inside(s, to_dir, &target)));
        }
        let mut out: Vec<DiffEntry> = Vec::new();
        let entries = std::mem::take(&mut self.out);
        for (k, (e, _, _)) in entries.into_iter().enumerate() {
            if drop[k] {
                continue;
            }
            out.push(e);
            for (_, inner) in extra.iter().filter(|(i, _)| *i == k) {
                out.extend(inner.iter().map(|(e, _, _)| e.clone()));
            }
        }
        out
    }

    /// The paged form's three lists (one page): what HDFS's `getSnapshotDiffReportListing`
    /// sends, from which Hadoop's client builds the report itself.
    fn listing(mut self) -> DiffListing {
        let ns = self.ns;
        let id = |s: Slot| ns.inode(s).id;
        let mut l = DiffListing::default();
        let pairs = self.moves();
        let mut inner = Vec::new();
        for &(i, j, s) in &pairs {
            let target = self.out[j].0.path.clone();
            self.out[i].0.target = Some(target.clone());
            inner.extend(self.inside(s, self.out[j].2, &target));
        }
        let moved: std::collections::HashSet<Slot> = pairs.iter().map(|p| p.2).collect();
        for (e, slot, dir) in std::mem::take(&mut self.out).into_iter().chain(inner) {
            let entry = |path: Vec<u8>, reference: bool, target: Option<Vec<u8>>| ListingEntry {
                path,
                dir_id: id(dir),
                file_id: id(slot),
                reference,
                target,
            };
            match e.kind {
                // A directory's own line says its children's changes follow.
                'M' => l.modified.push(entry(e.path, slot == dir, None)),
                '+' => l.created.push(entry(e.path, moved.contains(&slot), None)),
                '-' => {
                    let reference = moved.contains(&slot);
                    l.deleted.push(entry(e.path, reference, e.target))
                }
                _ => {
                    // A rename within a directory: gone under the old name, made under
                    // the new, both naming the same inode.
                    let to = e.target.clone().unwrap_or_default();
                    l.created.push(entry(to, true, None));
                    l.deleted.push(entry(e.path, true, e.target));
                }
            }
        }
        l
    }
}

/// One entry of the paged diff: its path, the directory it is listed under, its inode, and
/// (a rename's two halves) that another entry names the same inode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListingEntry {
    pub path: Vec<u8>,
    pub dir_id: u64,
    pub file_id: u64,
    pub reference: bool,
    pub target: Option<Vec<u8>>,
}

/// The paged diff's lists, in time order (what was made, what went); `from_earlier` says
/// whether the caller asked from the older snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiffListing {
    pub modified: Vec<ListingEntry>,
    pub created: Vec<ListingEntry>,
    pub deleted: Vec<ListingEntry>,
    pub from_earlier: bool,
}

impl Namespace {
    /// Whether `slot` as snapshots `a` and `b` show it differs in anything but its name.
    fn differs_beyond_name(&self, slot: Slot, a: SnapId, b: SnapId) -> bool {
        let at = |s: SnapId| match self.version_at(slot, s) {
            Some(f) => {
                let mut f = f.clone();
                f.name = Box::default();
                f
            }
            None => {
                let mut f = self.freeze(slot);
                f.name = Box::default();
                f
            }
        };
        at(a) != at(b)
    }

    fn is_dir_at_both(&self, slot: Slot, a: SnapId, b: SnapId) -> bool {
        self.is_dir_at(slot, a) && self.is_dir_at(slot, b)
    }
}
