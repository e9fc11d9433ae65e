//! Decommission and maintenance on separate hosts: four DataNode processes, each on its own
//! loopback address, named in HDFS's hosts files. A node excluded and refreshed
//! (`refreshNodes`) keeps serving reads while its replicas are copied elsewhere, then is
//! Decommissioned; listed again it returns to service and the extra copies go. A node put
//! in maintenance leaves and returns with nothing copied; a window that ends while it is
//! gone has its blocks copied.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{spawn, wait_live, Proc};
use ferrite_client::{CreateOptions, FileSystem};
use ferrite_proto::hdfs::DatanodeReportTypeProto;

const BLOCK: u64 = 1024;

fn node_ip(i: usize) -> String {
    format!("127.0.1.{}", 21 + i)
}

fn datanode(root: &Path, nn: &str, i: usize) -> Proc {
    common::datanode_at(root, nn, &node_ip(i), i)
}

/// A NameNode reading `hosts` (with `extra` keys), and four DataNodes.
fn cluster(root: &Path, hosts: &[String]) -> (Proc, Vec<Option<Proc>>) {
    let mut args = vec![
        "namenode".to_string(),
        "--port".into(),
        "0".into(),
        "--data".into(),
        root.join("nn").display().to_string(),
    ];
    let mut keys = vec![
        "dfs.namenode.fs-limits.min-block-size=0".to_string(),
        "dfs.namenode.safemode.extension=0".into(),
        "dfs.heartbeat.interval=1".into(),
        "dfs.namenode.redundancy.interval.seconds=1".into(),
        // Dead after 2 x 1 s + 10 heartbeats of 1 s.
        "dfs.namenode.heartbeat.recheck-interval=1000".into(),
        // Enough copies per pass that a thousand blocks move within the test's time.
        "dfs.namenode.replication.max-streams=64".into(),
        "dfs.namenode.replication.work.multiplier.per.iteration=64".into(),
    ];
    keys.extend(hosts.iter().cloned());
    for k in keys {
        args.push("--conf".into());
        args.push(k);
    }
    let nn = spawn(&args);
    let addr = nn.ready.trim_start_matches("hdfs://").to_string();
    let dns = (0..4).map(|i| Some(datanode(root, &addr, i))).collect();
    (nn, dns)
}

/// Node `i`'s admin state (`AdminState` of DatanodeInfoProto) and its block count.
async fn state_of(fs: &FileSystem, i: usize) -> (i32, u32) {
    let all = fs
        .datanode_report(DatanodeReportTypeProto::All)
        .await
        .unwrap();
    let d = all
        .iter()
        .find(|d| d.id.ip_addr == node_ip(i))
        .unwrap_or_else(|| panic!("node {i} in {all:?}"));
    (d.admin_state.unwrap_or(0), d.num_blocks.unwrap_or(0))
}

/// The node holding the most replicas, once the nodes hold `total` between them.
async fn fullest_node(fs: &FileSystem, total: u32) -> usize {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut held = Vec::new();
        for i in 0..4 {
            held.push(state_of(fs, i).await.1);
        }
        if held.iter().sum::<u32>() >= total {
            return (0..4).max_by_key(|&i| held[i]).unwrap();
        }
        assert!(Instant::now() < deadline, "replicas reported: {held:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn wait_state(fs: &FileSystem, i: usize, state: i32, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (now, blocks) = state_of(fs, i).await;
        if now == state {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "node {i} still in state {now} (holding {blocks} blocks), not {state}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Writes `files` files of `blocks` one-KiB blocks each, two replicas.
async fn write_files(fs: &FileSystem, files: usize, blocks: usize) -> Vec<(String, Vec<u8>)> {
    let opts = CreateOptions {
        replication: Some(2),
        block_size: Some(BLOCK),
        ..Default::default()
    };
    let mut out = Vec::new();
    for f in 0..files {
        let path = format!("/d/f{f}");
        let bytes = common::data(BLOCK as usize * blocks, f as u64);
        let mut w = fs.create(&path, &opts).await.unwrap();
        w.write(&bytes).await.unwrap();
        w.close().await.unwrap();
        out.push((path, bytes));
    }
    out
}

/// For each block of each file: how many of its replicas are on nodes other than
/// `except` (an address).
async fn copies_elsewhere(
    fs: &FileSystem,
    files: &[(String, Vec<u8>)],
    except: &str,
) -> Vec<usize> {
    let mut out = Vec::new();
    for (path, _) in files {
        for b in fs.block_locations(path).await.unwrap().blocks {
            out.push(b.locs.iter().filter(|l| l.id.ip_addr != except).count());
        }
    }
    out
}

/// Readers that check every file's bytes until stopped; panics on the first failure.
fn readers(
    fs: &FileSystem,
    files: &[(String, Vec<u8>)],
    stop: &Arc<AtomicBool>,
) -> tokio::task::JoinHandle<usize> {
    let (fs, files, stop) = (fs.clone(), files.to_vec(), stop.clone());
    tokio::spawn(async move {
        let mut reads = 0;
        while !stop.load(Ordering::SeqCst) {
            let (path, bytes) = &files[reads % files.len()];
            assert_eq!(&common::get(&fs, path).await, bytes, "{path}");
            reads += 1;
        }
        reads
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decommissioned_node_leaves_every_block_replicated_and_can_come_back() {
    let root = tempfile::tempdir().unwrap();
    let exclude = root.path().join("exclude");
    std::fs::write(&exclude, "").unwrap();
    let (nn, dns) = cluster(
        root.path(),
        &[format!("dfs.hosts.exclude={}", exclude.display())],
    );
    let fs = FileSystem::connect(&nn.ready).await.unwrap();
    wait_live(&fs, 4).await;
    // 2,000 blocks of two replicas over four nodes: about a thousand on each.
    let files = write_files(&fs, 200, 10).await;
    // The node holding the most, once every replica is reported: at least the mean of a
    // thousand (which node that is varies with placement's load and timing).
    let victim = fullest_node(&fs, 4000).await;
    let (_, held) = state_of(&fs, victim).await;
    assert!(held >= 1000, "the node holds {held} blocks");

    let stop = Arc::new(AtomicBool::new(false));
    let reading = readers(&fs, &files, &stop);
    // Writes go on too, and never land on the leaving node.
    let writer = {
        let (fs, stop) = (fs.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                let path = format!("/w/f{n}");
                let opts = CreateOptions {
                    replication: Some(2),
                    ..Default::default()
                };
                let mut w = fs.create(&path, &opts).await.unwrap();
                w.write(&common::data(3000, n)).await.unwrap();
                w.close().await.unwrap();
                n += 1;
            }
            n
        })
    };
    std::fs::write(&exclude, format!("# leaving\n{}\n", node_ip(victim))).unwrap();
    fs.refresh_nodes().await.unwrap();
    assert_eq!(state_of(&fs, victim).await.0, 1, "Decommission In Progress");
    let decommissioning = fs
        .datanode_report(DatanodeReportTypeProto::Decommissioning)
        .await
        .unwrap();
    assert_eq!(decommissioning.len(), 1);
    wait_state(&fs, victim, 2, 180).await; // Decommissioned
    stop.store(true, Ordering::SeqCst);
    assert!(
        reading.await.unwrap() > 0,
        "reads ran during the decommission"
    );
    let written = writer.await.unwrap();
    for n in 0..written {
        let path = format!("/w/f{n}");
        for b in fs.block_locations(&path).await.unwrap().blocks {
            for l in &b.locs {
                assert_ne!(
                    l.id.ip_addr,
                    node_ip(victim),
                    "{path} placed on a leaving node"
                );
            }
        }
    }
    let elsewhere = copies_elsewhere(&fs, &files, &node_ip(victim)).await;
    assert!(
        elsewhere.iter().all(|&n| n >= 2),
        "every block has two replicas besides the decommissioned node's"
    );
    // Its replicas are still listed, last, as HDFS lists a decommissioned node's.
    for (path, bytes) in files.iter().take(20) {
        assert_eq!(&common::get(&fs, path).await, bytes);
    }

    // Back into service: the surplus copies go, two replicas per block remain.
    std::fs::write(&exclude, "").unwrap();
    fs.refresh_nodes().await.unwrap();
    assert_eq!(state_of(&fs, victim).await.0, 0, "In Service");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut counts = BTreeMap::new();
        for (path, _) in &files {
            for b in fs.block_locations(path).await.unwrap().blocks {
                *counts.entry(b.locs.len()).or_insert(0) += 1;
            }
        }
        if counts.keys().all(|&n| n == 2) {
            break;
        }
        assert!(Instant::now() < deadline, "replicas per block: {counts:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    drop(dns);
    drop(nn);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_leaves_replicas_in_place_until_its_window_ends() {
    let root = tempfile::tempdir().unwrap();
    let hosts = root.path().join("hosts.json");
    let write_hosts = |victim_until: Option<i64>| {
        let entries: Vec<String> = (0..4)
            .map(|i| match victim_until {
                Some(t) if i == 1 => format!(
                    r#"{{"hostName": "{}", "adminState": "IN_MAINTENANCE", "maintenanceExpireTimeInMS": {t}}}"#,
                    node_ip(i)
                ),
                _ => format!(r#"{{"hostName": "{}"}}"#, node_ip(i)),
            })
            .collect();
        std::fs::write(&hosts, format!("[{}]", entries.join(","))).unwrap();
    };
    write_hosts(None);
    let (nn, mut dns) = cluster(
        root.path(),
        &[
            format!("dfs.hosts={}", hosts.display()),
            "dfs.namenode.hosts.provider.classname=org.apache.hadoop.hdfs.server.blockmanagement.CombinedHostFileManager".into(),
        ],
    );
    let fs = FileSystem::connect(&nn.ready).await.unwrap();
    wait_live(&fs, 4).await;
    let files = write_files(&fs, 20, 5).await;
    let victim = 1;
    let total = |fs: &FileSystem| {
        let fs = fs.clone();
        async move {
            let mut sum = 0;
            for i in [0, 2, 3] {
                sum += state_of(&fs, i).await.1;
            }
            sum
        }
    };
    let others_before = total(&fs).await;
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64
    };

    // A long window: the node enters maintenance at once (every block has a copy
    // elsewhere), goes away, comes back; nothing was copied.
    write_hosts(Some(now_ms() + 600_000));
    fs.refresh_nodes().await.unwrap();
    wait_state(&fs, victim, 4, 30).await; // In Maintenance
    dns[victim] = None;
    tokio::time::sleep(Duration::from_secs(15)).await; // past the dead interval
    for (path, bytes) in &files {
        assert_eq!(
            &common::get(&fs, path).await,
            bytes,
            "{path} with the node away"
        );
    }
    assert_eq!(
        total(&fs).await,
        others_before,
        "nothing copied for a node in maintenance"
    );
    let addr = nn.ready.trim_start_matches("hdfs://").to_string();
    dns[victim] = Some(datanode(root.path(), &addr, victim));
    wait_live(&fs, 4).await;
    write_hosts(None);
    fs.refresh_nodes().await.unwrap();
    assert_eq!(state_of(&fs, victim).await.0, 0);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        total(&fs).await,
        others_before,
        "and nothing after it returned"
    );

    // A short window that ends while the node is away: its blocks are copied then.
    write_hosts(Some(now_ms() + 16_000));
    fs.refresh_nodes().await.unwrap();
    wait_state(&fs, victim, 4, 30).await;
    dns[victim] = None;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let elsewhere = copies_elsewhere(&fs, &files, &node_ip(victim)).await;
        if elsewhere.iter().all(|&n| n >= 2) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "blocks not copied after the window ended"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        state_of(&fs, victim).await.0,
        0,
        "back in service (and dead)"
    );
    drop(dns);
    drop(nn);
}

/// A DataNode registers under `dfs.datanode.hostname` when set, else under the machine's
/// host name, as HDFS's does; the NameNode reports that name, and a hosts file may name
/// the node by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_datanode_is_known_by_its_configured_host_name() {
    let root = tempfile::tempdir().unwrap();
    let exclude = root.path().join("exclude");
    std::fs::write(&exclude, "").unwrap();
    let nn = spawn(&[
        "namenode".to_string(),
        "--port".into(),
        "0".into(),
        "--data".into(),
        root.path().join("nn").display().to_string(),
        "--conf".into(),
        format!("dfs.hosts.exclude={}", exclude.display()),
    ]);
    let addr = nn.ready.trim_start_matches("hdfs://").to_string();
    let _named = common::datanode_with(
        root.path(),
        &addr,
        &node_ip(0),
        0,
        &["dfs.datanode.hostname=dn-a.ferrite.test"],
    );
    let _plain = datanode(root.path(), &addr, 1);
    let fs = FileSystem::connect(&nn.ready).await.unwrap();
    wait_live(&fs, 2).await;
    let report = fs
        .datanode_report(DatanodeReportTypeProto::All)
        .await
        .unwrap();
    let host_of = |ip: String| {
        report
            .iter()
            .find(|d| d.id.ip_addr == ip)
            .map(|d| d.id.host_name.clone())
            .unwrap()
    };
    assert_eq!(host_of(node_ip(0)), "dn-a.ferrite.test");
    // Otherwise the machine's name as Java's getCanonicalHostName gives it: the host
    // name's address, looked up again.
    let getent = |db: &str, what: &str| {
        let out = std::process::Command::new("getent")
            .args([db, what])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let me = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let addr = getent("ahostsv4", me.trim())[0].clone();
    assert_eq!(host_of(node_ip(1)), getent("hosts", &addr)[1]);

    std::fs::write(&exclude, "dn-a.ferrite.test\n").unwrap();
    fs.refresh_nodes().await.unwrap();
    assert_eq!(state_of(&fs, 0).await.0, 1, "Decommission In Progress");
    assert_eq!(state_of(&fs, 1).await.0, 0, "Normal");
}
