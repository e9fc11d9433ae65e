//! The simulation as CI runs it: a few hundred seeds with faults, each of which must keep
//! every check, and one seed run twice, which must tell the same story; the same with
//! DataNodes and file clients, under both DataNode fault schedules.

use ferrite_sim::{replay_hint, run_seed, Options};

/// Seeds CI runs; `cargo run -p ferrite-sim -- --seeds N` runs more.
const SEEDS: u64 = 200;
/// Seeds CI runs with DataNodes and file clients (each is a longer run).
const DATA_SEEDS: u64 = 60;
/// Seeds CI runs with DataNode power cuts and dead disks too.
const HEAVY_SEEDS: u64 = 40;

/// Faults the seeds dealt, summed.
#[derive(Default)]
struct Dealt {
    crashes: u32,
    partitions: u32,
    disk_faults: u32,
}

/// Runs seeds `0..count`; fails with every finding (and its replay command).
fn run_all(count: u64, opts: &Options) -> Dealt {
    let mut failures = Vec::new();
    let mut dealt = Dealt::default();
    for seed in 0..count {
        let r = run_seed(seed, opts);
        dealt.crashes += r.crashes;
        dealt.partitions += r.partitions;
        dealt.disk_faults += r.disk_faults;
        if !r.findings.is_empty() {
            failures.push(format!(
                "seed {seed} ({}):\n  {}",
                replay_hint(seed, opts),
                r.findings.join("\n  ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The schedule must actually have hurt the cluster, or the seeds prove little.
    let (crashes, partitions) = (dealt.crashes, dealt.partitions);
    assert!(crashes > count as u32 / 4, "only {crashes} crashes");
    assert!(
        partitions > count as u32 / 4,
        "only {partitions} partitions"
    );
    dealt
}

#[test]
fn every_seed_keeps_every_acknowledged_operation() {
    let dealt = run_all(SEEDS, &Options::default());
    let disk_faults = dealt.disk_faults;
    assert!(
        disk_faults > SEEDS as u32 / 8,
        "only {disk_faults} disk faults"
    );
}

#[test]
fn a_seed_replays_exactly() {
    let opts = Options::default();
    let a = run_seed(7, &opts);
    let b = run_seed(7, &opts);
    assert!(a.trace.len() > 40, "the run did little: {:?}", a.trace);
    assert_eq!(a.trace, b.trace);
    assert_eq!(a.simulated, b.simulated);
}

fn with_datanodes() -> Options {
    Options {
        clients: 1,
        datanodes: 4,
        file_clients: 2,
        ops_per_file_client: 60,
        ..Options::default()
    }
}

#[test]
fn every_seed_with_datanodes_keeps_every_acknowledged_byte() {
    run_all(DATA_SEEDS, &with_datanodes());
}

#[test]
fn every_seed_with_datanode_power_cuts_keeps_every_acknowledged_byte() {
    let opts = Options {
        dn_faults_heavy: true,
        ..with_datanodes()
    };
    let dealt = run_all(HEAVY_SEEDS, &opts);
    let disk_faults = dealt.disk_faults;
    assert!(
        disk_faults > HEAVY_SEEDS as u32 / 4,
        "only {disk_faults} disk faults"
    );
}

#[test]
fn a_seed_with_datanodes_replays_exactly() {
    let opts = with_datanodes();
    let a = run_seed(11, &opts);
    let b = run_seed(11, &opts);
    assert!(
        a.trace.iter().filter(|l| l.contains("hflush")).count() > 5,
        "the run did little: {:?}",
        a.trace
    );
    assert_eq!(a.trace, b.trace);
    assert_eq!(a.simulated, b.simulated);
}
