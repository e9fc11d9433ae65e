//! A directory's entries: child slots sorted by name bytes (listings are slices of it),
//! each with a 32-bit hash of its name.
//!
//! The hash is for lookups. A path walk visits one directory per component, and comparing
//! names meant two dependent loads per comparison (the child's inode, then its name bytes),
//! each a likely cache miss in a namespace of millions: under NNThroughputBenchmark (eight
//! entries per directory, about ten levels deep) name comparisons were 29% of the NameNode's CPU
//! per open. In a small directory a lookup now scans the tags, which sit next to each other,
//! and reads one name, the match's; a large one is still searched by name, in order.
//!
//! A directory past [`FLAT_MAX`] entries keeps them in runs of at most [`RUN_MAX`], so that
//! adding or removing one moves a run's entries, not the whole directory's.

use std::hash::BuildHasher;

/// An inode's place in the namespace's arena (`inode.rs`): what a directory's entries hold.
pub type Slot = u32;

/// Up to this many entries a lookup scans the tags; above it, a binary search by name
/// (log2 of the size in name reads) costs less than the scan. A scan of 128 entries reads
/// 1 KiB in order, which the prefetcher streams; the binary search it replaces reads seven
/// names, each behind two likely cache misses (the child's inode, then its name). Raised
/// from 32: in process at 256 clients (directories of 64 and 256 entries on the path),
/// medians of eight alternating runs went from 1.21M to 1.35M opens/s and from 277k to
/// 305k creates/s; 256 gave about the same (1.40M, 292k).
const SCAN_MAX: usize = 128;

#[derive(Clone, Copy, Debug)]
struct Entry {
    slot: Slot,
    tag: u32,
}

/// Above this many entries a directory keeps them in runs of at most [`RUN_MAX`]: an
/// insert or removal in one sorted vector moves every entry after it, which at a million
/// entries is 4 MB of memmove for each file created in the directory, under the namespace
/// write lock (a probe filling one directory with a million names in scrambled order took
/// 93 s, the last quarter 180 µs a create). Below it the one vector is the cheaper layout:
/// a walk reads it with no extra indirection, and moving up to 64 KiB costs a few µs.
const FLAT_MAX: usize = 8192;

/// The longest run; a run that would grow past it is split in two. 8 KiB of entries, so an
/// insert moves at most that much.
const RUN_MAX: usize = 1024;

/// A directory's entries in name order.
#[derive(Default, Debug)]
pub struct Children(Repr);

#[derive(Debug)]
enum Repr {
    /// Up to [`FLAT_MAX`] entries (and back down to half of it).
    Flat(Vec<Entry>),
    /// Consecutive runs, none empty, each at most [`RUN_MAX`] long.
    Runs(Box<Runs>),
}

#[derive(Debug)]
struct Runs {
    runs: Vec<Vec<Entry>>,
    /// A copy of a name per run, in order: no name in run `i` sorts before `fences[i]`,
    /// and every name in run `i - 1` sorts before it (the first is empty). Finding a run
    /// searches these, one read each, where reading runs' first names cost three likely
    /// cache misses each (the run, the child's inode, its name). A fence is set when its
    /// run is made and stays valid as entries come and go: an entry that would sort
    /// before it goes to the run before.
    fences: Vec<Box<[u8]>>,
    len: usize,
}

/// The lookup hash of a name. Fixed seed: tags live only in memory, but a fixed function
/// keeps runs comparable.
pub(crate) fn tag(name: &[u8]) -> u32 {
    foldhash::fast::FixedState::with_seed(0x7a9).hash_one(name) as u32
}

/// Position of `name` among `entries` (sorted by name), by scanning tags when they are few.
fn position_in<'a>(
    entries: &[Entry],
    name: &[u8],
    name_of: impl Fn(Slot) -> &'a [u8],
) -> Option<usize> {
    if entries.len() <= SCAN_MAX {
        scan_tags(entries, name, name_of)
    } else {
        entries.binary_search_by(|e| name_of(e.slot).cmp(name)).ok()
    }
}

/// Position of `name` among `entries` by their tags, reading only the names whose tag
/// matches.
fn scan_tags<'a>(
    entries: &[Entry],
    name: &[u8],
    name_of: impl Fn(Slot) -> &'a [u8],
) -> Option<usize> {
    let t = tag(name);
    entries
        .iter()
        .position(|e| e.tag == t && name_of(e.slot) == name)
}

impl Runs {
    /// The run holding position `pos` (below `len`) and the position within it, for
    /// listings, which page by position. A scan of the run lengths: a thousand runs at a
    /// million entries, about a microsecond.
    fn locate(&self, mut pos: usize) -> (usize, usize) {
        for (i, r) in self.runs.iter().enumerate() {
            if pos < r.len() {
                return (i, pos);
            }
            pos -= r.len();
        }
        unreachable!("position past the last entry")
    }

    /// Entries (in order, more than [`FLAT_MAX`]) as runs of half the longest.
    fn from_flat<'a>(v: Vec<Entry>, name_of: impl Fn(Slot) -> &'a [u8]) -> Runs {
        let runs: Vec<Vec<Entry>> = v.chunks(RUN_MAX / 2).map(<[Entry]>::to_vec).collect();
        let fences = runs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                if i == 0 {
                    Box::default()
                } else {
                    name_of(r[0].slot).into()
                }
            })
            .collect();
        Runs {
            len: v.len(),
            runs,
            fences,
        }
    }

    /// The run whose name range would hold `name`: the last whose fence is not after it.
    fn run_for(&self, name: &[u8]) -> usize {
        self.fences.partition_point(|f| **f <= *name) - 1
    }

    fn insert_at<'a>(
        &mut self,
        run: usize,
        at: usize,
        e: Entry,
        name_of: impl Fn(Slot) -> &'a [u8],
    ) {
        self.runs[run].insert(at, e);
        self.len += 1;
        if self.runs[run].len() > RUN_MAX {
            let upper = self.runs[run].split_off(RUN_MAX / 2);
            self.fences.insert(run + 1, name_of(upper[0].slot).into());
            self.runs.insert(run + 1, upper);
        }
    }

    fn remove_at(&mut self, run: usize, at: usize) -> Entry {
        let e = self.runs[run].remove(at);
        self.len -= 1;
        // Keep runs from thinning out: an empty run goes, and a short one joins its
        // successor when both fit in half a run. A remaining run keeps its fence: it still
        // sorts after the run before and not after anything left in its own.
        if self.runs[run].is_empty() {
            self.runs.remove(run);
            self.fences.remove(run);
            // The first fence stays empty, so that any name finds a run.
            if run == 0 {
                self.fences[0] = Box::default();
            }
        } else if run + 1 < self.runs.len()
            && self.runs[run].len() + self.runs[run + 1].len() <= RUN_MAX / 2
        {
            let next = self.runs.remove(run + 1);
            self.fences.remove(run + 1);
            self.runs[run].extend(next);
        }
        e
    }

    fn flatten(self) -> Vec<Entry> {
        let mut v = Vec::with_capacity(self.len);
        for r in self.runs {
            v.extend(r);
        }
        v
    }
}

impl Children {
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Flat(v) => v.len(),
            Repr::Runs(r) => r.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn last(&self) -> Option<Slot> {
        match &self.0 {
            Repr::Flat(v) => v.last(),
            Repr::Runs(r) => r.runs.last().and_then(|run| run.last()),
        }
        .map(|e| e.slot)
    }

    /// The entries as runs in order (one for a flat directory).
    fn runs(&self) -> &[Vec<Entry>] {
        match &self.0 {
            Repr::Flat(v) => std::slice::from_ref(v),
            Repr::Runs(r) => &r.runs,
        }
    }

    /// Slots in name order.
    pub fn slots(&self) -> Slots<'_> {
        self.range(0..self.len())
    }

    /// Slots at positions `range`, in name order.
    pub fn range(&self, range: std::ops::Range<usize>) -> Slots<'_> {
        let runs = self.runs();
        let left = range.len();
        if left == 0 {
            return Slots::default();
        }
        let ((i, a), (j, b)) = match &self.0 {
            Repr::Flat(_) => ((0, range.start), (0, range.end)),
            // The end as the last position's run, so that it never names a run past the last.
            Repr::Runs(r) => {
                let (j, b) = r.locate(range.end - 1);
                (r.locate(range.start), (j, b + 1))
            }
        };
        if i == j {
            return Slots {
                head: runs[i][a..b].iter(),
                left,
                ..Slots::default()
            };
        }
        Slots {
            head: runs[i][a..].iter(),
            mid: runs[i + 1..j].iter(),
            tail: runs[j][..b].iter(),
            left,
        }
    }

    pub fn into_slots(self) -> impl Iterator<Item = Slot> {
        let runs = match self.0 {
            Repr::Flat(v) => vec![v],
            Repr::Runs(r) => r.runs,
        };
        runs.into_iter().flatten().map(|e| e.slot)
    }

    /// Position of the entry called `name`. `name_of` reads a child's name. Only tests
    /// need a global position for a name; the namespace finds and changes entries by
    /// their place in a run.
    #[cfg(test)]
    pub fn position<'a>(&self, name: &[u8], name_of: impl Fn(Slot) -> &'a [u8]) -> Option<usize> {
        match &self.0 {
            Repr::Flat(v) => position_in(v, name, name_of),
            Repr::Runs(r) => {
                let i = r.run_for(name);
                let before: usize = r.runs[..i].iter().map(Vec::len).sum();
                scan_tags(&r.runs[i], name, name_of).map(|p| before + p)
            }
        }
    }

    pub fn find<'a>(&self, name: &[u8], name_of: impl Fn(Slot) -> &'a [u8]) -> Option<Slot> {
        match &self.0 {
            Repr::Flat(v) => position_in(v, name, name_of).map(|i| v[i].slot),
            // Within a run the tags are scanned: 8 KiB read in order, against ten name reads
            // each behind two likely cache misses for a binary search.
            Repr::Runs(r) => {
                let run = &r.runs[r.run_for(name)];
                scan_tags(run, name, name_of).map(|i| run[i].slot)
            }
        }
    }

    /// How many entries come before every entry for which `pred` is false (entries must be
    /// partitioned by it, as name order partitions `name < key`).
    pub fn partition_point(&self, mut pred: impl FnMut(Slot) -> bool) -> usize {
        match &self.0 {
            Repr::Flat(v) => v.partition_point(|e| pred(e.slot)),
            Repr::Runs(r) => {
                // Runs whose first entry passes all come before the point, but the last of
                // them may hold it.
                let i = r.runs.partition_point(|run| pred(run[0].slot)).max(1) - 1;
                let before: usize = r.runs[..i].iter().map(Vec::len).sum();
                before + r.runs[i].partition_point(|e| pred(e.slot))
            }
        }
    }

    /// Where an entry called `name` would go to keep the name order (it must not be
    /// present). No global position is computed: in a directory of runs that would be a
    /// scan of every run's length.
    fn place_for<'a>(&self, name: &[u8], name_of: impl Fn(Slot) -> &'a [u8]) -> Place {
        let runs = self.runs();
        let last = runs.len() - 1;
        // Writers tend to add names in order (`part-00000`, `part-00001`, …), so the last
        // entry, usually just added and still in cache, is checked before a binary search
        // that would read log2(n) names, each behind two likely cache misses.
        match runs[last].last() {
            None => return Place { run: 0, at: 0 },
            Some(e) if name_of(e.slot) < name => {
                return Place {
                    run: last,
                    at: runs[last].len(),
                }
            }
            Some(_) => {}
        }
        let run = match &self.0 {
            Repr::Flat(_) => 0,
            Repr::Runs(r) => r.run_for(name),
        };
        Place {
            run,
            at: runs[run].partition_point(|e| name_of(e.slot) < name),
        }
    }

    /// Where the entry called `name` is.
    fn find_place<'a>(&self, name: &[u8], name_of: impl Fn(Slot) -> &'a [u8]) -> Option<Place> {
        match &self.0 {
            Repr::Flat(v) => position_in(v, name, name_of).map(|at| Place { run: 0, at }),
            Repr::Runs(r) => {
                let run = r.run_for(name);
                scan_tags(&r.runs[run], name, name_of).map(|at| Place { run, at })
            }
        }
    }

    /// Inserts `slot`, called `name`, in name order (no entry may have that name).
    /// `name_of` reads the other entries' names.
    pub fn insert<'a>(&mut self, slot: Slot, name: &[u8], name_of: impl Fn(Slot) -> &'a [u8]) {
        let place = self.place_for(name, &name_of);
        self.insert_at(place, slot, name, name_of);
    }

    /// Appends `slot`, called `name`, which sorts after every present entry.
    pub fn push<'a>(&mut self, slot: Slot, name: &[u8], name_of: impl Fn(Slot) -> &'a [u8]) {
        let runs = self.runs();
        let run = runs.len() - 1;
        let at = runs[run].len();
        self.insert_at(Place { run, at }, slot, name, name_of);
    }

    fn insert_at<'a>(
        &mut self,
        place: Place,
        slot: Slot,
        name: &[u8],
        name_of: impl Fn(Slot) -> &'a [u8],
    ) {
        let e = Entry {
            slot,
            tag: tag(name),
        };
        match &mut self.0 {
            Repr::Flat(v) if v.len() < FLAT_MAX => v.insert(place.at, e),
            Repr::Flat(v) => {
                let mut v = std::mem::take(v);
                v.insert(place.at, e);
                self.0 = Repr::Runs(Box::new(Runs::from_flat(v, name_of)));
            }
            Repr::Runs(r) => r.insert_at(place.run, place.at, e, name_of),
        }
    }

    /// Removes the entry called `name`, if there is one, and returns its slot.
    pub fn remove<'a>(&mut self, name: &[u8], name_of: impl Fn(Slot) -> &'a [u8]) -> Option<Slot> {
        let place = self.find_place(name, name_of)?;
        let e = match &mut self.0 {
            Repr::Flat(v) => v.remove(place.at),
            Repr::Runs(r) => {
                let e = r.remove_at(place.run, place.at);
                // Back to one vector at half the threshold, so that a directory hovering
                // around it does not switch at every create and delete.
                if r.len <= FLAT_MAX / 2 {
                    let Repr::Runs(r) = std::mem::take(&mut self.0) else {
                        unreachable!()
                    };
                    self.0 = Repr::Flat(r.flatten());
                }
                e
            }
        };
        Some(e.slot)
    }
}

/// An entry's place in a directory: its run and its position there (run 0 of a directory
/// kept in one vector). Valid until the directory next changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Place {
    run: usize,
    at: usize,
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Flat(Vec::new())
    }
}

/// Slots over a range of a directory's runs: what is left of the first run, the whole runs
/// between, and the part of the last run within the range.
#[derive(Default)]
pub struct Slots<'a> {
    head: std::slice::Iter<'a, Entry>,
    mid: std::slice::Iter<'a, Vec<Entry>>,
    tail: std::slice::Iter<'a, Entry>,
    left: usize,
}

impl Iterator for Slots<'_> {
    type Item = Slot;

    fn next(&mut self) -> Option<Slot> {
        loop {
            if let Some(e) = self.head.next() {
                self.left -= 1;
                return Some(e.slot);
            }
            match self.mid.next() {
                Some(run) => self.head = run.iter(),
                None => {
                    let e = self.tail.next()?;
                    self.left -= 1;
                    return Some(e.slot);
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl DoubleEndedIterator for Slots<'_> {
    fn next_back(&mut self) -> Option<Slot> {
        loop {
            if let Some(e) = self.tail.next_back() {
                self.left -= 1;
                return Some(e.slot);
            }
            match self.mid.next_back() {
                Some(run) => self.tail = run.iter(),
                None => {
                    let e = self.head.next_back()?;
                    self.left -= 1;
                    return Some(e.slot);
                }
            }
        }
    }
}

impl ExactSizeIterator for Slots<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Children named by the given names (slot i is names[i]), kept in name order.
    fn build(names: &[Vec<u8>]) -> Children {
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by(|&a, &b| names[a].cmp(&names[b]));
        let mut c = Children::default();
        for i in order {
            c.push(i as Slot, &names[i], |s| names[s as usize].as_slice());
        }
        c
    }

    #[test]
    fn lookups_agree_with_a_search_by_name_in_small_and_large_directories() {
        // The largest is built past FLAT_MAX by appends, as an image loads one.
        for n in [0, 1, 7, SCAN_MAX, SCAN_MAX + 1, 500, 3 * FLAT_MAX] {
            // Long shared prefixes, as NNThroughputBenchmark names its entries.
            let names: Vec<Vec<u8>> = (0..n)
                .map(|i| format!("ThroughputBench{}", i * 7).into_bytes())
                .collect();
            let c = build(&names);
            let name_of = |s: Slot| names[s as usize].as_slice();
            for (i, name) in names.iter().enumerate() {
                assert_eq!(c.find(name, name_of), Some(i as Slot), "n={n}");
            }
            for missing in [&b"ThroughputBench1"[..], b"", b"zzz", b"ThroughputBench"] {
                assert_eq!(c.find(missing, name_of), None, "n={n}");
            }
            if let Repr::Runs(r) = &c.0 {
                check_fences(r, name_of);
            }
        }
    }

    #[test]
    fn insert_and_remove_keep_tags_with_their_slots() {
        let names: Vec<Vec<u8>> = ["b", "d", "a", "c"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let name_of = |s: Slot| names[s as usize].as_slice();
        let mut c = Children::default();
        for (slot, name) in names.iter().enumerate() {
            c.insert(slot as Slot, name, name_of);
        }
        assert_eq!(c.slots().collect::<Vec<_>>(), [2, 0, 3, 1]);
        assert_eq!(c.position(b"b", name_of), Some(1));
        assert_eq!(c.remove(b"b", name_of), Some(0));
        assert_eq!(c.remove(b"b", name_of), None);
        assert_eq!(c.find(b"b", name_of), None);
        assert_eq!(c.find(b"c", name_of), Some(3));
        assert_eq!(c.range(1..3).collect::<Vec<_>>(), [3, 1]);
        assert_eq!(c.last(), Some(1));
    }
    /// Random inserts and removals against a sorted vector of names, growing the directory
    /// past [`FLAT_MAX`] into runs, splitting and merging runs, and shrinking it back: every
    /// query must agree with the model throughout.
    #[test]
    fn runs_agree_with_one_sorted_vector_as_a_directory_grows_and_shrinks() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        // Slot i is called names[i]; a slot is never reused, so names stay unique.
        let mut names: Vec<Vec<u8>> = Vec::new();
        let mut model: Vec<Slot> = Vec::new();
        let mut c = Children::default();
        let peak = FLAT_MAX + 3 * RUN_MAX;
        // Up to the peak mostly adding, then mostly removing until nearly empty.
        for phase_adds in [true, false] {
            loop {
                let n = model.len();
                if (phase_adds && n >= peak) || (!phase_adds && n <= 10) {
                    break;
                }
                let add = if phase_adds {
                    next() % 4 != 0
                } else {
                    next() % 4 == 0
                };
                if add || n == 0 {
                    let slot = names.len() as Slot;
                    // Appends in order half the time, as writers mostly add.
                    let name = if next() % 2 == 0 {
                        format!("z{:010}", slot)
                    } else {
                        format!("m{:010}", next() % 1_000_000_007)
                    };
                    names.push(name.into_bytes());
                    let name_of = |s: Slot| names[s as usize].as_slice();
                    let key = name_of(slot);
                    if model.iter().any(|&s| name_of(s) == key) {
                        continue;
                    }
                    let pos = c.partition_point(|s| name_of(s) < key);
                    assert_eq!(pos, model.partition_point(|&s| name_of(s) < key));
                    c.insert(slot, key, name_of);
                    model.insert(pos, slot);
                } else {
                    let victim = model[(next() % n as u64) as usize];
                    let name_of = |s: Slot| names[s as usize].as_slice();
                    let pos = c.position(name_of(victim), name_of).expect("present");
                    assert_eq!(model[pos], victim);
                    assert_eq!(c.remove(name_of(victim), name_of), Some(victim));
                    model.remove(pos);
                }
                if next() % 64 == 0 {
                    check_against_model(&c, &model, &names, &mut next);
                }
            }
            check_against_model(&c, &model, &names, &mut next);
        }
        assert!(matches!(c.0, Repr::Flat(_)), "shrunk back to one vector");
    }

    /// Every run's fence sorts after the run before and not after anything in its own.
    fn check_fences<'a>(r: &Runs, name_of: impl Fn(Slot) -> &'a [u8]) {
        assert_eq!(r.fences.len(), r.runs.len());
        assert!(r.fences[0].is_empty());
        for i in 1..r.runs.len() {
            let before = name_of(r.runs[i - 1].last().unwrap().slot);
            assert!(before < &*r.fences[i], "fence {i} not after the run before");
            assert!(r.runs[i].iter().all(|e| &*r.fences[i] <= name_of(e.slot)));
        }
    }

    fn check_against_model(
        c: &Children,
        model: &[Slot],
        names: &[Vec<u8>],
        next: &mut impl FnMut() -> u64,
    ) {
        let name_of = |s: Slot| names[s as usize].as_slice();
        assert_eq!(c.len(), model.len());
        assert_eq!(c.last(), model.last().copied());
        assert!(c.slots().eq(model.iter().copied()));
        assert!(c.slots().rev().eq(model.iter().rev().copied()));
        if let Repr::Runs(r) = &c.0 {
            assert!(r
                .runs
                .iter()
                .all(|run| !run.is_empty() && run.len() <= RUN_MAX));
            check_fences(r, name_of);
        }
        for _ in 0..8 {
            let a = (next() % (model.len() as u64 + 1)) as usize;
            let b = a + (next() % (model.len() - a + 1) as u64) as usize;
            let got = c.range(a..b);
            assert_eq!(got.len(), b - a);
            assert!(got.eq(model[a..b].iter().copied()), "range {a}..{b}");
            assert!(c.range(a..b).rev().eq(model[a..b].iter().rev().copied()));
            if a < model.len() {
                let s = model[a];
                assert_eq!(c.position(name_of(s), name_of), Some(a));
                assert_eq!(c.find(name_of(s), name_of), Some(s));
            }
        }
        for missing in [&b""[..], b"m", b"zz", b"n0"] {
            assert_eq!(c.find(missing, name_of), None);
        }
    }
}
