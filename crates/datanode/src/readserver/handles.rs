//! Open block and meta files, shared by every reader and capped: requests for hot blocks
//! stop opening files. A request takes its shard's lock only to find or insert the block's
//! slot; the open itself runs under that block's own guard (a once-cell), so a slow open
//! delays readers of that block only (HDFS-918: lock per block, not per pool). Idle handles
//! are closed least-recently-used first once the cap is passed; a handle in use stays open
//! until its last reader lets go.

use std::collections::HashMap;
use std::fs::File;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use ferrite_transfer::checksum::Checksum;
use parking_lot::Mutex;
use tokio::sync::OnceCell;

use super::os::Residency;

/// A replica's open files with its parsed checksum header.
pub struct Handle {
    pub data: File,
    pub meta: File,
    pub checksum: Checksum,
    /// The data file's length when opened (a replica still being written grows past it).
    pub len: u64,
    pub residency: Option<Residency>,
    open: Arc<AtomicUsize>,
}

impl Handle {
    /// `open` counts open handles (the cache's `stats.open`).
    pub fn new(
        data: File,
        meta: File,
        checksum: Checksum,
        len: u64,
        open: Arc<AtomicUsize>,
    ) -> Handle {
        open.fetch_add(1, Ordering::Relaxed);
        let residency = Residency::map(&data, len);
        Handle {
            data,
            meta,
            checksum,
            len,
            residency,
            open,
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

#[derive(Default, Debug)]
pub struct CacheStats {
    /// Handles open right now, cached or still held by a reader after eviction.
    pub open: Arc<AtomicUsize>,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub evictions: AtomicU64,
}

/// (block id, generation stamp): a recovered replica with a new stamp is a new entry.
pub type Key = (u64, u64);
type Slot = Arc<OnceCell<Arc<Handle>>>;

const SHARDS: usize = 16;

struct Shard {
    map: HashMap<Key, (Slot, u64)>,
}

pub struct HandleCache {
    shards: Vec<Mutex<Shard>>,
    per_shard: usize,
    tick: AtomicU64,
    pub stats: CacheStats,
}

impl HandleCache {
    /// A cache of `cap` handles (rounded up to a multiple of the shard count, which is at
    /// most 16).
    pub fn new(cap: usize) -> HandleCache {
        let shards = cap.clamp(1, SHARDS);
        HandleCache {
            shards: (0..shards)
                .map(|_| {
                    Mutex::new(Shard {
                        map: HashMap::new(),
                    })
                })
                .collect(),
            per_shard: cap.div_ceil(shards).max(1),
            tick: AtomicU64::new(0),
            stats: CacheStats::default(),
        }
    }

    fn shard(&self, id: u64) -> &Mutex<Shard> {
        &self.shards[(id as usize).wrapping_mul(0x9e37_79b9) % self.shards.len()]
    }

    /// The handle for `key`, opened by `open` if no one has it open.
    pub async fn get<F, Fut>(&self, key: Key, open: F) -> std::io::Result<Arc<Handle>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = std::io::Result<Handle>>,
    {
        let now = self.tick.fetch_add(1, Ordering::Relaxed);
        let slot = {
            let mut s = self.shard(key.0).lock();
            let slot = match s.map.get_mut(&key) {
                Some((slot, used)) => {
                    *used = now;
                    slot.clone()
                }
                None => {
                    let slot = Slot::default();
                    s.map.insert(key, (slot.clone(), now));
                    self.evict(&mut s, key);
                    slot
                }
            };
            slot
        };
        if let Some(h) = slot.get() {
            self.stats.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(h.clone());
        }
        let mut opened = false;
        let h = slot
            .get_or_try_init(|| async {
                opened = true;
                open().await.map(Arc::new)
            })
            .await;
        let counter = if opened {
            &self.stats.misses
        } else {
            &self.stats.hits
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if h.is_err() {
            // Do not keep a slot for a replica that could not be opened.
            let mut s = self.shard(key.0).lock();
            if s.map.get(&key).is_some_and(|(x, _)| Arc::ptr_eq(x, &slot)) {
                s.map.remove(&key);
            }
        }
        h.cloned()
    }

    /// Drops least-recently-used entries past the shard's share of the cap (never `keep`).
    fn evict(&self, s: &mut Shard, keep: Key) {
        while s.map.len() > self.per_shard {
            let oldest = s
                .map
                .iter()
                .filter(|(k, _)| **k != keep)
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| *k);
            let Some(k) = oldest else { return };
            s.map.remove(&k);
            self.stats.evictions.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Forgets every handle of block `id` (deleted or replaced); readers still holding one
    /// finish with it.
    pub fn invalidate(&self, id: u64) {
        self.shard(id).lock().map.retain(|k, _| k.0 != id);
    }

    /// Entries cached now.
    pub fn cached(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle(stats: &CacheStats) -> Handle {
        let f = || File::open("/dev/null").unwrap();
        Handle::new(f(), f(), Checksum::CRC32C_512, 0, stats.open.clone())
    }

    #[tokio::test]
    async fn hot_blocks_are_opened_once_and_the_cap_holds() {
        let cache = HandleCache::new(SHARDS * 2);
        let a = cache
            .get((1, 1), || async { Ok(handle(&cache.stats)) })
            .await
            .unwrap();
        let b = cache
            .get((1, 1), || async {
                panic!("a cached block is not opened again")
            })
            .await
            .unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(cache.stats.misses.load(Ordering::Relaxed), 1);
        assert_eq!(cache.stats.hits.load(Ordering::Relaxed), 1);
        drop((a, b));
        for id in 0..1000u64 {
            let h = cache
                .get((id, 1), || async { Ok(handle(&cache.stats)) })
                .await
                .unwrap();
            drop(h);
        }
        assert!(cache.cached() <= SHARDS * 2);
        assert!(cache.stats.open.load(Ordering::Relaxed) <= SHARDS * 2);
        assert!(cache.stats.evictions.load(Ordering::Relaxed) >= (1000 - SHARDS * 2) as u64);
    }

    #[tokio::test]
    async fn an_evicted_handle_in_use_stays_open_until_released() {
        let cache = HandleCache::new(1);
        let held = cache
            .get((7, 1), || async { Ok(handle(&cache.stats)) })
            .await
            .unwrap();
        cache.invalidate(7);
        assert_eq!(cache.cached(), 0);
        assert_eq!(cache.stats.open.load(Ordering::Relaxed), 1, "still held");
        drop(held);
        assert_eq!(cache.stats.open.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn a_failed_open_is_not_cached() {
        let cache = HandleCache::new(8);
        let e = cache
            .get((3, 1), || async { Err(std::io::Error::other("gone")) })
            .await;
        assert!(e.is_err());
        assert_eq!(cache.cached(), 0);
        assert!(cache
            .get((3, 1), || async { Ok(handle(&cache.stats)) })
            .await
            .is_ok());
    }
}
