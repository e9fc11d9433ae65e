//! The one wall clock the NameNode reads. Pure logic (the namespace, the block map, the
//! lease table) takes times as arguments; only the edges call this.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where the time comes from when not the system's: the deterministic simulator's
/// clock, set once for its whole process.
static SOURCE: OnceLock<fn() -> i64> = OnceLock::new();

/// Wall-clock milliseconds since the epoch.
pub fn now_ms() -> i64 {
    if let Some(source) = SOURCE.get() {
        return source();
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Makes `source` this process's wall clock (the simulator's, whose time it controls).
/// Answers false when a clock was set already: there is one per process.
pub fn set_source(source: fn() -> i64) -> bool {
    SOURCE.set(source).is_ok()
}

/// Milliseconds since this process first asked (HDFS's `monotonicNow`, which its JSON
/// reports beside wall times): `wall` less the wall time of that first call.
pub fn monotonic_ms(wall: i64) -> i64 {
    static START: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    let start = *START.get_or_init(now_ms);
    wall.saturating_sub(start).max(0)
}
