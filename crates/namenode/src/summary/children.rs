//! A summary directory's entries, kept compactly.
//!
//! The summary mirrors every file of the namespace. As a map from boxed names, each file
//! cost ~120 bytes: the bucket, a separate allocation for its name, and the map's slack.
//! Here a directory's names sit back to back in one buffer, and the table holds only an
//! offset and length beside the node (32 bytes a slot). A removed name leaves a gap; the
//! buffer is rewritten once gaps are most of it.

use hashbrown::HashTable;

use super::tree::Node;

type Fold = foldhash::fast::RandomState;

pub struct Children {
    names: String,
    /// Bytes of `names` no entry points at any more.
    garbage: usize,
    table: HashTable<Entry>,
    hasher: Fold,
}

struct Entry {
    at: u32,
    len: u32,
    node: Node,
}

impl Default for Children {
    fn default() -> Self {
        Children {
            names: String::new(),
            garbage: 0,
            table: HashTable::new(),
            hasher: Fold::default(),
        }
    }
}

fn name_of<'a>(names: &'a str, e: &Entry) -> &'a str {
    &names[e.at as usize..(e.at + e.len) as usize]
}

impl Children {
    fn hash(&self, name: &str) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, name)
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    pub fn reserve(&mut self, n: usize) {
        let (names, hasher) = (&self.names, &self.hasher);
        self.table.reserve(n, |e| {
            std::hash::BuildHasher::hash_one(hasher, name_of(names, e))
        });
    }

    pub fn get(&self, name: &str) -> Option<&Node> {
        let names = &self.names;
        self.table
            .find(self.hash(name), |e| name_of(names, e) == name)
            .map(|e| &e.node)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Node> {
        let h = self.hash(name);
        let names = &self.names;
        self.table
            .find_mut(h, |e| name_of(names, e) == name)
            .map(|e| &mut e.node)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
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
        self.names.push_str(name);
        let h = self.hash(name);
        let (names, hasher) = (&self.names, &self.hasher);
        self.table.insert_unique(h, Entry { at, len, node }, |e| {
            std::hash::BuildHasher::hash_one(hasher, name_of(names, e))
        });
        None
    }

    pub fn remove(&mut self, name: &str) -> Option<Node> {
        let h = self.hash(name);
        let names = &self.names;
        let (e, _) = self
            .table
            .find_entry(h, |e| name_of(names, e) == name)
            .ok()?
            .remove();
        self.garbage += e.len as usize;
        if self.garbage > 4096 && self.garbage * 2 > self.names.len() {
            self.compact();
        }
        Some(e.node)
    }

    /// Rewrites the name buffer without its gaps.
    fn compact(&mut self) {
        let mut names = String::with_capacity(self.names.len() - self.garbage);
        for e in self.table.iter_mut() {
            let at = names.len() as u32;
            names.push_str(name_of(&self.names, e));
            e.at = at;
        }
        self.names = names;
        self.garbage = 0;
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Node)> {
        self.table
            .iter()
            .map(|e| (name_of(&self.names, e), &e.node))
    }

    pub fn values(&self) -> impl Iterator<Item = &Node> {
        self.table.iter().map(|e| &e.node)
    }

    /// Empties the directory, handing out every (name, node).
    pub fn drain(&mut self) -> Vec<(String, Node)> {
        let names = std::mem::take(&mut self.names);
        self.garbage = 0;
        self.table
            .drain()
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
        let mut c = Children::default();
        let mut model = std::collections::HashMap::new();
        // Enough churn to compact the name buffer several times.
        for round in 0..5u64 {
            for i in 0..2000u64 {
                let name = format!("f-{round}-{i}");
                assert!(c.insert(&name, file(i)).is_none());
                model.insert(name, i);
            }
            for i in (0..2000u64).step_by(3) {
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
