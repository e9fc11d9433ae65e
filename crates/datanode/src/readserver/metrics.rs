//! What the read server counts, and a snapshot of it with the process's thread and
//! descriptor counts (HDFS-918 asks for the pool sizes to be visible).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

#[derive(Default, Debug)]
pub struct ReadStats {
    /// READ_BLOCK operations in progress.
    pub active: AtomicUsize,
    pub reads: AtomicU64,
    /// Data bytes sent from the page cache with sendfile, and copied through a buffer.
    pub bytes_sendfile: AtomicU64,
    pub bytes_copy: AtomicU64,
}

/// One reading of every counter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub active_reads: u64,
    pub reads: u64,
    pub bytes_sendfile: u64,
    pub bytes_copy: u64,
    pub handles_open: u64,
    pub handles_cached: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub cache_evictions: u64,
    /// Per volume: jobs queued, jobs running.
    pub io_queued: Vec<u64>,
    pub io_running: Vec<u64>,
    pub threads: u64,
    pub fds: u64,
}

impl Snapshot {
    pub fn log_line(&self) -> String {
        format!(
            "active_reads={} reads={} sendfile_bytes={} copy_bytes={} handles_open={} handles_cached={} cache_hits={} cache_misses={} evictions={} io_queued={:?} io_running={:?} threads={} fds={}",
            self.active_reads, self.reads, self.bytes_sendfile, self.bytes_copy, self.handles_open,
            self.handles_cached, self.cache_hits, self.cache_misses, self.cache_evictions,
            self.io_queued, self.io_running, self.threads, self.fds
        )
    }
}

/// This process's open descriptors.
pub fn fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}

pub fn load(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

pub fn load_usize(a: &AtomicUsize) -> u64 {
    a.load(Ordering::Relaxed) as u64
}
