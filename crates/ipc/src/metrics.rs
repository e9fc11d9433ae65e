//! Per-method call counters kept by the router: calls, errors and total latency.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default, Debug)]
pub struct MethodMetrics {
    pub calls: AtomicU64,
    pub errors: AtomicU64,
    pub total_micros: AtomicU64,
    pub retry_cache_hits: AtomicU64,
}

impl MethodMetrics {
    pub fn record(&self, ok: bool, micros: u64) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        self.total_micros.fetch_add(micros, Ordering::Relaxed);
    }
}

/// A point-in-time copy of one method's counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodSnapshot {
    pub protocol: &'static str,
    pub method: &'static str,
    pub calls: u64,
    pub errors: u64,
    pub total_micros: u64,
    pub retry_cache_hits: u64,
}
