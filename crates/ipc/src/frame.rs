//! Byte-level framing of Hadoop IPC, free of sockets so it can be tested and fuzzed directly.
//!
//! Request frame: `u32 BE length | varint+RpcRequestHeaderProto | [varint+RequestHeaderProto] |
//! [varint+body]`. Response frame: `u32 BE length | varint+RpcResponseHeaderProto |
//! [varint+body]` (the body only on SUCCESS).

use bytes::{Buf, BufMut, Bytes, BytesMut};
use ferrite_proto::common::rpc_response_header_proto::{RpcErrorCodeProto, RpcStatusProto};
use ferrite_proto::common::{RequestHeaderProto, RpcRequestHeaderProto, RpcResponseHeaderProto};
use prost::encoding::{decode_varint, encode_varint, encoded_len_varint};
use prost::Message;

/// The 4-byte magic that opens every connection.
pub const MAGIC: &[u8; 4] = b"hrpc";
/// The only IPC version we speak.
pub const IPC_VERSION: u8 = 9;
/// Auth protocol byte for "no authentication handshake" (SIMPLE).
pub const AUTH_NONE: u8 = 0x00;
/// Auth protocol byte for SASL negotiation (-33 as a signed byte).
pub const AUTH_SASL: u8 = 0xDF;

/// Special call ids.
pub const CALL_ID_CONNECTION_CONTEXT: i32 = -3;
pub const CALL_ID_PING: i32 = -4;
pub const CALL_ID_SASL: i32 = -33;
/// Used for server-originated FATAL responses that belong to no call.
pub const CALL_ID_INVALID: i32 = -2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthProtocol {
    None,
    Sasl,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("bad connection magic {0:02x?}; this is a Hadoop IPC port")]
    BadMagic([u8; 4]),
    #[error("unsupported IPC version {0}; this server speaks version 9")]
    BadVersion(u8),
    #[error("unsupported auth protocol byte {0:#04x}")]
    BadAuth(u8),
    #[error(
        "truncated frame: a length prefix of {declared} bytes runs past the {available} bytes left"
    )]
    Truncated { declared: u64, available: usize },
    #[error("malformed varint length")]
    BadVarint,
    #[error("malformed {what}: {source}")]
    Decode {
        what: &'static str,
        #[source]
        source: prost::DecodeError,
    },
}

/// Checks the 7-byte preamble: magic, version, service class, auth protocol.
pub fn check_preamble(p: &[u8; 7]) -> Result<AuthProtocol, FrameError> {
    let magic: [u8; 4] = [p[0], p[1], p[2], p[3]];
    if &magic != MAGIC {
        return Err(FrameError::BadMagic(magic));
    }
    if p[4] != IPC_VERSION {
        return Err(FrameError::BadVersion(p[4]));
    }
    match p[6] {
        AUTH_NONE => Ok(AuthProtocol::None),
        AUTH_SASL => Ok(AuthProtocol::Sasl),
        other => Err(FrameError::BadAuth(other)),
    }
}

/// The preamble a client writes.
pub fn preamble(auth: AuthProtocol) -> [u8; 7] {
    let a = match auth {
        AuthProtocol::None => AUTH_NONE,
        AuthProtocol::Sasl => AUTH_SASL,
    };
    [b'h', b'r', b'p', b'c', IPC_VERSION, 0, a]
}

/// Splits one varint-delimited message off the front of `buf` without copying.
pub fn split_delimited(buf: &mut Bytes) -> Result<Bytes, FrameError> {
    let len = decode_varint(buf).map_err(|_| FrameError::BadVarint)?;
    if len > buf.len() as u64 {
        return Err(FrameError::Truncated {
            declared: len,
            available: buf.len(),
        });
    }
    Ok(buf.split_to(len as usize))
}

/// Decodes one varint-delimited message of type `M` off the front of `buf`.
pub fn decode_delimited<M: Message + Default>(
    buf: &mut Bytes,
    what: &'static str,
) -> Result<M, FrameError> {
    let body = split_delimited(buf)?;
    M::decode(body).map_err(|source| FrameError::Decode { what, source })
}

/// A request frame with its RPC header decoded and the rest left as bytes.
#[derive(Debug)]
pub struct RequestFrame {
    pub header: RpcRequestHeaderProto,
    /// What follows the RPC header: for normal calls the method header and the body.
    pub rest: Bytes,
}

pub fn parse_request(mut frame: Bytes) -> Result<RequestFrame, FrameError> {
    let header = decode_delimited::<RpcRequestHeaderProto>(&mut frame, "RpcRequestHeaderProto")?;
    Ok(RequestFrame {
        header,
        rest: frame,
    })
}

/// Splits a normal call's remainder into its method header and its body bytes. A call with
/// no body bytes at all gets an empty body, which decodes as the default message.
pub fn parse_call(mut rest: Bytes) -> Result<(RequestHeaderProto, Bytes), FrameError> {
    let method = decode_delimited::<RequestHeaderProto>(&mut rest, "RequestHeaderProto")?;
    if rest.is_empty() {
        return Ok((method, Bytes::new()));
    }
    let body = split_delimited(&mut rest)?;
    Ok((method, body))
}

/// A response or request body that can be encoded straight into the outgoing frame.
/// Object-safe so handlers of different message types share one return type.
pub trait Body: Send + Sync {
    fn encoded_len(&self) -> usize;
    fn encode_into(&self, buf: &mut BytesMut);
}

impl<M: Message> Body for M {
    fn encoded_len(&self) -> usize {
        Message::encoded_len(self)
    }
    fn encode_into(&self, buf: &mut BytesMut) {
        // Capacity was reserved by the caller, so this cannot fail.
        self.encode_raw(buf);
    }
}

/// Pre-encoded body bytes (for example a reply replayed from the retry cache).
pub struct RawBody(pub Bytes);

impl Body for RawBody {
    fn encoded_len(&self) -> usize {
        self.0.len()
    }
    fn encode_into(&self, buf: &mut BytesMut) {
        buf.put_slice(&self.0);
    }
}

/// Builds a whole frame: 4-byte length, then each part varint-delimited. The buffer is
/// allocated once at its exact final size, and every part is encoded into it once.
pub fn encode_frame(parts: &[&dyn Body]) -> Bytes {
    let payload: usize = parts
        .iter()
        .map(|p| {
            let n = p.encoded_len();
            encoded_len_varint(n as u64) + n
        })
        .sum();
    let mut buf = BytesMut::with_capacity(4 + payload);
    buf.put_u32(payload as u32);
    for p in parts {
        encode_varint(p.encoded_len() as u64, &mut buf);
        p.encode_into(&mut buf);
    }
    debug_assert_eq!(buf.len(), 4 + payload);
    buf.freeze()
}

/// The response header for a call, with clientId and retryCount echoed as Java expects.
pub fn response_header(
    call_id: i32,
    client_id: &Bytes,
    retry_count: i32,
    status: RpcStatusProto,
) -> RpcResponseHeaderProto {
    RpcResponseHeaderProto {
        call_id: call_id as u32,
        status: status as i32,
        server_ipc_version_num: Some(IPC_VERSION as u32),
        client_id: Some(client_id.clone()),
        retry_count: Some(retry_count),
        ..Default::default()
    }
}

/// An ERROR (connection stays) or FATAL (connection closes) response: header only, no body.
pub fn error_response(
    mut header: RpcResponseHeaderProto,
    fatal: bool,
    class: &str,
    message: &str,
    code: RpcErrorCodeProto,
) -> Bytes {
    header.status = if fatal {
        RpcStatusProto::Fatal
    } else {
        RpcStatusProto::Error
    } as i32;
    header.exception_class_name = Some(class.to_string());
    header.error_msg = Some(message.to_string());
    header.error_detail = Some(code as i32);
    encode_frame(&[&header])
}

/// Reads the u32 big-endian frame length at the front of `buf`, if four bytes are there.
pub fn peek_frame_len(buf: &[u8]) -> Option<u32> {
    (buf.len() >= 4).then(|| (&buf[..4]).get_u32())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preamble_round_trip_and_errors() {
        assert_eq!(
            check_preamble(&preamble(AuthProtocol::None)),
            Ok(AuthProtocol::None)
        );
        assert_eq!(
            check_preamble(&preamble(AuthProtocol::Sasl)),
            Ok(AuthProtocol::Sasl)
        );
        assert!(matches!(
            check_preamble(b"GET / H"),
            Err(FrameError::BadMagic(_))
        ));
        assert_eq!(
            check_preamble(b"hrpc\x08\x00\x00"),
            Err(FrameError::BadVersion(8))
        );
        assert_eq!(
            check_preamble(b"hrpc\x09\x00\x51"),
            Err(FrameError::BadAuth(0x51))
        );
    }

    #[test]
    fn request_frame_round_trip() {
        let rpc = RpcRequestHeaderProto {
            rpc_kind: Some(2),
            rpc_op: Some(0),
            call_id: 7,
            client_id: vec![1; 16].into(),
            retry_count: Some(0),
            ..Default::default()
        };
        let method = RequestHeaderProto {
            method_name: "getFileInfo".into(),
            declaring_class_protocol_name: "p".into(),
            client_protocol_version: 1,
        };
        let body = ferrite_proto::hdfs::GetFileInfoRequestProto { src: "/a".into() };
        let frame = encode_frame(&[&rpc, &method, &body]);
        let len = peek_frame_len(&frame).unwrap() as usize;
        assert_eq!(len + 4, frame.len());
        let req = parse_request(frame.slice(4..)).unwrap();
        assert_eq!(req.header.call_id, 7);
        let (m, b) = parse_call(req.rest).unwrap();
        assert_eq!(m.method_name, "getFileInfo");
        let back = ferrite_proto::hdfs::GetFileInfoRequestProto::decode(b).unwrap();
        assert_eq!(back.src, "/a");
    }

    #[test]
    fn call_id_is_zigzag_on_requests() {
        let rpc = RpcRequestHeaderProto {
            call_id: -33,
            ..Default::default()
        };
        let bytes = rpc.encode_to_vec();
        // field 3, varint wire type => tag 0x18; zigzag(-33) = 65
        assert_eq!(&bytes[..2], &[0x18, 65]);
    }

    #[test]
    fn truncated_and_garbage_inputs_are_errors_not_panics() {
        let mut b = Bytes::from_static(&[0x0a, 1, 2]);
        assert!(matches!(
            split_delimited(&mut b),
            Err(FrameError::Truncated { .. })
        ));
        let mut b = Bytes::from_static(&[
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ]);
        assert_eq!(split_delimited(&mut b), Err(FrameError::BadVarint));
        assert!(parse_request(Bytes::from_static(&[3, 0xff, 0xff, 0xff])).is_err());
        for i in 0..=255u8 {
            let _ = parse_request(Bytes::from(vec![i; 9]));
        }
    }

    #[test]
    fn negative_call_id_echoed_as_u32() {
        let h = response_header(-33, &Bytes::new(), -1, RpcStatusProto::Success);
        assert_eq!(h.call_id, 0xFFFF_FFDF);
    }
}
