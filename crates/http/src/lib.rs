//! A Ferrite server's HTTP port (HDFS's 9870 for a NameNode): Hadoop's `/jmx` metrics, in
//! the JSON that HDFS's monitoring tools and scrapers read, and for a NameNode the
//! `/isActive` health check load balancers use, and its `/startupProgress`. Routes a server
//! adds of its own (WebHDFS) are merged in by the caller.

mod jmx;
mod prom;
mod serve;
mod settings;
pub mod webhdfs;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub use jmx::{Bean, BeanSlot, Beans};
pub use settings::HttpSettings;

/// This process's thread count, from `/proc/self/status` (0 if it cannot be read): the
/// `Threads` a server's beans show.
pub fn process_threads() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// How long a shutdown waits for requests in progress.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// A running HTTP server.
pub struct HttpServer {
    pub addr: SocketAddr,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

impl HttpServer {
    /// Serves `beans` at `/jmx` on `listener` until [`shutdown`](Self::shutdown); with
    /// `active`, also what an HDFS NameNode's port serves beside it: `/isActive` (Ferrite
    /// has no standby, so its NameNode is always the active one) and `/startupProgress`;
    /// and whatever `extra` routes. Connections idle longer than `settings` allow are closed.
    pub fn spawn(
        listener: TcpListener,
        beans: Arc<dyn Beans>,
        active: bool,
        extra: Router,
        settings: &HttpSettings,
    ) -> std::io::Result<HttpServer> {
        let addr = listener.local_addr()?;
        let mut app = Router::new()
            .route("/jmx", get(jmx_page))
            .route("/prom", get(prom_page))
            .route("/metrics", get(prom_page));
        if active {
            app = app
                .route("/isActive", get(is_active))
                .route("/startupProgress", get(startup_progress));
        }
        let app = app.with_state(beans).merge(extra);
        let cancel = CancellationToken::new();
        let task = tokio::spawn(serve::accept_loop(
            listener,
            app,
            cancel.clone(),
            settings.idle_timeout,
        ));
        info!(%addr, "HTTP serving");
        Ok(HttpServer { addr, cancel, task })
    }

    /// Stops accepting, lets requests in progress finish, and returns once they have, or
    /// after a few seconds: a client that never finishes sending its request must not
    /// hold up the NameNode's shutdown (and its checkpoint).
    pub async fn shutdown(self) {
        self.cancel.cancel();
        let mut task = self.task;
        if tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
            .await
            .is_err()
        {
            warn!("HTTP requests still in progress after {SHUTDOWN_GRACE:?}; dropped");
            task.abort();
        }
    }
}

/// HDFS's answer for the active NameNode (a standby answers 405).
async fn is_active() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain;charset=utf-8")],
        "I am Active!",
    )
        .into_response()
}

async fn startup_progress(State(beans): State<Arc<dyn Beans>>) -> Response {
    match beans.startup_progress() {
        Some(doc) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "application/json; charset=UTF-8"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            doc.to_string(),
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// This host's name, for the `hostname` label Hadoop's samples carry.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

async fn prom_page(State(beans): State<Arc<dyn Beans>>) -> Response {
    let text = prom::exposition(&beans.beans(), &hostname());
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

async fn jmx_page(
    State(beans): State<Arc<dyn Beans>>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let q = jmx::Query::parse(
        params.get("qry").map(String::as_str),
        params.get("get").map(String::as_str),
    );
    let (status, body) = match q {
        Ok(q) => (StatusCode::OK, jmx::answer(&beans.beans(), &q)),
        Err(bad) => (StatusCode::BAD_REQUEST, jmx::error(&bad.to_string())),
    };
    let text = serde_json::to_string_pretty(&body).unwrap_or_else(|_| "{}".into());
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json; charset=utf8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        text,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    struct One;
    impl Beans for One {
        fn beans(&self) -> Vec<Bean> {
            vec![Bean::new("Test:name=One", "One").with("Answer", 42)]
        }
    }

    async fn server() -> HttpServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        HttpServer::spawn(
            listener,
            Arc::new(One),
            true,
            Router::new(),
            &HttpSettings::default(),
        )
        .unwrap()
    }

    async fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn serves_jmx_and_is_active_and_refuses_the_rest() {
        let http = server().await;
        let jmx = get(http.addr, "/jmx?get=Test:name=One::Answer").await;
        assert!(jmx.starts_with("HTTP/1.1 200"), "{jmx}");
        assert!(jmx.contains("application/json"), "{jmx}");
        assert!(jmx.contains("\"Answer\": 42"), "{jmx}");
        let bad = get(http.addr, "/jmx?get=no-separator").await;
        assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
        assert!(bad.contains("query format is not as expected."), "{bad}");
        let prom = get(http.addr, "/prom").await;
        assert!(prom.starts_with("HTTP/1.1 200"), "{prom}");
        assert!(prom.contains("text/plain; version=0.0.4"), "{prom}");
        let metrics = get(http.addr, "/metrics").await;
        assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
        let active = get(http.addr, "/isActive").await;
        assert!(active.ends_with("I am Active!"), "{active}");
        let other = get(http.addr, "/webhdfs/v1/?op=LISTSTATUS").await;
        assert!(other.starts_with("HTTP/1.1 404"), "{other}");
        let none = get(http.addr, "/startupProgress").await;
        assert!(
            none.starts_with("HTTP/1.1 404"),
            "no progress to show: {none}"
        );
        http.shutdown().await;
    }

    struct Starting;
    impl Beans for Starting {
        fn beans(&self) -> Vec<Bean> {
            vec![Bean::new("Test:name=StartupProgress", "StartupProgress")]
        }
        fn startup_progress(&self) -> Option<serde_json::Value> {
            Some(serde_json::json!({"percentComplete": 0.5}))
        }
    }

    #[tokio::test]
    async fn a_slot_answers_from_its_current_beans() {
        let slot = Arc::new(BeanSlot::new(Arc::new(Starting)));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let http = HttpServer::spawn(
            listener,
            slot.clone(),
            true,
            Router::new(),
            &HttpSettings::default(),
        )
        .unwrap();
        let progress = get(http.addr, "/startupProgress").await;
        assert!(progress.starts_with("HTTP/1.1 200"), "{progress}");
        assert!(
            progress.ends_with(r#"{"percentComplete":0.5}"#),
            "{progress}"
        );
        let jmx = get(http.addr, "/jmx").await;
        assert!(jmx.contains("Test:name=StartupProgress") && !jmx.contains("One"));
        slot.set(Arc::new(One));
        let jmx = get(http.addr, "/jmx").await;
        assert!(jmx.contains("Test:name=One"), "{jmx}");
        http.shutdown().await;
    }

    #[tokio::test]
    async fn a_request_that_never_finishes_does_not_hold_up_shutdown() {
        let http = server().await;
        let mut slow = tokio::net::TcpStream::connect(http.addr).await.unwrap();
        slow.write_all(b"GET /jmx HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        // The server has the connection and half a request; shutdown must still end.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        tokio::time::timeout(SHUTDOWN_GRACE * 2, http.shutdown())
            .await
            .expect("shutdown ends");
    }
}
