//! Who may call an operation, and when: one table for every front end. IPC admits each
//! call before its handler runs (the router, `rpc/`), WebHDFS, fsck and the web UI admit
//! their requests as the RPC operation each stands for, so safe mode and superuser rules
//! cannot differ between them.
//!
//! Admission is what the compiler sees: [`NameNodeService::admit`] is the only maker of an
//! [`Admitted`], and every operation the service serves on a caller's behalf takes one. A
//! new front end cannot reach an operation without passing the table's checks. What
//! takes none are the NameNode's own views for metrics and pages (`fs_stats`,
//! `server_defaults`, `datanode_report`) and its background work (lease recovery, the
//! trash emptier), which run as the NameNode.
//!
//! Operations are named as HDFS's protocols name them (`mkdirs`, `addBlock`,
//! `sendHeartbeat`), the names the audit log, metrics and error messages use.

use std::sync::Arc;

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

/// Declares every operation once: its variant, the name HDFS's protocols give it (the
/// name the IPC router, the audit log, metrics and error messages use) and its policy.
macro_rules! operations {
    ($( $(#[$meta:meta])* $variant:ident = $name:literal => $policy:ident, )*) => {
        /// Every operation the NameNode serves: what each front end admits a caller to.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Operation {
            $( $(#[$meta])* $variant ),*
        }

        impl Operation {
            /// Every operation, in the table's order.
            pub const ALL: &'static [Operation] = &[$(Operation::$variant),*];

            /// The protocol's name for it (`mkdirs`, `addBlock`, `sendHeartbeat`).
            pub fn name(self) -> &'static str {
                match self {
                    $(Operation::$variant => $name),*
                }
            }

            /// Who may call it, and when.
            pub fn policy(self) -> Policy {
                match self {
                    $(Operation::$variant => $policy),*
                }
            }
        }
    };
}

operations! {
    // ClientProtocol: reads.
    GetServerDefaults = "getServerDefaults" => READ,
    GetFileInfo = "getFileInfo" => READ,
    GetFileLinkInfo = "getFileLinkInfo" => READ,
    GetLocatedFileInfo = "getLocatedFileInfo" => READ,
    GetListing = "getListing" => READ,
    GetBlockLocations = "getBlockLocations" => READ,
    GetContentSummary = "getContentSummary" => READ,
    GetQuotaUsage = "getQuotaUsage" => READ,
    GetPreferredBlockSize = "getPreferredBlockSize" => READ,
    IsFileClosed = "isFileClosed" => READ,
    GetFsStats = "getFsStats" => READ,
    GetFsReplicatedBlockStats = "getFsReplicatedBlockStats" => READ,
    GetFsECBlockGroupStats = "getFsECBlockGroupStats" => READ,
    GetSlowDatanodeReport = "getSlowDatanodeReport" => READ,
    CheckAccess = "checkAccess" => READ,
    GetXAttrs = "getXAttrs" => READ,
    GetStoragePolicy = "getStoragePolicy" => READ,
    GetStoragePolicies = "getStoragePolicies" => READ,
    ListXAttrs = "listXAttrs" => READ,
    GetAclStatus = "getAclStatus" => READ,
    GetBatchedListing = "getBatchedListing" => READ,
    ListCachePools = "listCachePools" => READ,
    ListCacheDirectives = "listCacheDirectives" => READ,
    GetEnclosingRoot = "getEnclosingRoot" => READ,
    GetSnapshottableDirListing = "getSnapshottableDirListing" => READ,
    GetSnapshotListing = "getSnapshotListing" => READ,
    GetSnapshotDiffReport = "getSnapshotDiffReport" => READ,
    GetSnapshotDiffReportListing = "getSnapshotDiffReportListing" => READ,
    GetLinkTarget = "getLinkTarget" => READ,
    GetEZForPath = "getEZForPath" => READ,
    ListEncryptionZones = "listEncryptionZones" => ADMIN,
    ListReencryptionStatus = "listReencryptionStatus" => ADMIN,
    GetErasureCodingPolicies = "getErasureCodingPolicies" => READ,
    GetErasureCodingCodecs = "getErasureCodingCodecs" => READ,
    GetErasureCodingPolicy = "getErasureCodingPolicy" => READ,
    GetECTopologyResultForPolicies = "getECTopologyResultForPolicies" => READ,
    GetDelegationToken = "getDelegationToken" => READ,
    RenewDelegationToken = "renewDelegationToken" => READ,
    CancelDelegationToken = "cancelDelegationToken" => READ,
    // Not an RPC: the NameNode's `/fsck` servlet. Anyone may run it; the walk sees what
    // the caller's permissions let it list, as in HDFS.
    Fsck = "fsck" => READ,
    GetDatanodeReport = "getDatanodeReport" => READ,
    GetDataEncryptionKey = "getDataEncryptionKey" => READ,
    GetHAServiceState = "getHAServiceState" => READ,
    Msync = "msync" => READ,
    GetAdditionalDatanode = "getAdditionalDatanode" => READ,
    ReportBadBlocks = "reportBadBlocks" => READ,
    // Its GET is open to everyone; the actions that change it check the superuser.
    SetSafeMode = "setSafeMode" => READ,
    // ClientProtocol: mutations.
    Mkdirs = "mkdirs" => WRITE,
    Create = "create" => WRITE_ONCE,
    Append = "append" => WRITE_ONCE,
    Complete = "complete" => WRITE,
    AddBlock = "addBlock" => WRITE,
    AbandonBlock = "abandonBlock" => WRITE,
    UpdateBlockForPipeline = "updateBlockForPipeline" => WRITE,
    UpdatePipeline = "updatePipeline" => WRITE,
    Fsync = "fsync" => WRITE,
    Rename = "rename" => WRITE_ONCE,
    Rename2 = "rename2" => WRITE_ONCE,
    Delete = "delete" => WRITE_ONCE,
    Concat = "concat" => WRITE_ONCE,
    Truncate = "truncate" => WRITE,
    SetPermission = "setPermission" => WRITE,
    SetOwner = "setOwner" => WRITE,
    SetTimes = "setTimes" => WRITE,
    SetReplication = "setReplication" => WRITE,
    SetXAttr = "setXAttr" => WRITE,
    SetStoragePolicy = "setStoragePolicy" => WRITE,
    UnsetStoragePolicy = "unsetStoragePolicy" => WRITE,
    RemoveXAttr = "removeXAttr" => WRITE,
    CreateSnapshot = "createSnapshot" => WRITE_ONCE,
    DeleteSnapshot = "deleteSnapshot" => WRITE_ONCE,
    RenameSnapshot = "renameSnapshot" => WRITE_ONCE,
    ModifyAclEntries = "modifyAclEntries" => WRITE,
    RemoveAclEntries = "removeAclEntries" => WRITE,
    RemoveDefaultAcl = "removeDefaultAcl" => WRITE,
    RemoveAcl = "removeAcl" => WRITE,
    SetAcl = "setAcl" => WRITE,
    CreateSymlink = "createSymlink" => WRITE_ONCE,
    AddCacheDirective = "addCacheDirective" => WRITE_ONCE,
    ModifyCacheDirective = "modifyCacheDirective" => WRITE,
    RemoveCacheDirective = "removeCacheDirective" => WRITE_ONCE,
    SetErasureCodingPolicy = "setErasureCodingPolicy" => WRITE_ONCE,
    UnsetErasureCodingPolicy = "unsetErasureCodingPolicy" => WRITE_ONCE,
    SatisfyStoragePolicy = "satisfyStoragePolicy" => WRITE,
    RenewLease = "renewLease" => WRITE,
    RecoverLease = "recoverLease" => WRITE,
    // ClientProtocol: administration.
    SaveNamespace = "saveNamespace" => ADMIN,
    SetQuota = "setQuota" => ADMIN,
    AllowSnapshot = "allowSnapshot" => ADMIN_WRITE,
    DisallowSnapshot = "disallowSnapshot" => ADMIN_WRITE,
    GetDatanodeStorageReport = "getDatanodeStorageReport" => ADMIN,
    ListCorruptFileBlocks = "listCorruptFileBlocks" => ADMIN,
    GetCurrentEditLogTxid = "getCurrentEditLogTxid" => ADMIN,
    GetEditsFromTxid = "getEditsFromTxid" => ADMIN,
    MetaSave = "metaSave" => ADMIN,
    RefreshNodes = "refreshNodes" => ADMIN,
    FinalizeUpgrade = "finalizeUpgrade" => ADMIN,
    UpgradeStatus = "upgradeStatus" => ADMIN,
    RollingUpgrade = "rollingUpgrade" => ADMIN,
    SetBalancerBandwidth = "setBalancerBandwidth" => ADMIN,
    AddCachePool = "addCachePool" => ADMIN,
    ModifyCachePool = "modifyCachePool" => ADMIN,
    RemoveCachePool = "removeCachePool" => ADMIN,
    CreateEncryptionZone = "createEncryptionZone" => ADMIN,
    ReencryptEncryptionZone = "reencryptEncryptionZone" => ADMIN,
    EnableErasureCodingPolicy = "enableErasureCodingPolicy" => ADMIN,
    DisableErasureCodingPolicy = "disableErasureCodingPolicy" => ADMIN,
    AddErasureCodingPolicies = "addErasureCodingPolicies" => ADMIN,
    RemoveErasureCodingPolicy = "removeErasureCodingPolicy" => ADMIN,
    RollEdits = "rollEdits" => ADMIN,
    RestoreFailedStorage = "restoreFailedStorage" => ADMIN,
    ListOpenFiles = "listOpenFiles" => ADMIN,
    // NamenodeProtocol and DatanodeProtocol (DataNodes are not users; their calls are
    // checked by registration).
    VersionRequest = "versionRequest" => READ,
    // What Hadoop's Balancer and Mover ask (NamenodeProtocol): the superuser's, as on HDFS.
    GetBlocks = "getBlocks" => ADMIN,
    GetBlockKeys = "getBlockKeys" => ADMIN,
    GetTransactionId = "getTransactionId" => ADMIN,
    GetMostRecentCheckpointTxId = "getMostRecentCheckpointTxId" => ADMIN,
    IsUpgradeFinalized = "isUpgradeFinalized" => ADMIN,
    IsRollingUpgrade = "isRollingUpgrade" => ADMIN,
    RegisterDatanode = "registerDatanode" => READ,
    SendHeartbeat = "sendHeartbeat" => READ,
    BlockReport = "blockReport" => READ,
    BlockReceivedAndDeleted = "blockReceivedAndDeleted" => READ,
    ErrorReport = "errorReport" => READ,
    CommitBlockSynchronization = "commitBlockSynchronization" => READ,
    // HAServiceProtocol (`hdfs haadmin`): the superuser's, as on HDFS.
    MonitorHealth = "monitorHealth" => ADMIN,
    GetServiceStatus = "getServiceStatus" => ADMIN,
    TransitionToActive = "transitionToActive" => ADMIN,
    TransitionToStandby = "transitionToStandby" => ADMIN,
    TransitionToObserver = "transitionToObserver" => ADMIN,
    // Ferrite's own protocols.
    GetNameNodeStats = "getNameNodeStats" => READ,
    GetRaftStatus = "getRaftStatus" => READ,
    GetSummary = "getSummary" => READ,
    ReadEdits = "readEdits" => ADMIN,
    GetImage = "getImage" => ADMIN,
}

impl Operation {
    /// The operation a protocol method name stands for, if the NameNode serves it (a
    /// front end resolves its names once, when it registers them).
    pub fn from_name(name: &str) -> Option<Operation> {
        Operation::ALL.iter().copied().find(|op| op.name() == name)
    }
}

/// The policy of the operation named `op`, if the NameNode serves it.
pub fn policy(op: &str) -> Option<Policy> {
    Operation::from_name(op).map(Operation::policy)
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
    FsError::SuperuserRequired {
        user: user.to_string(),
        operation: named.map(str::to_string),
    }
}

/// A caller admitted to one operation: who (the user the call runs as and the address it
/// comes from) and what. Only [`NameNodeService::admit`] makes one, after the operation's
/// checks passed, and the service's operations take one: a front end cannot reach an
/// operation without going through the table.
#[derive(Clone, Debug)]
pub struct Admitted {
    op: Operation,
    user: Arc<str>,
    ip: Arc<str>,
    call: Option<CallId>,
}

/// An RPC call's identity as its client sends it again on a retry (Hadoop's clientId and
/// callId): an at-most-once operation journals it, so that a NameNode that replays the
/// journal can answer the retry as the first attempt was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallId {
    pub client_id: [u8; 16],
    pub call_id: i32,
}

impl Admitted {
    /// The operation the caller was admitted to.
    pub fn op(&self) -> Operation {
        self.op
    }

    /// The user the call runs as.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The address the call comes from: placement puts a first replica there, a lease
    /// records it, a DataNode registers with it.
    pub fn ip(&self) -> &str {
        &self.ip
    }

    /// The RPC call this admission is for, when it came over RPC as an at-most-once call.
    pub fn call(&self) -> Option<CallId> {
        self.call
    }

    /// The same admission, for the RPC call `call` (the IPC front end's).
    pub(crate) fn for_call(mut self, call: Option<CallId>) -> Self {
        self.call = call;
        self
    }

    /// The caller, for running `op`. A debug build checks that the admission covers `op`:
    /// the same operation, or one whose checks are at least as strict (WebHDFS's `RENAME`
    /// is admitted as `rename` and may run either of HDFS's renames).
    pub fn user_for(&self, op: Operation) -> &str {
        self.check(op);
        &self.user
    }

    /// [`user_for`](Self::user_for)'s check, for an operation that runs as the NameNode
    /// once its caller is admitted (fsck reads every file's blocks).
    pub fn check(&self, op: Operation) {
        debug_assert!(
            self.covers(op),
            "{} admitted as {}",
            op.name(),
            self.op.name()
        );
    }

    fn covers(&self, op: Operation) -> bool {
        let (had, needed) = (self.op.policy(), op.policy());
        self.op == op
            || ((had.mutating || !needed.mutating) && (had.superuser || !needed.superuser))
    }
}

impl NameNodeService {
    /// A call refused because safe mode is on (`refused` in HDFS's words). An HA active
    /// restarted moments ago waits for its DataNodes' reports: its client should retry
    /// it, not fail, so the refusal comes as a RetriableException (HDFS answers the same).
    pub(super) fn safe_mode_refusal(&self, refused: String) -> FsError {
        let refusal = FsError::InSafeMode {
            refused,
            reason: self.safe_mode_reason(),
        };
        if self.ha_control().is_some() && self.in_startup_safe_mode_only() {
            return FsError::Retriable(Box::new(refusal));
        }
        refusal
    }

    /// Admits `user`, calling from `ip`, to `op` now, or refuses with HDFS's error: a
    /// client's operation on a standby (checked first, as HDFS's `checkOperation` is), a
    /// superuser-only operation for anyone else, a mutation in safe mode.
    pub fn admit(
        &self,
        user: impl Into<Arc<str>>,
        ip: impl Into<Arc<str>>,
        op: Operation,
    ) -> Result<Admitted, FsError> {
        let user = user.into();
        let p = op.policy();
        if !op.served_by_standby() && self.refuses_clients() {
            return Err(FsError::Standby {
                category: if p.mutating { "WRITE" } else { "READ" },
            });
        }
        if p.superuser && !self.caller(&user).superuser {
            return Err(superuser_required(&user, op.name()));
        }
        if p.mutating && self.in_safe_mode() {
            return Err(self.safe_mode_refusal(format!("Cannot {}", op.name())));
        }
        Ok(Admitted {
            op,
            user,
            ip: ip.into(),
            call: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_appears_once() {
        let mut names: Vec<&str> = Operation::ALL.iter().map(|op| op.name()).collect();
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
