//! What a client's directory should hold: a plain tree of names, the snapshots taken of it,
//! and what each operation should answer. Pure: the client asks it before each call and
//! applies what the NameNode acknowledged.

use std::collections::BTreeMap;

/// A path under the client's root, without a leading slash (`d1/f3`).
pub type Rel = String;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
}

/// Every entry under a root, by relative path.
pub type Tree = BTreeMap<Rel, Kind>;

/// One operation a client runs on its own directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Mkdir(Rel),
    /// create (no overwrite, parents made), then complete.
    Create(Rel),
    /// The legacy rename, which answers false rather than failing.
    Rename(Rel, Rel),
    Delete(Rel),
    Snapshot(String),
    DeleteSnapshot(String),
}

/// What the NameNode should answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Success, with the call's boolean where it has one.
    Ok(bool),
    /// An exception, and nothing changes.
    Fails,
}

#[derive(Clone, Debug, Default)]
pub struct Model {
    pub tree: Tree,
    pub snapshots: BTreeMap<String, Tree>,
}

fn parent(p: &str) -> Option<&str> {
    p.rsplit_once('/').map(|(a, _)| a)
}

fn ancestors(p: &str) -> impl Iterator<Item = &str> {
    p.match_indices('/').map(move |(i, _)| &p[..i])
}

fn under(p: &str, root: &str) -> bool {
    p.len() > root.len() && p.starts_with(root) && p.as_bytes()[root.len()] == b'/'
}

impl Model {
    fn kind(&self, p: &str) -> Option<Kind> {
        self.tree.get(p).copied()
    }

    fn file_above(&self, p: &str) -> bool {
        ancestors(p).any(|a| self.kind(a) == Some(Kind::File))
    }

    /// What `op` should answer now.
    pub fn expect(&self, op: &Op) -> Expect {
        match op {
            Op::Mkdir(p) => {
                if self.file_above(p) || self.kind(p) == Some(Kind::File) {
                    Expect::Fails
                } else {
                    Expect::Ok(true)
                }
            }
            Op::Create(p) => {
                if self.file_above(p) || self.kind(p).is_some() {
                    Expect::Fails
                } else {
                    Expect::Ok(true)
                }
            }
            // As HDFS's legacy rename: false for most refusals, but a destination inside
            // the source is an exception.
            Op::Rename(src, _) if self.kind(src).is_none() => Expect::Ok(false),
            Op::Rename(src, dst) if under(dst, src) => Expect::Fails,
            Op::Rename(_, dst) => {
                let parent_ok = parent(dst).is_none_or(|d| self.kind(d) == Some(Kind::Dir));
                Expect::Ok(self.kind(dst).is_none() && parent_ok)
            }
            Op::Delete(p) => Expect::Ok(self.kind(p).is_some()),
            Op::Snapshot(name) => match self.snapshots.contains_key(name) {
                true => Expect::Fails,
                false => Expect::Ok(true),
            },
            Op::DeleteSnapshot(name) => match self.snapshots.contains_key(name) {
                true => Expect::Ok(true),
                false => Expect::Fails,
            },
        }
    }

    /// Applies `op` as the NameNode did.
    pub fn apply(&mut self, op: &Op) {
        if self.expect(op) != Expect::Ok(true) {
            return;
        }
        match op {
            Op::Mkdir(p) | Op::Create(p) => {
                for a in ancestors(p) {
                    self.tree.insert(a.to_string(), Kind::Dir);
                }
                let kind = if matches!(op, Op::Mkdir(_)) {
                    Kind::Dir
                } else {
                    Kind::File
                };
                self.tree.insert(p.clone(), kind);
            }
            Op::Rename(src, dst) => {
                let moved: Vec<(Rel, Kind)> = self
                    .tree
                    .iter()
                    .filter(|(k, _)| *k == src || under(k, src))
                    .map(|(k, v)| (k.clone(), *v))
                    .collect();
                for (k, v) in moved {
                    self.tree.remove(&k);
                    self.tree.insert(format!("{dst}{}", &k[src.len()..]), v);
                }
            }
            Op::Delete(p) => self.tree.retain(|k, _| k != p && !under(k, p)),
            Op::Snapshot(name) => {
                self.snapshots.insert(name.clone(), self.tree.clone());
            }
            Op::DeleteSnapshot(name) => {
                self.snapshots.remove(name);
            }
        }
    }

    /// Whether `op` took effect, told from the tree observed after it (the client's own
    /// directory, which no one else changes): for an operation whose answer was lost.
    pub fn took_effect(op: &Op, observed: &Tree, snapshots: &[String]) -> bool {
        match op {
            Op::Mkdir(p) => observed.get(p) == Some(&Kind::Dir),
            Op::Create(p) => observed.get(p) == Some(&Kind::File),
            Op::Rename(_, dst) => observed.contains_key(dst),
            Op::Delete(p) => !observed.contains_key(p),
            Op::Snapshot(name) => snapshots.contains(name),
            Op::DeleteSnapshot(name) => !snapshots.contains(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rename_moves_a_subtree_and_delete_removes_one() {
        let mut m = Model::default();
        m.apply(&Op::Create("a/b/f".into()));
        m.apply(&Op::Mkdir("a/bb".into()));
        assert_eq!(
            m.expect(&Op::Rename("a/b".into(), "c".into())),
            Expect::Ok(true)
        );
        m.apply(&Op::Rename("a/b".into(), "c".into()));
        let names: Vec<&str> = m.tree.keys().map(String::as_str).collect();
        assert_eq!(names, ["a", "a/bb", "c", "c/f"]);
        assert_eq!(
            m.expect(&Op::Rename("a".into(), "a/x".into())),
            Expect::Fails
        );
        assert_eq!(
            m.expect(&Op::Rename("zz".into(), "a/x".into())),
            Expect::Ok(false)
        );
        assert_eq!(m.expect(&Op::Mkdir("c/f/g".into())), Expect::Fails);
        m.apply(&Op::Delete("a".into()));
        let names: Vec<&str> = m.tree.keys().map(String::as_str).collect();
        assert_eq!(names, ["c", "c/f"]);
    }

    #[test]
    fn a_snapshot_keeps_the_tree_it_was_taken_of() {
        let mut m = Model::default();
        m.apply(&Op::Mkdir("d".into()));
        m.apply(&Op::Snapshot("s0".into()));
        m.apply(&Op::Delete("d".into()));
        assert!(m.snapshots["s0"].contains_key("d"));
        assert_eq!(m.expect(&Op::Snapshot("s0".into())), Expect::Fails);
    }
}
