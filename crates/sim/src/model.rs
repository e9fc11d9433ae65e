//! What a client's directory should hold: a plain tree of names, the snapshots taken of it,
//! and what each operation should answer. Pure: the client asks it before each call and
//! applies what the NameNode acknowledged.

use std::collections::BTreeMap;

/// A path under the client's root, without a leading slash (`d1/f3`).
pub(crate) type Rel = String;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Dir,
    File,
}

/// Every entry under a root, by relative path.
pub(crate) type Tree = BTreeMap<Rel, Kind>;

/// One operation a client runs on its own directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Mkdir(Rel),
    /// create (no overwrite, parents made), then complete.
    Create(Rel),
    /// The legacy rename, which answers false rather than failing.
    Rename(Rel, Rel),
    /// `rename2`, which fails instead, and may replace the destination.
    Rename2 {
        src: Rel,
        dst: Rel,
        overwrite: bool,
    },
    Delete(Rel),
    Snapshot(String),
    DeleteSnapshot(String),
}

/// What the NameNode should answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    /// Success, with the call's boolean where it has one.
    Ok(bool),
    /// An exception, and nothing changes.
    Fails,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Model {
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
    pub(crate) fn expect(&self, op: &Op) -> Expect {
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
            Op::Rename2 {
                src,
                dst,
                overwrite,
            } => self.expect_rename2(src, dst, *overwrite),
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

    /// HDFS's rename with options: every refusal is an exception.
    fn expect_rename2(&self, src: &str, dst: &str, overwrite: bool) -> Expect {
        let Some(from) = self.kind(src) else {
            return Expect::Fails;
        };
        if src == dst || under(dst, src) {
            return Expect::Fails;
        }
        if let Some(to) = self.kind(dst) {
            let has_children = self.tree.keys().any(|k| under(k, dst));
            if !overwrite || to != from || has_children {
                return Expect::Fails;
            }
        }
        match parent(dst).map(|d| self.kind(d)) {
            None | Some(Some(Kind::Dir)) => Expect::Ok(true),
            Some(_) => Expect::Fails,
        }
    }

    fn move_subtree(&mut self, src: &str, dst: &str) {
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

    /// Applies `op` as the NameNode did.
    pub(crate) fn apply(&mut self, op: &Op) {
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
            Op::Rename(src, dst) => self.move_subtree(src, dst),
            Op::Rename2 { src, dst, .. } => {
                // An overwritten destination is a file or an empty directory.
                self.tree.remove(dst);
                self.move_subtree(src, dst);
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
    pub(crate) fn took_effect(op: &Op, observed: &Tree, snapshots: &[String]) -> bool {
        match op {
            Op::Mkdir(p) => observed.get(p) == Some(&Kind::Dir),
            Op::Create(p) => observed.get(p) == Some(&Kind::File),
            Op::Rename(_, dst) => observed.contains_key(dst),
            Op::Rename2 { src, .. } => !observed.contains_key(src),
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
    fn rename2_replaces_only_a_like_and_empty_destination() {
        let mut m = Model::default();
        m.apply(&Op::Create("d/f".into()));
        m.apply(&Op::Create("g".into()));
        m.apply(&Op::Mkdir("e".into()));
        let r2 = |src: &str, dst: &str, overwrite| Op::Rename2 {
            src: src.into(),
            dst: dst.into(),
            overwrite,
        };
        assert_eq!(m.expect(&r2("g", "d/f", false)), Expect::Fails);
        assert_eq!(m.expect(&r2("g", "d/f", true)), Expect::Ok(true));
        assert_eq!(
            m.expect(&r2("g", "e", true)),
            Expect::Fails,
            "file over a directory"
        );
        assert_eq!(
            m.expect(&r2("e", "d", true)),
            Expect::Fails,
            "over a non-empty directory"
        );
        assert_eq!(m.expect(&r2("g", "g/x", true)), Expect::Fails);
        assert_eq!(m.expect(&r2("g", "nope/x", false)), Expect::Fails);
        m.apply(&r2("g", "d/f", true));
        let names: Vec<&str> = m.tree.keys().map(String::as_str).collect();
        assert_eq!(names, ["d", "d/f", "e"]);
        assert_eq!(m.tree["d/f"], Kind::File);
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
