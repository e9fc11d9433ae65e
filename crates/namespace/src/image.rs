//! Checkpoint image encoding: the whole namespace as checksummed sections.
//!
//! Layout: `FERIMG01 | u64 txid | u32 crc32c of the 16 bytes before | sections… | END`. A section is
//! `u32 kind | u64 length | u32 crc32c | payload`. Inodes are written in pre-order with
//! children in name order, so loading appends each child to its parent and never sorts.

use std::collections::HashMap;
use std::io::{self, Seek, SeekFrom, Write};

use super::children::Children;
use super::inode::{
    Arena, Block, Body, Cut, FileData, Inode, Slot, UnderConstruction, ROOT_INODE_ID, ROOT_SLOT,
};
use super::names::{Interner, NameArena};
use super::Namespace;
use crate::codec::{DecodeError, Reader};

pub const MAGIC: &[u8; 8] = b"FERIMG02";
/// Images from before blocks existed: identical except that files never had blocks and
/// the meta section holds only the next inode id. Still read, so old data dirs open.
const MAGIC_V1: &[u8; 8] = b"FERIMG01";
const STRINGS: u32 = 1;
const INODES: u32 = 2;
const META: u32 = 3;
/// Inodes' optional parts (extended attributes), when any inode has some. Images from
/// before it have none.
const FEATURES: u32 = 4;
/// ACLs, when any inode has one: a section of their own, so images from before them
/// still read.
const ACLS: u32 = 5;
/// Directories' quotas, when any has one (their usage is counted again at load).
const QUOTAS: u32 = 6;
/// Cache pools and directives, when there are any: each as the record that sets it.
const CACHE: u32 = 7;
/// The snapshot sections (written and read by `snapshot/image.rs`): inodes only snapshots
/// list, and the snapshots themselves.
pub(super) const DETACHED: u32 = 8;
pub(super) const SNAPSHOTS: u32 = 9;
/// Snapshots: their kept inodes and their state (see `snapshot/image.rs`).
const END: u32 = 0xFFFF_FFFF;

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("not a Ferrite image (bad header)")]
    BadHeader,
    #[error("section {kind} at offset {offset}: checksum mismatch")]
    Checksum { kind: u32, offset: usize },
    #[error("section {kind}: {source}")]
    Decode {
        kind: u32,
        #[source]
        source: DecodeError,
    },
    #[error("image is inconsistent: {0}")]
    Invalid(String),
    #[error("image is missing its {0} section")]
    Missing(&'static str),
}

/// An open file's marker when a truncate waits for block recovery (1: open, 0: closed).
const UC_CUT: u8 = 2;

/// A truncate's cut: what the block keeps, then 0, or 1 and the block it copies.
fn put_cut(out: &mut Vec<u8>, cut: &Cut) {
    out.extend_from_slice(&cut.keep.to_le_bytes());
    match cut.copy_of {
        Some(b) => {
            out.push(1);
            for v in [b.id, b.gs, b.len] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        None => out.push(0),
    }
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s);
}

/// Payload bytes gathered before they are written out.
const CHUNK: usize = 1 << 20;

/// Writes one section whose payload `fill` produces a chunk at a time (it appends to the
/// buffer and says whether more follows). The header goes out as a placeholder and is
/// filled in once the payload's length and CRC are known. Returns the position after it.
fn write_section<W: Write + Seek>(
    w: &mut W,
    kind: u32,
    mut fill: impl FnMut(&mut Vec<u8>) -> bool,
) -> io::Result<u64> {
    let head_at = w.stream_position()?;
    w.write_all(&[0; 16])?;
    let (mut len, mut crc) = (0u64, 0u32);
    let mut buf = Vec::with_capacity(CHUNK + 4096);
    loop {
        let more = fill(&mut buf);
        crc = crc32c::crc32c_append(crc, &buf);
        len += buf.len() as u64;
        w.write_all(&buf)?;
        buf.clear();
        if !more {
            break;
        }
    }
    let end = head_at + 16 + len;
    let mut head = [0u8; 16];
    head[..4].copy_from_slice(&kind.to_le_bytes());
    head[4..12].copy_from_slice(&len.to_le_bytes());
    head[12..].copy_from_slice(&crc.to_le_bytes());
    w.seek(SeekFrom::Start(head_at))?;
    w.write_all(&head)?;
    w.seek(SeekFrom::Start(end))?;
    Ok(end)
}

impl Namespace {
    /// Encodes the whole namespace as of `txid`, in memory (tests and benchmarks; the
    /// NameNode streams its images with [`Namespace::write_image`]).
    pub fn encode_image(&self, txid: u64) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        self.write_image(txid, &mut out)
            .expect("writing to memory cannot fail");
        out.into_inner()
    }

    /// Streams the whole namespace as of `txid` into `w`, a section at a time in chunks
    /// of `CHUNK` bytes; returns the image's size.
    pub fn write_image<W: Write + Seek>(&self, txid: u64, w: &mut W) -> io::Result<u64> {
        let start = w.stream_position()?;
        let mut head = Vec::with_capacity(20);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&txid.to_le_bytes());
        let header_crc = crc32c::crc32c(&head);
        head.extend_from_slice(&header_crc.to_le_bytes());
        w.write_all(&head)?;

        let users = self.users.all();
        write_section(w, STRINGS, |out| {
            out.extend_from_slice(&(users.len() as u32).to_le_bytes());
            for u in users {
                put_str(out, u.as_bytes());
            }
            false
        })?;

        // Inodes only snapshots list are not in the live tree: a section of their own.
        let detached = self
            .has_snapshot_state()
            .then(|| self.encode_detached())
            .filter(|(_, n)| *n > 0);
        let live = self.arena.len() as u64 - detached.as_ref().map_or(0, |(_, n)| *n);
        let mut stack = vec![ROOT_SLOT];
        let mut first = true;
        write_section(w, INODES, |out| {
            if std::mem::take(&mut first) {
                out.extend_from_slice(&live.to_le_bytes());
            }
            while let Some(s) = stack.pop() {
                self.encode_inode(s, out);
                if let Some(children) = self.inode(s).children() {
                    // Reverse onto the stack so children come out in name order.
                    stack.extend(children.slots().rev());
                }
                if out.len() >= CHUNK {
                    return true;
                }
            }
            false
        })?;
        if let Some((payload, _)) = &detached {
            write_section(w, DETACHED, |out| {
                out.extend_from_slice(payload);
                false
            })?;
        }
        if self
            .features
            .values()
            .any(|f| !f.xattrs.is_empty() || f.storage_policy != 0)
        {
            write_section(w, FEATURES, |out| {
                self.encode_features(out);
                false
            })?;
        }
        if !self.acls.is_empty() {
            write_section(w, ACLS, |out| {
                self.encode_acls(out);
                false
            })?;
        }
        if self.quotas_set > 0 {
            write_section(w, QUOTAS, |out| {
                self.encode_quotas(out);
                false
            })?;
        }
        if self.cache != Default::default() {
            write_section(w, CACHE, |out| {
                self.encode_cache(out);
                false
            })?;
        }
        if self.has_snapshot_state() {
            write_section(w, SNAPSHOTS, |out| {
                self.encode_snapshots(out);
                false
            })?;
        }
        write_section(w, META, |out| {
            for v in [self.next_inode_id, self.next_block_id, self.next_gs] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            false
        })?;
        let end = write_section(w, END, |_| false)?;
        Ok(end - start)
    }

    /// `u32 count`, then per inode (by id, so an image's bytes do not depend on a hash
    /// table's order): `u64 id | u8 storage policy | u32 n | n × (u8 namespace | str name |
    /// u8 has value | [str value])`.
    fn encode_features(&self, out: &mut Vec<u8>) {
        let mut entries: Vec<(u64, &super::features::Features)> = self
            .features
            .iter()
            .filter(|(_, f)| !f.xattrs.is_empty() || f.storage_policy != 0)
            .map(|(&s, f)| (self.inode(s).id, f))
            .collect();
        entries.sort_unstable_by_key(|&(id, _)| id);
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for (id, f) in entries {
            out.extend_from_slice(&id.to_le_bytes());
            out.push(f.storage_policy);
            put_xattrs(out, &f.xattrs);
        }
    }

    /// `u32 count`, then per inode with an ACL (by id): `u64 id | u32 n | n × str entry`,
    /// each kept entry in HDFS's text form (the inode's permission is in its record).
    fn encode_acls(&self, out: &mut Vec<u8>) {
        let mut entries: Vec<(u64, &[super::acl::AclEntry])> = self
            .acls
            .iter()
            .map(|(s, acl)| (self.inode(s).id, acl))
            .collect();
        entries.sort_unstable_by_key(|&(id, _)| id);
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for (id, acl) in entries {
            out.extend_from_slice(&id.to_le_bytes());
            out.extend_from_slice(&(acl.len() as u32).to_le_bytes());
            for e in acl {
                put_str(out, e.to_string().as_bytes());
            }
        }
    }

    /// `u32 count`, then per directory with a quota (by id): `u64 id | i64 ns | i64 space
    /// | 6 × i64 by storage type` (-1: none). Usage is not stored: counted at load.
    fn encode_quotas(&self, out: &mut Vec<u8>) {
        let mut entries: Vec<(u64, &super::quota::Quota)> = self
            .features
            .iter()
            .filter_map(|(&s, f)| Some((self.inode(s).id, f.quota.as_deref()?)))
            .collect();
        entries.sort_unstable_by_key(|&(id, _)| id);
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for (id, q) in entries {
            out.extend_from_slice(&id.to_le_bytes());
            for v in [q.ns, q.space].iter().chain(&q.types) {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }

    fn load_quotas(
        &mut self,
        payload: &[u8],
        slot_of: &HashMap<u64, Slot>,
    ) -> Result<(), ImageError> {
        use super::quota::N_TYPES;
        let de = |e| ImageError::Decode {
            kind: QUOTAS,
            source: e,
        };
        let bad = |m: String| ImageError::Invalid(m);
        let mut r = Reader::new(payload);
        let count = r.u32().map_err(de)?;
        for _ in 0..count {
            let id = r.u64().map_err(de)?;
            let &slot = slot_of
                .get(&id)
                .ok_or_else(|| bad(format!("quota of inode {id}, which is not in the image")))?;
            let mut v = [0i64; 2 + N_TYPES];
            for x in &mut v {
                *x = r.u64().map_err(de)? as i64;
            }
            if !self.inode(slot).is_dir() || self.quota_of(slot).is_some() {
                return Err(bad(format!("inode {id}: a quota on a file, or twice")));
            }
            let types: [i64; N_TYPES] = v[2..].try_into().expect("N_TYPES values");
            self.set_quota_unchecked(slot, v[0], v[1], types);
        }
        self.count_all_quotas();
        Ok(())
    }

    /// `u64 next directive id | u32 n | n × (u32 len | record)`: each pool, then each
    /// directive, as the journal record that sets it (so one codec serves both).
    fn encode_cache(&self, out: &mut Vec<u8>) {
        let c = &self.cache;
        let records: Vec<Vec<u8>> = c
            .records()
            .map(|op| {
                let mut b = Vec::new();
                crate::codec::encode_op(&op, &mut b);
                b
            })
            .collect();
        out.extend_from_slice(&c.next_id.to_le_bytes());
        out.extend_from_slice(&(records.len() as u32).to_le_bytes());
        for r in records {
            put_str(out, &r[..]);
        }
    }

    fn load_cache(&mut self, payload: &[u8]) -> Result<(), ImageError> {
        let de = |e| ImageError::Decode {
            kind: CACHE,
            source: e,
        };
        let mut r = Reader::new(payload);
        let next_id = r.u64().map_err(de)?;
        let n = r.u32().map_err(de)? as usize;
        if n > r.remaining() / 5 {
            return Err(ImageError::Invalid(format!(
                "cache section claims {n} records"
            )));
        }
        for _ in 0..n {
            let len = r.u32().map_err(de)? as usize;
            let bytes = r.bytes(len).map_err(de)?;
            let op = crate::codec::decode_op(bytes).map_err(de)?;
            if !self.cache.apply(&op) {
                return Err(ImageError::Invalid(format!(
                    "cache section holds {}",
                    op.name()
                )));
            }
        }
        self.cache.next_id = self.cache.next_id.max(next_id);
        Ok(())
    }

    fn load_acls(
        &mut self,
        payload: &[u8],
        slot_of: &HashMap<u64, Slot>,
    ) -> Result<(), ImageError> {
        let de = |e| ImageError::Decode {
            kind: ACLS,
            source: e,
        };
        let bad = |m: String| ImageError::Invalid(m);
        let mut r = Reader::new(payload);
        let count = r.u32().map_err(de)?;
        for _ in 0..count {
            let id = r.u64().map_err(de)?;
            let &slot = slot_of
                .get(&id)
                .ok_or_else(|| bad(format!("ACL of inode {id}, which is not in the image")))?;
            let n = r.u32().map_err(de)? as usize;
            // Each entry takes at least its length and 3 bytes ("::x" at the least).
            if n == 0 || n > r.remaining() / 7 {
                return Err(bad(format!("inode {id} claims {n} ACL entries")));
            }
            let mut kept = Vec::with_capacity(n);
            for _ in 0..n {
                let text = r.str().map_err(de)?;
                let e = super::acl::AclEntry::parse(&text, true)
                    .map_err(|e| bad(format!("inode {id}: ACL entry {text:?}: {e}")))?;
                kept.push(e);
            }
            if self.has_acl(slot) {
                return Err(bad(format!("inode {id}'s ACL appears twice")));
            }
            self.put_acl(slot, kept);
        }
        Ok(())
    }

    fn load_features(
        &mut self,
        payload: &[u8],
        slot_of: &HashMap<u64, Slot>,
    ) -> Result<(), ImageError> {
        use super::features::Features;
        let de = |e| ImageError::Decode {
            kind: FEATURES,
            source: e,
        };
        let bad = |m: String| ImageError::Invalid(m);
        let mut r = Reader::new(payload);
        let count = r.u32().map_err(de)?;
        for _ in 0..count {
            let id = r.u64().map_err(de)?;
            let &slot = slot_of.get(&id).ok_or_else(|| {
                bad(format!(
                    "attributes of inode {id}, which is not in the image"
                ))
            })?;
            let storage_policy = r.u8().map_err(de)?;
            if storage_policy != super::storage_policy::UNSPECIFIED
                && super::storage_policy::by_id(storage_policy).is_none()
            {
                return Err(bad(format!("inode {id}: storage policy {storage_policy}")));
            }
            let xattrs =
                read_xattrs(&mut r, FEATURES).map_err(|e| bad(format!("inode {id}: {e}")))?;
            if storage_policy != super::storage_policy::UNSPECIFIED {
                self.policies_set += 1;
            }
            let f = Features {
                xattrs,
                storage_policy,
                quota: None,
            };
            if self.features.insert(slot, f).is_some() {
                return Err(bad(format!("inode {id}'s attributes appear twice")));
            }
        }
        Ok(())
    }

    pub(super) fn encode_inode(&self, s: Slot, out: &mut Vec<u8>) {
        let i = self.inode(s);
        let parent_id = if s == ROOT_SLOT {
            0
        } else {
            self.inode(i.parent).id
        };
        out.extend_from_slice(&i.id.to_le_bytes());
        out.extend_from_slice(&parent_id.to_le_bytes());
        put_str(out, self.name(s));
        out.extend_from_slice(&i.perm.to_le_bytes());
        out.extend_from_slice(&i.owner.to_le_bytes());
        out.extend_from_slice(&i.group.to_le_bytes());
        out.extend_from_slice(&i.mtime.to_le_bytes());
        out.extend_from_slice(&i.atime.to_le_bytes());
        match &i.body {
            Body::Dir(_) => out.push(0),
            Body::File(f) => {
                out.push(1);
                out.extend_from_slice(&f.len().to_le_bytes());
                out.extend_from_slice(&f.block_size.to_le_bytes());
                out.extend_from_slice(&i.replication.to_le_bytes());
                out.extend_from_slice(&(f.blocks().len() as u32).to_le_bytes());
                for b in f.blocks() {
                    for v in [b.id, b.gs, b.len] {
                        out.extend_from_slice(&v.to_le_bytes());
                    }
                }
                match f.uc() {
                    Some(uc) => {
                        out.push(if uc.cut.is_some() { UC_CUT } else { 1 });
                        put_str(out, uc.client_name.as_bytes());
                        put_str(out, uc.client_machine.as_bytes());
                        if let Some(cut) = &uc.cut {
                            put_cut(out, cut);
                        }
                    }
                    None => out.push(0),
                }
            }
        }
    }

    /// Decodes an image, verifying every section's checksum. Returns the namespace and the
    /// txid it reflects.
    pub fn decode_image(bytes: &[u8]) -> Result<(Namespace, u64), ImageError> {
        Self::decode_image_with(bytes, &mut |_, _| {})
    }

    /// [`decode_image`](Self::decode_image), telling `on_inodes` (inodes loaded, inodes in
    /// the image) as it goes, for start-up progress.
    pub fn decode_image_with(
        bytes: &[u8],
        on_inodes: &mut dyn FnMut(u64, u64),
    ) -> Result<(Namespace, u64), ImageError> {
        if bytes.len() < 20 || (&bytes[..8] != MAGIC && &bytes[..8] != MAGIC_V1) {
            return Err(ImageError::BadHeader);
        }
        if crc32c::crc32c(&bytes[..16])
            != u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes"))
        {
            return Err(ImageError::BadHeader);
        }
        let txid = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
        let mut r = Reader::new(&bytes[20..]);
        let mut sections: HashMap<u32, &[u8]> = HashMap::new();
        loop {
            let offset = bytes.len() - r.remaining();
            let head = |e| ImageError::Decode { kind: 0, source: e };
            let kind = r.u32().map_err(head)?;
            let len = r.u64().map_err(head)? as usize;
            let crc = r.u32().map_err(head)?;
            let payload = r
                .bytes(len)
                .map_err(|e| ImageError::Decode { kind, source: e })?;
            if crc32c::crc32c(payload) != crc {
                return Err(ImageError::Checksum { kind, offset });
            }
            if kind == END {
                break;
            }
            // A kind this build does not know is damage, or an image from a newer build
            // whose section would be dropped unread: either way, refuse it.
            let known = [STRINGS, INODES, META, FEATURES, ACLS, QUOTAS, CACHE];
            if !known.contains(&kind) && kind != DETACHED && kind != SNAPSHOTS {
                return Err(ImageError::Invalid(format!(
                    "unknown section kind {kind} at offset {offset}"
                )));
            }
            if sections.insert(kind, payload).is_some() {
                return Err(ImageError::Invalid(format!("section {kind} appears twice")));
            }
        }
        let strings = sections
            .get(&STRINGS)
            .ok_or(ImageError::Missing("strings"))?;
        let inodes = sections.get(&INODES).ok_or(ImageError::Missing("inodes"))?;
        let meta = sections.get(&META).ok_or(ImageError::Missing("meta"))?;
        let mut ns = Namespace {
            arena: Arena::default(),
            open_files: Default::default(),
            names: NameArena::default(),
            name_move: None,
            retired_names: Vec::new(),
            users: Interner::default(),
            block_files: Default::default(),
            next_inode_id: 0,
            next_block_id: 0,
            next_gs: 0,
            files: 0,
            dirs: 0,
            limits: Default::default(),
            features: Default::default(),
            policies_set: 0,
            acls: Default::default(),
            quotas_set: 0,
            cache: Default::default(),
            snaps: Default::default(),
        };
        let de = |kind| move |e| ImageError::Decode { kind, source: e };
        let mut sr = Reader::new(strings);
        let n = sr.u32().map_err(de(STRINGS))?;
        for _ in 0..n {
            let s = sr.str().map_err(de(STRINGS))?;
            ns.users.intern(&s);
        }
        let mut slot_of = ns.load_inodes(inodes, on_inodes)?;
        if let Some(detached) = sections.get(&DETACHED) {
            ns.load_detached(detached, &mut slot_of)?;
        }
        if let Some(features) = sections.get(&FEATURES) {
            ns.load_features(features, &slot_of)?;
        }
        if let Some(acls) = sections.get(&ACLS) {
            ns.load_acls(acls, &slot_of)?;
        }
        if let Some(quotas) = sections.get(&QUOTAS) {
            ns.load_quotas(quotas, &slot_of)?;
        }
        if let Some(cache) = sections.get(&CACHE) {
            ns.load_cache(cache)?;
        }
        if let Some(snapshots) = sections.get(&SNAPSHOTS) {
            ns.load_snapshots(snapshots, &slot_of)?;
        }
        drop(slot_of);
        let mut mr = Reader::new(meta);
        ns.next_inode_id = mr.u64().map_err(de(META))?;
        if mr.remaining() == 0 {
            (ns.next_block_id, ns.next_gs) = (super::FIRST_BLOCK_ID, super::FIRST_GENERATION_STAMP);
        } else {
            ns.next_block_id = mr.u64().map_err(de(META))?;
            ns.next_gs = mr.u64().map_err(de(META))?;
        }
        Ok((ns, txid))
    }

    fn load_inodes(
        &mut self,
        payload: &[u8],
        on_inodes: &mut dyn FnMut(u64, u64),
    ) -> Result<HashMap<u64, Slot>, ImageError> {
        /// Inodes between two progress reports: at about a million inodes a second, some
        /// fifteen reports a second, each an atomic store.
        const STRIDE: u64 = 1 << 16;
        let de = |e| ImageError::Decode {
            kind: INODES,
            source: e,
        };
        let bad = |m: String| ImageError::Invalid(m);
        let mut r = Reader::new(payload);
        let count = r.u64().map_err(de)?;
        // Every inode takes at least MIN_INODE bytes: a lying count cannot make us reserve
        // more than the section could hold.
        const MIN_INODE: usize = 47;
        let fits = (payload.len() / MIN_INODE) as u64;
        let mut slot_of: HashMap<u64, Slot> = HashMap::with_capacity(count.min(fits) as usize);
        let users = self.users.len() as u32;
        for k in 0..count {
            if k.is_multiple_of(STRIDE) {
                on_inodes(k, count);
            }
            let (id, parent_id, name, inode) = read_inode(&mut r, users, INODES)?;
            if k == 0 {
                if id != ROOT_INODE_ID || parent_id != 0 {
                    return Err(bad("the first inode is not the root".into()));
                }
                slot_of.insert(id, self.arena.insert(inode));
                self.dirs += 1;
                continue;
            }
            let &parent = slot_of
                .get(&parent_id)
                .ok_or_else(|| bad(format!("inode {id} comes before its parent {parent_id}")))?;
            let slot = self.attach_loaded(parent, parent_id, name, inode)?;
            slot_of.insert(id, slot);
            if self.arena.get(slot).is_dir() {
                self.dirs += 1;
            } else {
                self.files += 1;
            }
            if self
                .arena
                .get(slot)
                .file()
                .is_some_and(|f| f.uc().is_some())
            {
                self.open_files.insert(id, slot);
            }
        }
        if r.remaining() != 0 {
            return Err(bad(format!("{} bytes after the last inode", r.remaining())));
        }
        on_inodes(count, count);
        Ok(slot_of)
    }
}

impl Namespace {
    /// Puts a loaded inode into the arena as the last child of `parent` (children come in
    /// name order), registering its blocks.
    pub(super) fn attach_loaded(
        &mut self,
        parent: Slot,
        parent_id: u64,
        name: &[u8],
        mut inode: Inode,
    ) -> Result<Slot, ImageError> {
        let id = inode.id;
        let bad = |m: String| ImageError::Invalid(m);
        let Some(siblings) = self.arena.get(parent).children() else {
            return Err(bad(format!("inode {id}'s parent {parent_id} is a file")));
        };
        if let Some(last) = siblings.last() {
            if self.name(last) >= name {
                return Err(bad(format!(
                    "children of inode {parent_id} are out of order"
                )));
            }
        }
        inode.name = self.names.add(name);
        inode.parent = parent;
        let slot = self.arena.insert(inode);
        self.edit_children(parent, |c, ns| c.push(slot, name, |s| ns.name(s)));
        self.register_blocks(slot);
        Ok(slot)
    }

    /// A loaded file's blocks join the block → file map.
    pub(super) fn register_blocks(&mut self, slot: Slot) {
        if let Some(f) = self.arena.get(slot).file() {
            for (i, b) in f.blocks().iter().enumerate() {
                self.block_files.insert(b.id, (slot, i as u32));
            }
        }
    }
}

/// `u32 n | n × (u8 namespace | str name | u8 has value | [str value])`: an inode's xattrs
/// (the FEATURES section's, and a snapshot version's).
pub(super) fn put_xattrs(out: &mut Vec<u8>, xattrs: &[super::xattr::XAttr]) {
    out.extend_from_slice(&(xattrs.len() as u32).to_le_bytes());
    for x in xattrs {
        out.push(x.ns as u8);
        put_str(out, x.name.as_bytes());
        match &x.value {
            Some(v) => {
                out.push(1);
                put_str(out, v);
            }
            None => out.push(0),
        }
    }
}

pub(super) fn read_xattrs(
    r: &mut Reader<'_>,
    kind: u32,
) -> Result<Vec<super::xattr::XAttr>, ImageError> {
    use super::xattr::{XAttr, XAttrNs};
    let de = |e| ImageError::Decode { kind, source: e };
    let n = r.u32().map_err(de)? as usize;
    // Each attribute takes at least 6 bytes.
    if n > r.remaining() / 6 {
        return Err(ImageError::Invalid(format!("{n} attributes claimed")));
    }
    let mut xattrs = Vec::with_capacity(n);
    for _ in 0..n {
        let ns = r.u8().map_err(de)?;
        let ns = XAttrNs::from_u8(ns)
            .ok_or_else(|| ImageError::Invalid(format!("xattr namespace {ns}")))?;
        let name = r.str().map_err(de)?;
        let value = match r.u8().map_err(de)? {
            0 => None,
            _ => {
                let len = r.u32().map_err(de)? as usize;
                Some(r.bytes(len).map_err(de)?.to_vec())
            }
        };
        xattrs.push(XAttr { ns, name, value });
    }
    Ok(xattrs)
}

fn read_cut(r: &mut Reader<'_>) -> Result<Cut, DecodeError> {
    let keep = r.u64()?;
    let copy_of = match r.u8()? {
        0 => None,
        _ => Some(Block {
            id: r.u64()?,
            gs: r.u64()?,
            len: r.u64()?,
        }),
    };
    Ok(Cut { keep, copy_of })
}

/// One inode record (the INODES section's, also the DETACHED section's): its id, its
/// parent's id, its name, and the inode (name and parent left for the caller).
pub(super) fn read_inode<'a>(
    r: &mut Reader<'a>,
    users: u32,
    kind: u32,
) -> Result<(u64, u64, &'a [u8], Inode), ImageError> {
    let de = |e| ImageError::Decode { kind, source: e };
    let bad = |m: String| ImageError::Invalid(m);
    let id = r.u64().map_err(de)?;
    let parent_id = r.u64().map_err(de)?;
    let n = r.u32().map_err(de)? as usize;
    let name = r.bytes(n).map_err(de)?;
    let perm = r.u16().map_err(de)?;
    let owner = r.u32().map_err(de)?;
    let group = r.u32().map_err(de)?;
    let mtime = r.i64().map_err(de)?;
    let atime = r.i64().map_err(de)?;
    if owner >= users || group >= users {
        return Err(bad(format!(
            "inode {id} names owner/group {owner}/{group} of {users} strings"
        )));
    }
    let mut replication = 0;
    let body = match r.u8().map_err(de)? {
        0 => Body::Dir(Children::default()),
        1 => {
            let len = r.u64().map_err(de)?;
            let block_size = r.u64().map_err(de)?;
            replication = r.u16().map_err(de)?;
            let nb = r.u32().map_err(de)? as usize;
            if nb > r.remaining() / 24 {
                return Err(bad(format!("inode {id} claims {nb} blocks")));
            }
            let blocks = (0..nb)
                .map(|_| {
                    Ok(Block {
                        id: r.u64()?,
                        gs: r.u64()?,
                        len: r.u64()?,
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(de)?;
            let uc = match r.u8().map_err(de)? {
                0 => None,
                open => Some(UnderConstruction {
                    client_name: r.str().map_err(de)?,
                    client_machine: r.str().map_err(de)?,
                    cut: match open {
                        // Open for write, or (2) waiting for a truncate's block recovery.
                        UC_CUT => Some(read_cut(r).map_err(de)?),
                        _ => None,
                    },
                }),
            };
            Body::File(FileData::new(len, block_size, blocks, uc))
        }
        t => return Err(bad(format!("inode {id} has kind {t}"))),
    };
    Ok((
        id,
        parent_id,
        name,
        Inode {
            id,
            mtime,
            atime,
            body,
            name: Default::default(),
            parent: ROOT_SLOT,
            owner,
            group,
            perm,
            replication,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{NewBlock, Previous};
    use crate::plan::CreateArgs;
    use crate::{Caller, Op};

    fn sample() -> Namespace {
        let su = Caller::superuser("hdfs");
        let mut ns = Namespace::new("hdfs", "supergroup", 1);
        for p in ["/a/b/c", "/a/z", "/user/alice/.Trash"] {
            for op in ns.plan_mkdirs(&su, p, 0o755, true, 7).unwrap().ops {
                ns.apply(&op).unwrap();
            }
        }
        for (i, p) in ["/a/f", "/a/b/g", "/open"].iter().enumerate() {
            let args = CreateArgs {
                src: p,
                masked: 0o640,
                unmasked: None,
                client_name: "c",
                client_machine: "m",
                create: true,
                overwrite: false,
                create_parent: true,
                replication: 2,
                block_size: 1 << 20,
            };
            for op in ns.plan_create(&su, &args, 9).unwrap().ops {
                ns.apply(&op).unwrap();
            }
            // /a/b/g gets one block; /open two, the second still being written.
            let mut last = None;
            for _ in 0..i {
                let (nb, planned) = ns.plan_add_block(p, "c", 0, last).unwrap();
                planned
                    .ops
                    .iter()
                    .for_each(|op| drop(ns.apply(op).unwrap()));
                let (NewBlock::Fresh(b) | NewBlock::Retry(b)) = nb;
                last = Some(Previous {
                    id: b.block.id,
                    gs: b.block.gs,
                    len: 1 << 20,
                });
            }
            if i < 2 {
                for op in ns
                    .plan_complete(p, "c", 0, last, 10, |_| true)
                    .unwrap()
                    .1
                    .ops
                {
                    ns.apply(&op).unwrap();
                }
            }
        }
        for op in ns
            .plan_set_owner(&su, "/a/f", Some("alice"), Some("staff"))
            .unwrap()
        {
            ns.apply(&op).unwrap();
        }
        use crate::xattr::{XAttr, XAttrLimits, XAttrNs, XATTR_CREATE};
        for (path, ns_, name, value) in [
            ("/a/f", XAttrNs::User, "colour", Some(vec![0u8, 1, 255])),
            ("/a/f", XAttrNs::Trusted, "t", None),
            ("/a", XAttrNs::User, "d", Some(b"dir".to_vec())),
        ] {
            let x = XAttr {
                ns: ns_,
                name: name.into(),
                value,
            };
            for op in ns
                .plan_set_xattr(&su, path, x, XATTR_CREATE, XAttrLimits::default())
                .unwrap()
            {
                ns.apply(&op).unwrap();
            }
        }
        use crate::acl::AclEntry;
        use crate::acl_ops::AclChange;
        for (path, spec) in [
            ("/a/z", "default:user:alice:rwx,user:bob:r-x"),
            ("/a/f", "user:alice:rw-,mask::r--"),
        ] {
            let spec = spec
                .split(',')
                .map(|e| AclEntry::parse(e, true).unwrap())
                .collect();
            for op in ns
                .plan_acl_change(&su, path, AclChange::Modify(spec), true)
                .unwrap()
            {
                ns.apply(&op).unwrap();
            }
        }
        let pool = crate::cache::PoolChange {
            name: "pool".into(),
            ..Default::default()
        };
        let op = ns.cache.plan_add_pool(&su, pool).unwrap();
        ns.apply(&op).unwrap();
        let d = crate::cache::DirectiveChange {
            path: Some("/a/f".into()),
            pool: Some("pool".into()),
            ..Default::default()
        };
        let (_, op) = ns.cache.plan_add_directive(&su, d, 5).unwrap();
        ns.apply(&op).unwrap();
        // Inherited from /a/z's default ACL.
        for op in ns
            .plan_mkdirs(&su, "/a/z/inherits", 0o755, false, 11)
            .unwrap()
            .ops
        {
            ns.apply(&op).unwrap();
        }
        ns
    }

    #[test]
    fn image_round_trips_exactly() {
        let ns = sample();
        let img = ns.encode_image(42);
        let (back, txid) = Namespace::decode_image(&img).unwrap();
        assert_eq!(txid, 42);
        assert_eq!(back.dump(), ns.dump());
        assert_eq!(
            (back.file_count(), back.dir_count(), back.next_inode_id()),
            (ns.file_count(), ns.dir_count(), ns.next_inode_id())
        );
        assert_eq!(back.open_files().count(), 1);
        assert_eq!(back.block_count(), 3);
        assert_eq!(back.next_block(), ns.next_block());
        let g = back.existing("/a/b/g").unwrap();
        assert_eq!(back.block_range(g, 0, u64::MAX).file_len, 1 << 20);
        let open = back.existing("/open").unwrap();
        assert_eq!(back.block_range(open, 0, u64::MAX).blocks.len(), 2);
        let g_live = ns.existing("/a/b/g").unwrap();
        assert_eq!(back.block_file(ns.last_block(g_live).unwrap().id), Some(g));
        let f = back.existing("/a/f").unwrap();
        assert_eq!(
            back.xattrs_of(f).len(),
            2,
            "the dump compares them; this says it saw some"
        );
        assert!(back.has_acl(back.existing("/a/z/inherits").unwrap()));
        assert_eq!(back.cache, ns.cache);
        assert_eq!(back.cache.directives.len(), 1);
        assert!(ns.dump().contains("acl=user:alice:rw-"), "{}", ns.dump());
        // Encoding again gives the same bytes: the features section has a fixed order.
        assert_eq!(back.encode_image(42), img);
    }

    /// After a recovery that skipped records, ids they could have handed out stay unused,
    /// across the image recovery then writes.
    #[test]
    fn reserved_ids_are_kept_by_the_image() {
        let mut ns = sample();
        let ((block, gs), inode) = (ns.next_block(), ns.next_inode_id());
        ns.reserve_ids(5);
        let (back, _) = Namespace::decode_image(&ns.encode_image(7)).unwrap();
        assert_eq!(back.next_block(), (block + 5, gs + 5));
        assert_eq!(back.next_inode_id(), inode + 5);
    }

    #[test]
    fn an_image_streamed_in_many_chunks_round_trips() {
        // Enough inodes for the inode section to span several chunks, each with its own
        // write; the header's length and CRC must cover them all.
        let mut ns = sample();
        let mkdir = |path: String, id: u64| Op::Mkdir {
            path,
            id,
            perm: 0o755,
            owner: "hdfs".into(),
            group: "supergroup".into(),
            mtime: id as i64,
        };
        ns.apply(&mkdir("/many".into(), 99_000)).unwrap();
        for d in 0..100 {
            ns.apply(&mkdir(format!("/many/d{d:03}"), 99_001 + d))
                .unwrap();
        }
        for i in 0..40_000u64 {
            let path = format!("/many/d{:03}/entry-{i:06}", i % 100);
            ns.apply(&mkdir(path, 100_000 + i)).unwrap();
        }
        let img = ns.encode_image(7);
        assert!(img.len() > 2 * CHUNK, "{} bytes", img.len());
        let (back, txid) = Namespace::decode_image(&img).unwrap();
        assert_eq!(txid, 7);
        assert_eq!(back.dump(), ns.dump());
        let mut damaged = img.clone();
        damaged[img.len() / 2] ^= 1;
        assert!(matches!(
            Namespace::decode_image(&damaged),
            Err(ImageError::Checksum { kind: INODES, .. })
        ));
    }

    /// Rewrites a block-free image in the first format (old magic, 8-byte meta section).
    fn as_v1(img: &[u8]) -> Vec<u8> {
        let mut out = MAGIC_V1.to_vec();
        out.extend_from_slice(&img[8..16]);
        out.extend_from_slice(&crc32c::crc32c(&out[..16]).to_le_bytes());
        let mut r = Reader::new(&img[20..]);
        loop {
            let kind = r.u32().unwrap();
            let len = r.u64().unwrap() as usize;
            r.u32().unwrap();
            let mut payload = r.bytes(len).unwrap().to_vec();
            if kind == META {
                payload.truncate(8);
            }
            out.extend_from_slice(&kind.to_le_bytes());
            out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
            out.extend_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
            out.extend_from_slice(&payload);
            if kind == END {
                return out;
            }
        }
    }

    #[test]
    fn images_from_before_blocks_still_load() {
        let ns = Namespace::new("hdfs", "supergroup", 1);
        let (back, _) = Namespace::decode_image(&as_v1(&ns.encode_image(5))).unwrap();
        assert_eq!(back.dump(), ns.dump());
        assert_eq!(
            back.next_block(),
            (
                super::super::FIRST_BLOCK_ID,
                super::super::FIRST_GENERATION_STAMP
            )
        );
    }

    #[test]
    fn every_damage_is_caught() {
        let img = sample().encode_image(1);
        for i in (0..img.len()).step_by(7) {
            let mut bad = img.clone();
            bad[i] ^= 0x01;
            assert!(
                Namespace::decode_image(&bad).is_err(),
                "flip at {i} undetected"
            );
        }
        for cut in [10, 30, img.len() / 2, img.len() - 1] {
            assert!(Namespace::decode_image(&img[..cut]).is_err());
        }
    }
}
