//! The sockets under the IPC server and client, as traits: the kernel's TCP in a real
//! process, and a simulated network in the deterministic simulator (`ferrite-sim`), which
//! runs the same server and client code over streams that it delays, drops and partitions.
//!
//! The server stays generic over them (one accept loop, one connection task, no dynamic
//! dispatch per read); the client keeps its write half boxed, since a call writes once.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

use tokio::io::{AsyncRead, AsyncWrite};

/// One accepted or connected stream.
pub trait Conn: Send + 'static {
    type Read: AsyncRead + Send + Unpin + 'static;
    type Write: AsyncWrite + Send + Unpin + 'static;

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
