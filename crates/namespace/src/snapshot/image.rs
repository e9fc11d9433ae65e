//! Snapshots in the checkpoint image: two sections, present only when snapshots exist.
//! - DETACHED: the inodes no live directory lists but a snapshot does (deleted while a
//!   snapshot saw them), each kept subtree in pre-order, its top with parent id 0. Loaded
//!   right after the live tree, so that later sections (xattrs, ACLs) find them by id.
//! - SNAPSHOTS: the roots and their snapshots, the id counter, what each snapshot id saw,
//!   pins, and every saved version. Which inodes are held, and which blocks only versions
//!   keep, are derived again at load.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::codec::Reader;
use crate::fast::FastMap;
use crate::features::Features;
use crate::image::{put_xattrs, read_inode, read_xattrs, ImageError};
use crate::image::{DETACHED, SNAPSHOTS};
use crate::inode::{Block, Slot, ROOT_SLOT};
use crate::snapshot::{ChildChanges, Frozen, FrozenFile, Root, Snap, Version};
use crate::Namespace;

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u32(out, b.len() as u32);
    out.extend_from_slice(b);
}

impl Namespace {
    /// Whether the image needs the snapshot sections.
    pub(crate) fn has_snapshot_state(&self) -> bool {
        !self.snaps.roots.is_empty() || !self.snaps.versions.is_empty()
    }

    /// The tops of the kept subtrees: held inodes outside the live tree that no other kept
    /// subtree contains. Sorted by inode id, so an image does not depend on hash order.
    fn detached_tops(&self) -> Vec<Slot> {
        let kept: Vec<Slot> = self
            .snaps
            .held
            .keys()
            .copied()
            .filter(|&s| !self.is_live(s))
            .collect();
        let mut inner = HashSet::new();
        for &top in &kept {
            let mut stack: Vec<Slot> = self
                .inode(top)
                .children()
                .map_or(Vec::new(), |c| c.slots().collect());
            while let Some(s) = stack.pop() {
                if inner.insert(s) {
                    if let Some(c) = self.inode(s).children() {
                        stack.extend(c.slots());
                    }
                }
            }
        }
        let mut tops: Vec<Slot> = kept.into_iter().filter(|s| !inner.contains(s)).collect();
        tops.sort_by_key(|&s| self.inode(s).id);
        tops
    }

    /// The DETACHED section's payload, and how many inodes it holds (the live tree's count
    /// leaves them out).
    pub(crate) fn encode_detached(&self) -> (Vec<u8>, u64) {
        let mut body = Vec::new();
        let mut n = 0u64;
        for top in self.detached_tops() {
            let mut stack = vec![(top, true)];
            while let Some((s, is_top)) = stack.pop() {
                let at = body.len();
                self.encode_inode(s, &mut body);
                if is_top {
                    // The parent id follows the inode id: 0 marks a kept subtree's top.
                    body[at + 8..at + 16].copy_from_slice(&0u64.to_le_bytes());
                }
                n += 1;
                if let Some(c) = self.inode(s).children() {
                    stack.extend(c.slots().rev().map(|c| (c, false)));
                }
            }
        }
        let mut out = Vec::with_capacity(body.len() + 8);
        put_u64(&mut out, n);
        out.extend_from_slice(&body);
        (out, n)
    }

    pub(crate) fn load_detached(
        &mut self,
        payload: &[u8],
        slot_of: &mut HashMap<u64, Slot>,
    ) -> Result<(), ImageError> {
        let de = |e| ImageError::Decode {
            kind: DETACHED,
            source: e,
        };
        let bad = |m: String| ImageError::Invalid(m);
        let mut r = Reader::new(payload);
        let n = r.u64().map_err(de)?;
        let users = self.users.len() as u32;
        for _ in 0..n {
            let (id, parent_id, name, mut inode) = read_inode(&mut r, users, DETACHED)?;
            if slot_of.contains_key(&id) {
                return Err(bad(format!("inode {id} is both live and kept")));
            }
            let slot = if parent_id == 0 {
                inode.name = self.names.add(name);
                inode.parent = ROOT_SLOT;
                let slot = self.arena.insert(inode);
                self.register_blocks(slot);
                slot
            } else {
                let &parent = slot_of.get(&parent_id).ok_or_else(|| {
                    bad(format!(
                        "kept inode {id} comes before its parent {parent_id}"
                    ))
                })?;
                self.attach_loaded(parent, parent_id, name, inode)?
            };
            slot_of.insert(id, slot);
        }
        if r.remaining() != 0 {
            return Err(bad(format!(
                "{} bytes after the kept inodes",
                r.remaining()
            )));
        }
        Ok(())
    }

    /// The SNAPSHOTS section's payload.
    pub(crate) fn encode_snapshots(&self, out: &mut Vec<u8>) {
        let s = &self.snaps;
        let id_of = |slot: Slot| self.inode(slot).id;
        put_u32(out, s.next_id);
        put_u32(out, s.taken.len() as u32);
        for (&id, &first_unseen) in &s.taken {
            put_u32(out, id);
            put_u64(out, first_unseen);
        }
        let mut roots: Vec<(&Slot, &Root)> = s.roots.iter().collect();
        roots.sort_by_key(|(&slot, _)| id_of(slot));
        put_u32(out, roots.len() as u32);
        for (&slot, root) in roots {
            put_u64(out, id_of(slot));
            put_u32(out, root.quota);
            put_u32(out, root.snaps.len() as u32);
            for snap in &root.snaps {
                put_u32(out, snap.id);
                put_bytes(out, snap.name.as_bytes());
                put_u64(out, snap.ctime as u64);
            }
        }
        let mut pins: Vec<(u64, Vec<u64>)> = s
            .pins
            .iter()
            .map(|(&k, v)| (id_of(k), v.iter().map(|&r| id_of(r)).collect()))
            .collect();
        pins.sort_unstable();
        put_u32(out, pins.len() as u32);
        for (id, roots) in pins {
            put_u64(out, id);
            put_u32(out, roots.len() as u32);
            for r in roots {
                put_u64(out, r);
            }
        }
        let mut versioned: Vec<(&Slot, &Vec<Version>)> = s.versions.iter().collect();
        versioned.sort_by_key(|(&slot, _)| id_of(slot));
        put_u32(out, versioned.len() as u32);
        for (&slot, vs) in versioned {
            put_u64(out, id_of(slot));
            put_u32(out, vs.len() as u32);
            for v in vs {
                put_u32(out, v.tag);
                encode_frozen(&v.state, out);
                for list in [v.created(), v.deleted()] {
                    put_u32(out, list.len() as u32);
                    for &c in list {
                        put_u64(out, id_of(c));
                    }
                }
            }
        }
    }

    pub(crate) fn load_snapshots(
        &mut self,
        payload: &[u8],
        slot_of: &HashMap<u64, Slot>,
    ) -> Result<(), ImageError> {
        let de = |e| ImageError::Decode {
            kind: SNAPSHOTS,
            source: e,
        };
        let bad = |m: String| ImageError::Invalid(m);
        let slot = |id: u64| {
            slot_of.get(&id).copied().ok_or_else(|| {
                ImageError::Invalid(format!(
                    "snapshots name inode {id}, which is not in the image"
                ))
            })
        };
        let mut r = Reader::new(payload);
        self.snaps.next_id = r.u32().map_err(de)?;
        for _ in 0..r.u32().map_err(de)? {
            let id = r.u32().map_err(de)?;
            let first_unseen = r.u64().map_err(de)?;
            self.snaps.taken.insert(id, first_unseen);
        }
        for _ in 0..r.u32().map_err(de)? {
            let dir = slot(r.u64().map_err(de)?)?;
            let quota = r.u32().map_err(de)?;
            let n = r.u32().map_err(de)?;
            let mut snaps = Vec::new();
            for _ in 0..n {
                let id = r.u32().map_err(de)?;
                let name = r.str().map_err(de)?;
                let ctime = r.u64().map_err(de)? as i64;
                snaps.push(Snap { id, name, ctime });
            }
            for snap in &snaps {
                self.snaps.root_of.insert(snap.id, dir);
            }
            self.snaps.roots.insert(dir, Root { snaps, quota });
        }
        for _ in 0..r.u32().map_err(de)? {
            let s = slot(r.u64().map_err(de)?)?;
            let n = r.u32().map_err(de)? as usize;
            if n > r.remaining() / 8 {
                return Err(bad(format!("a pin claims {n} roots")));
            }
            let mut roots = Vec::with_capacity(n);
            for _ in 0..n {
                roots.push(slot(r.u64().map_err(de)?)?);
            }
            self.snaps.pins.insert(s, roots);
        }
        let users = self.users.len() as u32;
        for _ in 0..r.u32().map_err(de)? {
            let s = slot(r.u64().map_err(de)?)?;
            let nv = r.u32().map_err(de)?;
            let mut vs = Vec::new();
            for _ in 0..nv {
                let tag = r.u32().map_err(de)?;
                let state = decode_frozen(&mut r, users)?;
                let mut lists = [Vec::new(), Vec::new()];
                for list in &mut lists {
                    let n = r.u32().map_err(de)? as usize;
                    if n > r.remaining() / 8 {
                        return Err(bad(format!("a version claims {n} children")));
                    }
                    for _ in 0..n {
                        list.push(slot(r.u64().map_err(de)?)?);
                    }
                }
                let [created, deleted] = lists;
                let mut v = Version::new(tag, state);
                if !created.is_empty() || !deleted.is_empty() {
                    v.children = Some(Box::new(ChildChanges::from_lists(created, deleted)));
                }
                vs.push(v);
            }
            // As `preserve` keeps them: no room for versions never saved.
            vs.shrink_to_fit();
            self.snaps.versions.insert(s, vs);
        }
        if r.remaining() != 0 {
            return Err(bad(format!("{} bytes after the snapshots", r.remaining())));
        }
        self.derive_snapshot_indexes();
        Ok(())
    }

    /// What the image does not store: how many `deleted` lists hold each inode, and the
    /// blocks only versions keep.
    fn derive_snapshot_indexes(&mut self) {
        let mut held: FastMap<Slot, u32> = FastMap::default();
        let mut kept = FastMap::default();
        for (&slot, vs) in &self.snaps.versions {
            for v in vs {
                for &d in v.deleted() {
                    *held.entry(d).or_insert(0) += 1;
                }
                for b in v.state.file.iter().flat_map(|f| &f.blocks) {
                    if self.block_files.get(&b.id).is_none() {
                        kept.insert(b.id, (slot, *b));
                    }
                }
            }
        }
        self.snaps.held = held;
        self.snaps.kept_blocks = kept;
    }
}

fn encode_frozen(f: &Frozen, out: &mut Vec<u8>) {
    put_bytes(out, &f.name);
    out.extend_from_slice(&f.perm.to_le_bytes());
    put_u32(out, f.owner);
    put_u32(out, f.group);
    put_u64(out, f.mtime as u64);
    put_u64(out, f.atime as u64);
    out.extend_from_slice(&f.replication.to_le_bytes());
    match &f.file {
        Some(file) => {
            out.push(1);
            put_u64(out, file.len);
            put_u64(out, file.block_size);
            out.push(u8::from(file.under_construction));
            put_u32(out, file.blocks.len() as u32);
            for b in &file.blocks {
                for v in [b.id, b.gs, b.len] {
                    put_u64(out, v);
                }
            }
        }
        None => out.push(0),
    }
    match &f.features {
        Some(feat) => {
            out.push(1);
            out.push(feat.storage_policy);
            put_xattrs(out, &feat.xattrs);
        }
        None => out.push(0),
    }
    match &f.acl {
        Some(acl) => {
            out.push(1);
            put_u32(out, acl.len() as u32);
            for e in acl.iter() {
                put_bytes(out, e.to_string().as_bytes());
            }
        }
        None => out.push(0),
    }
}

fn decode_frozen(r: &mut Reader<'_>, users: u32) -> Result<Frozen, ImageError> {
    let de = |e| ImageError::Decode {
        kind: SNAPSHOTS,
        source: e,
    };
    let bad = |m: String| ImageError::Invalid(m);
    let n = r.u32().map_err(de)? as usize;
    let name: Box<[u8]> = r.bytes(n).map_err(de)?.into();
    let perm = r.u16().map_err(de)?;
    let owner = r.u32().map_err(de)?;
    let group = r.u32().map_err(de)?;
    if owner >= users || group >= users {
        return Err(bad(format!("a version names owner/group {owner}/{group}")));
    }
    let mtime = r.i64().map_err(de)?;
    let atime = r.i64().map_err(de)?;
    let replication = r.u16().map_err(de)?;
    let file = match r.u8().map_err(de)? {
        0 => None,
        _ => {
            let len = r.u64().map_err(de)?;
            let block_size = r.u64().map_err(de)?;
            let under_construction = r.u8().map_err(de)? != 0;
            let nb = r.u32().map_err(de)? as usize;
            if nb > r.remaining() / 24 {
                return Err(bad(format!("a version claims {nb} blocks")));
            }
            let mut blocks = Vec::with_capacity(nb);
            for _ in 0..nb {
                blocks.push(Block {
                    id: r.u64().map_err(de)?,
                    gs: r.u64().map_err(de)?,
                    len: r.u64().map_err(de)?,
                });
            }
            Some(FrozenFile {
                len,
                block_size,
                blocks: blocks.into(),
                under_construction,
            })
        }
    };
    let features = match r.u8().map_err(de)? {
        0 => None,
        _ => {
            let storage_policy = r.u8().map_err(de)?;
            let xattrs = read_xattrs(r, SNAPSHOTS)?;
            Some(Box::new(Features {
                xattrs,
                storage_policy,
                quota: None,
            }))
        }
    };
    let acl = match r.u8().map_err(de)? {
        0 => None,
        _ => {
            let n = r.u32().map_err(de)? as usize;
            if n > r.remaining() / 7 {
                return Err(bad(format!("a version claims {n} ACL entries")));
            }
            let mut entries = Vec::with_capacity(n);
            for _ in 0..n {
                let text = r.str().map_err(de)?;
                entries.push(
                    crate::acl::AclEntry::parse(&text, true)
                        .map_err(|e| bad(format!("ACL entry {text:?}: {e}")))?,
                );
            }
            Some(Arc::from(entries))
        }
    };
    Ok(Frozen {
        name,
        perm,
        owner,
        group,
        mtime,
        atime,
        replication,
        file,
        features,
        acl,
    })
}
