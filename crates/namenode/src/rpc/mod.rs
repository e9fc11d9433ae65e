//! The NameNode's IPC front end: ClientNamenodeProtocol, DatanodeProtocol and Ferrite's
//! own protocols as thin translations between protobuf messages and the typed operations
//! of [`NameNodeService`]. Nothing here decides: admission comes from the service's table
//! (`service::admission`), applied by the router's wrapper together with the retry cache,
//! metrics and logging.

pub mod absent_features;
pub mod acls;
pub mod admin;
pub mod balancer;
pub mod blocks;
pub mod cache;
pub mod client;
pub mod convert;
pub mod datanode;
pub mod file_ops;
mod ha_admin;
pub mod located_reply;
mod snapshots;
pub mod stats;
pub mod storage_policies;
pub mod summary;
pub mod xattrs;

use std::future::Future;
use std::sync::Arc;

use ferrite_ipc::durable::Durability;
use ferrite_ipc::frame::Body;
use ferrite_ipc::{CallCtx, Hold, MethodKind, Router, RpcError, Service, NAMENODE_PROTOCOL};
use prost::Message;

use crate::namespace::RetryAnswer;
use crate::service::retried::Retried;
use crate::service::{Admitted, CallId, NameNodeService, Operation};

// The handlers are public so that the in-process benchmark can call them directly, as
// HDFS's NNThroughputBenchmark calls its NameNode's RPC methods without a socket.
pub(crate) type Nn = Arc<NameNodeService>;
pub(crate) type Res<T> = Result<T, RpcError>;

impl Service for NameNodeService {
    type Op = Operation;
    type Admitted = Admitted;

    fn kind(op: Operation) -> MethodKind {
        let p = op.policy();
        MethodKind {
            at_most_once: p.at_most_once,
            mutating: p.mutating,
            superuser: p.superuser,
        }
    }

    fn admit(&self, ctx: CallCtx, op: Operation) -> Result<Admitted, RpcError> {
        // An at-most-once call's ids go with it, to be journaled with its records.
        let call = op
            .policy()
            .at_most_once
            .then(|| {
                let client_id = ctx.client_id.as_ref().try_into().ok()?;
                (ctx.call_id >= 0).then_some(CallId {
                    client_id,
                    call_id: ctx.call_id,
                })
            })
            .flatten();
        let who = NameNodeService::admit(self, ctx.user, ctx.peer_ip, op)?;
        Ok(who.for_call(call))
    }

    fn durability(&self) -> Option<&dyn Durability> {
        NameNodeService::durability(self)
    }

    fn before_admit(&self, op: Operation) -> Option<Hold<'_>> {
        self.standby_hold(op)
    }

    /// In an HA group a client's read waits until what it saw is committed: the active
    /// applies a change before the group commits it, and a change a cut-off active
    /// applied may never commit. (A lone NameNode's reads go out at once, as HDFS's do.)
    fn reads_wait_for_durability(&self, op: Operation) -> bool {
        self.ha_control().is_some() && !op.policy().mutating && !op.served_by_standby()
    }
}

/// Registration by [`Operation`]: the method is served under the name the operation table
/// gives it, and admitted as that operation.
pub(crate) trait Register {
    fn op<Req, Resp, F, Fut>(&mut self, protocol: &'static str, op: Operation, f: F) -> &mut Self
    where
        Req: Message + Default + 'static,
        Resp: Body + 'static,
        F: Fn(Nn, Admitted, Req) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Res<Resp>> + Send + 'static;
}

impl Register for Router<NameNodeService> {
    fn op<Req, Resp, F, Fut>(&mut self, protocol: &'static str, op: Operation, f: F) -> &mut Self
    where
        Req: Message + Default + 'static,
        Resp: Body + 'static,
        F: Fn(Nn, Admitted, Req) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Res<Resp>> + Send + 'static,
    {
        self.method(protocol, op.name(), op, f)
    }
}

/// Builds the dispatch table of everything the NameNode answers.
pub fn router(state: Nn) -> Router<NameNodeService> {
    let c = state.config();
    let capacity = c.retry_cache_entries();
    let ttl = std::time::Duration::from_millis(c.retry_cache_expiry_ms);
    let mut r = Router::new(state.clone()).with_retry_cache(ttl, capacity);
    prime_retried(&r, &state);
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
    ha_admin::register(&mut r);
    balancer::register(&mut r);
    // NamenodeProtocol: NNThroughputBenchmark asks for the block pool id this way.
    r.op(
        NAMENODE_PROTOCOL,
        Operation::VersionRequest,
        client::version_request,
    );
    r
}

/// Calls the replayed journal (or, on a standby turning active, the group's log) answered
/// are answered again on retry, not run again.
pub fn prime_retried(r: &Router<NameNodeService>, state: &NameNodeService) {
    for call in state.take_retried() {
        if let Some(reply) = replayed_reply(state, &call) {
            r.prime_retry_cache(&call.call.client_id, call.call.call_id, reply);
        }
    }
}

/// The reply a replayed at-most-once call gave, rebuilt as HDFS rebuilds its retry cache
/// (a create's from the file's status now); none when the namespace does not show the
/// call's effect, whose records a crash may have cut off (see `service/retried.rs`).
fn replayed_reply(nn: &NameNodeService, call: &Retried) -> Option<bytes::Bytes> {
    use ferrite_proto::hdfs::{
        CreateResponseProto, CreateSnapshotResponseProto, RenameResponseProto,
    };
    let e = &call.effect;
    let now = nn.replayed_status(&e.path);
    let shown = match &now {
        None => e.gone,
        Some(st) => !e.gone && (e.id == 0 || st.file_id == e.id),
    };
    if !shown {
        return None;
    }
    let bytes = match call.answer {
        RetryAnswer::Empty => Vec::new(),
        // delete's and rename's `result: true`, the same bytes.
        RetryAnswer::True => RenameResponseProto { result: true }.encode_to_vec(),
        RetryAnswer::Path => CreateSnapshotResponseProto {
            snapshot_path: e.path.clone(),
        }
        .encode_to_vec(),
        RetryAnswer::Status => CreateResponseProto {
            fs: Some(convert::status_proto(now.as_ref()?)),
        }
        .encode_to_vec(),
    };
    Some(bytes.into())
}

#[cfg(test)]
mod tests {
    /// Methods are registered by `Operation`, so every routed name is in the table; the
    /// other way round, every operation in the table is served (fsck over HTTP only), so
    /// no entry is left that nothing routes to.
    #[test]
    fn every_operation_in_the_table_is_routed() {
        let cfg = crate::config::Config::default();
        let nn = crate::service::NameNodeService::in_memory(cfg, "nn");
        let r = super::router(std::sync::Arc::new(nn));
        let routed: std::collections::HashSet<&str> =
            r.metrics().iter().map(|m| m.method).collect();
        for op in super::Operation::ALL {
            if *op != super::Operation::Fsck {
                assert!(routed.contains(op.name()), "{} is not routed", op.name());
            }
        }
    }
}
