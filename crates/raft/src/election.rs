//! A fresh random wait before each repeated election, which openraft does not give.
//!
//! openraft draws a node's election timeout once, when the node starts, and checks it only
//! on its tick (every one and a half heartbeats). Two candidates whose timeouts round up to
//! the same tick, and whose ticks run in step (nodes started together do), stand in the
//! same instant in every term: each votes for itself, neither wins, and the group stays
//! leaderless for good. Raft's liveness rests on each election drawing its own timeout, so
//! that one candidate soon stands alone; this restores that. A candidate that has neither
//! won nor heard of a leader after a wait drawn afresh from the first half of the election
//! range stands again, before openraft's own timer would, at a moment of its own.
//!
//! Standing again is always safe in Raft (it only raises the term); what this changes is
//! only when.

use std::ops::Range;
use std::time::Duration;

use openraft::{AsyncRuntime, ServerState};
use rand08::Rng;

use crate::{Raft, Runtime, Timing};

/// The range a repeated election's wait is drawn from: long enough for a vote to travel
/// and be synced on both sides, short enough to come before openraft's own timer.
pub(crate) fn retry_range(timing: &Timing) -> Range<Duration> {
    timing.election_min / 2..timing.election_min
}

/// Watches `raft` until it shuts down, standing it again whenever it stays a candidate in
/// one term for a freshly drawn wait.
pub(crate) async fn stand_again_after_split_votes(raft: Raft, timing: Timing) {
    let range = retry_range(&timing);
    let mut metrics = raft.metrics();
    loop {
        let (state, term) = {
            let m = metrics.borrow_and_update();
            (m.state, m.current_term)
        };
        if state == ServerState::Candidate {
            let wait = Runtime::thread_rng().gen_range(range.clone());
            tokio::time::sleep(wait).await;
            let still = {
                let m = raft.metrics();
                let m = m.borrow();
                m.state == ServerState::Candidate && m.current_term == term
            };
            if still {
                tracing::debug!(term, ?wait, "no leader after a split vote; standing again");
                if raft.trigger().elect().await.is_err() {
                    return; // shut down
                }
            }
            continue;
        }
        if metrics.changed().await.is_err() {
            return; // shut down
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_election_waits_less_than_the_shortest_election_timeout() {
        let timing = Timing::default();
        let r = retry_range(&timing);
        assert!(r.end <= timing.election_min);
        // A vote needs a sync on each side: several heartbeats, not a fraction of one.
        assert!(r.start >= 2 * timing.heartbeat, "{r:?}");
    }
}
