//! The summary as its own process: `ferrite summary-service` starts from the NameNode's
//! image, follows its journal over RPC, and answers what the NameNode's own summary does;
//! stopped and restarted, it resumes from its checkpoint and catches up.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use ferrite_client::FileSystem;
use ferrite_ipc::client::IpcClient;
use ferrite_ipc::SUMMARY_PROTOCOL;
use ferrite_proto::ferrite::*;

fn addr(url: &str) -> SocketAddr {
    url.trim_start_matches("hdfs://").parse().unwrap()
}

async fn summary(url: &str, path: &str) -> Option<PathSummaryProto> {
    let c = IpcClient::connect(addr(url), "tester", SUMMARY_PROTOCOL)
        .await
        .unwrap();
    let req = GetSummaryRequestProto {
        path: path.into(),
        top: Some(5),
    };
    let r: Result<GetSummaryResponseProto, _> = c.call("getSummary", &req).await;
    match r {
        Ok(r) => Some(r.summary.expect("a summary for an existing path")),
        Err(e) if e.to_string().contains("FileNotFoundException") => None,
        Err(e) => panic!("getSummary {path}: {e}"),
    }
}

/// Waits until the service has the NameNode's txid, then compares every path.
async fn same_as_namenode(svc: &str, nn: &str, paths: &[&str]) {
    let want = summary(nn, "/").await.unwrap().txid;
    let deadline = Instant::now() + Duration::from_secs(30);
    while summary(svc, "/").await.unwrap().txid < want {
        assert!(
            Instant::now() < deadline,
            "the service did not catch up to txid {want}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for p in paths {
        let (mut a, mut b) = (summary(svc, p).await, summary(nn, p).await);
        for s in [&mut a, &mut b].into_iter().flatten() {
            s.txid = 0;
            s.updated = 0; // the service's root time comes from the image, not the namespace
        }
        assert_eq!(a, b, "{p}");
    }
}

async fn round(fs: &FileSystem, r: u32) {
    fs.mkdirs(&format!("/s/r{r}/a/b"), 0o755, true)
        .await
        .unwrap();
    for i in 0..8u32 {
        put(
            fs,
            &format!("/s/r{r}/a/f{i}"),
            &data(300 * i as usize + 7, i as u64),
        )
        .await;
    }
    fs.rename(&format!("/s/r{r}/a/f1"), &format!("/s/r{r}/a/b/g"))
        .await
        .unwrap();
    fs.delete(&format!("/s/r{r}/a/f2"), false).await.unwrap();
    fs.set_replication(&format!("/s/r{r}/a/f3"), 1)
        .await
        .unwrap();
}

fn service(cluster: &Cluster, dir: &std::path::Path) -> Proc {
    spawn(&[
        "summary-service".into(),
        "--fs".into(),
        cluster.url.clone(),
        "--dir".into(),
        dir.display().to_string(),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_separate_service_follows_the_journal() {
    follows_the_journal(&[]).await;
}

/// With no in-memory tail and a roll every 40 records, every read of the journal, the
/// NameNode's own summary's and `readEdits` for the service, goes to the segments, picking
/// up where the last read stopped (`recover::Cursor`) across rolls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_separate_service_follows_the_journal_from_its_segments() {
    follows_the_journal(&[
        "ferrite.journal.tail.bytes=0",
        "ferrite.journal.segment.txns=40",
    ])
    .await;
}

async fn follows_the_journal(nn_conf: &[&str]) {
    let root = tempfile::tempdir().unwrap();
    let cluster = Cluster::start_with(root.path(), 0, nn_conf, true);
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    round(&fs, 0).await;
    // An image exists, so the service starts from it and reads only the journal after it.
    let saved = std::process::Command::new(env!("CARGO_BIN_EXE_ferrite"))
        .args(["admin", "--fs", &cluster.url, "save-namespace"])
        .env("FERRITE_LOG", "warn")
        .status()
        .unwrap();
    assert!(saved.success());
    round(&fs, 1).await;
    let dir = root.path().join("svc");
    let mut svc = service(&cluster, &dir);
    let paths = [
        "/",
        "/s",
        "/s/r0",
        "/s/r1/a",
        "/s/r1/a/b",
        "/s/r0/a/f4",
        "/nope",
    ];
    same_as_namenode(&svc.ready, &cluster.url, &paths).await;
    round(&fs, 2).await; // live, while it follows
    same_as_namenode(&svc.ready, &cluster.url, &paths).await;
    same_as_namenode(&svc.ready, &cluster.url, &["/s/r2", "/s/r2/a/b"]).await;

    term(&mut svc.child);
    assert!(
        dir.join("summary.ckpt").exists(),
        "checkpointed at shutdown"
    );
    round(&fs, 3).await;
    fs.delete("/s/r0", true).await.unwrap();
    let svc = service(&cluster, &dir);
    same_as_namenode(&svc.ready, &cluster.url, &paths).await;
    same_as_namenode(&svc.ready, &cluster.url, &["/s/r3", "/s/r3/a"]).await;
    drop(svc);
    cluster.stop();
}
