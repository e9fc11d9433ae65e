//! Rack awareness on separate hosts: six DataNode processes, each on its own loopback
//! address (`127.0.1.1` … `127.0.1.6`, so the NameNode knows each by its own address), two
//! per rack on three racks by a topology table (Hadoop's `TableMapping`). Every block's
//! three replicas span two racks; killing a whole rack leaves every file readable, and the
//! NameNode copies each block back to three replicas on the racks left.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::{get, spawn, Proc};
use ferrite_client::{CreateOptions, FileSystem};

const RACKS: [&str; 3] = ["/dc1/rackA", "/dc1/rackB", "/dc1/rackC"];

fn node_ip(i: usize) -> String {
    format!("127.0.1.{}", i + 1)
}

fn rack_of_node(i: usize) -> &'static str {
    RACKS[i / 2]
}

fn datanode(root: &std::path::Path, nn: &str, i: usize) -> Proc {
    common::datanode_at(root, nn, &node_ip(i), i)
}

/// Each block of `path`: the racks its replicas are on, by the NameNode's locations.
async fn racks_of_blocks(fs: &FileSystem, path: &str) -> Vec<Vec<String>> {
    let located = fs.block_locations(path).await.unwrap();
    located
        .blocks
        .iter()
        .map(|b| {
            b.locs
                .iter()
                .map(|l| l.location.clone().unwrap_or_default())
                .collect()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_span_two_racks_and_a_lost_rack_is_replaced() {
    let root = tempfile::tempdir().unwrap();
    let table = root.path().join("topology.table");
    let lines: String = (0..6)
        .map(|i| format!("{} {}\n", node_ip(i), rack_of_node(i)))
        .collect();
    std::fs::write(&table, lines).unwrap();
    let conf = |kv: &str| ["--conf".to_string(), kv.to_string()];
    let mut args = vec![
        "namenode".to_string(),
        "--port".into(),
        "0".into(),
        "--data".into(),
        root.path().join("nn").display().to_string(),
    ];
    for kv in [
        "net.topology.node.switch.mapping.impl=org.apache.hadoop.net.TableMapping".to_string(),
        format!("net.topology.table.file.name={}", table.display()),
        "dfs.namenode.fs-limits.min-block-size=0".into(),
        "dfs.namenode.safemode.extension=0".into(),
        "dfs.heartbeat.interval=1".into(),
        "dfs.namenode.redundancy.interval.seconds=1".into(),
        // Dead after 2 x 1 s + 10 heartbeats of 1 s.
        "dfs.namenode.heartbeat.recheck-interval=1000".into(),
    ] {
        args.extend(conf(&kv));
    }
    let nn = spawn(&args);
    let nn_addr = nn.ready.trim_start_matches("hdfs://").to_string();
    let mut dns: Vec<Option<Proc>> = (0..6)
        .map(|i| Some(datanode(root.path(), &nn_addr, i)))
        .collect();
    let fs = FileSystem::connect(&nn.ready).await.unwrap();
    common::wait_live(&fs, 6).await;
    // The NameNode knows each node by its own address, on the rack the table gives it.
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for d in fs.live_datanodes().await.unwrap() {
        seen.insert(d.id.ip_addr.clone(), d.location.clone().unwrap_or_default());
    }
    let want: BTreeMap<String, String> = (0..6)
        .map(|i| (node_ip(i), rack_of_node(i).to_string()))
        .collect();
    assert_eq!(seen, want);

    let opts = CreateOptions {
        replication: Some(3),
        ..Default::default()
    };
    let mut files = Vec::new();
    for f in 0..8 {
        let path = format!("/racks/f{f}");
        let bytes = common::data(3000 + f * 100, f as u64);
        let mut w = fs.create(&path, &opts).await.unwrap();
        w.write(&bytes).await.unwrap();
        w.close().await.unwrap();
        for racks in racks_of_blocks(&fs, &path).await {
            let distinct: BTreeSet<&String> = racks.iter().collect();
            assert_eq!(racks.len(), 3, "{path}: {racks:?}");
            assert_eq!(
                distinct.len(),
                2,
                "{path}: replicas on two racks: {racks:?}"
            );
        }
        files.push((path, bytes));
    }

    // Rack C goes dark: every file still reads, and each block gets back to three
    // replicas, on racks A and B.
    dns[4] = None;
    dns[5] = None;
    for (path, bytes) in &files {
        assert_eq!(&get(&fs, path).await, bytes, "{path} with rack C gone");
    }
    let healed = async {
        'wait: for _ in 0..600 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            for (path, _) in &files {
                for racks in racks_of_blocks(&fs, path).await {
                    let distinct: BTreeSet<&String> = racks.iter().collect();
                    if racks.len() != 3
                        || distinct.len() != 2
                        || distinct.contains(&RACKS[2].to_string())
                    {
                        continue 'wait;
                    }
                }
            }
            return true;
        }
        false
    };
    assert!(
        healed.await,
        "every block back to three replicas on racks A and B"
    );
    for (path, bytes) in &files {
        assert_eq!(&get(&fs, path).await, bytes);
    }
    drop(dns);
    drop(nn);
}

/// `ferrite local --datanodes 6 --racks 3`: six DataNodes on addresses of their own, two
/// per rack, and files placed over two racks each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ferrite_local_runs_a_cluster_of_three_racks() {
    let root = tempfile::tempdir().unwrap();
    let args: Vec<String> = [
        "local",
        "--data",
        &root.path().display().to_string(),
        "--port",
        "0",
        "--datanodes",
        "6",
        "--racks",
        "3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let local = spawn(&args);
    let fs = FileSystem::connect(&local.ready).await.unwrap();
    let mut by_rack: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for d in fs.live_datanodes().await.unwrap() {
        by_rack
            .entry(d.location.clone().unwrap_or_default())
            .or_default()
            .push(d.id.ip_addr.clone());
    }
    for ips in by_rack.values_mut() {
        ips.sort();
    }
    let want: BTreeMap<String, Vec<String>> = (1..=3)
        .map(|r| {
            (
                format!("/rack{r}"),
                vec![format!("127.0.1.{r}"), format!("127.0.1.{}", r + 3)],
            )
        })
        .collect();
    assert_eq!(by_rack, want);
    let opts = CreateOptions {
        replication: Some(3),
        ..Default::default()
    };
    let mut w = fs.create("/r", &opts).await.unwrap();
    w.write(&common::data(4000, 1)).await.unwrap();
    w.close().await.unwrap();
    for racks in racks_of_blocks(&fs, "/r").await {
        let distinct: BTreeSet<&String> = racks.iter().collect();
        assert_eq!((racks.len(), distinct.len()), (3, 2), "{racks:?}");
    }
    drop(local);
}
