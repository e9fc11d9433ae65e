//! Data packets: `u32 PLEN | u16 HLEN | PacketHeaderProto | checksums | data`, where PLEN
//! counts itself, the checksums and the data but not the header.

use bytes::{BufMut, Bytes, BytesMut};
use ferrite_proto::hdfs::PacketHeaderProto;
use prost::Message;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::TransferError;

/// `dfs.data.transfer.max.packet.size`'s default.
pub const MAX_PACKET: usize = 16 << 20;
/// The largest header with both length prefixes (`PKT_MAX_HEADER_LEN`).
pub const MAX_HEADER: usize = 33;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Header {
    pub offset_in_block: i64,
    pub seqno: i64,
    pub last: bool,
    pub data_len: i32,
    pub sync: bool,
}

impl Header {
    fn to_proto(self) -> PacketHeaderProto {
        PacketHeaderProto {
            offset_in_block: self.offset_in_block,
            seqno: self.seqno,
            last_packet_in_block: self.last,
            data_len: self.data_len,
            sync_block: self.sync.then_some(true),
        }
    }

    /// A heartbeat packet keeps an idle write pipeline alive.
    pub fn is_heartbeat(&self) -> bool {
        self.seqno == -1
    }
}

/// Appends a whole packet to `out`.
pub fn encode(h: &Header, sums: &[u8], data: &[u8], out: &mut BytesMut) {
    encode_head(h, sums, data.len(), out);
    out.put_slice(data);
}

/// Everything of a packet but its data: the lengths, the header and the checksums. The
/// `data_len` bytes that complete it are sent separately (with sendfile, say).
pub fn encode_head(h: &Header, sums: &[u8], data_len: usize, out: &mut BytesMut) {
    let p = h.to_proto();
    let hlen = p.encoded_len();
    out.reserve(6 + hlen + sums.len() + data_len);
    out.put_u32((4 + sums.len() + data_len) as u32);
    out.put_u16(hlen as u16);
    p.encode(out).expect("reserved");
    out.put_slice(sums);
}

/// A received packet. `raw` is the whole frame, so a pipeline node can forward it
/// unchanged; `sums` and `data` are views into it.
#[derive(Debug, Clone)]
pub struct Packet {
    pub header: Header,
    pub raw: Bytes,
    pub sums: Bytes,
    pub data: Bytes,
}

/// Reads one packet. Lengths are checked before anything is allocated.
pub async fn read<R: AsyncRead + Unpin>(r: &mut R, max: usize) -> Result<Packet, TransferError> {
    let mut pre = [0u8; 6];
    r.read_exact(&mut pre).await?;
    let total = frame_len(&pre, max)?;
    let mut buf = BytesMut::with_capacity(total);
    buf.put_slice(&pre);
    // Into the spare capacity: zero-filling a megabyte packet first would cost a whole
    // extra pass over memory before the kernel's copy overwrites it.
    while buf.len() < total {
        let want = total - buf.len();
        if r.read_buf(&mut (&mut buf).limit(want)).await? == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
        }
    }
    parse(buf.freeze())
}

/// Takes one whole packet off the front of `buf`, or `None` (having reserved room for the
/// rest of it) while it has not all arrived. For a reader that keeps its own buffer, so
/// that a wait for more bytes can be abandoned and resumed without losing any (a
/// pipeline node waits for the next packet and for an ack at once).
pub fn decode(buf: &mut BytesMut, max: usize) -> Result<Option<Packet>, TransferError> {
    let Some(pre) = buf.get(..6) else {
        return Ok(None);
    };
    let total = frame_len(pre.try_into().expect("six bytes"), max)?;
    if buf.len() < total {
        buf.reserve(total - buf.len());
        return Ok(None);
    }
    parse(buf.split_to(total).freeze()).map(Some)
}

/// The whole frame's length from its two length prefixes, checked against `max`.
fn frame_len(pre: &[u8; 6], max: usize) -> Result<usize, TransferError> {
    let plen = u32::from_be_bytes([pre[0], pre[1], pre[2], pre[3]]) as usize;
    let hlen = u16::from_be_bytes([pre[4], pre[5]]) as usize;
    if plen < 4 {
        return Err(TransferError::malformed(
            "packet",
            format!("length {plen} < 4"),
        ));
    }
    if plen + hlen > max {
        return Err(TransferError::TooLarge {
            what: "packet",
            len: plen + hlen,
            max,
        });
    }
    Ok(6 + hlen + plen - 4)
}

/// Splits a whole frame (lengths already checked) into header, checksums and data.
fn parse(raw: Bytes) -> Result<Packet, TransferError> {
    let plen = u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]) as usize;
    let hlen = u16::from_be_bytes([raw[4], raw[5]]) as usize;
    let p = PacketHeaderProto::decode(&raw[6..6 + hlen])
        .map_err(|e| TransferError::malformed("packet header", e))?;
    let header = Header {
        offset_in_block: p.offset_in_block,
        seqno: p.seqno,
        last: p.last_packet_in_block,
        data_len: p.data_len,
        sync: p.sync_block.unwrap_or(false),
    };
    let body = plen - 4;
    if header.data_len < 0 || header.data_len as usize > body {
        return Err(TransferError::malformed(
            "packet",
            format!("data length {} in a body of {body}", header.data_len),
        ));
    }
    let sums_len = body - header.data_len as usize;
    let start = 6 + hlen;
    Ok(Packet {
        header,
        sums: raw.slice(start..start + sums_len),
        data: raw.slice(start + sums_len..),
        raw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_documented_first_packet_byte_for_byte() {
        let data = vec![7u8; 1000];
        let mut sums = Vec::new();
        crate::checksum::Checksum::CRC32C_512.compute_into(&data, &mut sums);
        let h = Header {
            data_len: 1000,
            ..Default::default()
        };
        let mut out = BytesMut::new();
        encode(&h, &sums, &data, &mut out);
        assert_eq!(&out[..6], &[0, 0, 3, 0xF4, 0, 25]);
        assert_eq!(
            &out[6..31],
            &[
                0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0, 0x18, 0, 0x25, 0xE8, 3,
                0, 0
            ]
        );
        let p = read(&mut &out[..], MAX_PACKET).await.unwrap();
        assert_eq!(p.header, h);
        assert_eq!(&p.sums[..], &sums[..]);
        assert_eq!(&p.data[..], &data[..]);
        assert_eq!(p.raw.len(), out.len());
    }

    #[tokio::test]
    async fn bad_lengths_are_refused_before_allocation() {
        let huge = [0x7f, 0xff, 0xff, 0xff, 0, 25];
        assert!(matches!(
            read(&mut &huge[..], MAX_PACKET).await,
            Err(TransferError::TooLarge { .. })
        ));
        let tiny = [0, 0, 0, 2, 0, 0];
        assert!(read(&mut &tiny[..], MAX_PACKET).await.is_err());
        // A data length larger than the body.
        let mut out = BytesMut::new();
        let h = Header {
            data_len: 10,
            ..Default::default()
        };
        encode(&h, &[], &[1, 2, 3], &mut out);
        assert!(read(&mut &out[..], MAX_PACKET).await.is_err());
    }

    #[tokio::test]
    async fn a_packet_arriving_in_pieces_is_whole_and_a_cut_one_is_an_eof() {
        let data: Vec<u8> = (0..70_000u32).map(|i| i as u8).collect();
        let mut sums = Vec::new();
        crate::checksum::Checksum::CRC32C_512.compute_into(&data, &mut sums);
        let h = Header {
            data_len: data.len() as i32,
            seqno: 3,
            ..Default::default()
        };
        let mut out = BytesMut::new();
        encode(&h, &sums, &data, &mut out);
        // A reader that hands over at most 1,000 bytes at a time.
        let (mut tx, mut rx) = tokio::io::duplex(1000);
        let frame = out.clone();
        let writer = tokio::spawn(async move {
            tokio::io::AsyncWriteExt::write_all(&mut tx, &frame)
                .await
                .unwrap();
        });
        let p = read(&mut rx, MAX_PACKET).await.unwrap();
        writer.await.unwrap();
        assert_eq!(p.header, h);
        assert_eq!(&p.sums[..], &sums[..]);
        assert_eq!(&p.data[..], &data[..]);
        let cut = &out[..out.len() - 1];
        match read(&mut &cut[..], MAX_PACKET).await {
            Err(TransferError::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof),
            other => panic!("a cut packet read as {other:?}"),
        }
    }

    #[test]
    fn decode_waits_for_the_whole_frame_and_leaves_the_next_one() {
        let data = vec![9u8; 700];
        let mut sums = Vec::new();
        crate::checksum::Checksum::CRC32C_512.compute_into(&data, &mut sums);
        let mut frames = BytesMut::new();
        for seqno in 0..2 {
            let h = Header {
                data_len: 700,
                seqno,
                ..Default::default()
            };
            encode(&h, &sums, &data, &mut frames);
        }
        let one = frames.len() / 2;
        let mut buf = BytesMut::new();
        for (i, b) in frames.iter().enumerate() {
            buf.put_u8(*b);
            let got = decode(&mut buf, MAX_PACKET).unwrap();
            if i + 1 == one || i + 1 == 2 * one {
                let p = got.expect("a whole packet");
                assert_eq!(p.header.seqno, (i / one) as i64);
                assert_eq!(&p.data[..], &data[..]);
                assert_eq!(&p.sums[..], &sums[..]);
                assert!(buf.is_empty());
            } else {
                assert!(got.is_none(), "a packet before its last byte, at {i}");
            }
        }
        let mut huge = BytesMut::from(&[0x7f, 0xff, 0xff, 0xff, 0, 25][..]);
        assert!(matches!(
            decode(&mut huge, MAX_PACKET),
            Err(TransferError::TooLarge { .. })
        ));
    }
}
