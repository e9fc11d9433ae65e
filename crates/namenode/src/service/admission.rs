//! Who may call an operation, and when: one table for every front end. IPC consults it for
//! each call before the handler runs (`rpc/`), and WebHDFS will map its `op=` names onto the
//! same entries, so safe mode and superuser rules cannot differ between them.
//!
//! Operations are named as HDFS's protocols name them (`mkdirs`, `addBlock`,
//! `sendHeartbeat`), the names the audit log, metrics and error messages use.

use crate::error::FsError;

use super::NameNodeService;

/// How an operation is admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Changes the namespace: refused in safe mode (and, later, on a standby).
    pub mutating: bool,
    /// Only the superuser may call it.
    pub superuser: bool,
    /// Not idempotent: a retried call must get the first answer again (Hadoop's
    /// `@AtMostOnce`); front ends with a retry cache keep it for these.
    pub at_most_once: bool,
}

/// Anyone, any time.
pub const READ: Policy = Policy {
    mutating: false,
    superuser: false,
    at_most_once: false,
};
/// A mutation that is safe to run twice (mkdirs, setOwner, …).
pub const WRITE: Policy = Policy {
    mutating: true,
    superuser: false,
    at_most_once: false,
};
/// A mutation that must not run twice (create, rename, delete, …).
pub const WRITE_ONCE: Policy = Policy {
    mutating: true,
    superuser: false,
    at_most_once: true,
};
/// Administration, for the superuser only.
pub const ADMIN: Policy = Policy {
    mutating: false,
    superuser: true,
    at_most_once: false,
};

/// Administration that changes the namespace: the superuser's, and refused in safe mode.
pub const ADMIN_WRITE: Policy = Policy {
    mutating: true,
    superuser: true,
    at_most_once: false,
};

/// Every operation the NameNode serves, with its policy.
pub const TABLE: &[(&str, Policy)] = &[
    // ClientProtocol: reads.
    ("getServerDefaults", READ),
    ("getFileInfo", READ),
    ("getFileLinkInfo", READ),
    ("getLocatedFileInfo", READ),
    ("getListing", READ),
    ("getBlockLocations", READ),
    ("getContentSummary", READ),
    ("getQuotaUsage", READ),
    ("getPreferredBlockSize", READ),
    ("isFileClosed", READ),
    ("getFsStats", READ),
    ("getFsReplicatedBlockStats", READ),
    ("getFsECBlockGroupStats", READ),
    ("getSlowDatanodeReport", READ),
    ("checkAccess", READ),
    ("getXAttrs", READ),
    ("getStoragePolicy", READ),
    ("getStoragePolicies", READ),
    ("listXAttrs", READ),
    ("getAclStatus", READ),
    ("getBatchedListing", READ),
    ("listCachePools", READ),
    ("listCacheDirectives", READ),
    ("getEnclosingRoot", READ),
    ("getSnapshottableDirListing", READ),
    ("getSnapshotListing", READ),
    ("getSnapshotDiffReport", READ),
    ("getSnapshotDiffReportListing", READ),
    ("getLinkTarget", READ),
    ("getEZForPath", READ),
    ("listEncryptionZones", ADMIN),
    ("listReencryptionStatus", ADMIN),
    ("getErasureCodingPolicies", READ),
    ("getErasureCodingCodecs", READ),
    ("getErasureCodingPolicy", READ),
    ("getECTopologyResultForPolicies", READ),
    ("getDelegationToken", READ),
    ("renewDelegationToken", READ),
    ("cancelDelegationToken", READ),
    // Not an RPC: the NameNode's `/fsck` servlet. Anyone may run it; the walk sees what
    // the caller's permissions let it list, as in HDFS.
    ("fsck", READ),
    ("getDatanodeReport", READ),
    ("getDataEncryptionKey", READ),
    ("getHAServiceState", READ),
    ("msync", READ),
    ("getAdditionalDatanode", READ),
    ("reportBadBlocks", READ),
    // Its GET is open to everyone; the actions that change it check the superuser.
    ("setSafeMode", READ),
    // ClientProtocol: mutations.
    ("mkdirs", WRITE),
    ("create", WRITE_ONCE),
    ("append", WRITE_ONCE),
    ("complete", WRITE),
    ("addBlock", WRITE),
    ("abandonBlock", WRITE),
    ("updateBlockForPipeline", WRITE),
    ("updatePipeline", WRITE),
    ("fsync", WRITE),
    ("rename", WRITE_ONCE),
    ("rename2", WRITE_ONCE),
    ("delete", WRITE_ONCE),
    ("concat", WRITE_ONCE),
    ("truncate", WRITE),
    ("setPermission", WRITE),
    ("setOwner", WRITE),
    ("setTimes", WRITE),
    ("setReplication", WRITE),
    ("setXAttr", WRITE),
    ("setStoragePolicy", WRITE),
    ("unsetStoragePolicy", WRITE),
    ("removeXAttr", WRITE),
    ("createSnapshot", WRITE_ONCE),
    ("deleteSnapshot", WRITE_ONCE),
    ("renameSnapshot", WRITE_ONCE),
    ("modifyAclEntries", WRITE),
    ("removeAclEntries", WRITE),
    ("removeDefaultAcl", WRITE),
    ("removeAcl", WRITE),
    ("setAcl", WRITE),
    ("createSymlink", WRITE_ONCE),
    ("addCacheDirective", WRITE_ONCE),
    ("modifyCacheDirective", WRITE),
    ("removeCacheDirective", WRITE_ONCE),
    ("setErasureCodingPolicy", WRITE_ONCE),
    ("unsetErasureCodingPolicy", WRITE_ONCE),
    ("satisfyStoragePolicy", WRITE),
    ("renewLease", WRITE),
    ("recoverLease", WRITE),
    // ClientProtocol: administration.
    ("saveNamespace", ADMIN),
    ("setQuota", ADMIN),
    ("allowSnapshot", ADMIN_WRITE),
    ("disallowSnapshot", ADMIN_WRITE),
    ("getDatanodeStorageReport", ADMIN),
    ("listCorruptFileBlocks", ADMIN),
    ("getCurrentEditLogTxid", ADMIN),
    ("getEditsFromTxid", ADMIN),
    ("metaSave", ADMIN),
    ("refreshNodes", ADMIN),
    ("finalizeUpgrade", ADMIN),
    ("upgradeStatus", ADMIN),
    ("rollingUpgrade", ADMIN),
    ("setBalancerBandwidth", ADMIN),
    ("addCachePool", ADMIN),
    ("modifyCachePool", ADMIN),
    ("removeCachePool", ADMIN),
    ("createEncryptionZone", ADMIN),
    ("reencryptEncryptionZone", ADMIN),
    ("enableErasureCodingPolicy", ADMIN),
    ("disableErasureCodingPolicy", ADMIN),
    ("addErasureCodingPolicies", ADMIN),
    ("removeErasureCodingPolicy", ADMIN),
    ("rollEdits", ADMIN),
    ("restoreFailedStorage", ADMIN),
    ("listOpenFiles", ADMIN),
    // NamenodeProtocol and DatanodeProtocol (DataNodes are not users; their calls are
    // checked by registration).
    ("versionRequest", READ),
    ("registerDatanode", READ),
    ("sendHeartbeat", READ),
    ("blockReport", READ),
    ("blockReceivedAndDeleted", READ),
    ("errorReport", READ),
    ("commitBlockSynchronization", READ),
    // Ferrite's own protocols.
    ("getNameNodeStats", READ),
    ("getSummary", READ),
    ("readEdits", ADMIN),
    ("getImage", ADMIN),
];

/// The policy of `op`, if the NameNode serves it.
pub fn policy(op: &str) -> Option<Policy> {
    TABLE.iter().find(|(name, _)| *name == op).map(|&(_, p)| p)
}

/// The superuser check's refusal, in HDFS's words: naming the operation where HDFS's
/// audit name for it is known (`op` is the RPC's name).
pub fn superuser_required(user: &str, op: &str) -> FsError {
    let named = match op {
        "setQuota"
        | "saveNamespace"
        | "listOpenFiles"
        | "metaSave"
        | "refreshNodes"
        | "setBalancerBandwidth"
        | "finalizeUpgrade"
        | "allowSnapshot"
        | "disallowSnapshot"
        | "getDatanodeStorageReport" => Some(op),
        "rollEdits" => Some("rollEditLog"),
        "getDatanodeReport" => Some("datanodeReport"),
        _ => None,
    };
    let suffix = named
        .map(|n| format!(" for operation {n}"))
        .unwrap_or_default();
    FsError::AccessDenied(format!(
        "Access denied for user {user}. Superuser privilege is required{suffix}"
    ))
}

impl NameNodeService {
    /// Whether `user` may call `op` now. An operation missing from the table is refused:
    /// a front end that serves something the table does not know is a bug to see at once.
    pub fn admit(&self, user: &str, op: &str) -> Result<(), FsError> {
        let Some(p) = policy(op) else {
            return Err(FsError::Unsupported(format!(
                "no admission policy for operation {op}"
            )));
        };
        self.admit_as(user, op, p)
    }

    /// [`admit`](Self::admit) with `op`'s policy already looked up in [`TABLE`]: a front
    /// end that resolved it once (the IPC router, when a method is registered) skips the
    /// lookup on every call.
    pub fn admit_as(&self, user: &str, op: &str, p: Policy) -> Result<(), FsError> {
        if p.superuser && !self.caller(user).superuser {
            return Err(superuser_required(user, op));
        }
        if p.mutating && self.in_safe_mode() {
            return Err(FsError::SafeMode(format!(
                "Cannot {op}. Name node is in safe mode.\n{}",
                self.safe_mode_reason()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_appears_once() {
        let mut names: Vec<&str> = TABLE.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "an operation is listed twice");
    }

    #[test]
    fn policies_as_hdfs_annotates_them() {
        assert_eq!(policy("create"), Some(WRITE_ONCE));
        assert_eq!(policy("mkdirs"), Some(WRITE));
        assert_eq!(policy("getFileInfo"), Some(READ));
        assert_eq!(policy("saveNamespace"), Some(ADMIN));
        assert_eq!(policy("noSuchCall"), None);
    }
}
