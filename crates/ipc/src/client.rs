//! A small multiplexed Hadoop IPC client for Ferrite's own tools, benchmarks and tests.
//!
//! One TCP connection carries many concurrent calls; a reader task matches replies to
//! callers by callId, so replies may arrive in any order.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use ferrite_proto::common::rpc_response_header_proto::RpcStatusProto;
use ferrite_proto::common::{
    IpcConnectionContextProto, RequestHeaderProto, RpcRequestHeaderProto, RpcResponseHeaderProto,
    UserInformationProto,
};
use parking_lot::Mutex;
use prost::Message;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::frame::{self, AuthProtocol, Body};
use crate::net::Conn;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("{class}: {message}")]
    Remote {
        class: String,
        message: String,
        fatal: bool,
    },
    #[error("bad reply: {0}")]
    BadReply(String),
    #[error("connection closed")]
    Closed,
}

impl ClientError {
    /// The Java exception class of a remote error, if this is one.
    pub fn class(&self) -> Option<&str> {
        match self {
            ClientError::Remote { class, .. } => Some(class),
            _ => None,
        }
    }
}

/// Calls waiting for replies. `None` once the reader has stopped: a call registered after
/// that would wait forever, so it must fail at once instead.
type Pending = Arc<Mutex<Option<HashMap<i32, oneshot::Sender<Result<Bytes, ClientError>>>>>>;

pub struct IpcClient {
    writer: tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>,
    pending: Pending,
    next_call: AtomicI32,
    client_id: [u8; 16],
    protocol: String,
}

impl IpcClient {
    /// Connects, writes the preamble and the connection context for `user`.
    pub async fn connect(
        addr: SocketAddr,
        user: &str,
        protocol: &str,
    ) -> Result<Self, ClientError> {
        let stream = TcpStream::connect(addr).await?;
        Self::over(stream, user, protocol).await
    }

    /// [`connect`](Self::connect) through a dialer (TCP, or the simulator's network).
    pub async fn dial(
        dialer: &dyn crate::net::Dial,
        addr: &str,
        user: &str,
        protocol: &str,
    ) -> Result<Self, ClientError> {
        let stream = dialer.dial(addr).await?;
        Self::over(stream, user, protocol).await
    }

    /// [`connect`](Self::connect) over a stream already open (the simulator's network).
    pub async fn over<C: Conn>(stream: C, user: &str, protocol: &str) -> Result<Self, ClientError> {
        let client_id = *uuid::Uuid::new_v4().as_bytes();
        Self::over_as(stream, user, protocol, client_id).await
    }

    /// [`over`](Self::over) under a chosen clientId: a client that retries a call on a new
    /// connection sends the first attempt's clientId and callId, as Hadoop's do, so the
    /// server's retry cache can answer it.
    pub async fn over_as<C: Conn>(
        stream: C,
        user: &str,
        protocol: &str,
        client_id: [u8; 16],
    ) -> Result<Self, ClientError> {
        stream.set_nodelay()?;
        let (mut rd, mut wr) = stream.into_split();
        let ctx_header = request_header(frame::CALL_ID_CONNECTION_CONTEXT, &client_id, -1);
        // With a Kerberos login the connection authenticates first, and is its principal.
        let login = crate::client_sasl::current();
        let user = login.map_or(user, |l| l.principal.as_str());
        let ctx = IpcConnectionContextProto {
            user_info: Some(UserInformationProto {
                effective_user: Some(user.into()),
                real_user: None,
            }),
            protocol: Some(protocol.into()),
        };
        let mut hello = Vec::new();
        if let Some(login) = login {
            wr.write_all(&frame::preamble(AuthProtocol::Sasl)).await?;
            crate::client_sasl::authenticate(&mut rd, &mut wr, &client_id, login).await?;
        } else {
            hello.extend_from_slice(&frame::preamble(AuthProtocol::None));
        }
        hello.extend_from_slice(&frame::encode_frame(&[&ctx_header, &ctx]));
        wr.write_all(&hello).await?;
        let pending: Pending = Arc::new(Mutex::new(Some(HashMap::new())));
        tokio::spawn(read_loop(rd, pending.clone()));
        Ok(IpcClient {
            writer: tokio::sync::Mutex::new(Box::new(wr)),
            pending,
            next_call: AtomicI32::new(0),
            client_id,
            protocol: protocol.into(),
        })
    }

    /// True once the connection is gone (the server closed it, or a fatal reply): every
    /// further call fails, so a holder of a shared connection must make a new one.
    pub fn is_closed(&self) -> bool {
        self.pending.lock().is_none()
    }

    /// Calls `method` and decodes its reply.
    pub async fn call<Req: Message, Resp: Message + Default>(
        &self,
        method: &str,
        req: &Req,
    ) -> Result<Resp, ClientError> {
        let call_id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let bytes = self.call_with_id(call_id, 0, method, req).await?;
        Resp::decode(bytes).map_err(|e| ClientError::BadReply(e.to_string()))
    }

    /// Sends a call with a chosen callId and retryCount (used to test the retry cache).
    pub async fn call_with_id<Req: Message>(
        &self,
        call_id: i32,
        retry_count: i32,
        method: &str,
        req: &Req,
    ) -> Result<Bytes, ClientError> {
        let header = request_header(call_id, &self.client_id, retry_count);
        let mh = RequestHeaderProto {
            method_name: method.into(),
            declaring_class_protocol_name: self.protocol.clone(),
            client_protocol_version: 1,
        };
        let frame = frame::encode_frame(&[&header, &mh, req as &dyn Body]);
        let (tx, rx) = oneshot::channel();
        match self.pending.lock().as_mut() {
            Some(p) => p.insert(call_id, tx),
            None => return Err(ClientError::Closed),
        };
        {
            let mut w = self.writer.lock().await;
            if let Err(e) = w.write_all(&frame).await {
                if let Some(p) = self.pending.lock().as_mut() {
                    p.remove(&call_id);
                }
                return Err(e.into());
            }
        }
        rx.await.map_err(|_| ClientError::Closed)?
    }
}

pub(crate) fn request_header(
    call_id: i32,
    client_id: &[u8; 16],
    retry_count: i32,
) -> RpcRequestHeaderProto {
    RpcRequestHeaderProto {
        rpc_kind: Some(2),
        rpc_op: Some(0),
        call_id,
        client_id: Bytes::copy_from_slice(client_id),
        retry_count: Some(retry_count),
        ..Default::default()
    }
}

async fn read_loop<R: AsyncRead + Unpin>(rd: R, pending: Pending) {
    let mut rd = BufReader::with_capacity(64 * 1024, rd);
    let err = loop {
        let len = match rd.read_u32().await {
            Ok(n) => n as usize,
            Err(e) => break ClientError::Io(e),
        };
        if len > 256 << 20 {
            break ClientError::BadReply(format!("reply frame of {len} bytes"));
        }
        let mut buf = vec![0u8; len];
        if let Err(e) = rd.read_exact(&mut buf).await {
            break ClientError::Io(e);
        }
        let mut buf = Bytes::from(buf);
        let header = match frame::decode_delimited::<RpcResponseHeaderProto>(
            &mut buf,
            "RpcResponseHeaderProto",
        ) {
            Ok(h) => h,
            Err(e) => break ClientError::BadReply(e.to_string()),
        };
        let call_id = header.call_id as i32;
        let result = if header.status == RpcStatusProto::Success as i32 {
            frame::split_delimited(&mut buf).map_err(|e| ClientError::BadReply(e.to_string()))
        } else {
            Err(ClientError::Remote {
                class: header.exception_class_name.unwrap_or_default(),
                message: header.error_msg.unwrap_or_default(),
                fatal: header.status == RpcStatusProto::Fatal as i32,
            })
        };
        let fatal = header.status == RpcStatusProto::Fatal as i32;
        let waiter = pending.lock().as_mut().and_then(|p| p.remove(&call_id));
        if let Some(tx) = waiter {
            let _ = tx.send(result);
        }
        if fatal {
            break ClientError::Closed;
        }
    };
    // Fail everyone still waiting.
    let waiting = pending.lock().take().unwrap_or_default();
    for (_, tx) in waiting {
        let _ = tx.send(Err(match &err {
            ClientError::Io(e) => ClientError::Io(std::io::Error::new(e.kind(), e.to_string())),
            _ => ClientError::Closed,
        }));
    }
}
