//! The NameNodes' Raft group as CI runs it: seeds of three nodes under power cuts and
//! partitions, each of which must keep Raft's promises, and one seed run twice, which must
//! tell the same story.

use ferrite_sim::{run_raft_seed, RaftOptions};

/// Seeds CI runs; `cargo run -p ferrite-sim -- --raft --seeds N` runs more.
const SEEDS: u64 = 100;

#[test]
fn every_raft_seed_keeps_one_leader_per_term_and_every_acknowledged_batch() {
    let opts = RaftOptions::default();
    let (mut crashes, mut partitions, mut failures) = (0, 0, Vec::new());
    for seed in 0..SEEDS {
        let r = run_raft_seed(seed, &opts);
        crashes += r.crashes;
        partitions += r.partitions;
        if !r.findings.is_empty() {
            failures.push(format!(
                "seed {seed} (cargo run -p ferrite-sim -- --raft --seed {seed}):\n  {}",
                r.findings.join("\n  ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The schedule must have hurt the group, or the seeds prove little.
    assert!(crashes > SEEDS as u32 / 2, "only {crashes} power cuts");
    assert!(partitions > SEEDS as u32, "only {partitions} partitions");
}

#[test]
fn a_raft_seed_replays_exactly() {
    let opts = RaftOptions::default();
    let a = run_raft_seed(11, &opts);
    let b = run_raft_seed(11, &opts);
    assert!(a.trace.len() > 100, "the run did little: {:?}", a.trace);
    assert_eq!(a.trace, b.trace);
    assert_eq!(a.simulated, b.simulated);
}

/// Three nodes that start in the same instant with the same election timeout stand in the
/// same instant (every node initializes the group, so all three stand at once): every vote
/// splits unless a repeated election waits a fresh random time. No faults, whose restarts
/// would put the nodes out of step and hide it.
#[test]
fn nodes_with_one_election_timeout_started_together_still_elect() {
    let opts = RaftOptions {
        one_election_timeout: true,
        proposals: 100,
        faults: false,
        ..RaftOptions::default()
    };
    for seed in 0..5 {
        let r = run_raft_seed(seed, &opts);
        assert!(r.findings.is_empty(), "seed {seed}: {:?}", r.findings);
    }
}
