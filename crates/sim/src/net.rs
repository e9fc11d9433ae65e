//! The simulated network under Ferrite's IPC server and client: turmoil's TCP, which
//! delivers, delays, drops and partitions as the seed and the fault schedule say.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

use ferrite_ipc::net::{Conn, Listen};

/// A simulated host's listening socket.
pub struct SimListener(pub turmoil::net::TcpListener);

/// One simulated TCP stream.
pub struct SimConn(pub turmoil::net::TcpStream);

impl Conn for SimConn {
    type Read = turmoil::net::tcp::OwnedReadHalf;
    type Write = turmoil::net::tcp::OwnedWriteHalf;

    fn into_split(self) -> (Self::Read, Self::Write) {
        self.0.into_split()
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
        let (s, peer) = self.0.accept().await?;
        Ok((SimConn(s), peer))
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }
}
