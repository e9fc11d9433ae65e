//! A summary directory's entries, kept compactly.
//!
//! The summary mirrors every file of the namespace, and most directories hold a handful of
//! entries (NNThroughputBenchmark's trees hold four files and four directories each). As a
//! map from boxed names each entry cost ~120 bytes; a hash table per small directory still
//! cost ~800 bytes for eight entries (buckets at half load, control bytes, a doubled name
//! buffer). So a directory's names sit back to back in one buffer, and its entries (an
//! offset and length beside the node, 32 bytes) are a plain list searched in order until
//! the directory first holds more than [`FEW`], and a hash table from then on (a directory
//! that shrank again keeps its table). A removed name leaves a gap; the buffer is
//! rewritten once gaps are most of it.

use hashbrown::HashTable;

use super::tree::Node;

type Fold = foldhash::fast::RandomState;

/// The most entries kept as a list. A scan of 16 names (lengths compared first) costs about
/// what hashing one name does.
const FEW: usize = 16;

#[derive(Default)]
pub struct Children {
    names: String,
    /// Bytes of `names` no entry points at any more.
    garbage: usize,
    index: Index,
}

enum Index {
    Few(Vec<Entry>),
    Many(Box<Table>),
}

impl Default for Index {
    fn default() -> Self {
        Index::Few(Vec::new())
    }
}

struct Table {
    table: HashTable<Entry>,
    hasher: Fold,
}

struct Entry {
    at: u32,
    len: u32,
    node: Node,
}

fn name_of<'a>(names: &'a str, e: &Entry) -> &'a str {
    &names[e.at as usize..(e.at + e.len) as usize]
}

impl Table {
    fn hash(&self, name: &str) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, name)
    }

    fn insert(&mut self, names: &str, e: Entry) {
        let h = self.hash(name_of(names, &e));
        let hasher = &self.hasher;
        self.table.insert_unique(h, e, |e| {
            std::hash::BuildHasher::hash_one(hasher, name_of(names, e))
        });
    }
}

impl Children {
    pub fn len(&self) -> usize {
        match &self.index {
            Index::Few(v) => v.len(),
            Index::Many(t) => t.table.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Room for `n` more entries (a checkpoint being loaded knows how many follow).
    pub fn reserve(&mut self, n: usize) {
        if self.len() + n > FEW {
            self.promote();
        }
        match &mut self.index {
            Index::Few(v) => v.reserve_exact(n),
            Index::Many(t) => {
                let (names, hasher) = (&self.names, &t.hasher);
                t.table.reserve(n, |e| {
                    std::hash::BuildHasher::hash_one(hasher, name_of(names, e))
                });
            }
        }
    }

    /// Turns the list into a hash table (once it outgrows [`FEW`]).
    fn promote(&mut self) {
        if let Index::Few(v) = &mut self.index {
            let mut t = Table {
                table: HashTable::with_capacity(v.len() + 1),
                hasher: Fold::default(),
            };
            for e in v.drain(..) {
                t.insert(&self.names, e);
            }
            self.index = Index::Many(Box::new(t));
        }
    }

    fn find(&self, name: &str) -> Option<&Entry> {
        let names = &self.names;
        match &self.index {
            Index::Few(v) => v
                .iter()
                .find(|e| e.len as usize == name.len() && name_of(names, e) == name),
            Index::Many(t) => t.table.find(t.hash(name), |e| name_of(names, e) == name),
        }
    }

    fn find_mut(&mut self, name: &str) -> Option<&mut Entry> {
        let names = &self.names;
        match &mut self.index {
            Index::Few(v) => v
                .iter_mut()
                .find(|e| e.len as usize == name.len() && name_of(names, e) == name),
            Index::Many(t) => {
                let h = t.hash(name);
                t.table.find_mut(h, |e| name_of(names, e) == name)
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&Node> {
        self.find(name).map(|e| &e.node)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Node> {
        self.find_mut(name).map(|e| &mut e.node)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// Adds or replaces `name`'s node; returns the one replaced.
    pub fn insert(&mut self, name: &str, node: Node) -> Option<Node> {
        if let Some(old) = self.get_mut(name) {
            return Some(std::mem::replace(old, node));
        }
        let len = u32::try_from(name.len()).expect("a name shorter than 4 GiB");
        let at = u32::try_from(self.names.len())
            .ok()
            .filter(|at| at.checked_add(len).is_some())
            .expect("a directory's names fit in 4 GiB");
        let e = Entry { at, len, node };
        if self.len() < FEW {
            // Small directories grow their buffers exactly: most never pass a few entries,
            // and doubling would leave half of each buffer empty.
            self.names.reserve_exact(name.len());
            self.names.push_str(name);
            if let Index::Few(v) = &mut self.index {
                v.reserve_exact(1);
                v.push(e);
                return None;
            }
        } else {
            self.names.push_str(name);
        }
        self.promote();
        if let Index::Many(t) = &mut self.index {
            t.insert(&self.names, e);
        }
        None
    }

    pub fn remove(&mut self, name: &str) -> Option<Node> {
        let names = &self.names;
        let e = match &mut self.index {
            Index::Few(v) => {
                let i = v
                    .iter()
                    .position(|e| e.len as usize == name.len() && name_of(names, e) == name)?;
                v.swap_remove(i)
            }
            Index::Many(t) => {
                let h = t.hash(name);
                let (e, _) = t
                    .table
                    .find_entry(h, |e| name_of(names, e) == name)
                    .ok()?
                    .remove();
                e
            }
        };
        self.garbage += e.len as usize;
        if self.garbage > 4096 && self.garbage * 2 > self.names.len() {
            self.compact();
        }
        Some(e.node)
    }

    // One of the two halves of each chain is empty: an iterator over either form without
    // boxing it.
    fn entries_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        let (few, many) = match &mut self.index {
            Index::Few(v) => (Some(v.iter_mut()), None),
            Index::Many(t) => (None, Some(t.table.iter_mut())),
        };
        few.into_iter().flatten().chain(many.into_iter().flatten())
    }

    fn entries(&self) -> impl Iterator<Item = &Entry> {
        let (few, many) = match &self.index {
            Index::Few(v) => (Some(v.iter()), None),
            Index::Many(t) => (None, Some(t.table.iter())),
        };
        few.into_iter().flatten().chain(many.into_iter().flatten())
    }

    /// Rewrites the name buffer without its gaps.
    fn compact(&mut self) {
        let old = std::mem::take(&mut self.names);
        let mut names = String::with_capacity(old.len() - self.garbage);
        for e in self.entries_mut() {
            let at = names.len() as u32;
            names.push_str(name_of(&old, e));
            e.at = at;
        }
        self.names = names;
        self.garbage = 0;
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Node)> {
        self.entries().map(|e| (name_of(&self.names, e), &e.node))
    }

    pub fn values(&self) -> impl Iterator<Item = &Node> {
        self.entries().map(|e| &e.node)
    }

    /// Empties the directory, handing out every (name, node).
    pub fn drain(&mut self) -> Vec<(String, Node)> {
        let names = std::mem::take(&mut self.names);
        self.garbage = 0;
        let entries: Vec<Entry> = match std::mem::take(&mut self.index) {
            Index::Few(v) => v,
            Index::Many(t) => t.table.into_iter().collect(),
        };
        entries
            .into_iter()
            .map(|e| (name_of(&names, &e).to_string(), e.node))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tree::File;

    fn file(len: u64) -> Node {
        Node::File(File {
            len,
            repl: 1,
            open: None,
        })
    }

    fn len_of(n: Option<&Node>) -> Option<u64> {
        match n? {
            Node::File(f) => Some(f.len),
            Node::Dir(_) => None,
        }
    }

    #[test]
    fn behaves_as_a_map_through_removals_and_compaction() {
        // Enough churn to compact the name buffer several times, as a hash table.
        behaves_as_a_map(2000);
    }

    #[test]
    fn small_directories_behave_as_a_map_as_a_list_and_across_the_switch() {
        for n in [3, FEW - 1, FEW, FEW + 1, 3 * FEW] {
            behaves_as_a_map(n as u64);
        }
    }

    /// Five rounds of `n` inserts then removal of every third, checked against a map.
    fn behaves_as_a_map(n: u64) {
        let mut c = Children::default();
        let mut model = std::collections::HashMap::new();
        for round in 0..5u64 {
            for i in 0..n {
                let name = format!("f-{round}-{i}");
                assert!(c.insert(&name, file(i)).is_none());
                model.insert(name, i);
            }
            for i in (0..n).step_by(3) {
                let name = format!("f-{round}-{i}");
                assert_eq!(len_of(c.remove(&name).as_ref()), Some(i));
                model.remove(&name);
            }
            assert_eq!(c.len(), model.len());
        }
        for (name, len) in &model {
            assert_eq!(len_of(c.get(name)), Some(*len), "{name}");
        }
        assert!(c.garbage * 2 <= c.names.len() || c.garbage <= 4096);
        // Replacing keeps one entry; iteration sees every name once.
        assert_eq!(len_of(c.insert("f-0-1", file(99)).as_ref()), Some(1));
        assert_eq!(c.len(), model.len());
        assert_eq!(len_of(c.get("f-0-1")), Some(99));
        let mut seen: Vec<String> = c.iter().map(|(n, _)| n.to_string()).collect();
        seen.sort();
        let mut want: Vec<String> = model.keys().cloned().collect();
        want.sort();
        assert_eq!(seen, want);
        assert!(c.remove("nope").is_none() && !c.contains_key("nope"));
        let drained = c.drain();
        assert_eq!(drained.len(), model.len());
        assert!(c.is_empty());
    }
}
