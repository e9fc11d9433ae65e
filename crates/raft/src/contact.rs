//! Whether a follower's leader still seems alive. openraft's metrics name the leader a
//! node follows, not whether it lives: after a leader dies its followers go on naming it
//! until an election timeout has passed. A NameNode standby reads this to tell a group
//! with a live active (send the client on at once) from one about to elect a new one
//! (hold the client's call until it is known).

use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

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
}
