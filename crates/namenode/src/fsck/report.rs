//! `hdfs fsck`'s report as HDFS 3.4.1's NameNode writes it: a line per problem (and, with
//! `-files`, per file and directory; with `-blocks`, per block), then the totals and the
//! verdict on the last line, which `DFSck` reads for its exit code. Pure: the facts come
//! in, text goes out.

use std::fmt::Write;

/// What the request asked for (`DFSck`'s flags).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub files: bool,
    pub blocks: bool,
    pub locations: bool,
    pub racks: bool,
    pub open_for_write: bool,
}

/// A replica a reader may use: the node's `ip:port`, the storage's id and its type's
/// name (`DISK`, `SSD`, …).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveReplica {
    pub addr: String,
    /// The node's network location (`-racks` shows it).
    pub rack: String,
    pub storage: String,
    pub storage_type: &'static str,
}

/// One block of a file, as the block map knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockFacts {
    pub id: u64,
    pub gs: u64,
    pub len: u64,
    pub live: Vec<LiveReplica>,
    /// Every replica the block map holds is corrupt.
    pub corrupt: bool,
    /// A copy to another node is scheduled.
    pub queued: bool,
}

/// One file: its figures and its blocks, the last of a file being written apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileFacts {
    pub path: String,
    pub len: u64,
    pub replication: u16,
    pub under_construction: bool,
    /// Blocks whose length is final (a file being written: all but its last).
    pub blocks: Vec<BlockFacts>,
    /// The block being written, if any.
    pub writing: Option<BlockFacts>,
}

/// The replicated-blocks totals (HDFS's `ReplicationResult`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub size: u64,
    pub files: u64,
    pub blocks: u64,
    pub open_files: u64,
    pub open_size: u64,
    pub open_blocks: u64,
    pub min_replicated: u64,
    pub over_replicated: u64,
    pub under_replicated: u64,
    pub replicas: u64,
    pub expected_replicas: u64,
    pub missing_replicas: u64,
    pub missing_blocks: u64,
    pub missing_size: u64,
    pub corrupt_blocks: u64,
    pub corrupt_size: u64,
    pub corrupt_files: u64,
    pub under_min: u64,
    pub queued: u64,
}

impl Totals {
    pub fn healthy(&self) -> bool {
        self.missing_blocks == 0 && self.corrupt_blocks == 0
    }
}

/// Java's `Float.toString` for the percentages and averages HDFS prints (`66.666664`,
/// `100.0`): the shortest digits that read back as the same `f32`, with a `.0` for whole
/// numbers — what Rust's `Debug` for `f32` prints in this range.
fn jfloat(x: f32) -> String {
    format!("{x:?}")
}

fn pct(n: u64, of: u64) -> String {
    jfloat((n * 100) as f32 / of as f32)
}

/// The block as HDFS names it: `BP-…:blk_<id>_<gs>`.
pub fn block_name(pool: &str, b: &BlockFacts) -> String {
    format!("{pool}:blk_{}_{}", b.id, b.gs)
}

/// Adds one file to `t` and writes its lines into `out`. Returns whether it has missing
/// or corrupt blocks (what `-delete` removes).
pub fn check_file(
    f: &FileFacts,
    pool: &str,
    min_replication: u16,
    o: &Options,
    t: &mut Totals,
    out: &mut String,
) -> bool {
    if f.under_construction && !o.open_for_write {
        t.open_size += f.len;
        t.open_blocks += (f.blocks.len() + usize::from(f.writing.is_some())) as u64;
        t.open_files += 1;
        return false;
    }
    let count = f.blocks.len() + usize::from(f.writing.is_some());
    t.files += 1;
    t.size += f.len;
    t.blocks += count as u64;
    let policy = format!("replicated: replication={},", f.replication);
    if o.open_for_write && f.under_construction {
        let _ = write!(
            out,
            "{} {} bytes, {policy} {count} block(s), OPENFORWRITE: ",
            f.path, f.len
        );
    } else if o.files {
        let _ = write!(
            out,
            "{} {} bytes, {policy} {count} block(s): ",
            f.path, f.len
        );
    }
    let (mut missing, mut corrupt, mut missing_size, mut corrupt_size, mut under) = (0, 0, 0, 0, 0);
    let mut report = String::new();
    for (n, b) in f.blocks.iter().enumerate() {
        let live = b.live.len() as u64;
        let target = u64::from(f.replication);
        t.replicas += live;
        t.expected_replicas += target;
        if live < u64::from(min_replication) {
            t.under_min += 1;
        }
        if live > target {
            t.over_replicated += 1;
        }
        let name = block_name(pool, b);
        if b.corrupt {
            t.corrupt_blocks += 1;
            t.corrupt_size += b.len;
            corrupt += 1;
            corrupt_size += b.len;
            let _ = write!(
                out,
                "\n{}: CORRUPT blockpool {pool} block blk_{}\n",
                f.path, b.id
            );
        }
        if live >= u64::from(min_replication) {
            t.min_replicated += 1;
        }
        if live < target && live > 0 {
            t.missing_replicas += target - live;
            t.under_replicated += 1;
            under += 1;
            if !o.files {
                let _ = write!(out, "\n{}: ", f.path);
            }
            let _ = writeln!(
                out,
                " Under replicated {name}. Target Replicas is {target} but found {live} live replica(s), 0 decommissioned replica(s), 0 decommissioning replica(s)."
            );
        }
        if b.queued {
            t.queued += 1;
        }
        let _ = write!(report, "{n}. {name} len={}", b.len);
        if live == 0 && !b.corrupt {
            report.push_str(" MISSING!");
            t.missing_blocks += 1;
            t.missing_size += b.len;
            missing += 1;
            missing_size += b.len;
        } else {
            let _ = write!(report, " Live_repl={live}");
            if o.locations || o.racks {
                let shown: Vec<String> = b
                    .live
                    .iter()
                    .map(|r| {
                        if o.racks {
                            format!("{}/{}", r.rack, r.addr)
                        } else {
                            format!(
                                "DatanodeInfoWithStorage[{},{},{}]",
                                r.addr, r.storage, r.storage_type
                            )
                        }
                    })
                    .collect();
                let _ = write!(report, "  [{}]", shown.join(", "));
            }
        }
        report.push('\n');
    }
    let bad = missing > 0 || corrupt > 0;
    if bad {
        if !o.files {
            if missing > 0 {
                let _ = write!(
                    out,
                    "\n{}: MISSING {missing} blocks of total size {missing_size} B.",
                    f.path
                );
            }
            if corrupt > 0 {
                let _ = write!(
                    out,
                    "\n{}: CORRUPT {corrupt} blocks of total size {corrupt_size} B.",
                    f.path
                );
            }
        }
        t.corrupt_files += 1;
    }
    if o.files {
        if bad {
            if missing > 0 {
                let _ = writeln!(
                    out,
                    " MISSING {missing} blocks of total size {missing_size} B"
                );
            }
            if corrupt > 0 {
                let _ = writeln!(
                    out,
                    " CORRUPT {corrupt} blocks of total size {corrupt_size} B"
                );
            }
        } else if under == 0 {
            out.push_str(" OK\n");
        }
        if o.blocks {
            out.push_str(&report);
            out.push('\n');
        }
    }
    bad && !f.under_construction
}

/// The `Replicated Blocks:` section's body.
pub fn totals_text(t: &Totals, default_replication: u16, min_replication: u16) -> String {
    let mut s = format!(" Total size:\t{} B", t.size);
    if t.open_size != 0 {
        let _ = write!(s, " (Total open files size: {} B)", t.open_size);
    }
    let _ = write!(s, "\n Total files:\t{}", t.files);
    if t.open_files != 0 {
        let _ = write!(s, " (Files currently being written: {})", t.open_files);
    }
    let _ = write!(s, "\n Total blocks (validated):\t{}", t.blocks);
    if let Some(avg) = t.size.checked_div(t.blocks) {
        let _ = write!(s, " (avg. block size {avg} B)");
    }
    if t.open_blocks != 0 {
        let _ = write!(
            s,
            " (Total open file blocks (not validated): {})",
            t.open_blocks
        );
    }
    if t.corrupt_files > 0 || t.under_min > 0 {
        s.push_str("\n  ********************************");
        if t.under_min > 0 {
            let _ = write!(s, "\n  UNDER MIN REPL'D BLOCKS:\t{}", t.under_min);
            if t.blocks > 0 {
                let _ = write!(s, " ({} %)", pct(t.under_min, t.blocks));
            }
            let _ = write!(s, "\n  MINIMAL BLOCK REPLICATION:\t{min_replication}");
        }
        if t.corrupt_files > 0 {
            let _ = write!(s, "\n  CORRUPT FILES:\t{}", t.corrupt_files);
            if t.missing_size > 0 {
                let _ = write!(
                    s,
                    "\n  MISSING BLOCKS:\t{}\n  MISSING SIZE:\t\t{} B",
                    t.missing_blocks, t.missing_size
                );
            }
            if t.corrupt_blocks > 0 {
                let _ = write!(
                    s,
                    "\n  CORRUPT BLOCKS: \t{}\n  CORRUPT SIZE:\t\t{} B",
                    t.corrupt_blocks, t.corrupt_size
                );
            }
        }
        s.push_str("\n  ********************************");
    }
    let mut line = |label: &str, n: u64| {
        let _ = write!(s, "\n {label}{n}");
        if t.blocks > 0 {
            let _ = write!(s, " ({} %)", pct(n, t.blocks));
        }
    };
    line("Minimally replicated blocks:\t", t.min_replicated);
    line("Over-replicated blocks:\t", t.over_replicated);
    line("Under-replicated blocks:\t", t.under_replicated);
    line("Mis-replicated blocks:\t\t", 0);
    let _ = write!(s, "\n Default replication factor:\t{default_replication}");
    let avg = if t.blocks == 0 {
        "0.0".to_string()
    } else {
        jfloat(t.replicas as f32 / t.blocks as f32)
    };
    let _ = write!(s, "\n Average block replication:\t{avg}");
    let _ = write!(s, "\n Missing blocks:\t\t{}", t.missing_blocks);
    let _ = write!(s, "\n Corrupt blocks:\t\t{}", t.corrupt_blocks);
    let _ = write!(s, "\n Missing replicas:\t\t{}", t.missing_replicas);
    if t.replicas > 0 {
        let _ = write!(s, " ({} %)", pct(t.missing_replicas, t.expected_replicas));
    }
    let _ = write!(s, "\n Blocks queued for replication:\t{}", t.queued);
    s
}

/// The erasure-coded section: Ferrite has no erasure coding, so HDFS's figures for none.
pub const EC_TOTALS: &str = " Total size:\t0 B\n Total files:\t0\n Total block groups (validated):\t0\n Minimally erasure-coded block groups:\t0\n Over-erasure-coded block groups:\t0\n Under-erasure-coded block groups:\t0\n Unsatisfactory placement block groups:\t0\n Average block group size:\t0.0\n Missing block groups:\t\t0\n Corrupt block groups:\t\t0\n Missing internal blocks:\t0\n Blocks queued for replication:\t0";

/// Java's `Date.toString` in UTC: `Sat Nov 28 00:38:47 UTC 2026`.
pub fn java_date(ms: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = crate::trash::civil_from_days(days);
    format!(
        "{} {} {d:02} {:02}:{:02}:{:02} UTC {y}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(id: u64, len: u64, live: usize) -> BlockFacts {
        BlockFacts {
            id,
            gs: 1000 + id,
            len,
            live: (0..live)
                .map(|i| LiveReplica {
                    addr: format!("127.0.0.1:{}", 9866 + i),
                    rack: "/default-rack".into(),
                    storage: format!("DS-{i}"),
                    storage_type: "DISK",
                })
                .collect(),
            corrupt: false,
            queued: false,
        }
    }

    fn file(path: &str, replication: u16, blocks: Vec<BlockFacts>) -> FileFacts {
        FileFacts {
            path: path.into(),
            len: blocks.iter().map(|b| b.len).sum(),
            replication,
            under_construction: false,
            blocks,
            writing: None,
        }
    }

    #[test]
    fn numbers_print_as_java_prints_them() {
        assert_eq!(jfloat(100.0), "100.0");
        assert_eq!(pct(2, 3), "66.666664");
        assert_eq!(pct(1, 3), "33.333332");
        assert_eq!(jfloat(2.0 / 3.0), "0.6666667");
        assert_eq!(java_date(1_795_826_327_000), "Sat Nov 28 00:38:47 UTC 2026");
        assert_eq!(java_date(0), "Thu Jan 01 00:00:00 UTC 1970");
    }

    #[test]
    fn an_under_replicated_file_is_reported_and_counted_as_hdfs_does() {
        let o = Options::default();
        let mut t = Totals::default();
        let mut out = String::new();
        let f = file("/a/b/f2", 3, vec![block(27, 3000, 1)]);
        assert!(!check_file(&f, "BP-1", 1, &o, &mut t, &mut out));
        assert_eq!(
            out,
            "\n/a/b/f2:  Under replicated BP-1:blk_27_1027. Target Replicas is 3 but found 1 live replica(s), 0 decommissioned replica(s), 0 decommissioning replica(s).\n"
        );
        let g = file("/a/f1", 1, vec![block(26, 1000, 1)]);
        check_file(&g, "BP-1", 1, &o, &mut t, &mut out);
        assert!(t.healthy());
        let text = totals_text(&t, 1, 1);
        assert!(text.contains(" Total blocks (validated):\t2 (avg. block size 2000 B)\n"));
        assert!(text.contains(" Under-replicated blocks:\t1 (50.0 %)\n"));
        assert!(text.contains(" Missing replicas:\t\t2 (50.0 %)\n"));
        assert!(text.contains(" Average block replication:\t1.0\n"));
    }

    #[test]
    fn files_blocks_and_locations_lines() {
        let o = Options {
            files: true,
            blocks: true,
            locations: true,
            ..Default::default()
        };
        let mut t = Totals::default();
        let mut out = String::new();
        check_file(
            &file("/a/f1", 1, vec![block(26, 1000, 1)]),
            "BP-1",
            1,
            &o,
            &mut t,
            &mut out,
        );
        assert_eq!(
            out,
            "/a/f1 1000 bytes, replicated: replication=1, 1 block(s):  OK\n0. BP-1:blk_26_1026 len=1000 Live_repl=1  [DatanodeInfoWithStorage[127.0.0.1:9866,DS-0,DISK]]\n\n"
        );
    }

    #[test]
    fn a_missing_block_makes_the_file_corrupt() {
        let mut t = Totals::default();
        let mut out = String::new();
        let f = file("/m", 2, vec![block(5, 10, 0)]);
        assert!(check_file(
            &f,
            "BP-1",
            1,
            &Options::default(),
            &mut t,
            &mut out
        ));
        assert_eq!(out, "\n/m: MISSING 1 blocks of total size 10 B.");
        assert!(!t.healthy());
        let text = totals_text(&t, 3, 1);
        assert!(text.contains("  UNDER MIN REPL'D BLOCKS:\t1 (100.0 %)"));
        assert!(text.contains("  CORRUPT FILES:\t1\n  MISSING BLOCKS:\t1\n  MISSING SIZE:\t\t10 B"));
    }
}
