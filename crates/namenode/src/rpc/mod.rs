//! The NameNode's IPC front end: ClientNamenodeProtocol, DatanodeProtocol and Ferrite's
//! own protocols as thin translations between protobuf messages and the typed operations
//! of [`NameNodeService`]. Nothing here decides: admission comes from the service's table
//! (`service::admission`), applied by the router's wrapper together with the retry cache,
//! metrics and logging.

pub mod absent_features;
pub mod acls;
pub mod admin;
pub mod blocks;
pub mod cache;
pub mod client;
pub mod convert;
pub mod datanode;
pub mod file_ops;
pub mod located_reply;
mod snapshots;
pub mod stats;
pub mod storage_policies;
pub mod summary;
pub mod xattrs;

use std::sync::Arc;

use ferrite_ipc::durable::Durability;
use ferrite_ipc::{CallCtx, MethodKind, Router, RpcError, Service, NAMENODE_PROTOCOL};

use crate::service::admission;
use crate::service::{NameNodeService, Origin};

// The handlers are public so that the in-process benchmark can call them directly, as
// HDFS's NNThroughputBenchmark calls its NameNode's RPC methods without a socket.
pub(crate) type Nn = Arc<NameNodeService>;
pub(crate) type Res<T> = Result<T, RpcError>;

/// Who a call comes from, as the service takes it.
pub(crate) fn origin(ctx: &CallCtx) -> Origin<'_> {
    Origin {
        user: &ctx.user,
        ip: &ctx.peer_ip,
    }
}

impl Service for NameNodeService {
    fn admit(&self, ctx: &CallCtx, method: &'static str, kind: MethodKind) -> Result<(), RpcError> {
        // `kind` is the method's policy from the service's table, copied when the method
        // was registered (see `kind`): no lookup per call.
        let policy = admission::Policy {
            mutating: kind.mutating,
            superuser: kind.superuser,
            at_most_once: kind.at_most_once,
        };
        Ok(self.admit_as(&ctx.user, method, policy)?)
    }

    fn durability(&self) -> Option<&dyn Durability> {
        NameNodeService::durability(self)
    }
}

/// How the router treats `name`: the service's policy for it. A name the table lacks
/// is registered as the strictest kind, and the service refuses every call to it.
pub(crate) fn kind(name: &str) -> MethodKind {
    match admission::policy(name) {
        Some(p) => MethodKind {
            at_most_once: p.at_most_once,
            mutating: p.mutating,
            superuser: p.superuser,
        },
        None => MethodKind {
            at_most_once: true,
            mutating: true,
            superuser: true,
        },
    }
}

/// Builds the dispatch table of everything the NameNode answers.
pub fn router(state: Nn) -> Router<NameNodeService> {
    let c = state.config();
    let capacity = match (c.retry_cache_enabled, c.retry_cache_max_entries) {
        (false, _) => 0,
        (true, Some(n)) => n,
        (true, None) => crate::config::retry_cache_capacity(
            crate::config::default_java_heap(),
            c.retry_cache_heap_percent,
        ),
    };
    let ttl = std::time::Duration::from_millis(c.retry_cache_expiry_ms);
    let mut r = Router::new(state.clone()).with_retry_cache(ttl, capacity);
    client::register(&mut r);
    blocks::register(&mut r);
    file_ops::register(&mut r);
    datanode::register(&mut r);
    summary::register(&mut r);
    stats::register(&mut r);
    xattrs::register(&mut r);
    acls::register(&mut r);
    admin::register(&mut r);
    absent_features::register(&mut r);
    cache::register(&mut r);
    storage_policies::register(&mut r);
    snapshots::register(&mut r);
    // NamenodeProtocol: NNThroughputBenchmark asks for the block pool id this way.
    r.method(
        NAMENODE_PROTOCOL,
        "versionRequest",
        kind("versionRequest"),
        client::version_request,
    );
    r
}

#[cfg(test)]
mod tests {
    /// Every method the router serves has an entry in the service's admission table, so
    /// no front end can reach an operation the table does not govern.
    #[test]
    fn every_routed_method_has_an_admission_policy() {
        let cfg = crate::config::Config::default();
        let nn = crate::service::NameNodeService::in_memory(cfg, "nn");
        let r = super::router(std::sync::Arc::new(nn));
        for m in r.metrics() {
            assert!(
                crate::service::admission::policy(m.method).is_some(),
                "{}.{} has no admission policy",
                m.protocol,
                m.method
            );
        }
    }
}
