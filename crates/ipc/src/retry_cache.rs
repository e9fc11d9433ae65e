//! At-most-once execution for non-idempotent calls, keyed by `(clientId, callId)`.
//!
//! A Java client that times out resends the same callId with a higher retryCount. The first
//! attempt inserts a cell; the retry finds it and waits for (or immediately gets) the first
//! attempt's encoded reply instead of running the operation again. Entries expire after a
//! configurable time (Hadoop: 10 minutes) and the cache is capped, evicting oldest first.
//!
//! Every create, rename and delete leaves an entry behind for those 10 minutes, up to
//! Hadoop's cap (262,144 entries on a 24 GiB machine), so entries are kept in as few bytes
//! as possible. They begin, and therefore expire, in time order: they live in one ring of
//! fixed-size records, oldest first, with a small reply (a rename's or delete's boolean)
//! inside its record and a larger one (a create's file status) in shared chunks (see
//! [`Chunker`]); the index is a hash table of 4-byte ring sequence numbers, the key being
//! read from the record it points at. Measured after the NameNode benchmark suite: a map
//! keyed by the call, a separate expiry queue and a boxed reply each held 44 MB of live
//! heap; with the ring but boxed replies, idle RSS was 319 MiB against 223 without the
//! cache (boxes freed in order among long-lived objects fragment the heap); with the
//! replies in chunks, 290 MiB.

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hashbrown::HashTable;
use parking_lot::Mutex;
use tokio::sync::OnceCell;

use crate::chunker::Chunker;
use crate::RpcError;

/// The reply a call produced: encoded body bytes, or the error it raised.
pub(crate) type CachedReply = Result<Bytes, RpcError>;
pub(crate) type Cell = Arc<OnceCell<CachedReply>>;

/// Replies of at most this many bytes are kept inside their record.
const INLINE: usize = 15;

/// Bytes per allocation of the larger replies.
const CHUNK: usize = 64 << 10;

/// Entries reserved at start at most (Hadoop's cap on a 6 GiB heap): a larger configured
/// cap grows past it as it fills.
const PRESIZE_MAX: usize = 1 << 18;

/// What an entry holds: the running call's cell, or its finished reply.
enum Reply {
    /// The first attempt is still running; retries wait on the cell.
    Running(Cell),
    Inline {
        len: u8,
        bytes: [u8; INLINE],
    },
    /// A slice of one of the cache's chunks.
    Ok(Bytes),
    Err(Box<RpcError>),
}

impl Reply {
    fn of(reply: &CachedReply, chunks: &mut Chunker) -> Self {
        match reply {
            Ok(b) if b.len() <= INLINE => {
                let mut bytes = [0u8; INLINE];
                bytes[..b.len()].copy_from_slice(b);
                Reply::Inline {
                    len: b.len() as u8,
                    bytes,
                }
            }
            Ok(b) => Reply::Ok(chunks.copy(b)),
            Err(e) => Reply::Err(Box::new(e.clone())),
        }
    }

    fn lookup(&self) -> Lookup {
        match self {
            Reply::Running(cell) => Lookup::InFlight(cell.clone()),
            Reply::Inline { len, bytes } => {
                Lookup::Done(Ok(Bytes::copy_from_slice(&bytes[..*len as usize])))
            }
            Reply::Ok(b) => Lookup::Done(Ok(b.clone())),
            Reply::Err(e) => Lookup::Done(Err((**e).clone())),
        }
    }
}

/// What the cache knows about a call.
pub(crate) enum Lookup {
    /// First attempt: run it through the cell, then [`RetryCache::finish`].
    Fresh(Cell),
    /// A retry while the first attempt runs: wait on the cell.
    InFlight(Cell),
    /// A retry after the first attempt finished: its reply.
    Done(CachedReply),
}

type Key = ([u8; 16], i32);

/// One call, in the ring.
struct Record {
    key: Key,
    /// When the call began: milliseconds since the cache's epoch.
    at_ms: u64,
    reply: Reply,
}

pub(crate) struct RetryCache {
    inner: Mutex<Inner>,
    ttl_ms: u64,
    capacity: usize,
    epoch: Instant,
    hasher: foldhash::fast::RandomState,
}

struct Inner {
    /// Every entry, oldest first.
    ring: VecDeque<Record>,
    /// The sequence number of `ring[0]`; entry `s` is at `ring[s - first]` (wrapping).
    first: u32,
    /// Sequence numbers, found by their record's key.
    index: HashTable<u32>,
    /// Where replies too big for their record are copied.
    chunks: Chunker,
}

/// Where entry `seq` sits in a ring whose front is entry `first`.
fn slot(first: u32, seq: u32) -> usize {
    seq.wrapping_sub(first) as usize
}

impl Inner {
    fn record(&self, seq: u32) -> &Record {
        &self.ring[slot(self.first, seq)]
    }

    fn find(&self, hash: u64, key: &Key) -> Option<u32> {
        self.index
            .find(hash, |&s| self.record(s).key == *key)
            .copied()
    }
}

impl RetryCache {
    /// A cache holding at most `capacity` replies for `ttl`; capacity 0 turns it off.
    pub(crate) fn new(ttl: Duration, capacity: usize) -> Self {
        Self::starting_at(ttl, capacity, 0)
    }

    /// The same, numbering entries from `first` (tests start near the wrap).
    fn starting_at(ttl: Duration, capacity: usize, first: u32) -> Self {
        // Sized for the cap up front. Grown by doubling, each step re-hashed every entry
        // (reading its key from the ring, a likely miss each) and copied the whole ring,
        // all under the cache's lock, which every create, rename and delete takes: filling
        // 262,144 entries, the slowest `begin` took 10.6 ms (the last doubling) against
        // 0.07–0.18 ms presized, and all of them 87–92 ms against 65–66 (a release-build
        // probe). The ring's pages are only touched as it fills; the index initialises one
        // control byte per bucket (a fresh NameNode's RSS: 8.1 MB against 7.9).
        let presize = capacity.min(PRESIZE_MAX);
        RetryCache {
            inner: Mutex::new(Inner {
                ring: VecDeque::with_capacity(presize),
                first,
                index: HashTable::with_capacity(presize),
                chunks: Chunker::new(CHUNK),
            }),
            ttl_ms: ttl.as_millis().try_into().unwrap_or(u64::MAX),
            // The ring's sequence numbers are 32 bits.
            capacity: capacity.min(u32::MAX as usize),
            epoch: Instant::now(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    fn key(&self, client_id: &[u8], call_id: i32) -> Option<Key> {
        let id: [u8; 16] = client_id.try_into().ok()?;
        (call_id >= 0 && self.capacity > 0).then_some((id, call_id))
    }

    fn ms(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.epoch)
            .as_millis()
            .try_into()
            .unwrap_or(u64::MAX)
    }

    /// Looks the call up, registering it if this is the first attempt. `None` when the call
    /// cannot be deduplicated (no 16-byte clientId, a negative callId, or the cache is off).
    pub(crate) fn begin(&self, client_id: &[u8], call_id: i32, now: Instant) -> Option<Lookup> {
        let key = self.key(client_id, call_id)?;
        let hash = self.hasher.hash_one(key);
        let at_ms = self.ms(now);
        let mut inner = self.inner.lock();
        self.expire(&mut inner, at_ms, 0);
        if let Some(seq) = inner.find(hash, &key) {
            return Some(inner.record(seq).reply.lookup());
        }
        // Room for one more: a full cache drops its oldest entry.
        self.expire(&mut inner, at_ms, 1);
        let cell: Cell = Arc::new(OnceCell::new());
        let seq = inner.first.wrapping_add(inner.ring.len() as u32);
        inner.ring.push_back(Record {
            key,
            at_ms,
            reply: Reply::Running(cell.clone()),
        });
        let Inner {
            ring, first, index, ..
        } = &mut *inner;
        let rehash = |&s: &u32| self.hasher.hash_one(ring[slot(*first, s)].key);
        index.insert_unique(hash, seq, rehash);
        Some(Lookup::Fresh(cell))
    }

    /// Records the first attempt's reply in its compact form.
    pub(crate) fn finish(&self, client_id: &[u8], call_id: i32, reply: &CachedReply) {
        let Some(key) = self.key(client_id, call_id) else {
            return;
        };
        let hash = self.hasher.hash_one(key);
        let mut inner = self.inner.lock();
        if let Some(seq) = inner.find(hash, &key) {
            let Inner {
                ring,
                first,
                chunks,
                ..
            } = &mut *inner;
            ring[slot(*first, seq)].reply = Reply::of(reply, chunks);
        }
    }

    /// Drops entries from the front of the ring while they are too old, or while `room`
    /// more would not fit under the cap.
    fn expire(&self, inner: &mut Inner, now_ms: u64, room: usize) {
        while let Some(oldest) = inner.ring.front() {
            let too_old = now_ms.saturating_sub(oldest.at_ms) >= self.ttl_ms;
            if !too_old && inner.ring.len() + room <= self.capacity {
                break;
            }
            let (hash, seq) = (self.hasher.hash_one(oldest.key), inner.first);
            if let Ok(e) = inner.index.find_entry(hash, |&s| s == seq) {
                e.remove();
            }
            inner.ring.pop_front();
            inner.first = inner.first.wrapping_add(1);
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

    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().ring.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_filled_to_its_cap_never_regrows() {
        let cap = 5_000;
        let c = RetryCache::new(Duration::from_secs(600), cap);
        // Allocations, not `capacity()`: the index's capacity also shrinks as erased
        // entries leave tombstones, which it clears by re-hashing in place.
        let sizes = |c: &RetryCache| {
            let g = c.inner.lock();
            (g.index.allocation_size(), g.ring.capacity())
        };
        let at_start = sizes(&c);
        assert!(c.inner.lock().index.capacity() >= cap && at_start.1 >= cap);
        let now = Instant::now();
        for i in 0..2 * cap as u32 {
            let mut id = [0u8; 16];
            id[..4].copy_from_slice(&i.to_le_bytes());
            c.begin(&id, 1, now);
        }
        assert_eq!(c.len(), cap);
        assert_eq!(sizes(&c), at_start, "the index or the ring was reallocated");
    }

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

    /// Runs call `(id, call)` to completion with `reply`, as the router does.
    fn complete(c: &RetryCache, id: &[u8; 16], call: i32, reply: CachedReply, now: Instant) {
        let Some(Lookup::Fresh(cell)) = c.begin(id, call, now) else {
            panic!("call {call} should be fresh")
        };
        let _ = cell.set(reply.clone());
        c.finish(id, call, &reply);
    }

    fn replayed(c: &RetryCache, id: &[u8; 16], call: i32, now: Instant) -> Option<CachedReply> {
        match c.begin(id, call, now)? {
            Lookup::Done(r) => Some(r),
            _ => None,
        }
    }

    #[test]
    fn replies_inside_and_outside_their_record_replay_exactly() {
        let c = RetryCache::new(Duration::from_secs(600), 100);
        let now = Instant::now();
        let id = [9u8; 16];
        for (call, len) in [(1, 0usize), (2, 1), (3, INLINE), (4, INLINE + 1), (5, 300)] {
            let body: Vec<u8> = (0..len).map(|i| (i * 7 + call as usize) as u8).collect();
            complete(&c, &id, call, Ok(Bytes::from(body.clone())), now);
            assert_eq!(replayed(&c, &id, call, now), Some(Ok(Bytes::from(body))));
        }
    }

    #[test]
    fn a_record_stays_small() {
        // 262,144 of them under Hadoop's cap: each byte here is a quarter MiB.
        assert!(std::mem::size_of::<Record>() <= 72);
    }

    #[test]
    fn sequence_numbers_wrap_without_losing_entries() {
        let c = RetryCache::starting_at(Duration::from_secs(600), 4, u32::MAX - 2);
        let now = Instant::now();
        let id = [5u8; 16];
        for call in 0..10 {
            complete(&c, &id, call, Ok(Bytes::from(vec![call as u8; 20])), now);
        }
        assert_eq!(c.len(), 4);
        for call in 6..10 {
            assert_eq!(
                replayed(&c, &id, call, now),
                Some(Ok(Bytes::from(vec![call as u8; 20])))
            );
        }
        assert!(
            matches!(c.begin(&id, 2, now), Some(Lookup::Fresh(_))),
            "evicted"
        );
    }

    /// The ring and its index against a plain map and queue, over random begins, finishes
    /// and the passing of time.
    #[test]
    fn agrees_with_a_plain_model() {
        use std::collections::{HashMap, VecDeque};
        let (ttl, cap) = (Duration::from_millis(500), 64);
        let c = RetryCache::new(ttl, cap);
        let start = Instant::now();
        let mut model: HashMap<Key, Option<Vec<u8>>> = HashMap::new();
        let mut order: VecDeque<(Duration, Key)> = VecDeque::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let mut t = Duration::ZERO;
        for step in 0..20_000 {
            t += Duration::from_millis(next(3));
            let now = start + t;
            let key: Key = ([next(3) as u8; 16], next(200) as i32);
            // The model's expiry: entries too old; then, for a new call, the oldest while
            // the cache is full.
            let expire = |model: &mut HashMap<Key, _>, order: &mut VecDeque<_>, room| {
                while let Some(&(at, k)) = order.front() {
                    if t - at < ttl && model.len() + room <= cap {
                        break;
                    }
                    order.pop_front();
                    model.remove(&k);
                }
            };
            expire(&mut model, &mut order, 0);
            let got = c.begin(&key.0, key.1, now).expect("cacheable");
            match model.get(&key) {
                None => {
                    expire(&mut model, &mut order, 1);
                    assert!(matches!(got, Lookup::Fresh(_)), "step {step}: fresh");
                    model.insert(key, None);
                    order.push_back((t, key));
                }
                Some(None) => assert!(matches!(got, Lookup::InFlight(_)), "step {step}"),
                Some(Some(body)) => match got {
                    Lookup::Done(Ok(b)) => assert_eq!(&b[..], &body[..], "step {step}"),
                    _ => panic!("step {step}: a finished call replays"),
                },
            }
            if next(2) == 0 {
                let body = vec![step as u8; next(40) as usize];
                c.finish(&key.0, key.1, &Ok(Bytes::from(body.clone())));
                if let Some(v) = model.get_mut(&key) {
                    *v = Some(body);
                }
            }
            assert_eq!(c.len(), model.len(), "step {step}");
        }
    }
}
