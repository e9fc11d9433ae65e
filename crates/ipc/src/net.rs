//! The sockets under the IPC server and client, as traits: the kernel's TCP in a real
//! process, and a simulated network in the deterministic simulator (`ferrite-sim`), which
//! runs the same server and client code over streams that it delays, drops and partitions.
//!
//! The server stays generic over them (one accept loop, one connection task, no dynamic
//! dispatch per read); the client keeps its write half boxed, since a call writes once.
//! Outgoing connections (clients to servers, DataNode to DataNode) are made by a [`Dial`],
//! so the same code connects over TCP or the simulated network.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A stream's write half. A DataNode sends cached block data with sendfile, which needs
/// the kernel's socket: [`tcp`](Self::tcp) gives it where there is one, and a writer
/// without one gets the bytes copied.
pub trait WriteHalf: AsyncWrite + Send + Sync + Unpin + 'static {
    fn tcp(&self) -> Option<&TcpStream> {
        None
    }
}

impl WriteHalf for tokio::net::tcp::OwnedWriteHalf {
    fn tcp(&self) -> Option<&TcpStream> {
        Some(self.as_ref())
    }
}

impl WriteHalf for Box<dyn WriteHalf> {
    fn tcp(&self) -> Option<&TcpStream> {
        (**self).tcp()
    }
}

/// One accepted or connected stream.
pub trait Conn: Send + 'static {
    type Read: AsyncRead + Send + Sync + Unpin + 'static;
    type Write: WriteHalf;

    /// Halves that can be read and written from different tasks.
    fn into_split(self) -> (Self::Read, Self::Write);

    /// The socket's descriptor, where there is one: the server tunes the receive low-water
    /// mark through it to gather calls (see `low_water.rs`).
    fn raw_fd(&self) -> Option<RawFd>;

    /// Turns Nagle's algorithm off, where there is one.
    fn set_nodelay(&self) -> io::Result<()>;
}

/// Where a server takes its connections from.
pub trait Listen: Send + 'static {
    type Conn: Conn;

    fn accept(&self) -> impl Future<Output = io::Result<(Self::Conn, SocketAddr)>> + Send;

    fn local_addr(&self) -> io::Result<SocketAddr>;
}

impl Conn for tokio::net::TcpStream {
    type Read = tokio::net::tcp::OwnedReadHalf;
    type Write = tokio::net::tcp::OwnedWriteHalf;

    fn into_split(self) -> (Self::Read, Self::Write) {
        tokio::net::TcpStream::into_split(self)
    }

    fn raw_fd(&self) -> Option<RawFd> {
        Some(std::os::fd::AsRawFd::as_raw_fd(self))
    }

    fn set_nodelay(&self) -> io::Result<()> {
        tokio::net::TcpStream::set_nodelay(self, true)
    }
}

impl Listen for tokio::net::TcpListener {
    type Conn = tokio::net::TcpStream;

    fn accept(&self) -> impl Future<Output = io::Result<(Self::Conn, SocketAddr)>> + Send {
        tokio::net::TcpListener::accept(self)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        tokio::net::TcpListener::local_addr(self)
    }
}

/// A stream's halves, boxed: whichever network they are on.
pub type BoxRead = Box<dyn AsyncRead + Send + Sync + Unpin>;
pub type BoxWrite = Box<dyn WriteHalf>;

/// A connection a [`Dial`] made, as two boxed halves.
pub struct Dialed {
    pub read: BoxRead,
    pub write: BoxWrite,
}

impl Conn for Dialed {
    type Read = BoxRead;
    type Write = BoxWrite;

    fn into_split(self) -> (Self::Read, Self::Write) {
        (self.read, self.write)
    }

    fn raw_fd(&self) -> Option<RawFd> {
        None
    }

    /// The dialer has set it already.
    fn set_nodelay(&self) -> io::Result<()> {
        Ok(())
    }
}

pub type DialFuture<'a> = Pin<Box<dyn Future<Output = io::Result<Dialed>> + Send + 'a>>;

/// Makes outgoing connections, by `host:port`, with Nagle's algorithm off.
pub trait Dial: Send + Sync + 'static {
    fn dial<'a>(&'a self, addr: &'a str) -> DialFuture<'a>;
}

/// The kernel's TCP.
pub struct TcpDial;

impl Dial for TcpDial {
    fn dial<'a>(&'a self, addr: &'a str) -> DialFuture<'a> {
        Box::pin(async move {
            let s = TcpStream::connect(addr).await?;
            s.set_nodelay(true)?;
            let (read, write) = s.into_split();
            Ok(Dialed {
                read: Box::new(read),
                write: Box::new(write),
            })
        })
    }
}

/// The dialer of a real process.
pub fn tcp() -> Arc<dyn Dial> {
    Arc::new(TcpDial)
}

/// The kernel's TCP from one local address: a server bound to a chosen address of a host
/// with several (as a DataNode on `127.0.1.2` beside others on one test machine) calls out
/// from it too, so that its peers, which know it by the address it connects from, see the
/// one it serves on.
pub struct TcpDialFrom(std::net::IpAddr);

impl Dial for TcpDialFrom {
    fn dial<'a>(&'a self, addr: &'a str) -> DialFuture<'a> {
        Box::pin(async move {
            let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{addr}: no address"));
            for to in tokio::net::lookup_host(addr).await? {
                let sock = if to.is_ipv4() {
                    tokio::net::TcpSocket::new_v4()?
                } else {
                    tokio::net::TcpSocket::new_v6()?
                };
                // A loopback address cannot reach another host: leave those to the kernel.
                let reachable = !self.0.is_loopback() || to.ip().is_loopback();
                if to.is_ipv4() == self.0.is_ipv4() && reachable {
                    sock.bind(SocketAddr::new(self.0, 0))?;
                }
                match sock.connect(to).await {
                    Ok(s) => {
                        s.set_nodelay(true)?;
                        let (read, write) = s.into_split();
                        return Ok(Dialed {
                            read: Box::new(read),
                            write: Box::new(write),
                        });
                    }
                    Err(e) => last = e,
                }
            }
            Err(last)
        })
    }
}

/// The dialer of a process that serves on `ip`: from `ip` when it is a particular
/// address, else as [`tcp`].
pub fn tcp_from(ip: std::net::IpAddr) -> Arc<dyn Dial> {
    if ip.is_unspecified() {
        tcp()
    } else {
        Arc::new(TcpDialFrom(ip))
    }
}
