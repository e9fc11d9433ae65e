//! The NameNode's web UI at `/`: one page (overview, DataNodes, file browser, namespace
//! usage) whose assets are compiled into the binary, so that it works with no network
//! beyond the NameNode itself. The page reads what HDFS's own UI reads — `/jmx`,
//! `/startupProgress`, and WebHDFS for the file browser — plus one JSON answer of
//! Ferrite's own, the namespace usage of a path from the summary (`usage.rs`).

mod usage;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, State};
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use ferrite_http::webhdfs::{self as web, json_ok, WebError};

use crate::service::Operation;
use crate::webhdfs::WebHdfsSlot;

/// Where the page asks for namespace usage.
pub const USAGE_PATH: &str = "/api/v1/namespace/usage";

/// The assets, as the build found them.
const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

pub fn router(slot: Arc<WebHdfsSlot>) -> Router {
    Router::new()
        .route("/", get(|| asset("text/html; charset=utf-8", INDEX_HTML)))
        .route(
            "/index.html",
            get(|| asset("text/html; charset=utf-8", INDEX_HTML)),
        )
        // Where HDFS's UI lives: bookmarks and links to an HDFS NameNode land here.
        .route(
            "/dfshealth.html",
            get(|| async { Redirect::permanent("/") }),
        )
        .route(
            "/explorer.html",
            get(|| async { Redirect::permanent("/#browse/") }),
        )
        .route(
            "/ui/app.js",
            get(|| asset("text/javascript; charset=utf-8", APP_JS)),
        )
        .route(
            "/ui/app.css",
            get(|| asset("text/css; charset=utf-8", APP_CSS)),
        )
        .route(USAGE_PATH, get(namespace_usage))
        .with_state(slot)
}

async fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, content_type),
            // The binary is the version: a restarted, upgraded NameNode must not be
            // shown with the old script.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `?path=P&top=N&user.name=U`: the usage of P as the summary holds it, checked against
/// U's permissions as `getSummary` is.
async fn namespace_usage(
    State(slot): State<Arc<WebHdfsSlot>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
) -> Response {
    let Some(w) = slot.get() else {
        return WebError::new(
            "org.apache.hadoop.ipc.RetriableException",
            "NameNode still not started",
        )
        .into_response();
    };
    let p = web::query_of(&uri);
    let (user, _) = p.user();
    let path = p.get("path").filter(|s| !s.is_empty()).unwrap_or("/");
    let top = p
        .get("top")
        .and_then(|t| t.parse::<usize>().ok())
        .unwrap_or(usage::DEFAULT_TOP)
        .clamp(1, usage::MAX_TOP);
    let who = match w
        .nn
        .admit(user.as_str(), peer.ip().to_string(), Operation::GetSummary)
    {
        Ok(who) => who,
        Err(e) => return WebError::new(e.java_class(), e.to_string()).into_response(),
    };
    let answer =
        w.nn.path_summary(
            &who,
            path,
            |s, path| usage::of(s, path, top),
            |u| u.as_ref().is_some_and(usage::restricted),
        )
        .await;
    match answer {
        Ok(Some(body)) => {
            let mut doc = usage::json(&body);
            // The quota of the path itself, when it has one (the namespace's figures: exact
            // now, where the summary's may lag).
            let quota =
                w.nn.quota_view(&who, path)
                    .ok()
                    .filter(|q| q.used.is_some());
            doc["quota"] = quota.map_or(serde_json::Value::Null, |q| usage::quota_json(&q));
            json_ok(doc)
        }
        Ok(None) => WebError::new(
            "java.io.FileNotFoundException",
            format!("{path} is not in the namespace summary yet"),
        )
        .into_response(),
        Err(e) => WebError::new(e.java_class(), e.to_string()).into_response(),
    }
}
