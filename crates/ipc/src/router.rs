//! One dispatch table for every RPC a server answers.
//!
//! Each entry maps `(protocol, method)` to a typed handler. [`Router::dispatch`] is the one
//! wrapper around all of them: it decodes the request, runs the service's admission checks
//! (safe mode, superuser-only methods), consults the retry cache for at-most-once methods,
//! records metrics and logs. Handlers never repeat any of that.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use prost::Message;
use tracing::{debug, debug_span, Instrument};

use crate::durable::{self, Durability};
use crate::frame::{Body, RawBody};
use crate::metrics::{MethodMetrics, MethodSnapshot};
use crate::retry_cache::{Lookup, RetryCache};
use crate::RpcError;

pin_project_lite::pin_project! {
    /// A call on its way through the wrapper (or refused before it began: an unknown
    /// method). When it finishes it is counted in its method's metrics and logged, inside
    /// the call's span, which encloses this.
    struct Timed<S: Service, F> {
        entry: Option<Arc<Entry<S>>>,
        started: Instant,
        #[pin]
        call: Option<F>,
        refused: Option<RpcError>,
    }
}

impl<S, F> Future for Timed<S, F>
where
    S: Service,
    F: Future<Output = Result<Box<dyn Body>, RpcError>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let result = match (this.call.as_pin_mut(), this.refused.take()) {
            (Some(call), _) => ready!(call.poll(cx)),
            (None, Some(e)) => Err(e),
            (None, None) => panic!("a dispatched call polled after it finished"),
        };
        let micros = this.started.elapsed().as_micros() as u64;
        if let Some(e) = this.entry {
            e.metrics.record(result.is_ok(), micros);
        }
        match &result {
            Ok(_) => debug!(micros, "ok"),
            Err(e) => debug!(micros, class = %e.class, msg = %e.message, "error"),
        }
        Poll::Ready(result)
    }
}

/// Who is calling and which call this is.
#[derive(Clone, Debug)]
pub struct CallCtx {
    /// The effective user from the connection context (SIMPLE auth).
    pub user: Arc<str>,
    /// The real user for proxy-user ("doAs") connections.
    pub real_user: Option<Arc<str>>,
    pub peer: SocketAddr,
    /// `peer`'s address as text, formatted once per connection: leases record it per
    /// create and block placement reads it per open.
    pub peer_ip: Arc<str>,
    pub conn_id: u64,
    pub call_id: i32,
    pub client_id: Bytes,
    pub retry_count: i32,
}

/// How the wrapper treats a method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodKind {
    /// Not idempotent: a retried call must replay the first reply (Hadoop's `@AtMostOnce`).
    pub at_most_once: bool,
    /// Changes the namespace, so refused in safe mode.
    pub mutating: bool,
    /// Only the superuser may call it.
    pub superuser: bool,
}

impl MethodKind {
    /// A read-only call.
    pub const READ: MethodKind = MethodKind {
        at_most_once: false,
        mutating: false,
        superuser: false,
    };
    /// A mutation that is safe to run twice (Hadoop's `@Idempotent` writes: mkdirs, setOwner…).
    pub const WRITE: MethodKind = MethodKind {
        at_most_once: false,
        mutating: true,
        superuser: false,
    };
    /// A mutation that must not run twice (create, rename, delete…).
    pub const WRITE_ONCE: MethodKind = MethodKind {
        at_most_once: true,
        mutating: true,
        superuser: false,
    };
    /// An administrative call reserved for the superuser.
    pub const ADMIN: MethodKind = MethodKind {
        at_most_once: false,
        mutating: false,
        superuser: true,
    };
}

/// The state a router serves, and how it admits a call: once per call, before the retry
/// cache and the handler. What admission returns is all the handler gets of the caller, so
/// a service whose operations take that value cannot be reached around its checks.
pub trait Service: Send + Sync + 'static {
    /// What a method is registered with: the service's own name for the operation.
    type Op: Copy + Send + Sync + 'static;
    /// What admission hands the handler.
    type Admitted: Send + 'static;

    /// How the wrapper treats `op` (retry cache), fixed when the method is registered.
    fn kind(op: Self::Op) -> MethodKind;

    /// Admits the call to `op`, or refuses it with the error the client gets.
    fn admit(&self, ctx: CallCtx, op: Self::Op) -> Result<Self::Admitted, RpcError>;

    /// A wait before admission, when the service would refuse `op` now but may well take
    /// it shortly (an HA standby while its group elects an active); `None` admits at once.
    fn before_admit(&self, _op: Self::Op) -> Option<Hold<'_>> {
        None
    }

    /// Whether `op`'s reply, which changes nothing, must still wait until everything
    /// issued before it answered is durable: it may report a change that is applied but
    /// not yet durable, which a crash or a lost leadership could still take back.
    fn reads_wait_for_durability(&self, _op: Self::Op) -> bool {
        false
    }

    /// What replies wait on before they go out, if the service's answers can rest on state
    /// not yet durable (a NameNode's journal). See [`crate::durable`].
    fn durability(&self) -> Option<&dyn Durability> {
        None
    }
}

/// A service with no admission checks of its own (a DataNode's IPC, tests): methods are
/// registered with their [`MethodKind`] and handlers get the call's [`CallCtx`].
pub trait OpenService: Send + Sync + 'static {
    /// As [`Service::durability`].
    fn durability(&self) -> Option<&dyn Durability> {
        None
    }
}

impl<T: OpenService> Service for T {
    type Op = MethodKind;
    type Admitted = CallCtx;

    fn kind(op: MethodKind) -> MethodKind {
        op
    }

    fn admit(&self, ctx: CallCtx, _op: MethodKind) -> Result<CallCtx, RpcError> {
        Ok(ctx)
    }

    fn durability(&self) -> Option<&dyn Durability> {
        OpenService::durability(self)
    }
}

/// What [`Service::before_admit`] waits on.
pub type Hold<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

type BoxFut = Pin<Box<dyn Future<Output = Result<Box<dyn Body>, RpcError>> + Send>>;
type Handler<S> = Box<dyn Fn(Arc<S>, <S as Service>::Admitted, Bytes) -> BoxFut + Send + Sync>;

struct Entry<S: Service> {
    protocol: &'static str,
    name: &'static str,
    op: S::Op,
    kind: MethodKind,
    handler: Handler<S>,
    metrics: MethodMetrics,
}

pub struct Router<S: Service> {
    state: Arc<S>,
    table: HashMap<&'static str, HashMap<&'static str, Arc<Entry<S>>>>,
    retry_cache: RetryCache,
}

impl<S: Service> Router<S> {
    /// A router with no retry cache: a service with at-most-once methods opts in with
    /// [`with_retry_cache`](Self::with_retry_cache). (A default one, sized for its cap,
    /// was built and then replaced by the NameNode, and kept unused by the others.)
    pub fn new(state: Arc<S>) -> Self {
        Router {
            state,
            table: HashMap::new(),
            retry_cache: RetryCache::new(Duration::ZERO, 0),
        }
    }

    /// Answers retried at-most-once calls from a cache of `capacity` replies kept for
    /// `ttl` (Hadoop's retry cache); a capacity of 0 turns it off.
    pub fn with_retry_cache(mut self, ttl: Duration, capacity: usize) -> Self {
        self.retry_cache = RetryCache::new(ttl, capacity);
        self
    }

    /// Makes the retry cache answer a retry of (`client_id`, `call_id`) with `reply`, as
    /// if that call had just run here: for calls a NameNode replayed from its journal.
    pub fn prime_retry_cache(&self, client_id: &[u8], call_id: i32, reply: Bytes) {
        let now = Instant::now();
        if let Some(Lookup::Fresh(_)) = self.retry_cache.begin(client_id, call_id, now) {
            self.retry_cache.finish(client_id, call_id, &Ok(reply));
        }
    }

    pub fn state(&self) -> &Arc<S> {
        &self.state
    }

    /// Registers a typed handler. `name` is the Hadoop RPC name (`getFileInfo`), `op`
    /// what the service admits a call to it as.
    pub fn method<Req, Resp, F, Fut>(
        &mut self,
        protocol: &'static str,
        name: &'static str,
        op: S::Op,
        f: F,
    ) -> &mut Self
    where
        Req: Message + Default + 'static,
        Resp: Body + 'static,
        F: Fn(Arc<S>, S::Admitted, Req) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Resp, RpcError>> + Send + 'static,
    {
        let f = Arc::new(f);
        let handler: Handler<S> = Box::new(move |state, who, body| {
            let f = f.clone();
            Box::pin(async move {
                let req = Req::decode(body).map_err(|e| RpcError::bad_request(name, e))?;
                let resp = f(state, who, req).await?;
                Ok(Box::new(resp) as Box<dyn Body>)
            })
        });
        let entry = Entry {
            protocol,
            name,
            op,
            kind: S::kind(op),
            handler,
            metrics: MethodMetrics::default(),
        };
        let prev = self
            .table
            .entry(protocol)
            .or_default()
            .insert(name, Arc::new(entry));
        assert!(prev.is_none(), "method {protocol}.{name} registered twice");
        self
    }

    /// Runs one call through the wrapper and returns its reply body. The method is looked
    /// up and the call's span opened here, at once; the future that is returned owns what
    /// it needs (the router, the method's entry, the call's context and body), each once,
    /// so it stays small: the server allocates and moves it once per call.
    pub fn dispatch(
        self: &Arc<Self>,
        ctx: CallCtx,
        protocol: &str,
        method: &str,
        body: Bytes,
    ) -> impl Future<Output = Result<Box<dyn Body>, RpcError>> + Send + 'static {
        let entry = self
            .table
            .get(protocol)
            .ok_or_else(|| RpcError::no_such_protocol(protocol))
            .and_then(|methods| {
                methods
                    .get(method)
                    .ok_or_else(|| RpcError::no_such_method(protocol, method))
            });
        match entry {
            Ok(entry) => {
                let span = debug_span!("rpc", conn = ctx.conn_id, call = ctx.call_id, method = entry.name, user = %ctx.user);
                Timed {
                    entry: Some(entry.clone()),
                    started: Instant::now(),
                    call: Some(Self::run(self.clone(), entry.clone(), ctx, body)),
                    refused: None,
                }
                .instrument(span)
            }
            Err(e) => Timed {
                entry: None,
                started: Instant::now(),
                call: None,
                refused: Some(e),
            }
            .instrument(tracing::Span::none()),
        }
    }

    async fn run(
        router: Arc<Self>,
        entry: Arc<Entry<S>>,
        ctx: CallCtx,
        body: Bytes,
    ) -> Result<Box<dyn Body>, RpcError> {
        // The retry cache keys on the call's id; admission takes the context itself.
        let id = entry
            .kind
            .at_most_once
            .then(|| (ctx.client_id.clone(), ctx.call_id));
        if let Some(hold) = router.state.before_admit(entry.op) {
            hold.await;
        }
        let who = router.state.admit(ctx, entry.op)?;
        let once = id.and_then(|(client_id, call_id)| {
            let lookup = router
                .retry_cache
                .begin(&client_id, call_id, Instant::now());
            lookup.map(|l| (l, client_id, call_id))
        });
        // Made (not yet run) before the cache decides whether it runs at all: the closures
        // below then hold one boxed future instead of the call's context and body.
        let call = (entry.handler)(router.state.clone(), who, body);
        let Some((lookup, client_id, call_id)) = once else {
            let out = call.await;
            if router.state.reads_wait_for_durability(entry.op) {
                if let Some(gate) = router.state.durability() {
                    durable::defer_reply(gate.issued());
                }
            }
            return out;
        };
        let run = || async move {
            let out = call.await?;
            let mut buf = BytesMut::with_capacity(out.encoded_len());
            out.encode_into(&mut buf);
            Ok(buf.freeze())
        };
        let reply = match lookup {
            Lookup::Fresh(cell) => {
                let reply = cell.get_or_init(run).await.clone();
                router.retry_cache.finish(&client_id, call_id, &reply);
                reply
            }
            Lookup::InFlight(cell) => {
                let reply = cell.get_or_init(run).await.clone();
                router.replayed(&entry).await?;
                reply
            }
            Lookup::Done(reply) => {
                router.replayed(&entry).await?;
                reply
            }
        };
        reply.map(|b| Box::new(RawBody(b)) as Box<dyn Body>)
    }

    /// A retry is answered with the first attempt's reply, which may have been cached before
    /// the state it reports was durable: the retry's reply rests on everything issued so far,
    /// which covers the first attempt's ticket.
    async fn replayed(&self, entry: &Entry<S>) -> Result<(), RpcError> {
        entry
            .metrics
            .retry_cache_hits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match self.state.durability() {
            Some(gate) => durable::settle(gate, gate.issued())
                .await
                .map_err(|e| RpcError::io(e.to_string())),
            None => Ok(()),
        }
    }

    /// Counters of every registered method, sorted by protocol and name.
    pub fn metrics(&self) -> Vec<MethodSnapshot> {
        use std::sync::atomic::Ordering::Relaxed;
        let mut out: Vec<_> = self
            .table
            .values()
            .flat_map(|m| m.values())
            .map(|e| MethodSnapshot {
                protocol: e.protocol,
                method: e.name,
                calls: e.metrics.calls.load(Relaxed),
                errors: e.metrics.errors.load(Relaxed),
                total_micros: e.metrics.total_micros.load(Relaxed),
                retry_cache_hits: e.metrics.retry_cache_hits.load(Relaxed),
            })
            .collect();
        out.sort_by_key(|s| (s.protocol, s.method));
        out
    }
}
