//! The accept loop under [`HttpServer`](crate::HttpServer): hyper's HTTP/1 connection
//! with a timer, so that a connection which does not send a whole request head in time
//! (idle between requests, or a client trickling bytes) is closed. `axum::serve` gives no
//! way to set that timeout, and without it such connections lived for ever.

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower_service::Service;
use tracing::{debug, warn};

/// Serves `app` on `listener` until `stop`, then lets the connections finish their
/// requests in progress (each is told to close after it) and returns once all have.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    app: Router,
    stop: CancellationToken,
    idle: Duration,
) {
    let connections = TaskTracker::new();
    loop {
        let (io, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                Err(e) => {
                    // Out of descriptors, most likely: pause rather than spin.
                    warn!(error = %e, "HTTP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stop.cancelled() => break,
        };
        let _ = io.set_nodelay(true);
        connections.spawn(connection(io, peer, app.clone(), stop.clone(), idle));
    }
    drop(listener);
    connections.close();
    connections.wait().await;
}

async fn connection(
    io: tokio::net::TcpStream,
    peer: SocketAddr,
    app: Router,
    stop: CancellationToken,
    idle: Duration,
) {
    // Wait for the first bytes before hyper takes the socket: hyper gives a connection
    // its read buffer (8 KiB) at once, and a connection that never speaks would hold it
    // (10,000 idle connections cost 100 MiB that way, 20 without).
    // (`readable` alone is not enough: a fresh socket counts as readable before any byte
    // has come.)
    let mut first = [0u8; 1];
    tokio::select! {
        peeked = tokio::time::timeout(idle, io.peek(&mut first)) => match peeked {
            Ok(Ok(n)) if n > 0 => {}
            _ => return, // closed, failed, or silent for the whole idle time
        },
        _ = stop.cancelled() => return,
    }
    // Handlers read the peer's address as `axum::serve`'s connect info gave it.
    let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        let mut app = app.clone();
        async move { app.call(req).await }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(idle)
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        _ = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.as_mut().await
        }
    };
    if let Err(e) = result {
        debug!(%peer, error = %e, "HTTP connection ended");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    const IDLE: Duration = Duration::from_millis(300);

    async fn server() -> (SocketAddr, CancellationToken, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().route(
            "/peer",
            get(|ConnectInfo(p): ConnectInfo<SocketAddr>| async move { p.ip().to_string() }),
        );
        let stop = CancellationToken::new();
        let task = tokio::spawn(accept_loop(listener, app, stop.clone(), IDLE));
        (addr, stop, task)
    }

    /// Reads until the server closes, or gives up after a few seconds.
    async fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
        let mut buf = Vec::new();
        matches!(
            tokio::time::timeout(limit, s.read_to_end(&mut buf)).await,
            Ok(Ok(_)) | Ok(Err(_))
        )
    }

    #[tokio::test]
    async fn silent_trickling_and_idle_connections_are_closed() {
        let (addr, stop, task) = server().await;
        // Says nothing at all.
        let mut silent = TcpStream::connect(addr).await.unwrap();
        // Sends half a request head and stops.
        let mut trickle = TcpStream::connect(addr).await.unwrap();
        trickle
            .write_all(b"GET /peer HTTP/1.1\r\nHo")
            .await
            .unwrap();
        // Finishes one request, then sits on the kept-alive connection.
        let mut kept = TcpStream::connect(addr).await.unwrap();
        kept.write_all(b"GET /peer HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut first = [0u8; 512];
        let n = kept.read(&mut first).await.unwrap();
        let head = String::from_utf8_lossy(&first[..n]);
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            head.ends_with("127.0.0.1"),
            "the handler saw the peer: {head}"
        );
        for s in [&mut silent, &mut trickle, &mut kept] {
            assert!(closed_within(s, Duration::from_secs(5)).await);
        }
        stop.cancel();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn a_request_in_progress_finishes_after_the_stop() {
        let (addr, stop, task) = server().await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /peer HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.cancel();
        s.write_all(b"\r\n").await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
        task.await.unwrap();
        assert!(
            TcpStream::connect(addr).await.is_err(),
            "no longer listening"
        );
    }
}
