//! Twenty failovers under load: eight Ferrite clients create, write, rename and delete
//! files through the nameservice while the active NameNode is killed with SIGKILL and
//! restarted, round after round. No client sees an error (each call fails over and is
//! retried under its own ids), and afterwards every NameNode, made active in turn by a
//! graceful hand-over, holds exactly what the clients were told was done.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{spawn, Proc};
use ferrite_client::fs::ClientOptions;
use ferrite_client::{CreateOptions, FileSystem};

const NAMES: [&str; 3] = ["nn1", "nn2", "nn3"];
const CLIENTS: usize = 8;
const ROUNDS: usize = 20;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The keys of nameservice `test` on free loopback ports, and its RPC addresses.
fn ha_keys() -> (Vec<String>, Vec<SocketAddr>) {
    let mut conf = vec![
        "dfs.nameservices=test".to_string(),
        "dfs.ha.namenodes.test=nn1,nn2,nn3".to_string(),
        "dfs.namenode.fs-limits.min-block-size=0".to_string(),
        "dfs.heartbeat.interval=1".to_string(),
    ];
    let mut rpcs = Vec::new();
    for n in NAMES {
        let rpc: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
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

fn process(root: &std::path::Path, conf: &[String], args: &[&str]) -> Proc {
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    for c in conf {
        a.push("--conf".into());
        a.push(c.clone());
    }
    let _ = root;
    spawn(&a)
}

fn namenode(root: &std::path::Path, conf: &[String], i: usize) -> Proc {
    let data = root.join(NAMES[i]).display().to_string();
    let id = format!("dfs.ha.namenode.id={}", NAMES[i]);
    process(root, conf, &["namenode", "--data", &data, "--conf", &id])
}

fn datanode(root: &std::path::Path, conf: &[String], i: usize) -> Proc {
    let data = root.join(format!("dn{i}")).display().to_string();
    let args = [
        "datanode",
        "--namenode",
        "hdfs://test",
        "--port",
        "0",
        "--ipc-port",
        "0",
        "--data",
        &data,
    ];
    process(root, conf, &args)
}

/// The NameNode, of those `live`, that accepts a change, within 20 s (the others must
/// refuse as standbys).
async fn active(rpcs: &[SocketAddr], live: &[bool], probe: &str) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut accepted = Vec::new();
        for (i, rpc) in rpcs.iter().enumerate().filter(|(i, _)| live[*i]) {
            let Ok(fs) = FileSystem::connect(&format!("hdfs://{rpc}")).await else {
                continue;
            };
            match fs.mkdirs(probe, 0o755, true).await {
                Ok(_) => accepted.push(i),
                Err(e) => assert_eq!(
                    e.class(),
                    Some("org.apache.hadoop.ipc.StandbyException"),
                    "{rpc}: {e}"
                ),
            }
        }
        match accepted[..] {
            [one] => return one,
            [] if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            _ => panic!("active NameNodes: {accepted:?}"),
        }
    }
}

/// What a client's acknowledged calls left: each path it touched, with the file's length
/// where it is there, `None` where it is gone.
type Model = BTreeMap<String, Option<u64>>;

/// One client's work until `stop`: write a file, rename every other one, delete every
/// third. Returns what it was told was done, or the first error it saw.
async fn client(i: usize, rpcs: Vec<SocketAddr>, stop: Arc<AtomicBool>) -> Result<Model, String> {
    let err = |what: &str, p: &str| {
        let what = format!("client {i}: {what} {p}");
        move |e: ferrite_client::Error| format!("{what}: {e}")
    };
    let fs = FileSystem::connect_any(&rpcs, &ClientOptions::default())
        .await
        .map_err(err("connect", ""))?;
    let dir = format!("/load/c{i}");
    fs.mkdirs(&dir, 0o755, true)
        .await
        .map_err(err("mkdirs", &dir))?;
    let mut model = Model::new();
    let opts = CreateOptions {
        replication: Some(2),
        block_size: Some(common::BLOCK),
        ..Default::default()
    };
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let mut path = format!("{dir}/f{n}");
        let bytes = common::data(200 + (n as usize % 5) * 700, n + 1000 * i as u64);
        let mut w = fs
            .create(&path, &opts)
            .await
            .map_err(err("create", &path))?;
        w.write(&bytes).await.map_err(err("write", &path))?;
        w.close().await.map_err(err("close", &path))?;
        model.insert(path.clone(), Some(bytes.len() as u64));
        if n.is_multiple_of(2) {
            let to = format!("{dir}/g{n}");
            fs.rename(&path, &to).await.map_err(err("rename", &path))?;
            model.insert(path, None);
            model.insert(to.clone(), Some(bytes.len() as u64));
            path = to;
        }
        if n.is_multiple_of(3) {
            fs.delete(&path, false)
                .await
                .map_err(err("delete", &path))?;
            model.insert(path, None);
        }
        n += 1;
    }
    Ok(model)
}

/// Every file under `/load` on NameNode `rpc` (the active), with its length.
async fn dump(rpc: SocketAddr) -> BTreeMap<String, u64> {
    let fs = FileSystem::connect(&format!("hdfs://{rpc}")).await.unwrap();
    let mut out = BTreeMap::new();
    for c in fs.list("/load").await.unwrap() {
        let dir = format!("/load/{}", c.path);
        for f in fs.list(&dir).await.unwrap() {
            out.insert(format!("{dir}/{}", f.path), f.len);
        }
    }
    out
}

/// Asks NameNode `rpc` to become active (`hdfs haadmin -transitionToActive`): the leader
/// hands leadership to it.
async fn make_active(rpc: SocketAddr) {
    use ferrite_ipc::client::IpcClient;
    use ferrite_proto::common::{
        HaRequestSource, HaStateChangeRequestInfoProto, TransitionToActiveRequestProto,
        TransitionToActiveResponseProto,
    };
    let c = IpcClient::connect(rpc, "root", ferrite_ipc::HA_SERVICE_PROTOCOL)
        .await
        .unwrap();
    let req = TransitionToActiveRequestProto {
        req_info: HaStateChangeRequestInfoProto {
            req_source: HaRequestSource::RequestByUser as i32,
        },
    };
    let _: TransitionToActiveResponseProto = c.call("transitionToActive", &req).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_kills_of_the_active_under_eight_clients_lose_and_invent_nothing() {
    let root = tempfile::tempdir().unwrap();
    let (conf, rpcs) = ha_keys();
    let mut nns: Vec<Option<Proc>> = (0..3)
        .map(|i| Some(namenode(root.path(), &conf, i)))
        .collect();
    let _dns: Vec<Proc> = (0..2).map(|i| datanode(root.path(), &conf, i)).collect();
    let mut live = [true; 3];
    active(&rpcs, &live, "/probe").await;

    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| tokio::spawn(client(i, rpcs.clone(), stop.clone())))
        .collect();
    let mut took = Vec::new();
    for round in 0..ROUNDS {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let leader = active(&rpcs, &live, "/probe").await;
        let killed = Instant::now();
        nns[leader] = None; // SIGKILL
        live[leader] = false;
        let next = active(&rpcs, &live, &format!("/probe{round}")).await;
        took.push(killed.elapsed());
        assert_ne!(next, leader);
        nns[leader] = Some(namenode(root.path(), &conf, leader));
        live[leader] = true;
    }
    stop.store(true, Ordering::SeqCst);
    let mut expected = BTreeMap::new();
    for c in clients {
        let model = c
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("an error reached a client: {e}"));
        expected.extend(model.into_iter().filter_map(|(p, len)| Some((p, len?))));
    }
    took.sort();
    eprintln!(
        "failovers: median {:?}, worst {:?}",
        took[took.len() / 2],
        took[took.len() - 1]
    );
    assert!(
        expected.len() > CLIENTS,
        "the clients did work: {expected:?}"
    );

    for target in 0..3 {
        if active(&rpcs, &live, "/probe").await != target {
            make_active(rpcs[target]).await;
        }
        assert_eq!(active(&rpcs, &live, "/probe").await, target);
        let got = dump(rpcs[target]).await;
        assert_eq!(
            got, expected,
            "{}: the namespace holds what was acknowledged, only",
            NAMES[target]
        );
    }
}
