//! The handshake deadline: a peer that sends the preamble and then nothing is dropped once
//! the deadline passes, while a connection whose context has arrived stays open however
//! long it is idle (frames are read without a timer once the connection is ready).

use std::sync::Arc;
use std::time::Duration;

use ferrite_ipc::client::IpcClient;
use ferrite_ipc::frame::{self, AuthProtocol};
use ferrite_ipc::{server, MethodKind, Router, ServerConfig, Service};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const PROTOCOL: &str = "org.ferrite.test.IdleProtocol";
const DEADLINE: Duration = Duration::from_millis(300);

#[derive(Clone, PartialEq, prost::Message)]
struct Num {
    #[prost(uint64, tag = "1")]
    n: u64,
}

struct Svc;

impl Service for Svc {}

async fn start() -> std::net::SocketAddr {
    let mut router = Router::new(Arc::new(Svc));
    router.method(
        PROTOCOL,
        "echo",
        MethodKind::READ,
        |_s: Arc<Svc>, _ctx, req: Num| async move { Ok(req) },
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let cfg = ServerConfig {
        handshake_timeout: DEADLINE,
        ..Default::default()
    };
    let handle = server::spawn(listener, Arc::new(router), cfg);
    let addr = handle.local_addr;
    std::mem::forget(handle);
    addr
}

#[tokio::test]
async fn a_peer_silent_after_the_preamble_is_dropped_at_the_deadline() {
    let addr = start().await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&frame::preamble(AuthProtocol::None))
        .await
        .unwrap();
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(DEADLINE * 20, s.read(&mut buf))
        .await
        .expect("the server closes the connection")
        .unwrap_or(0);
    assert_eq!(n, 0, "closed without an answer");
}

#[tokio::test]
async fn a_ready_connection_outlives_the_handshake_deadline() {
    let addr = start().await;
    let client = IpcClient::connect(addr, "tester", PROTOCOL).await.unwrap();
    let first: Num = client.call("echo", &Num { n: 1 }).await.unwrap();
    assert_eq!(first.n, 1);
    tokio::time::sleep(DEADLINE * 3).await;
    let later: Num = client.call("echo", &Num { n: 2 }).await.unwrap();
    assert_eq!(later.n, 2, "still served after idling past the deadline");
}
