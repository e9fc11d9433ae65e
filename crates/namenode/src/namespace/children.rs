//! A directory's entries: child slots sorted by name bytes (listings are slices of it),
//! each with a 32-bit hash of its name.
//!
//! The hash is for lookups. A path walk visits one directory per component, and comparing
//! names meant two dependent loads per comparison (the child's inode, then its name bytes),
//! each a likely cache miss in a namespace of millions: under NNThroughputBenchmark (eight
//! entries per directory, about ten levels deep) name comparisons were 29% of the NameNode's CPU
//! per open. In a small directory a lookup now scans the tags, which sit next to each other,
//! and reads one name, the match's; a large one is still searched by name, in order.

use std::hash::BuildHasher;

use super::inode::Slot;

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

#[derive(Default, Debug)]
pub struct Children(Vec<Entry>);

/// The lookup hash of a name. Fixed seed: tags live only in memory, but a fixed function
/// keeps runs comparable.
pub fn tag(name: &[u8]) -> u32 {
    foldhash::fast::FixedState::with_seed(0x7a9).hash_one(name) as u32
}

impl Children {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn last(&self) -> Option<Slot> {
        self.0.last().map(|e| e.slot)
    }

    /// Slots in name order.
    pub fn slots(&self) -> impl DoubleEndedIterator<Item = Slot> + ExactSizeIterator + '_ {
        self.0.iter().map(|e| e.slot)
    }

    /// Slots at positions `range`, in name order.
    pub fn range(&self, range: std::ops::Range<usize>) -> impl ExactSizeIterator<Item = Slot> + '_ {
        self.0[range].iter().map(|e| e.slot)
    }

    pub fn into_slots(self) -> impl Iterator<Item = Slot> {
        self.0.into_iter().map(|e| e.slot)
    }

    /// Position of the entry called `name`. `name_of` reads a child's name.
    pub fn position<'a>(&self, name: &[u8], name_of: impl Fn(Slot) -> &'a [u8]) -> Option<usize> {
        if self.0.len() <= SCAN_MAX {
            let t = tag(name);
            self.0
                .iter()
                .position(|e| e.tag == t && name_of(e.slot) == name)
        } else {
            self.0.binary_search_by(|e| name_of(e.slot).cmp(name)).ok()
        }
    }

    pub fn find<'a>(&self, name: &[u8], name_of: impl Fn(Slot) -> &'a [u8]) -> Option<Slot> {
        self.position(name, name_of).map(|i| self.0[i].slot)
    }

    /// How many entries come before every entry for which `pred` is false (entries must be
    /// partitioned by it, as name order partitions `name < key`).
    pub fn partition_point(&self, mut pred: impl FnMut(Slot) -> bool) -> usize {
        self.0.partition_point(|e| pred(e.slot))
    }

    /// Inserts `slot`, called `name`, at `pos` (which keeps the name order).
    pub fn insert(&mut self, pos: usize, slot: Slot, name: &[u8]) {
        self.0.insert(
            pos,
            Entry {
                slot,
                tag: tag(name),
            },
        );
    }

    /// Appends `slot`, called `name`, which sorts after every present entry.
    pub fn push(&mut self, slot: Slot, name: &[u8]) {
        self.0.push(Entry {
            slot,
            tag: tag(name),
        });
    }

    pub fn remove(&mut self, pos: usize) -> Slot {
        self.0.remove(pos).slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Children named by the given names (slot i is names[i]), kept in name order.
    fn build(names: &[Vec<u8>]) -> Children {
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by(|&a, &b| names[a].cmp(&names[b]));
        let mut c = Children::default();
        for i in order {
            c.push(i as Slot, &names[i]);
        }
        c
    }

    #[test]
    fn lookups_agree_with_a_search_by_name_in_small_and_large_directories() {
        for n in [0, 1, 7, SCAN_MAX, SCAN_MAX + 1, 500] {
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
            let pos = c.partition_point(|s| name_of(s) < name.as_slice());
            c.insert(pos, slot as Slot, name);
        }
        assert_eq!(c.slots().collect::<Vec<_>>(), [2, 0, 3, 1]);
        let pos = c.position(b"b", name_of).unwrap();
        assert_eq!(c.remove(pos), 0);
        assert_eq!(c.find(b"b", name_of), None);
        assert_eq!(c.find(b"c", name_of), Some(3));
        assert_eq!(c.range(1..3).collect::<Vec<_>>(), [3, 1]);
        assert_eq!(c.last(), Some(1));
    }
}
