//! The Ferrite NameNode.
//!
//! [`namespace`], [`blocks`], [`summary`] and [`journal`] are the state machines and their
//! storage; [`service`] owns them and is the one place where the NameNode decides, behind
//! typed operations; [`rpc`] translates the Hadoop protocols onto the service; [`server`]
//! wires the listener, background tasks (lease monitor, trash emptier) and configuration
//! together.

mod activity;
// The namespace, its errors and its record codec live in their own crate; these names keep
// the paths the rest of the NameNode uses.
pub use ferrite_namespace as namespace;
pub use ferrite_namespace::{chunked, error, id_map};
// The journal, the images and their files: their own crate too.
pub use ferrite_journal::{atomic_file, checkpoint, journal, startup_progress};
// The block map, placement, replication and recovery decisions.
pub use ferrite_blocks as blocks;
pub mod clock;
pub mod config;
pub mod forked_writer;
pub mod fsck;
pub mod groups;
pub mod ha_config;
pub mod ha_control;
pub mod hosts;
pub mod identity;
mod inotify;
pub mod jmx;
mod leases;
mod mover;
mod proxy_users;
mod raft_cut;
mod resources;
pub mod rpc;
mod satisfier;
pub mod security;
pub mod server;
mod server_ha;
pub mod service;
pub mod summary;
mod tokens;
pub mod topology;
pub mod trash;
pub mod webhdfs;
pub mod webui;

pub use config::Config;
pub use server::{NameNode, NameNodeHandle};
pub use server_ha::HaHost;
