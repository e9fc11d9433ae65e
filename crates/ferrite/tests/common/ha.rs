//! What the HA process tests share: a three-NameNode nameservice `test` in HDFS's keys on
//! free loopback ports, its NameNode and DataNode processes, finding the active, asking a
//! NameNode to become active, and a client load that remembers what it was told was done.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrite_client::fs::ClientOptions;
use ferrite_client::{CreateOptions, FileSystem};

use super::{spawn, Proc};

pub const NAMES: [&str; 3] = ["nn1", "nn2", "nn3"];

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The keys of nameservice `test` on free loopback ports (plus `extra`), and its NameNodes'
/// RPC addresses. The nine ports are held until all are chosen, so no two are the same.
pub fn ha_keys(extra: &[&str]) -> (Vec<String>, Vec<SocketAddr>) {
    let held: Vec<std::net::TcpListener> = (0..9)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let mut ports = held.iter().map(|l| l.local_addr().unwrap().port());
    let mut free_port = move || ports.next().unwrap();
    let mut conf = vec![
        "dfs.nameservices=test".to_string(),
        "dfs.ha.namenodes.test=nn1,nn2,nn3".to_string(),
        "dfs.namenode.fs-limits.min-block-size=0".to_string(),
        "dfs.heartbeat.interval=1".to_string(),
    ];
    conf.extend(extra.iter().map(|s| s.to_string()));
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

fn process(conf: &[String], args: &[&str]) -> Proc {
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    for c in conf {
        a.push("--conf".into());
        a.push(c.clone());
    }
    spawn(&a)
}

/// NameNode `i` of the nameservice, over `root/nn<i+1>`.
pub fn namenode(root: &Path, conf: &[String], i: usize) -> Proc {
    let data = root.join(NAMES[i]).display().to_string();
    let id = format!("dfs.ha.namenode.id={}", NAMES[i]);
    process(conf, &["namenode", "--data", &data, "--conf", &id])
}

/// All three NameNodes, as processes (`None` once a test kills one).
pub fn start_group(root: &Path, conf: &[String]) -> Vec<Option<Proc>> {
    (0..3).map(|i| Some(namenode(root, conf, i))).collect()
}

/// A DataNode of the nameservice: it reports to every NameNode the keys name.
pub fn datanode(root: &Path, conf: &[String], i: usize) -> Proc {
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
    process(conf, &args)
}

/// Whether `err` is HDFS's answer from a standby.
pub fn is_standby(err: &ferrite_client::Error) -> bool {
    err.class()
        .is_some_and(|c| c == "org.apache.hadoop.ipc.StandbyException")
}

/// Whether `err` is HDFS's "try again shortly" (`RetriableException`).
pub fn is_retriable(err: &ferrite_client::Error) -> bool {
    err.class()
        .is_some_and(|c| c == "org.apache.hadoop.ipc.RetriableException")
}

/// The NameNode, of those `live`, that accepts `mkdirs(probe)` within 20 s; the others
/// must refuse as standbys, and two accepting is a failure.
pub async fn active(rpcs: &[SocketAddr], live: &[bool], probe: &str) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut accepted = Vec::new();
        for (i, rpc) in rpcs.iter().enumerate().filter(|(i, _)| live[*i]) {
            let Ok(fs) = FileSystem::connect(&format!("hdfs://{rpc}")).await else {
                continue;
            };
            match fs.mkdirs(probe, 0o755, true).await {
                Ok(_) => accepted.push(i),
                // An active restarted moments ago, in start-up safe mode until its
                // DataNodes report: asked to retry, as HDFS asks.
                Err(e) if is_retriable(&e) => {}
                Err(e) => assert!(is_standby(&e), "{rpc}: {e}"),
            }
        }
        match accepted[..] {
            [one] => return one,
            [] if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            [] => panic!("no active NameNode for {probe} within 20 s"),
            _ => panic!("active NameNodes for {probe}: {accepted:?}"),
        }
    }
}

/// Asks NameNode `rpc` to become active (`hdfs haadmin -transitionToActive`): the leader
/// hands leadership to it.
pub async fn make_active(rpc: SocketAddr) {
    use ferrite_proto::common::{TransitionToActiveRequestProto, TransitionToActiveResponseProto};
    let req = TransitionToActiveRequestProto {
        req_info: by_user(),
    };
    let _: TransitionToActiveResponseProto = ha_call(rpc, "transitionToActive", &req).await;
}

/// Asks the active at `rpc` to turn standby (`hdfs haadmin -transitionToStandby`): it hands
/// leadership to the most caught-up follower.
pub async fn make_standby(rpc: SocketAddr) {
    use ferrite_proto::common::{
        TransitionToStandbyRequestProto, TransitionToStandbyResponseProto,
    };
    let req = TransitionToStandbyRequestProto {
        req_info: by_user(),
    };
    let _: TransitionToStandbyResponseProto = ha_call(rpc, "transitionToStandby", &req).await;
}

fn by_user() -> ferrite_proto::common::HaStateChangeRequestInfoProto {
    ferrite_proto::common::HaStateChangeRequestInfoProto {
        req_source: ferrite_proto::common::HaRequestSource::RequestByUser as i32,
    }
}

async fn ha_call<Q: prost::Message, A: prost::Message + Default>(
    rpc: SocketAddr,
    method: &str,
    req: &Q,
) -> A {
    use ferrite_ipc::client::IpcClient;
    let c = IpcClient::connect(rpc, "root", ferrite_ipc::HA_SERVICE_PROTOCOL)
        .await
        .unwrap();
    c.call(method, req)
        .await
        .unwrap_or_else(|e| panic!("{method} at {rpc}: {e}"))
}

/// What a client's acknowledged calls left: each path it touched, with the file's length
/// where it is there, `None` where it is gone.
pub type Model = BTreeMap<String, Option<u64>>;

/// One client's work under `/load/c<i>` until `stop`: write a file (two replicas), rename
/// every other one, delete every third, through the whole nameservice. Returns what it was
/// told was done, or the first error it saw.
pub async fn load_client(
    i: usize,
    rpcs: Vec<SocketAddr>,
    stop: Arc<AtomicBool>,
) -> Result<Model, String> {
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
        block_size: Some(super::BLOCK),
        ..Default::default()
    };
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let mut path = format!("{dir}/f{n}");
        let bytes = super::data(200 + (n as usize % 5) * 700, n + 1000 * i as u64);
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

/// Starts `n` load clients; [`Load::finish`] stops them and gathers what they were told.
pub struct Load {
    stop: Arc<AtomicBool>,
    clients: Vec<tokio::task::JoinHandle<Result<Model, String>>>,
}

impl Load {
    pub fn start(n: usize, rpcs: &[SocketAddr]) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let clients = (0..n)
            .map(|i| tokio::spawn(load_client(i, rpcs.to_vec(), stop.clone())))
            .collect();
        Load { stop, clients }
    }

    /// Every file the clients were told exists, with its length; panics if an error
    /// reached any client.
    pub async fn finish(self) -> BTreeMap<String, u64> {
        self.stop.store(true, Ordering::SeqCst);
        let mut expected = BTreeMap::new();
        for c in self.clients {
            let model = c
                .await
                .unwrap()
                .unwrap_or_else(|e| panic!("an error reached a client: {e}"));
            expected.extend(model.into_iter().filter_map(|(p, len)| Some((p, len?))));
        }
        expected
    }
}

/// Every file under `/load` on NameNode `rpc` (the active), with its length.
pub async fn dump(rpc: SocketAddr) -> BTreeMap<String, u64> {
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

/// Makes each NameNode active in turn and checks that its namespace holds exactly
/// `expected` under `/load`.
pub async fn every_namenode_holds(rpcs: &[SocketAddr], expected: &BTreeMap<String, u64>) {
    let live = vec![true; rpcs.len()];
    for target in 0..rpcs.len() {
        if active(rpcs, &live, "/probe").await != target {
            make_active(rpcs[target]).await;
        }
        assert_eq!(active(rpcs, &live, "/probe").await, target);
        let got = dump(rpcs[target]).await;
        assert_eq!(
            &got, expected,
            "{}: the namespace holds what was acknowledged, only",
            NAMES[target]
        );
    }
}

/// Hadoop's own client as a load (`ferrite.interop.HaLoad` of the interop jar that the test
/// command builds): `threads` threads, each with a FileSystem of its own, writing, renaming
/// and deleting under `/load/j<thread>` through `hdfs://test/` with Hadoop's
/// `ConfiguredFailoverProxyProvider`, until told to stop.
pub struct JavaLoad {
    child: std::process::Child,
    dir: tempfile::TempDir,
}

impl JavaLoad {
    /// Starts the load against the nameservice the `conf` keys describe.
    pub fn start(threads: usize, conf: &[String]) -> JavaLoad {
        let mut keys = conf.to_vec();
        keys.push(
            "dfs.client.failover.proxy.provider.test=org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider".into(),
        );
        let (mut java, dir) = super::java::hadoop_java(&keys);
        let child = java
            .args([
                "ferrite.interop.HaLoad",
                "hdfs://test",
                &threads.to_string(),
            ])
            .arg(dir.path().join("stop"))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("java");
        JavaLoad { child, dir }
    }

    /// Stops the load and returns every file its threads were told exists, with its
    /// length; panics if an error reached any of them.
    pub fn finish(self) -> BTreeMap<String, u64> {
        std::fs::write(self.dir.path().join("stop"), b"").unwrap();
        let out = self.child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "an error reached Hadoop's client: {text}"
        );
        let mut live = BTreeMap::new();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            if let (Some("live"), Some(path), Some(len)) =
                (words.next(), words.next(), words.next())
            {
                live.insert(path.to_string(), len.parse().unwrap());
            }
        }
        live
    }
}
