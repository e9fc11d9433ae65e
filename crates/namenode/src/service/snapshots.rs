//! Snapshots through the service: the five changes journaled as any mutation, the
//! listings under the read lock. The rules are the namespace's (`namespace/snapshot*.rs`).

use super::{Admitted, NameNodeService, Operation};
use crate::clock::now_ms;
use crate::error::FsError;
use crate::namespace::query::FileStatus;
use crate::namespace::snapshot::diff::{DiffEntry, DiffListing};
use crate::namespace::snapshot::error::SnapshotError;

/// A snapshottable directory as `getSnapshottableDirListing` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshottableDir {
    /// The directory's status, named by its own name.
    pub status: FileStatus,
    pub snapshots: u32,
    pub quota: u32,
    /// The path of its parent (empty for `/`).
    pub parent: String,
}

/// One snapshot as `getSnapshotListing` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotEntry {
    /// The root as the snapshot shows it, named by the snapshot's name.
    pub status: FileStatus,
    pub id: u32,
    /// The snapshottable directory's path.
    pub root: String,
}

impl NameNodeService {
    pub async fn allow_snapshot(&self, who: &Admitted, src: &str) -> Result<(), FsError> {
        who.check(Operation::AllowSnapshot);
        self.commit(|ns| Ok(((), ns.plan_allow_snapshot(&ns.resolve_reserved(src)?)?)))
            .await
    }

    pub async fn disallow_snapshot(&self, who: &Admitted, src: &str) -> Result<(), FsError> {
        who.check(Operation::DisallowSnapshot);
        self.commit(|ns| Ok(((), ns.plan_disallow_snapshot(&ns.resolve_reserved(src)?)?)))
            .await
    }

    /// `createSnapshot`: the new snapshot's path.
    pub async fn create_snapshot(
        &self,
        who: &Admitted,
        root: &str,
        name: Option<&str>,
    ) -> Result<String, FsError> {
        let user = who.user_for(Operation::CreateSnapshot);
        let caller = self.caller(user);
        let now = now_ms();
        self.commit_once(who, |ns| {
            ns.plan_create_snapshot(&caller, &ns.resolve_reserved(root)?, name, now)
        })
        .await
    }

    pub async fn delete_snapshot(
        &self,
        who: &Admitted,
        root: &str,
        name: &str,
    ) -> Result<(), FsError> {
        let user = who.user_for(Operation::DeleteSnapshot);
        let caller = self.caller(user);
        let now = now_ms();
        self.commit_once(who, |ns| {
            let root = ns.resolve_reserved(root)?;
            Ok(((), ns.plan_delete_snapshot(&caller, &root, name, now)?))
        })
        .await
    }

    pub async fn rename_snapshot(
        &self,
        who: &Admitted,
        root: &str,
        old: &str,
        new: &str,
    ) -> Result<(), FsError> {
        let user = who.user_for(Operation::RenameSnapshot);
        let caller = self.caller(user);
        let now = now_ms();
        self.commit_once(who, |ns| {
            let root = ns.resolve_reserved(root)?;
            Ok(((), ns.plan_rename_snapshot(&caller, &root, old, new, now)?))
        })
        .await
    }

    /// `getSnapshottableDirListing`: every snapshottable directory for the superuser, the
    /// caller's own otherwise (as HDFS filters them).
    pub fn snapshottable_dirs(&self, who: &Admitted) -> Vec<SnapshottableDir> {
        let user = who.user_for(Operation::GetSnapshottableDirListing);
        let caller = self.caller(user);
        let ns = self.ns.read();
        ns.snapshot_roots()
            .into_iter()
            .filter_map(|(slot, snapshots, quota)| {
                // HDFS builds this status without the snapshot-enabled flag.
                let status = FileStatus {
                    snapshot_enabled: false,
                    ..ns.status(slot, true)
                };
                if !caller.superuser && status.owner != caller.user {
                    return None;
                }
                let path = ns.path_of(slot);
                let parent = match path.rsplit_once('/') {
                    _ if path == "/" => String::new(),
                    Some(("", _)) => "/".to_string(),
                    Some((p, _)) => p.to_string(),
                    None => String::new(),
                };
                Some(SnapshottableDir {
                    status,
                    snapshots: snapshots as u32,
                    quota,
                    parent,
                })
            })
            .collect()
    }

    /// `getSnapshotListing`: a snapshottable directory's snapshots in name order (HDFS
    /// reads them from its by-name list).
    pub fn snapshot_listing(
        &self,
        who: &Admitted,
        root: &str,
    ) -> Result<Vec<SnapshotEntry>, FsError> {
        let user = who.user_for(Operation::GetSnapshotListing);
        let caller = self.caller(user);
        let ns = self.ns.read();
        let (slot, path) = ns.resolve_checked(&caller, &ns.resolve_reserved(root)?)?;
        if !ns.is_snapshot_root(slot) {
            return Err(SnapshotError::NotSnapshottable { path }.into());
        }
        let mut snaps = ns.snapshots_of(slot);
        snaps.sort_by(|a, b| a.1.as_bytes().cmp(b.1.as_bytes()));
        Ok(snaps
            .into_iter()
            .map(|(id, name, ctime)| {
                let mut status = ns.status_at(slot, id + 1, name.as_bytes());
                status.mtime = ctime;
                SnapshotEntry {
                    status,
                    id,
                    root: path.clone(),
                }
            })
            .collect())
    }

    /// `getSnapshotDiffReport`: the root's path and the changes from `from` to `to`.
    pub fn snapshot_diff(
        &self,
        who: &Admitted,
        root: &str,
        from: &str,
        to: &str,
    ) -> Result<(String, Vec<DiffEntry>), FsError> {
        let user = who.user_for(Operation::GetSnapshotDiffReport);
        let caller = self.caller(user);
        let ns = self.ns.read();
        ns.snapshot_diff(&caller, &ns.resolve_reserved(root)?, from, to)
    }

    /// `getSnapshotDiffReportListing`: the same changes as the lists Hadoop's client builds
    /// its report from, in one page.
    pub fn snapshot_diff_listing(
        &self,
        who: &Admitted,
        root: &str,
        from: &str,
        to: &str,
    ) -> Result<(String, DiffListing), FsError> {
        let user = who.user_for(Operation::GetSnapshotDiffReportListing);
        let caller = self.caller(user);
        let ns = self.ns.read();
        ns.snapshot_diff_listing(&caller, &ns.resolve_reserved(root)?, from, to)
    }
}
