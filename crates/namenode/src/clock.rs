//! The one wall clock the NameNode reads. Pure logic (the namespace, the block map, the
//! lease table) takes times as arguments; only the edges call this.

use std::time::{SystemTime, UNIX_EPOCH};

/// Wall-clock milliseconds since the epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Milliseconds since this process first asked (HDFS's `monotonicNow`, which its JSON
/// reports beside wall times): `wall` less the wall time of that first call.
pub fn monotonic_ms(wall: i64) -> i64 {
    static START: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    let start = *START.get_or_init(now_ms);
    wall.saturating_sub(start).max(0)
}
