//! What mutations answer, over real RPC against a NameNode on 127.0.0.1:0.

use ferrite_ipc::client::IpcClient;
use ferrite_ipc::CLIENT_PROTOCOL;
use ferrite_namenode::{Config, NameNode};
use ferrite_proto::hdfs::hdfs_file_status_proto::FileType;
use ferrite_proto::hdfs::*;
use tokio::net::TcpListener;

fn create_req(src: &str, overwrite: bool) -> CreateRequestProto {
    CreateRequestProto {
        src: src.into(),
        masked: FsPermissionProto { perm: 0o640 },
        client_name: "writer".into(),
        create_flag: if overwrite { 0x03 } else { 0x01 },
        create_parent: true,
        replication: 1,
        block_size: 1 << 20,
        ..Default::default()
    }
}

/// `create` answers with the new file's status, which Hadoop's client keeps as the file's
/// identity (its fileId goes into every later addBlock and complete): for a file whose
/// parents it made, and for one that replaced an older file.
#[tokio::test]
async fn create_answers_with_the_new_files_status() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let nn = NameNode::start(Config::default(), listener).await.unwrap();
    let c = IpcClient::connect(nn.addr, nn.state.superuser(), CLIENT_PROTOCOL)
        .await
        .unwrap();
    let info = |path: &'static str| {
        let c = &c;
        async move {
            let req = GetFileInfoRequestProto { src: path.into() };
            let r: GetFileInfoResponseProto = c.call("getFileInfo", &req).await.unwrap();
            r.fs.expect("the file exists")
        }
    };
    let r: CreateResponseProto = c
        .call("create", &create_req("/made/for/it/f", false))
        .await
        .unwrap();
    let first = r.fs.expect("create answers with a status");
    assert_eq!(first.file_type, FileType::IsFile as i32);
    assert_eq!((first.length, first.permission.perm), (0, 0o640));
    assert_eq!(first.blocksize, Some(1 << 20));
    assert_eq!(first.file_id, info("/made/for/it/f").await.file_id);
    let dir = info("/made/for/it").await;
    assert_eq!(dir.file_type, FileType::IsDir as i32);
    assert_ne!(dir.file_id, first.file_id);

    let done = CompleteRequestProto {
        src: "/made/for/it/f".into(),
        client_name: "writer".into(),
        last: None,
        file_id: first.file_id,
    };
    let _: CompleteResponseProto = c.call("complete", &done).await.unwrap();
    let r: CreateResponseProto = c
        .call("create", &create_req("/made/for/it/f", true))
        .await
        .unwrap();
    let second = r.fs.expect("an overwrite answers with a status");
    assert_ne!(second.file_id, first.file_id, "a new file replaced the old");
    assert_eq!(second.file_id, info("/made/for/it/f").await.file_id);
    nn.shutdown().await;
}

/// A call sent again after the NameNode restarted, with the first attempt's clientId and
/// callId (as Hadoop's failover proxy does), is answered as the first attempt was: the
/// journal carries each at-most-once call's ids and start-up refills the retry cache from
/// them. Without that a retried create was refused with AlreadyBeingCreated by its own
/// lease, a retried delete answered false and a retried createSnapshot found its own
/// snapshot.
#[tokio::test]
async fn at_most_once_calls_are_answered_again_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        name_dirs: vec![dir.path().join("name")],
        ..Default::default()
    };
    let id = [7u8; 16];
    let connect = |addr, user: String| async move {
        let s = tokio::net::TcpStream::connect(addr).await.unwrap();
        IpcClient::over_as(s, &user, CLIENT_PROTOCOL, id)
            .await
            .unwrap()
    };
    let nn = NameNode::start(cfg.clone(), TcpListener::bind("127.0.0.1:0").await.unwrap())
        .await
        .unwrap();
    let su = nn.state.superuser().to_string();
    let c = connect(nn.addr, su.clone()).await;
    // The first attempts.
    let created: CreateResponseProto = decode(
        c.call_with_id(1, 0, "create", &create_req("/d/f", false))
            .await
            .unwrap(),
    );
    let first = created.fs.expect("a status");
    let mkdir = MkdirsRequestProto {
        src: "/d/gone".into(),
        masked: FsPermissionProto { perm: 0o755 },
        create_parent: true,
        unmasked: None,
    };
    let _: MkdirsResponseProto = c.call("mkdirs", &mkdir).await.unwrap();
    let del = DeleteRequestProto {
        src: "/d/gone".into(),
        recursive: true,
    };
    let deleted: DeleteResponseProto = decode(c.call_with_id(2, 0, "delete", &del).await.unwrap());
    assert!(deleted.result);
    let allow = AllowSnapshotRequestProto {
        snapshot_root: "/d".into(),
    };
    let _: AllowSnapshotResponseProto = c.call("allowSnapshot", &allow).await.unwrap();
    let snap = CreateSnapshotRequestProto {
        snapshot_root: "/d".into(),
        snapshot_name: Some("s1".into()),
    };
    let made: CreateSnapshotResponseProto =
        decode(c.call_with_id(3, 0, "createSnapshot", &snap).await.unwrap());
    assert_eq!(made.snapshot_path, "/d/.snapshot/s1");
    drop(c);
    // Stopped as after a crash: the journal holds every edit and no image is saved (an
    // image keeps no call ids, as HDFS's keep none, and a clean shutdown saves one).
    nn.fatal.cancel();
    nn.shutdown().await;

    // The retries, to a NameNode that replayed its journal.
    let nn = NameNode::start(cfg, TcpListener::bind("127.0.0.1:0").await.unwrap())
        .await
        .unwrap();
    let c = connect(nn.addr, su).await;
    let again: CreateResponseProto = decode(
        c.call_with_id(1, 1, "create", &create_req("/d/f", false))
            .await
            .unwrap(),
    );
    let again = again.fs.expect("the first attempt's answer: a status");
    assert_eq!(again.file_id, first.file_id);
    let deleted: DeleteResponseProto = decode(c.call_with_id(2, 1, "delete", &del).await.unwrap());
    assert!(deleted.result, "the first attempt deleted it");
    let made: CreateSnapshotResponseProto =
        decode(c.call_with_id(3, 1, "createSnapshot", &snap).await.unwrap());
    assert_eq!(made.snapshot_path, "/d/.snapshot/s1");
    // A new call is run, not answered from the cache.
    let refused = c
        .call_with_id(4, 0, "createSnapshot", &snap)
        .await
        .unwrap_err();
    assert_eq!(
        refused.class(),
        Some("org.apache.hadoop.hdfs.protocol.SnapshotException")
    );
    nn.shutdown().await;
}

fn decode<M: prost::Message + Default>(b: bytes::Bytes) -> M {
    M::decode(b).unwrap()
}
