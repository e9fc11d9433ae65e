//! Hadoop IPC (RPC version 9) for Ferrite.
//!
//! The server side checks the connection preamble, performs the SIMPLE authentication that
//! Java and hdfs-native clients use (plain or through SASL negotiation), reads length-framed
//! calls, and dispatches them from one [`Router`] table. The router is the single wrapper
//! where admission checks, the retry cache, metrics and logging happen, so handlers stay plain
//! functions of `(state, context, request)`.
//!
//! Layout: [`frame`] is pure byte-level encoding and decoding; [`sasl`] is the pure SASL
//! state machine; [`router`] and [`retry_cache`] hold dispatch logic; [`durable`] lets a
//! call's reply rest on state not yet durable, which the connection's outbox then holds
//! back; [`server`] and [`client`] are the socket edges. [`chunker`] keeps small, long-lived byte strings in
//! shared chunks (the retry cache's replies here, the NameNode's journal tail).

pub mod chunker;
pub mod client;
pub mod client_sasl;
pub mod conf;
pub mod durable;
/// The error answer every protocol shares; it lives with the messages, so that crates
/// below the IPC layer (the namespace) can make one without depending on it.
pub use ferrite_proto::rpc_error as error;
pub mod frame;
pub mod hostnames;
mod low_water;
pub mod metrics;
pub mod net;
mod outbox;
mod retry_cache;
mod router;
pub mod sasl;
pub mod server;

pub use error::{ErrorCode, RpcError};
pub use router::{CallCtx, Hold, MethodKind, OpenService, Router, Service};
pub use server::{ServerConfig, ServerHandle};

/// `declaringClassProtocolName` of ClientNamenodeProtocol.
pub const CLIENT_PROTOCOL: &str = "org.apache.hadoop.hdfs.protocol.ClientProtocol";
/// `declaringClassProtocolName` of NamenodeProtocol (NNThroughputBenchmark's versionRequest).
pub const NAMENODE_PROTOCOL: &str = "org.apache.hadoop.hdfs.server.protocol.NamenodeProtocol";
/// `declaringClassProtocolName` of DatanodeProtocol.
pub const DATANODE_PROTOCOL: &str = "org.apache.hadoop.hdfs.server.protocol.DatanodeProtocol";
/// `declaringClassProtocolName` of HAServiceProtocol (`hdfs haadmin`, failover controllers).
pub const HA_SERVICE_PROTOCOL: &str = "org.apache.hadoop.ha.HAServiceProtocol";
/// `declaringClassProtocolName` of InterDatanodeProtocol (a DataNode's IPC port): what the
/// primary DataNode of a block recovery asks the other replicas' DataNodes.
pub const INTER_DATANODE_PROTOCOL: &str =
    "org.apache.hadoop.hdfs.server.protocol.InterDatanodeProtocol";
/// `declaringClassProtocolName` of ClientDatanodeProtocol (a DataNode's IPC port).
pub const CLIENT_DATANODE_PROTOCOL: &str = "org.apache.hadoop.hdfs.protocol.ClientDatanodeProtocol";
/// Ferrite's own summary protocol (per-directory usage, and the journal stream).
pub const SUMMARY_PROTOCOL: &str = "org.ferrite.SummaryProtocol";
/// Ferrite's DataNode statistics protocol (the read server's counters).
pub const DATANODE_STATS_PROTOCOL: &str = "org.ferrite.DataNodeStatsProtocol";
/// Ferrite's NameNode statistics: journal sync accounting and directory health.
pub const NAMENODE_STATS_PROTOCOL: &str = "org.ferrite.NameNodeStatsProtocol";
