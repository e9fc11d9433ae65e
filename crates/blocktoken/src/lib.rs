//! Block access tokens, on by default.
//!
//! A NameNode hands out block locations with a token that a DataNode checks before it
//! serves or accepts the block. HDFS signs one token per block: a getBlockLocations reply
//! of n blocks costs n identifier serializations and n HMACs (HDFS-1081). Here one
//! identifier covers every block of a reply, as runs of block ids, so a reply costs one
//! serialization and one HMAC whatever its length; every block carries the same bytes.
//!
//! Pure logic: time and randomness come from the caller, so everything here is testable
//! without clocks or sockets.
//!
//! - [`runs`]: the compact block-id set inside an identifier.
//! - [`identifier`]: the identifier's fields and wire form, and signing.
//! - [`keys`]: the NameNode's rolling key manager and the DataNode's key ring and checks.
//! - [`hadoop`]: tokens in Hadoop's own format, which Hadoop's Balancer and Mover sign.

mod hadoop;
mod identifier;
pub mod keys;
mod runs;

use std::fmt;

pub use identifier::{BlockTokenId, Token};
pub use keys::{BlockKey, KeyManager, KeyRing, KeyTimes};

/// The token kind HDFS clients expect on block tokens.
pub const KIND: &str = "HDFS_BLOCK_TOKEN";

/// What a token allows, as a bit set (HDFS's `AccessMode`s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Modes(pub u32);

impl Modes {
    pub const READ: Modes = Modes(1);
    pub const WRITE: Modes = Modes(2);
    pub const COPY: Modes = Modes(4);
    pub const REPLACE: Modes = Modes(8);

    pub fn contains(self, other: Modes) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn with(self, other: Modes) -> Modes {
        Modes(self.0 | other.0)
    }
}

impl fmt::Display for Modes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (Modes::READ, "READ"),
            (Modes::WRITE, "WRITE"),
            (Modes::COPY, "COPY"),
            (Modes::REPLACE, "REPLACE"),
        ];
        let set: Vec<&str> = names
            .iter()
            .filter(|(m, _)| self.contains(*m))
            .map(|(_, n)| *n)
            .collect();
        write!(f, "[{}]", set.join(", "))
    }
}

/// Why a DataNode refused a token. The text goes back to the client and into the log.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenError {
    #[error("no block token was sent")]
    Missing,
    #[error("block token identifier cannot be read: {0}")]
    Malformed(String),
    #[error("block token is signed with key {0}, which this DataNode does not have")]
    UnknownKey(u32),
    /// Also a token for another block pool: the pool is signed, not carried.
    #[error("block token signature does not match its identifier and block pool (key {0})")]
    BadSignature(u32),
    #[error("block token expired at {expiry_ms} (now {now_ms})")]
    Expired { expiry_ms: u64, now_ms: u64 },
    #[error("block token does not cover blk_{0}")]
    NotCovered(u64),
    #[error("block token allows {have}, not {want}")]
    WrongMode { have: Modes, want: Modes },
    #[error("no current block key to sign with")]
    NoKey,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_combine_and_print() {
        let rw = Modes::READ.with(Modes::WRITE);
        assert!(rw.contains(Modes::READ) && rw.contains(Modes::WRITE));
        assert!(!rw.contains(Modes::COPY));
        assert_eq!(rw.to_string(), "[READ, WRITE]");
    }
}
