//! `ferrite-sim`: runs simulated seeds and reports any that break a check.

use clap::Parser;
use ferrite_sim::{replay_hint, run_raft_seed, run_seed, Options, RaftOptions, Report};

#[derive(Parser)]
#[command(about = "Runs Ferrite's deterministic cluster simulation over many seeds")]
struct Args {
    /// How many seeds to run, from --first on.
    #[arg(long, default_value_t = 100)]
    seeds: u64,
    /// The first seed (default: the time now).
    #[arg(long)]
    first: Option<u64>,
    /// Replays one seed, printing its trace.
    #[arg(long, conflicts_with_all = ["seeds", "first"])]
    seed: Option<u64>,
    /// Clients per run.
    #[arg(long, default_value_t = 3)]
    clients: usize,
    /// Operations per client.
    #[arg(long, default_value_t = 40)]
    ops: usize,
    /// NameNodes: 1, or 3 for an HA nameservice on Raft (members crashed, cut off from
    /// each other and from the rest, one at a time).
    #[arg(long, default_value_t = 1)]
    namenodes: usize,
    /// DataNode hosts (0: a NameNode-only run).
    #[arg(long, default_value_t = 0)]
    datanodes: usize,
    /// Clients writing, hflushing, appending and reading files through the DataNodes.
    #[arg(long, default_value_t = 0)]
    writers: usize,
    /// Operations per file client.
    #[arg(long, default_value_t = 25)]
    writer_ops: usize,
    /// DataNode power cuts and dead disks too, and partitions at about three times the
    /// default rate.
    #[arg(long)]
    dn_faults_heavy: bool,
    /// Runs without faults (only the model's checks).
    #[arg(long)]
    no_faults: bool,
    /// Clients look at their directory when an answer is lost, instead of sending the
    /// call again with the same callId as HA clients do.
    #[arg(long)]
    no_retry: bool,
    /// Runs the NameNodes' Raft group instead: three nodes proposing batches under power
    /// cuts and partitions.
    #[arg(long)]
    raft: bool,
    /// Batches proposed per Raft run.
    #[arg(long, default_value_t = 200)]
    proposals: u64,
}

fn main() {
    let args = Args::parse();
    if args.raft {
        raft_main(&args);
    }
    let opts = Options {
        clients: args.clients,
        ops_per_client: args.ops,
        datanodes: args.datanodes,
        file_clients: args.writers,
        ops_per_file_client: args.writer_ops,
        dn_faults_heavy: args.dn_faults_heavy,
        faults: !args.no_faults,
        retry_calls: !args.no_retry,
        echo: args.seed.is_some(),
        namenodes: args.namenodes,
    };
    if let Some(seed) = args.seed {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .init();
        let r = run_seed(seed, &opts);
        for line in &r.trace {
            println!("{line}");
        }
        report(&r, &opts);
        std::process::exit(if r.findings.is_empty() { 0 } else { 1 });
    }
    let first = args.first.unwrap_or_else(ferrite_sim::time_seed);
    let mut failed = 0;
    for seed in first..first + args.seeds {
        let r = run_seed(seed, &opts);
        if !r.findings.is_empty() {
            failed += 1;
            report(&r, &opts);
        }
    }
    println!(
        "{} seeds from {first}: {} passed, {failed} failed",
        args.seeds,
        args.seeds - failed
    );
    std::process::exit(if failed == 0 { 0 } else { 1 });
}

/// `--raft`: seeds of the Raft group, or one replayed with its trace.
fn raft_main(args: &Args) -> ! {
    let opts = RaftOptions {
        proposals: args.proposals,
        faults: !args.no_faults,
        echo: args.seed.is_some(),
        ..RaftOptions::default()
    };
    let hint = |seed| {
        format!(
            "cargo run -p ferrite-sim -- --raft --seed {seed} --proposals {}{}",
            opts.proposals,
            if opts.faults { "" } else { " --no-faults" }
        )
    };
    let seeds = match args.seed {
        Some(seed) => {
            tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
                .init();
            seed..seed + 1
        }
        None => {
            let first = args.first.unwrap_or_else(ferrite_sim::time_seed);
            first..first + args.seeds
        }
    };
    let (count, mut failed) = (seeds.end - seeds.start, 0);
    for seed in seeds {
        let r = run_raft_seed(seed, &opts);
        if args.seed.is_some() {
            r.trace.iter().for_each(|l| println!("{l}"));
        }
        if !r.findings.is_empty() {
            failed += 1;
            summary(&r);
            println!("  replay: {}", hint(seed));
        }
    }
    println!(
        "{count} Raft seeds: {} passed, {failed} failed",
        count - failed
    );
    std::process::exit(if failed == 0 { 0 } else { 1 });
}

fn summary(r: &Report) {
    println!(
        "seed {}: {} crashes, {} partitions, {} disk faults, {:?} simulated",
        r.seed, r.crashes, r.partitions, r.disk_faults, r.simulated
    );
    for f in &r.findings {
        println!("  FOUND {f}");
    }
}

fn report(r: &ferrite_sim::Report, opts: &Options) {
    summary(r);
    if !r.findings.is_empty() {
        println!("  replay: {}", replay_hint(r.seed, opts));
    }
}
