//! Access times over real RPC: an open (getBlockLocations) moves a file's access time at
//! most once per `dfs.namenode.accesstime.precision`, journaled so that a restart keeps
//! it; never in safe mode; and a precision of 0 turns access times off, as in HDFS.

use std::path::Path;
use std::time::Duration;

use ferrite_ipc::client::IpcClient;
use ferrite_ipc::CLIENT_PROTOCOL;
use ferrite_namenode::server::NameNodeHandle;
use ferrite_namenode::{Config, NameNode};
use ferrite_proto::hdfs::*;
use tokio::net::TcpListener;

fn config(dir: &Path, precision_ms: u64) -> Config {
    Config {
        name_dirs: vec![dir.join("name")],
        access_time_precision_ms: precision_ms,
        safemode_extension_ms: 0,
        ..Default::default()
    }
}

async fn start(cfg: Config) -> NameNodeHandle {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    NameNode::start(cfg, listener).await.unwrap()
}

async fn connect(nn: &NameNodeHandle, user: &str) -> IpcClient {
    IpcClient::connect(nn.addr, user, CLIENT_PROTOCOL)
        .await
        .unwrap()
}

/// Creates and closes an empty file readable by everyone.
async fn make_file(c: &IpcClient, src: &str) {
    let req = CreateRequestProto {
        src: src.into(),
        masked: FsPermissionProto { perm: 0o644 },
        client_name: "writer".into(),
        create_flag: 0x01,
        create_parent: true,
        replication: 1,
        block_size: 1 << 20,
        ..Default::default()
    };
    let r: CreateResponseProto = c.call("create", &req).await.unwrap();
    let done = CompleteRequestProto {
        src: src.into(),
        client_name: "writer".into(),
        last: None,
        file_id: r.fs.unwrap().file_id,
    };
    let r: CompleteResponseProto = c.call("complete", &done).await.unwrap();
    assert!(r.result);
}

/// (modification time, access time) of `src`.
async fn times(c: &IpcClient, src: &str) -> (u64, u64) {
    let req = GetFileInfoRequestProto { src: src.into() };
    let r: GetFileInfoResponseProto = c.call("getFileInfo", &req).await.unwrap();
    let fs = r.fs.expect("the file exists");
    (fs.modification_time, fs.access_time)
}

async fn open(c: &IpcClient, src: &str) {
    let req = GetBlockLocationsRequestProto {
        src: src.into(),
        offset: 0,
        length: u64::MAX >> 1,
    };
    let _: GetBlockLocationsResponseProto = c.call("getBlockLocations", &req).await.unwrap();
}

async fn set_safe_mode(c: &IpcClient, action: SafeModeActionProto) {
    let req = SetSafeModeRequestProto {
        action: action as i32,
        checked: None,
    };
    let _: SetSafeModeResponseProto = c.call("setSafeMode", &req).await.unwrap();
}

/// Long enough for the clock to pass a 1 ms precision.
async fn let_time_pass() {
    tokio::time::sleep(Duration::from_millis(20)).await;
}

#[tokio::test]
async fn an_open_moves_the_access_time_once_per_precision_and_a_restart_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let nn = start(config(dir.path(), 1)).await;
    let su = connect(&nn, nn.state.superuser()).await;
    make_file(&su, "/f").await;
    let (mtime, created) = times(&su, "/f").await;

    // A user who may only read moves it: reading needs no write permission.
    let reader = connect(&nn, "reader").await;
    let_time_pass().await;
    open(&reader, "/f").await;
    let (m1, a1) = times(&su, "/f").await;
    assert!(
        a1 > created,
        "open moved the access time: {created} -> {a1}"
    );
    assert_eq!(m1, mtime, "an open leaves the modification time");

    // Not in safe mode.
    set_safe_mode(&su, SafeModeActionProto::SafemodeEnter).await;
    let_time_pass().await;
    open(&reader, "/f").await;
    assert_eq!(times(&su, "/f").await.1, a1, "safe mode keeps access times");
    set_safe_mode(&su, SafeModeActionProto::SafemodeLeave).await;

    let_time_pass().await;
    open(&reader, "/f").await;
    let (_, a2) = times(&su, "/f").await;
    assert!(a2 > a1);
    nn.shutdown().await;

    // The move was journaled: a restart (journal replay) gives the same times.
    let nn = start(config(dir.path(), 1)).await;
    let su = connect(&nn, nn.state.superuser()).await;
    assert_eq!(times(&su, "/f").await, (mtime, a2));
    nn.shutdown().await;
}

#[tokio::test]
async fn within_the_precision_an_open_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // HDFS's default: an hour. The file was created moments ago.
    let nn = start(config(dir.path(), 3_600_000)).await;
    let su = connect(&nn, nn.state.superuser()).await;
    make_file(&su, "/f").await;
    let before = times(&su, "/f").await;
    let_time_pass().await;
    open(&su, "/f").await;
    assert_eq!(times(&su, "/f").await, before);
    nn.shutdown().await;
}

#[tokio::test]
async fn a_precision_of_zero_turns_access_times_off() {
    let dir = tempfile::tempdir().unwrap();
    let nn = start(config(dir.path(), 0)).await;
    let su = connect(&nn, nn.state.superuser()).await;
    make_file(&su, "/f").await;
    let (mtime, atime) = times(&su, "/f").await;
    let_time_pass().await;
    open(&su, "/f").await;
    assert_eq!(times(&su, "/f").await, (mtime, atime));

    // setTimes with an access time is refused with HDFS's message; without one it works.
    let set = |mtime: u64, atime: u64| SetTimesRequestProto {
        src: "/f".into(),
        mtime,
        atime,
    };
    let e = su
        .call::<_, SetTimesResponseProto>("setTimes", &set(u64::MAX, 5))
        .await
        .unwrap_err();
    assert_eq!(e.class(), Some("java.io.IOException"));
    assert!(
        e.to_string().contains(
            "Access time for hdfs is not configured.  \
             Please set dfs.namenode.accesstime.precision configuration parameter."
        ),
        "{e}"
    );
    let _: SetTimesResponseProto = su.call("setTimes", &set(7, u64::MAX)).await.unwrap();
    assert_eq!(times(&su, "/f").await, (7, atime));
    nn.shutdown().await;
}
