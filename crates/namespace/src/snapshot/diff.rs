//! What changed under a snapshottable directory between two of its snapshots (or one and
//! now): `getSnapshotDiffReport`, in HDFS's order and labels. Both states are read as the
//! snapshots show them (`view.rs`); an inode changed between them when it saved a
//! version in that span (it saves one at its first change after each snapshot that sees
//! it). Renames are told from a delete and a create by the inode they move.

use std::rc::Rc;

use crate::acl::AclEntry;
use crate::error::FsError;
use crate::fast::{FastMap, FastSet};
use crate::features::Features;
use crate::inode::Slot;
use crate::perm::Caller;
use crate::quota::N_TYPES;
use crate::snapshot::error::SnapshotError;
use crate::snapshot::{Frozen, SnapId, CURRENT};
use crate::storage_policy::UNSPECIFIED;
use crate::xattr::XAttr;
use crate::Namespace;

/// What a diff compares of an inode, as HDFS does: its `metadataEquals` (permission,
/// owner and group, ACL, xattrs and storage policy, a directory's quota limits, a file's
/// replication and block size) and a file's length. Not its times, its name or its
/// blocks: HDFS reports neither a touched time (so a snapshot's creation, which moves its
/// root's time, changes nothing) nor a file rewritten to the same length.
#[derive(PartialEq)]
struct Compared<'a> {
    perm: u16,
    owner: u32,
    group: u32,
    /// A file's length, block size and replication.
    file: Option<(u64, u64, u16)>,
    xattrs: &'a [XAttr],
    storage_policy: u8,
    /// A directory's quota limits (names, space, by type); not its usage.
    quota: Option<(i64, i64, [i64; N_TYPES])>,
    acl: &'a [AclEntry],
}

impl<'a> Compared<'a> {
    fn new(
        (perm, owner, group): (u16, u32, u32),
        file: Option<(u64, u64, u16)>,
        features: Option<&'a Features>,
        acl: &'a [AclEntry],
    ) -> Self {
        Compared {
            perm,
            owner,
            group,
            file,
            xattrs: features.map_or(&[], |f| &f.xattrs),
            storage_policy: features.map_or(UNSPECIFIED, |f| f.storage_policy),
            quota: features
                .and_then(|f| f.quota.as_deref())
                .map(|q| (q.ns, q.space, q.types)),
            acl,
        }
    }

    fn of_version(f: &'a Frozen) -> Self {
        let file = f
            .file
            .as_ref()
            .map(|k| (k.len, k.block_size, f.replication));
        Compared::new(
            (f.perm, f.owner, f.group),
            file,
            f.features.as_deref(),
            f.acl.as_deref().unwrap_or(&[]),
        )
    }
}

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
    /// The snapshot of root `slot` named `name` (empty: the current state; `.` is a name
    /// to HDFS's NameNode, which only its shell's `snapshotDiff` turns into the empty one).
    fn snapshot_id(&self, slot: Slot, name: &str) -> Result<SnapId, FsError> {
        if name.is_empty() {
            return Ok(CURRENT);
        }
        self.snaps.roots[&slot]
            .by_name(name)
            .map(|s| s.id)
            .ok_or_else(|| {
                SnapshotError::NoSuchSnapshotToDiff {
                    path: self.path_of(slot),
                    name: name.to_string(),
                }
                .into()
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
            if at == crate::inode::ROOT_SLOT {
                return Err(SnapshotError::NoSnapshotRoot {
                    path: path.to_string(),
                }
                .into());
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
            moved_from: FastMap::default(),
            moved_to: FastMap::default(),
            dirty: Rc::new(self.changed_since(x.min(y))),
        };
        w.dir(slot, Vec::new());
        w
    }

    /// Every inode that saved a version for snapshot `lo` or a later one, with every
    /// directory above it: the only places two states at or after `lo` can differ, so a
    /// diff walks nothing else (its cost follows the changes, not the tree). An inode's
    /// parent when a later snapshot was taken is its parent now, or a directory it left
    /// since, which then changed too and is in the set with its own ancestors (and lists
    /// the inode among those it lost).
    fn changed_since(&self, lo: SnapId) -> Dirty {
        let mut dirty = Dirty::default();
        for (&s, vs) in &self.snaps.versions {
            if vs.last().is_none_or(|v| v.tag < lo) {
                continue;
            }
            let mut at = s;
            while at != crate::inode::ROOT_SLOT && dirty.slots.insert(at) {
                let parent = self.inode(at).parent;
                dirty.children.entry(parent).or_default().push(at);
                at = parent;
            }
        }
        dirty.slots.insert(crate::inode::ROOT_SLOT);
        dirty
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
    moved_from: FastMap<Slot, usize>,
    moved_to: FastMap<Slot, usize>,
    /// What changed since the older state, with the directories above (see
    /// `changed_since`): any other entry is the same in both states.
    dirty: Rc<Dirty>,
}

/// What changed since the older state of a diff, with every directory above it, and those
/// by directory (see `Namespace::changed_since`).
#[derive(Default)]
struct Dirty {
    slots: FastSet<Slot>,
    children: FastMap<Slot, Vec<Slot>>,
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
    /// then each child present in both, in name order. Only the children that can differ
    /// are looked at: those that changed (or hold a change), and those the directory's
    /// versions since the older state record as made or removed.
    fn dir(&mut self, d: Slot, path: Vec<u8>) {
        let ns = self.ns;
        let (x, y) = (self.x, self.y);
        let dirty = Rc::clone(&self.dirty);
        let mut cands: Vec<Slot> = dirty.children.get(&d).cloned().unwrap_or_default();
        let lo = x.min(y);
        for v in ns.snaps.versions.get(&d).into_iter().flatten() {
            if v.tag >= lo {
                cands.extend(v.created());
                cands.extend(v.deleted());
            }
        }
        cands.sort_unstable();
        cands.dedup();
        let live = ns.live_members(d, &cands);
        let in_x = ns.members_at(d, live.clone(), x);
        let in_y = ns.members_at(d, live, y);
        let by_name_at = |s: SnapId, mut v: Vec<Slot>| {
            v.sort_by_cached_key(|&c| ns.name_at(c, s));
            v
        };
        // Present in both and holding a change: walked after this directory's own lines.
        let both: Vec<Slot> = cands
            .iter()
            .copied()
            .filter(|c| in_x.contains(c) && in_y.contains(c) && dirty.slots.contains(c))
            .collect();
        let both = by_name_at(y, both);
        if ns.changed_between(d, x, y) {
            self.own_lines(d, &path, &cands, (&in_x, &in_y), &both);
        }
        // Children come and go only through a change to the directory itself; below
        // them, only what is dirty can differ.
        for c in both {
            self.entry(c, d, child_path(&path, ns.name_at(c, y)));
        }
    }

    /// A changed directory's own lines, as HDFS writes them from the directory's diff
    /// (kept from the older state to the newer): its `M`, then what was made (by its newer
    /// name; `+` forward, `-` backward), then what went or was renamed in place (by its
    /// older name; `-` or `+`, and `R` from the `x` name to the `y` name). Nothing when
    /// only its name changed (a renamed directory is its parent's `R` line).
    fn own_lines(
        &mut self,
        d: Slot,
        path: &[u8],
        cands: &[Slot],
        (in_x, in_y): (&FastSet<Slot>, &FastSet<Slot>),
        both: &[Slot],
    ) {
        let ns = self.ns;
        let (x, y) = (self.x, self.y);
        let forward = x < y;
        let (older, newer) = if forward { (x, y) } else { (y, x) };
        let (in_older, in_newer) = if forward { (in_x, in_y) } else { (in_y, in_x) };
        let mut made: Vec<Slot> = cands
            .iter()
            .copied()
            .filter(|c| in_newer.contains(c) && !in_older.contains(c))
            .collect();
        made.sort_by_cached_key(|&c| ns.name_at(c, newer));
        let mut went: Vec<(&[u8], Slot, bool)> = cands
            .iter()
            .copied()
            .filter(|c| in_older.contains(c) && !in_newer.contains(c))
            .map(|c| (ns.name_at(c, older), c, false))
            .collect();
        went.extend(
            both.iter()
                .copied()
                .filter(|&c| ns.name_at(c, x) != ns.name_at(c, y))
                .map(|c| (ns.name_at(c, older), c, true)),
        );
        went.sort();
        if made.is_empty() && went.is_empty() && !ns.differs_beyond_name(d, x, y) {
            return;
        }
        self.push('M', path.to_vec(), None, d, d);
        for c in made {
            let at = child_path(path, ns.name_at(c, newer));
            self.push(if forward { '+' } else { '-' }, at, None, c, d);
        }
        for (name, c, renamed) in went {
            if renamed {
                let from = child_path(path, ns.name_at(c, x));
                let to = child_path(path, ns.name_at(c, y));
                self.push('R', from, Some(to), c, d);
            } else {
                let at = child_path(path, name);
                self.push(if forward { '-' } else { '+' }, at, None, c, d);
            }
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
            moved_from: FastMap::default(),
            moved_to: FastMap::default(),
            dirty: Rc::clone(&self.dirty),
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
        let moved: FastSet<Slot> = pairs.iter().map(|p| p.2).collect();
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
        sort_by_directory(&mut l.created);
        l
    }
}

/// HDFS lists what a directory made in name order (its diff's created list is kept
/// sorted), a rename's new name among the rest; the directories stay in walk order. A
/// directory's entries are one run here (its own lines are written together), so each
/// run is sorted on its own: same parent, so path order is name order.
fn sort_by_directory(entries: &mut [ListingEntry]) {
    for run in entries.chunk_by_mut(|a, b| a.dir_id == b.dir_id) {
        run.sort_unstable_by(|a, b| a.path.cmp(&b.path));
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
    /// Whether `slot` as snapshots `a` and `b` show it differs in what a diff reports (see
    /// [`Compared`]).
    fn differs_beyond_name(&self, slot: Slot, a: SnapId, b: SnapId) -> bool {
        match (self.version_at(slot, a), self.version_at(slot, b)) {
            (Some(p), Some(q)) => Compared::of_version(p) != Compared::of_version(q),
            (Some(p), None) | (None, Some(p)) => {
                Compared::of_version(p) != self.compared_live(slot)
            }
            (None, None) => false,
        }
    }

    /// What a diff compares of live `slot` (no copies).
    fn compared_live(&self, slot: Slot) -> Compared<'_> {
        let inode = self.inode(slot);
        let file = match &inode.body {
            crate::inode::Body::File(l) => Some((l.len(), l.block_size, inode.replication)),
            crate::inode::Body::Dir(_) => None,
        };
        Compared::new(
            (inode.perm, inode.owner, inode.group),
            file,
            self.features.get(&slot),
            self.acl_of(slot),
        )
    }

    fn is_dir_at_both(&self, slot: Slot, a: SnapId, b: SnapId) -> bool {
        self.is_dir_at(slot, a) && self.is_dir_at(slot, b)
    }
}
