//! The journal's in-memory tail: the last synced batches, exactly as written to the
//! segments, for subscribers that follow the journal (the summary service, in this process
//! or over the wire). Only synced records are published, so a follower never sees an
//! operation that a crash could still take back.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use ferrite_ipc::chunker::Chunker;
use parking_lot::{Condvar, Mutex};

/// Bytes per allocation of the tail's batch copies (see [`Chunker`]).
const CHUNK: usize = 256 << 10;

/// Copies batches for the tail: under a remote client a synced batch is one or two
/// records, so a tail of megabytes would otherwise be some hundred thousand small allocations.
pub fn chunker() -> Chunker {
    Chunker::new(CHUNK)
}

/// Consecutive records `first..=last`, encoded as in a segment.
#[derive(Clone, Debug)]
pub struct Batch {
    pub first: u64,
    pub last: u64,
    pub bytes: Bytes,
    /// When it was synced and published: followers measure their lag from here.
    pub at: Instant,
}

struct Inner {
    batches: VecDeque<Batch>,
    bytes: usize,
    /// The last published txid (what the tail reaches, even when it holds nothing).
    last: u64,
    closed: bool,
}

pub struct Tail {
    inner: Mutex<Inner>,
    published: Condvar,
    cap: usize,
}

impl Tail {
    pub fn new(cap: usize, last_txid: u64) -> Tail {
        Tail {
            inner: Mutex::new(Inner {
                batches: VecDeque::new(),
                bytes: 0,
                last: last_txid,
                closed: false,
            }),
            published: Condvar::new(),
            cap,
        }
    }

    pub fn publish(&self, first: u64, last: u64, bytes: Bytes) {
        let mut t = self.inner.lock();
        t.last = last;
        t.bytes += bytes.len();
        t.batches.push_back(Batch {
            first,
            last,
            bytes,
            at: Instant::now(),
        });
        // Keep at least the newest batch, however large: a follower that is close behind
        // must always be able to continue from memory.
        while t.bytes > self.cap && t.batches.len() > 1 {
            let old = t.batches.pop_front().expect("more than one batch");
            t.bytes -= old.bytes.len();
        }
        drop(t);
        self.published.notify_all();
    }

    pub fn close(&self) {
        self.inner.lock().closed = true;
        self.published.notify_all();
    }

    /// Batches holding txids from `from` on (the first may start earlier), up to about
    /// `max_bytes`; waits up to `wait` when there are none yet. `None` when records at
    /// `from` are no longer held in memory.
    pub fn read_from(&self, from: u64, max_bytes: usize, wait: Duration) -> Option<Vec<Batch>> {
        let deadline = Instant::now() + wait;
        let mut t = self.inner.lock();
        while t.last < from && !t.closed {
            if self.published.wait_until(&mut t, deadline).timed_out() {
                break;
            }
        }
        if t.last < from {
            return Some(Vec::new());
        }
        match t.batches.front() {
            Some(b) if b.first <= from => {}
            // Published since we last looked, but already evicted, or never held.
            _ => return None,
        }
        // Batches are in txid order, and a tail of small batches holds thousands:
        // find the first one by bisection, not by a walk from the oldest under the lock the
        // syncer needs to publish.
        let start = t.batches.partition_point(|b| b.last < from);
        let mut out = Vec::new();
        let mut size = 0;
        for b in t.batches.range(start..) {
            if size > 0 && size + b.bytes.len() > max_bytes {
                break;
            }
            size += b.bytes.len();
            out.push(b.clone());
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn followers_read_from_memory_until_they_fall_behind() {
        let t = Tail::new(100, 0);
        t.publish(1, 3, Bytes::from(vec![0; 60]));
        t.publish(4, 4, Bytes::from(vec![0; 30]));
        let got = t.read_from(2, 1 << 20, Duration::ZERO).unwrap();
        assert_eq!(
            got.iter().map(|b| (b.first, b.last)).collect::<Vec<_>>(),
            [(1, 3), (4, 4)]
        );
        assert_eq!(t.read_from(4, 1 << 20, Duration::ZERO).unwrap().len(), 1);
        assert!(t
            .read_from(5, 1 << 20, Duration::from_millis(1))
            .unwrap()
            .is_empty());
        t.publish(5, 9, Bytes::from(vec![0; 50])); // evicts 1..=3
        assert!(
            t.read_from(2, 1 << 20, Duration::ZERO).is_none(),
            "must read the segments"
        );
        let got = t.read_from(4, 40, Duration::ZERO).unwrap();
        assert_eq!(got.len(), 1, "max_bytes caps a read after its first batch");
    }

    #[test]
    fn a_read_starts_at_the_batch_holding_the_txid_among_many() {
        let t = Tail::new(1 << 20, 0);
        // Batches of three records: 1..=3, 4..=6, …, 2998..=3000.
        for first in (1..=3000).step_by(3) {
            t.publish(first, first + 2, Bytes::from_static(b"xyz"));
        }
        for from in [1, 2, 3, 4, 1500, 2998, 3000] {
            let got = t.read_from(from, 1 << 20, Duration::ZERO).unwrap();
            let b = &got[0];
            assert!(
                b.first <= from && from <= b.last,
                "from {from}: {}..={}",
                b.first,
                b.last
            );
            assert_eq!(got.last().unwrap().last, 3000);
        }
    }

    #[test]
    fn a_waiting_follower_wakes_on_publish() {
        let t = std::sync::Arc::new(Tail::new(1 << 20, 7));
        let t2 = t.clone();
        let h = std::thread::spawn(move || t2.read_from(8, 1 << 20, Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(20));
        t.publish(8, 8, Bytes::from_static(b"x"));
        assert_eq!(h.join().unwrap().unwrap()[0].first, 8);
    }
}
