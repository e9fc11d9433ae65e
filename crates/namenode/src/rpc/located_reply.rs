//! getBlockLocations replies, encoded straight into the outgoing frame.
//!
//! A reply for a 1,000-block file repeats the same few DataNodes, the same block pool and
//! (tokens being one per reply) the same token in every LocatedBlock. Built as prost
//! messages, that cost ~2 µs of NameNode CPU per block: clones of every node's strings,
//! a dozen allocations, and nested lengths recomputed at each level. Here each repeated
//! part is encoded once per call, the blocks stay plain numbers, and the bytes are written
//! once, by the RPC layer, after the namespace and block locks are released.
//!
//! The bytes are exactly what prost would write for the same `GetBlockLocationsResponseProto`
//! (fields in number order); the tests hold the two side by side.

use std::collections::HashMap;
use std::ops::Range;

use bytes::{BufMut, BytesMut};
use ferrite_ipc::frame::Body;
use ferrite_proto::common::TokenProto;
use ferrite_proto::hdfs::StorageTypeProto;
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, key_len, WireType};
use smallvec::SmallVec;

use prost::Message;

use super::convert::node_info;
use crate::blocks::registry::{NodeIx, Registry};
use crate::namespace::blocks::Placed;
use crate::service::LocatedSink;

/// One LocatedBlock, kept as numbers until the frame is written.
struct Row {
    id: u64,
    gs: u64,
    len: u64,
    offset: u64,
    /// Index into `LocatedReply::tails`.
    tail: usize,
    ext_len: usize,
    body_len: usize,
}

/// A (DataNode, storage) holding replicas in this reply, with its two fields encoded once:
/// `locs` (3, the DatanodeInfoProto) and `storageIDs` (8).
struct Replica {
    info: Vec<u8>,
    storage: Vec<u8>,
}

/// Which replicas, in reader order, and which token: everything a LocatedBlock holds after
/// its block and offset. Blocks with the same key share one encoded tail.
type TailKey = (SmallVec<[usize; 4]>, usize);
type Fold = foldhash::fast::RandomState;
/// A block's replicas in reader order: (node, storage).
type Locs = SmallVec<[(NodeIx, u8); 4]>;

/// A getBlockLocations reply under construction: `push` each block in file order (the
/// last block of a file being written last, with `is_last`), then `finish`.
pub struct LocatedReply {
    file_len: u64,
    under_construction: bool,
    pool_field: Vec<u8>,
    token_fields: Vec<Vec<u8>>,
    token_ends: Vec<usize>,
    replicas: Vec<Replica>,
    replica_of: HashMap<(NodeIx, u8), usize, Fold>,
    /// Fields 3..8 of a LocatedBlockProto, encoded once per distinct [`TailKey`].
    tails: Vec<Vec<u8>>,
    tail_of: HashMap<TailKey, usize, Fold>,
    /// The previous block's replicas, token group and tail.
    prev: Option<(Locs, usize, usize)>,
    rows: Vec<Row>,
    last: Option<Row>,
    locations_len: usize,
}

/// `tag` + length + `body`, as a length-delimited field.
fn delimited(tag: u32, body: &[u8]) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(key_len(tag) + encoded_len_varint(body.len() as u64) + body.len());
    encode_key(tag, WireType::LengthDelimited, &mut out);
    encode_varint(body.len() as u64, &mut out);
    out.extend_from_slice(body);
    out
}

/// Length of a varint field (key and value).
fn varint_field(tag: u32, v: u64) -> usize {
    key_len(tag) + encoded_len_varint(v)
}

/// Length of a length-delimited field holding `len` bytes.
fn delimited_len(tag: u32, len: usize) -> usize {
    key_len(tag) + encoded_len_varint(len as u64) + len
}

const DISK: u64 = StorageTypeProto::Disk as u64;

/// Up to four keys and four varints, on the stack: 8 × 10 bytes.
struct Scratch {
    buf: [u8; 80],
    len: usize,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            buf: [0; 80],
            len: 0,
        }
    }
}

impl Scratch {
    /// Protobuf's base-128 varint.
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf[self.len] = v as u8 | 0x80;
            self.len += 1;
            v >>= 7;
        }
        self.buf[self.len] = v as u8;
        self.len += 1;
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl LocatedReply {
    /// `tokens` are the reply's token groups: consecutive ranges of block indexes (in push
    /// order) with the token each range shares.
    pub fn new(
        pool: &str,
        file_len: u64,
        under_construction: bool,
        tokens: impl IntoIterator<Item = (Range<usize>, TokenProto)>,
    ) -> Self {
        let (token_ends, token_fields) = tokens
            .into_iter()
            .map(|(r, t)| (r.end, delimited(5, &t.encode_to_vec())))
            .unzip();
        LocatedReply {
            file_len,
            under_construction,
            pool_field: delimited(1, pool.as_bytes()),
            token_fields,
            token_ends,
            replicas: Vec::new(),
            replica_of: HashMap::default(),
            tails: Vec::new(),
            tail_of: HashMap::default(),
            prev: None,
            rows: Vec::new(),
            last: None,
            locations_len: 0,
        }
    }

    /// Adds the next block with its replicas in reader order. Each (node, storage) is
    /// encoded the first time it appears in the reply, each distinct tail likewise.
    pub fn push(&mut self, p: &Placed, locs: &[(NodeIx, u8)], reg: &Registry, is_last: bool) {
        let index = self.rows.len() + usize::from(self.last.is_some());
        let token = self
            .token_ends
            .iter()
            .position(|&end| index < end)
            .unwrap_or(0);
        // Consecutive blocks usually sit on the same replicas: reuse the tail as is.
        let tail = match &self.prev {
            Some((l, t, tail)) if l.as_slice() == locs && *t == token => *tail,
            _ => {
                let tail = self.tail_for(locs, token, reg);
                self.prev = Some((locs.iter().copied().collect(), token, tail));
                tail
            }
        };
        let ext_len = self.pool_field.len()
            + varint_field(2, p.block.id)
            + varint_field(3, p.block.gs)
            + varint_field(4, p.block.len);
        let row = Row {
            id: p.block.id,
            gs: p.block.gs,
            len: p.block.len,
            offset: p.offset,
            tail,
            ext_len,
            body_len: delimited_len(1, ext_len)
                + varint_field(2, p.offset)
                + self.tails[tail].len(),
        };
        if is_last {
            self.last = Some(row);
        } else {
            self.rows.push(row);
        }
    }

    /// The tail for these replicas and token, each replica and the tail encoded the first
    /// time they appear in the reply.
    fn tail_for(&mut self, locs: &[(NodeIx, u8)], token: usize, reg: &Registry) -> usize {
        let mut slots = SmallVec::<[usize; 4]>::new();
        for &(ix, storage) in locs {
            let next = self.replicas.len();
            let slot = *self.replica_of.entry((ix, storage)).or_insert(next);
            if slot == next {
                self.replicas.push(Replica {
                    info: delimited(3, &node_info(reg.get(ix)).encode_to_vec()),
                    storage: delimited(8, reg.get(ix).storage_uuid(storage).as_bytes()),
                });
            }
            slots.push(slot);
        }
        self.tail(slots, token)
    }

    /// The tail for these replicas and token, encoded the first time it is asked for.
    fn tail(&mut self, slots: SmallVec<[usize; 4]>, token: usize) -> usize {
        let key = (slots, token);
        if let Some(&t) = self.tail_of.get(&key) {
            return t;
        }
        let (slots, token) = &key;
        let mut out = Vec::new();
        for &s in slots {
            out.extend_from_slice(&self.replicas[s].info);
        }
        encode_key(4, WireType::Varint, &mut out);
        out.push(0); // corrupt: replicas marked corrupt are never handed out
        if let Some(t) = self.token_fields.get(*token) {
            out.extend_from_slice(t);
        }
        if !slots.is_empty() {
            encode_key(6, WireType::LengthDelimited, &mut out);
            encode_varint(slots.len() as u64, &mut out);
            out.resize(out.len() + slots.len(), 0); // isCached: no caching
        }
        for _ in slots {
            encode_key(7, WireType::Varint, &mut out);
            encode_varint(DISK, &mut out);
        }
        for &s in slots {
            out.extend_from_slice(&self.replicas[s].storage);
        }
        self.tails.push(out);
        self.tail_of.insert(key, self.tails.len() - 1);
        self.tails.len() - 1
    }

    /// Computes the outer lengths; the reply is ready to encode.
    pub fn finish(mut self) -> Self {
        self.locations_len = varint_field(1, self.file_len)
            + self
                .rows
                .iter()
                .map(|r| delimited_len(2, r.body_len))
                .sum::<usize>()
            + varint_field(3, 0)
            + self
                .last
                .as_ref()
                .map_or(0, |r| delimited_len(4, r.body_len))
            + varint_field(5, 0);
        self
    }

    fn write_row(&self, tag: u32, row: &Row, buf: &mut BytesMut) {
        // The keys and numbers are assembled on the stack and copied in two pieces: written
        // into the BytesMut directly, every varint byte was a call with its own capacity
        // check, the costliest part of a 1,000-block reply. All tags here are < 16, so
        // each key is one byte.
        const LEN: u64 = WireType::LengthDelimited as u64;
        let mut lens = Scratch::default();
        lens.varint(u64::from(tag) << 3 | LEN);
        lens.varint(row.body_len as u64);
        lens.varint(1 << 3 | LEN);
        lens.varint(row.ext_len as u64);
        buf.put_slice(lens.bytes());
        buf.put_slice(&self.pool_field);
        let mut numbers = Scratch::default();
        for (t, v) in [(2u64, row.id), (3, row.gs), (4, row.len)] {
            numbers.varint(t << 3);
            numbers.varint(v);
        }
        numbers.varint(2 << 3);
        numbers.varint(row.offset);
        buf.put_slice(numbers.bytes());
        buf.put_slice(&self.tails[row.tail]);
    }
}

impl Body for LocatedReply {
    fn encoded_len(&self) -> usize {
        delimited_len(1, self.locations_len)
    }

    fn encode_into(&self, buf: &mut BytesMut) {
        encode_key(1, WireType::LengthDelimited, buf);
        encode_varint(self.locations_len as u64, buf);
        encode_key(1, WireType::Varint, buf);
        encode_varint(self.file_len, buf);
        for row in &self.rows {
            self.write_row(2, row, buf);
        }
        encode_key(3, WireType::Varint, buf);
        buf.put_u8(u8::from(self.under_construction));
        if let Some(row) = &self.last {
            self.write_row(4, row, buf);
        }
        encode_key(5, WireType::Varint, buf);
        buf.put_u8(u8::from(!self.under_construction));
    }
}

impl LocatedSink for LocatedReply {
    fn start(
        pool: &str,
        file_len: u64,
        under_construction: bool,
        tokens: Vec<(Range<usize>, Option<ferrite_blocktoken::Token>)>,
    ) -> Self {
        let tokens = tokens
            .into_iter()
            .map(|(r, t)| (r, t.map(|t| t.into_proto()).unwrap_or_default()));
        LocatedReply::new(pool, file_len, under_construction, tokens)
    }

    fn push(&mut self, block: &Placed, replicas: &[(NodeIx, u8)], nodes: &Registry, is_last: bool) {
        LocatedReply::push(self, block, replicas, nodes, is_last)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use ferrite_proto::hdfs::{GetBlockLocationsResponseProto, LocatedBlocksProto};

    use super::*;
    use crate::blocks::registry::{NodeId, StorageState};
    use crate::namespace::inode::Block;

    /// The addBlock path's LocatedBlock message, with `token`.
    fn located(
        pool: &str,
        p: &Placed,
        reg: &Registry,
        locs: &[(NodeIx, u8)],
        token: TokenProto,
    ) -> ferrite_proto::hdfs::LocatedBlockProto {
        let lb = crate::service::LocatedBlock::new(p, reg, locs);
        ferrite_proto::hdfs::LocatedBlockProto {
            block_token: token,
            ..crate::rpc::convert::located_block(pool, &lb)
        }
    }

    const POOL: &str = "BP-7-127.0.0.1-1";

    fn registry(n: usize) -> Registry {
        let mut r = Registry::default();
        for i in 0..n {
            let id = NodeId {
                ip: format!("10.0.0.{i}"),
                host: format!("dn{i}.example"),
                uuid: format!("uuid-{i}"),
                xfer_port: 9866 + i as u32,
                info_port: 9864,
                ipc_port: 9867,
            };
            let ix = r.register(id, 1_000 + i as i64).unwrap();
            for s in 0..2 {
                r.get_mut(ix).storages.push(StorageState {
                    storage_type: 1,
                    uuid: format!("DS-{i}-{s}"),
                    failed: false,
                    capacity: 1 << 40,
                    dfs_used: 12_345 * i as u64,
                    remaining: (1 << 39) + i as u64,
                });
            }
        }
        r
    }

    fn token(tag: &str) -> TokenProto {
        TokenProto {
            identifier: Bytes::from(format!("id-{tag}")),
            password: Bytes::from_static(&[7; 20]),
            kind: "HDFS_BLOCK_TOKEN".into(),
            service: String::new(),
        }
    }

    fn placed(i: u64, len: u64) -> Placed {
        Placed {
            block: Block {
                id: (1 << 30) + i,
                gs: 1001 + i,
                len,
            },
            offset: (i * 128) << 20,
        }
    }

    /// Encodes the same reply through `LocatedReply` and through prost messages built by
    /// the addBlock path's `located`, and checks the bytes are the same.
    fn same_bytes(
        blocks: &[(Placed, Vec<(NodeIx, u8)>)],
        last: Option<(Placed, Vec<(NodeIx, u8)>)>,
        tokens: &[(Range<usize>, TokenProto)],
        under_construction: bool,
    ) {
        let reg = registry(3);
        let mut reply = LocatedReply::new(POOL, 4242, under_construction, tokens.to_vec());
        let token_at = |i: usize| {
            tokens
                .iter()
                .find(|(r, _)| r.contains(&i))
                .map(|(_, t)| t.clone())
                .unwrap_or_default()
        };
        let mut expected = LocatedBlocksProto {
            file_length: 4242,
            under_construction,
            is_last_block_complete: !under_construction,
            ..Default::default()
        };
        for (i, (p, locs)) in blocks.iter().enumerate() {
            reply.push(p, locs, &reg, false);
            expected
                .blocks
                .push(located(POOL, p, &reg, locs, token_at(i)));
        }
        if let Some((p, locs)) = &last {
            reply.push(p, locs, &reg, true);
            expected.last_block = Some(located(POOL, p, &reg, locs, token_at(blocks.len())));
        }
        let reply = reply.finish();
        let mut ours = BytesMut::with_capacity(reply.encoded_len());
        reply.encode_into(&mut ours);
        let theirs = GetBlockLocationsResponseProto {
            locations: Some(expected),
        }
        .encode_to_vec();
        assert_eq!(reply.encoded_len(), theirs.len());
        assert_eq!(&ours[..], &theirs[..]);
    }

    #[test]
    fn a_reply_encodes_as_prost_would() {
        let blocks: Vec<_> = (0..300)
            .map(|i| {
                (
                    placed(i, 128 << 20),
                    vec![
                        ((i % 3) as NodeIx, (i % 2) as u8),
                        ((i + 1) as NodeIx % 3, 0),
                    ],
                )
            })
            .collect();
        let last = Some((placed(299, 128 << 20), vec![(2, 1)]));
        same_bytes(&blocks, last, &[(0..301, token("a"))], false);
    }

    #[test]
    fn several_token_groups_and_a_block_being_written() {
        let blocks: Vec<_> = (0..20)
            .map(|i| (placed(i * 977, 1 << 20), vec![(0, 0)]))
            .collect();
        let last = Some((placed(20_000, 5), vec![(1, 1), (0, 1), (2, 0)]));
        let tokens = [(0..16, token("a")), (16..21, token("b"))];
        same_bytes(&blocks, last, &tokens, true);
    }

    #[test]
    fn empty_files_missing_replicas_and_tokens_off() {
        same_bytes(&[], None, &[(0..0, TokenProto::default())], false);
        same_bytes(&[], None, &[], true);
        let blocks = vec![(placed(0, 0), vec![]), (placed(1, 9), vec![(1, 0)])];
        same_bytes(&blocks, None, &[(0..2, TokenProto::default())], false);
    }
}
