//! What `hdfs balancer` prints: a line per iteration under a header, sizes in Hadoop's
//! `StringUtils.byteDesc` and times in Java's default date format.

use std::time::Duration;

pub(crate) const HEADER: &str = "Time Stamp               Iteration#  Bytes Already Moved  Bytes Left To Move  Bytes Being Moved  NameNode";

/// One iteration's line; `stamp` is [`now_stamp`] (Java pads it to 24 characters and no
/// more, so a longer date pushes the columns right, there as here).
pub(crate) fn iteration_line(
    stamp: &str,
    iteration: u32,
    moved: u64,
    left: u64,
    being_moved: u64,
    blocks_moved: u64,
    url: &str,
) -> String {
    // Hadoop 3.4.1 prints the blocks moved so far before the NameNode, under no heading.
    format!(
        "{stamp:<24} {:>10}  {:>19}  {:>18}  {:>17}  {blocks_moved:>17}  {url}",
        iteration,
        byte_desc(moved),
        byte_desc(left),
        byte_desc(being_moved)
    )
}

/// Hadoop's `byteDesc`: `512 B`, `1 KB` when exact, else two decimals (`661.84 MB`).
pub(crate) fn byte_desc(n: u64) -> String {
    const PREFIXES: [&str; 6] = ["K", "M", "G", "T", "P", "E"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut i = 0;
    while i + 1 < PREFIXES.len() && n >> (10 * (i + 2)) > 0 {
        i += 1;
    }
    let shift = 10 * (i + 1);
    if n & ((1u64 << shift) - 1) == 0 {
        return format!("{} {}B", n >> shift, PREFIXES[i]);
    }
    let v = format!("{:.2}", n as f64 / (1u64 << shift) as f64);
    // 1023.999 KB rounds to 1024.00: say 1 MB instead, as Hadoop does.
    if v.starts_with("1024") && i + 1 < PREFIXES.len() {
        let up = 10 * (i + 2);
        return format!("{:.2} {}B", n as f64 / (1u64 << up) as f64, PREFIXES[i + 1]);
    }
    format!("{v} {}B", PREFIXES[i])
}

/// Java's `DateFormat.getDateTimeInstance()` in the US locale: `Dec 5, 2026, 1:02:03 PM`
/// (UTC).
pub(crate) fn now_stamp() -> String {
    stamp(ferrite_datanode::now_ms())
}

fn stamp(ms: u64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (y, mo, d, h, mi, s) = crate::dfs::format::civil(ms);
    let (h12, half) = match h {
        0 => (12, "AM"),
        1..=11 => (h, "AM"),
        12 => (12, "PM"),
        _ => (h - 12, "PM"),
    };
    format!(
        "{} {d}, {y}, {h12}:{mi:02}:{s:02} {half}",
        MONTHS[mo as usize - 1]
    )
}

/// `Balancing took 2.807 seconds`, in the unit Hadoop's `time2Str` picks, printed as a
/// Java double is.
pub(crate) fn took(d: Duration) -> String {
    let ms = d.as_millis() as f64;
    let (v, unit) = if ms < 1000.0 {
        (ms, "milliseconds")
    } else if ms < 60_000.0 {
        (ms / 1000.0, "seconds")
    } else if ms < 3_600_000.0 {
        (ms / 60_000.0, "minutes")
    } else {
        (ms / 3_600_000.0, "hours")
    };
    let mut s = v.to_string();
    if !s.contains('.') {
        s.push_str(".0");
    }
    format!("{s} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_hadoop_prints_them() {
        assert_eq!(byte_desc(0), "0 B");
        assert_eq!(byte_desc(1023), "1023 B");
        assert_eq!(byte_desc(1024), "1 KB");
        assert_eq!(byte_desc(2 << 30), "2 GB");
        assert_eq!(byte_desc(694_000_000), "661.85 MB");
        assert_eq!(byte_desc(1_213_328_998), "1.13 GB");
        assert_eq!(byte_desc((1 << 20) - 1), "1.00 MB");
    }

    #[test]
    fn times_read_as_java_prints_them() {
        // 2026-12-05 13:02:03 UTC
        assert_eq!(stamp(1_796_475_723_000), "Dec 5, 2026, 1:02:03 PM");
        assert_eq!(stamp(1_796_428_800_000), "Dec 5, 2026, 12:00:00 AM");
        assert_eq!(took(Duration::from_millis(2807)), "2.807 seconds");
        assert_eq!(took(Duration::from_millis(3000)), "3.0 seconds");
        assert_eq!(took(Duration::from_millis(15)), "15.0 milliseconds");
    }

    #[test]
    fn an_iteration_line_lines_up_under_the_header() {
        // As Hadoop 3.4.1's Balancer printed it.
        let l = iteration_line(
            "Dec 5, 2026, 1:03:41 PM",
            0,
            166 << 20,
            71_450_000,
            169_430_000,
            83,
            "hdfs://localhost:42299",
        );
        assert_eq!(
            l,
            "Dec 5, 2026, 1:03:41 PM           0               166 MB            68.14 MB          161.58 MB                 83  hdfs://localhost:42299"
        );
    }
}
