//! The snapshot calls of ClientProtocol: allow, disallow, create, delete and rename, and the
//! two listings, and the diff report (whole, and as the paged lists in one page).

use ferrite_ipc::{Router, CLIENT_PROTOCOL};
use ferrite_proto::hdfs::*;

use super::convert::status_proto;
use super::{Nn, Register, Res};
use crate::service::NameNodeService;
use crate::service::{Admitted, Operation};

pub(super) fn register(r: &mut Router<NameNodeService>) {
    let p = CLIENT_PROTOCOL;
    r.op(p, Operation::AllowSnapshot, allow)
        .op(p, Operation::DisallowSnapshot, disallow)
        .op(p, Operation::CreateSnapshot, create)
        .op(p, Operation::DeleteSnapshot, delete)
        .op(p, Operation::RenameSnapshot, rename)
        .op(p, Operation::GetSnapshottableDirListing, snapshottable_dirs)
        .op(p, Operation::GetSnapshotListing, listing)
        .op(p, Operation::GetSnapshotDiffReport, diff)
        .op(p, Operation::GetSnapshotDiffReportListing, diff_listing);
}

async fn allow(
    nn: Nn,
    who: Admitted,
    req: AllowSnapshotRequestProto,
) -> Res<AllowSnapshotResponseProto> {
    nn.allow_snapshot(&who, &req.snapshot_root).await?;
    Ok(AllowSnapshotResponseProto {})
}

async fn disallow(
    nn: Nn,
    who: Admitted,
    req: DisallowSnapshotRequestProto,
) -> Res<DisallowSnapshotResponseProto> {
    nn.disallow_snapshot(&who, &req.snapshot_root).await?;
    Ok(DisallowSnapshotResponseProto {})
}

async fn create(
    nn: Nn,
    who: Admitted,
    req: CreateSnapshotRequestProto,
) -> Res<CreateSnapshotResponseProto> {
    let path = nn
        .create_snapshot(&who, &req.snapshot_root, req.snapshot_name.as_deref())
        .await?;
    Ok(CreateSnapshotResponseProto {
        snapshot_path: path,
    })
}

async fn delete(
    nn: Nn,
    who: Admitted,
    req: DeleteSnapshotRequestProto,
) -> Res<DeleteSnapshotResponseProto> {
    nn.delete_snapshot(&who, &req.snapshot_root, &req.snapshot_name)
        .await?;
    Ok(DeleteSnapshotResponseProto {})
}

async fn rename(
    nn: Nn,
    who: Admitted,
    req: RenameSnapshotRequestProto,
) -> Res<RenameSnapshotResponseProto> {
    nn.rename_snapshot(
        &who,
        &req.snapshot_root,
        &req.snapshot_old_name,
        &req.snapshot_new_name,
    )
    .await?;
    Ok(RenameSnapshotResponseProto {})
}

/// HDFS answers with no listing at all (not an empty one) when there is nothing to list.
async fn snapshottable_dirs(
    nn: Nn,
    who: Admitted,
    _: GetSnapshottableDirListingRequestProto,
) -> Res<GetSnapshottableDirListingResponseProto> {
    let dirs = nn.snapshottable_dirs(&who);
    let list = (!dirs.is_empty()).then(|| SnapshottableDirectoryListingProto {
        snapshottable_dir_listing: dirs
            .iter()
            .map(|d| SnapshottableDirectoryStatusProto {
                dir_status: status_proto(&d.status),
                snapshot_quota: d.quota,
                snapshot_number: d.snapshots,
                parent_fullpath: d.parent.clone().into_bytes(),
            })
            .collect(),
    });
    Ok(GetSnapshottableDirListingResponseProto {
        snapshottable_dir_list: list,
    })
}

async fn listing(
    nn: Nn,
    who: Admitted,
    req: GetSnapshotListingRequestProto,
) -> Res<GetSnapshotListingResponseProto> {
    let snaps = nn.snapshot_listing(&who, &req.snapshot_root)?;
    let list = (!snaps.is_empty()).then(|| SnapshotListingProto {
        snapshot_listing: snaps
            .iter()
            .map(|s| SnapshotStatusProto {
                dir_status: status_proto(&s.status),
                snapshot_id: s.id,
                parent_fullpath: s.root.clone().into_bytes(),
                is_deleted: false,
            })
            .collect(),
    });
    Ok(GetSnapshotListingResponseProto {
        snapshot_list: list,
    })
}

async fn diff(
    nn: Nn,
    who: Admitted,
    req: GetSnapshotDiffReportRequestProto,
) -> Res<GetSnapshotDiffReportResponseProto> {
    let (root, entries) = nn.snapshot_diff(
        &who,
        &req.snapshot_root,
        &req.from_snapshot,
        &req.to_snapshot,
    )?;
    Ok(GetSnapshotDiffReportResponseProto {
        diff_report: SnapshotDiffReportProto {
            snapshot_root: root,
            from_snapshot: req.from_snapshot,
            to_snapshot: req.to_snapshot,
            diff_report_entries: entries
                .into_iter()
                .map(|e| SnapshotDiffReportEntryProto {
                    fullpath: e.path,
                    // HDFS's `DiffType` labels.
                    modification_label: e.kind.to_string(),
                    target_path: e.target,
                })
                .collect(),
        },
    })
}

/// The whole report in one page: the cursor says there is no next one (an empty start path
/// and index -1, which ends Hadoop's client's loop).
async fn diff_listing(
    nn: Nn,
    who: Admitted,
    req: GetSnapshotDiffReportListingRequestProto,
) -> Res<GetSnapshotDiffReportListingResponseProto> {
    let (_, l) = nn.snapshot_diff_listing(
        &who,
        &req.snapshot_root,
        &req.from_snapshot,
        &req.to_snapshot,
    )?;
    let entries = |v: Vec<crate::namespace::snapshot::diff::ListingEntry>| {
        v.into_iter()
            .map(|e| SnapshotDiffReportListingEntryProto {
                fullpath: e.path,
                dir_id: e.dir_id,
                is_reference: e.reference,
                target_path: e.target,
                file_id: Some(e.file_id),
            })
            .collect()
    };
    Ok(GetSnapshotDiffReportListingResponseProto {
        diff_report: SnapshotDiffReportListingProto {
            modified_entries: entries(l.modified),
            created_entries: entries(l.created),
            deleted_entries: entries(l.deleted),
            is_from_earlier: l.from_earlier,
            cursor: Some(SnapshotDiffReportCursorProto {
                start_path: Vec::new(),
                index: -1,
            }),
        },
    })
}
