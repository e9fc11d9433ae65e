//! The data-transfer server: one task per connection, reading ops until the peer closes,
//! an op fails, or a kept-alive connection stays idle too long.

pub(crate) mod access;
pub(crate) mod block_checksum;
pub(crate) mod read;
pub(crate) mod replace;
pub(crate) mod source;
pub(crate) mod transfer;
pub(crate) mod write;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use ferrite_ipc::net::{BoxRead, BoxWrite, Conn, Listen};
use ferrite_proto::hdfs::{BlockOpResponseProto, Status};
use ferrite_transfer::io::{read_op, write_delimited};
use ferrite_transfer::{op, TransferError};
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::nn_link::NnLink;
use crate::storage::Dataset;

#[derive(Clone, Debug)]
pub struct XceiverConfig {
    /// `dfs.datanode.socket.reuse.keepalive`: how long a connection waits for its next op.
    pub keepalive: Duration,
    /// `dfs.client.socket-timeout` / `dfs.datanode.socket.write.timeout`: a peer silent
    /// this long mid-operation is dropped.
    pub socket_timeout: Duration,
    /// `dfs.data.transfer.max.packet.size`
    pub max_packet: usize,
    /// Data bytes per read packet sent from the page cache
    /// (`ferrite.datanode.read.packet.bytes`; copied packets are at most 128 KiB).
    pub read_packet_bytes: usize,
    /// `dfs.blocksize`: the room a new replica is promised on its volume.
    pub block_size: u64,
}

impl Default for XceiverConfig {
    fn default() -> Self {
        XceiverConfig {
            keepalive: Duration::from_millis(4000),
            socket_timeout: Duration::from_secs(60),
            max_packet: ferrite_transfer::packet::MAX_PACKET,
            // Measured (BENCHMARKS.md): a client's per-packet costs dominate below ~1 MiB;
            // sendfile packets cost the server no memory however large.
            read_packet_bytes: 1 << 20,
            block_size: 128 << 20,
        }
    }
}

pub(crate) struct Xceiver {
    pub ds: Arc<Dataset>,
    pub link: Arc<NnLink>,
    pub cfg: XceiverConfig,
}

/// Counts a connection as an active transfer for as long as it lives.
struct Active<'a>(&'a NnLink);

impl<'a> Active<'a> {
    fn new(link: &'a NnLink) -> Self {
        link.xceivers.fetch_add(1, Ordering::Relaxed);
        Active(link)
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.xceivers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A data connection's halves, boxed: TCP's, the simulator's, or a dialed one's. A
/// pipeline's streams to its neighbours are the same types whichever side opened them.
pub(crate) type DataIn = BoxRead;
pub(crate) type DataOut = BoxWrite;

pub(crate) async fn serve<L: Listen>(x: Arc<Xceiver>, listener: L, cancel: CancellationToken) {
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(s) => s,
                Err(e) => {
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = cancel.cancelled() => return,
        };
        let x = x.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                r = connection(&x, stream, peer) => if let Err(e) = r {
                    debug!(%peer, error = %e, "data connection ended with an error");
                },
                _ = cancel.cancelled() => {}
            }
        });
    }
}

async fn connection<C: Conn>(
    x: &Xceiver,
    stream: C,
    peer: SocketAddr,
) -> Result<(), TransferError> {
    stream.set_nodelay()?;
    let _active = Active::new(&x.link);
    let (rd, wr) = stream.into_split();
    let (rd, mut wr): (DataIn, DataOut) = (Box::new(rd), Box::new(wr));
    // Small: ops are small, and reads of whole packets (writes) bypass a buffer this size.
    // Thousands of idle or slow readers then cost little memory each.
    let mut rd = BufReader::with_capacity(16 << 10, rd);
    let mut wait = x.cfg.socket_timeout;
    loop {
        let code = match tokio::time::timeout(wait, read_op(&mut rd)).await {
            Err(_) | Ok(Ok(None)) => return Ok(()),
            Ok(Err(TransferError::Version(v))) => {
                let msg = format!(
                    "Version Mismatch (Expected: {}, Received: {v} )",
                    ferrite_transfer::DATA_TRANSFER_VERSION
                );
                refuse(&mut wr, Status::Error, &msg).await;
                return Err(TransferError::Version(v));
            }
            Ok(Err(e)) => return Err(e),
            Ok(Ok(Some(code))) => code,
        };
        match code {
            op::READ_BLOCK => {
                if !read::serve(x, &mut rd, &mut wr).await? {
                    return Ok(());
                }
            }
            op::WRITE_BLOCK => return write::serve(x, rd, wr).await,
            op::BLOCK_CHECKSUM => block_checksum::serve(x, &mut rd, &mut wr).await?,
            op::TRANSFER_BLOCK => return transfer::serve(x, &mut rd, &mut wr).await,
            op::REPLACE_BLOCK => return replace::serve_replace(x, peer, &mut rd, &mut wr).await,
            op::COPY_BLOCK => return replace::serve_copy(x, peer, &mut rd, &mut wr).await,
            other => {
                let msg = format!("Unknown op {other} in data stream");
                warn!("{msg}");
                refuse(&mut wr, Status::ErrorUnsupported, &msg).await;
                return Ok(());
            }
        }
        wait = x.cfg.keepalive;
    }
}

/// Answers an op with an error status and a message (best effort: the peer may be gone).
pub(crate) async fn refuse<W: AsyncWrite + Unpin>(w: &mut W, status: Status, message: &str) {
    let resp = BlockOpResponseProto {
        status: status as i32,
        message: Some(message.to_string()),
        ..Default::default()
    };
    let _ = write_delimited(w, &resp).await;
}

/// Reads with the per-operation timeout.
pub(crate) async fn timed<T>(
    d: Duration,
    f: impl std::future::Future<Output = Result<T, TransferError>>,
) -> Result<T, TransferError> {
    tokio::time::timeout(d, f).await.map_err(|_| {
        TransferError::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no data from the peer for {d:?}"),
        ))
    })?
}

/// Just the stream types the ops use.
pub(crate) trait Reader: AsyncRead + Unpin + Send {}
impl<T: AsyncRead + Unpin + Send> Reader for T {}
pub(crate) trait Writer: AsyncWrite + Unpin + Send {}
impl<T: AsyncWrite + Unpin + Send> Writer for T {}
