//! NameNode throughput and memory, measured through ClientNamenodeProtocol.
//!
//! Without `--fs`, a fresh `ferrite namenode` is started as a child process on an ephemeral
//! port (so its memory and CPU can be read from /proc without the benchmark's own). With
//! `--fs`, any NameNode is measured, Apache HDFS included; `--pid` names its process. With
//! `--inproc`, the NameNode runs inside the benchmark and is called without sockets.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::memory::proc_status;
use anyhow::{bail, Context};
use clap::Args;
use ferrite_ipc::client::IpcClient;
use ferrite_ipc::CLIENT_PROTOCOL;
use ferrite_proto::hdfs::*;

use super::conn::Conn;
use super::inproc::{self, print_outcome};
use super::throughput;

#[derive(Args, Debug)]
pub(crate) struct NamenodeArgs {
    /// Target NameNode (hdfs://HOST:PORT). Default: start a fresh Ferrite NameNode.
    #[arg(long = "fs")]
    fs: Option<String>,
    /// Process id of the target, for the memory probes when --fs is given.
    #[arg(long)]
    pid: Option<u32>,
    /// Comma-separated: create, mkdirs, open, fileStatus, rename, delete (NNThroughputBenchmark's
    /// operations), inode-memory, listing; with --inproc also fsync-rate, restart and
    /// guarded-create (creates under quotas and ACLs on 5 ancestors against plain ones).
    /// `--op` is the same option, as the issue and NNThroughputBenchmark's `-op` spell it.
    #[arg(
        long,
        alias = "op",
        value_delimiter = ',',
        default_value = "create,mkdirs,open,fileStatus,rename,delete"
    )]
    ops: Vec<String>,
    /// Run the NameNode in this process and call its RPC methods directly (no sockets).
    #[arg(long)]
    inproc: bool,
    /// Data folder for --inproc (journal and images); default a fresh temp folder.
    #[arg(long)]
    data: Option<std::path::PathBuf>,
    /// Concurrent clients, each with its own connection.
    #[arg(long, default_value_t = 64)]
    threads: usize,
    /// Operations per throughput op.
    #[arg(long, default_value_t = 100_000)]
    count: usize,
    /// Files for inode-memory and restart.
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
    /// What each inode-memory file carries beyond itself: none, acl (inherited from a
    /// default ACL of 3 named users on the probe's top directory) or xattr (one 8-byte
    /// user xattr each), for the memory an ACL or an xattr costs.
    #[arg(long, default_value = "none", value_parser = ["none", "acl", "xattr"])]
    mem_feature: String,
    /// User to connect as (default: $USER).
    #[arg(long)]
    user: Option<String>,
    /// Configuration of the NameNode the benchmark starts (in process, or the child without
    /// `--fs`), Hadoop key names (repeatable): --conf ferrite.summary.enabled=false
    #[arg(long = "conf", value_name = "KEY=VALUE")]
    conf: Vec<String>,
}

impl NamenodeArgs {
    pub(crate) fn inproc(&self) -> bool {
        self.inproc
    }
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
        .args(args.conf.iter().flat_map(|c| ["--conf", c.as_str()]))
        .env("FERRITE_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("child stdout")?).read_line(&mut line)?;
    // `ready hdfs://127.0.0.1:PORT http://127.0.0.1:HTTPPORT`
    let port: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|url| url.rsplit(':').next())
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
    proc_status(pid, "VmRSS:")
}

fn threads_of(pid: u32) -> Option<u64> {
    proc_status(pid, "Threads:")
}

pub(super) async fn run(args: NamenodeArgs) -> anyhow::Result<()> {
    if args.inproc {
        return run_inproc(&args).await;
    }
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
            o if throughput::OPS.contains(&o) => remote_throughput(args, t, user, op).await?,
            "inode-memory" => inode_memory(args, t, user, &admin).await?,
            "listing" => listing(args, t, user, &admin).await?,
            other => bail!("unknown op {other}"),
        }
    }
    Ok(())
}

/// User plus system CPU time of a process, in seconds.
fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) start at ") ".
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ is 100 on Linux
}

async fn remote_throughput(
    args: &NamenodeArgs,
    t: &Target,
    user: &str,
    op: &str,
) -> anyhow::Result<()> {
    let mut conns = Vec::new();
    for _ in 0..args.threads {
        conns.push(Arc::new(Conn::Rpc(
            IpcClient::connect(t.addr, user, CLIENT_PROTOCOL).await?,
        )));
    }
    let per = args.count.div_ceil(args.threads);
    if throughput::needs_files(op) {
        throughput::generate(&conns, op, per).await?;
    }
    let cpu0 = t.pid.and_then(cpu_secs);
    let out = throughput::timed(&conns, op, per).await?;
    let cpu1 = t.pid.and_then(cpu_secs);
    let cpu = match (cpu0, cpu1) {
        (Some(a), Some(b)) => format!(
            " server_cpu_us_per_op={:.1} server_threads={}",
            (b - a) * 1e6 / out.ops as f64,
            t.pid.and_then(threads_of).unwrap_or(0)
        ),
        _ => String::new(),
    };
    print_outcome("rpc", op, &out, &cpu);
    Ok(())
}

async fn run_inproc(args: &NamenodeArgs) -> anyhow::Result<()> {
    let scratch;
    let dir = match &args.data {
        Some(d) => d.clone(),
        None => {
            scratch = TempDir(
                std::env::temp_dir().join(format!("ferrite-inproc-{}", std::process::id())),
            );
            scratch.0.clone()
        }
    };
    let (mut plain, mut special) = (Vec::new(), Vec::new());
    for op in &args.ops {
        if throughput::OPS.contains(&op.as_str()) {
            plain.push(op.clone());
        } else {
            special.push(op.clone());
        }
    }
    if !plain.is_empty() {
        let _ = std::fs::remove_dir_all(&dir);
        inproc::throughput(&dir, &args.conf, &plain, args.threads, args.count).await?;
    }
    for op in special {
        let _ = std::fs::remove_dir_all(&dir);
        match op.as_str() {
            "fsync-rate" => {
                inproc::fsync_rate(&dir, 3)?;
            }
            "restart" => inproc::replay(&dir, &args.conf, args.files, args.threads).await?,
            "guarded-create" => {
                inproc::guarded_create(&dir, &args.conf, args.threads, args.count, 3).await?
            }
            other => bail!("{other} is not an in-process op"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Creates and closes files `range` of each of `clients` concurrent clients.
async fn create_closed(
    t: &Target,
    user: &str,
    clients: usize,
    range: std::ops::Range<usize>,
    xattr: bool,
) -> anyhow::Result<()> {
    let mut tasks = Vec::new();
    for k in 0..clients {
        let c = Conn::Rpc(IpcClient::connect(t.addr, user, CLIENT_PROTOCOL).await?);
        let range = range.clone();
        tasks.push(tokio::spawn(async move {
            let client = format!("ferrite-bench-{k}");
            for i in range {
                let src = format!("{BASE}/mem/c{k}/g{}/f{i}", i / 10_000);
                c.create(&src, &client).await?;
                c.complete(&src, &client).await?;
                if xattr {
                    let req = SetXAttrRequestProto {
                        src,
                        x_attr: Some(XAttrProto {
                            namespace: x_attr_proto::XAttrNamespaceProto::User as i32,
                            name: "a".into(),
                            value: Some(vec![7u8; 8]),
                        }),
                        flag: Some(XAttrSetFlagProto::XattrCreate as u32),
                    };
                    let Conn::Rpc(ipc) = &c else {
                        unreachable!("made as a connection above")
                    };
                    let _: SetXAttrResponseProto = ipc.call("setXAttr", &req).await?;
                }
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// Makes `dir` and gives it a default ACL of 3 named users, which everything created
/// below it inherits.
async fn default_acl(admin: &IpcClient, dir: &str) -> anyhow::Result<()> {
    let mk = MkdirsRequestProto {
        src: dir.into(),
        masked: FsPermissionProto { perm: 0o755 },
        create_parent: true,
        unmasked: None,
    };
    let _: MkdirsResponseProto = admin.call("mkdirs", &mk).await?;
    let entry = |i: usize| AclEntryProto {
        r#type: acl_entry_proto::AclEntryTypeProto::User as i32,
        scope: acl_entry_proto::AclEntryScopeProto::Default as i32,
        permissions: acl_entry_proto::FsActionProto::ReadExecute as i32,
        name: Some(format!("u{i}")),
    };
    let req = ModifyAclEntriesRequestProto {
        src: dir.into(),
        acl_spec: (0..3).map(entry).collect(),
    };
    let _: ModifyAclEntriesResponseProto = admin.call("modifyAclEntries", &req).await?;
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
    // Two halves, RSS read after each: the second half's growth leaves out what is paid
    // once whatever the count (the journal tail filling its cap, first allocations).
    let half = per / 2;
    let xattr = args.mem_feature == "xattr";
    if args.mem_feature == "acl" {
        default_acl(admin, &format!("{BASE}/mem")).await?;
    }
    create_closed(t, user, clients, 0..half, xattr).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let middle = rss_kib(pid).unwrap_or(0);
    create_closed(t, user, clients, half..per, xattr).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib(pid).unwrap_or(0);
    let files = per * clients;
    let per_file = |from: u64, n: usize| (after.saturating_sub(from) * 1024) as f64 / n as f64;
    println!(
        "op=inode-memory files={files} rss_before_mib={:.1} rss_after_mib={:.1} bytes_per_file={:.0} bytes_per_file_second_half={:.0}",
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        per_file(before, files),
        per_file(middle, (per - half) * clients)
    );
    if !args.keep {
        let del = DeleteRequestProto {
            src: format!("{BASE}/mem"),
            recursive: true,
        };
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

#[cfg(test)]
mod tests {
    use super::NamenodeArgs;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: NamenodeArgs,
    }

    fn ops(argv: &[&str]) -> Vec<String> {
        let argv = std::iter::once("bench").chain(argv.iter().copied());
        Cli::try_parse_from(argv).unwrap().args.ops
    }

    #[test]
    fn op_is_taken_as_ops_is() {
        assert_eq!(ops(&["--op", "create"]), ["create"]);
        assert_eq!(ops(&["--op", "open,delete"]), ["open", "delete"]);
        assert_eq!(ops(&["--ops", "mkdirs"]), ["mkdirs"]);
        assert_eq!(ops(&[]).len(), 6, "NNThroughputBenchmark's six by default");
    }
}
