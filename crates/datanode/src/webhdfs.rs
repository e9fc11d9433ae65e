//! WebHDFS's second step, on a DataNode's HTTP port: the NameNode redirected a client here
//! to OPEN, CREATE, APPEND or GETFILECHECKSUM. As HDFS's DataNode does, this node acts as
//! an ordinary client of the cluster (`namenoderpcaddress`, as the caller): reads and
//! writes go through the same pipeline and read paths, with checksums, as any client's.
//! Bytes stream in both directions; nothing holds a whole file.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use bytes::Bytes;
use ferrite_client::fs::{ClientOptions, CreateOptions, FileSystem};
use ferrite_client::{FileReader, FileWriter};
use ferrite_http::webhdfs::{self as web, Params, WebError, IO};
use futures_util::StreamExt;
use parking_lot::Mutex;
use serde_json::json;
use tower_http::cors::{Any, CorsLayer};
use tracing::warn;

/// `/webhdfs/v1`, open to pages of any origin: the NameNode's web UI (another port, so
/// another origin) reads and uploads here after the NameNode's redirect. No cookie or
/// credential is involved: the identity travels in the URL the NameNode signed.
pub(crate) fn router() -> Router {
    let cors = CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::PUT, Method::POST])
        .allow_headers([header::CONTENT_TYPE]);
    Router::new()
        .route("/webhdfs/v1", any(at_path))
        .route("/webhdfs/v1/{*path}", any(at_path))
        .layer(cors)
        .with_state(Arc::new(Connections::default()))
}

/// How many NameNode connections (one per NameNode address and user) stay open.
const MAX_CONNECTIONS: usize = 64;

/// Open NameNode connections, one per (NameNode address, user), shared by this node's
/// WebHDFS requests. Besides saving a connect and handshake per request, it keeps a
/// CREATE's file visible quickly: Hadoop's client returns from `create` once its PUT's
/// headers are sent and may look the file up at once, so the time from those headers to
/// the NameNode's create is a window in which the new file is not there yet.
#[derive(Default)]
struct Connections {
    open: Mutex<HashMap<(String, String), FileSystem>>,
}

impl Connections {
    /// A new client session (its own client name and leases) for `user` at `nn`.
    async fn session(&self, nn: &str, user: &str) -> Result<FileSystem, WebError> {
        let key = (nn.to_string(), user.to_string());
        if let Some(fs) = self.open.lock().get(&key).filter(|fs| fs.is_connected()) {
            return Ok(fs.session());
        }
        let opts = ClientOptions {
            user: user.to_string(),
            ..Default::default()
        };
        let fs = FileSystem::connect_with(&format!("hdfs://{nn}"), &opts)
            .await
            .map_err(client_error)?;
        let mut open = self.open.lock();
        open.retain(|_, fs| fs.is_connected());
        if open.len() >= MAX_CONNECTIONS {
            // Sessions still using a dropped connection keep it until they end.
            open.clear();
        }
        open.insert(key, fs.clone());
        Ok(fs)
    }
}

async fn at_path(
    State(conns): State<Arc<Connections>>,
    method: Method,
    uri: Uri,
    body: Body,
) -> Response {
    let answer = match web::path_of(&uri) {
        Ok(path) => serve(&conns, &method, &path, &web::query_of(&uri), body).await,
        Err(e) => Err(e),
    };
    answer.unwrap_or_else(IntoResponse::into_response)
}

fn client_error(e: ferrite_client::Error) -> WebError {
    WebError::new(e.class().unwrap_or(IO), e.to_string())
}

async fn serve(
    conns: &Connections,
    method: &Method,
    path: &str,
    p: &Params,
    body: Body,
) -> Result<Response, WebError> {
    let Some(op) = p.op() else {
        return Err(WebError::bad_op(None, method.as_str()));
    };
    let nn = p.required("namenoderpcaddress", &op)?.to_string();
    let (user, _) = p.user();
    let connect = || conns.session(&nn, &user);
    match (method, op.as_str()) {
        (&Method::GET, "OPEN") => {
            let fs = connect().await?;
            let reader = fs.open(path).await.map_err(client_error)?;
            open(reader, p)
        }
        (&Method::GET, "GETFILECHECKSUM") => {
            let fs = connect().await?;
            let (algorithm, bytes) = fs.file_checksum(path).await.map_err(client_error)?;
            // HDFS writes the bytes of its Writable buffer, whose first size is 32: the
            // 28 bytes of the checksum and the buffer's zeros after them.
            let mut padded = bytes.clone();
            padded.resize(bytes.len().max(32), 0);
            let hex: String = padded.iter().map(|b| format!("{b:02x}")).collect();
            let doc = json!({"FileChecksum": {
                "algorithm": algorithm, "bytes": hex, "length": bytes.len(),
            }});
            Ok((
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
                doc.to_string(),
            )
                .into_response())
        }
        (&Method::PUT, "CREATE") => create(p, path, &nn, connect(), body).await,
        (&Method::POST, "APPEND") => append(path, connect(), body).await,
        (m, op) => Err(WebError::bad_op(Some(op), m.as_str())),
    }
}

/// CREATE's options as HDFS's DataNode reads them: `createflag` (createNonRecursive, the
/// FileSystem builder) wins over `overwrite`.
fn create_options(p: &Params) -> Result<CreateOptions, WebError> {
    let flags: Vec<String> = p
        .get("createflag")
        .unwrap_or("")
        .split(',')
        .map(|f| f.trim().to_ascii_uppercase())
        .filter(|f| !f.is_empty())
        .collect();
    let overwrite = if flags.is_empty() {
        p.bool("overwrite", false)?
    } else {
        flags.iter().any(|f| f == "OVERWRITE")
    };
    Ok(CreateOptions {
        overwrite,
        replication: p.short("replication")?.map(|r| r.max(1) as u16),
        block_size: p.long("blocksize")?.map(|b| b.max(0) as u64),
        perm: p.permission("permission")?.unwrap_or(0o644),
        create_parent: p.bool("createparent", true)?,
    })
}

/// How long a refused upload's body is still read (see [`refuse`]).
const DRAIN_FOR: std::time::Duration = std::time::Duration::from_secs(30);

/// Answers a refused upload only after reading what the client sends: Hadoop's client
/// sends its whole body before it reads the answer, and a connection closed under it shows
/// as "Unexpected end of file" instead of the refusal. Bounded in time.
async fn refuse(body: Body, e: WebError) -> WebError {
    let mut data = body.into_data_stream();
    let _ = tokio::time::timeout(DRAIN_FOR, async {
        while let Some(Ok(_)) = data.next().await {}
    })
    .await;
    e
}

/// An upload's file, opened; a refusal is answered only after the body is read.
async fn open_or_refuse<T>(
    opened: impl std::future::Future<Output = Result<T, WebError>>,
    body: Body,
) -> Result<(T, Body), WebError> {
    match opened.await {
        Ok(t) => Ok((t, body)),
        Err(e) => Err(refuse(body, e).await),
    }
}

async fn create(
    p: &Params,
    path: &str,
    nn: &str,
    connect: impl std::future::Future<Output = Result<FileSystem, WebError>>,
    body: Body,
) -> Result<Response, WebError> {
    let opened = async {
        let create = create_options(p)?;
        let fs = connect.await?;
        let w = fs.create(path, &create).await.map_err(client_error)?;
        Ok::<_, WebError>((fs, w))
    };
    let ((fs, mut w), body) = open_or_refuse(opened, body).await?;
    if let Err(e) = write_body(&mut w, body).await {
        // Nothing was acknowledged to the client: the file it was creating must not
        // appear with part of its bytes. Deleting an open file ends its lease too.
        drop(w);
        if let Err(d) = fs.delete(path, false).await {
            warn!(path, error = %d, "webhdfs: could not remove a broken upload");
        }
        return Err(e.into_web());
    }
    w.close().await.map_err(client_error)?;
    Ok((
        StatusCode::CREATED,
        [
            (header::LOCATION, format!("hdfs://{nn}{path}")),
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*".to_string()),
        ],
    )
        .into_response())
}

async fn append(
    path: &str,
    connect: impl std::future::Future<Output = Result<FileSystem, WebError>>,
    body: Body,
) -> Result<Response, WebError> {
    // The append is the first call, as HDFS's DataNode makes it: a client that renames the
    // file right after its request went out (Hadoop's contract test does) finds it open
    // already, and the writer follows it by inode id. The length it had comes back with
    // the append.
    let opened = async {
        let fs = connect.await?;
        let w = fs.append(path).await.map_err(client_error)?;
        let before = w.bytes_written();
        Ok::<_, WebError>((fs, before, w))
    };
    let ((fs, before, mut w), body) = open_or_refuse(opened, body).await?;
    if let Err(e) = write_body(&mut w, body).await {
        // The file goes back to what it held before this append: its bytes were never
        // acknowledged. Closed first (the lease is ours), then cut back.
        let undone = match w.close().await {
            Ok(()) => fs.truncate(path, before).await.map(drop),
            Err(c) => Err(c),
        };
        if let Err(u) = undone {
            warn!(path, error = %u, "webhdfs: could not undo a broken append");
        }
        return Err(e.into_web());
    }
    w.close().await.map_err(client_error)?;
    Ok(StatusCode::OK.into_response())
}

/// Streams `[offset, offset + length)` of the file (to its end without `length`).
fn open(mut reader: FileReader, p: &Params) -> Result<Response, WebError> {
    let offset = p.long("offset")?.unwrap_or(0).max(0) as u64;
    let len = reader.len();
    if offset > len || (offset == len && len > 0) {
        return Err(WebError::new(
            IO,
            format!("Offset={offset} out of the range [0, {len})"),
        ));
    }
    let want = p
        .long("length")?
        .map_or(len - offset, |l| (l.max(0) as u64).min(len - offset));
    reader.seek(offset);
    let chunks = futures_util::stream::unfold((reader, want), |(mut r, left)| async move {
        if left == 0 {
            return None;
        }
        match r.read_chunk().await {
            Ok(c) if c.is_empty() => None,
            Ok(c) => {
                let c: Bytes = if c.len() as u64 > left {
                    c.slice(..left as usize)
                } else {
                    c
                };
                let rest = left - c.len() as u64;
                Some((Ok::<_, std::io::Error>(c), (r, rest)))
            }
            // The status line is gone: all a reader can be told is that the body ended
            // short, which it sees against the length.
            Err(e) => Some((Err(std::io::Error::other(e.to_string())), (r, 0))),
        }
    });
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (header::CONTENT_LENGTH, want.to_string()),
            (header::ACCESS_CONTROL_ALLOW_METHODS, "GET".to_string()),
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*".to_string()),
        ],
        Body::from_stream(chunks),
    )
        .into_response())
}

/// Why an upload stopped short.
enum Broken {
    /// The client's body ended early or broke off.
    Request(String),
    /// The cluster refused or failed a write.
    Write(ferrite_client::Error),
}

impl Broken {
    fn into_web(self) -> WebError {
        match self {
            Broken::Request(m) => WebError::new(IO, format!("reading the request: {m}")),
            Broken::Write(e) => client_error(e),
        }
    }
}

/// Writes the request's body through the pipeline. The caller closes the file only when
/// the whole body arrived: the answer comes once the file is complete on the DataNodes
/// and closed at the NameNode.
async fn write_body(w: &mut FileWriter, body: Body) -> Result<(), Broken> {
    let mut data = body.into_data_stream();
    while let Some(chunk) = data.next().await {
        let chunk = chunk.map_err(|e| Broken::Request(e.to_string()))?;
        w.write(&chunk).await.map_err(Broken::Write)?;
    }
    Ok(())
}
