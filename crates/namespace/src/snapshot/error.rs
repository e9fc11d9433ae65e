//! What a snapshot operation refuses, with HDFS's `SnapshotException` wording.

/// A refused snapshot operation: the data each message is made of, worded here.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    #[error("Directory is not a snapshottable directory: {path}")]
    NotSnapshottable { path: String },
    /// allowSnapshot under or over another snapshottable directory: `relation` is what
    /// `other` is to `path` ("ancestor" or "subdirectory").
    #[error("Nested snapshottable directories not allowed: path={path}, the {relation} {other} is already a snapshottable directory.")]
    Nested {
        path: String,
        relation: &'static str,
        other: String,
    },
    #[error("The directory {path} has snapshot(s). Please redo the operation after removing all the snapshots.")]
    StillHasSnapshots { path: String },
    #[error("Failed to add snapshot: there is already a snapshot with the same name \"{name}\".")]
    NameTaken { name: String },
    #[error("Failed to add snapshot: there are already {count} snapshot(s) and the snapshot quota is {quota}")]
    QuotaReached { count: usize, quota: u32 },
    #[error("Cannot delete snapshot {name} from path {path}: the snapshot does not exist.")]
    NoSuchSnapshotToDelete { name: String, path: String },
    #[error("The snapshot {name} does not exist for directory {path}")]
    NoSuchSnapshotToRename { name: String, path: String },
    #[error("The snapshot {name} already exists for directory {path}")]
    RenameTaken { name: String, path: String },
    #[error("The directory {path} cannot be deleted since {path} is snapshottable and already has snapshots")]
    RootHasSnapshots { path: String },
    #[error("Cannot find the snapshot of directory {path} with name {name}")]
    NoSuchSnapshotToDiff { path: String, name: String },
    #[error("The path {path} is neither snapshottable nor under a snapshot root!")]
    NoSnapshotRoot { path: String },
    #[error("concat: the src file {path} is in snapshot")]
    ConcatSourceInSnapshot { path: String },
}
