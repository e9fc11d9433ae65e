//! The Ferrite NameNode.
//!
//! [`namespace`] is the pure state machine (tree, permissions, operation records);
//! [`rpc`] maps ClientNamenodeProtocol onto it through the IPC router; [`server`] wires the
//! listener, background tasks (lease monitor, trash emptier) and configuration together.

pub mod activity;
pub mod atomic_file;
pub mod blocks;
pub mod checkpoint;
pub mod chunked;
pub mod config;
pub mod error;
pub mod forked_writer;
pub mod groups;
pub mod id_map;
pub mod identity;
pub mod jmx;
pub mod journal;
pub mod lease_recovery;
pub mod leases;
pub mod located_reply;
pub mod namespace;
pub mod resources;
pub mod rpc;
pub mod rpc_blocks;
pub mod rpc_datanode;
pub mod rpc_file_ops;
pub mod rpc_stats;
pub mod rpc_summary;
pub mod server;
pub mod startup_progress;
pub mod state;
pub mod summary;
pub mod tokens;
pub mod trash;

pub use config::Config;
pub use server::{NameNode, NameNodeHandle};
