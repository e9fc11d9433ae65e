//! A map keyed by block id, split over [`PARTS`] hash maps so that no insert re-hashes
//! more than a small part of it.
//!
//! A hash map grows by doubling: the insert that crosses its load limit moves every entry
//! to a new table, all at once. For the block maps that insert runs under the namespace's
//! write lock (the block → file index) or the block manager's lock (replicas), so every call
//! that needs either waits for it: on this machine a `HashMap<u64, (u32, u32)>` took 77 ms
//! for the insert that moved it past 3.7 M entries and 147 ms past 7.3 M. HDFS sizes its
//! blocks map once, from the heap, to avoid the same pause. Split in 64 by id, each part
//! doubles on its own, at about the same total count but on 64 different inserts, each
//! moving a 64th of the entries: the same total work, a 64th of the longest wait. Ten
//! million consecutive ids (a release-build probe): the slowest insert 3.3–3.9 ms against
//! 147 ms, all of them 2.8–3.0 s against 2.7 s.

use std::collections::hash_map::{self, HashMap};

/// A fixed seed per part, not a random one: the replication monitor walks the blocks in
/// the map's order, and the simulator needs that order the same on every run of a seed.
/// The ids are the NameNode's own, handed out in sequence, so nobody can pick keys that
/// collide.
type Fold = foldhash::fast::FixedState;

/// How many maps the ids are spread over.
pub const PARTS: usize = 64;

pub struct IdMap<V> {
    parts: Box<[HashMap<u64, V, Fold>]>,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap {
            parts: (0..PARTS)
                .map(|i| HashMap::with_hasher(Fold::with_seed(i as u64)))
                .collect(),
        }
    }
}

/// Which part holds `id`. Block ids are handed out in sequence, so the part is taken from
/// the top bits of a multiplicative hash, which spreads consecutive ids evenly; each part's
/// map hashes its keys again with its own seed.
fn part_of(id: u64) -> usize {
    (id.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - PARTS.trailing_zeros())) as usize
}

impl<V> IdMap<V> {
    pub fn get(&self, id: &u64) -> Option<&V> {
        self.parts[part_of(*id)].get(id)
    }

    pub fn get_mut(&mut self, id: &u64) -> Option<&mut V> {
        self.parts[part_of(*id)].get_mut(id)
    }

    pub fn insert(&mut self, id: u64, v: V) -> Option<V> {
        self.parts[part_of(id)].insert(id, v)
    }

    pub fn remove(&mut self, id: &u64) -> Option<V> {
        self.parts[part_of(*id)].remove(id)
    }

    pub fn entry(&mut self, id: u64) -> hash_map::Entry<'_, u64, V> {
        self.parts[part_of(id)].entry(id)
    }

    pub fn len(&self) -> usize {
        self.parts.iter().map(HashMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.parts.iter().all(HashMap::is_empty)
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&u64, &V)> {
        self.parts.iter().flat_map(HashMap::iter)
    }
}

impl<V> std::ops::Index<&u64> for IdMap<V> {
    type Output = V;

    fn index(&self, id: &u64) -> &V {
        self.get(id).expect("no entry for this id")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same operations on an `IdMap` and a plain map agree at every step.
    #[test]
    fn behaves_as_one_map() {
        let mut m: IdMap<u64> = IdMap::default();
        let mut model: HashMap<u64, u64> = HashMap::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for step in 0..50_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Sequential ids, as blocks get, with some far apart.
            let id = if x.is_multiple_of(5) { x } else { step % 4_000 };
            match x % 4 {
                0 | 1 => assert_eq!(m.insert(id, step), model.insert(id, step)),
                2 => assert_eq!(m.remove(&id), model.remove(&id)),
                _ => {
                    *m.entry(id).or_default() += 1;
                    *model.entry(id).or_default() += 1;
                }
            }
            assert_eq!(m.get(&id), model.get(&id), "step {step}");
        }
        assert_eq!(m.len(), model.len());
        assert_eq!(m.is_empty(), model.is_empty());
        let mut all: Vec<(u64, u64)> = m.iter().map(|(&k, &v)| (k, v)).collect();
        let mut want: Vec<(u64, u64)> = model.into_iter().collect();
        all.sort_unstable();
        want.sort_unstable();
        assert_eq!(all, want);
    }

    /// Consecutive ids land evenly, so that the parts grow, and pause, a 64th at a time.
    #[test]
    fn consecutive_ids_spread_over_every_part() {
        let mut m: IdMap<()> = IdMap::default();
        let n = 64 * 1_000;
        for id in 1_073_741_824..1_073_741_824 + n as u64 {
            m.insert(id, ());
        }
        for (i, p) in m.parts.iter().enumerate() {
            assert!((900..=1_100).contains(&p.len()), "part {i}: {}", p.len());
        }
        assert_eq!(m[&1_073_741_824], ());
    }
}
