//! Binary encoding of operation records and journal records.
//!
//! A journal record is `u32 LE length | u32 LE crc32c | u64 LE txid | op bytes`, where the
//! length counts the txid and op bytes and the checksum covers them. An op is a one-byte tag
//! followed by its fields; strings are `u32 length + UTF-8`, options a presence byte.
//! Decoding never trusts a length: every read is bounds-checked and errors name the problem.

use crate::ops::{FieldReader, FieldWriter};
use crate::Op;

/// Bytes before a record's payload: length and checksum.
pub const RECORD_PREFIX: usize = 8;
/// A record longer than this is corrupt by definition (ops are small).
pub const MAX_RECORD: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("record runs past the end of the data ({need} bytes needed, {have} left)")]
    Short { need: usize, have: usize },
    #[error("record length {0} is out of range")]
    BadLength(usize),
    #[error("checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Checksum { stored: u32, computed: u32 },
    #[error("unknown op tag {0}")]
    BadTag(u8),
    #[error("invalid UTF-8 in a path or name")]
    BadUtf8,
    #[error("{0} trailing bytes after the op")]
    Trailing(usize),
}

struct Writer<'a>(&'a mut Vec<u8>);

impl FieldWriter for Writer<'_> {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    fn bytes(&mut self, v: &[u8]) {
        self.0.extend_from_slice(&(v.len() as u32).to_le_bytes());
        self.0.extend_from_slice(v);
    }
}

/// A bounds-checked cursor over untrusted bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(DecodeError::Short {
                need: n,
                have: self.remaining(),
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.bytes(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(
            self.bytes(2)?.try_into().expect("2 bytes"),
        ))
    }
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(
            self.bytes(4)?.try_into().expect("4 bytes"),
        ))
    }
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(
            self.bytes(8)?.try_into().expect("8 bytes"),
        ))
    }
    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(self.u64()? as i64)
    }
    pub fn str(&mut self) -> Result<String, DecodeError> {
        let n = self.u32()? as usize;
        if n > MAX_RECORD {
            return Err(DecodeError::BadLength(n));
        }
        String::from_utf8(self.bytes(n)?.to_vec()).map_err(|_| DecodeError::BadUtf8)
    }
}

impl FieldReader for Reader<'_> {
    type Error = DecodeError;
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Reader::u8(self)
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        Reader::u16(self)
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        Reader::u32(self)
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        Reader::u64(self)
    }
    fn str(&mut self) -> Result<String, DecodeError> {
        Reader::str(self)
    }
    fn bytes(&mut self) -> Result<Vec<u8>, DecodeError> {
        let n = Reader::u32(self)? as usize;
        if n > MAX_RECORD {
            return Err(DecodeError::BadLength(n));
        }
        Ok(Reader::bytes(self, n)?.to_vec())
    }
    fn check_count(&mut self, n: usize, min_size: usize) -> Result<(), DecodeError> {
        if n > self.remaining() / min_size.max(1) {
            return Err(DecodeError::BadLength(n));
        }
        Ok(())
    }
}

/// An op's bytes: its tag, then its fields in the order `namespace::ops` declares them.
pub fn encode_op(op: &Op, out: &mut Vec<u8>) {
    let mut w = Writer(out);
    w.u8(op.tag());
    op.write_fields(&mut w);
}

pub fn decode_op(bytes: &[u8]) -> Result<Op, DecodeError> {
    let mut r = Reader::new(bytes);
    let tag = r.u8()?;
    let op = Op::read_fields(tag, &mut r)?.ok_or(DecodeError::BadTag(tag))?;
    match r.remaining() {
        0 => Ok(op),
        n => Err(DecodeError::Trailing(n)),
    }
}

/// Appends one journal record for `op` at `txid`.
pub fn encode_record(txid: u64, op: &Op, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; RECORD_PREFIX]);
    out.extend_from_slice(&txid.to_le_bytes());
    encode_op(op, out);
    let payload = &out[start + RECORD_PREFIX..];
    let len = payload.len() as u32;
    let crc = crc32c::crc32c(payload);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// What sits at a position in a segment.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// A valid record and its total size in bytes.
    Record { txid: u64, op: Op, size: usize },
    /// A zero length: the unwritten (preallocated) tail, or the end of the data.
    End,
}

/// A record whose length and checksum verify, its op still encoded.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    Record {
        txid: u64,
        op: &'a [u8],
        size: usize,
    },
    End,
}

/// Checks the record at the front of `buf` (length, checksum) without decoding its op: a
/// reader stepping over records it already has pays a checksum, not the op's allocations.
pub fn decode_frame(buf: &[u8]) -> Result<Frame<'_>, DecodeError> {
    if buf.len() < 4 {
        return if buf.iter().all(|&b| b == 0) {
            Ok(Frame::End)
        } else {
            Err(DecodeError::Short {
                need: 4,
                have: buf.len(),
            })
        };
    }
    let mut r = Reader::new(buf);
    let len = r.u32()? as usize;
    if len == 0 {
        return Ok(Frame::End);
    }
    if !(8..=MAX_RECORD).contains(&len) {
        return Err(DecodeError::BadLength(len));
    }
    let stored = r.u32()?;
    let payload = r.bytes(len)?;
    let computed = crc32c::crc32c(payload);
    if stored != computed {
        return Err(DecodeError::Checksum { stored, computed });
    }
    Ok(Frame::Record {
        txid: u64::from_le_bytes(payload[..8].try_into().expect("8 bytes")),
        op: &payload[8..],
        size: RECORD_PREFIX + len,
    })
}

/// Decodes the record at the front of `buf`.
pub fn decode_record(buf: &[u8]) -> Result<Next, DecodeError> {
    Ok(match decode_frame(buf)? {
        Frame::End => Next::End,
        Frame::Record { txid, op, size } => Next::Record {
            txid,
            op: decode_op(op)?,
            size,
        },
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample_ops() -> Vec<Op> {
        vec![
            Op::Mkdir {
                path: "/a".into(),
                id: 16386,
                perm: 0o755,
                owner: "hdfs".into(),
                group: "supergroup".into(),
                mtime: 5,
            },
            Op::Create {
                path: "/a/f".into(),
                id: 16387,
                perm: 0o644,
                owner: "alice".into(),
                group: "g".into(),
                mtime: -1,
                replication: 3,
                block_size: 128 << 20,
                client_name: "c".into(),
                client_machine: "127.0.0.1".into(),
            },
            Op::AddBlock {
                path: "/a/f".into(),
                id: (1 << 30) + 1,
                gs: 1001,
                prev_len: 0,
            },
            Op::AddBlock {
                path: "/a/f".into(),
                id: (1 << 30) + 2,
                gs: 1002,
                prev_len: 512,
            },
            Op::BumpGenerationStamp {
                path: "/a/f".into(),
                id: (1 << 30) + 2,
                gs: 1003,
            },
            Op::SetGenerationStamp { gs: 1004 },
            Op::Truncate {
                path: "/a/f".into(),
                len: 100,
                mtime: 12,
                client_name: "c3".into(),
                client_machine: "m3".into(),
                cut: Some((100, 512)),
            },
            Op::Truncate {
                path: "/a/f".into(),
                len: 0,
                mtime: 13,
                client_name: String::new(),
                client_machine: String::new(),
                cut: None,
            },
            Op::CopyOnTruncate {
                path: "/a/f".into(),
                id: (1 << 30) + 3,
                gs: 1005,
            },
            Op::ReassignLease {
                path: "/a/f".into(),
                holder: "c3".into(),
                new_holder: "HDFS_NameNode-1".into(),
            },
            Op::RetryId {
                client_id: vec![7; 16],
                call_id: 42,
                answer: 2,
                path: "/a/f".into(),
                gone: false,
                id: 16_390,
            },
            Op::Concat {
                target: "/a/t".into(),
                srcs: vec!["/a/s1".into(), "/a/s2".into()],
                mtime: 14,
            },
            Op::SetXAttr {
                path: "/a".into(),
                ns: 0,
                name: "colour".into(),
                value: Some(vec![0, 1, 255]),
            },
            Op::SetXAttr {
                path: "/a".into(),
                ns: 1,
                name: "empty".into(),
                value: None,
            },
            Op::RemoveXAttr {
                path: "/a".into(),
                ns: 0,
                name: "colour".into(),
            },
            Op::SetAcl {
                path: "/a".into(),
                perm: 0o1770,
                entries: vec!["user:bruce:rwx".into(), "group::r-x".into()],
            },
            Op::Append {
                path: "/a/f".into(),
                client_name: "c2".into(),
                client_machine: "10.0.0.2".into(),
                last_len: 512,
            },
            Op::UpdateLastBlock {
                path: "/a/f".into(),
                id: (1 << 30) + 2,
                gs: 1004,
                len: 188,
            },
            Op::AbandonBlock {
                path: "/a/f".into(),
                id: (1 << 30) + 2,
            },
            Op::Close {
                path: "/a/f".into(),
                mtime: 9,
                len: 700,
            },
            Op::Rename {
                src: "/a/f".into(),
                dst: "/a/é".into(),
                mtime: 10,
                overwrite: true,
            },
            Op::Delete {
                path: "/a".into(),
                mtime: 11,
            },
            Op::SetPermission {
                path: "/".into(),
                perm: 0o1777,
            },
            Op::SetOwner {
                path: "/".into(),
                owner: None,
                group: Some("g".into()),
            },
            Op::SetTimes {
                path: "/".into(),
                mtime: Some(1),
                atime: None,
            },
            Op::SetReplication {
                path: "/x".into(),
                replication: 2,
            },
        ]
    }

    /// Bytes as journals on disk hold them (written by the encoder before the records were
    /// declared in one list): the declared order must keep reading them.
    #[test]
    fn records_keep_the_bytes_journals_on_disk_hold() {
        fn s(out: &mut Vec<u8>, v: &str) {
            out.extend((v.len() as u32).to_le_bytes());
            out.extend(v.as_bytes());
        }
        let mut concat = vec![17];
        s(&mut concat, "/t");
        concat.extend(5u64.to_le_bytes());
        concat.extend(2u32.to_le_bytes());
        s(&mut concat, "/a");
        s(&mut concat, "/b");
        let mut truncate = vec![16];
        s(&mut truncate, "/f");
        truncate.extend(10u64.to_le_bytes());
        truncate.extend(3u64.to_le_bytes());
        s(&mut truncate, "c");
        s(&mut truncate, "m");
        truncate.push(1);
        truncate.extend(4u64.to_le_bytes());
        truncate.extend(9u64.to_le_bytes());
        let mut chown = vec![7];
        s(&mut chown, "/x");
        chown.extend([0, 1]);
        s(&mut chown, "g");
        let mut rename = vec![4];
        s(&mut rename, "/a");
        s(&mut rename, "/b");
        rename.extend(2u64.to_le_bytes());
        rename.push(1);
        let mut times = vec![8];
        s(&mut times, "/p");
        times.push(1);
        times.extend(1u64.to_le_bytes());
        times.push(0);
        let mut create = vec![2];
        s(&mut create, "/c");
        create.extend(16386u64.to_le_bytes());
        create.extend(0o644u16.to_le_bytes());
        s(&mut create, "hdfs");
        s(&mut create, "supergroup");
        create.extend(1u64.to_le_bytes());
        create.extend(3u16.to_le_bytes());
        create.extend(1024u64.to_le_bytes());
        s(&mut create, "cl");
        s(&mut create, "127.0.0.1");
        let cases = [
            (
                concat,
                Op::Concat {
                    target: "/t".into(),
                    mtime: 5,
                    srcs: vec!["/a".into(), "/b".into()],
                },
            ),
            (
                truncate,
                Op::Truncate {
                    path: "/f".into(),
                    len: 10,
                    mtime: 3,
                    client_name: "c".into(),
                    client_machine: "m".into(),
                    cut: Some((4, 9)),
                },
            ),
            (
                chown,
                Op::SetOwner {
                    path: "/x".into(),
                    owner: None,
                    group: Some("g".into()),
                },
            ),
            (
                rename,
                Op::Rename {
                    src: "/a".into(),
                    dst: "/b".into(),
                    mtime: 2,
                    overwrite: true,
                },
            ),
            (
                times,
                Op::SetTimes {
                    path: "/p".into(),
                    mtime: Some(1),
                    atime: None,
                },
            ),
            (create, crate::ops::create_record("/c", 16386, 1024, "cl")),
        ];
        for (bytes, op) in cases {
            assert_eq!(decode_op(&bytes).unwrap(), op);
            let mut out = Vec::new();
            encode_op(&op, &mut out);
            assert_eq!(out, bytes, "{op:?}");
        }
    }

    #[test]
    fn every_op_round_trips() {
        let mut buf = Vec::new();
        for (i, op) in sample_ops().iter().enumerate() {
            encode_record(i as u64 + 1, op, &mut buf);
        }
        let mut at = 0;
        for (i, op) in sample_ops().into_iter().enumerate() {
            match decode_record(&buf[at..]).unwrap() {
                Next::Record {
                    txid,
                    op: got,
                    size,
                } => {
                    assert_eq!((txid, got), (i as u64 + 1, op));
                    at += size;
                }
                Next::End => panic!("early end"),
            }
        }
        assert_eq!(decode_record(&buf[at..]), Ok(Next::End));
        assert_eq!(decode_record(&[0; 64]), Ok(Next::End));
    }

    /// An op behind a matching checksum is still untrusted input (a bug, another
    /// version): any bytes decode to an op or an error, never a panic or a huge allocation.
    #[test]
    fn any_op_bytes_decode_or_fail_cleanly() {
        let mut encoded = Vec::new();
        for op in sample_ops() {
            let mut b = Vec::new();
            encode_op(&op, &mut b);
            for cut in 0..b.len() {
                assert!(decode_op(&b[..cut]).is_err(), "{op:?} cut at {cut}");
            }
            encoded.push(b);
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..20_000 {
            let mut b = encoded[round % encoded.len()].clone();
            for _ in 0..1 + next() % 4 {
                let i = (next() % b.len() as u64) as usize;
                b[i] = next() as u8;
            }
            let _ = decode_op(&b);
            let noise: Vec<u8> = (0..next() % 64).map(|_| next() as u8).collect();
            let _ = decode_op(&noise);
        }
    }

    #[test]
    fn damage_is_detected_not_trusted() {
        let mut buf = Vec::new();
        encode_record(7, &sample_ops()[1], &mut buf);
        for cut in 1..buf.len() {
            assert!(
                decode_record(&buf[..cut]).is_err(),
                "truncation at {cut} must fail"
            );
        }
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x40;
            assert!(
                !matches!(decode_record(&bad), Ok(Next::Record { txid: 7, .. })) || bad == buf,
                "flip at {i} undetected"
            );
        }
        let mut huge = vec![0xff, 0xff, 0xff, 0x7f];
        huge.extend_from_slice(&[0; 12]);
        assert_eq!(
            decode_record(&huge),
            Err(DecodeError::BadLength(0x7fff_ffff))
        );
    }
}
