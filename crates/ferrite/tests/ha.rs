//! Three `ferrite namenode` processes configured as one HA nameservice in HDFS's keys: one
//! turns active, the others refuse clients with StandbyException; after `kill -9` of the
//! active, another takes over within seconds with every acknowledged change. DataNodes
//! report to every member, so the new active serves a file's blocks at once.

mod common;

use std::time::{Duration, Instant};

use common::{get, put, spawn, Proc};
use ferrite_client::FileSystem;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Member {
    rpc: String,
    proc: Option<Proc>,
}

/// The HA keys of a fresh three-NameNode nameservice `test` on free loopback ports, with
/// each member's RPC address.
fn ha_keys() -> (Vec<String>, Vec<String>) {
    let mut conf = vec![
        "dfs.nameservices=test".to_string(),
        "dfs.ha.namenodes.test=nn1,nn2,nn3".to_string(),
        "dfs.namenode.fs-limits.min-block-size=0".to_string(),
        "dfs.heartbeat.interval=1".to_string(),
    ];
    let mut rpcs = Vec::new();
    for n in NAMES {
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
    (conf, rpcs)
}

const NAMES: [&str; 3] = ["nn1", "nn2", "nn3"];

/// NameNode `n` of the nameservice `conf` describes, as a process over `root/<n>`.
fn spawn_member(root: &std::path::Path, conf: &[String], n: &str) -> Proc {
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
}

fn start(root: &std::path::Path, conf: &[String], rpcs: &[String]) -> Vec<Member> {
    NAMES
        .iter()
        .zip(rpcs)
        .map(|(n, rpc)| Member {
            rpc: rpc.clone(),
            proc: Some(spawn_member(root, conf, n)),
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
    let live: Vec<Option<&str>> = members
        .iter()
        .map(|m| m.proc.as_ref().map(|_| m.rpc.as_str()))
        .collect();
    active_among(&live, path, within).await
}

/// The index of the one live NameNode (`Some` RPC address) that accepts `mkdirs(path)`,
/// the others refusing as standbys, within `within`.
async fn active_among(rpcs: &[Option<&str>], path: &str, within: Duration) -> usize {
    let deadline = Instant::now() + within;
    loop {
        let mut accepted = Vec::new();
        for (i, rpc) in rpcs.iter().enumerate() {
            let Some(rpc) = rpc else { continue };
            let Ok(fs) = FileSystem::connect(&format!("hdfs://{rpc}")).await else {
                continue;
            };
            match fs.mkdirs(path, 0o755, true).await {
                Ok(_) => accepted.push(i),
                Err(e) => assert!(is_standby(&e), "{rpc}: {e}"),
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
    let (conf, rpcs) = ha_keys();
    let mut members = start(root.path(), &conf, &rpcs);
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

/// A DataNode of nameservice `test`: it reports to every NameNode the keys name.
fn datanode(root: &std::path::Path, i: usize, conf: &[String]) -> Proc {
    let mut args: Vec<String> = [
        "datanode",
        "--namenode",
        "hdfs://test",
        "--port",
        "0",
        "--ipc-port",
        "0",
        "--data",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(root.join(format!("dn{i}")).display().to_string());
    for c in conf {
        args.push("--conf".into());
        args.push(c.clone());
    }
    spawn(&args)
}

/// DataNodes report to the standbys too: after `kill -9` of the active, the new one
/// serves a file written before at once — its block map was warm, no block report or
/// safe mode was waited for — and takes new writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datanodes_report_to_every_namenode_so_a_new_active_serves_blocks_at_once() {
    let root = tempfile::tempdir().unwrap();
    let (conf, rpcs) = ha_keys();
    let mut members = start(root.path(), &conf, &rpcs);
    let _dns: Vec<Proc> = (0..2).map(|i| datanode(root.path(), i, &conf)).collect();
    let first = active_mkdirs(&members, "/d", Duration::from_secs(20)).await;
    let fs = FileSystem::connect(&format!("hdfs://{}", members[first].rpc))
        .await
        .unwrap();
    let bytes = common::data(5000, 7);
    put(&fs, "/d/f", &bytes).await;
    drop(fs);

    members[first].proc = None; // SIGKILL
    let second = active_mkdirs(&members, "/d2", Duration::from_secs(20)).await;
    let fs = FileSystem::connect(&format!("hdfs://{}", members[second].rpc))
        .await
        .unwrap();
    assert_eq!(get(&fs, "/d/f").await, bytes, "read from the new active");
    put(&fs, "/d2/g", &bytes).await;
    assert_eq!(get(&fs, "/d2/g").await, bytes);
}

/// The pids of processes whose command line mentions `needle`.
fn pids_mentioning(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmd).contains(needle) {
            out.push(pid);
        }
    }
    out
}

/// `ferrite local --namenodes 3`: three NameNode processes and in-process DataNodes, a
/// client configuration naming them; one active. Killing the active's process leaves a
/// working cluster, and stopping `ferrite local` stops every NameNode it started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ferrite_local_runs_an_ha_nameservice_that_survives_a_killed_namenode() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("cluster");
    let args: Vec<String> = [
        "local",
        "--namenodes",
        "3",
        "--datanodes",
        "2",
        "--port",
        "0",
        "--conf",
        "dfs.namenode.fs-limits.min-block-size=0",
        "--conf",
        "dfs.heartbeat.interval=1",
        "--data",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([data.display().to_string()])
    .collect();
    let mut local = spawn(&args);
    assert_eq!(local.ready, "hdfs://ferrite", "{}", local.line);
    let rpcs: Vec<String> = local
        .line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("namenodes="))
        .expect("namenodes in the ready line")
        .split(',')
        .map(String::from)
        .collect();
    assert_eq!(rpcs.len(), 3, "{}", local.line);
    let site = std::fs::read_to_string(data.join("conf/hdfs-site.xml")).unwrap();
    for rpc in &rpcs {
        assert!(
            site.contains(rpc.as_str()),
            "client conf names {rpc}: {site}"
        );
    }

    let mut live: Vec<Option<&str>> = rpcs.iter().map(|r| Some(r.as_str())).collect();
    let first = active_among(&live, "/d", Duration::from_secs(20)).await;
    let fs = FileSystem::connect(&format!("hdfs://{}", rpcs[first]))
        .await
        .unwrap();
    let bytes = common::data(5000, 9);
    put(&fs, "/d/f", &bytes).await;
    drop(fs);

    let victim = pids_mentioning(&data.join(format!("nn{}", first + 1)).display().to_string());
    assert_eq!(victim.len(), 1, "one process serves nn{}", first + 1);
    common::send_signal(victim[0], 9);
    live[first] = None;
    let second = active_among(&live, "/d2", Duration::from_secs(20)).await;
    let fs = FileSystem::connect(&format!("hdfs://{}", rpcs[second]))
        .await
        .unwrap();
    assert_eq!(get(&fs, "/d/f").await, bytes, "read from the new active");

    common::term(&mut local.child);
    let st = local.child.wait().unwrap();
    assert!(st.success(), "ferrite local exits cleanly: {st}");
    let left = pids_mentioning(&data.display().to_string());
    assert!(left.is_empty(), "NameNode processes left running: {left:?}");
}

/// A create the old active answered, retried on the new one with the same clientId and
/// callId (as Hadoop's failover proxy does when the answer was lost with the active), gets
/// the first answer again — the standby kept the call's ids from the log — instead of
/// `AlreadyBeingCreatedException`; a new call for the same path does get that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_retried_after_a_failover_gets_its_first_answer() {
    use ferrite_ipc::client::IpcClient;
    use ferrite_ipc::CLIENT_PROTOCOL;
    use ferrite_proto::hdfs::{CreateRequestProto, CreateResponseProto, FsPermissionProto};
    use prost::Message;

    let root = tempfile::tempdir().unwrap();
    let (conf, rpcs) = ha_keys();
    let mut members = start(root.path(), &conf, &rpcs);
    let first = active_mkdirs(&members, "/r", Duration::from_secs(20)).await;
    let req = CreateRequestProto {
        src: "/r/f".into(),
        masked: FsPermissionProto { perm: 0o644 },
        client_name: "retrier".into(),
        create_flag: 0x01,
        create_parent: true,
        replication: 1,
        block_size: 1 << 20,
        ..Default::default()
    };
    let client_id = [7u8; 16];
    let connect = |rpc: &str| {
        let addr: std::net::SocketAddr = rpc.parse().unwrap();
        async move {
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            IpcClient::over_as(stream, "root", CLIENT_PROTOCOL, client_id)
                .await
                .unwrap()
        }
    };
    let c = connect(&members[first].rpc).await;
    let answer =
        CreateResponseProto::decode(c.call_with_id(5, 0, "create", &req).await.unwrap()).unwrap();
    let id = answer.fs.expect("status").file_id;
    drop(c);

    members[first].proc = None; // SIGKILL
    let second = active_mkdirs(&members, "/r2", Duration::from_secs(20)).await;
    let c = connect(&members[second].rpc).await;
    let again =
        CreateResponseProto::decode(c.call_with_id(5, 1, "create", &req).await.unwrap()).unwrap();
    assert_eq!(again.fs.expect("status").file_id, id, "the first answer");
    // A fresh call runs: the file is there, open under this client's lease.
    let err = c.call_with_id(6, 0, "create", &req).await.unwrap_err();
    assert!(
        format!("{err:?}").contains("AlreadyBeingCreatedException"),
        "{err:?}"
    );
}
