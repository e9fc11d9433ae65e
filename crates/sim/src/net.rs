//! The simulated network under Ferrite's IPC server and client: turmoil's TCP, which
//! delivers, delays, drops and partitions as the seed and the fault schedule say.

use std::any::Any;
use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use ferrite_ipc::net::{Conn, Dial, DialFuture, Dialed, Listen, WriteHalf};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use turmoil::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// One host's sockets, so that its crash closes them in the same order on every run.
///
/// turmoil sends a FIN (or a RST) for each socket a crashed host drops, with a latency
/// drawn from the seed. The sockets go as tokio drops the host's tasks, in an order that
/// hangs on tokio's process-wide task ids: the same seed run twice in one process, or
/// beside another test, would draw those latencies in another order and tell another
/// story. So while its host crashes, a socket's halves are set aside, and the host's
/// [`Reaper`] (the last thing its software drops) closes them in the order they opened.
#[derive(Default)]
pub(crate) struct Sockets {
    dying: AtomicBool,
    opened: AtomicU64,
    set_aside: Mutex<BTreeMap<(u64, u8), Box<dyn Any + Send>>>,
}

/// The sockets of every host that can crash, by host name.
#[derive(Default)]
pub(crate) struct Hosts(Mutex<BTreeMap<String, Arc<Sockets>>>);

impl Hosts {
    pub(crate) fn sockets(&self, host: &str) -> Arc<Sockets> {
        self.0.lock().entry(host.into()).or_default().clone()
    }

    /// Crashes `host`: its software stops at once, and its sockets close in the order
    /// they were opened.
    pub(crate) fn crash(&self, sim: &mut turmoil::Sim<'_>, host: &str) {
        self.sockets(host).dying.store(true, Ordering::SeqCst);
        sim.crash(host);
    }
}

impl Sockets {
    fn open(self: &Arc<Self>) -> (Arc<Sockets>, u64) {
        (self.clone(), self.opened.fetch_add(1, Ordering::SeqCst))
    }
}

/// Held first by a host's software, so dropped after everything else of a crashed host:
/// closes the sockets set aside, oldest first.
pub(crate) struct Reaper(pub(crate) Arc<Sockets>);

impl Drop for Reaper {
    fn drop(&mut self) {
        let closing = std::mem::take(&mut *self.0.set_aside.lock());
        drop(closing.into_values().collect::<Vec<_>>());
        self.0.dying.store(false, Ordering::SeqCst);
    }
}

/// A socket half that its host's crash sets aside rather than drops.
struct Half<T: Send + 'static> {
    half: Option<T>,
    /// The host's sockets, the socket's number, 0 for a read half and 1 for a write half.
    owner: Option<(Arc<Sockets>, u64, u8)>,
}

impl<T: Send + 'static> Half<T> {
    fn new(half: T, owner: Option<(Arc<Sockets>, u64)>, kind: u8) -> Self {
        Half {
            half: Some(half),
            owner: owner.map(|(s, n)| (s, n, kind)),
        }
    }

    fn get(&mut self) -> &mut T {
        self.half
            .as_mut()
            .expect("a socket half is only taken on drop")
    }
}

impl<T: Send + 'static> Drop for Half<T> {
    fn drop(&mut self) {
        if let (Some(half), Some((sockets, n, kind))) = (self.half.take(), &self.owner) {
            if sockets.dying.load(Ordering::SeqCst) {
                sockets.set_aside.lock().insert((*n, *kind), Box::new(half));
            }
        }
    }
}

/// A simulated stream's read half.
pub(crate) struct SimRead(Half<OwnedReadHalf>);

impl AsyncRead for SimRead {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(self.0.get()).poll_read(cx, buf)
    }
}

/// Splits a stream into halves owned by `sockets` (a host that can crash) or by no one.
fn split(s: turmoil::net::TcpStream, sockets: Option<&Arc<Sockets>>) -> (SimRead, SimWrite) {
    let owner = sockets.map(|s| s.open());
    let (r, w) = s.into_split();
    (
        SimRead(Half::new(r, owner.clone(), 0)),
        SimWrite(Half::new(w, owner, 1)),
    )
}

/// A simulated host's listening socket. turmoil binds the unspecified address only, so
/// the listener also knows the host's own address, for servers that advertise theirs
/// (a DataNode registers its address with the NameNode).
pub(crate) struct SimListener {
    inner: turmoil::net::TcpListener,
    addr: SocketAddr,
    sockets: Arc<Sockets>,
}

impl SimListener {
    /// Listens on `port` of host `me`, whose sockets are `sockets`.
    pub(crate) async fn bind(
        me: std::net::IpAddr,
        port: u16,
        sockets: &Arc<Sockets>,
    ) -> io::Result<SimListener> {
        let inner = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
        Ok(SimListener {
            inner,
            addr: SocketAddr::new(me, port),
            sockets: sockets.clone(),
        })
    }
}

/// One simulated TCP stream, and the host's sockets when its host can crash.
pub(crate) struct SimConn(pub turmoil::net::TcpStream, pub Option<Arc<Sockets>>);

impl Conn for SimConn {
    type Read = SimRead;
    type Write = SimWrite;

    fn into_split(self) -> (Self::Read, Self::Write) {
        split(self.0, self.1.as_ref())
    }

    fn raw_fd(&self) -> Option<RawFd> {
        None
    }

    fn set_nodelay(&self) -> io::Result<()> {
        self.0.set_nodelay(true)
    }
}

impl Listen for SimListener {
    type Conn = SimConn;

    async fn accept(&self) -> io::Result<(SimConn, SocketAddr)> {
        let (s, peer) = self.inner.accept().await?;
        Ok((SimConn(s, Some(self.sockets.clone())), peer))
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.addr)
    }
}

/// A simulated stream's write half: no kernel socket, so block data is copied to it.
pub(crate) struct SimWrite(Half<OwnedWriteHalf>);

impl AsyncWrite for SimWrite {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(self.0.get()).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.0.get()).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.0.get()).poll_shutdown(cx)
    }
}

impl WriteHalf for SimWrite {}

/// Outgoing connections on the simulated network, for the DataNodes and the file
/// clients: from a host that can crash (whose sockets these are), or from a client.
#[derive(Default)]
pub(crate) struct SimDial(pub Option<Arc<Sockets>>);

impl Dial for SimDial {
    fn dial<'a>(&'a self, addr: &'a str) -> DialFuture<'a> {
        Box::pin(async move {
            let s = turmoil::net::TcpStream::connect(addr).await?;
            s.set_nodelay(true)?;
            let (read, write) = split(s, self.0.as_ref());
            Ok(Dialed {
                read: Box::new(read),
                write: Box::new(write),
            })
        })
    }
}
