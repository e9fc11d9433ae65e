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
