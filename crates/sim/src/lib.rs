//! Deterministic simulation of a Ferrite cluster.
//!
//! The real NameNode (service, IPC server, monitors, journal codec and replay) and Ferrite's
//! IPC client run in one process on turmoil's simulated network and clock. The NameNode's
//! journal sits on a simulated disk that loses unsynced writes and tears the last one when
//! the host crashes. A seed fixes everything: the clients' operations, message latencies,
//! and the fault schedule (NameNode crashes and restarts, partitions between clients and
//! the NameNode, slow and failing disks). Each client works in a directory of its own and
//! checks every answer, and at the end the whole directory and its snapshots, against a
//! model; an acknowledged operation that is lost shows up there.
//!
//! The NameNodes' Raft group runs here too (`--raft`): three `ferrite-raft` nodes on memory
//! disks under power cuts and partitions, checked for one leader per term, one batch per
//! log index on every node, and no acknowledged batch lost.
//!
//! `cargo run -p ferrite-sim -- --seeds N` runs many seeds; a failing one prints how to
//! replay it.

mod client;
mod datanode;
mod disk;
mod file_client;
mod ha_namenode;
mod model;
mod namenode;
mod net;
mod raft_group;
mod run;

pub use raft_group::{run_raft_seed, RaftOptions};
pub use run::{replay_hint, run_seed, time_seed, Options, Report};
