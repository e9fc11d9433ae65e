//! What the IPC tests share: a server for a test router on 127.0.0.1:0.

use std::sync::Arc;

use ferrite_ipc::client::IpcClient;
use ferrite_ipc::{server, Router, ServerConfig, Service};
use tokio::net::TcpListener;

/// Serves `router` on an ephemeral loopback port and connects a client for `protocol`.
/// The server stops with the test's runtime.
pub async fn serve<S: Service>(router: Router<S>, protocol: &str) -> IpcClient {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let handle = server::spawn(listener, Arc::new(router), ServerConfig::default());
    let client = IpcClient::connect(handle.local_addr, "tester", protocol)
        .await
        .unwrap();
    std::mem::forget(handle);
    client
}
