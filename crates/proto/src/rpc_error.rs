//! Errors sent back to RPC callers, carrying the exact Java exception class names that
//! clients branch on (`RemoteException.unwrapRemoteException` matches them by string).

use std::borrow::Cow;

use crate::common::rpc_response_header_proto::RpcErrorCodeProto;

/// The `errorDetail` code of an ERROR response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    /// An exception thrown by the method itself.
    Application,
    /// The protocol exists but the method does not.
    NoSuchMethod,
    /// The protocol is not served here.
    NoSuchProtocol,
    /// The server failed outside the method (e.g. the request body did not decode).
    Server,
}

impl ErrorCode {
    pub fn to_proto(self) -> RpcErrorCodeProto {
        match self {
            ErrorCode::Application => RpcErrorCodeProto::ErrorApplication,
            ErrorCode::NoSuchMethod => RpcErrorCodeProto::ErrorNoSuchMethod,
            ErrorCode::NoSuchProtocol => RpcErrorCodeProto::ErrorNoSuchProtocol,
            ErrorCode::Server => RpcErrorCodeProto::ErrorRpcServer,
        }
    }
}

/// Well-known Java exception class names.
pub mod class {
    pub const IO: &str = "java.io.IOException";
    pub const FILE_NOT_FOUND: &str = "java.io.FileNotFoundException";
    pub const FILE_ALREADY_EXISTS: &str = "org.apache.hadoop.fs.FileAlreadyExistsException";
    pub const PARENT_NOT_DIRECTORY: &str = "org.apache.hadoop.fs.ParentNotDirectoryException";
    pub const PATH_IS_NOT_EMPTY_DIRECTORY: &str =
        "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException";
    pub const ACCESS_CONTROL: &str = "org.apache.hadoop.security.AccessControlException";
    pub const AUTHORIZATION: &str = "org.apache.hadoop.security.authorize.AuthorizationException";
    pub const SASL: &str = "javax.security.sasl.SaslException";
    pub const INVALID_PATH: &str = "org.apache.hadoop.fs.InvalidPathException";
    pub const SAFE_MODE: &str = "org.apache.hadoop.hdfs.server.namenode.SafeModeException";
    pub const ALREADY_BEING_CREATED: &str =
        "org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException";
    pub const RECOVERY_IN_PROGRESS: &str =
        "org.apache.hadoop.hdfs.protocol.RecoveryInProgressException";
    pub const LEASE_EXPIRED: &str = "org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException";
    pub const NOT_REPLICATED_YET: &str =
        "org.apache.hadoop.hdfs.server.namenode.NotReplicatedYetException";
    pub const UNSUPPORTED_OPERATION: &str = "java.lang.UnsupportedOperationException";
    pub const NO_SUCH_METHOD: &str = "org.apache.hadoop.ipc.RpcNoSuchMethodException";
    pub const NO_SUCH_PROTOCOL: &str = "org.apache.hadoop.ipc.RpcNoSuchProtocolException";
    pub const RPC_SERVER: &str = "org.apache.hadoop.ipc.RpcServerException";
    pub const RETRIABLE: &str = "org.apache.hadoop.ipc.RetriableException";
    pub const ILLEGAL_ARGUMENT: &str = "java.lang.IllegalArgumentException";
    pub const RUNTIME: &str = "java.lang.RuntimeException";
    pub const HADOOP_ILLEGAL_ARGUMENT: &str = "org.apache.hadoop.HadoopIllegalArgumentException";
    pub const MAX_DIRECTORY_ITEMS_EXCEEDED: &str =
        "org.apache.hadoop.hdfs.protocol.FSLimitException$MaxDirectoryItemsExceededException";
    pub const PATH_COMPONENT_TOO_LONG: &str =
        "org.apache.hadoop.hdfs.protocol.FSLimitException$PathComponentTooLongException";
}

/// An error answer to one call. The connection stays open.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{class}: {message}")]
pub struct RpcError {
    pub class: Cow<'static, str>,
    pub message: String,
    pub code: ErrorCode,
}

impl RpcError {
    /// An exception raised by a method, with its Java class name.
    pub fn app(class: &'static str, message: impl Into<String>) -> Self {
        RpcError {
            class: Cow::Borrowed(class),
            message: message.into(),
            code: ErrorCode::Application,
        }
    }

    pub fn io(message: impl Into<String>) -> Self {
        Self::app(class::IO, message)
    }

    pub fn no_such_method(protocol: &str, method: &str) -> Self {
        RpcError {
            class: Cow::Borrowed(class::NO_SUCH_METHOD),
            message: format!("Unknown method {method} called on {protocol} protocol."),
            code: ErrorCode::NoSuchMethod,
        }
    }

    pub fn no_such_protocol(protocol: &str) -> Self {
        RpcError {
            class: Cow::Borrowed(class::NO_SUCH_PROTOCOL),
            message: format!("Unknown protocol: {protocol}"),
            code: ErrorCode::NoSuchProtocol,
        }
    }

    /// The request body could not be decoded.
    pub fn bad_request(method: &str, err: impl std::fmt::Display) -> Self {
        RpcError {
            class: Cow::Borrowed(class::RPC_SERVER),
            message: format!("Failed to decode the request of {method}: {err}"),
            code: ErrorCode::Server,
        }
    }
}
