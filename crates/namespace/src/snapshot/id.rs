//! Snapshot ids: what every part of the namespace that reads the past names a state by.

/// Snapshot ids, as HDFS numbers them (an int, from 0).
pub type SnapId = u32;

/// No snapshot sees an inode: its changes save nothing.
pub const NONE: SnapId = 0;

/// The live state, where a snapshot id is asked for (a diff against now, the attributes
/// a permission check reads).
pub const CURRENT: SnapId = SnapId::MAX;
