//! The simulation as CI runs it: a few hundred seeds with faults, each of which must keep
//! every check, and one seed run twice, which must tell the same story.

use ferrite_sim::{replay_hint, run_seed, Options};

/// Seeds CI runs; `cargo run -p ferrite-sim -- --seeds N` runs more.
const SEEDS: u64 = 200;

#[test]
fn every_seed_keeps_every_acknowledged_operation() {
    let opts = Options::default();
    let mut failures = Vec::new();
    let (mut crashes, mut partitions, mut disk_faults) = (0, 0, 0);
    for seed in 0..SEEDS {
        let r = run_seed(seed, &opts);
        crashes += r.crashes;
        partitions += r.partitions;
        disk_faults += r.disk_faults;
        if !r.findings.is_empty() {
            failures.push(format!(
                "seed {seed} ({}):\n  {}",
                replay_hint(seed, &opts),
                r.findings.join("\n  ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The schedule must actually have hurt the cluster, or the seeds prove little.
    assert!(crashes > SEEDS as u32 / 4, "only {crashes} crashes");
    assert!(
        partitions > SEEDS as u32 / 4,
        "only {partitions} partitions"
    );
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

/// Seeds CI runs with DataNodes and file clients (each is a longer run).
const DATA_SEEDS: u64 = 60;

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
    let opts = with_datanodes();
    let mut failures = Vec::new();
    let (mut crashes, mut partitions) = (0, 0);
    for seed in 0..DATA_SEEDS {
        let r = run_seed(seed, &opts);
        crashes += r.crashes;
        partitions += r.partitions;
        if !r.findings.is_empty() {
            failures.push(format!(
                "seed {seed} ({}):\n  {}",
                replay_hint(seed, &opts),
                r.findings.join("\n  ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(crashes > DATA_SEEDS as u32 / 4, "only {crashes} crashes");
    assert!(
        partitions > DATA_SEEDS as u32 / 4,
        "only {partitions} partitions"
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
