//! The rest of ClientProtocol Ferrite serves: batched listings, checkAccess, the enclosing
//! root, per-volume storage reports, corrupt-block listing, the edit log's txid, metaSave,
//! and the administration calls whose HDFS effect has nothing to act on here.

use ferrite_ipc::{Router, CLIENT_PROTOCOL};
use ferrite_proto::hdfs::*;

use super::convert::{datanode_report_info, located_blocks, status_proto};
use super::{Nn, Register, Res};
use crate::error::FsError;
use crate::namespace::perm;
use crate::service::NameNodeService;
use crate::service::{Admitted, Operation};

pub fn register(r: &mut Router<NameNodeService>) {
    let p = CLIENT_PROTOCOL;
    r.op(p, Operation::GetBatchedListing, batched_listing);
    r.op(p, Operation::CheckAccess, check_access);
    r.op(p, Operation::GetEnclosingRoot, enclosing_root);
    r.op(p, Operation::GetDatanodeStorageReport, storage_report);
    r.op(p, Operation::ListCorruptFileBlocks, corrupt_file_blocks);
    r.op(p, Operation::GetCurrentEditLogTxid, current_txid);
    r.op(p, Operation::GetEditsFromTxid, edits_from_txid);
    r.op(p, Operation::MetaSave, meta_save);
    r.op(p, Operation::RefreshNodes, refresh_nodes);
    r.op(p, Operation::FinalizeUpgrade, finalize_upgrade);
    r.op(p, Operation::UpgradeStatus, upgrade_status);
    r.op(p, Operation::RollingUpgrade, rolling_upgrade);
    r.op(p, Operation::SetBalancerBandwidth, set_balancer_bandwidth);
}

/// HDFS's `dfs.batched.ls.limit`: entries per batched answer.
const BATCHED_LIMIT: usize = 100;

/// getBatchedListing: each path's listing in turn (a file lists itself, a missing path
/// answers its exception in place), at most `BATCHED_LIMIT` entries; the client asks again
/// from the last path with `startAfter`.
pub async fn batched_listing(
    nn: Nn,
    who: Admitted,
    req: GetBatchedListingRequestProto,
) -> Res<GetBatchedListingResponseProto> {
    let pool = &nn.identity().block_pool_id;
    let mut listings = Vec::new();
    let mut count = 0;
    let mut after = req.start_after.to_vec();
    let mut has_more = false;
    for (i, path) in req.paths.iter().enumerate() {
        if count >= BATCHED_LIMIT {
            has_more = true;
            break;
        }
        let start = if i == 0 { after.clone() } else { Vec::new() };
        let listing = match nn.listing(&who, path, &start, req.need_location) {
            Ok(Some(l)) => l,
            Ok(None) => {
                listings.push(failed(
                    i,
                    &FsError::NotFound(format!("Path {path} does not exist")),
                ));
                continue;
            }
            Err(e) => {
                listings.push(failed(i, &e));
                continue;
            }
        };
        let room = BATCHED_LIMIT - count;
        let take = listing.entries.len().min(room);
        let mut partial: Vec<HdfsFileStatusProto> =
            listing.entries[..take].iter().map(status_proto).collect();
        for (st, loc) in partial.iter_mut().zip(&listing.located) {
            st.locations = loc.as_ref().map(|l| located_blocks(pool, l));
        }
        count += take;
        after = listing.entries[..take]
            .last()
            .map(|e| e.name.clone())
            .unwrap_or_default();
        if take < listing.entries.len() || listing.remaining > 0 {
            has_more = true;
        }
        listings.push(BatchedDirectoryListingProto {
            partial_listing: partial,
            parent_idx: i as u32,
            exception: None,
        });
        if has_more {
            break;
        }
    }
    Ok(GetBatchedListingResponseProto {
        listings,
        has_more,
        start_after: after,
    })
}

fn failed(i: usize, e: &FsError) -> BatchedDirectoryListingProto {
    BatchedDirectoryListingProto {
        partial_listing: Vec::new(),
        parent_idx: i as u32,
        exception: Some(RemoteExceptionProto {
            class_name: e.java_class().to_string(),
            message: Some(e.to_string()),
        }),
    }
}

pub async fn check_access(
    nn: Nn,
    who: Admitted,
    req: CheckAccessRequestProto,
) -> Res<CheckAccessResponseProto> {
    let mode = u16::try_from(req.mode).unwrap_or(0) & (perm::READ | perm::WRITE | perm::EXECUTE);
    nn.check_access(&who, &req.path, mode)
        .map_err(|e| match e {
            // HDFS's words for a missing path here.
            e if e.is_not_found() => FsError::NotFound(format!("Path not found: {}", req.path)),
            e => e,
        })?;
    Ok(CheckAccessResponseProto {})
}

/// The root of the encryption zone a path is in, else `/`: Ferrite has no encryption
/// zones, so always `/` (HDFS answers so for a missing path too).
pub async fn enclosing_root(
    _: Nn,
    _: Admitted,
    _: GetEnclosingRootRequestProto,
) -> Res<GetEnclosingRootResponseProto> {
    Ok(GetEnclosingRootResponseProto {
        enclosing_root_path: Some("/".into()),
    })
}

/// Each DataNode with its volumes and their storage types.
pub async fn storage_report(
    nn: Nn,
    _: Admitted,
    req: GetDatanodeStorageReportRequestProto,
) -> Res<GetDatanodeStorageReportResponseProto> {
    let filter = super::blocks::node_filter(req.r#type);
    let reports = nn
        .datanode_report(filter)
        .iter()
        .map(|n| DatanodeStorageReportProto {
            datanode_info: datanode_report_info(n),
            storage_reports: n
                .storages
                .iter()
                .map(|s| StorageReportProto {
                    storage_uuid: s.uuid.clone(),
                    failed: Some(s.failed),
                    capacity: Some(s.capacity),
                    dfs_used: Some(s.dfs_used),
                    remaining: Some(s.remaining),
                    block_pool_used: Some(s.dfs_used),
                    storage: Some(DatanodeStorageProto {
                        storage_uuid: s.uuid.clone(),
                        state: None,
                        storage_type: Some(i32::from(s.storage_type.max(1))),
                    }),
                    non_dfs_used: Some(s.capacity.saturating_sub(s.dfs_used + s.remaining)),
                    mount: None,
                })
                .collect(),
        })
        .collect();
    Ok(GetDatanodeStorageReportResponseProto {
        datanode_storage_reports: reports,
    })
}

pub async fn corrupt_file_blocks(
    nn: Nn,
    who: Admitted,
    req: ListCorruptFileBlocksRequestProto,
) -> Res<ListCorruptFileBlocksResponseProto> {
    let (found, cookie) = nn.corrupt_file_blocks(&who, &req.path, req.cookie.as_deref())?;
    Ok(ListCorruptFileBlocksResponseProto {
        corrupt: CorruptFileBlocksProto {
            files: found.into_iter().map(|(path, _)| path).collect(),
            cookie,
        },
    })
}

pub async fn current_txid(
    nn: Nn,
    _: Admitted,
    _: GetCurrentEditLogTxidRequestProto,
) -> Res<GetCurrentEditLogTxidResponseProto> {
    Ok(GetCurrentEditLogTxidResponseProto {
        txid: nn.last_txid() as i64,
    })
}

/// Records per inotify answer (HDFS's `dfs.namenode.inotify.max.events.per.rpc`).
const EVENTS_PER_RPC: usize = 1000;

/// inotify: the synced records from `txid` on, as HDFS's events.
pub async fn edits_from_txid(
    nn: Nn,
    who: Admitted,
    req: GetEditsFromTxidRequestProto,
) -> Res<GetEditsFromTxidResponseProto> {
    use crate::journal::codec::{decode_record, Next};
    let from = req.txid.max(1) as u64;
    let (bytes, synced) = nn
        .read_edits(&who, from, 4 << 20, std::time::Duration::ZERO)
        .await?;
    let mut records = Vec::new();
    let mut rest = &bytes[..];
    while records.len() < EVENTS_PER_RPC && !rest.is_empty() {
        match decode_record(rest).map_err(|e| FsError::internal("journal", e))? {
            Next::End => break,
            Next::Record { txid, op, size } => {
                rest = &rest[size..];
                if txid >= from && txid <= synced {
                    records.push((txid, op));
                }
            }
        }
    }
    Ok(GetEditsFromTxidResponseProto {
        events_list: crate::inotify::events_list(&records, synced),
    })
}

pub async fn meta_save(
    nn: Nn,
    who: Admitted,
    req: MetaSaveRequestProto,
) -> Res<MetaSaveResponseProto> {
    nn.meta_save(&who, &req.filename)?;
    Ok(MetaSaveResponseProto {})
}

/// Re-reads the hosts files (`dfs.hosts`, `dfs.hosts.exclude`) and starts or ends
/// decommission and maintenance to match. The superuser's, as in HDFS.
pub async fn refresh_nodes(
    nn: Nn,
    who: Admitted,
    _: RefreshNodesRequestProto,
) -> Res<RefreshNodesResponseProto> {
    nn.refresh_nodes(&who)?;
    Ok(RefreshNodesResponseProto {})
}

/// No upgrade is ever in progress: finalizing does nothing, as in HDFS then.
pub async fn finalize_upgrade(
    _: Nn,
    _: Admitted,
    _: FinalizeUpgradeRequestProto,
) -> Res<FinalizeUpgradeResponseProto> {
    Ok(FinalizeUpgradeResponseProto {})
}

pub async fn upgrade_status(
    _: Nn,
    _: Admitted,
    _: UpgradeStatusRequestProto,
) -> Res<UpgradeStatusResponseProto> {
    Ok(UpgradeStatusResponseProto {
        upgrade_finalized: true,
    })
}

/// QUERY: no rolling upgrade is in progress. Starting one is refused: Ferrite's image and
/// journal formats have no rollback images to keep.
pub async fn rolling_upgrade(
    _: Nn,
    _: Admitted,
    req: RollingUpgradeRequestProto,
) -> Res<RollingUpgradeResponseProto> {
    match RollingUpgradeActionProto::try_from(req.action) {
        Ok(RollingUpgradeActionProto::Query) => Ok(RollingUpgradeResponseProto {
            rolling_upgrade_info: None,
        }),
        _ => Err(FsError::Unsupported("Ferrite does not do rolling upgrades".into()).into()),
    }
}

/// The Balancer's bandwidth: each DataNode gets it with its next heartbeat and paces its
/// replica moves by it.
pub async fn set_balancer_bandwidth(
    nn: Nn,
    who: Admitted,
    req: SetBalancerBandwidthRequestProto,
) -> Res<SetBalancerBandwidthResponseProto> {
    // HDFS's field is signed; dfsadmin refuses negatives before it calls.
    nn.set_balancer_bandwidth(&who, req.bandwidth.max(0) as u64);
    Ok(SetBalancerBandwidthResponseProto {})
}
