//! Balancing on separate hosts: three DataNodes, each on its own loopback address and its
//! own small disk (a tmpfs, so that a node's use is a share of something), filled with
//! blocks; two empty ones join, and a balancer levels them through NamenodeProtocol and
//! the DataNodes' REPLACE_BLOCK / COPY_BLOCK, signing each move with the block keys it
//! got from `getBlockKeys` (block tokens are on, Ferrite's default): Hadoop 3.4.1's own
//! (`hdfs balancer`, run from the interop jar's classpath), and `ferrite balancer`.
//! Readers run throughout, and no block is ever seen with fewer replicas than it should
//! have.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::disk::SmallDisk;
use common::{spawn, wait_live, Proc};
use ferrite_client::{CreateOptions, FileSystem};
use ferrite_proto::hdfs::DatanodeReportTypeProto;

const MIB: u64 = 1 << 20;
/// Each DataNode's disk.
const DISK_MIB: u64 = 40;

fn node_ip(i: usize) -> String {
    format!("127.0.1.{}", 41 + i)
}

fn namenode(root: &Path) -> Proc {
    let mut args = vec![
        "namenode".to_string(),
        "--port".into(),
        "0".into(),
        "--data".into(),
        root.join("nn").display().to_string(),
    ];
    for k in [
        "dfs.namenode.safemode.extension=0",
        "dfs.heartbeat.interval=1",
        "dfs.namenode.redundancy.interval.seconds=1",
    ] {
        args.push("--conf".into());
        args.push(k.into());
    }
    spawn(&args)
}

/// DataNode `i` on its own address and its own small disk.
fn datanode(root: &Path, nn: &str, i: usize, disks: &mut Vec<SmallDisk>, conf: &[&str]) -> Proc {
    disks.push(SmallDisk::mount(&root.join(format!("dn{i}")), DISK_MIB));
    // Room is promised a whole block of the DataNode's size when a write starts.
    let mut conf = conf.to_vec();
    conf.push("dfs.blocksize=1048576");
    common::datanode_with(root, nn, &node_ip(i), i, &conf)
}

/// Each live node's use of its disk by blocks, in percent, by address (NaN until its
/// capacity is reported).
async fn utilization(fs: &FileSystem) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = fs
        .datanode_report(DatanodeReportTypeProto::Live)
        .await
        .unwrap()
        .iter()
        .map(|d| {
            let used = d.dfs_used.unwrap_or(0) as f64;
            let cap = d.capacity.unwrap_or(0) as f64;
            (d.id.ip_addr.clone(), used * 100.0 / cap)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Polls every file's blocks until stopped; returns the fewest replicas any block showed
/// (and where), so a move that dropped a copy before its new one counted is caught.
fn replica_watch(
    fs: &FileSystem,
    files: &[String],
    stop: &Arc<AtomicBool>,
) -> tokio::task::JoinHandle<(usize, String)> {
    let (fs, files, stop) = (fs.clone(), files.to_vec(), stop.clone());
    tokio::spawn(async move {
        let mut fewest = (usize::MAX, String::new());
        while !stop.load(Ordering::SeqCst) {
            for path in &files {
                for b in fs.block_locations(path).await.unwrap().blocks {
                    if b.locs.len() < fewest.0 {
                        fewest = (b.locs.len(), format!("{path} block {}", b.b.block_id));
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        fewest
    })
}

/// A cluster to level: three DataNodes 60% full, two empty ones just joined, readers
/// checking every byte and a watcher counting replicas, until [`Scene::finish`].
struct Scene {
    fs: FileSystem,
    url: String,
    files: Vec<String>,
    stop: Arc<AtomicBool>,
    watch: tokio::task::JoinHandle<(usize, String)>,
    reading: tokio::task::JoinHandle<u64>,
    // Dropped last, in this order: processes, then their disks.
    _procs: Vec<Proc>,
    _disks: Vec<SmallDisk>,
    _root: tempfile::TempDir,
}

impl Scene {
    /// The cluster, each DataNode with `dn_conf` besides the test's own keys.
    async fn start(dn_conf: &[&str]) -> Scene {
        let root = tempfile::tempdir().unwrap();
        let mut disks = Vec::new();
        let nn = namenode(root.path());
        let url = nn.ready.clone();
        let addr = url.trim_start_matches("hdfs://").to_string();
        let mut procs = vec![nn];
        for i in 0..3 {
            procs.push(datanode(root.path(), &addr, i, &mut disks, dn_conf));
        }
        let fs = FileSystem::connect(&url).await.unwrap();
        wait_live(&fs, 3).await;

        // 36 one-MiB blocks of two replicas on three 40 MiB disks: 24 MiB, 60%, on each.
        let opts = CreateOptions {
            replication: Some(2),
            block_size: Some(MIB),
            ..Default::default()
        };
        let mut files = Vec::new();
        for f in 0..12 {
            let path = format!("/data/f{f}");
            let mut w = fs.create(&path, &opts).await.unwrap();
            w.write(&common::data(3 * MIB as usize, f)).await.unwrap();
            w.close().await.unwrap();
            files.push(path);
        }
        procs.push(datanode(root.path(), &addr, 3, &mut disks, dn_conf));
        procs.push(datanode(root.path(), &addr, 4, &mut disks, dn_conf));
        wait_live(&fs, 5).await;
        // Heartbeats carry each node's space and use: wait until all five count, the
        // three old ones full and the two new ones empty.
        let mut before = Vec::new();
        for _ in 0..100 {
            before = utilization(&fs).await;
            let full = before.iter().filter(|(_, u)| *u > 50.0).count();
            let empty = before.iter().filter(|(_, u)| *u < 1.0).count();
            if full == 3 && empty == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let full = before.iter().filter(|(_, u)| *u > 50.0).count();
        assert_eq!(full, 3, "{before:?}");

        let stop = Arc::new(AtomicBool::new(false));
        let watch = replica_watch(&fs, &files, &stop);
        let reading = {
            let (fs, files, stop) = (fs.clone(), files.clone(), stop.clone());
            tokio::spawn(async move {
                let mut reads = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let f = reads as usize % files.len();
                    let got = common::get(&fs, &files[f]).await;
                    let want = common::data(3 * MIB as usize, f as u64);
                    assert_eq!(got, want, "{}", files[f]);
                    reads += 1;
                }
                reads
            })
        };
        Scene {
            fs,
            url,
            files,
            stop,
            watch,
            reading,
            _procs: procs,
            _disks: disks,
            _root: root,
        }
    }

    /// Stops the readers and the watcher and checks what they saw.
    async fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let reads = (&mut self.reading).await.unwrap();
        let (fewest, which) = (&mut self.watch).await.unwrap();
        assert!(reads > 0);
        assert!(fewest >= 2, "{which} was down to {fewest} replicas");
    }

    /// [`Scene::stop`], then checks that every node ended within the threshold of the
    /// mean (the Balancer's own measure) and the lock file is gone, so another balancer
    /// may run.
    async fn finish(mut self) {
        self.stop().await;
        let after = utilization(&self.fs).await;
        let mean = after.iter().map(|(_, u)| u).sum::<f64>() / after.len() as f64;
        for (ip, u) in &after {
            assert!(
                (u - mean).abs() <= 10.0,
                "{ip} at {u:.1}%, mean {mean:.1}%: {after:?}"
            );
        }
        assert!(self
            .fs
            .status("/system/balancer.id")
            .await
            .unwrap()
            .is_none());
        assert_eq!(self.files.len(), 12);
    }
}

/// Output and exit status of a finished process, as text for assertions.
fn outcome(out: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hadoops_balancer_levels_two_new_nodes_while_reads_go_on() {
    let scene = Scene::start(&[]).await;
    let (mut java, _conf) = common::java::hadoop_java(&[
        format!("fs.defaultFS={}", scene.url),
        // Ferrite's test blocks are 1 MiB; Hadoop's Balancer skips blocks under 10 MiB.
        "dfs.balancer.getBlocks.min-block-size=1024".into(),
        // Its lock file (/system/balancer.id) must fit on the small disks.
        "dfs.blocksize=1048576".into(),
        // Its pause between rounds is two heartbeats and a redundancy interval.
        "dfs.heartbeat.interval=1".into(),
        "dfs.namenode.redundancy.interval.seconds=1".into(),
    ]);
    let out = tokio::task::spawn_blocking(move || {
        java.args(["ferrite.interop.RunBalancer", "-threshold", "10"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = outcome(&out);
    assert!(out.status.success(), "the Balancer failed: {text}");
    assert!(
        text.contains("The cluster is balanced. Exiting..."),
        "{text}"
    );
    scene.finish().await;
}

/// `ferrite balancer`'s arguments for the scene's cluster, and `extra`.
fn balancer_args(scene: &Scene, extra: &[&str]) -> Vec<String> {
    // The lock file must fit on the small disks, as for Hadoop's.
    let mut a: Vec<String> = ["-fs", &scene.url, "-D", "dfs.heartbeat.interval=1"]
        .iter()
        .chain(&["-D", "dfs.blocksize=1048576"])
        .chain(&["-D", "dfs.balancer.getBlocks.min-block-size=1024"])
        .map(|s| s.to_string())
        .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// `ferrite balancer` with the given arguments, to the end.
async fn ferrite_balancer(args: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_ferrite"))
            .arg("balancer")
            .args(args)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ferrites_balancer_levels_two_new_nodes_while_reads_go_on() {
    let scene = Scene::start(&[]).await;
    let args = |extra: &[&str]| balancer_args(&scene, extra);

    // One at a time: while another holds the lock file, it refuses, as HDFS's does.
    let held = {
        let opts = CreateOptions {
            block_size: Some(MIB),
            ..Default::default()
        };
        let mut w = scene.fs.create("/system/balancer.id", &opts).await.unwrap();
        w.write(b"elsewhere").await.unwrap();
        w.hflush().await.unwrap();
        w
    };
    let out = ferrite_balancer(args(&["-threshold", "10"])).await;
    let text = outcome(&out);
    assert_eq!(out.status.code(), Some(252), "{text}"); // IO_EXCEPTION, -4
    assert!(
        text.contains("java.io.IOException: Another Balancer is running..  Exiting ..."),
        "{text}"
    );
    held.close().await.unwrap();
    // Bad arguments are refused with HDFS's words and ILLEGAL_ARGUMENTS (-5).
    let out = ferrite_balancer(args(&["-threshold", "0"])).await;
    assert_eq!(out.status.code(), Some(251), "{}", outcome(&out));
    assert!(outcome(&out).contains("Expecting a number in the range of [1.0, 100.0]: 0"));

    // A lock file left by a balancer that is gone is taken over.
    let out = ferrite_balancer(args(&["-threshold", "10", "-policy", "datanode"])).await;
    let text = outcome(&out);
    println!("{text}"); // shown when the test fails, or with --nocapture
    assert!(out.status.success(), "ferrite balancer failed: {text}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("Time Stamp               Iteration#  Bytes Already Moved"));
    assert!(
        stdout.contains("The cluster is balanced. Exiting..."),
        "{text}"
    );
    assert!(lines.last().unwrap().contains("Balancing took "), "{text}");
    // Iteration 0 moved something (its line shows the bytes left and being moved).
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&scene.url) && !l.contains(" 0 B  ")),
        "{text}"
    );
    scene.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datanodes_refuse_moves_beyond_their_quota_and_the_balancer_gives_up() {
    // No moves allowed at all: every REPLACE_BLOCK is refused with HDFS's words.
    let mut scene = Scene::start(&["dfs.datanode.balance.max.concurrent.moves=0"]).await;

    // A balancer stopped with Ctrl-C gives its lock back on the way out (HDFS's does so
    // from a shutdown hook), so the next one need not wait for the lock's lease.
    let args = balancer_args(&scene, &["-threshold", "10", "-idleiterations", "1000"]);
    let mut running = std::process::Command::new(env!("CARGO_BIN_EXE_ferrite"))
        .arg("balancer")
        .args(args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lock = "/system/balancer.id";
    for _ in 0..300 {
        if scene.fs.status(lock).await.unwrap().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(scene.fs.status(lock).await.unwrap().is_some());
    // SAFETY: a signal to a child of ours that has not been waited for.
    assert_eq!(unsafe { libc::kill(running.id() as i32, libc::SIGINT) }, 0);
    let status = tokio::task::spawn_blocking(move || running.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(scene.fs.status(lock).await.unwrap().is_none());

    let args = balancer_args(&scene, &["-threshold", "10", "-idleiterations", "2"]);
    let out = ferrite_balancer(args).await;
    let text = outcome(&out);
    println!("{text}");
    assert_eq!(out.status.code(), Some(253), "{text}"); // NO_MOVE_PROGRESS, -3
    assert!(
        text.contains("No block has been moved for 2 iterations. Exiting..."),
        "{text}"
    );
    assert!(
        text.contains("because threads quota is exceeded."),
        "{text}"
    );
    assert!(text.contains("Not able to receive block "), "{text}");
    scene.stop().await;
    // Nothing moved: the new nodes are still empty.
    let usage = utilization(&scene.fs).await;
    assert!(
        usage.iter().filter(|(_, u)| *u < 1.0).count() == 2,
        "{usage:?}"
    );
    assert!(scene
        .fs
        .status("/system/balancer.id")
        .await
        .unwrap()
        .is_none());
}
