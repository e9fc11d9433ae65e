//! The NameNode's background work: the trash emptier and lease recovery, on a real server.

use std::time::Duration;

use ferrite_ipc::client::IpcClient;
use ferrite_ipc::CLIENT_PROTOCOL;
use ferrite_namenode::namespace::Caller;
use ferrite_namenode::service::Operation;
use ferrite_namenode::{Config, NameNode};
use ferrite_proto::hdfs::*;
use tokio::net::TcpListener;

/// A NameNode with `cfg` on a free loopback port.
async fn start(cfg: Config) -> ferrite_namenode::NameNodeHandle {
    NameNode::start(cfg, TcpListener::bind("127.0.0.1:0").await.unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn trash_emptier_checkpoints_then_expires() {
    let cfg = Config {
        trash_interval_min: 60,
        ..Default::default()
    };
    let nn = start(cfg).await;
    let st = nn.state.clone();
    let su = Caller::superuser(st.superuser());
    st.commit(|ns| {
        Ok((
            (),
            ns.plan_mkdirs(&su, "/user/alice/.Trash/Current/d", 0o700, true, 0)?,
        ))
    })
    .await
    .unwrap();
    let now = 1_795_317_163_000; // 2026-11-22 03:12:43 UTC
    st.empty_trash(now, 3_600_000).await;
    let exists = |p: &str| {
        st.file_info(
            &st.admit(st.superuser(), "127.0.0.1", Operation::GetFileInfo)
                .unwrap(),
            p,
        )
        .unwrap()
        .is_some()
    };
    assert!(!exists("/user/alice/.Trash/Current"));
    assert!(exists("/user/alice/.Trash/261122031243/d"));
    // Within the interval the checkpoint stays; after it, it goes.
    st.empty_trash(now + 1_800_000, 3_600_000).await;
    assert!(exists("/user/alice/.Trash/261122031243"));
    st.empty_trash(now + 3_700_000, 3_600_000).await;
    assert!(!exists("/user/alice/.Trash/261122031243"));
    assert!(exists("/user/alice/.Trash"));
    nn.shutdown().await;
}

/// A NameNode whose leases expire after `secs`, and a superuser client of it.
async fn with_hard_limit(secs: u64) -> (ferrite_namenode::NameNodeHandle, IpcClient) {
    let cfg = Config {
        lease_hard_limit_sec: secs,
        ..Default::default()
    };
    let nn = start(cfg).await;
    let c = IpcClient::connect(nn.addr, nn.state.superuser(), CLIENT_PROTOCOL)
        .await
        .unwrap();
    (nn, c)
}

fn create_req(src: &str, client: &str) -> CreateRequestProto {
    CreateRequestProto {
        src: src.into(),
        masked: FsPermissionProto { perm: 0o644 },
        client_name: client.into(),
        create_flag: 1,
        create_parent: true,
        replication: 1,
        block_size: 128 << 20,
        ..Default::default()
    }
}

#[tokio::test]
async fn an_abandoned_writer_loses_its_files_after_the_hard_limit() {
    let (nn, c) = with_hard_limit(1).await;
    for path in ["/abandoned", "/abandoned-too"] {
        let create = create_req(path, "gone-client");
        let _: CreateResponseProto = c.call("create", &create).await.unwrap();
    }
    let closed = |path: &'static str| {
        let c = &c;
        async move {
            let req = IsFileClosedRequestProto { src: path.into() };
            let r: IsFileClosedResponseProto = c.call("isFileClosed", &req).await.unwrap();
            r.result
        }
    };
    assert!(!closed("/abandoned").await);
    let mut waited = Duration::ZERO;
    while !(closed("/abandoned").await && closed("/abandoned-too").await) {
        assert!(
            waited < Duration::from_secs(10),
            "lease recovery did not close both files"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        waited += Duration::from_millis(200);
    }
    assert_eq!(nn.state.lease_holders(), 0);
    nn.shutdown().await;
}

#[tokio::test]
async fn renewing_keeps_the_lease() {
    let (nn, c) = with_hard_limit(2).await;
    let create = create_req("/kept", "live-client");
    let _: CreateResponseProto = c.call("create", &create).await.unwrap();
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let _: RenewLeaseResponseProto = c
            .call(
                "renewLease",
                &RenewLeaseRequestProto {
                    client_name: "live-client".into(),
                    namespaces: vec![],
                },
            )
            .await
            .unwrap();
    }
    let r: IsFileClosedResponseProto = c
        .call(
            "isFileClosed",
            &IsFileClosedRequestProto {
                src: "/kept".into(),
            },
        )
        .await
        .unwrap();
    assert!(!r.result, "a renewed lease is not recovered");
    let done = CompleteRequestProto {
        src: "/kept".into(),
        client_name: "live-client".into(),
        last: None,
        file_id: None,
    };
    let r: CompleteResponseProto = c.call("complete", &done).await.unwrap();
    assert!(r.result);
    nn.shutdown().await;
}

/// Edits made after the newest image are imaged once `dfs.namenode.checkpoint.period` has
/// passed since it, well short of `dfs.namenode.checkpoint.txns`.
#[tokio::test]
async fn the_checkpoint_period_images_recent_edits() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        name_dirs: vec![dir.path().join("name")],
        checkpoint_period_sec: 1,
        ..Default::default()
    };
    let nn = start(cfg).await;
    let st = nn.state.clone();
    let su = Caller::superuser(st.superuser());
    st.commit(|ns| Ok(((), ns.plan_mkdirs(&su, "/periodic", 0o755, true, 0)?)))
        .await
        .unwrap();
    let last = st.last_txid();
    assert!(st.last_image_txid() < last);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while st.last_image_txid() < last {
        assert!(
            std::time::Instant::now() < deadline,
            "no periodic checkpoint"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    nn.shutdown().await;
}
