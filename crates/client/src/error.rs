use ferrite_ipc::client::ClientError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The NameNode answered with a Java exception.
    #[error("{message}")]
    Remote { class: String, message: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Transfer(#[from] ferrite_transfer::TransferError),
    #[error("{0}")]
    Ipc(String),
    #[error("{0}")]
    NotFound(String),
    /// A DataNode refused an operation or broke the protocol.
    #[error("{0}")]
    DataNode(String),
    /// A DataNode refused the block token (expired, or signed with a key it lacks):
    /// fetch fresh locations, with fresh tokens, and try again.
    #[error("{0}")]
    AccessToken(String),
    #[error("{0}")]
    Checksum(String),
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl From<ClientError> for Error {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Remote { class, message, .. } => {
                if class == "java.io.FileNotFoundException" {
                    Error::NotFound(message)
                } else {
                    Error::Remote { class, message }
                }
            }
            other => Error::Ipc(other.to_string()),
        }
    }
}

impl Error {
    /// The Java exception class, for remote errors.
    pub fn class(&self) -> Option<&str> {
        match self {
            Error::Remote { class, .. } => Some(class),
            Error::NotFound(_) => Some("java.io.FileNotFoundException"),
            _ => None,
        }
    }
}
