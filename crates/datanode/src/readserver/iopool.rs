//! One small, bounded pool of I/O threads per volume (HDFS-918's lesson: a slow disk must
//! not starve the others, and disk I/O never runs on the threads that drive sockets).
//! Jobs queue in a bounded channel; submitters wait (asynchronously) when it is full.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};

type Job = Box<dyn FnOnce() + Send>;

/// Per-pool counters, for metrics.
#[derive(Default, Debug)]
pub struct PoolStats {
    /// Jobs submitted and not yet started.
    pub queued: AtomicUsize,
    pub running: AtomicUsize,
}

pub struct IoPool {
    tx: mpsc::Sender<Job>,
    pub stats: Arc<PoolStats>,
    pub threads: usize,
}

impl IoPool {
    /// `threads` workers named `name-N`; `delay` is a fault injected before every job
    /// (tests of a slow volume), zero otherwise.
    pub fn new(
        name: &str,
        threads: usize,
        queue: usize,
        delay: Duration,
    ) -> std::io::Result<IoPool> {
        let (tx, rx) = mpsc::channel::<Job>(queue.max(1));
        let rx = Arc::new(Mutex::new(rx));
        let stats = Arc::new(PoolStats::default());
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            let stats = stats.clone();
            std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || loop {
                    // One waiter at a time takes the next job; the others wait on the lock.
                    let job = rx.lock().blocking_recv();
                    let Some(job) = job else { return };
                    stats.queued.fetch_sub(1, Ordering::Relaxed);
                    stats.running.fetch_add(1, Ordering::Relaxed);
                    if !delay.is_zero() {
                        std::thread::sleep(delay);
                    }
                    job();
                    stats.running.fetch_sub(1, Ordering::Relaxed);
                })?;
        }
        Ok(IoPool {
            tx,
            stats,
            threads: threads.max(1),
        })
    }

    /// Runs `f` on the pool and returns its result.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::io::Result<T> {
        let (done, result) = oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = done.send(f());
        });
        self.stats.queued.fetch_add(1, Ordering::Relaxed);
        if self.tx.send(job).await.is_err() {
            self.stats.queued.fetch_sub(1, Ordering::Relaxed);
            return Err(std::io::Error::other("the volume's I/O pool has stopped"));
        }
        result
            .await
            .map_err(|_| std::io::Error::other("an I/O job was dropped"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_off_the_runtime_and_return() {
        let pool = IoPool::new("t", 2, 4, Duration::ZERO).unwrap();
        let name = pool
            .run(|| std::thread::current().name().unwrap().to_string())
            .await
            .unwrap();
        assert!(name.starts_with("t-"), "{name}");
        let sums = futures_sum(&pool).await;
        assert_eq!(sums, (0..32).map(|i| i * 2).sum::<u64>());
        assert_eq!(pool.stats.queued.load(Ordering::Relaxed), 0);
    }

    async fn futures_sum(pool: &IoPool) -> u64 {
        let mut total = 0;
        let handles: Vec<_> = (0..32u64).map(|i| pool.run(move || i * 2)).collect();
        for h in handles {
            total += h.await.unwrap();
        }
        total
    }

    #[tokio::test]
    async fn a_slow_pool_does_not_hold_up_another() {
        let slow = Arc::new(IoPool::new("slow", 1, 4, Duration::from_secs(30)).unwrap());
        let fast = IoPool::new("fast", 1, 4, Duration::ZERO).unwrap();
        let s = slow.clone();
        let stuck = tokio::spawn(async move { s.run(|| 1).await });
        tokio::task::yield_now().await;
        assert_eq!(fast.run(|| 2).await.unwrap(), 2);
        assert!(
            !stuck.is_finished(),
            "the slow volume's job is still waiting"
        );
        stuck.abort();
    }
}
