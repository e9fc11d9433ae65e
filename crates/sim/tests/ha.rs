//! An HA nameservice in the simulation, as CI runs it: three NameNodes on Raft, crashed
//! and cut off from each other and from their clients one at a time. Every seed must keep
//! every acknowledged operation with one leader per term, and a seed run twice must tell
//! the same story (DataNodes and file clients included).

use ferrite_sim::{replay_hint, run_seed, Options};

/// Seeds CI runs; `cargo run -p ferrite-sim -- --namenodes 3 --seeds N` runs more.
const SEEDS: u64 = 60;

fn ha() -> Options {
    Options {
        namenodes: 3,
        ..Options::default()
    }
}

#[test]
fn every_ha_seed_keeps_every_acknowledged_operation_with_one_leader_per_term() {
    let opts = ha();
    let (mut crashes, mut partitions, mut failures) = (0, 0, Vec::new());
    for seed in 0..SEEDS {
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
    // The schedule must have hurt the group, or the seeds prove little.
    assert!(crashes > SEEDS as u32, "only {crashes} NameNode crashes");
    assert!(partitions > SEEDS as u32, "only {partitions} partitions");
}

/// Three NameNodes with DataNodes and writers that hflush, append and read back.
fn ha_with_datanodes() -> Options {
    Options {
        clients: 1,
        datanodes: 4,
        file_clients: 2,
        ops_per_file_client: 60,
        ..ha()
    }
}

/// Seeds that once found a reader sent to a replica of an old generation stamp (a
/// standby placed it before the record that restamped the block), a restarted active
/// listing a block no DataNode had reported yet (a reader took the file for empty), and a
/// leader restarted within its term planning again the txids of the batches its log
/// still held (every member then left the log, and the group never served again).
#[test]
fn ha_seeds_with_datanodes_that_once_failed_now_pass() {
    let opts = ha_with_datanodes();
    for seed in [141, 147, 153, 157, 182] {
        let r = run_seed(seed, &opts);
        assert!(
            r.findings.is_empty(),
            "seed {seed} ({}):\n  {}",
            replay_hint(seed, &opts),
            r.findings.join("\n  ")
        );
    }
}

#[test]
fn an_ha_seed_with_datanodes_replays_exactly() {
    let opts = ha_with_datanodes();
    let a = run_seed(3, &opts);
    let b = run_seed(3, &opts);
    assert!(a.trace.len() > 100, "the run did little: {:?}", a.trace);
    assert_eq!(a.trace, b.trace);
    assert_eq!(a.simulated, b.simulated);
}
