//! NameNode throughput and memory, measured through ClientNamenodeProtocol.
//!
//! Without `--fs`, a fresh `ferrite namenode` is started as a child process on an ephemeral
//! port (so its memory can be read from /proc without the benchmark's own). With `--fs`,
//! any NameNode is measured, Apache HDFS included; `--pid` names its process for the memory
//! probes.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use ferrite_ipc::client::IpcClient;
use ferrite_ipc::CLIENT_PROTOCOL;
use ferrite_proto::hdfs::*;

#[derive(Args, Debug)]
pub struct NamenodeArgs {
    /// Target NameNode (hdfs://HOST:PORT). Default: start a fresh Ferrite NameNode.
    #[arg(long = "fs")]
    fs: Option<String>,
    /// Process id of the target, for the memory probes when --fs is given.
    #[arg(long)]
    pid: Option<u32>,
    /// Comma-separated: mkdirs, create, fileStatus, inode-memory, listing.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "mkdirs,create,fileStatus"
    )]
    ops: Vec<String>,
    /// Concurrent clients, each with its own connection.
    #[arg(long, default_value_t = 64)]
    threads: usize,
    /// Operations per throughput op.
    #[arg(long, default_value_t = 100_000)]
    count: usize,
    /// Files for inode-memory.
    #[arg(long, default_value_t = 1_000_000)]
    files: usize,
    /// Entries in the directory the listing probe lists again and again.
    #[arg(long, default_value_t = 35_000)]
    listing_entries: usize,
    /// Times the listing probe lists it (adding one entry each time).
    #[arg(long, default_value_t = 200)]
    listing_rounds: usize,
    /// Leave the inode-memory files in place (so an outside probe can measure after).
    #[arg(long)]
    keep: bool,
    /// User to connect as (default: $USER).
    #[arg(long)]
    user: Option<String>,
}

const BASE: &str = "/ferriteBench";

struct Target {
    addr: SocketAddr,
    pid: Option<u32>,
    child: Option<Child>,
    _dir: Option<TempDir>,
}

/// A scratch directory removed on drop (no extra dependency for one directory).
struct TempDir(std::path::PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn start_target(args: &NamenodeArgs) -> anyhow::Result<Target> {
    if let Some(fs) = &args.fs {
        let hostport = fs.trim_start_matches("hdfs://").trim_end_matches('/');
        let addr = std::net::ToSocketAddrs::to_socket_addrs(hostport)?
            .next()
            .context("resolving --fs")?;
        return Ok(Target {
            addr,
            pid: args.pid,
            child: None,
            _dir: None,
        });
    }
    let dir = std::env::temp_dir().join(format!("ferrite-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut child = Command::new(std::env::current_exe()?)
        .args(["namenode", "--port", "0", "--data"])
        .arg(&dir)
        .args(["--conf", "dfs.namenode.fs-limits.min-block-size=16"])
        .env("FERRITE_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("child stdout")?).read_line(&mut line)?;
    let port: u16 = line
        .trim()
        .rsplit(':')
        .next()
        .unwrap_or("")
        .parse()
        .with_context(|| format!("ready line {line:?}"))?;
    Ok(Target {
        addr: ([127, 0, 0, 1], port).into(),
        pid: Some(child.id()),
        child: Some(child),
        _dir: Some(TempDir(dir)),
    })
}

fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn threads_of(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("Threads:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

pub async fn run(args: NamenodeArgs) -> anyhow::Result<()> {
    let user = args
        .user
        .clone()
        .unwrap_or_else(|| std::env::var("USER").unwrap_or_else(|_| "root".into()));
    let mut target = start_target(&args)?;
    println!(
        "target {} (pid {:?}), {} clients, {} ops each kind",
        target.addr, target.pid, args.threads, args.count
    );
    let result = run_ops(&args, &target, &user).await;
    if let Some(mut c) = target.child.take() {
        let _ = Command::new("kill").arg(c.id().to_string()).status();
        let _ = c.wait();
    }
    result
}

async fn run_ops(args: &NamenodeArgs, t: &Target, user: &str) -> anyhow::Result<()> {
    let admin = IpcClient::connect(t.addr, user, CLIENT_PROTOCOL).await?;
    let _: DeleteResponseProto = admin
        .call(
            "delete",
            &DeleteRequestProto {
                src: BASE.into(),
                recursive: true,
            },
        )
        .await?;
    for op in &args.ops {
        match op.as_str() {
            "mkdirs" | "create" | "fileStatus" => throughput(args, t, user, op).await?,
            "inode-memory" => inode_memory(args, t, user, &admin).await?,
            "listing" => listing(args, t, user, &admin).await?,
            other => bail!("unknown op {other}"),
        }
    }
    Ok(())
}

fn path(kind: &str, client: usize, i: usize) -> String {
    format!("{BASE}/{kind}/c{client}/g{}/n{i}", i / 1000)
}

fn create_req(src: String, client: usize) -> CreateRequestProto {
    CreateRequestProto {
        src,
        masked: FsPermissionProto { perm: 0o644 },
        client_name: format!("ferrite-bench-{client}"),
        create_flag: 0x03,
        create_parent: true,
        replication: 1,
        block_size: 128 << 20,
        ..Default::default()
    }
}

/// One call of `op` for item `i` of `client`.
async fn one(c: &IpcClient, op: &str, client: usize, i: usize) -> anyhow::Result<()> {
    match op {
        "mkdirs" => {
            let req = MkdirsRequestProto {
                src: path("mkdirs", client, i),
                masked: FsPermissionProto { perm: 0o755 },
                create_parent: true,
                unmasked: None,
            };
            let _: MkdirsResponseProto = c.call("mkdirs", &req).await?;
        }
        "create" => {
            let src = path("create", client, i);
            let _: CreateResponseProto = c.call("create", &create_req(src.clone(), client)).await?;
            let done = CompleteRequestProto {
                src,
                client_name: format!("ferrite-bench-{client}"),
                last: None,
                file_id: None,
            };
            let r: CompleteResponseProto = c.call("complete", &done).await?;
            if !r.result {
                bail!("complete returned false");
            }
        }
        "fileStatus" => {
            let r: GetFileInfoResponseProto = c
                .call(
                    "getFileInfo",
                    &GetFileInfoRequestProto {
                        src: path("create", client, i),
                    },
                )
                .await?;
            if r.fs.is_none() {
                bail!("file {} missing", path("create", client, i));
            }
        }
        _ => unreachable!(),
    }
    Ok(())
}

/// Runs `op` `count` times split over `threads` clients; prints ops/s and latency.
async fn throughput(args: &NamenodeArgs, t: &Target, user: &str, op: &str) -> anyhow::Result<()> {
    if op == "fileStatus" && !args.ops.iter().any(|o| o == "create") {
        bail!("fileStatus reads the files `create` made: list create before fileStatus");
    }
    let per = args.count.div_ceil(args.threads);
    let mut clients = Vec::new();
    for _ in 0..args.threads {
        clients.push(Arc::new(
            IpcClient::connect(t.addr, user, CLIENT_PROTOCOL).await?,
        ));
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (k, c) in clients.into_iter().enumerate() {
        let op = op.to_string();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(per);
            for i in 0..per {
                let t0 = Instant::now();
                one(&c, &op, k, i).await?;
                lat.push(t0.elapsed().as_micros() as u32);
            }
            anyhow::Ok(lat)
        }));
    }
    let mut lat = Vec::new();
    for task in tasks {
        lat.extend(task.await??);
    }
    let elapsed = started.elapsed();
    lat.sort_unstable();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)] as f64 / 1000.0;
    println!(
        "op={op} ops={} elapsed_ms={} ops_per_s={:.0} p50_ms={:.3} p99_ms={:.3} server_threads={:?}",
        lat.len(),
        elapsed.as_millis(),
        lat.len() as f64 / elapsed.as_secs_f64(),
        pct(0.5),
        pct(0.99),
        t.pid.and_then(threads_of)
    );
    Ok(())
}

/// Server RSS growth per empty file, over `--files` creates.
async fn inode_memory(
    args: &NamenodeArgs,
    t: &Target,
    user: &str,
    admin: &IpcClient,
) -> anyhow::Result<()> {
    let pid = t
        .pid
        .context("inode-memory needs the server's pid (--pid)")?;
    let before = rss_kib(pid).context("reading server RSS")?;
    let clients = args.threads.min(16);
    let per = args.files.div_ceil(clients);
    let mut tasks = Vec::new();
    for k in 0..clients {
        let c = IpcClient::connect(t.addr, user, CLIENT_PROTOCOL).await?;
        tasks.push(tokio::spawn(async move {
            for i in 0..per {
                let src = format!("{BASE}/mem/c{k}/g{}/f{i}", i / 10_000);
                let _: CreateResponseProto = c.call("create", &create_req(src.clone(), k)).await?;
                let done = CompleteRequestProto {
                    src,
                    client_name: format!("ferrite-bench-{k}"),
                    last: None,
                    file_id: None,
                };
                let _: CompleteResponseProto = c.call("complete", &done).await?;
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = t.pid.and_then(rss_kib).unwrap_or(0);
    let files = per * clients;
    println!(
        "op=inode-memory files={files} rss_before_mib={:.1} rss_after_mib={:.1} bytes_per_file={:.0}",
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        (after.saturating_sub(before) * 1024) as f64 / files as f64
    );
    if !args.keep {
        let del = DeleteRequestProto { src: format!("{BASE}/mem"), recursive: true };
        let _: DeleteResponseProto = admin.call("delete", &del).await?;
    }
    Ok(())
}

/// Lists a large directory again and again, adding an entry each round (HADOOP-4797's
/// pattern), and reports how the server's RSS moves.
async fn listing(
    args: &NamenodeArgs,
    t: &Target,
    user: &str,
    admin: &IpcClient,
) -> anyhow::Result<()> {
    let pid = t.pid.context("listing needs the server's pid (--pid)")?;
    let dir = format!("{BASE}/listing");
    let _: MkdirsResponseProto = admin
        .call(
            "mkdirs",
            &MkdirsRequestProto {
                src: dir.clone(),
                masked: FsPermissionProto { perm: 0o755 },
                create_parent: true,
                unmasked: None,
            },
        )
        .await?;
    let fill = Arc::new(IpcClient::connect(t.addr, user, CLIENT_PROTOCOL).await?);
    let mut tasks = Vec::new();
    for k in 0..8usize {
        let c = fill.clone();
        let dir = dir.clone();
        let n = args.listing_entries;
        tasks.push(tokio::spawn(async move {
            for i in (k..n).step_by(8) {
                let req = MkdirsRequestProto {
                    src: format!("{dir}/entry-with-a-longish-name-{i:08}"),
                    masked: FsPermissionProto { perm: 0o755 },
                    create_parent: false,
                    unmasked: None,
                };
                let _: MkdirsResponseProto = c.call("mkdirs", &req).await?;
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let mut samples = Vec::new();
    let started = Instant::now();
    for round in 0..args.listing_rounds {
        let mut after = Vec::new();
        let mut seen = 0usize;
        loop {
            let r: GetListingResponseProto = admin
                .call(
                    "getListing",
                    &GetListingRequestProto {
                        src: dir.clone(),
                        start_after: after.clone(),
                        need_location: false,
                    },
                )
                .await?;
            let l = r.dir_list.context("listing vanished")?;
            seen += l.partial_listing.len();
            after = l
                .partial_listing
                .last()
                .map(|e| e.path.clone())
                .unwrap_or_default();
            if l.remaining_entries == 0 || l.partial_listing.is_empty() {
                break;
            }
        }
        if seen != args.listing_entries + round {
            bail!(
                "round {round}: listed {seen} entries, expected {}",
                args.listing_entries + round
            );
        }
        let req = MkdirsRequestProto {
            src: format!("{dir}/added-{round:06}"),
            masked: FsPermissionProto { perm: 0o755 },
            create_parent: false,
            unmasked: None,
        };
        let _: MkdirsResponseProto = admin.call("mkdirs", &req).await?;
        samples.push(rss_kib(pid).unwrap_or(0));
    }
    let first = samples[samples.len().min(5) - 1];
    let (min, max, last) = (
        *samples.iter().min().unwrap_or(&0),
        *samples.iter().max().unwrap_or(&0),
        *samples.last().unwrap_or(&0),
    );
    println!(
        "op=listing entries={} rounds={} elapsed_ms={} rss_mib_after_warmup={:.1} min={:.1} max={:.1} last={:.1} growth_after_warmup_mib={:.1}",
        args.listing_entries,
        args.listing_rounds,
        started.elapsed().as_millis(),
        first as f64 / 1024.0,
        min as f64 / 1024.0,
        max as f64 / 1024.0,
        last as f64 / 1024.0,
        (last as f64 - first as f64) / 1024.0
    );
    Ok(())
}
