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
    fn snapshot_id(&self, slot: Slot, path: &str, name: &str) -> Result<SnapId, FsError> {
        if name.is_empty() || name == "." {
            return Ok(CURRENT);
        }
        self.snaps.roots[&slot]
            .by_name(name)
            .map(|s| s.id)
            .ok_or_else(|| {
                FsError::Snapshot(format!(
                    "Cannot find the snapshot of directory {path} with name {name}"
                ))
            })
    }

    /// `getSnapshotDiffReport`: the changes under snapshottable `src` from snapshot `from`
    /// to `to`, and the root's path.
    pub fn snapshot_diff(
        &self,
        caller: &Caller,
        src: &str,
        from: &str,
        to: &str,
    ) -> Result<(String, Vec<DiffEntry>), FsError> {
        let (slot, path) = self.resolve_checked(caller, src)?;
        if !self.snaps.roots.contains_key(&slot) {
            return Err(FsError::Snapshot(format!(
                "Directory is not a snapshottable directory: {path}"
            )));
        }
        let x = self.snapshot_id(slot, &path, from)?;
        let y = self.snapshot_id(slot, &path, to)?;
        if x == y {
            return Ok((path, Vec::new()));
        }
        let mut w = DiffWalk {
            ns: self,
            x,
            y,
            out: Vec::new(),
            moved_from: HashMap::new(),
            moved_to: HashMap::new(),
        };
        w.dir(slot, Vec::new());
        Ok((path, w.finish()))
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

struct DiffWalk<'a> {
    ns: &'a Namespace,
    x: SnapId,
    y: SnapId,
    out: Vec<(DiffEntry, Option<Slot>)>,
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
    fn push(&mut self, kind: char, path: Vec<u8>, target: Option<Vec<u8>>, slot: Option<Slot>) {
        let i = self.out.len();
        match (kind, slot) {
            ('-', Some(s)) => {
                self.moved_from.insert(s, i);
            }
            ('+', Some(s)) => {
                self.moved_to.insert(s, i);
            }
            _ => {}
        }
        self.out.push((DiffEntry { kind, path, target }, slot));
    }

    /// Directory `d` (at `path`) in both states: its own line and its children's changes,
    /// then each child present in both, in name order.
    fn dir(&mut self, d: Slot, path: Vec<u8>) {
        let ns = self.ns;
        let (x, y) = (self.x, self.y);
        let xs = ns.children_at(d, x);
        let ys = ns.children_at(d, y);
        // HDFS keeps a directory's changes as made and removed in time order, and lists
        // what was made first: forward that reads `+` then `-`, backward `-` then `+`.
        let forward = x < y;
        let appeared: Vec<Slot> = ys.iter().copied().filter(|c| !xs.contains(c)).collect();
        // Gone, or renamed in place (HDFS lists renames with what went), by old name.
        let mut gone: Vec<(&[u8], Slot, bool)> = xs
            .iter()
            .copied()
            .filter(|c| !ys.contains(c))
            .map(|c| (ns.name_at(c, x), c, false))
            .collect();
        gone.extend(
            ys.iter()
                .copied()
                .filter(|c| xs.contains(c) && ns.name_at(*c, x) != ns.name_at(*c, y))
                .map(|c| (ns.name_at(c, x), c, true)),
        );
        gone.sort();
        if ns.changed_between(d, x, y) || !appeared.is_empty() || !gone.is_empty() {
            self.push('M', path.clone(), None, None);
            if forward {
                self.appeared(&path, &appeared);
            }
            for (name, c, renamed) in gone {
                let from = child_path(&path, name);
                if renamed {
                    let to = child_path(&path, ns.name_at(c, y));
                    self.push('R', from, Some(to), None);
                } else {
                    self.push('-', from, None, Some(c));
                }
            }
            if !forward {
                self.appeared(&path, &appeared);
            }
        }
        for c in ys.iter().copied().filter(|c| xs.contains(c)) {
            self.entry(c, child_path(&path, ns.name_at(c, y)));
        }
    }

    fn appeared(&mut self, path: &[u8], appeared: &[Slot]) {
        for &c in appeared {
            let name = self.ns.name_at(c, self.y);
            self.push('+', child_path(path, name), None, Some(c));
        }
    }

    /// A child present in both states: a directory is walked; a file that changed between
    /// them is a `M` line.
    fn entry(&mut self, c: Slot, at: Vec<u8>) {
        let ns = self.ns;
        if ns.is_dir_at_both(c, self.x, self.y) {
            self.dir(c, at);
        } else if ns.changed_between(c, self.x, self.y) {
            self.push('M', at, None, None);
        }
    }

    /// Pairs each `-` with the `+` of the same inode (a rename across directories): one `R`
    /// line where the `-` was, the `+` dropped, and the moved entry compared as any other.
    fn finish(mut self) -> Vec<DiffEntry> {
        let pairs: Vec<(usize, usize, Slot)> = self
            .moved_from
            .iter()
            .filter_map(|(s, &i)| self.moved_to.get(s).map(|&j| (i, j, *s)))
            .collect();
        let mut drop = vec![false; self.out.len()];
        let mut extra: Vec<(usize, Slot, Vec<u8>)> = Vec::new();
        for (i, j, s) in pairs {
            let target = self.out[j].0.path.clone();
            let e = &mut self.out[i].0;
            e.kind = 'R';
            e.target = Some(target.clone());
            drop[j] = true;
            extra.push((i, s, target));
        }
        let mut out: Vec<DiffEntry> = Vec::new();
        let entries = std::mem::take(&mut self.out);
        for (k, (e, _)) in entries.into_iter().enumerate() {
            if drop[k] {
                continue;
            }
            out.push(e);
            // What changed inside a moved entry follows its R line.
            for (_, s, target) in extra.iter().filter(|(i, _, _)| *i == k) {
                let mut inner = DiffWalk {
                    ns: self.ns,
                    x: self.x,
                    y: self.y,
                    out: Vec::new(),
                    moved_from: HashMap::new(),
                    moved_to: HashMap::new(),
                };
                inner.entry(*s, target.clone());
                out.extend(inner.out.into_iter().map(|(e, _)| e));
            }
        }
        out
    }
}

impl Namespace {
    fn is_dir_at_both(&self, slot: Slot, a: SnapId, b: SnapId) -> bool {
        self.is_dir_at(slot, a) && self.is_dir_at(slot, b)
    }
}
