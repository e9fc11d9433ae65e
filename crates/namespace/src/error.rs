//! Namespace errors and the Java exception each one becomes on the wire.

use std::fmt;
use std::sync::Arc;

use ferrite_proto::rpc_error::{class, RpcError};

/// What the NameNode answers when an operation cannot be done: each variant maps to the
/// Java exception HDFS throws ([`FsError::java_class`]), and its message is rendered here,
/// in HDFS's words, from the data it carries. Variants holding a whole message in a
/// `String` are the ones whose wording is still written where they are raised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// A path that does not exist (`FileNotFoundException`).
    #[error("File does not exist: {path}")]
    FileNotFound { path: String },
    /// A file operation on a directory (`FileNotFoundException`, as HDFS throws it).
    #[error("Path is not a file: {path}")]
    NotAFile { path: String },
    /// A creation whose parent directory is missing (`FileNotFoundException`).
    #[error("Parent directory doesn't exist: {parent}")]
    ParentMissing { parent: String },
    /// A change refused in safe mode: `refused` is how HDFS words the refusal ("Cannot
    /// mkdirs", "Log not rolled"), `reason` what keeps safe mode on.
    #[error("{refused}. Name node is in safe mode.\n{reason}")]
    InSafeMode { refused: String, reason: String },
    /// HDFS's `RetriableException` around another refusal: the client should try the
    /// same NameNode again shortly (an HA active still in start-up safe mode, as HDFS's
    /// `FSNamesystem` answers then).
    #[error("{class}: {inner}", class = .0.java_class(), inner = .0)]
    Retriable(Box<FsError>),
    /// A new entry would take directory `dir` past
    /// `dfs.namenode.fs-limits.max-directory-items` (`limit`); it has `items`.
    #[error("The directory item limit of {dir} is exceeded: limit={limit} items={items}")]
    DirectoryFull {
        dir: String,
        limit: usize,
        items: usize,
    },
    /// A new name longer than `dfs.namenode.fs-limits.max-component-length`.
    #[error("The maximum path component name limit of {name} in directory {dir} is exceeded: limit={limit} length={}", name.len())]
    ComponentTooLong {
        name: String,
        dir: String,
        limit: usize,
    },
    /// A change that would take directory `dir` past its namespace quota.
    #[error("The NameSpace quota (directories and files) of directory {dir} is exceeded: quota={quota} file count={count}")]
    NsQuotaExceeded { dir: String, quota: i64, count: i64 },
    /// ... past its storage-space quota (bytes, replicas counted).
    #[error("The DiskSpace quota of {dir} is exceeded: quota = {quota} B = {} but diskspace consumed = {consumed} B = {}", bytes_text(*quota), bytes_text(*consumed))]
    DsQuotaExceeded {
        dir: String,
        quota: i64,
        consumed: i64,
    },
    /// ... past its space quota on one storage type.
    #[error("Quota by storage type : {storage_type} on path : {dir} is exceeded. quota = {} but space consumed = {}", bytes_text(*quota), bytes_text(*consumed))]
    TypeQuotaExceeded {
        storage_type: &'static str,
        dir: String,
        quota: i64,
        consumed: i64,
    },
    /// A truncate or concat HDFS refuses (`HadoopIllegalArgumentException`).
    #[error(transparent)]
    Reshape(#[from] ReshapeError),
    /// The permission bits (or ACL) of an inode do not grant an access
    /// (`AccessControlException`). Boxed: an `FsError` travels in every `Result`.
    #[error("{0}")]
    PermissionDenied(Box<Denied>),
    /// Only the owner (or the superuser) may do this to `inode`.
    #[error("Permission denied. user={user} is not the owner of inode={inode}")]
    NotOwner { user: String, inode: String },
    /// The sticky bit on `parent` keeps `user` from removing `path`.
    #[error("Permission denied by sticky bit: user={user}, path=\"{path}\", parent=\"{parent}\"")]
    StickyBit {
        user: String,
        path: String,
        parent: String,
    },
    /// An operation for the superuser only; `operation` is HDFS's name for it when HDFS
    /// names it in the message.
    #[error("Access denied for user {user}. Superuser privilege is required{}", operation.as_ref().map(|o| format!(" for operation {o}")).unwrap_or_default())]
    SuperuserRequired {
        user: String,
        operation: Option<String>,
    },
    /// A writer's call on a file another client (or the same one, again) holds open
    /// (`AlreadyBeingCreatedException`), or whose lease is being recovered
    /// (`RecoveryInProgressException`, which the client retries). Boxed, as
    /// [`FsError::PermissionDenied`].
    #[error("{0}")]
    LeaseConflict(Box<Conflict>),
    /// A writer's call on a file it no longer writes (`LeaseExpiredException`): `lease`
    /// ends every such message, the path, inode id and the holder's lease.
    #[error("{}: {lease}", .gone.words())]
    LeaseGone { gone: LeaseGone, lease: String },
    /// A writer's call from a client other than the file's holder.
    #[error("Client (={client}) is not the lease owner (={owner}: {lease}")]
    NotLeaseOwner {
        client: String,
        owner: String,
        lease: String,
    },
    /// A pipeline call on a block another client writes.
    #[error("Lease mismatch on {block} used by {owner} but is accessed by {client}")]
    LeaseMismatch {
        block: String,
        owner: String,
        client: String,
    },
    /// A fault inside the NameNode (the journal, an image, a record that would not
    /// apply): the client sees an `IOException`; the log keeps the cause.
    #[error("{what}: {cause}")]
    Internal {
        what: String,
        #[source]
        cause: Cause,
    },
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
    /// The previous block has too few finished replicas yet; the client retries.
    #[error("{0}")]
    NotReplicatedYet(String),
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    IllegalArgument(String),
    /// A DataNode call from a node not (or no longer) registered.
    #[error("{0}")]
    UnregisteredNode(String),
    /// A DataNode the hosts files do not let in (`DisallowedDatanodeException`).
    #[error("{0}")]
    DisallowedDatanode(String),
    /// getXAttrs named an attribute the inode does not have (or the caller may not see).
    #[error("{0}")]
    XAttrNotFound(String),
    /// A directory was expected (`PathIsNotDirectoryException`).
    #[error("{0}")]
    NotDirectory(String),
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
    #[error(transparent)]
    Snapshot(#[from] crate::snapshot::error::SnapshotError),
    /// A change under a `.snapshot` path (`SnapshotAccessControlException`).
    #[error("{0}")]
    SnapshotAccess(String),
    /// A client's operation on a standby NameNode (`StandbyException`: Hadoop's failover
    /// proxy then tries the next NameNode). `category` is HDFS's operation category.
    #[error("Operation category {category} is not supported in state standby. Visit https://s.apache.org/sbnn-error")]
    Standby { category: &'static str },
    /// An HA transition that could not be made (`org.apache.hadoop.ha.ServiceFailedException`).
    #[error("{0}")]
    ServiceFailed(String),
    /// A NameNode that is not fit to serve (`HealthCheckFailedException`).
    #[error("{0}")]
    HealthCheckFailed(String),
    /// Anything HDFS reports as a plain `java.io.IOException`.
    #[error("{0}")]
    Io(String),
}

impl FsError {
    pub fn file_not_found(path: impl fmt::Display) -> Self {
        FsError::FileNotFound {
            path: path.to_string(),
        }
    }

    pub fn not_a_file(path: impl fmt::Display) -> Self {
        FsError::NotAFile {
            path: path.to_string(),
        }
    }

    pub fn parent_missing(parent: impl fmt::Display) -> Self {
        FsError::ParentMissing {
            parent: parent.to_string(),
        }
    }

    /// An internal fault while doing `what`, its cause kept.
    pub fn internal(
        what: impl fmt::Display,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        FsError::Internal {
            what: what.to_string(),
            cause: Cause(Arc::new(cause)),
        }
    }

    /// A journal record that does not fit the tree it is applied to (see [`Misfit`]).
    pub fn misfit(why: impl fmt::Display) -> Self {
        FsError::internal(
            "a journal record does not fit the namespace",
            Misfit(why.to_string()),
        )
    }

    /// Whether the path (or what it names) is not there: a `FileNotFoundException`.
    pub fn is_not_found(&self) -> bool {
        self.java_class() == class::FILE_NOT_FOUND
    }

    /// Whether a writer's file is no longer its to write: a `LeaseExpiredException`.
    pub fn is_lease_expired(&self) -> bool {
        self.java_class() == class::LEASE_EXPIRED
    }

    /// Whether the caller may not do this: an `AccessControlException`.
    pub fn is_access_denied(&self) -> bool {
        self.java_class() == class::ACCESS_CONTROL
    }

    /// The exact Java class name clients match on.
    pub fn java_class(&self) -> &'static str {
        match self {
            FsError::FileNotFound { .. }
            | FsError::NotAFile { .. }
            | FsError::ParentMissing { .. } => class::FILE_NOT_FOUND,
            FsError::InSafeMode { .. } => class::SAFE_MODE,
            FsError::Retriable(_) => class::RETRIABLE,
            FsError::LeaseConflict(c) => match c.held {
                HeldBy::Caller | HeldBy::Other { .. } => class::ALREADY_BEING_CREATED,
                HeldBy::Recovering | HeldBy::OtherRecovering { .. } => class::RECOVERY_IN_PROGRESS,
            },
            FsError::LeaseGone { .. }
            | FsError::NotLeaseOwner { .. }
            | FsError::LeaseMismatch { .. } => class::LEASE_EXPIRED,
            FsError::Reshape(_) => class::HADOOP_ILLEGAL_ARGUMENT,
            FsError::PermissionDenied(_)
            | FsError::NotOwner { .. }
            | FsError::StickyBit { .. }
            | FsError::SuperuserRequired { .. } => class::ACCESS_CONTROL,
            FsError::Internal { .. } => class::IO,
            FsError::Standby { .. } => "org.apache.hadoop.ipc.StandbyException",
            FsError::ServiceFailed(_) => "org.apache.hadoop.ha.ServiceFailedException",
            FsError::HealthCheckFailed(_) => "org.apache.hadoop.ha.HealthCheckFailedException",
            FsError::NotFound(_) => class::FILE_NOT_FOUND,
            FsError::AlreadyExists(_) => class::FILE_ALREADY_EXISTS,
            FsError::ParentNotDirectory(_) => class::PARENT_NOT_DIRECTORY,
            FsError::NotEmpty(_) => class::PATH_IS_NOT_EMPTY_DIRECTORY,
            FsError::AccessDenied(_) => class::ACCESS_CONTROL,
            FsError::InvalidPath(_) => class::INVALID_PATH,
            FsError::NotReplicatedYet(_) => class::NOT_REPLICATED_YET,
            FsError::Unsupported(_) => class::UNSUPPORTED_OPERATION,
            FsError::IllegalArgument(_) => class::HADOOP_ILLEGAL_ARGUMENT,
            FsError::DirectoryFull { .. } => class::MAX_DIRECTORY_ITEMS_EXCEEDED,
            FsError::ComponentTooLong { .. } => class::PATH_COMPONENT_TOO_LONG,
            FsError::UnregisteredNode(_) => {
                "org.apache.hadoop.hdfs.protocol.UnregisteredNodeException"
            }
            FsError::DisallowedDatanode(_) => {
                "org.apache.hadoop.hdfs.server.protocol.DisallowedDatanodeException"
            }
            FsError::XAttrNotFound(_) => "org.apache.hadoop.hdfs.protocol.XAttrNotFoundException",
            FsError::NotDirectory(_) => "org.apache.hadoop.fs.PathIsNotDirectoryException",
            FsError::NsQuotaExceeded { .. } => {
                "org.apache.hadoop.hdfs.protocol.NSQuotaExceededException"
            }
            FsError::DsQuotaExceeded { .. } => {
                "org.apache.hadoop.hdfs.protocol.DSQuotaExceededException"
            }
            FsError::TypeQuotaExceeded { .. } => {
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

/// HDFS's `TraditionalBinaryPrefix.long2String(n, "B", 2)`: `1 KB`, `1.50 MB`, `100 B`.
fn bytes_text(n: i64) -> String {
    let (sign, n) = if n < 0 {
        ("-", n.unsigned_abs())
    } else {
        ("", n as u64)
    };
    if n < 1024 {
        return format!("{sign}{n} B");
    }
    let symbols = ['K', 'M', 'G', 'T', 'P', 'E'];
    let mut i = 0;
    while i + 1 < symbols.len() && n >= 1u64 << (10 * (i + 2)) {
        i += 1;
    }
    let shift = 10 * (i + 1);
    if n & ((1u64 << shift) - 1) == 0 {
        return format!("{sign}{} {}B", n >> shift, symbols[i]);
    }
    let mut s = format!("{:.2}", n as f64 / (1u64 << shift) as f64);
    if s.starts_with("1024") && i + 1 < symbols.len() {
        i += 1;
        s = format!("{:.2}", n as f64 / (1u64 << (shift + 10)) as f64);
    }
    format!("{sign}{s} {}B", symbols[i])
}

/// A truncate or concat refused for the files it names, in HDFS's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReshapeError {
    #[error("Cannot truncate to a negative file size: {0}.")]
    NegativeLength(i64),
    #[error(
        "Cannot truncate to a larger file size. Current size: {current}, truncate size: {wanted}."
    )]
    Longer { current: u64, wanted: u64 },
    #[error("Target file name is empty")]
    NoTarget,
    #[error("No sources given")]
    NoSources,
    #[error("concat: target file {target} is under construction")]
    TargetOpen { target: String },
    #[error("Source file {src} is not in the same directory with the target {target}")]
    OtherDirectory { src: String, target: String },
    #[error("concat: the src file {src} is the same with the target file {target}")]
    SourceIsTarget { src: String, target: String },
    #[error("concat: source file {src} is invalid or empty or underConstruction")]
    SourceUnusable { src: String },
    #[error("concat: source file {src} has preferred block size {src_block} which is greater than the target file's preferred block size {target_block}")]
    LargerBlocks {
        src: String,
        src_block: u64,
        target_block: u64,
    },
    #[error("concat: at least two of the source files are the same")]
    RepeatedSource,
}

/// What a [`FsError::PermissionDenied`] names: `access` that the bits (or ACL) of `inode`
/// do not grant `user`; `mode` as `ls` shows it, `d` or `-` first.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "Permission denied: user={user}, access={access}, inode=\"{inode}\":{owner}:{group}:{mode}"
)]
pub struct Denied {
    pub user: String,
    pub access: &'static str,
    pub inode: String,
    pub owner: String,
    pub group: String,
    pub mode: String,
}

/// What a [`FsError::LeaseConflict`] names; `op` is HDFS's name for the attempt
/// (`CREATE_FILE`, `APPEND_FILE`, `TRUNCATE_FILE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub op: String,
    pub path: String,
    pub client: String,
    pub machine: String,
    pub held: HeldBy,
}

impl std::error::Error for Conflict {}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Conflict {
            op,
            path,
            client,
            machine,
            held,
        } = self;
        write!(
            f,
            "Failed to {op} {path} for {client} on {machine} because "
        )?;
        match held {
            // HDFS 3's words (FSNamesystem.recoverLeaseInternal); Hadoop 2 said "current
            // leaseholder is trying to recreate file."
            HeldBy::Caller => write!(f, "{client} is already the current lease holder."),
            HeldBy::Other { client, machine } => write!(
                f,
                "this file lease is currently owned by {client} on {machine}"
            ),
            HeldBy::Recovering => write!(f, "lease recovery is in progress. Try again later."),
            HeldBy::OtherRecovering { client, machine } => write!(
                f,
                "another recovery is in progress by {client} on {machine}"
            ),
        }
    }
}

/// Who holds the file a [`FsError::LeaseConflict`] was about, and whether its lease is
/// being recovered (HDFS's `recoverLeaseInternal` words each case).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeldBy {
    /// The caller itself: it is trying to open its own file again.
    Caller,
    /// Another client, on a machine.
    Other { client: String, machine: String },
    /// Another client whose lease lapsed: its recovery has started and not yet closed
    /// the file.
    Recovering,
    /// Another client, still within its lease, while the last block is being recovered
    /// (a recovery someone else asked for).
    OtherRecovering { client: String, machine: String },
}

/// Why a writer's file is no longer its to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseGone {
    /// The inode is now a directory (the file was replaced).
    NotAFile,
    /// The file was closed (recovered, or completed by another call).
    Closed,
}

impl LeaseGone {
    fn words(self) -> &'static str {
        match self {
            LeaseGone::NotAFile => "INode is not a regular file",
            LeaseGone::Closed => "File is not open for writing",
        }
    }
}

/// Why a journal record would not apply. Planning checks every change before its record
/// is written, so a record that does not fit is the journal and the tree disagreeing — a
/// damaged journal or a bug — never a caller's mistake: the NameNode reports it as an
/// internal fault ([`FsError::Internal`]) with this as the cause.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Misfit(String);

/// The fault beneath an [`FsError::Internal`]. Shared, so an answer can be kept and
/// sent again (the retry cache clones answers); two are equal when they read the same.
#[derive(Clone, Debug)]
pub struct Cause(pub Arc<dyn std::error::Error + Send + Sync>);

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Cause {}

impl From<FsError> for RpcError {
    fn from(e: FsError) -> Self {
        if let FsError::Internal { .. } = &e {
            // The client gets HDFS's class and the message; the log gets every cause.
            tracing::error!(error = %causes(&e), "internal fault answered as an IOException");
        }
        RpcError::app(e.java_class(), e.to_string())
    }
}

/// `e` and each of its sources, outermost first, joined by ": caused by: ".
pub fn causes(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        out.push_str(": caused by: ");
        out.push_str(&s.to_string());
        next = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_errors_render_hdfs_wording_and_keep_their_cause() {
        assert_eq!(
            FsError::file_not_found("/a/b").to_string(),
            "File does not exist: /a/b"
        );
        assert_eq!(
            FsError::not_a_file("/d").to_string(),
            "Path is not a file: /d"
        );
        assert_eq!(
            FsError::parent_missing("/x").to_string(),
            "Parent directory doesn't exist: /x"
        );
        let sm = FsError::InSafeMode {
            refused: "Cannot mkdirs".into(),
            reason: "It was turned on manually.".into(),
        };
        assert_eq!(
            sm.to_string(),
            "Cannot mkdirs. Name node is in safe mode.\nIt was turned on manually."
        );
        let denied = FsError::PermissionDenied(Box::new(Denied {
            user: "alice".into(),
            access: "WRITE",
            inode: "/d".into(),
            owner: "hdfs".into(),
            group: "supergroup".into(),
            mode: "drwxr-xr-x".into(),
        }));
        assert_eq!(
            denied.to_string(),
            "Permission denied: user=alice, access=WRITE, inode=\"/d\":hdfs:supergroup:drwxr-xr-x"
        );
        assert!(denied.is_access_denied());
        let su = |operation: Option<&str>| FsError::SuperuserRequired {
            user: "bob".into(),
            operation: operation.map(str::to_string),
        };
        assert_eq!(
            su(Some("saveNamespace")).to_string(),
            "Access denied for user bob. Superuser privilege is required for operation saveNamespace"
        );
        assert_eq!(
            su(None).to_string(),
            "Access denied for user bob. Superuser privilege is required"
        );
        let ds = FsError::DsQuotaExceeded {
            dir: "/q".into(),
            quota: 1024,
            consumed: 3 << 20,
        };
        assert_eq!(
            ds.to_string(),
            "The DiskSpace quota of /q is exceeded: quota = 1024 B = 1 KB but diskspace \
             consumed = 3145728 B = 3 MB"
        );
        let full = FsError::DirectoryFull {
            dir: "/d".into(),
            limit: 3,
            items: 3,
        };
        assert_eq!(
            full.to_string(),
            "The directory item limit of /d is exceeded: limit=3 items=3"
        );
        assert!(FsError::file_not_found("/a").is_not_found());
        assert!(!sm.is_not_found());
        let disk = std::io::Error::other("disk gone");
        let e = FsError::internal("making the change durable", disk);
        assert_eq!(e.to_string(), "making the change durable: disk gone");
        assert_eq!(e.java_class(), "java.io.IOException");
        let source = std::error::Error::source(&e).expect("the cause is kept");
        assert_eq!(source.to_string(), "disk gone");
        assert_eq!(e.clone(), e, "answers are kept and sent again");
        let inner = FsError::internal("applying", FsError::file_not_found("/z"));
        assert_eq!(
            causes(&inner),
            "applying: File does not exist: /z: caused by: File does not exist: /z"
        );
    }

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
                FsError::LeaseConflict(Box::new(Conflict {
                    op: String::new(),
                    path: String::new(),
                    client: String::new(),
                    machine: String::new(),
                    held: HeldBy::Caller,
                })),
                "org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException",
            ),
            (
                FsError::LeaseConflict(Box::new(Conflict {
                    op: String::new(),
                    path: String::new(),
                    client: String::new(),
                    machine: String::new(),
                    held: HeldBy::Recovering,
                })),
                "org.apache.hadoop.hdfs.protocol.RecoveryInProgressException",
            ),
            (
                FsError::LeaseGone {
                    gone: LeaseGone::Closed,
                    lease: String::new(),
                },
                "org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException",
            ),
            (
                FsError::InSafeMode {
                    refused: String::new(),
                    reason: String::new(),
                },
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
                FsError::DirectoryFull {
                    dir: String::new(),
                    limit: 0,
                    items: 0,
                },
                "org.apache.hadoop.hdfs.protocol.FSLimitException$MaxDirectoryItemsExceededException",
            ),
            (
                FsError::ComponentTooLong {
                    name: String::new(),
                    dir: String::new(),
                    limit: 0,
                },
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
