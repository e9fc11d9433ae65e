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
