//! The namespace operations of ClientProtocol: lookups, listings, summaries, and the
//! mutations that change names, permissions, owners, times and replication. Each checks
//! its arguments against configuration with HDFS's messages, asks the namespace to plan,
//! and commits.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::lease_recovery::Outcome;
use super::locations::LocatedBlocks;
use super::{Admitted, NameNodeService, Operation};
use crate::clock::now_ms;
use crate::error::FsError;
use crate::namespace::plan::{CreateArgs, Mode};
use crate::namespace::query::{created_status, ContentSummary, FileStatus};
use crate::namespace::{perm, Caller, Op, Planned};

/// What create asks for.
#[derive(Clone, Copy, Debug)]
pub struct CreateRequest<'a> {
    pub src: &'a str,
    /// The permission after the client's umask.
    pub masked: u16,
    /// The permission before it, when the client sends it (used under a default ACL).
    pub unmasked: Option<u16>,
    /// The lease holder: the writing client's name.
    pub client_name: &'a str,
    /// `CreateFlag.CREATE`, `OVERWRITE`, `APPEND`.
    pub create: bool,
    pub overwrite: bool,
    pub append: bool,
    pub create_parent: bool,
    pub replication: u32,
    pub block_size: u64,
}

/// One page of a directory.
#[derive(Debug, Default)]
pub struct Listing {
    pub entries: Vec<FileStatus>,
    /// Entries after this page.
    pub remaining: u32,
    /// With `need_location`: each entry's blocks (None for a directory), in entry order.
    pub located: Vec<Option<LocatedBlocks>>,
}

/// getServerDefaults: what clients write with unless they say otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerDefaults {
    pub block_size: u64,
    pub bytes_per_checksum: u32,
    pub write_packet_size: u32,
    pub replication: u16,
    pub file_buffer_size: u32,
    pub trash_interval_min: u64,
    /// CRC32C, as HDFS's `DataChecksum.Type` numbers it (2).
    pub checksum_type: u32,
    /// HOT, HDFS's default storage policy (7).
    pub storage_policy_id: u32,
}

impl NameNodeService {
    pub fn server_defaults(&self) -> ServerDefaults {
        let c = &self.cfg;
        ServerDefaults {
            block_size: c.block_size,
            bytes_per_checksum: c.bytes_per_checksum,
            write_packet_size: c.write_packet_size,
            replication: c.replication,
            file_buffer_size: c.file_buffer_size,
            trash_interval_min: c.trash_interval_min,
            checksum_type: 2,
            storage_policy_id: 7,
        }
    }

    /// getFileInfo: the status of `src` (an `/.reserved/.inodes/<id>` path too), `None`
    /// when it does not exist.
    pub fn file_info(&self, who: &Admitted, src: &str) -> Result<Option<FileStatus>, FsError> {
        let user = who.user_for(Operation::GetFileInfo);
        let caller = self.caller(user);
        let ns = self.ns.read();
        ns.get_file_info(&caller, &ns.resolve_reserved(src)?)
    }

    /// listOpenFiles (superuser only, by the admission table): a batch of at most
    /// `dfs.namenode.list.openfiles.num.responses` after inode id `after`.
    pub fn list_open_files(
        &self,
        who: &Admitted,
        after: u64,
        prefix: &str,
    ) -> (Vec<crate::namespace::OpenFile>, bool) {
        who.check(Operation::ListOpenFiles);
        let prefix = if prefix.is_empty() { "/" } else { prefix };
        self.ns
            .read()
            .open_files_after(after, prefix, self.cfg.list_open_files_max)
    }

    /// getFileLinkInfo: as getFileInfo, since no symlinks exist.
    pub fn file_link_info(&self, who: &Admitted, src: &str) -> Result<Option<FileStatus>, FsError> {
        let user = who.user_for(Operation::GetFileLinkInfo);
        let caller = self.caller(user);
        self.ns.read().get_file_info(&caller, src)
    }

    /// getLocatedFileInfo: a file's status with its blocks' replicas (PathHandle opens use
    /// it), READ tokens on each block when asked; `None` when the path does not exist.
    pub fn located_file_info(
        &self,
        who: &Admitted,
        src: &str,
        need_token: bool,
    ) -> Result<Option<(FileStatus, Option<LocatedBlocks>)>, FsError> {
        let caller = self.caller(who.user());
        let ns = self.ns.read();
        let src = ns.resolve_reserved(src)?;
        let Some(slot) = ns.lookup(&caller, &src)? else {
            return Ok(None);
        };
        let st = ns.status(slot, false);
        if st.is_dir {
            return Ok(Some((st, None)));
        }
        let range = ns.block_range(slot, 0, u64::MAX);
        let mut located = {
            let mgr = self.blocks.lock();
            self.located_blocks(&mgr, &range, who.ip(), now_ms())
        };
        if need_token {
            let pool = &self.identity.block_pool_id;
            let read = ferrite_blocktoken::Modes::READ;
            for b in located.blocks.iter_mut().chain(located.last.as_mut()) {
                b.token = self.tokens.for_block(who.user(), pool, read, b.block.id);
            }
        }
        Ok(Some((st, Some(located))))
    }

    /// getListing: a page of `src` after `start_after` (`None` when `src` does not
    /// exist); with `need_location`, each file's blocks and replicas too (listFiles and
    /// listLocatedStatus take such statuses as located ones).
    pub fn listing(
        &self,
        who: &Admitted,
        src: &str,
        start_after: &[u8],
        need_location: bool,
    ) -> Result<Option<Listing>, FsError> {
        let caller = self.caller(who.user());
        let (listing, located) = {
            let ns = self.ns.read();
            let listing = ns.list(&caller, src, start_after, self.cfg.ls_limit)?;
            let located = match &listing {
                Some(l) if need_location => {
                    let now = now_ms();
                    let mgr = self.blocks.lock();
                    l.entries
                        .iter()
                        .zip(&l.slots)
                        .map(|(e, &slot)| {
                            (!e.is_dir).then(|| {
                                let range = ns.block_range(slot, 0, u64::MAX);
                                self.located_blocks(&mgr, &range, who.ip(), now)
                            })
                        })
                        .collect()
                }
                _ => Vec::new(),
            };
            (listing, located)
        };
        self.activity
            .listed(listing.as_ref().map(|l| l.entries.len()));
        Ok(listing.map(|l| Listing {
            entries: l.entries,
            remaining: l.remaining,
            located,
        }))
    }

    /// A subtree's content summary: from the summary service when it has applied
    /// everything the namespace had at the time of the call and the caller's permissions
    /// cannot make the answer differ (nothing in the subtree withholds r-x from anyone, or
    /// the caller bypasses checks); otherwise by HDFS's exact, permission-checked walk.
    pub async fn content_summary(
        &self,
        who: &Admitted,
        src: &str,
    ) -> Result<ContentSummary, FsError> {
        let user = who.user_for(Operation::GetContentSummary);
        let caller = self.caller(user);
        {
            // A subtree as a snapshot shows it: walked, since the summary counts the live tree.
            let ns = self.ns.read();
            if let Some(r) = ns.snapshot_lookup(&caller, src)? {
                let r = r.ok_or_else(|| FsError::file_not_found(src))?;
                return Ok(ns.snapshot_content_summary(&r));
            }
        }
        if let (Some(svc), Some(journal)) = (&self.summary, &self.journal) {
            // Errors (missing path, a directory on the way that cannot be traversed) come
            // from the namespace, exactly as the walk would give them.
            let (slot, path) = self.ns.read().resolve_checked(&caller, src)?;
            let seen = journal.last_appended();
            let wait = Duration::from_millis(self.cfg.summary_wait_ms);
            if svc.caught_up(seen, wait).await {
                let found = svc.read(|s| s.get(&path));
                if let Some(p) = found.filter(|p| p.tot.restricted == 0 || caller.bypass()) {
                    svc.metrics.answered.fetch_add(1, Ordering::Relaxed);
                    let live = ContentSummary {
                        length: p.tot.bytes,
                        files: p.tot.files,
                        dirs: p.tot.dirs,
                        space_consumed: p.tot.raw,
                        snapshot: Default::default(),
                    };
                    // The summary counts the live tree; what snapshots keep is added from
                    // the namespace (it visits only what changed since them).
                    let ns = self.ns.read();
                    let kept = match ns.existing(&path) {
                        Ok(s) if s == slot => ns.snapshot_space(slot),
                        _ => Default::default(),
                    };
                    return Ok(live.with_snapshots(kept));
                }
            }
            svc.metrics.walked.fetch_add(1, Ordering::Relaxed);
        }
        self.ns.read().content_summary(&caller, src)
    }

    /// checkAccess: whether `user` may perform `action` (perm::READ | WRITE | EXECUTE bits)
    /// on `src`, by the permission checker's rules (traversal included), at a `.snapshot`
    /// path as the snapshot shows the inode.
    pub fn check_access(&self, who: &Admitted, src: &str, action: u16) -> Result<(), FsError> {
        let user = who.user_for(Operation::CheckAccess);
        let caller = self.caller(user);
        let ns = self.ns.read();
        let src = ns.resolve_reserved(src)?;
        let attrs = ns.resolve_attrs(&caller, &src, |p| format!("Path not found: {p}"))?;
        ns.check_access_with(&caller, &attrs, action)
    }

    /// A file's status (an error for a directory or a missing path).
    pub fn regular_file_status(&self, who: &Admitted, src: &str) -> Result<FileStatus, FsError> {
        let user = who.user();
        let caller = self.caller(user);
        self.ns.read().file_status(&caller, src)
    }

    pub async fn mkdirs(
        &self,
        who: &Admitted,
        src: &str,
        mode: impl Into<Mode>,
        create_parent: bool,
    ) -> Result<(), FsError> {
        let user = who.user_for(Operation::Mkdirs);
        let mode = mode.into();
        let caller = self.caller(user);
        let now = now_ms();
        self.commit(|ns| Ok(((), ns.plan_mkdirs(&caller, src, mode, create_parent, now)?)))
            .await
    }

    /// Checks a replication factor against `dfs.namenode.replication.min` and
    /// `dfs.replication.max`.
    fn check_replication(&self, src: &str, replication: u32) -> Result<u16, FsError> {
        let c = &self.cfg;
        if replication < c.min_replication as u32 {
            return Err(FsError::Io(format!(
                "Requested replication factor of {replication} is less than the required minimum of {} for {src}",
                c.min_replication
            )));
        }
        if replication > c.max_replication as u32 {
            return Err(FsError::Io(format!(
                "Requested replication factor of {replication} exceeds maximum of {} for {src}",
                c.max_replication
            )));
        }
        Ok(replication as u16)
    }

    /// create: answers the new file's status, which its create record holds.
    pub async fn create(
        &self,
        who: &Admitted,
        req: &CreateRequest<'_>,
    ) -> Result<Option<FileStatus>, FsError> {
        if req.append {
            return Err(FsError::Unsupported(
                "create with CreateFlag.APPEND is not supported; call append".into(),
            ));
        }
        let replication = self.check_replication(req.src, req.replication)?;
        if req.block_size < self.cfg.min_block_size {
            return Err(FsError::Io(format!(
                "Specified block size is less than configured minimum value (dfs.namenode.fs-limits.min-block-size): {} < {}",
                req.block_size, self.cfg.min_block_size
            )));
        }
        let caller = self.caller(who.user());
        let args = CreateArgs {
            src: req.src,
            masked: req.masked,
            unmasked: req.unmasked,
            client_name: req.client_name,
            client_machine: who.ip(),
            create: req.create,
            overwrite: req.overwrite,
            create_parent: req.create_parent,
            replication,
            block_size: req.block_size,
        };
        let now = now_ms();
        self.commit_with(
            Some(who),
            |ns| {
                let policy = ns.policy_for_new(args.src);
                let planned = ns.plan_create(&caller, &args, now)?;
                // What the file's directory hands it, read before the create applies.
                let acl = planned
                    .ops
                    .last()
                    .and_then(|op| ns.acl_for_new_file(args.src, op));
                Ok(((policy, acl), planned))
            },
            |(policy, acl), ops| {
                ops.iter().rev().find_map(created_status).map(|mut st| {
                    st.storage_policy = policy;
                    if let Some((perm, has_acl)) = acl {
                        (st.perm, st.has_acl) = (perm, has_acl);
                    }
                    st
                })
            },
        )
        .await
    }

    /// hflush/hsync's call. A length (the first flush of each block, and every hsync with
    /// `UPDATE_LENGTH`) is recorded for the block being written, journaled, so that the
    /// file's status shows it, as HDFS's `persistBlocks` does.
    pub async fn fsync(
        &self,
        who: &Admitted,
        src: &str,
        client_name: &str,
        file_id: u64,
        last_block_len: Option<u64>,
    ) -> Result<(), FsError> {
        who.check(Operation::Fsync);
        self.commit(|ns| {
            let slot = ns.check_lease(src, client_name, file_id)?.slot;
            let update = match (ns.last_block(slot), last_block_len) {
                (Some(b), Some(len)) if len > 0 => {
                    vec![Op::UpdateLastBlock {
                        path: ns.path_of(slot),
                        id: b.id,
                        gs: b.gs,
                        len,
                    }]
                }
                _ => Vec::new(),
            };
            Ok(((), update))
        })
        .await
    }

    /// rename (the old form): false rather than an error for most refusals, as HDFS.
    pub async fn rename(&self, who: &Admitted, src: &str, dst: &str) -> Result<bool, FsError> {
        let user = who.user_for(Operation::Rename);
        let caller = self.caller(user);
        let now = now_ms();
        let ok = self
            .commit_once(who, |ns| {
                Ok(match ns.plan_rename(&caller, src, dst, now)? {
                    Some(ops) => (true, ops),
                    None => (false, Planned::default()),
                })
            })
            .await?;
        if !ok {
            self.activity.rename_answered_false();
        }
        Ok(ok)
    }

    pub async fn rename2(
        &self,
        who: &Admitted,
        src: &str,
        dst: &str,
        overwrite: bool,
    ) -> Result<(), FsError> {
        let user = who.user_for(Operation::Rename2);
        let caller = self.caller(user);
        let now = now_ms();
        self.commit_once(who, |ns| {
            Ok(((), ns.plan_rename2(&caller, src, dst, overwrite, now)?))
        })
        .await
    }

    pub async fn delete(
        &self,
        who: &Admitted,
        src: &str,
        recursive: bool,
    ) -> Result<bool, FsError> {
        let user = who.user_for(Operation::Delete);
        let caller = self.caller(user);
        let now = now_ms();
        let ok = self
            .commit_once(who, |ns| {
                Ok(match ns.plan_delete(&caller, src, recursive, now)? {
                    Some(ops) => (true, ops),
                    None => (false, Planned::default()),
                })
            })
            .await?;
        if !ok {
            self.activity.delete_answered_false();
        }
        Ok(ok)
    }

    pub async fn set_permission(
        &self,
        who: &Admitted,
        src: &str,
        perm: u16,
    ) -> Result<(), FsError> {
        let user = who.user_for(Operation::SetPermission);
        let caller = self.caller(user);
        self.commit(|ns| Ok(((), ns.plan_set_permission(&caller, src, perm)?)))
            .await
    }

    /// setOwner: `None` (or empty) leaves that half unchanged; both missing is an error.
    pub async fn set_owner(
        &self,
        who: &Admitted,
        src: &str,
        owner: Option<&str>,
        group: Option<&str>,
    ) -> Result<(), FsError> {
        let user = who.user_for(Operation::SetOwner);
        let (owner, group) = (
            owner.filter(|s| !s.is_empty()),
            group.filter(|s| !s.is_empty()),
        );
        if owner.is_none() && group.is_none() {
            return Err(FsError::Io(
                "Both the user name and the group name are null".into(),
            ));
        }
        let caller = self.caller(user);
        self.commit(|ns| Ok(((), ns.plan_set_owner(&caller, src, owner, group)?)))
            .await
    }

    /// setTimes: `None` leaves a time unchanged.
    pub async fn set_times(
        &self,
        who: &Admitted,
        src: &str,
        mtime: Option<i64>,
        atime: Option<i64>,
    ) -> Result<(), FsError> {
        let user = who.user_for(Operation::SetTimes);
        if atime.is_some() && self.cfg.access_time_precision_ms == 0 {
            return Err(FsError::Io(
                "Access time for hdfs is not configured.  Please set \
                 dfs.namenode.accesstime.precision configuration parameter."
                    .into(),
            ));
        }
        let caller = self.caller(user);
        self.commit(|ns| Ok(((), ns.plan_set_times(&caller, src, mtime, atime)?)))
            .await
    }

    /// setReplication: false for a directory or a missing path, as HDFS.
    pub async fn set_replication(
        &self,
        who: &Admitted,
        src: &str,
        replication: u32,
    ) -> Result<bool, FsError> {
        let user = who.user_for(Operation::SetReplication);
        let r = self.check_replication(src, replication)?;
        let caller = self.caller(user);
        self.commit(|ns| {
            Ok(match ns.plan_set_replication(&caller, src, r)? {
                Some(ops) => (true, ops),
                None => (false, Vec::new()),
            })
        })
        .await
    }

    pub fn renew_lease(&self, who: &Admitted, client_name: &str) {
        who.check(Operation::RenewLease);
        self.leases.lock().renew(client_name, now_ms());
    }

    /// recoverLease by client `client_name`: true once the file is closed (at once, or
    /// because it already was); false while its last block is being recovered, the
    /// file's lease meanwhile `client_name`'s.
    pub async fn recover_lease(
        &self,
        who: &Admitted,
        src: &str,
        client_name: &str,
    ) -> Result<bool, FsError> {
        let user = who.user_for(Operation::RecoverLease);
        let caller = self.caller(user);
        let file_id = {
            let ns = self.ns.read();
            let slot = ns.file_slot(&caller, src)?;
            if !ns.status(slot, false).under_construction {
                return Ok(true);
            }
            ns.check_access(&caller, slot, perm::WRITE)?;
            ns.inode(slot).id
        };
        Ok(self.recover_file(file_id, Some(client_name)).await? == Outcome::Closed)
    }

    /// Whether an open at `now` should move a file's access time last set at `atime`. Never
    /// in safe mode, where HDFS leaves access times alone too.
    pub(super) fn access_time_due(&self, atime: i64, now: i64) -> bool {
        crate::namespace::plan::access_time_due(atime, now, self.cfg.access_time_precision_ms)
            && !self.in_safe_mode()
    }

    /// Moves a file's access time for an open (a journaled `OP_TIMES`, at most once per
    /// precision). Its failure does not fail the read, as in HDFS: it is logged.
    pub(super) async fn record_access(&self, caller: &Caller, src: &str, now: i64) {
        let precision = self.cfg.access_time_precision_ms;
        let planned = self
            .commit(|ns| Ok(((), ns.plan_access_time(caller, src, now, precision)?)))
            .await;
        if let Err(e) = planned {
            tracing::warn!(src, error = %e, "could not move the access time of a file being read");
        }
    }
}
