//! Applying operation records to the tree: [`Namespace::apply_at`] dispatches each record
//! to its step. The same steps run for live calls, journal replay and followers, and they
//! consult no clock and no configuration: everything they need is in the record.

use super::inode::{self, Block, Body, Cut, FileData, Slot, UnderConstruction, ROOT_SLOT};
use super::{At, Children, Effects, Namespace, Op};
use crate::error::FsError;

impl Namespace {
    /// [`apply`](Self::apply) where the record's plan has just found the inodes it touches:
    /// `at` stands in for walking its paths.
    pub fn apply_at(&mut self, op: &Op, at: At) -> Result<Effects, FsError> {
        // Quota usage follows every change; with no quota anywhere this costs nothing.
        let pending = self.quota_before(op, at);
        let fx = self.apply_record(op, at)?;
        self.quota_after(pending, fx.created);
        Ok(fx)
    }

    fn apply_record(&mut self, op: &Op, at: At) -> Result<Effects, FsError> {
        let mut fx = Effects::default();
        if !self.snaps.idle() {
            self.preserve_changed(op, at)?;
            if matches!(
                op,
                Op::Delete { .. }
                    | Op::Rename { .. }
                    | Op::Truncate { .. }
                    | Op::CopyOnTruncate { .. }
                    | Op::Concat { .. }
                    | Op::SetReplication { .. }
                    | Op::DeleteSnapshot { .. }
                    | Op::DisallowSnapshot { .. }
            ) {
                self.snaps.forget_usage();
            }
        }
        match op {
            Op::Mkdir {
                path,
                id,
                perm,
                owner,
                group,
                mtime,
            } => {
                let (parent, name) = self.parent_and_name(path, at.slot)?;
                let body = Body::Dir(Children::default());
                let slot = self.add_child(parent, name, *id, *perm, owner, group, *mtime, body)?;
                self.note_child_added(parent, slot);
                if !self.acls.is_empty() {
                    self.inherit_default_acl(parent, slot);
                }
                fx.created = Some(slot);
                self.dirs += 1;
            }
            Op::Create { .. } => self.apply_create(op, at, &mut fx)?,
            Op::AddBlock {
                path,
                id,
                gs,
                prev_len,
            } => self.apply_add_block(
                path,
                at,
                Block {
                    id: *id,
                    gs: *gs,
                    len: 0,
                },
                *prev_len,
            )?,
            Op::BumpGenerationStamp { path, id, gs } => self.apply_bump_gs(path, at, *id, *gs)?,
            Op::AbandonBlock { path, id } => self.apply_abandon_block(path, at, *id, &mut fx)?,
            Op::Close { path, mtime, len } => self.apply_close(path, at, *mtime, *len, &mut fx)?,
            Op::Rename {
                src,
                dst,
                mtime,
                overwrite,
            } => self.apply_rename((src, dst), at, *mtime, *overwrite, &mut fx)?,
            Op::Delete { path, mtime } => self.apply_delete(path, at, *mtime, &mut fx)?,
            Op::SetXAttr {
                path,
                ns,
                name,
                value,
            } => {
                let slot = self.existing_at(path, at.slot)?;
                let ns = xattr_ns(*ns)?;
                self.apply_set_xattr(
                    slot,
                    super::xattr::XAttr {
                        ns,
                        name: name.clone(),
                        value: value.clone(),
                    },
                );
            }
            Op::SetStoragePolicy { path, policy } => {
                let slot = self.existing_at(path, at.slot)?;
                if *policy != super::storage_policy::UNSPECIFIED
                    && super::storage_policy::by_id(*policy).is_none()
                {
                    return Err(FsError::misfit(format!(
                        "storage policy {policy} does not exist"
                    )));
                }
                self.apply_storage_policy(slot, *policy);
            }
            Op::SetAcl {
                path,
                perm,
                entries,
            } => {
                let slot = self.existing_at(path, at.slot)?;
                self.apply_set_acl(slot, *perm, entries)?;
            }
            Op::SetQuota { path, ns, space } => {
                let slot = self.existing_at(path, at.slot)?;
                let types = self
                    .quota_of(slot)
                    .map_or([super::quota::NONE; super::quota::N_TYPES], |q| q.types);
                self.apply_quota(slot, *ns, *space, types);
            }
            Op::SetTypeQuota {
                path,
                storage_type,
                quota,
            } => {
                let slot = self.existing_at(path, at.slot)?;
                let i = super::quota::type_index(*storage_type)
                    .ok_or_else(|| FsError::misfit(format!("storage type {storage_type}")))?;
                let none = super::quota::NONE;
                let (ns, space, mut types) = self
                    .quota_of(slot)
                    .map_or((none, none, [none; super::quota::N_TYPES]), |q| {
                        (q.ns, q.space, q.types)
                    });
                types[i] = *quota;
                self.apply_quota(slot, ns, space, types);
            }
            Op::RemoveXAttr { path, ns, name } => {
                let slot = self.existing_at(path, at.slot)?;
                self.apply_remove_xattr(slot, xattr_ns(*ns)?, name);
            }
            Op::SetPermission { path, perm } => {
                let slot = self.existing_at(path, at.slot)?;
                self.arena.get_mut(slot).perm = *perm & inode::PERM_MASK;
            }
            Op::SetOwner { path, owner, group } => {
                let slot = self.existing_at(path, at.slot)?;
                let owner = owner.as_deref().map(|o| self.users.intern(o));
                let group = group.as_deref().map(|g| self.users.intern(g));
                let inode = self.arena.get_mut(slot);
                inode.owner = owner.unwrap_or(inode.owner);
                inode.group = group.unwrap_or(inode.group);
            }
            Op::SetTimes { path, mtime, atime } => {
                let slot = self.existing_at(path, at.slot)?;
                let inode = self.arena.get_mut(slot);
                inode.mtime = mtime.unwrap_or(inode.mtime);
                inode.atime = atime.unwrap_or(inode.atime);
            }
            Op::SetReplication { path, replication } => {
                let slot = self.existing_at(path, at.slot)?;
                match &mut self.arena.get_mut(slot).body {
                    Body::File(_) => self.arena.get_mut(slot).replication = *replication,
                    Body::Dir(_) => return Err(FsError::misfit(format!("{path} is a directory"))),
                }
            }
            Op::SetGenerationStamp { gs } => self.next_gs = self.next_gs.max(gs + 1),
            // For the retry cache (the NameNode reads it as it replays), not the tree.
            Op::RetryId { .. } => {}
            Op::ReassignLease {
                path,
                holder,
                new_holder,
            } => {
                let slot = self.existing_at(path, at.slot)?;
                let uc = self
                    .open_file_data(slot, path)?
                    .uc_mut()
                    .expect("an open file");
                if uc.client_name != *holder {
                    return Err(FsError::misfit(format!(
                        "reassignLease of {path}: held by {}, not {holder}",
                        uc.client_name
                    )));
                }
                uc.client_name.clone_from(new_holder);
            }
            Op::SetCachePool { .. }
            | Op::RemoveCachePool { .. }
            | Op::SetCacheDirective { .. }
            | Op::RemoveCacheDirective { .. } => {
                self.cache.apply(op);
            }
            Op::Truncate {
                path,
                len,
                mtime,
                client_name,
                client_machine,
                cut,
            } => {
                let slot = self.existing_at(path, at.slot)?;
                self.apply_truncate(slot, path, *len, *cut, &mut fx)?;
                let inode = self.arena.get_mut(slot);
                inode.mtime = *mtime;
                if let Some((keep, _)) = *cut {
                    let cut = Cut {
                        keep,
                        copy_of: None,
                    };
                    self.reopen(slot, client_name, client_machine, Some(cut));
                }
            }
            Op::Concat {
                target,
                srcs,
                mtime,
            } => self.apply_concat(target, srcs, at, *mtime, &mut fx)?,
            Op::Append {
                path,
                client_name,
                client_machine,
                ..
            } => {
                let slot = self.existing_at(path, at.slot)?;
                if !matches!(&self.arena.get(slot).body, Body::File(f) if f.uc().is_none()) {
                    return Err(FsError::misfit(format!("{path} is not a closed file")));
                }
                self.reopen(slot, client_name, client_machine, None);
            }
            Op::AllowSnapshot { .. }
            | Op::DisallowSnapshot { .. }
            | Op::CreateSnapshot { .. }
            | Op::DeleteSnapshot { .. }
            | Op::RenameSnapshot { .. } => self.apply_snapshot_op(op, &mut fx)?,
            Op::CopyOnTruncate { path, id, gs } => {
                self.apply_copy_on_truncate(path, at, *id, *gs, &mut fx)?
            }
            Op::UpdateLastBlock { path, id, gs, len } => self.apply_update_last_block(
                path,
                at,
                Block {
                    id: *id,
                    gs: *gs,
                    len: *len,
                },
            )?,
        }
        self.step_name_move();
        for (id, _) in &fx.closed_files {
            self.open_files.remove(id);
        }
        Ok(fx)
    }

    /// A new file open for write, replacing a file (never a directory) of the same name.
    fn apply_create(&mut self, op: &Op, at: At, fx: &mut Effects) -> Result<(), FsError> {
        let Op::Create {
            path,
            id,
            perm,
            owner,
            group,
            mtime,
            replication,
            block_size,
            client_name,
            client_machine,
        } = op
        else {
            return Err(FsError::misfit(format!("not a create: {op:?}")));
        };
        let (parent, name) = self.parent_and_name(path, at.slot)?;
        if let Some(old) = self.child(parent, name.as_bytes()) {
            if self.arena.get(old).is_dir() {
                return Err(FsError::AlreadyExists(format!(
                    "{path} already exists as a directory"
                )));
            }
            self.drop_child(parent, old, fx);
        }
        let uc = UnderConstruction {
            client_name: client_name.clone(),
            client_machine: client_machine.clone(),
            cut: None,
        };
        let body = Body::File(FileData::new(0, *block_size, Vec::new(), Some(uc)));
        let slot = self.add_child(parent, name, *id, *perm, owner, group, *mtime, body)?;
        self.note_child_added(parent, slot);
        if !self.acls.is_empty() {
            self.inherit_default_acl(parent, slot);
        }
        self.arena.get_mut(slot).replication = *replication;
        self.open_files.insert(*id, slot);
        fx.created = Some(slot);
        self.files += 1;
        Ok(())
    }

    /// A new last block for an open file; the block before it is finished at `prev_len`.
    fn apply_add_block(
        &mut self,
        path: &str,
        at: At,
        block: Block,
        prev_len: u64,
    ) -> Result<(), FsError> {
        let slot = self.existing_at(path, at.slot)?;
        let f = self.open_file_data(slot, path)?;
        let blocks = f.blocks_mut();
        // The file grows by what the previous block turned out to hold (its recorded
        // length was 0 while it was being written).
        let mut was = 0;
        if let Some(prev) = blocks.last_mut() {
            was = prev.len;
            prev.len = prev_len;
        }
        let index = blocks.len() as u32;
        blocks.push(block);
        f.set_len(f.len().saturating_sub(was) + prev_len);
        self.block_files.insert(block.id, (slot, index));
        self.next_block_id = self.next_block_id.max(block.id + 1);
        self.next_gs = self.next_gs.max(block.gs + 1);
        Ok(())
    }

    /// Closes an open file at `len` bytes; its last block gets what the earlier ones do not
    /// hold.
    fn apply_close(
        &mut self,
        path: &str,
        at: At,
        mtime: i64,
        len: u64,
        fx: &mut Effects,
    ) -> Result<(), FsError> {
        let slot = self.existing_at(path, at.slot)?;
        let inode = self.arena.get_mut(slot);
        // Only the modification time, as HDFS completes a file: its access time stays the
        // create's until setTimes (or a read past the precision) moves it.
        inode.mtime = mtime;
        let Body::File(f) = &mut inode.body else {
            return Err(FsError::misfit(format!("close of directory {path}")));
        };
        let blocks = f.blocks_mut();
        if let Some((last, earlier)) = blocks.split_last_mut() {
            let before: u64 = earlier.iter().map(|b| b.len).sum();
            last.len = len.saturating_sub(before);
        }
        if let Some(uc) = f.close() {
            fx.closed_files.push((inode.id, uc.client_name));
        }
        f.set_len(len);
        Ok(())
    }

    /// The last block of an open file takes `block`'s stamp and length.
    fn apply_update_last_block(&mut self, path: &str, at: At, block: Block) -> Result<(), FsError> {
        let slot = self.existing_at(path, at.slot)?;
        let f = self.open_file_data(slot, path)?;
        let was = match f.blocks_mut().last_mut() {
            Some(b) if b.id == block.id => {
                let was = b.len;
                (b.gs, b.len) = (block.gs, block.len);
                was
            }
            _ => return Err(not_last(block.id, path)),
        };
        f.set_len(f.len().saturating_sub(was) + block.len);
        self.next_gs = self.next_gs.max(block.gs + 1);
        Ok(())
    }

    /// Copy-on-truncate: the last block of a file a truncate cuts is replaced by block
    /// `id`, as long until recovery fills it; the old one is the snapshots' now.
    fn apply_copy_on_truncate(
        &mut self,
        path: &str,
        at: At,
        id: u64,
        gs: u64,
        fx: &mut Effects,
    ) -> Result<(), FsError> {
        let slot = self.existing_at(path, at.slot)?;
        let f = self.open_file_data(slot, path)?;
        let Some(old) = f.blocks().last().copied() else {
            return Err(FsError::misfit(format!("{path} has no block to copy")));
        };
        let Some(cut) = f.uc_mut().and_then(|uc| uc.cut.as_mut()) else {
            return Err(FsError::misfit(format!("{path} is not being truncated")));
        };
        cut.copy_of = Some(old);
        let blocks = f.blocks_mut();
        let index = blocks.len() as u32 - 1;
        blocks[index as usize] = Block { id, gs, ..old };
        self.block_files.remove(&old.id);
        self.block_files.insert(id, (slot, index));
        self.next_block_id = self.next_block_id.max(id + 1);
        self.next_gs = self.next_gs.max(gs + 1);
        fx.removed_blocks.push((old.id, old.gs));
        self.keep_snapshot_blocks(slot, fx);
        Ok(())
    }

    /// The last block of an open file takes a new generation stamp (pipeline recovery).
    fn apply_bump_gs(&mut self, path: &str, at: At, id: u64, gs: u64) -> Result<(), FsError> {
        let slot = self.existing_at(path, at.slot)?;
        let f = self.open_file_data(slot, path)?;
        match f.blocks_mut().last_mut() {
            Some(b) if b.id == id => b.gs = gs,
            _ => return Err(not_last(id, path)),
        }
        self.next_gs = self.next_gs.max(gs + 1);
        Ok(())
    }

    /// The last block of an open file is dropped (its pipeline never came up).
    fn apply_abandon_block(
        &mut self,
        path: &str,
        at: At,
        id: u64,
        fx: &mut Effects,
    ) -> Result<(), FsError> {
        let slot = self.existing_at(path, at.slot)?;
        let f = self.open_file_data(slot, path)?;
        let blocks = f.blocks_mut();
        if blocks.last().map(|b| b.id) != Some(id) {
            return Err(not_last(id, path));
        }
        if let Some(b) = blocks.pop() {
            fx.removed_blocks.push((b.id, b.gs));
        }
        self.block_files.remove(&id);
        self.keep_snapshot_blocks(slot, fx);
        Ok(())
    }

    /// `path` and everything below it go; its parent's time moves.
    fn apply_delete(
        &mut self,
        path: &str,
        at: At,
        mtime: i64,
        fx: &mut Effects,
    ) -> Result<(), FsError> {
        let slot = self.existing_at(path, at.slot)?;
        if slot == ROOT_SLOT {
            return Err(FsError::misfit("cannot delete the root directory"));
        }
        let parent = self.arena.get(slot).parent;
        self.drop_child(parent, slot, fx);
        self.arena.get_mut(parent).mtime = mtime;
        Ok(())
    }

    /// File `slot` opens for write again by `client_name` (append, a cut inside a block).
    fn reopen(&mut self, slot: Slot, client_name: &str, client_machine: &str, cut: Option<Cut>) {
        let inode = self.arena.get_mut(slot);
        let id = inode.id;
        if let Body::File(f) = &mut inode.body {
            f.reopen(UnderConstruction {
                client_name: client_name.to_string(),
                client_machine: client_machine.to_string(),
                cut,
            });
        }
        self.open_files.insert(id, slot);
    }

    /// Drops the blocks of file `slot` past `len`. A block that `len` falls inside stays
    /// whole (`cut` says what it keeps and had), as the file shows it until recovery.
    fn apply_truncate(
        &mut self,
        slot: Slot,
        path: &str,
        len: u64,
        cut: Option<(u64, u64)>,
        fx: &mut Effects,
    ) -> Result<(), FsError> {
        let Body::File(f) = &mut self.arena.get_mut(slot).body else {
            return Err(FsError::misfit(format!("truncate of directory {path}")));
        };
        if f.uc().is_some() || len > f.len() {
            return Err(FsError::misfit(format!(
                "{path} cannot be cut to {len} bytes"
            )));
        }
        let blocks = f.blocks_mut();
        let (mut start, mut keep) = (0, 0);
        while keep < blocks.len() && start < len {
            start += blocks[keep].len;
            keep += 1;
        }
        let found = match blocks[..keep].last() {
            Some(b) if start > len => Some((len - (start - b.len), b.len)),
            _ => None,
        };
        if found != cut {
            return Err(FsError::misfit(format!(
                "truncate of {path} to {len}: the record cuts {cut:?}, the file {found:?}"
            )));
        }
        for b in blocks.drain(keep..) {
            fx.removed_blocks.push((b.id, b.gs));
        }
        f.set_len(start.max(len));
        for (id, _) in &fx.removed_blocks {
            self.block_files.remove(id);
        }
        self.keep_snapshot_blocks(slot, fx);
        Ok(())
    }

    /// Moves the sources' blocks to the end of the target and removes the sources.
    fn apply_concat(
        &mut self,
        target: &str,
        srcs: &[String],
        at: At,
        mtime: i64,
        fx: &mut Effects,
    ) -> Result<(), FsError> {
        let t = self.existing_at(target, at.slot)?;
        if !matches!(&self.arena.get(t).body, Body::File(f) if f.uc().is_none()) {
            return Err(FsError::misfit(format!(
                "concat target {target} is not a closed file"
            )));
        }
        // Everything is checked before anything moves: a record that cannot apply must
        // leave the namespace as it was.
        let mut slots = Vec::with_capacity(srcs.len());
        for src in srcs {
            let s = self.existing(src)?;
            let closed = matches!(&self.arena.get(s).body, Body::File(f) if f.uc().is_none());
            if s == t || !closed || slots.contains(&s) {
                return Err(FsError::misfit(format!(
                    "concat source {src} cannot join {target}"
                )));
            }
            slots.push(s);
        }
        let mut moved = Vec::new();
        let mut added = 0;
        for s in slots {
            if let Body::File(f) = &mut self.arena.get_mut(s).body {
                added += f.len();
                moved.append(f.blocks_mut());
                f.set_len(0);
            }
            let parent = self.arena.get(s).parent;
            self.drop_child(parent, s, fx);
        }
        let Body::File(f) = &mut self.arena.get_mut(t).body else {
            return Err(FsError::misfit(format!(
                "concat target {target} is not a file"
            )));
        };
        let blocks = f.blocks_mut();
        let first = blocks.len();
        blocks.extend_from_slice(&moved);
        f.set_len(f.len() + added);
        for (i, b) in moved.iter().enumerate() {
            self.block_files.insert(b.id, (t, (first + i) as u32));
        }
        let inode = self.arena.get_mut(t);
        inode.mtime = mtime;
        let parent = inode.parent;
        self.arena.get_mut(parent).mtime = mtime;
        Ok(())
    }

    fn apply_rename(
        &mut self,
        (src, dst): (&str, &str),
        at: At,
        mtime: i64,
        overwrite: bool,
        fx: &mut Effects,
    ) -> Result<(), FsError> {
        let slot = self.existing_at(src, at.slot)?;
        let (new_parent, new_name) = self.parent_and_name(dst, at.dst_dir)?;
        if let Some(old) = self.child(new_parent, new_name.as_bytes()) {
            if old == slot {
                return Ok(());
            }
            if !overwrite {
                return Err(FsError::AlreadyExists(format!(
                    "rename destination {dst} already exists"
                )));
            }
            self.drop_child(new_parent, old, fx);
        }
        let old_parent = self.arena.get(slot).parent;
        let seen_by = if self.snaps.idle() {
            None
        } else {
            self.roots_seeing(slot)
        };
        self.note_child_removed(old_parent, slot);
        self.detach(slot);
        let old_name = self.arena.get(slot).name;
        self.names.free(old_name);
        let name = self.names.add(new_name.as_bytes());
        let inode = self.arena.get_mut(slot);
        inode.name = name;
        inode.parent = new_parent;
        self.attach(new_parent, slot);
        self.note_child_added(new_parent, slot);
        self.pin_if_leaving(slot, seen_by);
        self.arena.get_mut(old_parent).mtime = mtime;
        self.arena.get_mut(new_parent).mtime = mtime;
        Ok(())
    }
}

impl Namespace {
    /// Saves, before `op` changes them, the inodes it changes that a snapshot can see:
    /// the inode it names, and the directories whose entries or times it changes.
    fn preserve_changed(&mut self, op: &Op, at: At) -> Result<(), FsError> {
        let mut touched: Vec<Slot> = Vec::with_capacity(3);
        match op {
            Op::Mkdir { path, .. } | Op::Create { path, .. } => {
                let (parent, name) = self.parent_and_name(path, at.slot)?;
                touched.push(parent);
                let replaced = self.child(parent, name.as_bytes());
                touched.extend(replaced.filter(|&s| self.changes_when_dropped(s)));
            }
            Op::Rename { src, dst, .. } => {
                let slot = self.existing_at(src, at.slot)?;
                let (new_parent, new_name) = self.parent_and_name(dst, at.dst_dir)?;
                touched.extend([slot, self.arena.get(slot).parent, new_parent]);
                let replaced = self.child(new_parent, new_name.as_bytes());
                touched.extend(replaced.filter(|&s| self.changes_when_dropped(s)));
            }
            Op::Delete { path, .. } => {
                let slot = self.existing_at(path, at.slot)?;
                touched.push(self.arena.get(slot).parent);
                touched.extend(Some(slot).filter(|&s| self.changes_when_dropped(s)));
            }
            Op::Concat { target, srcs, .. } => {
                let t = self.existing_at(target, at.slot)?;
                touched.extend([t, self.arena.get(t).parent]);
                for src in srcs {
                    let s = self.existing(src)?;
                    touched.extend([s, self.arena.get(s).parent]);
                }
            }
            // Who holds a lease is no part of what a snapshot shows.
            Op::SetGenerationStamp { .. }
            | Op::ReassignLease { .. }
            | Op::RetryId { .. }
            | Op::SetCachePool { .. }
            | Op::RemoveCachePool { .. }
            | Op::SetCacheDirective { .. }
            | Op::RemoveCacheDirective { .. } => {}
            Op::AllowSnapshot { .. }
            | Op::DisallowSnapshot { .. }
            | Op::CreateSnapshot { .. }
            | Op::DeleteSnapshot { .. }
            | Op::RenameSnapshot { .. } => {}
            Op::Close { path, .. }
            | Op::SetPermission { path, .. }
            | Op::SetOwner { path, .. }
            | Op::SetTimes { path, .. }
            | Op::SetReplication { path, .. }
            | Op::AddBlock { path, .. }
            | Op::AbandonBlock { path, .. }
            | Op::BumpGenerationStamp { path, .. }
            | Op::UpdateLastBlock { path, .. }
            | Op::Append { path, .. }
            | Op::Truncate { path, .. }
            | Op::CopyOnTruncate { path, .. }
            | Op::SetXAttr { path, .. }
            | Op::RemoveXAttr { path, .. }
            | Op::SetStoragePolicy { path, .. }
            | Op::SetAcl { path, .. }
            | Op::SetQuota { path, .. }
            | Op::SetTypeQuota { path, .. } => touched.push(self.existing_at(path, at.slot)?),
        }
        for slot in touched {
            self.preserve(slot);
        }
        Ok(())
    }

    /// Whether an inode a delete or a replacement drops changes as it goes: only an open
    /// file does (it is closed). Any other stays as it was, detached with its name, while
    /// a snapshot keeps it, so it saves no version (~200 bytes each).
    fn changes_when_dropped(&self, slot: Slot) -> bool {
        self.arena
            .get(slot)
            .file()
            .is_some_and(|f| f.uc().is_some())
    }

    /// `child` leaves directory `dir` for good (deleted, or replaced): freed with its
    /// subtree, unless a snapshot still lists it, which keeps it detached, blocks and all.
    fn drop_child(&mut self, dir: Slot, child: Slot, fx: &mut Effects) {
        let kept = self.note_child_removed(dir, child);
        self.detach(child);
        if kept {
            self.retire(child, fx);
        } else {
            self.remove_subtree(child, fx);
        }
    }

    /// A file's blocks that a snapshot's version of it still lists are not removed.
    fn keep_snapshot_blocks(&mut self, slot: Slot, fx: &mut Effects) {
        if self.snaps.idle() {
            return;
        }
        let kept = self.blocks_kept_for_snapshots(slot);
        let mut gone = Vec::new();
        for (id, gs) in std::mem::take(&mut fx.removed_blocks) {
            match kept.iter().find(|b| b.id == id) {
                // Still a snapshot's: block reports must go on finding it.
                Some(b) => self.snaps.keep_block(id, slot, *b),
                None => gone.push((id, gs)),
            }
        }
        fx.removed_blocks = gone;
    }
}

fn not_last(id: u64, path: &str) -> FsError {
    FsError::misfit(format!("block {id} is not the last block of {path}"))
}

/// A record's xattr namespace number, which a damaged journal could make anything.
fn xattr_ns(ns: u8) -> Result<super::xattr::XAttrNs, FsError> {
    super::xattr::XAttrNs::from_u8(ns)
        .ok_or_else(|| FsError::misfit(format!("xattr namespace {ns} does not exist")))
}
