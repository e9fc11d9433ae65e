//! Block storage policies: HDFS's built-in suite (names, ids, storage types and fallbacks,
//! exactly as `BlockStoragePolicySuite.createDefaultSuite` builds them), set on files and
//! directories and inherited from the nearest ancestor that has one. Pure.
//!
//! Every volume Ferrite has is DISK, and every policy falls back to DISK where it cannot
//! have its first choice, so on such a cluster HDFS places blocks under any policy exactly
//! as Ferrite does; placement by storage type comes with typed volumes.

use super::inode::{Slot, ROOT_SLOT};
use super::perm::{Caller, WRITE};
use super::xattr::XAttrNs;
use super::{Namespace, Op};
use crate::error::FsError;

/// The mark HDFS puts on a path while its storage policy's satisfaction is pending (a user
/// xattr, visible to `getfattr` as on HDFS).
pub const SATISFIER_XATTR: &str = "hdfs.sps";

/// Storage types, numbered as `StorageTypeProto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageType {
    Disk = 1,
    Ssd = 2,
    Archive = 3,
    RamDisk = 4,
    Provided = 5,
    Nvdimm = 6,
}

impl StorageType {
    /// By name, in any case (`StorageType.parseStorageType`).
    pub fn by_name(name: &str) -> Option<StorageType> {
        [Disk, Ssd, Archive, RamDisk, Provided, Nvdimm]
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }

    pub fn name(self) -> &'static str {
        match self {
            StorageType::Disk => "DISK",
            StorageType::Ssd => "SSD",
            StorageType::Archive => "ARCHIVE",
            StorageType::RamDisk => "RAM_DISK",
            StorageType::Provided => "PROVIDED",
            StorageType::Nvdimm => "NVDIMM",
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub struct Policy {
    pub id: u8,
    pub name: &'static str,
    pub types: &'static [StorageType],
    pub creation_fallbacks: &'static [StorageType],
    pub replication_fallbacks: &'static [StorageType],
    pub copy_on_create_file: bool,
}

/// "No policy": the inode inherits its parent's.
pub const UNSPECIFIED: u8 = 0;
/// HDFS's default policy (HOT) for files under no policy at all.
pub const DEFAULT: u8 = 7;

use StorageType::*;

/// HDFS 3.4.1's suite, in id order.
pub const POLICIES: &[Policy] = &[
    Policy {
        id: 1,
        name: "PROVIDED",
        types: &[Provided, Disk],
        creation_fallbacks: &[Provided, Disk],
        replication_fallbacks: &[Provided, Disk],
        copy_on_create_file: false,
    },
    Policy {
        id: 2,
        name: "COLD",
        types: &[Archive],
        creation_fallbacks: &[],
        replication_fallbacks: &[],
        copy_on_create_file: false,
    },
    Policy {
        id: 5,
        name: "WARM",
        types: &[Disk, Archive],
        creation_fallbacks: &[Disk, Archive],
        replication_fallbacks: &[Disk, Archive],
        copy_on_create_file: false,
    },
    Policy {
        id: 7,
        name: "HOT",
        types: &[Disk],
        creation_fallbacks: &[],
        replication_fallbacks: &[Archive],
        copy_on_create_file: false,
    },
    Policy {
        id: 10,
        name: "ONE_SSD",
        types: &[Ssd, Disk],
        creation_fallbacks: &[Ssd, Disk],
        replication_fallbacks: &[Ssd, Disk],
        copy_on_create_file: false,
    },
    Policy {
        id: 12,
        name: "ALL_SSD",
        types: &[Ssd],
        creation_fallbacks: &[Disk],
        replication_fallbacks: &[Disk],
        copy_on_create_file: false,
    },
    Policy {
        id: 14,
        name: "ALL_NVDIMM",
        types: &[Nvdimm],
        creation_fallbacks: &[Disk],
        replication_fallbacks: &[Disk],
        copy_on_create_file: false,
    },
    Policy {
        id: 15,
        name: "LAZY_PERSIST",
        types: &[RamDisk, Disk],
        creation_fallbacks: &[Disk],
        replication_fallbacks: &[Disk],
        copy_on_create_file: true,
    },
];

impl Policy {
    /// The storage type of each of `replication` replicas (`chooseStorageTypes`): the
    /// policy's types in order, its last repeated.
    pub fn choose(&self, replication: u16) -> Vec<u8> {
        (0..replication as usize)
            .map(|i| self.types[i.min(self.types.len() - 1)] as u8)
            .collect()
    }

    pub fn creation_fallback_ids(&self) -> Vec<u8> {
        self.creation_fallbacks.iter().map(|&t| t as u8).collect()
    }

    /// The replication fallbacks as `StorageTypeProto` numbers (the enum's discriminants,
    /// so the slice is the same memory).
    pub fn replication_fallback_ids(&self) -> &'static [u8] {
        match self.replication_fallbacks {
            [] => &[],
            [Disk] => &[Disk as u8],
            [Archive] => &[Archive as u8],
            [Disk, Archive] => &[Disk as u8, Archive as u8],
            [Ssd, Disk] => &[Ssd as u8, Disk as u8],
            [Provided, Disk] => &[Provided as u8, Disk as u8],
            other => unreachable!("a suite policy with fallbacks {other:?}"),
        }
    }
}

pub fn by_id(id: u8) -> Option<&'static Policy> {
    POLICIES.iter().find(|p| p.id == id)
}

/// A policy by name, in any case (as HDFS looks them up).
pub fn by_name(name: &str) -> Option<&'static Policy> {
    POLICIES.iter().find(|p| p.name.eq_ignore_ascii_case(name))
}

/// HDFS's words for a missing path in the storage-policy calls.
fn missing(path: &str) -> String {
    format!("File/Directory does not exist: {path}")
}

fn disabled() -> FsError {
    FsError::Io(
        "Failed to set storage policy since dfs.storage.policy.enabled is set to false.".into(),
    )
}

impl Namespace {
    /// The policy in force at `slot`: its own, or its nearest ancestor's
    /// ([`UNSPECIFIED`] when none has one).
    pub fn storage_policy_of(&self, mut slot: Slot) -> u8 {
        if self.policies_set == 0 {
            return UNSPECIFIED;
        }
        loop {
            let own = self
                .features
                .get(&slot)
                .map_or(UNSPECIFIED, |f| f.storage_policy);
            if own != UNSPECIFIED || slot == ROOT_SLOT {
                return own;
            }
            slot = self.inode(slot).parent;
        }
    }

    /// The policy that decides where `slot`'s blocks go: its own or inherited one, HOT
    /// when there is none (HDFS's default).
    pub fn effective_storage_policy(&self, slot: Slot) -> &'static Policy {
        by_id(self.storage_policy_of(slot))
            .or_else(|| by_id(DEFAULT))
            .expect("HOT is in the suite")
    }

    /// The policy a new entry at `src` starts under: its parent directory's.
    pub fn policy_for_new(&self, src: &str) -> u8 {
        if self.policies_set == 0 {
            return UNSPECIFIED;
        }
        let parent = match src.trim_end_matches('/').rsplit_once('/') {
            Some(("", _)) | None => "/",
            Some((p, _)) => p,
        };
        self.existing(parent)
            .map_or(UNSPECIFIED, |s| self.storage_policy_of(s))
    }

    /// `setStoragePolicy` (a policy name) or `unsetStoragePolicy` (`None`).
    pub fn plan_set_storage_policy(
        &self,
        caller: &Caller,
        src: &str,
        name: Option<&str>,
        enabled: bool,
    ) -> Result<Vec<Op>, FsError> {
        if !enabled {
            return Err(disabled());
        }
        let policy = match name {
            Some(n) => {
                by_name(n)
                    .ok_or_else(|| {
                        FsError::IllegalArgument(format!(
                            "Cannot find a block policy with the name {n}"
                        ))
                    })?
                    .id
            }
            None => UNSPECIFIED,
        };
        let (slot, path) = self.resolve_checked_or(caller, src, missing)?;
        if !caller.bypass() {
            self.check_access(caller, slot, WRITE)?;
        }
        Ok(vec![Op::SetStoragePolicy { path, policy }])
    }

    /// `getStoragePolicy`: the policy in force at `src`; where none is, HDFS's default
    /// (HOT), as HDFS answers.
    pub fn get_storage_policy(
        &self,
        caller: &Caller,
        src: &str,
    ) -> Result<&'static Policy, FsError> {
        // At a `.snapshot` path HDFS 3.4.1 answers the inode's policy as it is now.
        let a = self.resolve_attrs(caller, src, missing)?;
        Ok(by_id(self.storage_policy_of(a.slot))
            .or_else(|| by_id(DEFAULT))
            .expect("HOT is in the suite"))
    }

    /// `satisfyStoragePolicy`: marks `src` with the satisfier's `user.hdfs.sps` (journaled,
    /// so a restart finds the path still pending) and returns its inode id to queue. As in
    /// HDFS, a file without blocks, or a path already marked, is skipped without an error.
    pub fn plan_satisfy_storage_policy(
        &self,
        caller: &Caller,
        src: &str,
        enabled: bool,
    ) -> Result<(Option<u64>, Vec<Op>), FsError> {
        if !enabled {
            return Err(FsError::Io(
                "Failed to satisfy storage policy since dfs.storage.policy.enabled is set to \
                 false."
                    .into(),
            ));
        }
        let (slot, path) = self.resolve_checked_or(caller, src, |p| format!("cannot find {p}"))?;
        if !caller.bypass() {
            self.check_access(caller, slot, WRITE)?;
        }
        let inode = self.inode(slot);
        let marked = self
            .xattrs_of(slot)
            .iter()
            .any(|x| x.ns == XAttrNs::User && x.name == crate::storage_policy::SATISFIER_XATTR);
        if inode.file().is_some_and(|f| f.blocks().is_empty()) || marked {
            return Ok((None, Vec::new()));
        }
        Ok((
            Some(inode.id),
            vec![Op::SetXAttr {
                path,
                ns: XAttrNs::User as u8,
                name: crate::storage_policy::SATISFIER_XATTR.into(),
                value: None,
            }],
        ))
    }

    /// Removes the satisfier's mark from inode `id` once its path is done with (nothing if
    /// it is gone, or someone removed the mark).
    pub fn plan_unmark_satisfied(&self, id: u64) -> Vec<Op> {
        let Some(slot) = self.slot_of_id(id) else {
            return Vec::new();
        };
        let marked = self
            .xattrs_of(slot)
            .iter()
            .any(|x| x.ns == XAttrNs::User && x.name == crate::storage_policy::SATISFIER_XATTR);
        if !marked {
            return Vec::new();
        }
        vec![Op::RemoveXAttr {
            path: self.path_of(slot),
            ns: XAttrNs::User as u8,
            name: crate::storage_policy::SATISFIER_XATTR.into(),
        }]
    }

    /// Every inode carrying the satisfier's mark (the queue a restart rebuilds).
    pub fn satisfier_marks(&self) -> Vec<u64> {
        self.features
            .iter()
            .filter(|(_, f)| {
                f.xattrs.iter().any(|x| {
                    x.ns == XAttrNs::User && x.name == crate::storage_policy::SATISFIER_XATTR
                })
            })
            .map(|(&slot, _)| self.inode(slot).id)
            .collect()
    }

    pub(super) fn apply_storage_policy(&mut self, slot: Slot, policy: u8) {
        let f = self.features.entry(slot).or_default();
        let had = f.storage_policy != UNSPECIFIED;
        f.storage_policy = policy;
        let has = policy != UNSPECIFIED;
        if f.is_empty() {
            self.features.remove(&slot);
        }
        match (had, has) {
            (false, true) => self.policies_set += 1,
            (true, false) => self.policies_set -= 1,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replication_fallbacks_as_numbers_are_the_suite_s() {
        for p in POLICIES {
            let want: Vec<u8> = p.replication_fallbacks.iter().map(|&t| t as u8).collect();
            assert_eq!(p.replication_fallback_ids(), want, "{}", p.name);
        }
    }

    #[test]
    fn the_suite_is_hdfs_s_and_policies_are_inherited() {
        assert_eq!(by_name("HOT").unwrap().id, DEFAULT);
        assert_eq!(by_name("hot").unwrap().id, DEFAULT);
        assert_eq!(by_id(12).unwrap().name, "ALL_SSD");
        let su = Caller::superuser("hdfs");
        let mut ns = Namespace::new("hdfs", "supergroup", 1);
        for op in ns.plan_mkdirs(&su, "/a/b", 0o755, true, 2).unwrap().ops {
            ns.apply(&op).unwrap();
        }
        let b = ns.existing("/a/b").unwrap();
        assert_eq!(ns.storage_policy_of(b), UNSPECIFIED);
        for op in ns
            .plan_set_storage_policy(&su, "/a", Some("COLD"), true)
            .unwrap()
        {
            ns.apply(&op).unwrap();
        }
        assert_eq!(ns.storage_policy_of(b), 2);
        for op in ns
            .plan_set_storage_policy(&su, "/a/b", Some("ALL_SSD"), true)
            .unwrap()
        {
            ns.apply(&op).unwrap();
        }
        assert_eq!(ns.storage_policy_of(b), 12);
        for op in ns.plan_set_storage_policy(&su, "/a/b", None, true).unwrap() {
            ns.apply(&op).unwrap();
        }
        assert_eq!(ns.storage_policy_of(b), 2);
        let e = ns
            .plan_set_storage_policy(&su, "/a", Some("FAST"), true)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Cannot find a block policy with the name FAST"
        );
        assert!(ns
            .plan_set_storage_policy(&su, "/a", Some("HOT"), false)
            .is_err());
        // Round trip through an image.
        let (back, _) = Namespace::decode_image(&ns.encode_image(9)).unwrap();
        assert_eq!(back.storage_policy_of(back.existing("/a/b").unwrap()), 2);
    }
}
