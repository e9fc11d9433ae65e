//! A test fault for an HA group: with `ferrite.ha.raft.fault.cut-file=PATH`, this
//! NameNode's Raft traffic stops, both ways, while PATH exists — a partition of the Raft
//! network that leaves its client port up. That is the interesting case for safety: a
//! leader cut off from its group still takes client calls and must acknowledge none of
//! them. The partition test drives it; nothing else sets the key.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use ferrite_ipc::net::{Conn, Dial, DialFuture, Dialed, Listen, WriteHalf};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;

/// Whether the Raft network is cut now.
#[derive(Clone, Default)]
pub(crate) struct Cut(Arc<AtomicBool>);

impl Cut {
    fn is_cut(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    fn refuse(&self) -> io::Result<()> {
        if self.is_cut() {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "the Raft network is cut (ferrite.ha.raft.fault.cut-file)",
            ));
        }
        Ok(())
    }

    /// Cuts the network while `file` exists, looking every 50 ms until `stop`.
    pub(crate) async fn follow(self, file: PathBuf, stop: CancellationToken) {
        loop {
            let cut = file.exists();
            if self.0.swap(cut, Ordering::SeqCst) != cut {
                tracing::warn!(cut, file = %file.display(), "test fault: the Raft network");
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
    }

    /// `dial`, failing while cut, its streams failing once cut.
    pub(crate) fn dial(&self, dial: Arc<dyn Dial>) -> Arc<dyn Dial> {
        Arc::new(CutDial {
            inner: dial,
            cut: self.clone(),
        })
    }

    /// `listener`, its streams failing once cut.
    pub(crate) fn listener<L: Listen>(&self, listener: L) -> CutListener<L> {
        CutListener {
            inner: listener,
            cut: self.clone(),
        }
    }

    fn wrap(&self, d: Dialed) -> Dialed {
        Dialed {
            read: Box::new(Stream {
                inner: d.read,
                cut: self.clone(),
            }),
            write: Box::new(Stream {
                inner: d.write,
                cut: self.clone(),
            }),
        }
    }
}

struct CutDial {
    inner: Arc<dyn Dial>,
    cut: Cut,
}

impl Dial for CutDial {
    fn dial<'a>(&'a self, addr: &'a str) -> DialFuture<'a> {
        Box::pin(async move {
            self.cut.refuse()?;
            Ok(self.cut.wrap(self.inner.dial(addr).await?))
        })
    }
}

pub(crate) struct CutListener<L> {
    inner: L,
    cut: Cut,
}

impl<L: Listen + Sync> Listen for CutListener<L> {
    type Conn = Dialed;

    async fn accept(&self) -> io::Result<(Dialed, SocketAddr)> {
        let (conn, peer) = self.inner.accept().await?;
        let (read, write) = conn.into_split();
        let d = Dialed {
            read: Box::new(read),
            write: Box::new(write),
        };
        Ok((self.cut.wrap(d), peer))
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// A stream half that fails every read and write while the network is cut.
struct Stream<T> {
    inner: T,
    cut: Cut,
}

impl<T: AsyncRead + Unpin> AsyncRead for Stream<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.cut.refuse()?;
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Stream<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.cut.refuse()?;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.cut.refuse()?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<T: AsyncWrite + Send + Sync + Unpin + 'static> WriteHalf for Stream<T> {}
