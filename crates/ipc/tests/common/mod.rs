//! What the IPC tests share: a server for a test router on 127.0.0.1:0, and an echo
//! router (a number in, the same number out) for tests whose calls need no state.
//! Not every test binary that includes this module uses all of it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use ferrite_ipc::client::IpcClient;
use ferrite_ipc::{server, MethodKind, OpenService, Router, ServerConfig, Service};
use tokio::net::TcpListener;

/// Serves `router` with `cfg` on an ephemeral loopback port. The server stops with the
/// test's runtime.
pub(crate) async fn spawn<S: Service>(router: Router<S>, cfg: ServerConfig) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let handle = server::spawn(listener, Arc::new(router), cfg);
    let addr = handle.local_addr;
    std::mem::forget(handle);
    addr
}

/// [`spawn`] with the default configuration, and a client connected for `protocol`.
pub(crate) async fn serve<S: Service>(router: Router<S>, protocol: &str) -> IpcClient {
    let addr = spawn(router, ServerConfig::default()).await;
    IpcClient::connect(addr, "tester", protocol).await.unwrap()
}

/// A request and reply carrying one number.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Num {
    #[prost(uint64, tag = "1")]
    pub n: u64,
}

/// A service with no state.
pub(crate) struct Stateless;

impl OpenService for Stateless {}

/// A router with `protocol.echo`, which answers a [`Num`] with itself.
pub(crate) fn echo_router(protocol: &'static str) -> Router<Stateless> {
    let mut router = Router::new(Arc::new(Stateless));
    router.method(
        protocol,
        "echo",
        MethodKind::READ,
        |_s: Arc<Stateless>, _ctx, req: Num| async move { Ok(req) },
    );
    router
}
