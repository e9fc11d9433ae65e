//! A Ferrite server's HTTP port (HDFS's 9870 for a NameNode): Hadoop's `/jmx` metrics, in
//! the JSON that HDFS's monitoring tools and scrapers read, and for a NameNode the
//! `/isActive` health check load balancers use. WebHDFS is not served yet.

pub mod jmx;

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

pub use jmx::{Bean, Beans};

/// A running HTTP server.
pub struct HttpServer {
    pub addr: SocketAddr,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

impl HttpServer {
    /// Serves `beans` at `/jmx` on `listener` until [`shutdown`](Self::shutdown); with
    /// `active`, also `/isActive` as an HDFS NameNode does (Ferrite has no standby, so its
    /// NameNode is always the active one).
    pub fn spawn(
        listener: TcpListener,
        beans: Arc<dyn Beans>,
        active: bool,
    ) -> std::io::Result<HttpServer> {
        let addr = listener.local_addr()?;
        let mut app = Router::new().route("/jmx", get(jmx_page));
        if active {
            app = app.route("/isActive", get(is_active));
        }
        let app = app.with_state(beans);
        let cancel = CancellationToken::new();
        let stop = cancel.clone().cancelled_owned();
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(stop)
                .await
            {
                warn!(error = %e, "HTTP server stopped");
            }
        });
        info!(%addr, "HTTP serving");
        Ok(HttpServer { addr, cancel, task })
    }

    /// Stops accepting, lets requests in progress finish, and returns once it has.
    pub async fn shutdown(self) {
        self.cancel.cancel();
        let _ = self.task.await;
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
        Err(msg) => (StatusCode::BAD_REQUEST, jmx::error(&msg)),
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
