//! The DataNode's limits on replica moves (the Balancer's and Mover's REPLACE_BLOCK and
//! COPY_BLOCK), as HDFS's `BlockBalanceThrottler`: at most
//! `dfs.datanode.balance.max.concurrent.moves` at once, each side refusing the rest with
//! "threads quota is exceeded", and all of them together at no more than
//! `dfs.datanode.balance.bandwidthPerSec`, which `dfsadmin -setBalancerBandwidth` changes
//! through the NameNode's heartbeat answers. Both ends of a move are paced, as in HDFS, so
//! a node that is the source of many moves is held to the rate as well as their targets.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tracing::info;

/// HDFS's defaults: `100m` bytes a second, 100 moves.
pub const DEFAULT_BANDWIDTH: u64 = 100 << 20;
pub const DEFAULT_MAX_MOVES: usize = 100;

pub struct BalanceThrottle {
    max_moves: usize,
    moves: AtomicUsize,
    pace: Mutex<Pace>,
    origin: Instant,
}

/// One move under way; the slot frees when it is dropped.
pub struct MoveSlot<'a>(&'a BalanceThrottle);

impl Drop for MoveSlot<'_> {
    fn drop(&mut self) {
        self.0.moves.fetch_sub(1, Ordering::AcqRel);
    }
}

impl BalanceThrottle {
    pub fn new(bytes_per_sec: u64, max_moves: usize) -> Self {
        BalanceThrottle {
            max_moves,
            moves: AtomicUsize::new(0),
            pace: Mutex::new(Pace::new(bytes_per_sec)),
            origin: Instant::now(),
        }
    }

    /// A slot for one more move, or `None` when `max_moves` are under way.
    pub fn try_start(&self) -> Option<MoveSlot<'_>> {
        self.moves
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max_moves).then_some(n + 1)
            })
            .ok()
            .map(|_| MoveSlot(self))
    }

    /// The rate as HDFS reports it: what its half-second periods allow, so an odd rate
    /// reads one less.
    pub fn bandwidth(&self) -> u64 {
        self.pace.lock().bytes_per_sec()
    }

    /// A new rate from the NameNode (`setBalancerBandwidth`); zero is ignored, as HDFS
    /// never sends it.
    pub fn set_bandwidth(&self, bytes_per_sec: u64) {
        if bytes_per_sec == 0 {
            return;
        }
        let mut pace = self.pace.lock();
        let old = pace.bytes_per_sec();
        *pace = Pace {
            paid_until: pace.paid_until,
            ..Pace::new(bytes_per_sec)
        };
        info!(
            "Updating balance throttler bandwidth from {old} bytes/s to: {bytes_per_sec} bytes/s."
        );
    }

    /// Waits as long as `bytes` more of a move must, to keep every move together at the
    /// rate.
    pub async fn pace(&self, bytes: u64) {
        let wait = self.pace.lock().reserve(self.origin.elapsed(), bytes);
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// The pacing arithmetic, free of clocks: a virtual time at which everything admitted so
/// far has been sent at the rate. Idle time earns at most a `PERIOD` of credit, so a move
/// after a pause starts at once but a long run averages the rate.
#[derive(Debug)]
pub(crate) struct Pace {
    /// Bytes a `PERIOD` may carry.
    per_period: u64,
    /// When the bytes admitted so far are paid for (time since the throttle's origin).
    paid_until: Duration,
}

/// HDFS's throttler works in periods of half a second; idle time earns one period's
/// credit here.
const PERIOD: Duration = Duration::from_millis(500);
const PERIODS_PER_SEC: u64 = 2;

impl Pace {
    pub(crate) fn new(bytes_per_sec: u64) -> Self {
        Pace {
            per_period: (bytes_per_sec / PERIODS_PER_SEC).max(1),
            paid_until: Duration::ZERO,
        }
    }

    pub(crate) fn bytes_per_sec(&self) -> u64 {
        self.per_period * PERIODS_PER_SEC
    }

    /// Admits `bytes` at `now`; returns how long the sender must wait before going on.
    pub(crate) fn reserve(&mut self, now: Duration, bytes: u64) -> Duration {
        let from = self.paid_until.max(now.saturating_sub(PERIOD));
        let nanos = u128::from(bytes) * PERIOD.as_nanos() / u128::from(self.per_period);
        let cost = Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
        self.paid_until = from + cost;
        self.paid_until.saturating_sub(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_burst_after_idle_time_goes_at_once_then_the_rate_holds() {
        let mut p = Pace::new(1000); // bytes a second
        let now = Duration::from_secs(10);
        // Half a second of credit: 500 bytes pass without a wait.
        assert_eq!(p.reserve(now, 500), Duration::ZERO);
        // The next 250 bytes are paid for a quarter second from now.
        assert_eq!(p.reserve(now, 250), 250 * MS);
        assert_eq!(p.reserve(now, 250), 500 * MS);
    }

    #[test]
    fn a_steady_sender_averages_the_rate() {
        let mut p = Pace::new(10_000);
        let mut now = Duration::from_secs(1);
        let mut sent = 0u64;
        while now < Duration::from_secs(21) {
            now += p.reserve(now, 4096);
            sent += 4096;
        }
        // 20 seconds at 10 kB/s, plus at most the burst's credit and one packet.
        assert!(sent <= 200_000 + 5_000 + 4096, "{sent}");
        assert!(sent >= 200_000, "{sent}");
    }

    #[test]
    fn idle_time_earns_no_more_than_the_burst() {
        let mut p = Pace::new(1000);
        p.reserve(Duration::ZERO, 100);
        // An hour idle still allows only 500 bytes free.
        let now = Duration::from_secs(3600);
        assert_eq!(p.reserve(now, 500), Duration::ZERO);
        assert_eq!(p.reserve(now, 1), MS);
    }

    #[test]
    fn moves_beyond_the_quota_are_refused_until_one_ends() {
        let t = BalanceThrottle::new(DEFAULT_BANDWIDTH, 2);
        let a = t.try_start().expect("first");
        let _b = t.try_start().expect("second");
        assert!(t.try_start().is_none());
        drop(a);
        assert!(t.try_start().is_some());
        assert!(BalanceThrottle::new(1, 0).try_start().is_none());
    }

    #[test]
    fn a_new_bandwidth_applies_and_zero_is_ignored() {
        let t = BalanceThrottle::new(1000, 1);
        t.set_bandwidth(5000);
        assert_eq!(t.bandwidth(), 5000);
        t.set_bandwidth(0);
        assert_eq!(t.bandwidth(), 5000);
        // HDFS 3.4.1 reports 12345 set as 12344: whole bytes per half second.
        t.set_bandwidth(12345);
        assert_eq!(t.bandwidth(), 12344);
    }
}
