//! The simulated network under Ferrite's IPC server and client: turmoil's TCP, which
//! delivers, delays, drops and partitions as the seed and the fault schedule say.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use ferrite_ipc::net::{Conn, Dial, DialFuture, Dialed, Listen, WriteHalf};
use tokio::io::AsyncWrite;

/// A simulated host's listening socket. turmoil binds the unspecified address only, so
/// the listener also knows the host's own address, for servers that advertise theirs
/// (a DataNode registers its address with the NameNode).
pub(crate) struct SimListener {
    inner: turmoil::net::TcpListener,
    addr: SocketAddr,
}

impl SimListener {
    /// Listens on `port` of host `me`.
    pub(crate) async fn bind(me: std::net::IpAddr, port: u16) -> io::Result<SimListener> {
        let inner = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
        Ok(SimListener {
            inner,
            addr: SocketAddr::new(me, port),
        })
    }
}

/// One simulated TCP stream.
pub(crate) struct SimConn(pub turmoil::net::TcpStream);

impl Conn for SimConn {
    type Read = turmoil::net::tcp::OwnedReadHalf;
    type Write = SimWrite;

    fn into_split(self) -> (Self::Read, Self::Write) {
        let (r, w) = self.0.into_split();
        (r, SimWrite(w))
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
        Ok((SimConn(s), peer))
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.addr)
    }
}

/// A simulated stream's write half: no kernel socket, so block data is copied to it.
pub(crate) struct SimWrite(turmoil::net::tcp::OwnedWriteHalf);

impl AsyncWrite for SimWrite {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl WriteHalf for SimWrite {}

/// Outgoing connections on the simulated network, for the DataNodes and the file clients.
pub(crate) struct SimDial;

impl Dial for SimDial {
    fn dial<'a>(&'a self, addr: &'a str) -> DialFuture<'a> {
        Box::pin(async move {
            let s = turmoil::net::TcpStream::connect(addr).await?;
            s.set_nodelay(true)?;
            let (read, write) = s.into_split();
            Ok(Dialed {
                read: Box::new(read),
                write: Box::new(SimWrite(write)),
            })
        })
    }
}
