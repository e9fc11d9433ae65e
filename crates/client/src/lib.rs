//! Ferrite's client for HDFS-compatible clusters (Ferrite or Apache HDFS).
//!
//! [`FileSystem`] is the entry point: namespace calls go to the NameNode over Hadoop IPC;
//! [`FileWriter`] streams a file through DataNode pipelines block by block; [`FileReader`]
//! reads sequentially or at positions, verifying every chunk's checksum and moving to the
//! next replica (and telling the NameNode) when one is bad.

pub mod block_reader;
mod block_writer;
mod error;
pub mod fs;
pub mod namenodes;
mod reader;
mod replace;
mod shared;
mod writer;

pub use error::{Error, Result};
pub use fs::{ClientOptions, ContentSummary, CreateOptions, FileStatus, FileSystem};
pub use reader::FileReader;
pub use writer::FileWriter;
