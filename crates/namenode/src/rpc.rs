//! ClientNamenodeProtocol on top of the namespace: one table of methods, each a thin
//! translation between protobuf messages and `plan_*`/query calls. Admission (safe mode,
//! superuser), the retry cache, metrics and logging are applied by the router's wrapper.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use ferrite_ipc::{CallCtx, MethodKind, Router, RpcError, CLIENT_PROTOCOL, NAMENODE_PROTOCOL};
use ferrite_proto::common::HaServiceStateProto;
use ferrite_proto::hdfs::hdfs_file_status_proto::FileType;
use ferrite_proto::hdfs::*;

use crate::error::FsError;
use crate::namespace::plan::CreateArgs;
use crate::namespace::query::ContentSummary;
use crate::namespace::query::{created_status, FileStatus};
use crate::namespace::{Caller, Planned};
use crate::rpc_blocks as rb;
use crate::state::NnState;

// The handlers are public so that the in-process benchmark can call them directly, as
// HDFS's NNThroughputBenchmark calls its NameNode's RPC methods without a socket.
type Nn = Arc<NnState>;
type Res<T> = Result<T, RpcError>;

/// Builds the dispatch table of everything the NameNode answers.
pub fn router(state: Nn) -> Router<NnState> {
    let c = &state.cfg;
    let capacity = match (c.retry_cache_enabled, c.retry_cache_max_entries) {
        (false, _) => 0,
        (true, Some(n)) => n,
        (true, None) => crate::config::retry_cache_capacity(
            crate::config::default_java_heap(),
            c.retry_cache_heap_percent,
        ),
    };
    let ttl = std::time::Duration::from_millis(c.retry_cache_expiry_ms);
    let mut r = Router::new(state.clone()).with_retry_cache(ttl, capacity);
    let p = CLIENT_PROTOCOL;
    use MethodKind as K;
    r.method(p, "getServerDefaults", K::READ, get_server_defaults)
        .method(p, "getFileInfo", K::READ, get_file_info)
        .method(p, "getFileLinkInfo", K::READ, get_file_link_info)
        .method(p, "getListing", K::READ, get_listing)
        .method(p, "getBlockLocations", K::READ, rb::get_block_locations)
        .method(p, "getContentSummary", K::READ, get_content_summary)
        .method(p, "getQuotaUsage", K::READ, get_quota_usage)
        .method(
            p,
            "getPreferredBlockSize",
            K::READ,
            get_preferred_block_size,
        )
        .method(p, "isFileClosed", K::READ, is_file_closed)
        .method(p, "getFsStats", K::READ, rb::get_fs_stats)
        .method(p, "getDatanodeReport", K::READ, rb::get_datanode_report)
        .method(p, "getDataEncryptionKey", K::READ, get_data_encryption_key)
        .method(p, "getHAServiceState", K::READ, get_ha_service_state)
        .method(p, "msync", K::READ, msync)
        // setSafeMode's GET is open to all; its other actions check the superuser inside.
        .method(p, "setSafeMode", K::READ, set_safe_mode)
        .method(p, "mkdirs", K::WRITE, mkdirs)
        .method(p, "create", K::WRITE_ONCE, create)
        .method(p, "complete", K::WRITE, rb::complete)
        .method(p, "addBlock", K::WRITE, rb::add_block)
        .method(p, "abandonBlock", K::WRITE, rb::abandon_block)
        .method(
            p,
            "updateBlockForPipeline",
            K::WRITE,
            rb::update_block_for_pipeline,
        )
        .method(p, "updatePipeline", K::WRITE, rb::update_pipeline)
        .method(
            p,
            "getAdditionalDatanode",
            K::READ,
            rb::get_additional_datanode,
        )
        .method(p, "reportBadBlocks", K::READ, rb::report_bad_blocks)
        .method(p, "fsync", K::WRITE, fsync)
        .method(p, "rename", K::WRITE_ONCE, rename)
        .method(p, "rename2", K::WRITE_ONCE, rename2)
        .method(p, "delete", K::WRITE_ONCE, delete)
        .method(p, "setPermission", K::WRITE, set_permission)
        .method(p, "setOwner", K::WRITE, set_owner)
        .method(p, "setTimes", K::WRITE, set_times)
        .method(p, "setReplication", K::WRITE, set_replication)
        .method(p, "renewLease", K::WRITE, renew_lease)
        .method(p, "recoverLease", K::WRITE, recover_lease)
        .method(p, "append", K::WRITE_ONCE, crate::rpc_file_ops::append)
        .method(p, "truncate", K::WRITE, crate::rpc_file_ops::truncate)
        .method(p, "concat", K::WRITE_ONCE, crate::rpc_file_ops::concat)
        .method(p, "getLocatedFileInfo", K::READ, get_located_file_info);
    r.method(p, "saveNamespace", K::ADMIN, save_namespace)
        .method(p, "rollEdits", K::ADMIN, roll_edits)
        .method(p, "restoreFailedStorage", K::ADMIN, restore_failed_storage);
    crate::rpc_datanode::register(&mut r);
    crate::rpc_summary::register(&mut r);
    crate::rpc_stats::register(&mut r);
    // NamenodeProtocol: NNThroughputBenchmark asks for the block pool id this way.
    r.method(
        NAMENODE_PROTOCOL,
        "versionRequest",
        K::READ,
        version_request,
    );
    r
}

/// The wire form of a file status.
pub fn status_proto(s: &FileStatus) -> HdfsFileStatusProto {
    HdfsFileStatusProto {
        file_type: if s.is_dir {
            FileType::IsDir
        } else {
            FileType::IsFile
        } as i32,
        path: s.name.clone(),
        length: s.len,
        permission: FsPermissionProto {
            perm: s.perm as u32,
        },
        owner: s.owner.clone(),
        group: s.group.clone(),
        modification_time: s.mtime.max(0) as u64,
        access_time: s.atime.max(0) as u64,
        block_replication: Some(s.replication as u32),
        blocksize: Some(s.block_size),
        file_id: Some(s.file_id),
        children_num: Some(s.children),
        storage_policy: Some(0),
        flags: Some(0),
        ..Default::default()
    }
}

fn perm_bits(p: &FsPermissionProto) -> u16 {
    (p.perm & 0o7777) as u16
}

pub async fn get_server_defaults(
    nn: Nn,
    _: CallCtx,
    _: GetServerDefaultsRequestProto,
) -> Res<GetServerDefaultsResponseProto> {
    let c = &nn.cfg;
    Ok(GetServerDefaultsResponseProto {
        server_defaults: FsServerDefaultsProto {
            block_size: c.block_size,
            bytes_per_checksum: c.bytes_per_checksum,
            write_packet_size: c.write_packet_size,
            replication: c.replication as u32,
            file_buffer_size: c.file_buffer_size,
            encrypt_data_transfer: Some(false),
            trash_interval: Some(c.trash_interval_min),
            checksum_type: Some(ChecksumTypeProto::ChecksumCrc32c as i32),
            key_provider_uri: Some(String::new()),
            policy_id: Some(7),
            snapshot_trash_root_enabled: Some(false),
        },
    })
}

pub async fn get_file_info(
    nn: Nn,
    ctx: CallCtx,
    req: GetFileInfoRequestProto,
) -> Res<GetFileInfoResponseProto> {
    let caller = nn.caller(&ctx.user);
    let ns = nn.ns.read();
    let st = ns.get_file_info(&caller, &ns.resolve_reserved(&req.src)?)?;
    Ok(GetFileInfoResponseProto {
        fs: st.as_ref().map(status_proto),
    })
}

/// A file's status with its blocks' locations (PathHandle opens use it); None when the
/// path does not exist.
pub async fn get_located_file_info(
    nn: Nn,
    ctx: CallCtx,
    req: GetLocatedFileInfoRequestProto,
) -> Res<GetLocatedFileInfoResponseProto> {
    let caller = nn.caller(&ctx.user);
    let ns = nn.ns.read();
    let src = ns.resolve_reserved(req.src.as_deref().unwrap_or_default())?;
    let Some(slot) = ns.lookup(&caller, &src)? else {
        return Ok(GetLocatedFileInfoResponseProto { fs: None });
    };
    let st = ns.status(slot, false);
    let mut fs = status_proto(&st);
    if !st.is_dir {
        let range = ns.block_range(slot, 0, u64::MAX);
        let mgr = nn.blocks.lock();
        let mut located =
            rb::located_blocks(&nn, &mgr, &range, &ctx.peer_ip, crate::state::now_ms());
        if req.need_block_token.unwrap_or(false) {
            let pool = &nn.identity.block_pool_id;
            let read = ferrite_blocktoken::Modes::READ;
            for b in located.blocks.iter_mut().chain(located.last_block.as_mut()) {
                b.block_token = nn.tokens.for_block(&ctx.user, pool, read, b.b.block_id);
            }
        }
        fs.locations = Some(located);
    }
    Ok(GetLocatedFileInfoResponseProto { fs: Some(fs) })
}

pub async fn get_file_link_info(
    nn: Nn,
    ctx: CallCtx,
    req: GetFileLinkInfoRequestProto,
) -> Res<GetFileLinkInfoResponseProto> {
    // No symlinks exist, so this is getFileInfo.
    let caller = nn.caller(&ctx.user);
    let st = nn.ns.read().get_file_info(&caller, &req.src)?;
    Ok(GetFileLinkInfoResponseProto {
        fs: st.as_ref().map(status_proto),
    })
}

pub async fn get_listing(
    nn: Nn,
    ctx: CallCtx,
    req: GetListingRequestProto,
) -> Res<GetListingResponseProto> {
    let caller = nn.caller(&ctx.user);
    let (listing, located) = {
        let ns = nn.ns.read();
        let listing = ns.list(&caller, &req.src, &req.start_after, nn.cfg.ls_limit)?;
        // listFiles / listLocatedStatus: every file comes with its blocks (Hadoop's client
        // takes such a status as an HdfsLocatedFileStatus; without them, as a plain one).
        let located = match &listing {
            Some(l) if req.need_location => {
                let now = crate::state::now_ms();
                let mgr = nn.blocks.lock();
                l.entries
                    .iter()
                    .zip(&l.slots)
                    .map(|(e, &slot)| {
                        (!e.is_dir).then(|| {
                            let range = ns.block_range(slot, 0, u64::MAX);
                            rb::located_blocks(&nn, &mgr, &range, &ctx.peer_ip, now)
                        })
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        (listing, located)
    };
    nn.activity
        .listed(listing.as_ref().map(|l| l.entries.len()));
    let Some(l) = listing else {
        return Ok(GetListingResponseProto { dir_list: None });
    };
    let mut partial_listing: Vec<HdfsFileStatusProto> =
        l.entries.iter().map(status_proto).collect();
    for (st, loc) in partial_listing.iter_mut().zip(located) {
        st.locations = loc;
    }
    Ok(GetListingResponseProto {
        dir_list: Some(DirectoryListingProto {
            partial_listing,
            remaining_entries: l.remaining,
        }),
    })
}

pub async fn get_content_summary(
    nn: Nn,
    ctx: CallCtx,
    req: GetContentSummaryRequestProto,
) -> Res<GetContentSummaryResponseProto> {
    let caller = nn.caller(&ctx.user);
    let cs = content_summary(&nn, &caller, &req.path).await?;
    Ok(GetContentSummaryResponseProto {
        summary: ContentSummaryProto {
            length: cs.length,
            file_count: cs.files,
            directory_count: cs.dirs,
            quota: u64::MAX,
            space_consumed: cs.space_consumed,
            space_quota: u64::MAX,
            ..Default::default()
        },
    })
}

pub async fn get_quota_usage(
    nn: Nn,
    ctx: CallCtx,
    req: GetQuotaUsageRequestProto,
) -> Res<GetQuotaUsageResponseProto> {
    let caller = nn.caller(&ctx.user);
    let cs = content_summary(&nn, &caller, &req.path).await?;
    Ok(GetQuotaUsageResponseProto {
        usage: QuotaUsageProto {
            file_and_directory_count: cs.files + cs.dirs,
            quota: u64::MAX,
            space_consumed: cs.space_consumed,
            space_quota: u64::MAX,
            type_quota_infos: None,
        },
    })
}

/// A subtree's content summary: from the summary service when it has applied everything
/// the namespace had at the time of the call and the caller's permissions cannot make the
/// answer differ (nothing in the subtree withholds r-x from anyone, or the caller bypasses
/// checks); otherwise by HDFS's exact, permission-checked walk.
async fn content_summary(
    nn: &NnState,
    caller: &Caller,
    src: &str,
) -> Result<ContentSummary, FsError> {
    if let (Some(svc), Some(journal)) = (&nn.summary, &nn.journal) {
        // Errors (missing path, a directory on the way that cannot be traversed) come from
        // the namespace, exactly as the walk would give them.
        let (_, path) = nn.ns.read().resolve_checked(caller, src)?;
        let seen = journal.last_appended();
        let wait = Duration::from_millis(nn.cfg.summary_wait_ms);
        if svc.caught_up(seen, wait).await {
            let found = svc.read(|s| s.get(&path));
            if let Some(p) = found.filter(|p| p.tot.restricted == 0 || caller.bypass()) {
                svc.metrics.answered.fetch_add(1, Ordering::Relaxed);
                return Ok(ContentSummary {
                    length: p.tot.bytes,
                    files: p.tot.files,
                    dirs: p.tot.dirs,
                    space_consumed: p.tot.raw,
                });
            }
        }
        svc.metrics.walked.fetch_add(1, Ordering::Relaxed);
    }
    nn.ns.read().content_summary(caller, src)
}

pub async fn get_preferred_block_size(
    nn: Nn,
    ctx: CallCtx,
    req: GetPreferredBlockSizeRequestProto,
) -> Res<GetPreferredBlockSizeResponseProto> {
    let caller = nn.caller(&ctx.user);
    let st = nn.ns.read().file_status(&caller, &req.filename)?;
    Ok(GetPreferredBlockSizeResponseProto {
        bsize: st.block_size,
    })
}

pub async fn is_file_closed(
    nn: Nn,
    ctx: CallCtx,
    req: IsFileClosedRequestProto,
) -> Res<IsFileClosedResponseProto> {
    let caller = nn.caller(&ctx.user);
    let st = nn.ns.read().file_status(&caller, &req.src)?;
    Ok(IsFileClosedResponseProto {
        result: !st.under_construction,
    })
}

pub async fn get_data_encryption_key(
    _: Nn,
    _: CallCtx,
    _: GetDataEncryptionKeyRequestProto,
) -> Res<GetDataEncryptionKeyResponseProto> {
    Ok(GetDataEncryptionKeyResponseProto {})
}

pub async fn get_ha_service_state(
    _: Nn,
    _: CallCtx,
    _: HaServiceStateRequestProto,
) -> Res<HaServiceStateResponseProto> {
    Ok(HaServiceStateResponseProto {
        state: HaServiceStateProto::Active as i32,
    })
}

pub async fn msync(_: Nn, _: CallCtx, _: MsyncRequestProto) -> Res<MsyncResponseProto> {
    Ok(MsyncResponseProto {})
}

pub async fn set_safe_mode(
    nn: Nn,
    ctx: CallCtx,
    req: SetSafeModeRequestProto,
) -> Res<SetSafeModeResponseProto> {
    let action = SafeModeActionProto::try_from(req.action).map_err(|_| {
        FsError::IllegalArgument(format!("unknown safe mode action {}", req.action))
    })?;
    if action != SafeModeActionProto::SafemodeGet {
        let caller = nn.caller(&ctx.user);
        if !caller.superuser {
            return Err(FsError::AccessDenied(format!(
                "Access denied for user {}. Superuser privilege is required",
                ctx.user
            ))
            .into());
        }
    }
    match action {
        SafeModeActionProto::SafemodeEnter => nn.set_safe_mode(true),
        SafeModeActionProto::SafemodeLeave | SafeModeActionProto::SafemodeForceExit => {
            nn.set_safe_mode(false)
        }
        SafeModeActionProto::SafemodeGet => {}
    }
    Ok(SetSafeModeResponseProto {
        result: nn.in_safe_mode(),
    })
}

pub async fn mkdirs(nn: Nn, ctx: CallCtx, req: MkdirsRequestProto) -> Res<MkdirsResponseProto> {
    let caller = nn.caller(&ctx.user);
    let now = crate::state::now_ms();
    nn.commit(|ns| {
        Ok((
            (),
            ns.plan_mkdirs(
                &caller,
                &req.src,
                perm_bits(&req.masked),
                req.create_parent,
                now,
            )?,
        ))
    })
    .await?;
    Ok(MkdirsResponseProto { result: true })
}

const FLAG_CREATE: u32 = 0x01;
const FLAG_OVERWRITE: u32 = 0x02;
const FLAG_APPEND: u32 = 0x04;

/// Checks create's numbers against configuration, with HDFS's messages.
fn check_create_limits(
    nn: &NnState,
    src: &str,
    replication: u32,
    block_size: u64,
) -> Result<u16, FsError> {
    let replication = check_replication(nn, src, replication)?;
    let c = &nn.cfg;
    if block_size < c.min_block_size {
        return Err(FsError::Io(format!(
            "Specified block size is less than configured minimum value (dfs.namenode.fs-limits.min-block-size): {block_size} < {}",
            c.min_block_size
        )));
    }
    Ok(replication)
}

/// Checks a replication factor against `dfs.namenode.replication.min` and `dfs.replication.max`.
fn check_replication(nn: &NnState, src: &str, replication: u32) -> Result<u16, FsError> {
    let c = &nn.cfg;
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

pub async fn create(nn: Nn, ctx: CallCtx, req: CreateRequestProto) -> Res<CreateResponseProto> {
    if req.create_flag & FLAG_APPEND != 0 {
        return Err(FsError::Unsupported("append is not supported yet".into()).into());
    }
    let replication = check_create_limits(&nn, &req.src, req.replication, req.block_size)?;
    let caller = nn.caller(&ctx.user);
    let args = CreateArgs {
        src: &req.src,
        masked: perm_bits(&req.masked),
        client_name: &req.client_name,
        client_machine: &ctx.peer_ip,
        create: req.create_flag & FLAG_CREATE != 0,
        overwrite: req.create_flag & FLAG_OVERWRITE != 0,
        create_parent: req.create_parent,
        replication,
        block_size: req.block_size,
    };
    let now = crate::state::now_ms();
    // The answer is the new file's status, which its create record holds.
    let fs = nn
        .commit_then(
            |ns| Ok(((), ns.plan_create(&caller, &args, now)?)),
            |(), ops| {
                ops.iter()
                    .rev()
                    .find_map(created_status)
                    .map(|st| status_proto(&st))
            },
        )
        .await?;
    Ok(CreateResponseProto { fs })
}

/// hflush/hsync's call. A length (the first flush of each block, and every hsync with
/// `UPDATE_LENGTH`) is recorded for the block being written, journaled, so that the file's
/// status shows it, as HDFS's `persistBlocks` does.
pub async fn fsync(nn: Nn, _: CallCtx, req: FsyncRequestProto) -> Res<FsyncResponseProto> {
    let file_id = req.file_id.unwrap_or(0);
    let len = req.last_block_length.unwrap_or(-1);
    nn.commit(|ns| {
        let slot = ns.open_file(&req.src, &req.client, file_id)?;
        let update = match ns.last_block(slot) {
            Some(b) if len > 0 && ns.inode(slot).file().and_then(|f| f.uc()).is_some() => {
                vec![crate::namespace::Op::UpdateLastBlock {
                    path: ns.path_of(slot),
                    id: b.id,
                    gs: b.gs,
                    len: len as u64,
                }]
            }
            _ => Vec::new(),
        };
        Ok(((), update))
    })
    .await?;
    Ok(FsyncResponseProto {})
}

pub async fn rename(nn: Nn, ctx: CallCtx, req: RenameRequestProto) -> Res<RenameResponseProto> {
    let caller = nn.caller(&ctx.user);
    let now = crate::state::now_ms();
    let ok = nn
        .commit(|ns| {
            Ok(match ns.plan_rename(&caller, &req.src, &req.dst, now)? {
                Some(ops) => (true, ops),
                None => (false, Planned::default()),
            })
        })
        .await?;
    if !ok {
        nn.activity.rename_answered_false();
    }
    Ok(RenameResponseProto { result: ok })
}

pub async fn rename2(nn: Nn, ctx: CallCtx, req: Rename2RequestProto) -> Res<Rename2ResponseProto> {
    let caller = nn.caller(&ctx.user);
    let now = crate::state::now_ms();
    nn.commit(|ns| {
        Ok((
            (),
            ns.plan_rename2(&caller, &req.src, &req.dst, req.overwrite_dest, now)?,
        ))
    })
    .await?;
    Ok(Rename2ResponseProto {})
}

pub async fn delete(nn: Nn, ctx: CallCtx, req: DeleteRequestProto) -> Res<DeleteResponseProto> {
    let caller = nn.caller(&ctx.user);
    let now = crate::state::now_ms();
    let ok = nn
        .commit(|ns| {
            Ok(
                match ns.plan_delete(&caller, &req.src, req.recursive, now)? {
                    Some(ops) => (true, ops),
                    None => (false, Planned::default()),
                },
            )
        })
        .await?;
    if !ok {
        nn.activity.delete_answered_false();
    }
    Ok(DeleteResponseProto { result: ok })
}

pub async fn set_permission(
    nn: Nn,
    ctx: CallCtx,
    req: SetPermissionRequestProto,
) -> Res<SetPermissionResponseProto> {
    let caller = nn.caller(&ctx.user);
    nn.commit(|ns| {
        Ok((
            (),
            ns.plan_set_permission(&caller, &req.src, perm_bits(&req.permission))?,
        ))
    })
    .await?;
    Ok(SetPermissionResponseProto {})
}

pub async fn set_owner(
    nn: Nn,
    ctx: CallCtx,
    req: SetOwnerRequestProto,
) -> Res<SetOwnerResponseProto> {
    let caller = nn.caller(&ctx.user);
    let (owner, group) = (
        req.username.as_deref().filter(|s| !s.is_empty()),
        req.groupname.as_deref().filter(|s| !s.is_empty()),
    );
    if owner.is_none() && group.is_none() {
        return Err(FsError::Io("Both the user name and the group name are null".into()).into());
    }
    nn.commit(|ns| Ok(((), ns.plan_set_owner(&caller, &req.src, owner, group)?)))
        .await?;
    Ok(SetOwnerResponseProto {})
}

pub async fn set_times(
    nn: Nn,
    ctx: CallCtx,
    req: SetTimesRequestProto,
) -> Res<SetTimesResponseProto> {
    let caller = nn.caller(&ctx.user);
    // -1 (sent as u64::MAX) leaves a time unchanged.
    let keep = |t: u64| (t as i64 >= 0).then_some(t as i64);
    let (m, a) = (keep(req.mtime), keep(req.atime));
    if a.is_some() && nn.cfg.access_time_precision_ms == 0 {
        return Err(FsError::Io(
            "Access time for hdfs is not configured.  Please set \
             dfs.namenode.accesstime.precision configuration parameter."
                .into(),
        )
        .into());
    }
    nn.commit(|ns| Ok(((), ns.plan_set_times(&caller, &req.src, m, a)?)))
        .await?;
    Ok(SetTimesResponseProto {})
}

pub async fn set_replication(
    nn: Nn,
    ctx: CallCtx,
    req: SetReplicationRequestProto,
) -> Res<SetReplicationResponseProto> {
    let caller = nn.caller(&ctx.user);
    let r = check_replication(&nn, &req.src, req.replication)?;
    let ok = nn
        .commit(|ns| {
            Ok(match ns.plan_set_replication(&caller, &req.src, r)? {
                Some(ops) => (true, ops),
                None => (false, Vec::new()),
            })
        })
        .await?;
    Ok(SetReplicationResponseProto { result: ok })
}

pub async fn renew_lease(
    nn: Nn,
    _: CallCtx,
    req: RenewLeaseRequestProto,
) -> Res<RenewLeaseResponseProto> {
    nn.leases
        .lock()
        .renew(&req.client_name, crate::state::now_ms());
    Ok(RenewLeaseResponseProto {})
}

pub async fn recover_lease(
    nn: Nn,
    ctx: CallCtx,
    req: RecoverLeaseRequestProto,
) -> Res<RecoverLeaseResponseProto> {
    let caller = nn.caller(&ctx.user);
    let file_id = {
        let ns = nn.ns.read();
        let slot = ns.file_slot(&caller, &req.src)?;
        if !ns.status(slot, false).under_construction {
            return Ok(RecoverLeaseResponseProto { result: true });
        }
        ns.check_access(&caller, slot, crate::namespace::perm::WRITE)?;
        ns.inode(slot).id
    };
    // True once the file is closed; false while its last block is being recovered.
    let outcome = nn.recover_file(file_id, None).await?;
    Ok(RecoverLeaseResponseProto {
        result: outcome == crate::lease_recovery::Outcome::Closed,
    })
}

/// The software version we report, in Hadoop's format (clients only display it).
const SOFTWARE_VERSION: &str = "3.4.1";

pub async fn version_request(
    nn: Nn,
    _: CallCtx,
    _: VersionRequestProto,
) -> Res<VersionResponseProto> {
    let id = &nn.identity;
    Ok(VersionResponseProto {
        info: NamespaceInfoProto {
            build_version: concat!("ferrite-", env!("CARGO_PKG_VERSION")).into(),
            unused: 0,
            block_pool_id: id.block_pool_id.clone(),
            storage_info: StorageInfoProto {
                layout_version: crate::identity::LAYOUT_VERSION as u32,
                namespce_id: id.namespace_id,
                cluster_id: id.cluster_id.clone(),
                c_time: id.ctime_ms as u64,
            },
            software_version: SOFTWARE_VERSION.into(),
            // Bit 0: block reports may use the compact buffer encoding.
            capabilities: Some(1),
        },
    })
}

pub async fn save_namespace(
    nn: Nn,
    _: CallCtx,
    req: SaveNamespaceRequestProto,
) -> Res<SaveNamespaceResponseProto> {
    // As in HDFS: an image is only taken while mutations are held off.
    if !nn.in_safe_mode() {
        return Err(FsError::Io(
            "Safe mode should be turned ON in order to create namespace image.".into(),
        )
        .into());
    }
    // `-saveNamespace -beforeShutdown`: no new image when the newest is recent enough.
    let (window, gap) = (req.time_window.unwrap_or(0), req.tx_gap.unwrap_or(0));
    if nn.image_recent_enough(window, gap) {
        return Ok(SaveNamespaceResponseProto { saved: Some(false) });
    }
    nn.checkpoint()
        .await
        .map_err(|e| FsError::Io(format!("saving the namespace failed: {e}")))?;
    Ok(SaveNamespaceResponseProto { saved: Some(true) })
}

/// The journal the admin calls act on; a NameNode configured without directories has none.
fn journal_of(nn: &Nn) -> Result<&crate::journal::Journal, FsError> {
    nn.journal
        .as_ref()
        .ok_or_else(|| FsError::Io("this NameNode keeps no journal".into()))
}

/// `hdfs dfsadmin -rollEdits`: ends the current journal segment and answers where the next
/// one starts. Refused in safe mode, as HDFS does ("Log not rolled").
pub async fn roll_edits(
    nn: Nn,
    _: CallCtx,
    _: RollEditsRequestProto,
) -> Res<RollEditsResponseProto> {
    if nn.in_safe_mode() {
        return Err(FsError::SafeMode(format!(
            "Log not rolled. Name node is in safe mode.\n{}",
            nn.safe_mode_reason()
        ))
        .into());
    }
    let journal = journal_of(&nn)?;
    let txid = journal
        .roll()
        .await
        .map_err(|e| FsError::Io(e.to_string()))?;
    tracing::info!(new_segment_txid = txid, "journal rolled on request");
    Ok(RollEditsResponseProto {
        new_segment_tx_id: txid,
    })
}

/// `hdfs dfsadmin -restoreFailedStorage true|false|check`: whether journal rolls bring
/// failed journal directories back into service. Answers the setting in force after the
/// call. (Name directories need no switch: every checkpoint tries each of them.)
pub async fn restore_failed_storage(
    nn: Nn,
    _: CallCtx,
    req: RestoreFailedStorageRequestProto,
) -> Res<RestoreFailedStorageResponseProto> {
    let journal = journal_of(&nn)?;
    match req.arg.as_str() {
        "check" => {}
        "true" | "false" => journal.set_restore_failed(req.arg == "true"),
        other => {
            return Err(FsError::IllegalArgument(format!(
                "restoreFailedStorage takes true, false or check, not {other:?}"
            ))
            .into())
        }
    }
    Ok(RestoreFailedStorageResponseProto {
        result: journal.restore_failed(),
    })
}
