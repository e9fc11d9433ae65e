//! At-most-once execution for non-idempotent calls, keyed by `(clientId, callId)`.
//!
//! A Java client that times out resends the same callId with a higher retryCount. The first
//! attempt inserts a cell; the retry finds it and waits for (or immediately gets) the first
//! attempt's encoded reply instead of running the operation again. Entries expire after a
//! configurable time (Hadoop: 10 minutes) and the map is capped, evicting oldest first.
//!
//! Every create, rename and delete leaves an entry behind for those 10 minutes, so a finished
//! entry is stored compactly: the reply's exact bytes, no synchronisation state.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::OnceCell;

use crate::RpcError;

/// The reply a call produced: encoded body bytes, or the error it raised.
pub type CachedReply = Result<Bytes, RpcError>;
pub type Cell = Arc<OnceCell<CachedReply>>;

enum Entry {
    /// The first attempt is still running; retries wait on the cell.
    Running(Cell),
    Done(Stored),
}

/// A finished reply, as small as it can be kept.
enum Stored {
    Ok(Box<[u8]>),
    Err(Box<RpcError>),
}

impl Stored {
    fn of(reply: &CachedReply) -> Self {
        match reply {
            Ok(b) => Stored::Ok(b.as_ref().into()),
            Err(e) => Stored::Err(Box::new(e.clone())),
        }
    }
    fn reply(&self) -> CachedReply {
        match self {
            Stored::Ok(b) => Ok(Bytes::copy_from_slice(b)),
            Stored::Err(e) => Err((**e).clone()),
        }
    }
}

/// What the cache knows about a call.
pub enum Lookup {
    /// First attempt: run it through the cell, then [`RetryCache::finish`].
    Fresh(Cell),
    /// A retry while the first attempt runs: wait on the cell.
    InFlight(Cell),
    /// A retry after the first attempt finished: its reply.
    Done(CachedReply),
}

type Key = ([u8; 16], i32);

pub struct RetryCache {
    inner: Mutex<Inner>,
    ttl: Duration,
    capacity: usize,
}

struct Inner {
    map: HashMap<Key, Entry>,
    order: VecDeque<(Instant, Key)>,
}

impl RetryCache {
    /// A cache holding at most `capacity` replies for `ttl`; capacity 0 turns it off.
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        RetryCache {
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                order: VecDeque::new(),
            }),
            ttl,
            capacity,
        }
    }

    fn key(&self, client_id: &[u8], call_id: i32) -> Option<Key> {
        let id: [u8; 16] = client_id.try_into().ok()?;
        (call_id >= 0 && self.capacity > 0).then_some((id, call_id))
    }

    /// Looks the call up, registering it if this is the first attempt. `None` when the call
    /// cannot be deduplicated (no 16-byte clientId, a negative callId, or the cache is off).
    pub fn begin(&self, client_id: &[u8], call_id: i32, now: Instant) -> Option<Lookup> {
        let key = self.key(client_id, call_id)?;
        let mut inner = self.inner.lock();
        inner.expire(now, self.ttl, self.capacity);
        match inner.map.get(&key) {
            Some(Entry::Running(cell)) => return Some(Lookup::InFlight(cell.clone())),
            Some(Entry::Done(stored)) => return Some(Lookup::Done(stored.reply())),
            None => {}
        }
        let cell: Cell = Arc::new(OnceCell::new());
        inner.map.insert(key, Entry::Running(cell.clone()));
        inner.order.push_back((now, key));
        Some(Lookup::Fresh(cell))
    }

    /// Records the first attempt's reply in its compact form.
    pub fn finish(&self, client_id: &[u8], call_id: i32, reply: &CachedReply) {
        let Some(key) = self.key(client_id, call_id) else {
            return;
        };
        if let Some(e) = self.inner.lock().map.get_mut(&key) {
            *e = Entry::Done(Stored::of(reply));
        }
    }

    /// The same as [`begin`](Self::begin), returning a cell to run or wait on.
    #[cfg(test)]
    fn cell(&self, client_id: &[u8], call_id: i32, now: Instant) -> Option<Cell> {
        match self.begin(client_id, call_id, now)? {
            Lookup::Fresh(c) | Lookup::InFlight(c) => Some(c),
            Lookup::Done(r) => Some(Arc::new(OnceCell::new_with(Some(r)))),
        }
    }

    pub fn len(&self) -> usize {
        self.inner.lock().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Inner {
    fn expire(&mut self, now: Instant, ttl: Duration, capacity: usize) {
        while let Some(&(at, key)) = self.order.front() {
            let too_old = now.saturating_duration_since(at) >= ttl;
            if !too_old && self.map.len() < capacity {
                break;
            }
            self.order.pop_front();
            self.map.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn second_attempt_sees_first_reply() {
        let c = RetryCache::new(Duration::from_secs(600), 100);
        let now = Instant::now();
        let id = [7u8; 16];
        let first = c.cell(&id, 1, now).unwrap();
        let mut runs = 0;
        let r1 = first
            .get_or_init(|| async {
                runs += 1;
                Ok(Bytes::from_static(b"x"))
            })
            .await
            .clone();
        let again = c.cell(&id, 1, now).unwrap();
        let r2 = again
            .get_or_init(|| async {
                runs += 1;
                Ok(Bytes::from_static(b"y"))
            })
            .await
            .clone();
        assert_eq!(runs, 1);
        assert_eq!(r1, r2);
        // A different call id is a different call.
        assert!(c.cell(&id, 2, now).unwrap().get().is_none());
    }

    #[test]
    fn finished_entries_replay_their_reply() {
        let c = RetryCache::new(Duration::from_secs(600), 100);
        let now = Instant::now();
        let id = [3u8; 16];
        let Some(Lookup::Fresh(cell)) = c.begin(&id, 5, now) else {
            panic!("first attempt is fresh")
        };
        assert!(matches!(c.begin(&id, 5, now), Some(Lookup::InFlight(_))));
        let reply: CachedReply = Ok(Bytes::from_static(b"reply"));
        let _ = cell.set(reply.clone());
        c.finish(&id, 5, &reply);
        match c.begin(&id, 5, now) {
            Some(Lookup::Done(r)) => assert_eq!(r, reply),
            _ => panic!("a finished call replays its stored reply"),
        }
        let err: CachedReply = Err(RpcError::io("boom"));
        let Some(Lookup::Fresh(_)) = c.begin(&id, 6, now) else {
            panic!()
        };
        c.finish(&id, 6, &err);
        assert!(matches!(c.begin(&id, 6, now), Some(Lookup::Done(Err(e))) if e.message == "boom"));
    }

    #[test]
    fn undeduplicable_calls_and_expiry() {
        let c = RetryCache::new(Duration::from_secs(10), 2);
        let now = Instant::now();
        assert!(c.cell(&[], 1, now).is_none());
        assert!(c.cell(&[1; 16], -4, now).is_none());
        assert!(
            RetryCache::new(Duration::from_secs(1), 0)
                .cell(&[1; 16], 1, now)
                .is_none(),
            "capacity 0 is off"
        );
        c.cell(&[1; 16], 1, now);
        c.cell(&[1; 16], 2, now);
        c.cell(&[1; 16], 3, now); // evicts call 1 (capacity 2)
        assert_eq!(c.len(), 2);
        c.cell(&[1; 16], 4, now + Duration::from_secs(11)); // all older entries expired
        assert_eq!(c.len(), 1);
    }
}
