//! Three `ferrite namenode` processes configured as one HA nameservice in HDFS's keys: one
//! turns active, the others refuse clients with StandbyException; after `kill -9` of the
//! active, another takes over within seconds with every acknowledged change.

mod common;

use std::time::{Duration, Instant};

use common::{spawn, Proc};
use ferrite_client::FileSystem;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Member {
    name: String,
    rpc: String,
    proc: Option<Proc>,
}

fn start(root: &std::path::Path) -> Vec<Member> {
    let names = ["nn1", "nn2", "nn3"];
    let mut conf = vec![
        "dfs.nameservices=test".to_string(),
        "dfs.ha.namenodes.test=nn1,nn2,nn3".to_string(),
    ];
    let mut rpcs = Vec::new();
    for n in names {
        let rpc = format!("127.0.0.1:{}", free_port());
        conf.push(format!("dfs.namenode.rpc-address.test.{n}={rpc}"));
        conf.push(format!(
            "ferrite.ha.raft-address.test.{n}=127.0.0.1:{}",
            free_port()
        ));
        conf.push(format!(
            "dfs.namenode.http-address.test.{n}=127.0.0.1:{}",
            free_port()
        ));
        rpcs.push(rpc);
    }
    let spawn_one = |n: &str| {
        let mut args = vec![
            "namenode".to_string(),
            "--data".to_string(),
            root.join(n).display().to_string(),
        ];
        for c in conf.iter().chain([&format!("dfs.ha.namenode.id={n}")]) {
            args.push("--conf".into());
            args.push(c.clone());
        }
        spawn(&args)
    };
    names
        .iter()
        .zip(rpcs)
        .map(|(n, rpc)| Member {
            name: n.to_string(),
            rpc,
            proc: Some(spawn_one(n)),
        })
        .collect()
}

/// Whether `err` is HDFS's answer from a standby.
fn is_standby(err: &ferrite_client::Error) -> bool {
    err.class()
        .is_some_and(|c| c == "org.apache.hadoop.ipc.StandbyException")
}

/// The one member that accepts `mkdirs(path)` (the others must refuse as standbys), within
/// `within`.
async fn active_mkdirs(members: &[Member], path: &str, within: Duration) -> usize {
    let deadline = Instant::now() + within;
    loop {
        let mut accepted = Vec::new();
        for (i, m) in members.iter().enumerate() {
            if m.proc.is_none() {
                continue;
            }
            let Ok(fs) = FileSystem::connect(&format!("hdfs://{}", m.rpc)).await else {
                continue;
            };
            match fs.mkdirs(path, 0o755, true).await {
                Ok(_) => accepted.push(i),
                Err(e) => assert!(is_standby(&e), "{}: {e}", m.name),
            }
        }
        match accepted[..] {
            [one] => return one,
            [] if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            _ => panic!("active NameNodes for {path}: {accepted:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_active_standbys_refuse_and_a_killed_active_is_replaced() {
    let root = tempfile::tempdir().unwrap();
    let mut members = start(root.path());
    let first = active_mkdirs(&members, "/before", Duration::from_secs(20)).await;

    let killed = Instant::now();
    members[first].proc = None; // SIGKILL
    let second = active_mkdirs(&members, "/after", Duration::from_secs(20)).await;
    let took = killed.elapsed();
    assert_ne!(first, second);
    let fs = FileSystem::connect(&format!("hdfs://{}", members[second].rpc))
        .await
        .unwrap();
    assert!(
        fs.status("/before").await.unwrap().is_some(),
        "the change acknowledged before the failover survives it"
    );
    eprintln!("failover: {took:?} from kill -9 to the first change on the new active");
}
