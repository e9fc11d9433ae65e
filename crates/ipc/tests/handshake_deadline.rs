//! The handshake deadline: a peer that sends the preamble and then nothing is dropped once
//! the deadline passes, while a connection whose context has arrived stays open however
//! long it is idle (frames are read without a timer once the connection is ready).

mod common;

use std::time::Duration;

use common::Num;
use ferrite_ipc::client::IpcClient;
use ferrite_ipc::frame::{self, AuthProtocol};
use ferrite_ipc::ServerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PROTOCOL: &str = "org.ferrite.test.IdleProtocol";
const DEADLINE: Duration = Duration::from_millis(300);

async fn start() -> std::net::SocketAddr {
    let cfg = ServerConfig {
        handshake_timeout: DEADLINE,
        ..Default::default()
    };
    common::spawn(common::echo_router(PROTOCOL), cfg).await
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
