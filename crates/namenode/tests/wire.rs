//! The IPC server under bad and tricky input, against a real NameNode on 127.0.0.1:0.
//! Each case also checks that other clients keep being served.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use ferrite_ipc::client::{ClientError, IpcClient};
use ferrite_ipc::frame::{self, AuthProtocol};
use ferrite_ipc::CLIENT_PROTOCOL;
use ferrite_namenode::{Config, NameNode, NameNodeHandle};
use ferrite_proto::common::rpc_response_header_proto::RpcStatusProto;
use ferrite_proto::common::rpc_sasl_proto::{SaslAuth, SaslState};
use ferrite_proto::common::*;
use ferrite_proto::hdfs::*;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

async fn start(cfg: Config) -> NameNodeHandle {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    NameNode::start(cfg, listener).await.unwrap()
}

async fn client(addr: SocketAddr) -> IpcClient {
    IpcClient::connect(addr, "tester", CLIENT_PROTOCOL)
        .await
        .unwrap()
}

/// A client that runs as the NameNode's own user, the superuser.
async fn su_client(nn: &NameNodeHandle) -> IpcClient {
    IpcClient::connect(nn.addr, nn.state.superuser(), CLIENT_PROTOCOL)
        .await
        .unwrap()
}

/// A healthy client still gets answers.
async fn still_serving(addr: SocketAddr) {
    let c = client(addr).await;
    let r: GetFileInfoResponseProto = c
        .call("getFileInfo", &GetFileInfoRequestProto { src: "/".into() })
        .await
        .unwrap();
    assert!(r.fs.is_some());
}

fn rpc_header(call_id: i32) -> RpcRequestHeaderProto {
    RpcRequestHeaderProto {
        rpc_kind: Some(2),
        rpc_op: Some(0),
        call_id,
        client_id: vec![9; 16].into(),
        retry_count: Some(0),
        ..Default::default()
    }
}

fn context() -> Bytes {
    let ctx = IpcConnectionContextProto {
        user_info: Some(UserInformationProto {
            effective_user: Some("tester".into()),
            real_user: None,
        }),
        protocol: Some(CLIENT_PROTOCOL.into()),
    };
    frame::encode_frame(&[&rpc_header(frame::CALL_ID_CONNECTION_CONTEXT), &ctx])
}

fn call_frame(call_id: i32, protocol: &str, method: &str, body: &[u8]) -> Bytes {
    let mh = RequestHeaderProto {
        method_name: method.into(),
        declaring_class_protocol_name: protocol.into(),
        client_protocol_version: 1,
    };
    let raw = frame::RawBody(Bytes::copy_from_slice(body));
    frame::encode_frame(&[&rpc_header(call_id), &mh, &raw])
}

/// A raw connection past the preamble and context.
async fn raw_ready(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&frame::preamble(AuthProtocol::None))
        .await
        .unwrap();
    s.write_all(&context()).await.unwrap();
    s
}

/// Reads one response frame: its header and (on success) the body bytes.
async fn read_response(s: &mut TcpStream) -> Option<(RpcResponseHeaderProto, Bytes)> {
    let len = tokio::time::timeout(Duration::from_secs(5), s.read_u32())
        .await
        .expect("reply in time")
        .ok()?;
    let mut buf = vec![0; len as usize];
    s.read_exact(&mut buf).await.ok()?;
    let mut b = Bytes::from(buf);
    let h = frame::decode_delimited::<RpcResponseHeaderProto>(&mut b, "header").unwrap();
    let body = if h.status == RpcStatusProto::Success as i32 {
        frame::split_delimited(&mut b).unwrap()
    } else {
        Bytes::new()
    };
    assert!(b.is_empty(), "frame length matches header and body exactly");
    Some((h, body))
}

async fn assert_closed(s: &mut TcpStream) {
    let mut buf = [0u8; 256];
    loop {
        match tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
            .await
            .expect("server closes the connection")
        {
            Ok(0) | Err(_) => return,
            Ok(_) => continue,
        }
    }
}

#[tokio::test]
async fn wrong_preambles_are_refused_and_closed() {
    let nn = start(Config::default()).await;
    let mut http = TcpStream::connect(nn.addr).await.unwrap();
    http.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    let mut text = String::new();
    http.read_to_string(&mut text).await.unwrap();
    assert!(text.starts_with("HTTP/1.1 404"), "{text}");
    assert!(text.contains("Hadoop IPC port"));

    let mut old = TcpStream::connect(nn.addr).await.unwrap();
    old.write_all(b"hrpc\x07\x00\x00").await.unwrap();
    let (h, _) = read_response(&mut old).await.unwrap();
    assert_eq!(h.status, RpcStatusProto::Fatal as i32);
    assert_eq!(
        h.exception_class_name.as_deref(),
        Some("org.apache.hadoop.ipc.RPC$VersionMismatch")
    );
    assert_closed(&mut old).await;

    let mut junk = TcpStream::connect(nn.addr).await.unwrap();
    junk.write_all(b"\x00\x01\x02\x03\x04\x05\x06")
        .await
        .unwrap();
    assert_closed(&mut junk).await;
    still_serving(nn.addr).await;
    nn.shutdown().await;
}

#[tokio::test]
async fn frame_over_the_limit_closes_only_that_connection() {
    let cfg = Config {
        max_frame_len: 4096,
        ..Default::default()
    };
    let nn = start(cfg).await;
    let healthy = client(nn.addr).await;
    let mut s = raw_ready(nn.addr).await;
    s.write_all(&(1u32 << 30).to_be_bytes()).await.unwrap();
    assert_closed(&mut s).await;
    // An honest call just over the limit is refused the same way.
    let big = GetFileInfoRequestProto {
        src: format!("/{}", "x".repeat(5000)),
    };
    let e = healthy
        .call::<_, GetFileInfoResponseProto>("getFileInfo", &big)
        .await;
    assert!(e.is_err());
    still_serving(nn.addr).await;
    nn.shutdown().await;
}

#[tokio::test]
async fn truncated_frame_closes_only_that_connection() {
    let nn = start(Config::default()).await;
    let mut s = raw_ready(nn.addr).await;
    s.write_all(&100u32.to_be_bytes()).await.unwrap();
    s.write_all(&[1, 2, 3, 4, 5]).await.unwrap();
    s.shutdown().await.unwrap();
    assert_closed(&mut s).await;
    still_serving(nn.addr).await;
    nn.shutdown().await;
}

#[tokio::test]
async fn malformed_body_gets_an_error_and_the_connection_survives() {
    let nn = start(Config::default()).await;
    let mut s = raw_ready(nn.addr).await;
    // Field 1 (src) claims 100 bytes that are not there.
    s.write_all(&call_frame(
        1,
        CLIENT_PROTOCOL,
        "getFileInfo",
        &[0x0a, 100, b'/'],
    ))
    .await
    .unwrap();
    let (h, _) = read_response(&mut s).await.unwrap();
    assert_eq!((h.call_id, h.status), (1, RpcStatusProto::Error as i32));
    assert_eq!(
        h.exception_class_name.as_deref(),
        Some("org.apache.hadoop.ipc.RpcServerException")
    );
    // Same connection, good call.
    let ok = GetFileInfoRequestProto { src: "/".into() }.encode_to_vec();
    s.write_all(&call_frame(2, CLIENT_PROTOCOL, "getFileInfo", &ok))
        .await
        .unwrap();
    let (h, body) = read_response(&mut s).await.unwrap();
    assert_eq!((h.call_id, h.status), (2, RpcStatusProto::Success as i32));
    assert!(GetFileInfoResponseProto::decode(body).unwrap().fs.is_some());
    // A malformed RPC header is fatal: FATAL reply, then close.
    s.write_all(&[0, 0, 0, 3, 2, 0xff, 0xff]).await.unwrap();
    let (h, _) = read_response(&mut s).await.unwrap();
    assert_eq!(h.status, RpcStatusProto::Fatal as i32);
    assert_closed(&mut s).await;
    still_serving(nn.addr).await;
    nn.shutdown().await;
}

#[tokio::test]
async fn unknown_method_and_protocol_get_hadoop_errors() {
    let nn = start(Config::default()).await;
    let c = client(nn.addr).await;
    let e = c
        .call::<_, MsyncResponseProto>("noSuchMethod", &MsyncRequestProto {})
        .await
        .unwrap_err();
    assert_eq!(
        e.class(),
        Some("org.apache.hadoop.ipc.RpcNoSuchMethodException")
    );
    let mut s = raw_ready(nn.addr).await;
    s.write_all(&call_frame(4, "org.example.Nope", "x", &[]))
        .await
        .unwrap();
    let (h, _) = read_response(&mut s).await.unwrap();
    assert_eq!(
        h.exception_class_name.as_deref(),
        Some("org.apache.hadoop.ipc.RpcNoSuchProtocolException")
    );
    assert_eq!(
        h.client_id.as_deref(),
        Some(&[9u8; 16][..]),
        "clientId is echoed"
    );
    // Still usable after both.
    let r: GetFileInfoResponseProto = c
        .call("getFileInfo", &GetFileInfoRequestProto { src: "/".into() })
        .await
        .unwrap();
    assert!(r.fs.is_some());
    nn.shutdown().await;
}

#[tokio::test]
async fn calls_before_the_context_are_fatal() {
    let nn = start(Config::default()).await;
    let mut s = TcpStream::connect(nn.addr).await.unwrap();
    s.write_all(&frame::preamble(AuthProtocol::None))
        .await
        .unwrap();
    s.write_all(&call_frame(0, CLIENT_PROTOCOL, "msync", &[]))
        .await
        .unwrap();
    let (h, _) = read_response(&mut s).await.unwrap();
    assert_eq!(h.status, RpcStatusProto::Fatal as i32);
    assert_closed(&mut s).await;
    nn.shutdown().await;
}

#[tokio::test]
async fn sasl_simple_negotiation_then_calls() {
    let nn = start(Config::default()).await;
    let mut s = TcpStream::connect(nn.addr).await.unwrap();
    s.write_all(&frame::preamble(AuthProtocol::Sasl))
        .await
        .unwrap();
    let negotiate = RpcSaslProto {
        state: SaslState::Negotiate as i32,
        ..Default::default()
    };
    let mut h = rpc_header(frame::CALL_ID_SASL);
    h.client_id.clear();
    h.retry_count = Some(-1);
    s.write_all(&frame::encode_frame(&[&h, &negotiate]))
        .await
        .unwrap();
    let (rh, body) = read_response(&mut s).await.unwrap();
    assert_eq!(rh.call_id as i32, frame::CALL_ID_SASL);
    let reply = RpcSaslProto::decode(body).unwrap();
    assert_eq!(reply.state, SaslState::Success as i32);
    // A client may still send INITIATE(SIMPLE); it gets no answer.
    let initiate = RpcSaslProto {
        state: SaslState::Initiate as i32,
        auths: vec![SaslAuth {
            method: "SIMPLE".into(),
            mechanism: String::new(),
            ..Default::default()
        }],
        ..Default::default()
    };
    s.write_all(&frame::encode_frame(&[&h, &initiate]))
        .await
        .unwrap();
    s.write_all(&context()).await.unwrap();
    // A ping gets no answer either; the next reply must be for call 3.
    s.write_all(&frame::encode_frame(&[&rpc_header(frame::CALL_ID_PING)]))
        .await
        .unwrap();
    s.write_all(&call_frame(3, CLIENT_PROTOCOL, "msync", &[]))
        .await
        .unwrap();
    let (rh, _) = read_response(&mut s).await.unwrap();
    assert_eq!((rh.call_id, rh.status), (3, RpcStatusProto::Success as i32));
    nn.shutdown().await;
}

#[tokio::test]
async fn sasl_kerberos_is_refused() {
    let nn = start(Config::default()).await;
    let mut s = TcpStream::connect(nn.addr).await.unwrap();
    s.write_all(&frame::preamble(AuthProtocol::Sasl))
        .await
        .unwrap();
    let initiate = RpcSaslProto {
        state: SaslState::Initiate as i32,
        auths: vec![SaslAuth {
            method: "KERBEROS".into(),
            mechanism: "GSSAPI".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    s.write_all(&frame::encode_frame(&[
        &rpc_header(frame::CALL_ID_SASL),
        &initiate,
    ]))
    .await
    .unwrap();
    let (rh, _) = read_response(&mut s).await.unwrap();
    assert_eq!(rh.status, RpcStatusProto::Fatal as i32);
    assert_eq!(
        rh.exception_class_name.as_deref(),
        Some("org.apache.hadoop.security.AccessControlException")
    );
    assert_closed(&mut s).await;
    nn.shutdown().await;
}

fn create_req(src: &str) -> CreateRequestProto {
    CreateRequestProto {
        src: src.into(),
        masked: FsPermissionProto { perm: 0o644 },
        client_name: "retry-client".into(),
        create_flag: 0x01,
        create_parent: true,
        replication: 1,
        block_size: 128 << 20,
        ..Default::default()
    }
}

#[tokio::test]
async fn retried_non_idempotent_calls_are_not_applied_twice() {
    let nn = start(Config::default()).await;
    let c = su_client(&nn).await;
    let first = c
        .call_with_id(100, 0, "create", &create_req("/r/f"))
        .await
        .unwrap();
    // The retry (same clientId and callId) replays the first answer instead of failing with
    // FileAlreadyExistsException.
    let again = c
        .call_with_id(100, 1, "create", &create_req("/r/f"))
        .await
        .unwrap();
    assert_eq!(first, again);
    // A new call id really runs, and fails: the file is open under the first call's lease.
    let e = c
        .call_with_id(101, 0, "create", &create_req("/r/f"))
        .await
        .unwrap_err();
    assert_eq!(
        e.class(),
        Some("org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException")
    );

    let done = CompleteRequestProto {
        src: "/r/f".into(),
        client_name: "retry-client".into(),
        last: None,
        file_id: None,
    };
    let _: CompleteResponseProto = c.call("complete", &done).await.unwrap();
    let ren = RenameRequestProto {
        src: "/r/f".into(),
        dst: "/r/g".into(),
    };
    let r1 =
        RenameResponseProto::decode(c.call_with_id(200, 0, "rename", &ren).await.unwrap()).unwrap();
    let r2 =
        RenameResponseProto::decode(c.call_with_id(200, 1, "rename", &ren).await.unwrap()).unwrap();
    assert!(
        r1.result && r2.result,
        "the retry must not see the moved source and answer false"
    );
    let del = DeleteRequestProto {
        src: "/r/g".into(),
        recursive: false,
    };
    let d1 =
        DeleteResponseProto::decode(c.call_with_id(300, 0, "delete", &del).await.unwrap()).unwrap();
    let d2 =
        DeleteResponseProto::decode(c.call_with_id(300, 1, "delete", &del).await.unwrap()).unwrap();
    assert!(d1.result && d2.result);
    let snap = nn.router.metrics();
    let hits: u64 = snap.iter().map(|m| m.retry_cache_hits).sum();
    assert_eq!(hits, 3);
    nn.shutdown().await;
}

/// The status fields HDFS 3.4.1's NameNode answers for a new file (checked against one
/// with a raw client): no name for `getFileInfo`, childrenNum 0 (not the field's default
/// of -1), storage policy and flags 0; a directory counts its entries.
#[tokio::test]
async fn file_status_fields_are_as_hdfs_answers_them() {
    let nn = start(Config::default()).await;
    let c = su_client(&nn).await;
    let created: CreateResponseProto = c.call("create", &create_req("/s/f")).await.unwrap();
    let info = |src: &str| GetFileInfoRequestProto { src: src.into() };
    let got: GetFileInfoResponseProto = c.call("getFileInfo", &info("/s/f")).await.unwrap();
    for fs in [created.fs.unwrap(), got.fs.unwrap()] {
        assert_eq!(
            fs.file_type,
            hdfs_file_status_proto::FileType::IsFile as i32
        );
        assert!(fs.path.is_empty());
        assert_eq!(
            (fs.children_num, fs.storage_policy, fs.flags),
            (Some(0), Some(0), Some(0))
        );
        assert_eq!((fs.block_replication, fs.length), (Some(1), 0));
    }
    let dir: GetFileInfoResponseProto = c.call("getFileInfo", &info("/s")).await.unwrap();
    assert_eq!(dir.fs.unwrap().children_num, Some(1));
    nn.shutdown().await;
}

#[tokio::test]
async fn many_concurrent_calls_on_one_connection() {
    let nn = start(Config::default()).await;
    let c = std::sync::Arc::new(su_client(&nn).await);
    let mut tasks = Vec::new();
    for i in 0..300 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            let req = mkdirs_req(&format!("/conc/d{i}"));
            let r: MkdirsResponseProto = c.call("mkdirs", &req).await?;
            let st: GetFileInfoResponseProto = c
                .call(
                    "getFileInfo",
                    &GetFileInfoRequestProto {
                        src: format!("/conc/d{i}"),
                    },
                )
                .await?;
            Ok::<_, ClientError>(r.result && st.fs.is_some())
        }));
    }
    for t in tasks {
        assert!(t.await.unwrap().unwrap());
    }
    let l: GetListingResponseProto = c
        .call(
            "getListing",
            &GetListingRequestProto {
                src: "/conc".into(),
                start_after: vec![],
                need_location: false,
            },
        )
        .await
        .unwrap();
    assert_eq!(l.dir_list.unwrap().partial_listing.len(), 300);
    nn.shutdown().await;
}

/// Sends setSafeMode with `action` and returns whether safe mode is on afterwards.
async fn safe_mode(admin: &IpcClient, action: SafeModeActionProto) -> bool {
    let req = SetSafeModeRequestProto {
        action: action as i32,
        checked: None,
    };
    let r: SetSafeModeResponseProto = admin.call("setSafeMode", &req).await.unwrap();
    r.result
}

/// `mkdir -p path`, mode 755.
fn mkdirs_req(path: &str) -> MkdirsRequestProto {
    MkdirsRequestProto {
        src: path.into(),
        masked: FsPermissionProto { perm: 0o755 },
        create_parent: true,
        unmasked: None,
    }
}

/// A mkdirs that safe mode must refuse; returns the refusal.
async fn mkdirs_refused_in_safe_mode(c: &IpcClient, path: &str) -> ClientError {
    let e = c
        .call::<_, MkdirsResponseProto>("mkdirs", &mkdirs_req(path))
        .await
        .unwrap_err();
    assert_eq!(
        e.class(),
        Some("org.apache.hadoop.hdfs.server.namenode.SafeModeException")
    );
    e
}

#[tokio::test]
async fn safe_mode_blocks_mutations_until_left() {
    let nn = start(Config::default()).await;
    // The NameNode's own user is the superuser; the test process is that user.
    let admin = su_client(&nn).await;
    assert!(safe_mode(&admin, SafeModeActionProto::SafemodeEnter).await);
    mkdirs_refused_in_safe_mode(&admin, "/sm").await;
    // Reads still work, and a non-superuser cannot leave safe mode.
    still_serving(nn.addr).await;
    let other = client(nn.addr).await;
    let leave = SetSafeModeRequestProto {
        action: SafeModeActionProto::SafemodeLeave as i32,
        checked: None,
    };
    let e = other
        .call::<_, SetSafeModeResponseProto>("setSafeMode", &leave)
        .await
        .unwrap_err();
    assert_eq!(
        e.class(),
        Some("org.apache.hadoop.security.AccessControlException")
    );
    assert!(!safe_mode(&admin, SafeModeActionProto::SafemodeLeave).await);
    let r: MkdirsResponseProto = admin.call("mkdirs", &mkdirs_req("/sm")).await.unwrap();
    assert!(r.result);
    nn.shutdown().await;
}

/// Asks for the safe-mode state until it is `want`, for at most ten seconds.
async fn await_safe_mode(admin: &IpcClient, want: bool) {
    for _ in 0..200 {
        if safe_mode(admin, SafeModeActionProto::SafemodeGet).await == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("safe mode never became {want}");
}

/// With less free space in the journal's directory than it must keep (here: a reserve no
/// disk has), the NameNode enters safe mode by itself: mutations get a SafeModeException
/// that says why, reads go on, and leaving by hand lasts only until the next check.
#[tokio::test]
async fn low_journal_space_enters_safe_mode_and_again_after_a_leave_while_short() {
    let dir = tempfile::tempdir().unwrap();
    let nn = start(Config {
        name_dirs: vec![dir.path().join("name")],
        resource_reserved_bytes: u64::MAX,
        resource_check_interval_ms: 50,
        ..Default::default()
    })
    .await;
    let admin = su_client(&nn).await;
    await_safe_mode(&admin, true).await;
    let e = mkdirs_refused_in_safe_mode(&admin, "/full").await;
    assert!(e.to_string().contains("Resources are low"), "{e}");
    still_serving(nn.addr).await;

    assert!(!safe_mode(&admin, SafeModeActionProto::SafemodeLeave).await);
    await_safe_mode(&admin, true).await;
    nn.shutdown().await;
}
