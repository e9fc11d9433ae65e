//! An inode's rarely-present parts (extended attributes, its own storage policy, a
//! directory's quotas), kept beside the inode in one map so that inodes without any pay
//! nothing for them.

use super::quota::Quota;
use super::storage_policy::UNSPECIFIED;
use super::xattr::XAttr;

/// An inode's rarely-present parts, kept beside it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// In the order set (HDFS answers in its stored order: new ones first).
    pub xattrs: Vec<XAttr>,
    /// Its own storage policy id (`storage_policy::UNSPECIFIED`: inherited).
    pub storage_policy: u8,
    /// A directory's quotas and usage.
    pub quota: Option<Box<Quota>>,
}

impl Features {
    pub fn is_empty(&self) -> bool {
        self.xattrs.is_empty() && self.storage_policy == UNSPECIFIED && self.quota.is_none()
    }
}
