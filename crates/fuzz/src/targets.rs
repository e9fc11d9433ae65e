//! The decoders, each with its seeds and its check.
//!
//! Formats that carry checksums (journal records, images, the summary checkpoint) have
//! them recomputed on every input before it is decoded: otherwise nearly every mutation
//! stops at the checksum and the structure behind it is never tried. The checksum checks
//! themselves are exercised by the unrepaired `journal-frame` target and the unit tests.

use std::cell::RefCell;
use std::sync::Arc;

use bytes::Bytes;
use ferrite_ipc::frame;
use ferrite_ipc::{CallCtx, Router};
use ferrite_namenode::blocks::report;
use ferrite_namenode::config::Config;
use ferrite_namenode::journal::codec;
use ferrite_namenode::namespace::plan::CreateArgs;
use ferrite_namenode::namespace::{Caller, Namespace, Op};
use ferrite_namenode::service::NameNodeService;
use ferrite_namenode::summary::{self, Summary};
use ferrite_proto::common::{RequestHeaderProto, RpcRequestHeaderProto};
use ferrite_proto::datanode::StorageBlockReportProto;
use ferrite_proto::hdfs::*;
use ferrite_transfer::{checksum, io as tio, op, packet};
use prost::Message;

use crate::Target;

pub static TARGETS: &[Target] = &[
    Target {
        name: "ipc-connection",
        what: "an IPC connection's bytes: preamble, frame lengths, RPC headers, the connection context, SASL and call headers",
        seeds: ipc_seeds,
        check: ipc_connection,
    },
    Target {
        name: "ipc-dispatch",
        what: "the body of every NameNode RPC method, dispatched to an in-memory NameNode",
        seeds: dispatch_seeds,
        check: ipc_dispatch,
    },
    Target {
        name: "transfer-op",
        what: "a DataTransferProtocol op: version, op code, its request, then packets",
        seeds: op_seeds,
        check: transfer_op,
    },
    Target {
        name: "transfer-packet",
        what: "data packets as a pipeline or reader receives them",
        seeds: packet_seeds,
        check: transfer_packets,
    },
    Target {
        name: "block-meta-header",
        what: "a replica's .meta file header",
        seeds: meta_seeds,
        check: meta_header,
    },
    Target {
        name: "journal-frame",
        what: "journal segment bytes as written, checksums and all",
        seeds: journal_seeds,
        check: journal_frames,
    },
    Target {
        name: "journal-record",
        what: "journal records behind valid checksums: every op's encoding",
        seeds: journal_seeds,
        check: journal_records,
    },
    Target {
        name: "image",
        what: "a checkpoint image behind valid checksums: header, sections, inodes",
        seeds: image_seeds,
        check: image,
    },
    Target {
        name: "block-report",
        what: "a storage's block report, in both encodings",
        seeds: report_seeds,
        check: block_report,
    },
    Target {
        name: "summary-checkpoint",
        what: "the namespace summary's checkpoint behind a valid checksum",
        seeds: summary_seeds,
        check: summary_checkpoint,
    },
];

/// An error must say what is wrong.
fn said(e: impl std::fmt::Display) -> Result<(), String> {
    if e.to_string().trim().is_empty() {
        return Err("an error without a message".into());
    }
    Ok(())
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    RUNTIME.with(|rt| rt.block_on(f))
}

// ---- IPC -------------------------------------------------------------------------------

/// A frame as a client writes it: a big-endian length, then the parts (each
/// varint-delimited).
fn rpc_frame(parts: &[Vec<u8>]) -> Vec<u8> {
    let body = parts.concat();
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend(body);
    out
}

fn delimited<M: Message>(m: &M) -> Vec<u8> {
    m.encode_length_delimited_to_vec()
}

fn rpc_header(call_id: i32) -> RpcRequestHeaderProto {
    RpcRequestHeaderProto {
        rpc_kind: Some(2),
        rpc_op: Some(0),
        call_id,
        client_id: Bytes::from_static(&[7; 16]),
        retry_count: Some(-1),
        ..Default::default()
    }
}

fn ipc_seeds() -> Vec<Vec<u8>> {
    let mut conn = b"hrpc\x09\x00\x00".to_vec();
    let ctx = ferrite_proto::common::IpcConnectionContextProto {
        user_info: Some(ferrite_proto::common::UserInformationProto {
            effective_user: Some("alice".into()),
            real_user: None,
        }),
        protocol: Some("org.apache.hadoop.hdfs.protocol.ClientProtocol".into()),
    };
    let h = rpc_header(-3);
    conn.extend(rpc_frame(&[delimited(&h), delimited(&ctx)]));
    let call = rpc_header(0);
    let method = RequestHeaderProto {
        method_name: "getFileInfo".into(),
        declaring_class_protocol_name: "org.apache.hadoop.hdfs.protocol.ClientProtocol".into(),
        client_protocol_version: 1,
    };
    let req = GetFileInfoRequestProto { src: "/a".into() };
    conn.extend(rpc_frame(&[
        delimited(&call),
        delimited(&method),
        delimited(&req),
    ]));
    vec![conn]
}

/// Walks a connection's bytes as the server reads them, with a small frame limit.
fn ipc_connection(input: &[u8]) -> Result<(), String> {
    const MAX_FRAME: u32 = 64 << 10;
    if input.len() < 7 {
        return Ok(());
    }
    let pre: [u8; 7] = input[..7].try_into().expect("7 bytes");
    if let Err(e) = frame::check_preamble(&pre) {
        return said(e);
    }
    let mut rest = &input[7..];
    while let Some(len) = frame::peek_frame_len(rest) {
        if len > MAX_FRAME {
            return Ok(()); // refused before anything is read or allocated
        }
        let end = 4 + len as usize;
        if rest.len() < end {
            return Ok(()); // waits for more bytes
        }
        let body = Bytes::copy_from_slice(&rest[4..end]);
        rest = &rest[end..];
        let req = match frame::parse_request(body) {
            Ok(r) => r,
            Err(e) => return said(e),
        };
        match req.header.call_id {
            -3 => {
                let mut b = req.rest;
                if let Err(e) = frame::decode_delimited::<
                    ferrite_proto::common::IpcConnectionContextProto,
                >(&mut b, "IpcConnectionContextProto")
                {
                    return said(e);
                }
            }
            -33 => {
                let mut b = req.rest;
                if let Err(e) = frame::decode_delimited::<ferrite_proto::common::RpcSaslProto>(
                    &mut b,
                    "RpcSaslProto",
                ) {
                    return said(e);
                }
            }
            _ => {
                if let Err(e) = frame::parse_call(req.rest) {
                    return said(e);
                }
            }
        }
    }
    Ok(())
}

/// A NameNode to dispatch to, made afresh every so many inputs so that what random
/// mutations create does not pile up.
struct Served {
    router: Arc<Router<NameNodeService>>,
    methods: Vec<(&'static str, &'static str)>,
    uses: u32,
}

thread_local! {
    static SERVED: RefCell<Option<Served>> = const { RefCell::new(None) };
}

fn served() -> Served {
    let nn = Arc::new(NameNodeService::in_memory(Config::default(), "hdfs"));
    let router = Arc::new(ferrite_namenode::rpc::router(nn));
    // readEdits waits up to the wait a follower asks for (30 s at most) when nothing is
    // newer than what it names: a wait, not a hang, but not one to sit through a million
    // times. Its request is a plain message decoded as every other is.
    let methods = router
        .metrics()
        .into_iter()
        .filter(|m| m.method != "readEdits")
        .map(|m| (m.protocol, m.method))
        .collect();
    Served {
        router,
        methods,
        uses: 0,
    }
}

fn dispatch_seeds() -> Vec<Vec<u8>> {
    // The method table of one NameNode: the order every `served()` one has.
    let methods = served().methods;
    let with = |name: &str, body: Vec<u8>| {
        let index = methods
            .iter()
            .position(|(_, m)| *m == name)
            .expect("a served method") as u16;
        let mut out = index.to_be_bytes().to_vec();
        out.extend(body);
        out
    };
    vec![
        with(
            "mkdirs",
            MkdirsRequestProto {
                src: "/a/b".into(),
                masked: FsPermissionProto { perm: 0o755 },
                create_parent: true,
                unmasked: None,
            }
            .encode_to_vec(),
        ),
        with(
            "create",
            CreateRequestProto {
                src: "/a/f".into(),
                masked: FsPermissionProto { perm: 0o644 },
                client_name: "c".into(),
                create_flag: 1,
                create_parent: true,
                replication: 3,
                block_size: 1 << 20,
                ..Default::default()
            }
            .encode_to_vec(),
        ),
        with(
            "getListing",
            GetListingRequestProto {
                src: "/".into(),
                start_after: Vec::new(),
                need_location: true,
            }
            .encode_to_vec(),
        ),
        with(
            "rename2",
            Rename2RequestProto {
                src: "/a".into(),
                dst: "/b".into(),
                overwrite_dest: true,
                move_to_trash: None,
            }
            .encode_to_vec(),
        ),
        with(
            "getBlockLocations",
            GetBlockLocationsRequestProto {
                src: "/a/f".into(),
                offset: 0,
                length: u64::MAX,
            }
            .encode_to_vec(),
        ),
    ]
}

/// The first two bytes pick a method, the rest is its body.
fn ipc_dispatch(input: &[u8]) -> Result<(), String> {
    if input.len() < 2 {
        return Ok(());
    }
    SERVED.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.as_ref().is_none_or(|s| s.uses >= 2048) {
            *cell = Some(served());
        }
        let s = cell.as_mut().expect("just made");
        s.uses += 1;
        let pick = u16::from_be_bytes([input[0], input[1]]) as usize % s.methods.len();
        let (protocol, method) = s.methods[pick];
        let ctx = CallCtx {
            user: Arc::from("hdfs"),
            real_user: None,
            peer: "127.0.0.1:50000".parse().expect("an address"),
            peer_ip: Arc::from("127.0.0.1"),
            conn_id: 1,
            call_id: 1,
            client_id: Bytes::from_static(&[1; 16]),
            retry_count: -1,
        };
        let body = Bytes::copy_from_slice(&input[2..]);
        match block_on(s.router.dispatch(ctx, protocol, method, body)) {
            Ok(_) => Ok(()),
            Err(e) => said(format!("{e:?}")),
        }
    })
}

// ---- DataTransferProtocol ---------------------------------------------------------------

fn op_seeds() -> Vec<Vec<u8>> {
    let block = ExtendedBlockProto {
        pool_id: "BP-1".into(),
        block_id: 1 << 30,
        generation_stamp: 1001,
        num_bytes: Some(10),
    };
    let header = BaseHeaderProto {
        block: block.clone(),
        token: None,
        trace_info: None,
    };
    let client = ClientOperationHeaderProto {
        base_header: header.clone(),
        client_name: "c".into(),
    };
    let read = OpReadBlockProto {
        header: client.clone(),
        offset: 0,
        len: 10,
        send_checksums: Some(true),
        caching_strategy: None,
    };
    let write = OpWriteBlockProto {
        header: client,
        stage: 6,
        pipeline_size: 1,
        min_bytes_rcvd: 0,
        max_bytes_rcvd: 0,
        latest_generation_stamp: 1001,
        requested_checksum: ChecksumProto {
            r#type: ChecksumTypeProto::ChecksumCrc32c as i32,
            bytes_per_checksum: 512,
        },
        ..Default::default()
    };
    let mut w = tio::op_bytes(op::WRITE_BLOCK, &write);
    w.extend(packet_seeds().concat());
    vec![
        tio::op_bytes(op::READ_BLOCK, &read),
        w,
        tio::op_bytes(
            op::BLOCK_CHECKSUM,
            &OpBlockChecksumProto {
                header,
                ..Default::default()
            },
        ),
    ]
}

fn transfer_op(input: &[u8]) -> Result<(), String> {
    let mut r = input;
    block_on(async {
        let code = match tio::read_op(&mut r).await {
            Ok(Some(c)) => c,
            Ok(None) => return Ok(()),
            Err(e) => return said(e),
        };
        let request = match code {
            op::READ_BLOCK => tio::read_delimited::<OpReadBlockProto, _>(&mut r)
                .await
                .map(drop),
            op::WRITE_BLOCK => tio::read_delimited::<OpWriteBlockProto, _>(&mut r)
                .await
                .map(drop),
            op::BLOCK_CHECKSUM => tio::read_delimited::<OpBlockChecksumProto, _>(&mut r)
                .await
                .map(drop),
            op::TRANSFER_BLOCK => tio::read_delimited::<OpTransferBlockProto, _>(&mut r)
                .await
                .map(drop),
            _ => return Ok(()), // the DataNode answers an unknown op with an error
        };
        if let Err(e) = request {
            return said(e);
        }
        read_packets(&mut r).await
    })
}

const MAX_PACKET: usize = 64 << 10;

async fn read_packets(r: &mut &[u8]) -> Result<(), String> {
    while !r.is_empty() {
        match packet::read(r, MAX_PACKET).await {
            Ok(p) => {
                if p.sums.len() + p.data.len() + 6 > p.raw.len() {
                    return Err("a packet's parts overrun its bytes".into());
                }
            }
            Err(e) => return said(e),
        }
    }
    Ok(())
}

fn packet_seeds() -> Vec<Vec<u8>> {
    let data = vec![7u8; 1000];
    let mut sums = Vec::new();
    checksum::Checksum::CRC32C_512.compute_into(&data, &mut sums);
    let mut out = bytes::BytesMut::new();
    let h = packet::Header {
        data_len: 1000,
        ..Default::default()
    };
    packet::encode(&h, &sums, &data, &mut out);
    let last = packet::Header {
        offset_in_block: 1000,
        seqno: 1,
        last: true,
        ..Default::default()
    };
    packet::encode(&last, &[], &[], &mut out);
    vec![out.to_vec()]
}

fn transfer_packets(input: &[u8]) -> Result<(), String> {
    let mut r = input;
    block_on(read_packets(&mut r))
}

fn meta_seeds() -> Vec<Vec<u8>> {
    vec![checksum::meta_header(&checksum::Checksum::CRC32C_512).to_vec()]
}

fn meta_header(input: &[u8]) -> Result<(), String> {
    match checksum::parse_meta_header(input) {
        Ok(c) if c.bytes_per_checksum == 0 => Err("a zero chunk size was accepted".into()),
        Ok(_) => Ok(()),
        Err(e) => said(e),
    }
}

// ---- NameNode storage --------------------------------------------------------------------

/// A small namespace with directories, files and blocks, and the records that made it.
fn sample_namespace() -> (Namespace, Vec<Op>) {
    let mut ns = Namespace::new("hdfs", "supergroup", 1);
    let su = Caller::superuser("hdfs");
    let mut ops = Vec::new();
    let mut apply = |ns: &mut Namespace, planned: Vec<Op>| {
        for op in planned {
            ns.apply(&op).expect("a planned record applies");
            ops.push(op);
        }
    };
    for d in ["/a/b", "/a/c", "/user/alice"] {
        let p = ns.plan_mkdirs(&su, d, 0o755, true, 2).expect("mkdirs");
        apply(&mut ns, p.ops);
    }
    for f in ["/a/b/f1", "/user/alice/f2"] {
        let args = CreateArgs {
            src: f,
            masked: 0o644,
            unmasked: None,
            client_name: "c",
            client_machine: "127.0.0.1",
            create: true,
            overwrite: false,
            create_parent: false,
            replication: 3,
            block_size: 1 << 20,
        };
        let p = ns.plan_create(&su, &args, 3).expect("create");
        apply(&mut ns, p.ops);
        let (_, p) = ns.plan_add_block(f, "c", 0, None).expect("addBlock");
        apply(&mut ns, p.ops);
    }
    (ns, ops)
}

fn journal_seeds() -> Vec<Vec<u8>> {
    let (_, ops) = sample_namespace();
    let mut all = Vec::new();
    let mut each = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let mut one = Vec::new();
        codec::encode_record(i as u64 + 1, op, &mut one);
        all.extend_from_slice(&one);
        each.push(one);
    }
    each.push(all);
    each
}

/// Reads records until the end or an error, as a segment reader does.
fn read_records(mut buf: &[u8]) -> Result<(), String> {
    loop {
        match codec::decode_record(buf) {
            Ok(codec::Next::End) => return Ok(()),
            Ok(codec::Next::Record { op, size, .. }) => {
                if size == 0 || size > buf.len() {
                    return Err(format!("a record of {size} bytes in {}", buf.len()));
                }
                // What decodes must encode back to what decodes the same.
                let mut again = Vec::new();
                codec::encode_op(&op, &mut again);
                let back = codec::decode_op(&again).map_err(|e| e.to_string())?;
                if back != op {
                    return Err(format!("{op:?} did not survive a round trip: {back:?}"));
                }
                buf = &buf[size..];
            }
            Err(e) => return said(e),
        }
    }
}

fn journal_frames(input: &[u8]) -> Result<(), String> {
    read_records(input)
}

/// Recomputes every record's checksum over the length it claims, where it fits.
fn repair_records(input: &[u8]) -> Vec<u8> {
    let mut b = input.to_vec();
    let mut at = 0;
    while at + codec::RECORD_PREFIX <= b.len() {
        let len = u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes")) as usize;
        let start = at + codec::RECORD_PREFIX;
        if len == 0 || start + len > b.len() {
            break;
        }
        let crc = crc32c::crc32c(&b[start..start + len]);
        b[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
        at = start + len;
    }
    b
}

fn journal_records(input: &[u8]) -> Result<(), String> {
    read_records(&repair_records(input))
}

fn image_seeds() -> Vec<Vec<u8>> {
    let (ns, ops) = sample_namespace();
    vec![ns.encode_image(ops.len() as u64)]
}

/// Recomputes the header's checksum and each section's, as far as the sections' heads read.
fn repair_image(input: &[u8]) -> Vec<u8> {
    let mut b = input.to_vec();
    if b.len() < 20 {
        return b;
    }
    let crc = crc32c::crc32c(&b[..16]);
    b[16..20].copy_from_slice(&crc.to_le_bytes());
    let mut at = 20;
    while at + 16 <= b.len() {
        let len = u64::from_le_bytes(b[at + 4..at + 12].try_into().expect("8 bytes"));
        let start = at + 16;
        let Some(end) = usize::try_from(len).ok().and_then(|l| start.checked_add(l)) else {
            break;
        };
        if end > b.len() {
            break;
        }
        let crc = crc32c::crc32c(&b[start..end]);
        b[at + 12..at + 16].copy_from_slice(&crc.to_le_bytes());
        at = end;
    }
    b
}

fn image(input: &[u8]) -> Result<(), String> {
    match Namespace::decode_image(&repair_image(input)) {
        Ok((ns, _)) => {
            // A loaded image must be one the NameNode can save again and load back.
            let again = ns.encode_image(1);
            Namespace::decode_image(&again)
                .map(drop)
                .map_err(|e| format!("a loaded image does not load once saved: {e}"))
        }
        Err(e) => said(e),
    }
}

fn report_seeds() -> Vec<Vec<u8>> {
    let storage = DatanodeStorageProto {
        storage_uuid: "DS-1".into(),
        ..Default::default()
    };
    let mut buf = Vec::new();
    for i in 0..5u64 {
        ferrite_proto::block_list::push(&mut buf, (1 << 30) + i, 100 * i, 1001, i % 2);
    }
    let compact = StorageBlockReportProto {
        storage: storage.clone(),
        blocks: Vec::new(),
        number_of_blocks: Some(5),
        blocks_buffers: vec![buf],
    };
    let longs = StorageBlockReportProto {
        storage,
        blocks: vec![
            1,
            1,
            1 << 30,
            10,
            1001,
            u64::MAX,
            u64::MAX,
            u64::MAX,
            5,
            3,
            1002,
            1,
        ],
        number_of_blocks: None,
        blocks_buffers: Vec::new(),
    };
    vec![compact.encode_to_vec(), longs.encode_to_vec()]
}

fn block_report(input: &[u8]) -> Result<(), String> {
    let r = match StorageBlockReportProto::decode(input) {
        Ok(r) => r,
        Err(e) => return said(e),
    };
    match report::decode(&r) {
        Ok(replicas) => match r.number_of_blocks {
            Some(n) if n != replicas.len() as u64 => Err(format!(
                "a report of {n} blocks decoded as {}",
                replicas.len()
            )),
            _ => Ok(()),
        },
        Err(e) => said(e),
    }
}

fn summary_seeds() -> Vec<Vec<u8>> {
    let (ns, ops) = sample_namespace();
    vec![summary::codec::encode(&Summary::from_namespace(
        &ns,
        ops.len() as u64,
    ))]
}

fn summary_checkpoint(input: &[u8]) -> Result<(), String> {
    let mut b = input.to_vec();
    if b.len() >= 4 {
        let end = b.len() - 4;
        let crc = crc32c::crc32c(&b[..end]);
        b[end..].copy_from_slice(&crc.to_le_bytes());
    }
    match summary::codec::decode(&b, "fuzz") {
        Ok(s) => {
            let again = summary::codec::encode(&s);
            summary::codec::decode(&again, "again")
                .map(drop)
                .map_err(|e| format!("a loaded checkpoint does not load once saved: {e}"))
        }
        Err(e) => said(e),
    }
}
