//! The storage policy satisfier's bookkeeping: which paths asked for their replicas to be
//! brought onto their policy's storage types (`satisfyStoragePolicy`), which block moves
//! are under way, and when a path is done or given up on. Pure: the service walks the
//! namespace and the block map, this decides; the clock comes in.
//!
//! A path is planned only when none of its moves is under way, so each planning is a
//! "round" with the state every earlier move left. A path whose blocks all match is done;
//! one still unmatched after `max_rounds` rounds is given up on (a storage type no node
//! has, or moves that keep failing), as HDFS's satisfier gives up after
//! `dfs.storage.policy.satisfier.retry.max.attempts`. Either way its `user.hdfs.sps` mark
//! is removed.

use std::collections::{HashMap, HashSet, VecDeque};

/// A path's state after a look at its blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Some of its moves are under way: look again later, plan nothing now.
    Busy,
    /// Every block is on the types its policy asks for.
    Done,
    /// Rounds used up with blocks still misplaced.
    GiveUp,
    /// Plan and issue the moves it needs (round `n`).
    Plan(u32),
}

#[derive(Clone, Copy, Debug)]
struct Flight {
    path: u64,
    until_ms: i64,
}

#[derive(Debug, Default)]
pub(crate) struct Satisfier {
    /// Inode ids, in the order asked.
    queue: VecDeque<u64>,
    queued: HashSet<u64>,
    /// Block moves under way, by block id.
    flights: HashMap<u64, Flight>,
    rounds: HashMap<u64, u32>,
}

impl Satisfier {
    /// Queues inode `id`; false if it is queued already.
    pub(crate) fn add(&mut self, id: u64) -> bool {
        let new = self.queued.insert(id);
        if new {
            self.queue.push_back(id);
        }
        new
    }

    pub(crate) fn pending_paths(&self) -> usize {
        self.queue.len()
    }

    /// The queued inode ids, oldest first.
    pub(crate) fn paths(&self) -> Vec<u64> {
        self.queue.iter().copied().collect()
    }

    #[cfg(test)]
    pub(crate) fn moving(&self, block: u64) -> bool {
        self.flights.contains_key(&block)
    }

    /// A move of `block` for path `path` starts; it counts as under way until
    /// [`finished`](Self::finished) or `until_ms`.
    pub(crate) fn started(&mut self, block: u64, path: u64, until_ms: i64) {
        self.flights.insert(block, Flight { path, until_ms });
    }

    pub(crate) fn finished(&mut self, block: u64) {
        self.flights.remove(&block);
    }

    /// Forgets moves whose answer never came by their deadline.
    pub(crate) fn expire(&mut self, now_ms: i64) {
        self.flights.retain(|_, f| f.until_ms > now_ms);
    }

    /// What to do with `path`, given whether all its blocks match (`satisfied`, as the
    /// caller's look at them found). Counts a round when it says [`Verdict::Plan`].
    pub(crate) fn verdict(&mut self, path: u64, satisfied: bool, max_rounds: u32) -> Verdict {
        if self.flights.values().any(|f| f.path == path) {
            return Verdict::Busy;
        }
        if satisfied {
            return Verdict::Done;
        }
        let r = self.rounds.entry(path).or_insert(0);
        if *r >= max_rounds {
            return Verdict::GiveUp;
        }
        *r += 1;
        Verdict::Plan(*r)
    }

    /// `path` leaves the queue (done, given up, or gone from the namespace).
    pub(crate) fn remove(&mut self, path: u64) {
        if self.queued.remove(&path) {
            self.queue.retain(|&p| p != path);
        }
        self.rounds.remove(&path);
        self.flights.retain(|_, f| f.path != path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_planned_in_rounds_waits_for_its_moves_and_ends_done_or_given_up() {
        let mut s = Satisfier::default();
        assert!(s.add(7));
        assert!(!s.add(7), "queued once");
        assert_eq!(s.verdict(7, false, 2), Verdict::Plan(1));
        s.started(100, 7, 1_000);
        s.started(101, 7, 1_000);
        assert!(s.moving(100));
        assert_eq!(s.verdict(7, false, 2), Verdict::Busy);
        s.finished(100);
        assert_eq!(s.verdict(7, false, 2), Verdict::Busy, "101 still moving");
        s.expire(1_000);
        assert!(
            !s.moving(101),
            "an unanswered move is forgotten at its deadline"
        );
        assert_eq!(s.verdict(7, false, 2), Verdict::Plan(2));
        assert_eq!(s.verdict(7, false, 2), Verdict::GiveUp);
        assert_eq!(s.verdict(7, true, 2), Verdict::Done);
        s.remove(7);
        assert_eq!(s.pending_paths(), 0);
        assert!(s.add(7), "and may be asked for again");
        assert_eq!(
            s.verdict(7, false, 2),
            Verdict::Plan(1),
            "with fresh rounds"
        );
    }

    #[test]
    fn paths_keep_their_order_and_removal_drops_their_moves() {
        let mut s = Satisfier::default();
        for p in [3, 1, 2] {
            s.add(p);
        }
        s.started(9, 1, i64::MAX);
        s.remove(1);
        assert_eq!(s.paths(), vec![3, 2]);
        assert!(!s.moving(9));
    }
}
