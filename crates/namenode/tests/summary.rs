//! The namespace summary on a running NameNode: getContentSummary answers come from the
//! summary (and equal the exact walk), permissions still decide, and the summary resumes
//! from its checkpoint after a restart, catching up from the journal when the checkpoint is
//! older than the namespace.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use ferrite_ipc::client::IpcClient;
use ferrite_ipc::CLIENT_PROTOCOL;
use ferrite_namenode::namespace::blocks::{NewBlock, Previous};
use ferrite_namenode::namespace::plan::CreateArgs;
use ferrite_namenode::namespace::Caller;
use ferrite_namenode::service::NameNodeService;
use ferrite_namenode::{Config, NameNode, NameNodeHandle};
use ferrite_proto::hdfs::*;
use tokio::net::TcpListener;

async fn start(dir: &Path) -> NameNodeHandle {
    start_with(dir, |_| {}).await
}

async fn start_with(dir: &Path, tweak: impl FnOnce(&mut Config)) -> NameNodeHandle {
    let mut cfg = Config {
        name_dirs: vec![dir.join("name")],
        permissions_enabled: true,
        // Purge right behind the retained images (a test needs a purged journal).
        extra_edits_retained: 0,
        ..Default::default()
    };
    tweak(&mut cfg);
    NameNode::start(cfg, TcpListener::bind("127.0.0.1:0").await.unwrap())
        .await
        .unwrap()
}

/// Creates `path` with one block of `len` bytes (none when 0), closed.
async fn file(st: &NameNodeService, path: &str, len: u64, replication: u16) {
    let su = Caller::superuser(st.superuser());
    let args = CreateArgs {
        src: path,
        masked: 0o644,
        unmasked: None,
        client_name: "c",
        client_machine: "m",
        create: true,
        overwrite: true,
        create_parent: true,
        replication,
        block_size: 1 << 27,
    };
    st.commit(|ns| Ok(((), ns.plan_create(&su, &args, 1)?)))
        .await
        .unwrap();
    let mut prev = None;
    if len > 0 {
        let nb = st
            .commit(|ns| ns.plan_add_block(path, "c", 0, None))
            .await
            .unwrap();
        let (NewBlock::Fresh(p) | NewBlock::Retry(p)) = nb;
        prev = Some(Previous {
            id: p.block.id,
            gs: p.block.gs,
            len,
        });
    }
    st.commit(|ns| ns.plan_complete(path, "c", 0, prev, 2, |_| true))
        .await
        .unwrap();
}

/// Where the NameNode keeps its summary checkpoint under `dir`.
fn checkpoint_file(dir: &Path) -> PathBuf {
    dir.join("name/summary/summary.ckpt")
}

/// A NameNode's first life in `dir`: the workload, then a clean shutdown, which leaves a
/// summary checkpoint; returns its path.
async fn first_run(dir: &Path) -> PathBuf {
    let nn = start(dir).await;
    workload(&nn.state, 0).await;
    nn.shutdown().await;
    checkpoint_file(dir)
}

async fn workload(st: &NameNodeService, round: u64) {
    let su = Caller::superuser(st.superuser());
    for i in 0..60u64 {
        let len = (i * 7919 + round * 31) % 5_000_000;
        file(
            st,
            &format!("/data/r{round}/d{}/f{i}", i % 5),
            len,
            1 + (i % 3) as u16,
        )
        .await;
    }
    let (from, to) = (format!("/data/r{round}/d1"), format!("/data/moved{round}"));
    st.commit(|ns| Ok(((), ns.plan_rename2(&su, &from, &to, false, 3)?)))
        .await
        .unwrap();
    let gone = format!("/data/r{round}/d2");
    st.commit(|ns| Ok(((), ns.plan_delete(&su, &gone, true, 4)?.unwrap_or_default())))
        .await
        .unwrap();
    let f = format!("/data/r{round}/d3/f3");
    st.commit(|ns| {
        let ops = ns.plan_set_replication(&su, &f, 5)?.unwrap_or_default();
        Ok(((), ops))
    })
    .await
    .unwrap();
}

async fn summary_of(c: &IpcClient, path: &str) -> Result<(u64, u64, u64, u64), String> {
    let r: Result<GetContentSummaryResponseProto, _> = c
        .call(
            "getContentSummary",
            &GetContentSummaryRequestProto { path: path.into() },
        )
        .await;
    r.map(|r| {
        let s = r.summary;
        (s.file_count, s.directory_count, s.length, s.space_consumed)
    })
    .map_err(|e| e.to_string())
}

fn walked(st: &NameNodeService, path: &str) -> (u64, u64, u64, u64) {
    let su = Caller::superuser(st.superuser());
    let cs = st.with_namespace(|ns| ns.content_summary(&su, path).unwrap());
    (cs.files, cs.dirs, cs.length, cs.space_consumed)
}

async fn check_all(nn: &NameNodeHandle, paths: &[&str]) {
    let c = IpcClient::connect(nn.addr, nn.state.superuser(), CLIENT_PROTOCOL)
        .await
        .unwrap();
    let svc = nn.state.summary().expect("the summary is on by default");
    let before = svc.metrics.answered.load(Ordering::Relaxed);
    for p in paths {
        assert_eq!(
            summary_of(&c, p).await.unwrap(),
            walked(&nn.state, p),
            "{p}"
        );
    }
    let answered = svc.metrics.answered.load(Ordering::Relaxed) - before;
    assert_eq!(
        answered,
        paths.len() as u64,
        "every answer came from the summary"
    );
}

/// The follower rests between reads of the journal; a content summary that needs edits it
/// has not applied yet wakes it instead of waiting out the rest (here an hour) or walking
/// the tree (after `ferrite.summary.wait.ms`, here longer than the test may take).
#[tokio::test]
async fn a_content_summary_wakes_a_resting_follower() {
    let dir = tempfile::tempdir().unwrap();
    let nn = start_with(dir.path(), |c| {
        c.summary_rest_ms = 3_600_000;
        c.summary_wait_ms = 600_000;
    })
    .await;
    for round in 0..3 {
        workload(&nn.state, round).await;
        // `check_all` also asserts that every answer came from the summary.
        check_all(&nn, PATHS).await;
    }
    nn.shutdown().await;
}

const PATHS: &[&str] = &[
    "/",
    "/data",
    "/data/r0",
    "/data/r0/d3",
    "/data/moved0",
    "/data/r0/d0/f5",
];

#[tokio::test]
async fn answers_come_from_the_summary_and_survive_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let nn = start(dir.path()).await;
    workload(&nn.state, 0).await;
    check_all(&nn, PATHS).await;
    nn.shutdown().await;
    let ckpt = checkpoint_file(dir.path());
    assert!(ckpt.exists(), "a clean shutdown checkpoints the summary");
    let old = std::fs::read(&ckpt).unwrap();

    // Restart: the summary resumes from its checkpoint, then follows new edits.
    let nn = start(dir.path()).await;
    let svc = nn.state.summary().cloned().unwrap();
    assert_eq!(svc.metrics.rebuilds.load(Ordering::Relaxed), 0);
    workload(&nn.state, 1).await;
    check_all(&nn, PATHS).await;
    check_all(&nn, &["/data/r1", "/data/moved1"]).await;
    nn.shutdown().await;

    // The checkpoint from before round 1 is put back, as if the last one was never taken
    // (a crash): the summary loads it and catches up from the journal segments.
    std::fs::write(&ckpt, old).unwrap();
    let nn = start(dir.path()).await;
    let svc = nn.state.summary().cloned().unwrap();
    let last = nn.state.last_txid();
    assert!(svc.caught_up(last, Duration::from_secs(10)).await);
    assert_eq!(
        svc.metrics.rebuilds.load(Ordering::Relaxed),
        0,
        "caught up, not rebuilt"
    );
    check_all(&nn, PATHS).await;
    check_all(&nn, &["/data/r1", "/data/moved1"]).await;
    nn.shutdown().await;
}

#[tokio::test]
async fn a_damaged_checkpoint_is_rebuilt_from_the_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = first_run(dir.path()).await;
    let mut bytes = std::fs::read(&ckpt).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&ckpt, bytes).unwrap();
    let nn = start(dir.path()).await;
    check_all(&nn, PATHS).await;
    nn.shutdown().await;
}

#[tokio::test]
async fn permissions_still_decide() {
    let dir = tempfile::tempdir().unwrap();
    let nn = start(dir.path()).await;
    let st = nn.state.clone();
    let su = Caller::superuser(st.superuser());
    for d in ["/open/a", "/shut/private"] {
        st.commit(|ns| Ok(((), ns.plan_mkdirs(&su, d, 0o755, true, 0)?)))
            .await
            .unwrap();
    }
    file(&st, "/open/a/f", 10, 1).await;
    file(&st, "/shut/private/f", 20, 1).await;
    st.commit(|ns| Ok(((), ns.plan_set_permission(&su, "/shut/private", 0o700)?)))
        .await
        .unwrap();
    let c = IpcClient::connect(nn.addr, "mallory", CLIENT_PROTOCOL)
        .await
        .unwrap();
    let svc = st.summary().cloned().unwrap();
    // Nothing restricted below /open: the summary answers anyone.
    assert_eq!(summary_of(&c, "/open").await.unwrap(), (1, 2, 10, 10));
    assert_eq!(svc.metrics.walked.load(Ordering::Relaxed), 0);
    // A 0700 directory below /shut: the walk decides, and refuses as HDFS does.
    let e = summary_of(&c, "/shut").await.unwrap_err();
    assert!(e.contains("Permission denied"), "{e}");
    assert_eq!(svc.metrics.walked.load(Ordering::Relaxed), 1);
    // The superuser reads it from the summary.
    let root = IpcClient::connect(nn.addr, st.superuser(), CLIENT_PROTOCOL)
        .await
        .unwrap();
    assert_eq!(summary_of(&root, "/shut").await.unwrap(), (1, 2, 20, 20));
    nn.shutdown().await;
}

/// `readEdits` for a follower further behind than the in-memory tail (the NameNode has
/// restarted, so the tail is empty): records come from the segments, in bounded replies,
/// and applying them from txid 1 rebuilds what the NameNode's summary holds.
#[tokio::test]
async fn read_edits_serves_a_follower_from_the_segments() {
    use ferrite_ipc::SUMMARY_PROTOCOL;
    use ferrite_namenode::summary::follow::SummaryService;
    use ferrite_namenode::summary::Summary;
    use ferrite_proto::ferrite::{ReadEditsRequestProto, ReadEditsResponseProto};

    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        name_dirs: vec![dir.path().join("name")],
        // No image at shutdown would purge nothing anyway; keep every segment.
        checkpoint_txns: u64::MAX,
        ..Default::default()
    };
    let nn = NameNode::start(cfg.clone(), TcpListener::bind("127.0.0.1:0").await.unwrap())
        .await
        .unwrap();
    workload(&nn.state, 0).await;
    nn.shutdown().await;
    let nn = NameNode::start(cfg, TcpListener::bind("127.0.0.1:0").await.unwrap())
        .await
        .unwrap();
    workload(&nn.state, 1).await;
    let last = nn.state.last_txid();
    let c = IpcClient::connect(nn.addr, nn.state.superuser(), SUMMARY_PROTOCOL)
        .await
        .unwrap();
    let root_perm = nn
        .state
        .with_namespace(|ns| ns.inode(ferrite_namenode::namespace::inode::ROOT_SLOT).perm);
    let follower = SummaryService::new(Summary::empty(root_perm), None);
    let mut replies = 0;
    while follower.txid() < last {
        let req = ReadEditsRequestProto {
            from_txid: follower.txid() + 1,
            max_bytes: Some(4096),
            wait_ms: Some(0),
        };
        let r: ReadEditsResponseProto = c.call("readEdits", &req).await.unwrap();
        assert!(
            !r.records.is_empty(),
            "no progress at txid {}",
            follower.txid()
        );
        follower.apply_bytes(&r.records).unwrap();
        replies += 1;
    }
    assert!(replies > 3, "bounded replies ({replies})");
    let theirs = nn.state.summary().unwrap();
    assert!(theirs.caught_up(last, Duration::from_secs(10)).await);
    for p in PATHS.iter().chain(&["/data/r1", "/data/moved1"]) {
        let a = follower.read(|s| s.get(p)).map(|mut s| {
            s.updated = 0;
            s
        });
        let b = theirs.read(|s| s.get(p)).map(|mut s| {
            s.updated = 0;
            s
        });
        assert_eq!(a, b, "{p}");
    }
    nn.shutdown().await;
}

/// A summary checkpoint older than every journal segment still kept (purged behind newer
/// images): the summary cannot catch up, so it is rebuilt from the namespace.
#[tokio::test]
async fn a_checkpoint_behind_the_purged_journal_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = first_run(dir.path()).await;
    let old = std::fs::read(&ckpt).unwrap();
    // Another run: its edits go to a segment of their own, finalized at shutdown.
    let nn = start(dir.path()).await;
    workload(&nn.state, 1).await;
    nn.shutdown().await;
    // Newer images let that segment be purged.
    let nn = start(dir.path()).await;
    for round in 2..4 {
        workload(&nn.state, round).await;
        let st = nn.state.clone();
        tokio::task::spawn_blocking(move || st.save_namespace().unwrap())
            .await
            .unwrap();
    }
    nn.shutdown().await;
    std::fs::write(&ckpt, old).unwrap();
    let nn = start(dir.path()).await;
    let svc = nn.state.summary().cloned().unwrap();
    let last = nn.state.last_txid();
    assert!(svc.caught_up(last, Duration::from_secs(10)).await);
    assert_eq!(svc.metrics.rebuilds.load(Ordering::Relaxed), 1);
    check_all(&nn, PATHS).await;
    check_all(&nn, &["/data/r3", "/data/moved3"]).await;
    nn.shutdown().await;
}
