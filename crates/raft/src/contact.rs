//! What each side of a Raft group knows of the other's liveness, beyond openraft's
//! metrics.
//!
//! A follower: whether its leader still seems alive ([`LeaderContact`]). The metrics name
//! the leader a node follows, not whether it lives: after a leader dies its followers go
//! on naming it until an election timeout has passed. A NameNode standby reads this to
//! tell a group with a live active (send the client on at once) from one about to elect a
//! new one (hold the client's call until it is known).
//!
//! A leader: when a majority last acknowledged it ([`Acks`]), which bounds how long it may
//! go on answering reads from its own state: no follower stands for election sooner than
//! an election timeout after it last heard from the leader, so a leader that stops
//! serving a little before that can never answer beside a newer one.

use std::collections::BTreeMap;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::NodeId;

/// What the Raft server saw of the leader: when it last took an append (a heartbeat
/// included) or a snapshot from one, and whether a connection that brought them has
/// closed since. A killed process's connections close at once, long before an election
/// timeout; a frozen or cut-off leader only falls silent.
#[derive(Debug, Default)]
pub struct LeaderContact {
    contact: Mutex<Contact>,
    closed: Notify,
}

#[derive(Debug, Default)]
struct Contact {
    heard: Option<Instant>,
    lost: bool,
}

impl LeaderContact {
    /// A leader of the current term was heard from just now.
    pub fn heard(&self) {
        *self.contact.lock() = Contact {
            heard: Some(Instant::now()),
            lost: false,
        };
    }

    /// A connection a leader's appends came on has closed.
    pub fn lost(&self) {
        self.contact.lock().lost = true;
        self.closed.notify_one();
    }

    /// Resolves when a leader's connection has closed (at once if one closed since the
    /// last call).
    pub async fn closed(&self) {
        self.closed.notified().await;
    }

    /// When a leader was last heard from.
    pub fn heard_at(&self) -> Option<Instant> {
        self.contact.lock().heard
    }

    /// Whether a leader has been heard from after `at`.
    pub fn heard_since(&self, at: Instant) -> bool {
        self.contact.lock().heard.is_some_and(|h| h > at)
    }

    /// Whether the leader may be gone: never heard from, its connection closed since it
    /// was last heard, or silent for longer than `silence`.
    pub fn in_doubt(&self, silence: Duration) -> bool {
        let c = self.contact.lock();
        c.lost || c.heard.is_none_or(|at| at.elapsed() > silence)
    }
}

/// The leader's record of its followers' acknowledgements: per follower, the term and the
/// send time of the latest append it accepted.
#[derive(Debug, Default)]
pub struct Acks(Mutex<BTreeMap<NodeId, (u64, Instant)>>);

impl Acks {
    /// `follower` accepted an append of `term` that was sent at `sent`.
    pub fn acked(&self, follower: NodeId, term: u64, sent: Instant) {
        let mut acks = self.0.lock();
        let e = acks.entry(follower).or_insert((term, sent));
        if (term, sent) > *e {
            *e = (term, sent);
        }
    }

    /// The send time of the latest append of `term` that a majority of `voters` (this
    /// leader among them) holds: the start of its lease.
    pub fn quorum_since(&self, term: u64, voters: usize) -> Option<Instant> {
        let others_needed = voters / 2;
        if others_needed == 0 {
            return Some(Instant::now()); // a group of one
        }
        let mut times: Vec<Instant> = self
            .0
            .lock()
            .values()
            .filter(|(t, _)| *t == term)
            .map(|(_, at)| *at)
            .collect();
        times.sort_unstable_by(|a, b| b.cmp(a));
        times.get(others_needed - 1).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leader_is_in_doubt_when_silent_or_disconnected_until_heard_again() {
        let c = LeaderContact::default();
        let long = Duration::from_secs(3600);
        assert!(c.in_doubt(long), "never heard from");
        c.heard();
        assert!(!c.in_doubt(long));
        std::thread::sleep(Duration::from_millis(2));
        assert!(c.in_doubt(Duration::from_millis(1)), "silent too long");
        c.lost();
        assert!(c.in_doubt(long), "its connection closed");
        c.heard();
        assert!(!c.in_doubt(long), "heard again");
    }

    #[test]
    fn a_lease_starts_at_the_latest_append_a_majority_holds_in_the_term() {
        let acks = Acks::default();
        let t0 = Instant::now();
        let (t1, t2) = (
            t0 + Duration::from_millis(10),
            t0 + Duration::from_millis(20),
        );
        assert_eq!(acks.quorum_since(3, 3), None);
        acks.acked(2, 3, t1);
        assert_eq!(acks.quorum_since(3, 3), Some(t1), "itself and node 2");
        acks.acked(3, 3, t2);
        assert_eq!(acks.quorum_since(3, 3), Some(t2));
        assert_eq!(
            acks.quorum_since(3, 5),
            Some(t1),
            "two others needed of five"
        );
        acks.acked(3, 3, t0);
        assert_eq!(
            acks.quorum_since(3, 3),
            Some(t2),
            "an older ack changes nothing"
        );
        assert_eq!(
            acks.quorum_since(4, 3),
            None,
            "acks of an earlier term count for nothing"
        );
    }
}
