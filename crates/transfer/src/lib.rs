//! DataTransferProtocol framing, shared by the DataNode and the client.
//!
//! [`checksum`] computes and verifies per-chunk CRCs (pure); [`packet`] encodes and parses
//! data packets (pure, plus one async reader); [`io`] reads and writes the op preamble and
//! varint-delimited messages on async streams; [`moves`] asks a DataNode for a replica
//! move.

pub mod checksum;
pub mod io;
pub mod moves;
pub mod packet;

/// `DataTransferProtocol.DATA_TRANSFER_VERSION`.
pub const DATA_TRANSFER_VERSION: u16 = 28;

/// Op codes (`Op.java`).
pub mod op {
    pub const WRITE_BLOCK: u8 = 80;
    pub const READ_BLOCK: u8 = 81;
    pub const READ_METADATA: u8 = 82;
    pub const REPLACE_BLOCK: u8 = 83;
    pub const COPY_BLOCK: u8 = 84;
    pub const BLOCK_CHECKSUM: u8 = 85;
    pub const TRANSFER_BLOCK: u8 = 86;
}

#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("data transfer version mismatch (expected {DATA_TRANSFER_VERSION}, received {0})")]
    Version(u16),
    #[error("malformed {what}: {why}")]
    Malformed { what: &'static str, why: String },
    #[error("{what} of {len} bytes exceeds the limit of {max}")]
    TooLarge {
        what: &'static str,
        len: usize,
        max: usize,
    },
}

impl TransferError {
    pub fn malformed(what: &'static str, why: impl ToString) -> Self {
        TransferError::Malformed {
            what,
            why: why.to_string(),
        }
    }
}
