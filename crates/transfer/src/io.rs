//! The op preamble (`u16 version | u8 op | varint-delimited request`) and varint-delimited
//! messages on async streams.

use prost::Message;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::{TransferError, DATA_TRANSFER_VERSION};

/// Op requests and responses are small; anything bigger is malformed.
pub const MAX_MESSAGE: usize = 1 << 20;

/// Encodes `version | op | delimited(msg)` in one buffer.
pub fn op_bytes(op: u8, msg: &impl Message) -> Vec<u8> {
    let mut out = Vec::with_capacity(3 + 5 + msg.encoded_len());
    out.extend_from_slice(&DATA_TRANSFER_VERSION.to_be_bytes());
    out.push(op);
    msg.encode_length_delimited(&mut out).expect("vec grows");
    out
}

pub async fn write_op<W: AsyncWrite + Unpin>(
    w: &mut W,
    op: u8,
    msg: &impl Message,
) -> std::io::Result<()> {
    w.write_all(&op_bytes(op, msg)).await
}

/// Reads the version and op code. `Ok(None)` is a clean end of stream before the first
/// byte: a kept-alive connection that the peer closed.
pub async fn read_op<R: AsyncRead + Unpin>(r: &mut R) -> Result<Option<u8>, TransferError> {
    let mut first = [0u8; 1];
    if r.read(&mut first).await? == 0 {
        return Ok(None);
    }
    let mut rest = [0u8; 2];
    r.read_exact(&mut rest).await?;
    let version = u16::from_be_bytes([first[0], rest[0]]);
    if version != DATA_TRANSFER_VERSION {
        return Err(TransferError::Version(version));
    }
    Ok(Some(rest[1]))
}

pub async fn read_varint<R: AsyncRead + Unpin>(r: &mut R) -> Result<u64, TransferError> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = r.read_u8().await?;
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(TransferError::malformed("varint", "longer than 10 bytes"))
}

pub async fn read_delimited<M: Message + Default, R: AsyncRead + Unpin>(
    r: &mut R,
) -> Result<M, TransferError> {
    let len = read_varint(r).await? as usize;
    if len > MAX_MESSAGE {
        return Err(TransferError::TooLarge {
            what: "message",
            len,
            max: MAX_MESSAGE,
        });
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf).await?;
    M::decode(&buf[..]).map_err(|e| TransferError::malformed("message", e))
}

/// Takes one varint-delimited message off the front of `buf`, or `None` while it has not
/// all arrived: the buffered counterpart of [`read_delimited`] (see `packet::decode`).
pub fn decode_delimited<M: Message + Default>(
    buf: &mut bytes::BytesMut,
) -> Result<Option<M>, TransferError> {
    let mut peek = &buf[..];
    let len = match prost::encoding::decode_varint(&mut peek) {
        Ok(len) => len as usize,
        // Ten bytes and still no end: not a length.
        Err(_) if buf.len() >= 10 => {
            return Err(TransferError::malformed("varint", "longer than 10 bytes"))
        }
        Err(_) => return Ok(None),
    };
    if len > MAX_MESSAGE {
        return Err(TransferError::TooLarge {
            what: "message",
            len,
            max: MAX_MESSAGE,
        });
    }
    let head = buf.len() - peek.len();
    if peek.len() < len {
        buf.reserve(head + len - buf.len());
        return Ok(None);
    }
    let frame = buf.split_to(head + len);
    M::decode(&frame[head..])
        .map(Some)
        .map_err(|e| TransferError::malformed("message", e))
}

pub async fn write_delimited<W: AsyncWrite + Unpin>(
    w: &mut W,
    msg: &impl Message,
) -> std::io::Result<()> {
    w.write_all(&msg.encode_length_delimited_to_vec()).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_proto::hdfs::ClientReadStatusProto;

    #[tokio::test]
    async fn op_preamble_and_messages() {
        let msg = ClientReadStatusProto { status: 6 };
        let bytes = op_bytes(81, &msg);
        assert_eq!(&bytes[..3], &[0, 28, 81]);
        let mut r = &bytes[..];
        assert_eq!(read_op(&mut r).await.unwrap(), Some(81));
        let back: ClientReadStatusProto = read_delimited(&mut r).await.unwrap();
        assert_eq!(back, msg);
        assert_eq!(read_op(&mut r).await.unwrap(), None);
        let mut wrong = &[0u8, 27, 81][..];
        assert!(matches!(
            read_op(&mut wrong).await,
            Err(TransferError::Version(27))
        ));
    }

    #[test]
    fn decode_delimited_waits_for_the_whole_message() {
        let msg = ClientReadStatusProto { status: 6 };
        let mut bytes = msg.encode_length_delimited_to_vec();
        bytes.extend(msg.encode_length_delimited_to_vec());
        let mut buf = bytes::BytesMut::new();
        let mut got = Vec::new();
        for b in bytes {
            buf.extend_from_slice(&[b]);
            if let Some(m) = decode_delimited::<ClientReadStatusProto>(&mut buf).unwrap() {
                got.push(m);
            }
        }
        assert_eq!(got, vec![msg, msg]);
        assert!(buf.is_empty());
        let mut long = bytes::BytesMut::from(&[0xffu8; 10][..]);
        assert!(decode_delimited::<ClientReadStatusProto>(&mut long).is_err());
        let mut huge = bytes::BytesMut::from(&[0x80u8, 0x80, 0x80, 0x01][..]);
        assert!(matches!(
            decode_delimited::<ClientReadStatusProto>(&mut huge),
            Err(TransferError::TooLarge { .. })
        ));
    }
}
