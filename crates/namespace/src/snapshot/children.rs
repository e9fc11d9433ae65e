//! The children a directory gained and lost after one of its snapshot versions (pure).
//!
//! A child appears in at most one of the two lists: one made and then removed after the
//! version was never seen by it, and one removed and then back is no change. Each change
//! therefore first looks for the child in the other list. A search through a list is what
//! most directories need (few children change between snapshots), but a directory where n
//! children are made and then removed (a job's temporary output under a snapshotted tree)
//! would pay O(n²) in all; past `INDEX_FROM` entries an index finds each child at once.

use crate::fast::FastMap;
use crate::inode::Slot;

/// Lists shorter than this are searched; at this length the index is built.
const INDEX_FROM: usize = 64;

/// Marks an index entry as a position in `created` (else in `deleted`).
const IN_CREATED: u32 = 1 << 31;

#[derive(Clone, Debug, Default)]
pub struct ChildChanges {
    created: Vec<Slot>,
    deleted: Vec<Slot>,
    /// Every listed child's position, once the lists are long (boxed: most directories
    /// never need one).
    index: Option<Box<FastMap<Slot, u32>>>,
}

impl ChildChanges {
    /// From lists read back from an image (each child in at most one).
    pub fn from_lists(created: Vec<Slot>, deleted: Vec<Slot>) -> Self {
        let mut c = ChildChanges {
            created,
            deleted,
            index: None,
        };
        c.index_if_long();
        c
    }

    /// Children made (or moved in) after the version.
    pub fn created(&self) -> &[Slot] {
        &self.created
    }

    /// Children removed (deleted, replaced or moved out) after the version.
    pub fn deleted(&self) -> &[Slot] {
        &self.deleted
    }

    pub fn into_deleted(self) -> Vec<Slot> {
        self.deleted
    }

    /// `child` joined the directory. True when that undoes its removal (it is in neither
    /// list now); else it is listed as made.
    pub fn note_added(&mut self, child: Slot) -> bool {
        if self.take(child, false) {
            return true;
        }
        self.push(child, true);
        false
    }

    /// `child` left the directory. True when it had been made after the version (it is
    /// in neither list now); else it is listed as removed.
    pub fn note_removed(&mut self, child: Slot) -> bool {
        if self.take(child, true) {
            return true;
        }
        self.push(child, false);
        false
    }

    fn list(&mut self, created: bool) -> &mut Vec<Slot> {
        if created {
            &mut self.created
        } else {
            &mut self.deleted
        }
    }

    /// Removes `child` from one list, if it is there.
    fn take(&mut self, child: Slot, from_created: bool) -> bool {
        let at = match self.index.as_deref_mut() {
            Some(index) => match index.get(&child) {
                Some(&e) if (e & IN_CREATED != 0) == from_created => {
                    index.remove(&child);
                    Some((e & !IN_CREATED) as usize)
                }
                _ => None,
            },
            None => self.list(from_created).iter().position(|&c| c == child),
        };
        let Some(i) = at else {
            return false;
        };
        let list = self.list(from_created);
        list.swap_remove(i);
        let moved = list.get(i).copied();
        if let (Some(moved), Some(index)) = (moved, self.index.as_deref_mut()) {
            index.insert(moved, tagged(i, from_created));
        }
        true
    }

    fn push(&mut self, child: Slot, to_created: bool) {
        let list = self.list(to_created);
        list.push(child);
        let at = list.len() - 1;
        match self.index.as_deref_mut() {
            Some(index) => {
                index.insert(child, tagged(at, to_created));
            }
            None => self.index_if_long(),
        }
    }

    fn index_if_long(&mut self) {
        if self.index.is_some() || self.created.len().max(self.deleted.len()) < INDEX_FROM {
            return;
        }
        let mut index = FastMap::default();
        for (created, list) in [(true, &self.created), (false, &self.deleted)] {
            for (i, &c) in list.iter().enumerate() {
                index.insert(c, tagged(i, created));
            }
        }
        self.index = Some(Box::new(index));
    }
}

fn tagged(at: usize, created: bool) -> u32 {
    let at = u32::try_from(at).expect("fewer than 2^31 children");
    if created {
        at | IN_CREATED
    } else {
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn sets(c: &ChildChanges) -> (BTreeSet<Slot>, BTreeSet<Slot>) {
        (
            c.created().iter().copied().collect(),
            c.deleted().iter().copied().collect(),
        )
    }

    #[test]
    fn made_then_removed_is_no_change_and_removed_then_back_neither() {
        let mut c = ChildChanges::default();
        assert!(!c.note_added(5));
        assert!(!c.note_removed(7));
        assert!(c.note_removed(5));
        assert!(c.note_added(7));
        assert!(c.created().is_empty() && c.deleted().is_empty());
    }

    /// The same random sequence of changes against a model of two sets, across the
    /// length where the index starts, and back from lists as an image holds them.
    #[test]
    fn long_lists_answer_as_short_ones_do() {
        let mut c = ChildChanges::default();
        let (mut made, mut gone) = (BTreeSet::new(), BTreeSet::new());
        // The directory's children now: a child is either here or was removed.
        let mut present: BTreeSet<Slot> = (0..300).collect();
        let mut seed = 0x9e37_79b9u32;
        for step in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let child = seed % 600;
            if present.remove(&child) {
                let undone = c.note_removed(child);
                assert_eq!(undone, made.remove(&child), "step {step}");
                if !undone {
                    gone.insert(child);
                }
            } else {
                present.insert(child);
                let undone = c.note_added(child);
                assert_eq!(undone, gone.remove(&child), "step {step}");
                if !undone {
                    made.insert(child);
                }
            }
            assert_eq!(
                (c.created().len(), c.deleted().len()),
                (made.len(), gone.len()),
                "step {step}"
            );
            if step % 100 == 0 {
                assert_eq!(sets(&c), (made.clone(), gone.clone()), "step {step}");
            }
            if step % 5_000 == 0 {
                c = ChildChanges::from_lists(c.created().to_vec(), c.deleted().to_vec());
            }
        }
        assert!(c.index.is_some(), "the lists grew past the index's start");
    }

    #[test]
    fn many_made_then_removed_stays_linear() {
        // 200,000 children made and removed after a snapshot: a search per removal
        // would be 2·10^10 comparisons; the index makes it instant.
        let mut c = ChildChanges::default();
        for s in 0..200_000 {
            c.note_added(s);
        }
        for s in 0..200_000 {
            assert!(c.note_removed(s));
        }
        assert!(c.created().is_empty());
    }
}
