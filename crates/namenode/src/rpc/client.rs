//! ClientNamenodeProtocol's namespace calls: lookups, listings, summaries, and the
//! mutations of names, permissions, owners, times and replication.

use ferrite_ipc::{Router, CLIENT_PROTOCOL};
use ferrite_proto::common::HaServiceStateProto;
use ferrite_proto::hdfs::*;

use super::convert::{located_blocks, perm_bits, status_proto};
use super::{Nn, Register, Res};
use crate::error::FsError;
use crate::namespace::plan::Mode;
use crate::namespace::query::ContentSummary;
use crate::namespace::quota::{type_index, QuotaView, NONE, N_TYPES};
use crate::service::{Admitted, Operation};
use crate::service::{CreateRequest, NameNodeService, SafeModeAction};

pub fn register(r: &mut Router<NameNodeService>) {
    let p = CLIENT_PROTOCOL;
    r.op(p, Operation::GetServerDefaults, get_server_defaults);
    r.op(p, Operation::GetFileInfo, get_file_info);
    r.op(p, Operation::GetFileLinkInfo, get_file_link_info);
    r.op(p, Operation::GetLocatedFileInfo, get_located_file_info);
    r.op(p, Operation::GetListing, get_listing);
    r.op(p, Operation::GetContentSummary, get_content_summary);
    r.op(p, Operation::GetQuotaUsage, get_quota_usage);
    r.op(p, Operation::SetQuota, set_quota);
    r.op(
        p,
        Operation::GetPreferredBlockSize,
        get_preferred_block_size,
    );
    r.op(p, Operation::IsFileClosed, is_file_closed);
    r.op(p, Operation::GetDataEncryptionKey, get_data_encryption_key);
    r.op(p, Operation::GetHAServiceState, get_ha_service_state);
    r.op(p, Operation::Msync, msync);
    r.op(p, Operation::SetSafeMode, set_safe_mode);
    r.op(p, Operation::Mkdirs, mkdirs);
    r.op(p, Operation::Create, create);
    r.op(p, Operation::Fsync, fsync);
    r.op(p, Operation::Rename, rename);
    r.op(p, Operation::Rename2, rename2);
    r.op(p, Operation::Delete, delete);
    r.op(p, Operation::SetPermission, set_permission);
    r.op(p, Operation::SetOwner, set_owner);
    r.op(p, Operation::SetTimes, set_times);
    r.op(p, Operation::SetReplication, set_replication);
    r.op(p, Operation::RenewLease, renew_lease);
    r.op(p, Operation::RecoverLease, recover_lease);
    r.op(p, Operation::SaveNamespace, save_namespace);
    r.op(p, Operation::RollEdits, roll_edits);
    r.op(p, Operation::RestoreFailedStorage, restore_failed_storage);
}

pub async fn get_server_defaults(
    nn: Nn,
    _: Admitted,
    _: GetServerDefaultsRequestProto,
) -> Res<GetServerDefaultsResponseProto> {
    let d = nn.server_defaults();
    Ok(GetServerDefaultsResponseProto {
        server_defaults: FsServerDefaultsProto {
            block_size: d.block_size,
            bytes_per_checksum: d.bytes_per_checksum,
            write_packet_size: d.write_packet_size,
            replication: u32::from(d.replication),
            file_buffer_size: d.file_buffer_size,
            encrypt_data_transfer: Some(false),
            trash_interval: Some(d.trash_interval_min),
            checksum_type: Some(d.checksum_type as i32),
            key_provider_uri: Some(String::new()),
            policy_id: Some(d.storage_policy_id),
            snapshot_trash_root_enabled: Some(false),
        },
    })
}

pub async fn get_file_info(
    nn: Nn,
    who: Admitted,
    req: GetFileInfoRequestProto,
) -> Res<GetFileInfoResponseProto> {
    let st = nn.file_info(&who, &req.src)?;
    Ok(GetFileInfoResponseProto {
        fs: st.as_ref().map(status_proto),
    })
}

pub async fn get_file_link_info(
    nn: Nn,
    who: Admitted,
    req: GetFileLinkInfoRequestProto,
) -> Res<GetFileLinkInfoResponseProto> {
    let st = nn.file_link_info(&who, &req.src)?;
    Ok(GetFileLinkInfoResponseProto {
        fs: st.as_ref().map(status_proto),
    })
}

/// A file's status with its blocks' locations (PathHandle opens use it); None when the
/// path does not exist.
pub async fn get_located_file_info(
    nn: Nn,
    who: Admitted,
    req: GetLocatedFileInfoRequestProto,
) -> Res<GetLocatedFileInfoResponseProto> {
    let src = req.src.as_deref().unwrap_or_default();
    let need_token = req.need_block_token.unwrap_or(false);
    let found = nn.located_file_info(&who, src, need_token)?;
    let pool = &nn.identity().block_pool_id;
    Ok(GetLocatedFileInfoResponseProto {
        fs: found.map(|(st, located)| {
            let mut fs = status_proto(&st);
            fs.locations = located.as_ref().map(|l| located_blocks(pool, l));
            fs
        }),
    })
}

pub async fn get_listing(
    nn: Nn,
    who: Admitted,
    req: GetListingRequestProto,
) -> Res<GetListingResponseProto> {
    let listing = nn.listing(&who, &req.src, &req.start_after, req.need_location)?;
    let Some(l) = listing else {
        return Ok(GetListingResponseProto { dir_list: None });
    };
    let pool = &nn.identity().block_pool_id;
    let mut partial_listing: Vec<HdfsFileStatusProto> =
        l.entries.iter().map(status_proto).collect();
    for (st, loc) in partial_listing.iter_mut().zip(&l.located) {
        st.locations = loc.as_ref().map(|l| located_blocks(pool, l));
    }
    Ok(GetListingResponseProto {
        dir_list: Some(DirectoryListingProto {
            partial_listing,
            remaining_entries: l.remaining,
        }),
    })
}

fn content_summary_proto(cs: &ContentSummary, q: &QuotaView) -> ContentSummaryProto {
    ContentSummaryProto {
        length: cs.length,
        file_count: cs.files,
        directory_count: cs.dirs,
        quota: q.ns as u64,
        space_consumed: cs.space_consumed,
        space_quota: q.space as u64,
        type_quota_infos: type_quota_infos(q, None),
        snapshot_length: Some(cs.snapshot.length),
        snapshot_file_count: Some(cs.snapshot.files),
        snapshot_directory_count: Some(cs.snapshot.dirs),
        snapshot_space_consumed: Some(cs.snapshot.space),
        ..Default::default()
    }
}

/// Per storage type (HDFS's quota-capable ones, in its order), when a type quota is set
/// or the usage by type is known.
fn type_quota_infos(
    q: &QuotaView,
    consumed: Option<&[i64; N_TYPES]>,
) -> Option<StorageTypeQuotaInfosProto> {
    let consumed = consumed.or(q.used.as_ref().map(|u| &u.types));
    if !q.types.iter().any(|&t| t != NONE) && consumed.is_none() {
        return None;
    }
    let infos = QUOTA_TYPES
        .iter()
        .map(|&id| {
            let i = type_index(id).expect("a storage type");
            StorageTypeQuotaInfoProto {
                r#type: Some(i32::from(id)),
                quota: q.types[i] as u64,
                consumed: consumed.map_or(0, |c| c[i]) as u64,
            }
        })
        .collect();
    Some(StorageTypeQuotaInfosProto {
        type_quota_info: infos,
    })
}

/// `StorageType.getTypesSupportingQuota()`: RAM_DISK, SSD, DISK, ARCHIVE, NVDIMM.
const QUOTA_TYPES: [u8; 5] = [4, 2, 1, 3, 6];

pub async fn get_content_summary(
    nn: Nn,
    who: Admitted,
    req: GetContentSummaryRequestProto,
) -> Res<GetContentSummaryResponseProto> {
    let cs = nn.content_summary(&who, &req.path).await?;
    let q = nn.quota_view(&who, &req.path)?;
    Ok(GetContentSummaryResponseProto {
        summary: content_summary_proto(&cs, &q),
    })
}

pub async fn get_quota_usage(
    nn: Nn,
    who: Admitted,
    req: GetQuotaUsageRequestProto,
) -> Res<GetQuotaUsageResponseProto> {
    let q = nn.quota_view(&who, &req.path)?;
    let (count, space) = match &q.used {
        Some(u) => (u.ns as u64, u.space as u64),
        None => {
            let cs = nn.content_summary(&who, &req.path).await?;
            (cs.files + cs.dirs, cs.space_consumed)
        }
    };
    Ok(GetQuotaUsageResponseProto {
        usage: QuotaUsageProto {
            file_and_directory_count: count,
            quota: q.ns as u64,
            space_consumed: space,
            space_quota: q.space as u64,
            type_quota_infos: type_quota_infos(&q, None),
        },
    })
}

pub async fn set_quota(
    nn: Nn,
    who: Admitted,
    req: SetQuotaRequestProto,
) -> Res<SetQuotaResponseProto> {
    let storage_type = req.storage_type.map(|t| t as u8);
    nn.set_quota(
        &who,
        &req.path,
        req.namespace_quota as i64,
        req.storagespace_quota as i64,
        storage_type,
    )
    .await?;
    Ok(SetQuotaResponseProto {})
}

pub async fn get_preferred_block_size(
    nn: Nn,
    who: Admitted,
    req: GetPreferredBlockSizeRequestProto,
) -> Res<GetPreferredBlockSizeResponseProto> {
    let st = nn.regular_file_status(&who, &req.filename)?;
    Ok(GetPreferredBlockSizeResponseProto {
        bsize: st.block_size,
    })
}

pub async fn is_file_closed(
    nn: Nn,
    who: Admitted,
    req: IsFileClosedRequestProto,
) -> Res<IsFileClosedResponseProto> {
    let st = nn.regular_file_status(&who, &req.src)?;
    Ok(IsFileClosedResponseProto {
        result: !st.under_construction,
    })
}

pub async fn get_data_encryption_key(
    _: Nn,
    _: Admitted,
    _: GetDataEncryptionKeyRequestProto,
) -> Res<GetDataEncryptionKeyResponseProto> {
    Ok(GetDataEncryptionKeyResponseProto {})
}

pub async fn get_ha_service_state(
    nn: Nn,
    _: Admitted,
    _: HaServiceStateRequestProto,
) -> Res<HaServiceStateResponseProto> {
    let state = match nn.ha_state() {
        crate::service::ha::HaState::Active => HaServiceStateProto::Active,
        crate::service::ha::HaState::Standby => HaServiceStateProto::Standby,
    };
    Ok(HaServiceStateResponseProto {
        state: state as i32,
    })
}

pub async fn msync(_: Nn, _: Admitted, _: MsyncRequestProto) -> Res<MsyncResponseProto> {
    Ok(MsyncResponseProto {})
}

pub async fn set_safe_mode(
    nn: Nn,
    who: Admitted,
    req: SetSafeModeRequestProto,
) -> Res<SetSafeModeResponseProto> {
    let action = match SafeModeActionProto::try_from(req.action) {
        Ok(SafeModeActionProto::SafemodeGet) => SafeModeAction::Get,
        Ok(SafeModeActionProto::SafemodeEnter) => SafeModeAction::Enter,
        Ok(SafeModeActionProto::SafemodeLeave) => SafeModeAction::Leave,
        Ok(SafeModeActionProto::SafemodeForceExit) => SafeModeAction::ForceExit,
        Err(_) => {
            return Err(FsError::IllegalArgument(format!(
                "unknown safe mode action {}",
                req.action
            ))
            .into())
        }
    };
    Ok(SetSafeModeResponseProto {
        result: nn.safe_mode_action(&who, action)?,
    })
}

pub async fn mkdirs(nn: Nn, who: Admitted, req: MkdirsRequestProto) -> Res<MkdirsResponseProto> {
    let mode = Mode {
        masked: perm_bits(&req.masked),
        unmasked: req.unmasked.as_ref().map(perm_bits),
    };
    nn.mkdirs(&who, &req.src, mode, req.create_parent).await?;
    Ok(MkdirsResponseProto { result: true })
}

const FLAG_CREATE: u32 = 0x01;
const FLAG_OVERWRITE: u32 = 0x02;
const FLAG_APPEND: u32 = 0x04;

pub async fn create(nn: Nn, who: Admitted, req: CreateRequestProto) -> Res<CreateResponseProto> {
    let flags = req.create_flag;
    let create = CreateRequest {
        src: &req.src,
        masked: perm_bits(&req.masked),
        unmasked: req.unmasked.as_ref().map(perm_bits),
        client_name: &req.client_name,
        create: flags & FLAG_CREATE != 0,
        overwrite: flags & FLAG_OVERWRITE != 0,
        append: flags & FLAG_APPEND != 0,
        create_parent: req.create_parent,
        replication: req.replication,
        block_size: req.block_size,
    };
    let st = nn.create(&who, &create).await?;
    Ok(CreateResponseProto {
        fs: st.as_ref().map(status_proto),
    })
}

pub async fn fsync(nn: Nn, who: Admitted, req: FsyncRequestProto) -> Res<FsyncResponseProto> {
    // -1 (or nothing) when the client has no length to record.
    let len = req.last_block_length.and_then(|l| u64::try_from(l).ok());
    nn.fsync(&who, &req.src, &req.client, req.file_id.unwrap_or(0), len)
        .await?;
    Ok(FsyncResponseProto {})
}

pub async fn rename(nn: Nn, who: Admitted, req: RenameRequestProto) -> Res<RenameResponseProto> {
    let result = nn.rename(&who, &req.src, &req.dst).await?;
    Ok(RenameResponseProto { result })
}

pub async fn rename2(nn: Nn, who: Admitted, req: Rename2RequestProto) -> Res<Rename2ResponseProto> {
    nn.rename2(&who, &req.src, &req.dst, req.overwrite_dest)
        .await?;
    Ok(Rename2ResponseProto {})
}

pub async fn delete(nn: Nn, who: Admitted, req: DeleteRequestProto) -> Res<DeleteResponseProto> {
    let result = nn.delete(&who, &req.src, req.recursive).await?;
    Ok(DeleteResponseProto { result })
}

pub async fn set_permission(
    nn: Nn,
    who: Admitted,
    req: SetPermissionRequestProto,
) -> Res<SetPermissionResponseProto> {
    nn.set_permission(&who, &req.src, perm_bits(&req.permission))
        .await?;
    Ok(SetPermissionResponseProto {})
}

pub async fn set_owner(
    nn: Nn,
    who: Admitted,
    req: SetOwnerRequestProto,
) -> Res<SetOwnerResponseProto> {
    nn.set_owner(
        &who,
        &req.src,
        req.username.as_deref(),
        req.groupname.as_deref(),
    )
    .await?;
    Ok(SetOwnerResponseProto {})
}

pub async fn set_times(
    nn: Nn,
    who: Admitted,
    req: SetTimesRequestProto,
) -> Res<SetTimesResponseProto> {
    // -1 (sent as u64::MAX) leaves a time unchanged.
    let keep = |t: u64| (t as i64 >= 0).then_some(t as i64);
    nn.set_times(&who, &req.src, keep(req.mtime), keep(req.atime))
        .await?;
    Ok(SetTimesResponseProto {})
}

pub async fn set_replication(
    nn: Nn,
    who: Admitted,
    req: SetReplicationRequestProto,
) -> Res<SetReplicationResponseProto> {
    let result = nn.set_replication(&who, &req.src, req.replication).await?;
    Ok(SetReplicationResponseProto { result })
}

pub async fn renew_lease(
    nn: Nn,
    who: Admitted,
    req: RenewLeaseRequestProto,
) -> Res<RenewLeaseResponseProto> {
    nn.renew_lease(&who, &req.client_name);
    Ok(RenewLeaseResponseProto {})
}

pub async fn recover_lease(
    nn: Nn,
    who: Admitted,
    req: RecoverLeaseRequestProto,
) -> Res<RecoverLeaseResponseProto> {
    let result = nn.recover_lease(&who, &req.src, &req.client_name).await?;
    Ok(RecoverLeaseResponseProto { result })
}

/// The software version we report, in Hadoop's format (clients only display it).
const SOFTWARE_VERSION: &str = "3.4.1";

pub async fn version_request(
    nn: Nn,
    _: Admitted,
    _: VersionRequestProto,
) -> Res<VersionResponseProto> {
    let id = nn.identity();
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
    who: Admitted,
    req: SaveNamespaceRequestProto,
) -> Res<SaveNamespaceResponseProto> {
    let (window, gap) = (req.time_window.unwrap_or(0), req.tx_gap.unwrap_or(0));
    let saved = nn.save_namespace_now(&who, window, gap).await?;
    Ok(SaveNamespaceResponseProto { saved: Some(saved) })
}

pub async fn roll_edits(
    nn: Nn,
    who: Admitted,
    _: RollEditsRequestProto,
) -> Res<RollEditsResponseProto> {
    Ok(RollEditsResponseProto {
        new_segment_tx_id: nn.roll_edits(&who).await?,
    })
}

pub async fn restore_failed_storage(
    nn: Nn,
    who: Admitted,
    req: RestoreFailedStorageRequestProto,
) -> Res<RestoreFailedStorageResponseProto> {
    Ok(RestoreFailedStorageResponseProto {
        result: nn.restore_failed_storage(&who, &req.arg)?,
    })
}
