//! Operation records: every namespace mutation is one of these, applied by
//! [`Namespace::apply`](super::Namespace::apply). Live RPCs, journal replay and (later)
//! replication all go through the same records, so they cannot drift apart.
//!
//! A record carries every value the mutation needs (ids, times, owners), so applying it
//! consults no clock and no configuration: replay is deterministic.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Mkdir {
        path: String,
        id: u64,
        perm: u16,
        owner: String,
        group: String,
        mtime: i64,
    },
    /// Create a file open for write by `client_name`. An existing file at `path` is replaced.
    Create {
        path: String,
        id: u64,
        perm: u16,
        owner: String,
        group: String,
        mtime: i64,
        replication: u16,
        block_size: u64,
        client_name: String,
        client_machine: String,
    },
    /// Allocate a new last block of an open file. The block before it (if any) is
    /// finished with `prev_len` bytes.
    AddBlock {
        path: String,
        id: u64,
        gs: u64,
        prev_len: u64,
    },
    /// Give the last block of an open file a new generation stamp (pipeline recovery), so
    /// replicas left by the failed pipeline can be told from the recovered ones.
    BumpGenerationStamp {
        path: String,
        id: u64,
        gs: u64,
    },
    /// Drop the last block of an open file (a writer that could not set up its pipeline).
    AbandonBlock {
        path: String,
        id: u64,
    },
    /// Close a file that was open for write (complete, or lease recovery). `len` is the
    /// file's final length; the last block gets whatever the earlier blocks do not hold.
    Close {
        path: String,
        mtime: i64,
        len: u64,
    },
    /// Move `src` to exactly `dst`; an existing `dst` is replaced when `overwrite` is set.
    Rename {
        src: String,
        dst: String,
        mtime: i64,
        overwrite: bool,
    },
    Delete {
        path: String,
        mtime: i64,
    },
    SetPermission {
        path: String,
        perm: u16,
    },
    SetOwner {
        path: String,
        owner: Option<String>,
        group: Option<String>,
    },
    SetTimes {
        path: String,
        mtime: Option<i64>,
        atime: Option<i64>,
    },
    SetReplication {
        path: String,
        replication: u16,
    },
}
