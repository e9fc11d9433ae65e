//! Three `ferrite namenode` processes configured as one HA nameservice in HDFS's keys: one
//! turns active, the others refuse clients with StandbyException; after `kill -9` of the
//! active, another takes over within seconds with every acknowledged change. DataNodes
//! report to every member, so the new active serves a file's blocks at once.

mod common;

use std::time::Instant;

use std::net::SocketAddr;

use common::ha::{active, datanode, ha_keys, is_standby, start_group};
use common::{get, put, spawn, Proc};
use ferrite_client::FileSystem;

/// Which members are still running.
fn running(members: &[Option<Proc>]) -> Vec<bool> {
    members.iter().map(Option::is_some).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_active_standbys_refuse_and_a_killed_active_is_replaced() {
    let root = tempfile::tempdir().unwrap();
    let (conf, rpcs) = ha_keys(&[]);
    let mut members = start_group(root.path(), &conf);
    let first = active(&rpcs, &running(&members), "/before").await;

    let killed = Instant::now();
    members[first] = None; // SIGKILL
    let second = active(&rpcs, &running(&members), "/after").await;
    let took = killed.elapsed();
    assert_ne!(first, second);
    let fs = FileSystem::connect(&format!("hdfs://{}", rpcs[second]))
        .await
        .unwrap();
    assert!(
        fs.status("/before").await.unwrap().is_some(),
        "the change acknowledged before the failover survives it"
    );
    eprintln!("failover: {took:?} from kill -9 to the first change on the new active");
}

/// A client's call to a standby while the group elects a new active is held, not refused
/// at once: the standby that wins serves it, the other refuses it once it hears from the
/// winner. (Refused at once, as HDFS's standby does, Hadoop's client backs off longer at
/// each NameNode it finds standby while the election runs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standbys_hold_a_clients_call_through_an_election() {
    let root = tempfile::tempdir().unwrap();
    let (conf, rpcs) = ha_keys(&[]);
    let mut members = start_group(root.path(), &conf);
    let first = active(&rpcs, &running(&members), "/before").await;
    let (a, b) = match first {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    // Connected before the kill, so the calls reach the standbys at once after it.
    let uri = |i: usize| format!("hdfs://{}", rpcs[i]);
    let fs_a = FileSystem::connect(&uri(a)).await.unwrap();
    let fs_b = FileSystem::connect(&uri(b)).await.unwrap();

    members[first] = None; // SIGKILL
    let (ra, rb) = tokio::join!(
        fs_a.mkdirs("/held/a", 0o755, true),
        fs_b.mkdirs("/held/b", 0o755, true)
    );
    let winner = match (&ra, &rb) {
        (Ok(_), Err(e)) if is_standby(e) => a,
        (Err(e), Ok(_)) if is_standby(e) => b,
        _ => panic!("one standby should serve its held call, the other refuse it: {ra:?} {rb:?}"),
    };
    let mut live = running(&members);
    live[first] = false;
    assert_eq!(active(&rpcs, &live, "/after").await, winner);
}

/// DataNodes report to the standbys too: after `kill -9` of the active, the new one
/// serves a file written before at once — its block map was warm, no block report or
/// safe mode was waited for — and takes new writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datanodes_report_to_every_namenode_so_a_new_active_serves_blocks_at_once() {
    let root = tempfile::tempdir().unwrap();
    let (conf, rpcs) = ha_keys(&[]);
    let mut members = start_group(root.path(), &conf);
    let _dns: Vec<Proc> = (0..2).map(|i| datanode(root.path(), &conf, i)).collect();
    let first = active(&rpcs, &running(&members), "/d").await;
    let fs = FileSystem::connect(&format!("hdfs://{}", rpcs[first]))
        .await
        .unwrap();
    let bytes = common::data(5000, 7);
    put(&fs, "/d/f", &bytes).await;
    drop(fs);

    members[first] = None; // SIGKILL
    let second = active(&rpcs, &running(&members), "/d2").await;
    let fs = FileSystem::connect(&format!("hdfs://{}", rpcs[second]))
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
    let rpcs: Vec<SocketAddr> = local
        .line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("namenodes="))
        .expect("namenodes in the ready line")
        .split(',')
        .map(|a| a.parse().unwrap())
        .collect();
    assert_eq!(rpcs.len(), 3, "{}", local.line);
    let site = std::fs::read_to_string(data.join("conf/hdfs-site.xml")).unwrap();
    assert!(
        site.contains("dfs.client.failover.sleep.base.millis"),
        "the client conf shortens Hadoop's failover pauses: {site}"
    );
    for rpc in &rpcs {
        assert!(
            site.contains(&rpc.to_string()),
            "client conf names {rpc}: {site}"
        );
    }

    let mut live = vec![true; 3];
    let first = active(&rpcs, &live, "/d").await;
    let fs = FileSystem::connect(&format!("hdfs://{}", rpcs[first]))
        .await
        .unwrap();
    let bytes = common::data(5000, 9);
    put(&fs, "/d/f", &bytes).await;
    drop(fs);

    let victim = pids_mentioning(&data.join(format!("nn{}", first + 1)).display().to_string());
    assert_eq!(victim.len(), 1, "one process serves nn{}", first + 1);
    common::send_signal(victim[0], 9);
    live[first] = false;
    let second = active(&rpcs, &live, "/d2").await;
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
    let (conf, rpcs) = ha_keys(&[]);
    let mut members = start_group(root.path(), &conf);
    let first = active(&rpcs, &running(&members), "/r").await;
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
    let connect = |addr: SocketAddr| async move {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        IpcClient::over_as(stream, "root", CLIENT_PROTOCOL, client_id)
            .await
            .unwrap()
    };
    let c = connect(rpcs[first]).await;
    let answer =
        CreateResponseProto::decode(c.call_with_id(5, 0, "create", &req).await.unwrap()).unwrap();
    let id = answer.fs.expect("status").file_id;
    drop(c);

    members[first] = None; // SIGKILL
    let second = active(&rpcs, &running(&members), "/r2").await;
    let c = connect(rpcs[second]).await;
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

/// The whole nameservice restarted while its DataNodes are down: the NameNode elected
/// active knows no replica, so it is in start-up safe mode and answers mutations with
/// `RetriableException`, as HDFS's active does. The client holds its call, retrying the
/// same NameNode, until the DataNodes come back and report; it sees no error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_waits_out_the_start_up_safe_mode_of_a_restarted_nameservice() {
    use ferrite_client::fs::ClientOptions;

    let root = tempfile::tempdir().unwrap();
    let (conf, rpcs) = ha_keys(&[]);
    let mut members = start_group(root.path(), &conf);
    let mut dns: Vec<Proc> = (0..2).map(|i| datanode(root.path(), &conf, i)).collect();
    let first = active(&rpcs, &running(&members), "/s").await;
    let fs = FileSystem::connect(&format!("hdfs://{}", rpcs[first]))
        .await
        .unwrap();
    let bytes = common::data(3000, 3);
    put(&fs, "/s/f", &bytes).await;
    drop(fs);

    dns.clear(); // SIGKILL
    for m in members.iter_mut() {
        *m = None;
    }
    let members: Vec<Option<Proc>> = start_group(root.path(), &conf);
    let fs = FileSystem::connect_any(&rpcs, &ClientOptions::default())
        .await
        .unwrap();
    let held = tokio::spawn(async move {
        let made = fs.mkdirs("/s/after", 0o755, true).await;
        (fs, made)
    });
    // Long enough for an election and for the call to be refused as retriable a few times.
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    assert!(!held.is_finished(), "the call waits for the block reports");
    let _dns: Vec<Proc> = (0..2).map(|i| datanode(root.path(), &conf, i)).collect();
    let (fs, made) = held.await.unwrap();
    made.expect("the held call succeeds once the DataNodes report");
    assert_eq!(get(&fs, "/s/f").await, bytes);
    drop(members);
}
