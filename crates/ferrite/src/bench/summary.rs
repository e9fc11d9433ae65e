//! `ferrite bench summary`: the summary task's event rate, HDDS-15335's harness for HDFS.
//! A namespace is preloaded with `--files` files, the summary is built from it (also timed
//! from an encoded image, the full-rebuild path), then `--events` events mixed 60/30/10
//! create/update/delete across the directories are applied: by one worker, and split over
//! disjoint top-level directories on `--workers` threads. Pure computation in this process.

use std::time::Instant;

use clap::Args;
use ferrite_namenode::namespace::{Namespace, Op};
use ferrite_namenode::summary::shard::Sharded;
use ferrite_namenode::summary::{codec, Summary};

#[derive(Args, Debug)]
pub(crate) struct SummaryArgs {
    /// Files preloaded before the events.
    #[arg(long, default_value_t = 500_000)]
    files: usize,
    /// Events applied (60% create, 30% update, 10% delete).
    #[arg(long, default_value_t = 500_000)]
    events: usize,
    /// Leaf directories the files spread over (under 64 top-level directories).
    #[arg(long, default_value_t = 1_000)]
    dirs: usize,
    /// Levels from a top-level directory down to a leaf: above 1, the levels between make
    /// a tree two wide (as NNThroughputBenchmark's mkdirs does), so that every event's
    /// path is this deep.
    #[arg(long, default_value_t = 1)]
    depth: usize,
    /// Threads for the parallel run (default: every core).
    #[arg(long)]
    workers: Option<usize>,
    /// Events per batch handed to the parallel run.
    #[arg(long, default_value_t = 100_000)]
    batch: usize,
    /// Repetitions; medians are printed.
    #[arg(long, default_value_t = 3)]
    runs: usize,
}

/// xorshift64: reproducible workloads without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
    /// Log-uniform sizes from 0 to 1 GiB, so every histogram bucket up there is used.
    fn size(&mut self) -> u64 {
        let bits = self.below(31);
        self.below(1 << bits)
    }
}

/// Leaf directory `d`: under top-level directory `d % 64`, then `depth - 1` levels named
/// by the bits of `d / 64`, so leaves share their upper levels as a binary tree's do.
fn leaf(d: usize, depth: usize) -> String {
    let mut path = format!("/t{}", d % 64);
    for level in 0..depth.saturating_sub(1) {
        let right = (d / 64) >> level & 1 == 1;
        path.push_str(if right { "/r" } else { "/l" });
    }
    path.push_str(&format!("/d{d}"));
    path
}

fn create(path: String, id: u64) -> Op {
    Op::Create {
        path,
        id,
        perm: 0o644,
        owner: "bench".into(),
        group: "bench".into(),
        mtime: id as i64,
        replication: 3,
        block_size: 128 << 20,
        client_name: "bench".into(),
        client_machine: "127.0.0.1".into(),
    }
}

fn mkdir(path: String, id: u64) -> Op {
    Op::Mkdir {
        path,
        id,
        perm: 0o755,
        owner: "bench".into(),
        group: "bench".into(),
        mtime: 1,
    }
}

/// The preloaded namespace and the paths of its files.
fn preload(a: &SummaryArgs, rng: &mut Rng) -> (Namespace, Vec<String>, u64) {
    let mut ns = Namespace::new("bench", "bench", 1);
    let mut id = 20_000;
    let apply = |ns: &mut Namespace, op: Op| ns.apply(&op).expect("preload op applies");
    for t in 0..64.min(a.dirs) {
        id += 1;
        apply(&mut ns, mkdir(format!("/t{t}"), id));
    }
    for d in 0..a.dirs {
        let path = leaf(d, a.depth);
        // The levels between, each made once (the namespace refuses a second mkdir).
        let mut at = 0;
        while let Some(i) = path[at + 1..].find('/') {
            at += 1 + i;
            if ns.existing(&path[..at]).is_err() {
                id += 1;
                apply(&mut ns, mkdir(path[..at].to_string(), id));
            }
        }
        id += 1;
        apply(&mut ns, mkdir(path, id));
    }
    let mut files = Vec::with_capacity(a.files + a.events);
    for i in 0..a.files {
        id += 1;
        let path = format!("{}/f{i}", leaf(i % a.dirs, a.depth));
        apply(&mut ns, create(path.clone(), id));
        let len = rng.size();
        apply(
            &mut ns,
            Op::Close {
                path: path.clone(),
                mtime: id as i64,
                len,
            },
        );
        files.push(path);
    }
    (ns, files, id)
}

/// The 60/30/10 event mix over the live files.
fn events(a: &SummaryArgs, rng: &mut Rng, mut live: Vec<String>, mut id: u64) -> Vec<Op> {
    let mut out = Vec::with_capacity(a.events);
    for n in 0..a.events {
        let roll = rng.below(10);
        id += 1;
        if roll < 6 || live.is_empty() {
            let path = format!("{}/n{n}", leaf(rng.below(a.dirs as u64) as usize, a.depth));
            out.push(create(path.clone(), id));
            live.push(path);
        } else if roll < 9 {
            let path = live[rng.below(live.len() as u64) as usize].clone();
            out.push(Op::Close {
                path,
                mtime: id as i64,
                len: rng.size(),
            });
        } else {
            let path = live.swap_remove(rng.below(live.len() as u64) as usize);
            out.push(Op::Delete {
                path,
                mtime: id as i64,
            });
        }
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub(super) fn run(a: SummaryArgs) -> anyhow::Result<()> {
    let workers = a
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let t = Instant::now();
    let (ns, files, id) = preload(&a, &mut rng);
    let ops = events(&a, &mut rng, files, id);
    eprintln!(
        "# preloaded {} files in {} dirs, {} events generated in {:.1} s",
        a.files,
        a.dirs,
        ops.len(),
        t.elapsed().as_secs_f64()
    );
    let image = ns.encode_image(1);
    let (mut single, mut parallel, mut build, mut rebuild) = (vec![], vec![], vec![], vec![]);
    let (mut ckpt_save, mut ckpt_load, mut ckpt_bytes) = (vec![], vec![], 0);
    for _ in 0..a.runs {
        let t = Instant::now();
        let mut s = Summary::from_namespace(&ns, 0);
        build.push(t.elapsed().as_secs_f64());

        let t = Instant::now();
        let (loaded, _) = Namespace::decode_image(&image)?;
        drop(Summary::from_namespace(&loaded, 0));
        rebuild.push(t.elapsed().as_secs_f64());
        drop(loaded);

        let t = Instant::now();
        for (i, op) in ops.iter().enumerate() {
            s.apply(i as u64 + 1, op).map_err(anyhow::Error::msg)?;
        }
        single.push(ops.len() as f64 / t.elapsed().as_secs_f64());

        let t = Instant::now();
        let bytes = codec::encode(&s);
        ckpt_save.push(t.elapsed().as_secs_f64());
        ckpt_bytes = bytes.len();
        let t = Instant::now();
        let back = codec::decode(&bytes, "memory")?;
        ckpt_load.push(t.elapsed().as_secs_f64());
        let root = back.get("/").expect("root").tot;
        drop(back);

        let mut sharded = Sharded::split(Summary::from_namespace(&ns, 0).into_tree(), workers);
        let t = Instant::now();
        for chunk in ops.chunks(a.batch.max(1)) {
            sharded.apply_all(chunk).map_err(anyhow::Error::msg)?;
        }
        parallel.push(ops.len() as f64 / t.elapsed().as_secs_f64());
        anyhow::ensure!(
            sharded.totals("/") == Some(root),
            "the sharded run disagrees"
        );
    }
    println!(
        "summary bench: files={} events={} dirs={} depth={} runs={}",
        a.files, a.events, a.dirs, a.depth, a.runs
    );
    println!("events_per_sec workers=1 {:.0}", median(single));
    println!("events_per_sec workers={workers} {:.0}", median(parallel));
    println!("build_from_namespace_ms {:.1}", median(build) * 1e3);
    println!(
        "rebuild_from_image_ms {:.1}  (image {} bytes)",
        median(rebuild) * 1e3,
        image.len()
    );
    println!(
        "checkpoint_save_ms {:.1} load_ms {:.1} bytes {}",
        median(ckpt_save) * 1e3,
        median(ckpt_load) * 1e3,
        ckpt_bytes
    );
    Ok(())
}
