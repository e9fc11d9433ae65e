//! The IPC server's socket edge: accept loop, and per connection a reader (which also runs
//! each call that finishes without waiting, as mutations do: their replies wait for the
//! journal in the writer, see [`crate::durable`]), a task for each call that does wait, and
//! a writer task (`outbox.rs`).
//!
//! Limits on everything: a connection permit is taken before `accept`, each connection has a
//! bounded number of calls in flight, replies held for durability included (reading pauses
//! when it is reached), frames are capped before anything is allocated for them and buffered
//! only as their bytes arrive, and replies are written in bounded slices (HADOOP-4797: no
//! giant socket writes).
//!
//! While a connection holds many replies for a journal sync, the calls that arrive meanwhile
//! gather in the socket instead of waking the reader one by one (`low_water.rs`).

use std::future::Future;
use std::net::SocketAddr;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use ferrite_proto::common::rpc_response_header_proto::{RpcErrorCodeProto, RpcStatusProto};
use ferrite_proto::common::{IpcConnectionContextProto, RpcSaslProto};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, error, info, warn};

use crate::durable;
use crate::frame::{self, AuthProtocol, Body, FrameError};
use crate::low_water::LowWater;
use crate::net::{Conn, Listen};
pub use crate::outbox::WRITE_SLICE;
use crate::outbox::{self, Outbox, Reply};
use crate::router::{CallCtx, Router, Service};
use crate::sasl::{SaslOutcome, SaslSession, ServerSecurity};
use crate::RpcError;

#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Largest accepted request frame (`ipc.maximum.data.length`).
    pub max_frame_len: u32,
    /// Connections served at once; `accept` waits beyond this.
    pub max_connections: usize,
    /// Calls in flight on one connection before its reader pauses.
    pub max_in_flight_per_conn: usize,
    /// Time allowed for the preamble and connection context.
    pub handshake_timeout: Duration,
    /// While a connection holds many replies for a journal sync, its socket wakes the
    /// reader only once this many request bytes have arrived, or when replies are released
    /// (`low_water.rs`). 0 or 1: every arrival wakes it.
    pub read_batch_bytes: u32,
    /// Kerberos (`hadoop.security.authentication=kerberos`): who this server is and how
    /// it maps principals; `None`: SIMPLE.
    pub security: Option<Arc<ServerSecurity>>,
    /// Who may act for whom (`hadoop.proxyuser.*`), asked when a connection's context
    /// names a user other than the one it authenticated as (or a real user, with SIMPLE).
    pub impersonation: Option<Arc<dyn Impersonation>>,
}

/// Why a real user may not act for another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No rule lets it act for that user.
    NotAllowed,
    /// Its rules do not list the address it connects from.
    WrongHost,
}

/// The server's proxy-user rules.
pub trait Impersonation: Send + Sync {
    /// Whether `real` (a short user name) may act as `user` from address `ip`.
    fn authorize(&self, real: &str, user: &str, ip: &str) -> Result<(), Refusal>;
}

impl std::fmt::Debug for dyn Impersonation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Impersonation")
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_frame_len: 64 << 20,
            max_connections: 16_384,
            max_in_flight_per_conn: 256,
            handshake_timeout: Duration::from_secs(20),
            read_batch_bytes: 4096,
            security: None,
            impersonation: None,
        }
    }
}

/// A running server: its address, and the means to stop it and wait for it.
pub struct ServerHandle {
    pub local_addr: SocketAddr,
    cancel: CancellationToken,
    task: JoinHandle<()>,
    connections: Connections,
}

/// A server's open connections, counted live (for metrics).
#[derive(Clone)]
pub struct Connections(TaskTracker);

impl Connections {
    pub fn open(&self) -> usize {
        self.0.len()
    }
}

impl ServerHandle {
    /// Stops accepting, closes connections after their in-flight calls, and waits.
    pub async fn shutdown(self) {
        self.cancel.cancel();
        let _ = self.task.await;
    }

    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    pub fn connections(&self) -> Connections {
        self.connections.clone()
    }
}

/// Starts serving on an already-bound listener (so tests can bind `127.0.0.1:0`).
pub fn spawn<S: Service, L: Listen>(
    listener: L,
    router: Arc<Router<S>>,
    cfg: ServerConfig,
) -> ServerHandle {
    let local_addr = listener
        .local_addr()
        .expect("bound listener has an address");
    let cancel = CancellationToken::new();
    // A connection is a tracked task, so the tracker also counts them.
    let tracker = TaskTracker::new();
    let task = tokio::spawn(run(listener, router, cfg, cancel.clone(), tracker.clone()));
    ServerHandle {
        local_addr,
        cancel,
        task,
        connections: Connections(tracker),
    }
}

/// The accept loop. Returns after `cancel` fires and every connection has drained.
async fn run<S: Service, L: Listen>(
    listener: L,
    router: Arc<Router<S>>,
    cfg: ServerConfig,
    cancel: CancellationToken,
    tracker: TaskTracker,
) {
    let limit = Arc::new(Semaphore::new(cfg.max_connections));
    let next_id = AtomicU64::new(1);
    let mut backoff = Duration::from_millis(10);
    loop {
        let permit = tokio::select! {
            p = limit.clone().acquire_owned() => p.expect("semaphore never closed"),
            _ = cancel.cancelled() => break,
        };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = cancel.cancelled() => break,
        };
        let (stream, peer) = match accepted {
            Ok(x) => {
                backoff = Duration::from_millis(10);
                x
            }
            Err(e) => {
                // Typically EMFILE: wait for descriptors to free up instead of spinning.
                warn!(error = %e, "accept failed; backing off {:?}", backoff);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        let conn = Connection {
            id: next_id.fetch_add(1, Ordering::Relaxed),
            peer,
            peer_ip: peer.ip().to_string().into(),
            router: router.clone(),
            cfg: cfg.clone(),
            cancel: cancel.clone(),
        };
        tracker.spawn(async move {
            let id = conn.id;
            if let Err(e) = conn.serve(stream).await {
                debug!(conn = id, %peer, error = %e, "connection closed");
            }
            drop(permit);
        });
    }
    tracker.close();
    tracker.wait().await;
    info!("IPC server stopped");
}

#[derive(Debug, thiserror::Error)]
enum ConnError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Frame(#[from] FrameError),
    #[error("request frame of {len} bytes exceeds ipc.maximum.data.length {max}")]
    TooLarge { len: u32, max: u32 },
    #[error("connection closed in the middle of a {len}-byte frame")]
    TruncatedFrame { len: u32 },
    #[error("handshake timed out")]
    HandshakeTimeout,
    #[error("fatal protocol error: {0}")]
    Fatal(String),
}

struct Connection<S: Service> {
    id: u64,
    peer: SocketAddr,
    peer_ip: Arc<str>,
    router: Arc<Router<S>>,
    cfg: ServerConfig,
    cancel: CancellationToken,
}

/// Where a connection is in its handshake.
enum Phase {
    Sasl,
    /// SASL is over; with Kerberos, the client was authenticated as this user (and
    /// principal).
    AwaitContext(Option<(Arc<str>, String)>),
    Ready {
        user: Arc<str>,
        real_user: Option<Arc<str>>,
    },
}

impl<S: Service> Connection<S> {
    async fn serve<C: Conn>(self, stream: C) -> Result<(), ConnError> {
        stream.set_nodelay()?;
        // The halves share the descriptor, which lives as long as either of them.
        let fd = stream.raw_fd();
        let (rd, mut wr) = stream.into_split();
        let mut rd = BufReader::with_capacity(64 * 1024, rd);
        let mut pre = [0u8; 7];
        tokio::time::timeout(self.cfg.handshake_timeout, rd.read_exact(&mut pre))
            .await
            .map_err(|_| ConnError::HandshakeTimeout)??;
        let auth = match frame::check_preamble(&pre) {
            Ok(a) => a,
            Err(e) => {
                refuse_preamble(&mut wr, &pre, &e).await;
                return Err(e.into());
            }
        };
        // Only replies that wait for durability give calls a reason to gather. Linux only:
        // the design rests on lowering the mark waking the reader (see `low_water.rs`).
        let gathers = cfg!(target_os = "linux")
            && self.router.state().durability().is_some()
            && self.cfg.read_batch_bytes > 1;
        let tx = Arc::new(Outbox::with_low_water(
            fd.filter(|_| gathers)
                .map(|fd| LowWater::new(fd, self.cfg.read_batch_bytes)),
        ));
        let router = self.router.clone();
        let out = tx.clone();
        let writer =
            tokio::spawn(
                async move { outbox::write_loop(wr, out, router.state().durability()).await },
            );
        let result = self.read_loop(&mut rd, auth, &tx).await;
        // Let the writer finish the replies it holds (including a FATAL one).
        tx.close();
        let _ = writer.await;
        result
    }

    async fn read_loop<R: AsyncRead + Unpin>(
        &self,
        rd: &mut BufReader<R>,
        auth: AuthProtocol,
        tx: &Arc<Outbox>,
    ) -> Result<(), ConnError> {
        let in_flight = Arc::new(Semaphore::new(self.cfg.max_in_flight_per_conn));
        let mut phase = match auth {
            AuthProtocol::None => Phase::AwaitContext(None),
            AuthProtocol::Sasl => Phase::Sasl,
        };
        if let (AuthProtocol::None, Some(sec)) = (auth, &self.cfg.security) {
            // A SIMPLE client of a secure server is told so at once, under the call id
            // HDFS uses for a failed authorization (-1), which fails its first call.
            let msg = format!(
                "SIMPLE authentication is not enabled.  Available:{}",
                sec.available()
            );
            return Err(self.unauthorized(tx, -1, &Bytes::new(), msg));
        }
        let mut sasl = SaslSession::new(self.cfg.security.clone());
        // One cancellation waiter for the connection's life, not one per frame: registering
        // and dropping a waiter (and, below, a timer) per call showed in a lookup's profile.
        // It is polled first, so a peer that never stops sending cannot hold off a shutdown.
        let cancelled = self.cancel.cancelled();
        tokio::pin!(cancelled);
        loop {
            if rd.buffer().is_empty() {
                tx.before_socket_read();
            }
            let read = read_frame(rd, self.cfg.max_frame_len);
            let frame = if let Phase::Ready { .. } = phase {
                tokio::select! {
                    biased;
                    _ = &mut cancelled => return Ok(()),
                    f = read => f?,
                }
            } else {
                // Until the context arrives, a silent peer is dropped after the handshake
                // timeout.
                tokio::select! {
                    biased;
                    _ = &mut cancelled => return Ok(()),
                    f = tokio::time::timeout(self.cfg.handshake_timeout, read) =>
                        f.map_err(|_| ConnError::HandshakeTimeout)??,
                }
            };
            let Some(frame) = frame else { return Ok(()) };
            let req = match frame::parse_request(frame) {
                Ok(r) => r,
                Err(e) => {
                    let msg = format!("Invalid RPC header: {e}");
                    self.fatal(
                        tx,
                        frame::CALL_ID_INVALID,
                        &Bytes::new(),
                        RpcErrorCodeProto::FatalInvalidRpcHeader,
                        &msg,
                    );
                    return Err(e.into());
                }
            };
            let call_id = req.header.call_id;
            let client_id = req.header.client_id;
            let retry_count = req.header.retry_count.unwrap_or(-1);
            match (&phase, call_id) {
                (_, frame::CALL_ID_PING) => continue,
                (Phase::Ready { user, real_user }, id) if id >= 0 => {
                    let ctx = CallCtx {
                        user: user.clone(),
                        real_user: real_user.clone(),
                        peer: self.peer,
                        peer_ip: self.peer_ip.clone(),
                        conn_id: self.id,
                        call_id: id,
                        client_id,
                        retry_count,
                    };
                    self.start_call(ctx, req.rest, &in_flight, tx).await?;
                }
                (Phase::Ready { .. }, _) => {
                    return Err(self.refuse_call_id(&phase, call_id, &client_id, tx))
                }
                _ => self.handshake(&mut phase, &mut sasl, call_id, req.rest, &client_id, tx)?,
            }
        }
    }

    /// A frame before the connection is ready: SASL's exchange, then the connection
    /// context, which names the user every later call runs as.
    fn handshake(
        &self,
        phase: &mut Phase,
        sasl: &mut SaslSession,
        call_id: i32,
        mut rest: Bytes,
        client_id: &Bytes,
        tx: &Arc<Outbox>,
    ) -> Result<(), ConnError> {
        match (&*phase, call_id) {
            (Phase::Sasl, frame::CALL_ID_SASL) => {
                let msg = frame::decode_delimited::<RpcSaslProto>(&mut rest, "RpcSaslProto")?;
                match sasl.on_message(&msg) {
                    SaslOutcome::Reply(reply) => {
                        self.sasl_reply(tx, &reply);
                        if reply.state
                            == ferrite_proto::common::rpc_sasl_proto::SaslState::Success as i32
                        {
                            *phase = Phase::AwaitContext(None);
                        }
                    }
                    SaslOutcome::Done => *phase = Phase::AwaitContext(None),
                    SaslOutcome::Authenticated {
                        reply,
                        user,
                        principal,
                    } => {
                        debug!(conn = self.id, peer = %self.peer, %principal, %user, "authenticated");
                        self.sasl_reply(tx, &reply);
                        *phase = Phase::AwaitContext(Some((user.into(), principal)));
                    }
                    SaslOutcome::Refuse { class, msg } => {
                        let code = RpcErrorCodeProto::FatalUnauthorized;
                        self.fatal_class(tx, call_id, client_id, code, class, &msg);
                        return Err(ConnError::Fatal(msg));
                    }
                }
            }
            // INITIATE(SIMPLE) after our SUCCESS: nothing to answer.
            (Phase::AwaitContext(None), frame::CALL_ID_SASL) => {}
            (Phase::AwaitContext(Some(_)), frame::CALL_ID_SASL) => {
                let msg = "Negotiation is already complete".to_string();
                let code = RpcErrorCodeProto::FatalInvalidRpcHeader;
                self.fatal_class(
                    tx,
                    call_id,
                    client_id,
                    code,
                    crate::error::class::SASL,
                    &msg,
                );
                return Err(ConnError::Fatal(msg));
            }
            (Phase::AwaitContext(authenticated), frame::CALL_ID_CONNECTION_CONTEXT) => {
                let ctx = frame::decode_delimited::<IpcConnectionContextProto>(
                    &mut rest,
                    "IpcConnectionContextProto",
                )?;
                let info = ctx.user_info.unwrap_or_default();
                let named = info.effective_user.filter(|u| !u.is_empty());
                // Who the connection acts as, and the real user behind it when that is
                // someone else (by its full name, for HDFS's messages).
                let (user, real): (Arc<str>, Option<(Arc<str>, String)>) =
                    match (authenticated, named) {
                        (Some((user, _)), None) => (user.clone(), None),
                        // Hadoop's client names itself by its whole principal.
                        (Some((user, principal)), Some(named))
                            if named == *principal || *named == **user =>
                        {
                            (user.clone(), None)
                        }
                        (Some((user, principal)), Some(named)) => {
                            (named.into(), Some((user.clone(), principal.clone())))
                        }
                        (None, Some(named)) => {
                            let real = info.real_user.filter(|r| !r.is_empty());
                            (named.into(), real.map(|r| (Arc::from(r.as_str()), r)))
                        }
                        (None, None) => {
                            let msg = "Connection context carries no effective user".to_string();
                            return Err(self.unauthorized(tx, call_id, client_id, msg));
                        }
                    };
                if let Some((real_user, real_name)) = &real {
                    if let Err(msg) = self.may_impersonate(real_user, real_name, &user) {
                        let code = RpcErrorCodeProto::FatalUnauthorized;
                        let class = crate::error::class::AUTHORIZATION;
                        self.fatal_class(tx, call_id, client_id, code, class, &msg);
                        return Err(ConnError::Fatal(msg));
                    }
                }
                let real_user = real.map(|(r, _)| r);
                debug!(conn = self.id, peer = %self.peer, %user, protocol = ?ctx.protocol, "connection context");
                *phase = Phase::Ready { user, real_user };
            }
            _ => return Err(self.refuse_call_id(phase, call_id, client_id, tx)),
        }
        Ok(())
    }

    /// Whether `real` (short name; `real_name` in full) may act as `user` from this
    /// connection's address: the server's `hadoop.proxyuser` rules decide. Without rules to
    /// ask, a SIMPLE server lets it (the client's word is all it has anyway) and a secure
    /// one refuses.
    fn may_impersonate(&self, real: &str, real_name: &str, user: &str) -> Result<(), String> {
        let refusal = match &self.cfg.impersonation {
            Some(rules) => match rules.authorize(real, user, &self.peer_ip) {
                Ok(()) => return Ok(()),
                Err(r) => r,
            },
            None if self.cfg.security.is_none() => return Ok(()),
            None => Refusal::NotAllowed,
        };
        Err(match refusal {
            Refusal::NotAllowed => {
                format!("User: {real_name} is not allowed to impersonate {user}")
            }
            Refusal::WrongHost => format!(
                "Unauthorized connection for super-user: {real_name} from IP {}",
                self.peer_ip
            ),
        })
    }

    fn sasl_reply(&self, tx: &Arc<Outbox>, reply: &RpcSaslProto) {
        let header = frame::response_header(
            frame::CALL_ID_SASL,
            &Bytes::new(),
            -1,
            RpcStatusProto::Success,
        );
        tx.push(Reply::now(frame::encode_frame(&[&header, reply])));
    }

    /// A call: its method header and body parsed, then dispatched under the connection's
    /// limit of calls in flight, its reply going to the outbox (held back until the
    /// journal has what it rests on, where the service keeps one).
    async fn start_call(
        &self,
        ctx: CallCtx,
        rest: Bytes,
        in_flight: &Arc<Semaphore>,
        tx: &Arc<Outbox>,
    ) -> Result<(), ConnError> {
        let permit = in_flight
            .clone()
            .acquire_owned()
            .await
            .expect("never closed");
        let (method, body) = match frame::parse_call(rest) {
            Ok(x) => x,
            Err(e) => {
                let msg = format!("IPC server unable to read call parameters: {e}");
                self.fatal(
                    tx,
                    ctx.call_id,
                    &ctx.client_id,
                    RpcErrorCodeProto::FatalDeserializingRequest,
                    &msg,
                );
                return Err(e.into());
            }
        };
        let gated = self.router.state().durability().is_some();
        let answer = Answer {
            call_id: ctx.call_id,
            client_id: ctx.client_id.clone(),
            retry: ctx.retry_count,
            outbox: tx.clone(),
            permit: Some(permit),
            call: self.router.dispatch(
                ctx,
                &method.declaring_class_protocol_name,
                &method.method_name,
                body,
            ),
        };
        if gated {
            run_or_spawn(durable::gated(answer));
        } else {
            run_or_spawn(answer);
        }
        Ok(())
    }

    /// A call id the connection's state does not allow: answered fatally, and the
    /// connection ends.
    fn refuse_call_id(
        &self,
        phase: &Phase,
        id: i32,
        client_id: &Bytes,
        tx: &Arc<Outbox>,
    ) -> ConnError {
        let msg = match phase {
            Phase::Ready { .. } if id == frame::CALL_ID_CONNECTION_CONTEXT => {
                "Connection context already processed".to_string()
            }
            Phase::Ready { .. } => format!("Unexpected call id {id}"),
            _ => format!("Call id {id} arrived before the connection context"),
        };
        self.fatal(
            tx,
            id,
            client_id,
            RpcErrorCodeProto::FatalInvalidRpcHeader,
            &msg,
        );
        ConnError::Fatal(msg)
    }

    fn fatal(
        &self,
        tx: &Arc<Outbox>,
        call_id: i32,
        client_id: &Bytes,
        code: RpcErrorCodeProto,
        msg: &str,
    ) {
        self.fatal_class(
            tx,
            call_id,
            client_id,
            code,
            crate::error::class::RPC_SERVER,
            msg,
        )
    }

    /// Refuses the connection's identity: FATAL AccessControlException, then close.
    fn unauthorized(
        &self,
        tx: &Arc<Outbox>,
        call_id: i32,
        client_id: &Bytes,
        msg: String,
    ) -> ConnError {
        let (code, class) = (
            RpcErrorCodeProto::FatalUnauthorized,
            crate::error::class::ACCESS_CONTROL,
        );
        self.fatal_class(tx, call_id, client_id, code, class, &msg);
        ConnError::Fatal(msg)
    }

    fn fatal_class(
        &self,
        tx: &Arc<Outbox>,
        call_id: i32,
        client_id: &Bytes,
        code: RpcErrorCodeProto,
        class: &str,
        msg: &str,
    ) {
        debug!(conn = self.id, peer = %self.peer, "fatal: {msg}");
        let header = frame::response_header(call_id, client_id, -1, RpcStatusProto::Fatal);
        tx.push(Reply::now(frame::error_response(
            header, true, class, msg, code,
        )));
    }
}

/// A wrong preamble: answer the way a Hadoop server does where that helps a human, then close.
async fn refuse_preamble<W: AsyncWrite + Unpin>(wr: &mut W, pre: &[u8; 7], err: &FrameError) {
    let reply: Option<Bytes> = match err {
        FrameError::BadMagic(_) if pre.starts_with(b"GET ") || pre.starts_with(b"POST ") => {
            Some(Bytes::from_static(
                b"HTTP/1.1 404 Not Found\r\nContent-type: text/plain\r\nConnection: close\r\n\r\n\
It looks like you are making an HTTP request to a Hadoop IPC port. \
This is not the correct port for the web interface on this daemon.\r\n",
            ))
        }
        FrameError::BadVersion(v) => {
            let header = frame::response_header(
                frame::CALL_ID_INVALID,
                &Bytes::new(),
                -1,
                RpcStatusProto::Fatal,
            );
            Some(frame::error_response(
                header,
                true,
                "org.apache.hadoop.ipc.RPC$VersionMismatch",
                &format!("Server IPC version 9 cannot communicate with client version {v}"),
                RpcErrorCodeProto::FatalVersionMismatch,
            ))
        }
        _ => None,
    };
    if let Some(r) = reply {
        let _ = wr.write_all(&r).await;
    }
    let _ = wr.shutdown().await;
}

/// Runs a call on the reader's own task when it finishes without waiting, as lookups and
/// mutations do (a mutation's reply waits for its journal sync in the writer, not here),
/// and as a task of its own otherwise. A task per call cost a wake-up of another worker and
/// a context switch per call under NNThroughputBenchmark, whose threads share one
/// connection: a third of the NameNode's CPU per open.
///
/// Polling once with a no-op waker is sound: a future that returns `Pending` must wake the
/// waker of its latest poll, and the spawned task polls it again at once with its own.
fn run_or_spawn(call: impl Future<Output = ()> + Send + 'static) {
    let mut call = Box::pin(call);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    if call.as_mut().poll(&mut cx).is_pending() {
        tokio::spawn(call);
    }
}

pin_project_lite::pin_project! {
    /// A call, then its reply into the connection's outbox. Written out rather than as an
    /// `async` block, which kept the call's context and the dispatch future side by side
    /// and grew to 5.5 KB, allocated and copied once per call.
    struct Answer<F> {
        call_id: i32,
        client_id: Bytes,
        retry: i32,
        outbox: Arc<Outbox>,
        // Given back with the reply once it is written.
        permit: Option<tokio::sync::OwnedSemaphorePermit>,
        #[pin]
        call: F,
    }
}

impl<F: Future<Output = Result<Box<dyn Body>, RpcError>>> Future for Answer<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut this = self.project();
        // A handler that panics is a bug, but one call's bug must not hang its caller or
        // take down the connection it shares with others (the call is polled on the
        // connection's reader task): it is answered as the RuntimeException a Java server
        // would send, and never polled again.
        let polled = panic::catch_unwind(AssertUnwindSafe(|| this.call.as_mut().poll(cx)));
        let reply = match polled {
            Ok(poll) => ready!(poll),
            Err(payload) => Err(panicked(&*payload)),
        };
        let header = frame::response_header(
            *this.call_id,
            this.client_id,
            *this.retry,
            RpcStatusProto::Success,
        );
        let bytes = match reply {
            Ok(body) => frame::encode_frame(&[&header, body.as_ref() as &dyn Body]),
            Err(e) => frame::error_response(header, false, &e.class, &e.message, e.code.to_proto()),
        };
        let permit = this.permit.take().expect("an answer is given once");
        this.outbox.push(Reply::of_call(
            bytes,
            durable::ticket(),
            (*this.call_id, this.client_id.clone(), *this.retry),
            permit,
        ));
        Poll::Ready(())
    }
}

/// The answer to a call whose handler panicked, carrying the panic's message.
fn panicked(payload: &(dyn std::any::Any + Send)) -> RpcError {
    let why = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message");
    error!("a call's handler panicked: {why}");
    RpcError::app(
        crate::error::class::RUNTIME,
        format!("internal error in the server: {why}"),
    )
}

/// Reads one length-prefixed frame. `Ok(None)` on a clean end of stream between frames.
async fn read_frame<R: AsyncRead + Unpin>(
    rd: &mut R,
    max: u32,
) -> Result<Option<Bytes>, ConnError> {
    let mut len_buf = [0u8; 4];
    match rd.read_exact(&mut len_buf).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_be_bytes(len_buf);
    if len > max {
        return Err(ConnError::TooLarge { len, max });
    }
    // Grow with the bytes that actually arrive, so a client that announces a large frame and
    // sends nothing holds no memory.
    let want = len as usize;
    let mut buf = BytesMut::with_capacity(want.min(WRITE_SLICE));
    while buf.len() < want {
        let remaining = want - buf.len();
        buf.reserve(remaining.min(WRITE_SLICE));
        let n = (&mut *rd).take(remaining as u64).read_buf(&mut buf).await?;
        if n == 0 {
            return Err(ConnError::TruncatedFrame { len });
        }
    }
    Ok(Some(buf.freeze()))
}

#[cfg(test)]
mod tests {
    use super::{durable, run_or_spawn, Answer, Outbox, Router};
    use crate::router::OpenService;
    use bytes::Bytes;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use tokio::sync::oneshot;
    use tokio::sync::Semaphore;

    #[tokio::test]
    async fn a_call_that_does_not_wait_runs_before_run_or_spawn_returns() {
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        run_or_spawn(async move { d.store(true, Ordering::SeqCst) });
        assert!(done.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_call_that_waits_finishes_on_its_own_task_with_its_own_waker() {
        // The call is pending on its first poll; only the spawned task's waker can bring it
        // to completion.
        let (go_tx, go_rx) = oneshot::channel::<u32>();
        let (out_tx, out_rx) = oneshot::channel::<u32>();
        run_or_spawn(async move {
            let v = go_rx.await.unwrap();
            out_tx.send(v + 1).unwrap();
        });
        tokio::task::yield_now().await;
        go_tx.send(41).unwrap();
        assert_eq!(out_rx.await.unwrap(), 42);
    }

    /// The server allocates and moves this future once per call. Past 1 KiB, glibc takes a
    /// request from its large bins and first consolidates its fast bins; at 5.5 KB (an
    /// `async` block holding the call twice) the copy alone was 5% of the CPU per open.
    #[tokio::test]
    async fn the_future_allocated_per_call_stays_under_a_kibibyte() {
        struct Plain;
        impl OpenService for Plain {}
        let router = Arc::new(Router::new(Arc::new(Plain)));
        let ctx = crate::CallCtx {
            user: "u".into(),
            real_user: None,
            peer: "127.0.0.1:1".parse().unwrap(),
            peer_ip: "127.0.0.1".into(),
            conn_id: 1,
            call_id: 1,
            client_id: Bytes::new(),
            retry_count: 0,
        };
        let permit = Arc::new(Semaphore::new(1)).acquire_owned().await.unwrap();
        let answer = Answer {
            call_id: 1,
            client_id: Bytes::new(),
            retry: 0,
            outbox: Arc::new(Outbox::default()),
            permit: Some(permit),
            call: router.dispatch(ctx, "p", "m", Bytes::new()),
        };
        let gated = durable::gated(answer);
        assert!(
            std::mem::size_of_val(&gated) < 1024,
            "{} bytes",
            std::mem::size_of_val(&gated)
        );
    }
}
