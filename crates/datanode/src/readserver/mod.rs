//! The DataNode's read server (HDFS-918 done the event-driven way): a connection is a task,
//! never a thread; packets whose data is in the page cache go out with sendfile from the
//! connection's task, and anything that would wait for a disk goes to that volume's small
//! I/O pool; block files stay open in a shared, capped cache.

pub mod handles;
pub mod iopool;
pub mod metrics;
pub mod os;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use ferrite_transfer::checksum::{parse_meta_header, META_HEADER_LEN};

use handles::{Handle, HandleCache};
use iopool::IoPool;
use metrics::{load, load_usize, ReadStats, Snapshot};

#[derive(Clone, Debug)]
pub struct ReadConfig {
    /// I/O threads per volume (`ferrite.datanode.read.io.threads`).
    pub io_threads: usize,
    /// Jobs waiting per volume before submitters wait (`ferrite.datanode.read.io.queue`).
    pub io_queue: usize,
    /// Open replicas kept (`ferrite.datanode.read.handle.cache`), two descriptors each.
    pub cache_cap: usize,
    /// Test fault: every I/O job of this volume waits this long first
    /// (`ferrite.datanode.fault.read.delay=VOLUME:MS`).
    pub slow_volume: Option<(usize, Duration)>,
}

impl Default for ReadConfig {
    fn default() -> Self {
        ReadConfig {
            io_threads: 4,
            io_queue: 1024,
            cache_cap: 256,
            slow_volume: None,
        }
    }
}

pub struct ReadServer {
    pub handles: HandleCache,
    pools: Vec<IoPool>,
    pub stats: ReadStats,
}

impl ReadServer {
    pub fn new(volumes: usize, cfg: &ReadConfig) -> std::io::Result<ReadServer> {
        let pools = (0..volumes)
            .map(|v| {
                let delay = match cfg.slow_volume {
                    Some((sv, d)) if sv == v => d,
                    _ => Duration::ZERO,
                };
                IoPool::new(&format!("dn-io-v{v}"), cfg.io_threads, cfg.io_queue, delay)
            })
            .collect::<std::io::Result<_>>()?;
        Ok(ReadServer {
            handles: HandleCache::new(cfg.cache_cap),
            pools,
            stats: ReadStats::default(),
        })
    }

    /// The I/O pool of a volume.
    pub fn pool(&self, volume: usize) -> &IoPool {
        &self.pools[volume.min(self.pools.len() - 1)]
    }

    /// The open files of replica `key` (block id, generation stamp) on `volume`, whose
    /// data and meta files are `paths`: from the cache, or opened on the volume's pool.
    /// The cached open files of replica `key` on `volume`; on a miss, `paths` names them
    /// and they are opened on the volume's I/O pool. Named only on a miss: a hit costs no
    /// path building.
    pub async fn handle(
        &self,
        key: (u64, u64),
        volume: usize,
        paths: impl FnOnce() -> std::io::Result<(PathBuf, PathBuf)>,
    ) -> std::io::Result<Arc<Handle>> {
        let open = self.handles.stats.open.clone();
        let pool = self.pool(volume);
        self.handles
            .get(key, || async move {
                let (dp, mp) = paths()?;
                pool.run(move || open_handle(dp, mp, open)).await?
            })
            .await
    }

    pub fn snapshot(&self) -> Snapshot {
        let s = &self.stats;
        let c = &self.handles.stats;
        Snapshot {
            active_reads: load_usize(&s.active),
            reads: load(&s.reads),
            bytes_sendfile: load(&s.bytes_sendfile),
            bytes_copy: load(&s.bytes_copy),
            handles_open: load_usize(&c.open),
            handles_cached: self.handles.cached() as u64,
            cache_hits: load(&c.hits),
            cache_misses: load(&c.misses),
            cache_evictions: load(&c.evictions),
            io_queued: self
                .pools
                .iter()
                .map(|p| load_usize(&p.stats.queued))
                .collect(),
            io_running: self
                .pools
                .iter()
                .map(|p| load_usize(&p.stats.running))
                .collect(),
            threads: ferrite_http::process_threads(),
            fds: metrics::fds(),
        }
    }
}

fn open_handle(dp: PathBuf, mp: PathBuf, open: Arc<AtomicUsize>) -> std::io::Result<Handle> {
    let data = File::open(dp)?;
    let meta = File::open(mp)?;
    let mut head = [0u8; META_HEADER_LEN];
    meta.read_exact_at(&mut head, 0)?;
    let checksum = parse_meta_header(&head)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let len = data.metadata()?.len();
    Ok(Handle::new(data, meta, checksum, len, open))
}
