//! Namespace errors and the Java exception each one becomes on the wire.

use ferrite_ipc::error::class;
use ferrite_ipc::RpcError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    AlreadyExists(String),
    #[error("{0}")]
    ParentNotDirectory(String),
    #[error("{0}")]
    NotEmpty(String),
    #[error("{0}")]
    AccessDenied(String),
    #[error("{0}")]
    InvalidPath(String),
    #[error("{0}")]
    AlreadyBeingCreated(String),
    #[error("{0}")]
    LeaseExpired(String),
    /// The file's last block is being recovered; the client tries again later.
    #[error("{0}")]
    RecoveryInProgress(String),
    #[error("{0}")]
    SafeMode(String),
    /// The previous block has too few finished replicas yet; the client retries.
    #[error("{0}")]
    NotReplicatedYet(String),
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    IllegalArgument(String),
    /// A new entry would take its directory past `dfs.namenode.fs-limits.max-directory-items`.
    #[error("{0}")]
    DirectoryFull(String),
    /// A path component longer than the limit, in a name being added.
    #[error("{0}")]
    ComponentTooLong(String),
    /// A DataNode call from a node not (or no longer) registered.
    #[error("{0}")]
    UnregisteredNode(String),
    /// getXAttrs named an attribute the inode does not have (or the caller may not see).
    #[error("{0}")]
    XAttrNotFound(String),
    /// A directory was expected (`PathIsNotDirectoryException`).
    #[error("{0}")]
    NotDirectory(String),
    /// A change that would take a directory past its namespace quota.
    #[error("{0}")]
    NsQuotaExceeded(String),
    /// ... past its storage-space quota.
    #[error("{0}")]
    DsQuotaExceeded(String),
    /// ... past its space quota on one storage type.
    #[error("{0}")]
    TypeQuotaExceeded(String),
    /// An ACL change HDFS refuses (an invalid result, or ACLs turned off).
    #[error("{0}")]
    Acl(String),
    /// A request HDFS refuses as malformed or naming what is not there
    /// (`InvalidRequestException`: cache pools and directives).
    #[error("{0}")]
    InvalidRequest(String),
    /// An operation HDFS refuses with its NameNode's `UnsupportedActionException`.
    #[error("{0}")]
    UnsupportedAction(String),
    /// A token that cannot be used (`SecretManager.InvalidToken`).
    #[error("{0}")]
    InvalidToken(String),
    /// A value that ended before it was whole (`java.io.EOFException`).
    #[error("{0}")]
    Eof(String),
    /// A snapshot operation HDFS refuses (`SnapshotException`).
    #[error("{0}")]
    Snapshot(String),
    /// A change under a `.snapshot` path (`SnapshotAccessControlException`).
    #[error("{0}")]
    SnapshotAccess(String),
    /// Anything HDFS reports as a plain `java.io.IOException`.
    #[error("{0}")]
    Io(String),
}

impl FsError {
    /// The exact Java class name clients match on.
    pub fn java_class(&self) -> &'static str {
        match self {
            FsError::NotFound(_) => class::FILE_NOT_FOUND,
            FsError::AlreadyExists(_) => class::FILE_ALREADY_EXISTS,
            FsError::ParentNotDirectory(_) => class::PARENT_NOT_DIRECTORY,
            FsError::NotEmpty(_) => class::PATH_IS_NOT_EMPTY_DIRECTORY,
            FsError::AccessDenied(_) => class::ACCESS_CONTROL,
            FsError::InvalidPath(_) => class::INVALID_PATH,
            FsError::AlreadyBeingCreated(_) => class::ALREADY_BEING_CREATED,
            FsError::LeaseExpired(_) => class::LEASE_EXPIRED,
            FsError::RecoveryInProgress(_) => class::RECOVERY_IN_PROGRESS,
            FsError::SafeMode(_) => class::SAFE_MODE,
            FsError::NotReplicatedYet(_) => class::NOT_REPLICATED_YET,
            FsError::Unsupported(_) => class::UNSUPPORTED_OPERATION,
            FsError::IllegalArgument(_) => class::HADOOP_ILLEGAL_ARGUMENT,
            FsError::DirectoryFull(_) => class::MAX_DIRECTORY_ITEMS_EXCEEDED,
            FsError::ComponentTooLong(_) => class::PATH_COMPONENT_TOO_LONG,
            FsError::UnregisteredNode(_) => {
                "org.apache.hadoop.hdfs.protocol.UnregisteredNodeException"
            }
            FsError::XAttrNotFound(_) => "org.apache.hadoop.hdfs.protocol.XAttrNotFoundException",
            FsError::NotDirectory(_) => "org.apache.hadoop.fs.PathIsNotDirectoryException",
            FsError::NsQuotaExceeded(_) => {
                "org.apache.hadoop.hdfs.protocol.NSQuotaExceededException"
            }
            FsError::DsQuotaExceeded(_) => {
                "org.apache.hadoop.hdfs.protocol.DSQuotaExceededException"
            }
            FsError::TypeQuotaExceeded(_) => {
                "org.apache.hadoop.hdfs.protocol.QuotaByStorageTypeExceededException"
            }
            FsError::InvalidRequest(_) => "org.apache.hadoop.fs.InvalidRequestException",
            FsError::UnsupportedAction(_) => {
                "org.apache.hadoop.hdfs.server.namenode.UnsupportedActionException"
            }
            FsError::InvalidToken(_) => {
                "org.apache.hadoop.security.token.SecretManager$InvalidToken"
            }
            FsError::Eof(_) => "java.io.EOFException",
            FsError::Acl(_) => "org.apache.hadoop.hdfs.protocol.AclException",
            FsError::Snapshot(_) => "org.apache.hadoop.hdfs.protocol.SnapshotException",
            FsError::SnapshotAccess(_) => {
                "org.apache.hadoop.hdfs.protocol.SnapshotAccessControlException"
            }
            FsError::Io(_) => class::IO,
        }
    }
}

impl From<FsError> for RpcError {
    fn from(e: FsError) -> Self {
        RpcError::app(e.java_class(), e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_class_names_are_the_ones_clients_match() {
        let cases = [
            (
                FsError::NotFound(String::new()),
                "java.io.FileNotFoundException",
            ),
            (
                FsError::AlreadyExists(String::new()),
                "org.apache.hadoop.fs.FileAlreadyExistsException",
            ),
            (
                FsError::ParentNotDirectory(String::new()),
                "org.apache.hadoop.fs.ParentNotDirectoryException",
            ),
            (
                FsError::NotEmpty(String::new()),
                "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException",
            ),
            (
                FsError::AccessDenied(String::new()),
                "org.apache.hadoop.security.AccessControlException",
            ),
            (
                FsError::InvalidPath(String::new()),
                "org.apache.hadoop.fs.InvalidPathException",
            ),
            (
                FsError::AlreadyBeingCreated(String::new()),
                "org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException",
            ),
            (
                FsError::LeaseExpired(String::new()),
                "org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException",
            ),
            (
                FsError::SafeMode(String::new()),
                "org.apache.hadoop.hdfs.server.namenode.SafeModeException",
            ),
            (
                FsError::Unsupported(String::new()),
                "java.lang.UnsupportedOperationException",
            ),
            (
                FsError::IllegalArgument(String::new()),
                "org.apache.hadoop.HadoopIllegalArgumentException",
            ),
            (
                FsError::DirectoryFull(String::new()),
                "org.apache.hadoop.hdfs.protocol.FSLimitException$MaxDirectoryItemsExceededException",
            ),
            (
                FsError::ComponentTooLong(String::new()),
                "org.apache.hadoop.hdfs.protocol.FSLimitException$PathComponentTooLongException",
            ),
            (FsError::Io(String::new()), "java.io.IOException"),
        ];
        for (e, want) in cases {
            assert_eq!(e.java_class(), want);
            assert_eq!(RpcError::from(e).class, want);
        }
    }
}
