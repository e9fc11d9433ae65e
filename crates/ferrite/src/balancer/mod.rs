//! `ferrite balancer`: levels DataNode usage as `hdfs balancer` does, with its options,
//! output and exit codes. Each iteration reads the live nodes' usage, plans moves
//! ([`plan`]), asks the NameNode for each source's blocks (`getBlocks`), and has the
//! targets copy them (REPLACE_BLOCK, signed with the keys `getBlockKeys` exports); the
//! NameNode drops each source replica once the new one is reported. One instance runs at a
//! time per cluster: it holds `/system/balancer.id` open while it runs, as HDFS's does.

mod args;
mod output;
mod plan;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use ferrite_blocktoken::keys::{Grant, KeyRing};
use ferrite_blocktoken::Modes;
use ferrite_client::namenodes::NameNodes;
use ferrite_client::{ClientOptions, CreateOptions, FileSystem};
use ferrite_ipc::NAMENODE_PROTOCOL;
use ferrite_proto::hdfs::*;
use ferrite_proto::namenode::*;
use ferrite_transfer::moves::replace_block;
use tokio::sync::Semaphore;
use tracing::{info, warn};

pub(crate) use args::BalancerArgs;
use plan::{Move, Node, Offered};

/// HDFS's exit statuses (`ExitStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exit {
    Success = 0,
    NoMoveBlock = -2,
    NoMoveProgress = -3,
    IoException = -4,
    IllegalArguments = -5,
    /// Stopped by SIGINT or SIGTERM (the shell's code for a SIGINT death, as a JVM
    /// stopped by its shutdown hooks gives).
    Stopped = 130,
}

/// Where the lock lives, as in HDFS.
const ID_PATH: &str = "/system/balancer.id";
/// `dfs.balancer.getBlocks.size`: bytes of blocks asked for per source per call.
const GET_BLOCKS_SIZE: u64 = 2 << 30;
/// Moves under way at once, all sources together.
const CONCURRENT_MOVES: usize = 32;
/// How long a target may take to copy and report one replica.
const MOVE_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs the tool and returns its process exit code.
pub(crate) async fn run(argv: Vec<String>) -> i32 {
    let started = Instant::now();
    let code = match args::parse(&argv) {
        Err(msg) => {
            eprintln!("{msg}\n{}", args::USAGE);
            Exit::IllegalArguments
        }
        Ok(a) => {
            println!("{}", output::HEADER);
            match balance(&a).await {
                Ok(code) => code,
                Err(e) => {
                    println!("{e:#}.  Exiting ...");
                    Exit::IoException
                }
            }
        }
    };
    if !matches!(code, Exit::Stopped) {
        println!(
            "{:<24} Balancing took {}",
            output::now_stamp(),
            output::took(started.elapsed())
        );
    }
    code as i32
}

/// Iterations until balanced, stuck, or out of blocks to move.
async fn balance(a: &BalancerArgs) -> anyhow::Result<Exit> {
    let (url, addrs) = crate::admin::namenodes(a.fs.clone(), &a.conf)?;
    let opts = ClientOptions {
        user: crate::admin::user(),
        ..Default::default()
    };
    let fs = FileSystem::connect_any(&addrs, &opts).await?;
    // NamenodeProtocol calls go to the active NameNode (a standby refuses getBlocks).
    let nn = NameNodes::connect_to(
        NAMENODE_PROTOCOL,
        addrs.iter().map(ToString::to_string).collect(),
        opts.dial.clone(),
        &opts.user,
        *uuid::Uuid::new_v4().as_bytes(),
    )
    .await?;
    let version: VersionResponseProto = nn.call("versionRequest", &VersionRequestProto {}).await?;
    let pool = version.info.block_pool_id;
    // Caught before the lock is taken, so that a stop never leaves it behind: HDFS's
    // Balancer deletes it from a shutdown hook; without this the next run waited for the
    // lock's lease to expire.
    let shutdown = crate::serve::Shutdown::install()?;
    let lock = take_lock(&fs, a.block_size).await?;
    let mut b = Balancer {
        fs: &fs,
        nn: &nn,
        pool,
        args: a,
        moved: Arc::new(AtomicU64::new(0)),
        blocks_moved: Arc::new(AtomicU64::new(0)),
    };
    let r = tokio::select! {
        r = b.iterate(&url) => r,
        _ = shutdown.wait() => Ok(Exit::Stopped),
    };
    drop(lock.close().await);
    if let Err(e) = fs.delete(ID_PATH, false).await {
        warn!(error = %e, "could not delete {ID_PATH}");
    }
    r
}

/// HDFS's way of making sure one Balancer runs: a file held open for write. An old one
/// left by a Balancer that died is taken over once its lease can be had (append succeeds).
async fn take_lock(
    fs: &FileSystem,
    block_size: Option<u64>,
) -> anyhow::Result<ferrite_client::FileWriter> {
    if fs.status(ID_PATH).await?.is_some() {
        match fs.append(ID_PATH).await {
            Ok(w) => {
                drop(w.close().await);
                fs.delete(ID_PATH, false).await?;
            }
            Err(ferrite_client::Error::Remote { class, .. })
                if class.ends_with("AlreadyBeingCreatedException") =>
            {
                anyhow::bail!("java.io.IOException: Another Balancer is running.")
            }
            Err(e) => return Err(e.into()),
        }
    }
    let opts = CreateOptions {
        create_parent: true,
        block_size,
        ..Default::default()
    };
    let mut w = fs.create(ID_PATH, &opts).await?;
    w.write(ferrite_datanode::machine_host_name().as_bytes())
        .await?;
    w.hflush().await?;
    Ok(w)
}

struct Balancer<'a> {
    fs: &'a FileSystem,
    nn: &'a NameNodes,
    pool: String,
    args: &'a BalancerArgs,
    /// Bytes and blocks moved since the start, for the report.
    moved: Arc<AtomicU64>,
    blocks_moved: Arc<AtomicU64>,
}

impl Balancer<'_> {
    async fn iterate(&mut self, url: &str) -> anyhow::Result<Exit> {
        let mut idle = 0;
        for iteration in 0.. {
            let (nodes, infos) = self.live_nodes().await?;
            let mut p = plan::plan(&nodes, self.args.threshold, self.args.max_size_to_move);
            let left = p.bytes_left_to_move;
            let being_moved = p.bytes_being_moved();
            let line = || {
                output::iteration_line(
                    &output::now_stamp(),
                    iteration,
                    self.moved.load(Ordering::Relaxed),
                    left,
                    being_moved,
                    self.blocks_moved.load(Ordering::Relaxed),
                    url,
                )
            };
            // Hadoop 3.4.1 prints the iteration's line, then why it stops.
            if left == 0 {
                println!("{}", line());
                println!("The cluster is balanced. Exiting...");
                return Ok(Exit::Success);
            }
            info!(
                "Need to move {} to make the cluster balanced.",
                output::byte_desc(left)
            );
            if being_moved == 0 {
                println!("{}", line());
                println!("No block can be moved. Exiting...");
                return Ok(Exit::NoMoveBlock);
            }
            let moved_now = self.dispatch(&nodes, &infos, &mut p.tasks).await?;
            if moved_now > 0 {
                idle = 0;
            } else {
                idle += 1;
                if self.args.idle_iterations >= 0 && idle >= self.args.idle_iterations {
                    // Said while dispatching, before the line, as Hadoop's does.
                    println!("No block has been moved for {idle} iterations. Exiting...");
                    println!("{}", line());
                    return Ok(Exit::NoMoveProgress);
                }
            }
            println!("{}", line());
            // Let heartbeats carry the new usage to the NameNode before planning again.
            tokio::time::sleep(self.args.heartbeat * 2).await;
        }
        unreachable!("the loop returns")
    }

    /// The live DataNodes a balancer may use: not leaving, not in maintenance.
    async fn live_nodes(&self) -> anyhow::Result<(Vec<Node>, Vec<DatanodeInfoProto>)> {
        let infos: Vec<DatanodeInfoProto> = self
            .fs
            .live_datanodes()
            .await?
            .into_iter()
            .filter(|d| {
                d.admin_state.unwrap_or(0) == datanode_info_proto::AdminState::Normal as i32
            })
            .collect();
        let nodes = infos
            .iter()
            .map(|d| Node {
                uuid: d.id.datanode_uuid.clone(),
                rack: d.location.clone().unwrap_or_default(),
                capacity: d.capacity.unwrap_or(0),
                used: d.dfs_used.unwrap_or(0),
                remaining: d.remaining.unwrap_or(0),
            })
            .collect();
        Ok((nodes, infos))
    }

    /// One iteration's moves: for each source, blocks from the NameNode, moves chosen for
    /// them, sent a bounded number at a time. Returns the bytes moved.
    async fn dispatch(
        &self,
        nodes: &[Node],
        infos: &[DatanodeInfoProto],
        tasks: &mut [plan::Task],
    ) -> anyhow::Result<u64> {
        let keys = self.keys().await?;
        let slots = Arc::new(Semaphore::new(CONCURRENT_MOVES));
        let moved_now = Arc::new(AtomicU64::new(0));
        let mut moving = HashSet::new();
        let mut running = tokio::task::JoinSet::new();
        let mut sources: Vec<usize> = tasks.iter().map(|t| t.source).collect();
        sources.sort_unstable();
        sources.dedup();
        for source in sources {
            let want: u64 = tasks
                .iter()
                .filter(|t| t.source == source)
                .map(|t| t.bytes)
                .sum();
            let offered = self.blocks_of(nodes, &infos[source], want).await?;
            for m in plan::choose_moves(nodes, source, &offered, tasks, &mut moving) {
                let req = self.request(&keys, infos, &m)?;
                let target = xfer_addr(&infos[m.target]);
                let (slots, total, blocks, now) = (
                    slots.clone(),
                    self.moved.clone(),
                    self.blocks_moved.clone(),
                    moved_now.clone(),
                );
                running.spawn(async move {
                    let _slot = slots.acquire_owned().await;
                    match send(&target, &req).await {
                        Ok(()) => {
                            info!(block = m.id, to = %target, "moved");
                            total.fetch_add(m.len, Ordering::Relaxed);
                            blocks.fetch_add(1, Ordering::Relaxed);
                            now.fetch_add(m.len, Ordering::Relaxed);
                        }
                        Err(e) => warn!(block = m.id, to = %target, error = %e, "move failed"),
                    }
                });
            }
        }
        while running.join_next().await.is_some() {}
        Ok(moved_now.load(Ordering::Relaxed))
    }

    /// The NameNode's current block keys, for signing moves.
    async fn keys(&self) -> anyhow::Result<KeyRing> {
        let r: GetBlockKeysResponseProto = self
            .nn
            .call("getBlockKeys", &GetBlockKeysRequestProto {})
            .await?;
        let mut ring = KeyRing::default();
        if let Some(k) = r.keys {
            ring.update(&k, ferrite_datanode::now_ms());
        }
        Ok(ring)
    }

    async fn blocks_of(
        &self,
        nodes: &[Node],
        source: &DatanodeInfoProto,
        want: u64,
    ) -> anyhow::Result<Vec<Offered>> {
        let req = GetBlocksRequestProto {
            datanode: source.id.clone(),
            size: want.clamp(1, GET_BLOCKS_SIZE),
            min_block_size: Some(self.args.min_block_size),
            time_interval: Some(0),
            storage_type: None,
        };
        let r: GetBlocksResponseProto = self.nn.call("getBlocks", &req).await?;
        Ok(r.blocks
            .blocks
            .into_iter()
            .map(|b| Offered {
                id: b.block.block_id,
                gs: b.block.gen_stamp,
                len: b.block.num_bytes.unwrap_or(0),
                holders: b
                    .datanode_uuids
                    .iter()
                    .filter_map(|u| nodes.iter().position(|n| &n.uuid == u))
                    .collect(),
            })
            .collect())
    }

    fn request(
        &self,
        keys: &KeyRing,
        infos: &[DatanodeInfoProto],
        m: &Move,
    ) -> anyhow::Result<OpReplaceBlockProto> {
        let grant = Grant {
            user: self.fs.user(),
            pool: &self.pool,
            modes: Modes::REPLACE.with(Modes::COPY),
        };
        let token = keys
            .issue(ferrite_datanode::now_ms(), grant, m.id)
            .map_err(|e| anyhow::anyhow!("signing a move of blk_{}: {e}", m.id))?;
        Ok(OpReplaceBlockProto {
            header: BaseHeaderProto {
                block: ExtendedBlockProto {
                    pool_id: self.pool.clone(),
                    block_id: m.id,
                    generation_stamp: m.gs,
                    num_bytes: Some(m.len),
                },
                token: Some(token),
                trace_info: None,
            },
            del_hint: infos[m.source].id.datanode_uuid.clone(),
            source: infos[m.proxy].clone(),
            // Policy `datanode` balances DISK, HDFS's default type.
            storage_type: Some(StorageTypeProto::Disk as i32),
            storage_id: None,
        })
    }
}

fn xfer_addr(d: &DatanodeInfoProto) -> String {
    format!("{}:{}", d.id.ip_addr, d.id.xfer_port)
}

/// One REPLACE_BLOCK to the target, bounded in time.
async fn send(target: &str, req: &OpReplaceBlockProto) -> anyhow::Result<()> {
    let go = async {
        let s = tokio::net::TcpStream::connect(target).await?;
        s.set_nodelay(true)?;
        let (r, w) = s.into_split();
        replace_block(r, w, req).await?;
        anyhow::Ok(())
    };
    tokio::time::timeout(MOVE_TIMEOUT, go)
        .await
        .with_context(|| format!("no answer in {MOVE_TIMEOUT:?}"))?
}
