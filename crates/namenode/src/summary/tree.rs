//! The summary's own tree: the namespace's shape, with for every directory its subtree
//! totals kept current as operation records arrive. Pure: no clock, no I/O.
//!
//! An event walks from the root to its parent directory, one hash probe per level, changes
//! the entry there, and adds the resulting [`Patch`] to every directory on the way back up.
//! Subtrees are owned by their parents, so a rename or delete of a whole subtree moves or
//! drops one map entry and patches the two ancestor chains by the subtree's totals.

use super::totals::{restricts, Part, Patch, Totals};
use crate::namespace::path::Components;
use crate::namespace::Op;

pub use super::children::{Children, FileView, NodeMut, NodeRef, MAX_NAME};

pub struct Dir {
    pub perm: u16,
    /// The time of the last change anywhere below (the newest operation time seen).
    pub updated: i64,
    pub tot: Totals,
    pub children: Children,
}

/// A file taken out of (or going into) a directory's [`Children`], which keep it packed.
pub struct File {
    pub len: u64,
    pub repl: u16,
    /// While open for write, the recorded length of each block (the namespace's rule for
    /// how an added or abandoned block changes the file's length needs the last one).
    pub open: Option<Vec<u64>>,
}

/// An entry owned outside a directory: taken out by a delete or rename, or being added.
pub enum Node {
    Dir(Box<Dir>),
    File(File),
}

impl Node {
    pub fn as_ref(&self) -> NodeRef<'_> {
        match self {
            Node::Dir(d) => NodeRef::Dir(d),
            Node::File(f) => NodeRef::File(FileView {
                len: f.len,
                repl: f.repl,
                open: f.open.as_deref(),
            }),
        }
    }
}

impl Dir {
    pub fn new(perm: u16, updated: i64) -> Dir {
        Dir {
            perm,
            updated,
            tot: Totals::of_dir(perm),
            children: Children::default(),
        }
    }

    /// Recomputes this directory's totals from its children, whose own totals must
    /// already be right (used when building or loading bottom-up).
    pub fn recount(&mut self) {
        let mut tot = Totals::of_dir(self.perm);
        for node in self.children.values() {
            Patch {
                sub: Part::Nothing,
                add: part(node),
            }
            .apply(&mut tot);
        }
        self.tot = tot;
    }
}

/// What `node` contributes to the totals above it.
pub fn part(node: NodeRef) -> Part {
    match node {
        NodeRef::File(f) => Part::File {
            len: f.len,
            repl: f.repl,
        },
        NodeRef::Dir(d) => Part::Tree(Box::new(d.tot.clone())),
    }
}

/// A journaled path's components. No validation: the namespace checked the path before
/// the record was written.
pub fn comps(path: &str) -> Components<'_> {
    path.split('/').filter(|c| !c.is_empty()).collect()
}

/// Walks from `dir` to the parent of `comps`' last name, runs `leaf` there, and applies
/// the patch it returns to every directory on the way back up, the parent included.
fn descend<R>(
    dir: &mut Dir,
    comps: &[&str],
    now: i64,
    leaf: impl FnOnce(&mut Dir, &str) -> Result<(Patch, R), String>,
) -> Result<(Patch, R), String> {
    let (first, rest) = comps
        .split_first()
        .ok_or_else(|| "the root has no parent".to_string())?;
    let out = if rest.is_empty() {
        if first.len() > MAX_NAME {
            return Err(format!(
                "a name of {} bytes (at most {MAX_NAME})",
                first.len()
            ));
        }
        leaf(dir, first)?
    } else {
        match dir.children.get_mut(first) {
            Some(NodeMut::Dir(child)) => descend(child, rest, now, leaf)?,
            Some(NodeMut::File) => return Err(format!("{first} is a file")),
            None => return Err(format!("{first} does not exist")),
        }
    };
    out.0.apply(&mut dir.tot);
    dir.updated = dir.updated.max(now);
    Ok(out)
}

/// Changes one file in place; the patch moves it from its old figures to its new ones.
fn change_file(
    dir: &mut Dir,
    name: &str,
    f: impl FnOnce(&mut File) -> Result<(), String>,
) -> Result<(Patch, ()), String> {
    let figures = |file: &File| Part::File {
        len: file.len,
        repl: file.repl,
    };
    let changed = dir.children.update_file(name, |file| {
        let sub = figures(file);
        f(file)?;
        Ok::<_, String>(Patch {
            sub,
            add: figures(file),
        })
    });
    match changed {
        Some(patch) => Ok((patch?, ())),
        None if dir.children.contains_key(name) => Err(format!("{name} is a directory")),
        None => Err(format!("{name} does not exist")),
    }
}

/// The whole summary tree.
pub struct Tree {
    pub root: Dir,
    /// The newest operation time seen: the clock of `updated` for events that carry none.
    pub clock: i64,
}

pub enum Found<'a> {
    Dir(&'a Dir),
    File(FileView<'a>),
}

impl Tree {
    pub fn new(root_perm: u16, mtime: i64) -> Tree {
        Tree {
            root: Dir::new(root_perm, mtime),
            clock: mtime,
        }
    }

    pub fn find(&self, path: &str) -> Option<Found<'_>> {
        let mut dir = &self.root;
        let c = comps(path);
        let Some((last, parents)) = c.split_last() else {
            return Some(Found::Dir(&self.root));
        };
        for name in parents {
            match dir.children.get(name)? {
                NodeRef::Dir(d) => dir = d,
                NodeRef::File(_) => return None,
            }
        }
        match dir.children.get(last)? {
            NodeRef::Dir(d) => Some(Found::Dir(d)),
            NodeRef::File(f) => Some(Found::File(f)),
        }
    }

    /// Applies one operation record. An error means the record does not fit this tree
    /// (the summary has diverged from the namespace and must be rebuilt).
    pub fn apply(&mut self, op: &Op) -> Result<(), String> {
        let now = op_time(op).map_or(self.clock, |t| t.max(self.clock));
        self.clock = now;
        match op {
            Op::Mkdir {
                path, perm, mtime, ..
            } => {
                let (perm, mtime) = (*perm, *mtime);
                descend(&mut self.root, &comps(path), now, |dir, name| {
                    if dir.children.contains_key(name) {
                        return Err(format!("{path} already exists"));
                    }
                    dir.children
                        .insert(name, Node::Dir(Box::new(Dir::new(perm, mtime))));
                    let add = Part::Tree(Box::new(Totals::of_dir(perm)));
                    Ok((
                        Patch {
                            sub: Part::Nothing,
                            add,
                        },
                        (),
                    ))
                })?;
            }
            Op::Create {
                path, replication, ..
            } => {
                let repl = *replication;
                descend(&mut self.root, &comps(path), now, |dir, name| {
                    let sub = match dir.children.get(name) {
                        Some(NodeRef::Dir(_)) => return Err(format!("{path} is a directory")),
                        Some(old) => part(old),
                        None => Part::Nothing,
                    };
                    let file = File {
                        len: 0,
                        repl,
                        open: Some(Vec::new()),
                    };
                    // Replaces an old file of that name, if any.
                    dir.children.insert(name, Node::File(file));
                    let add = Part::File { len: 0, repl };
                    Ok((Patch { sub, add }, ()))
                })?;
            }
            Op::AddBlock { path, prev_len, .. } => {
                let prev_len = *prev_len;
                descend(&mut self.root, &comps(path), now, |dir, name| {
                    change_file(dir, name, |f| {
                        let blocks = f.open.as_mut().ok_or("not open for write")?;
                        let mut was = 0;
                        if let Some(last) = blocks.last_mut() {
                            was = *last;
                            *last = prev_len;
                        }
                        blocks.push(0);
                        f.len = f.len.saturating_sub(was) + prev_len;
                        Ok(())
                    })
                })?;
            }
            Op::AbandonBlock { path, .. } => {
                descend(&mut self.root, &comps(path), now, |dir, name| {
                    change_file(dir, name, |f| {
                        let blocks = f.open.as_mut().ok_or("not open for write")?;
                        blocks.pop().ok_or("no block to abandon")?;
                        Ok(())
                    })
                })?;
            }
            Op::Close { path, len, .. } => {
                let len = *len;
                descend(&mut self.root, &comps(path), now, |dir, name| {
                    change_file(dir, name, |f| {
                        f.len = len;
                        f.open = None;
                        Ok(())
                    })
                })?;
            }
            Op::SetReplication { path, replication } => {
                let repl = *replication;
                descend(&mut self.root, &comps(path), now, |dir, name| {
                    change_file(dir, name, |f| {
                        f.repl = repl;
                        Ok(())
                    })
                })?;
            }
            Op::SetPermission { path, perm } => self.set_permission(path, *perm, now)?,
            Op::Delete { path, .. } => {
                self.detach(path, now)?;
            }
            Op::Rename {
                src,
                dst,
                overwrite,
                ..
            } => self.rename(src, dst, *overwrite, now)?,
            Op::BumpGenerationStamp { .. } | Op::SetOwner { .. } | Op::SetTimes { .. } => {}
        }
        Ok(())
    }

    fn set_permission(&mut self, path: &str, perm: u16, now: i64) -> Result<(), String> {
        let c = comps(path);
        let flip = |d: &mut Dir| {
            let was = restricts(d.perm);
            d.perm = perm;
            let is = restricts(perm);
            let unit = || {
                Part::Tree(Box::new(Totals {
                    restricted: 1,
                    ..Default::default()
                }))
            };
            let patch = match (was, is) {
                (false, true) => Patch {
                    sub: Part::Nothing,
                    add: unit(),
                },
                (true, false) => Patch {
                    sub: unit(),
                    add: Part::Nothing,
                },
                _ => Patch::default(),
            };
            patch.apply(&mut d.tot);
            patch
        };
        if c.is_empty() {
            flip(&mut self.root);
            return Ok(());
        }
        descend(&mut self.root, &c, now, |dir, name| {
            match dir.children.get_mut(name) {
                Some(NodeMut::Dir(d)) => Ok((flip(d), ())),
                Some(NodeMut::File) => Ok((Patch::default(), ())),
                None => Err(format!("{path} does not exist")),
            }
        })?;
        Ok(())
    }

    /// Removes the entry at `path` with its subtree and returns it.
    pub fn detach(&mut self, path: &str, now: i64) -> Result<Node, String> {
        let (_, node) = descend(&mut self.root, &comps(path), now, |dir, name| {
            let node = dir
                .children
                .remove(name)
                .ok_or_else(|| format!("{path} does not exist"))?;
            let sub = part(node.as_ref());
            Ok((
                Patch {
                    sub,
                    add: Part::Nothing,
                },
                node,
            ))
        })?;
        Ok(node)
    }

    /// Puts `node` at `path`, replacing what is there.
    pub fn attach(&mut self, path: &str, node: Node, now: i64) -> Result<(), String> {
        descend(&mut self.root, &comps(path), now, |dir, name| {
            let add = part(node.as_ref());
            let sub = match dir.children.insert(name, node) {
                Some(old) => part(old.as_ref()),
                None => Part::Nothing,
            };
            Ok((Patch { sub, add }, ()))
        })?;
        Ok(())
    }

    fn rename(&mut self, src: &str, dst: &str, overwrite: bool, now: i64) -> Result<(), String> {
        if comps(src) == comps(dst) {
            return Ok(());
        }
        if self.find(dst).is_some() && !overwrite {
            return Err(format!("rename destination {dst} already exists"));
        }
        let node = self.detach(src, now)?;
        self.attach(dst, node, now)
    }
}

/// The time an operation carries, if any.
pub fn op_time(op: &Op) -> Option<i64> {
    match op {
        Op::Mkdir { mtime, .. }
        | Op::Create { mtime, .. }
        | Op::Close { mtime, .. }
        | Op::Rename { mtime, .. }
        | Op::Delete { mtime, .. } => Some(*mtime),
        _ => None,
    }
}
