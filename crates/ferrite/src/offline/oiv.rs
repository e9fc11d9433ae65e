//! `ferrite oiv`: a checkpoint image read offline, as `hdfs oiv -p Delimited` reads an
//! fsimage: one row per file and directory, in the same columns and formats, so scripts
//! written against HDFS's output read ours. The image is Ferrite's own format (see
//! ARCHITECTURE.md), so HDFS's tool cannot read it; this is what stands in for it.
//!
//! Differences from HDFS's rows, all because Ferrite keeps no such state: directories
//! report no quota (-1, as Ferrite's content summaries do; HDFS gives the root an
//! unlimited name quota), and no permission carries the `+` of an ACL. Rows come in
//! path order, depth first; HDFS's come in its image's inode order. Times are UTC.
//!
//! Pure: it reads a namespace and writes lines; `super` does the files.

use std::io::{self, Write};

use ferrite_namenode::namespace::inode::ROOT_SLOT;
use ferrite_namenode::namespace::Namespace;

use crate::dfs::format::{ls_time, perm_string};

const HEADER: [&str; 12] = [
    "Path",
    "Replication",
    "ModificationTime",
    "AccessTime",
    "PreferredBlockSize",
    "BlocksCount",
    "FileSize",
    "NSQUOTA",
    "DSQUOTA",
    "Permission",
    "UserName",
    "GroupName",
];

/// Writes the header and a row per inode, fields separated by `delimiter`. Returns the
/// number of rows.
pub(super) fn delimited(ns: &Namespace, delimiter: &str, out: &mut impl Write) -> io::Result<u64> {
    writeln!(out, "{}", HEADER.join(delimiter))?;
    let mut rows = 0;
    let mut stack = vec![(ROOT_SLOT, "/".to_string())];
    while let Some((slot, path)) = stack.pop() {
        writeln!(out, "{}", row(ns, slot, &path).join(delimiter))?;
        rows += 1;
        if let Some(children) = ns.inode(slot).children() {
            // Reversed onto the stack, so that children come out in name order.
            for child in children.slots().rev() {
                let name = String::from_utf8_lossy(ns.name(child));
                let sep = if path.ends_with('/') { "" } else { "/" };
                stack.push((child, format!("{path}{sep}{name}")));
            }
        }
    }
    Ok(rows)
}

/// One inode's fields in [`HEADER`]'s order.
fn row(ns: &Namespace, slot: u32, path: &str) -> [String; 12] {
    let st = ns.status(slot, false);
    let blocks = ns.inode(slot).file().map_or(0, |f| f.blocks().len());
    let time = |ms: i64| ls_time(ms.max(0) as u64);
    // HDFS prints a directory's replication, block size, length and access time as zeros
    // (the last as the epoch), and a file's quotas as zeros.
    let (access, quota) = if st.is_dir {
        (time(0), "-1")
    } else {
        (time(st.atime), "0")
    };
    [
        path.to_string(),
        st.replication.to_string(),
        time(st.mtime),
        access,
        st.block_size.to_string(),
        blocks.to_string(),
        st.len.to_string(),
        quota.to_string(),
        quota.to_string(),
        perm_string(st.is_dir, st.perm),
        st.owner,
        st.group,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_namenode::namespace::ops::Op;

    fn namespace() -> Namespace {
        let mut ns = Namespace::new("hdfs", "supergroup", 0);
        let ops = [
            Op::Mkdir {
                path: "/user".into(),
                id: 16386,
                perm: 0o755,
                owner: "hdfs".into(),
                group: "supergroup".into(),
                mtime: 86_400_000, // creating a file in it moves it on
            },
            Op::Mkdir {
                path: "/tmp".into(),
                id: 16387,
                perm: 0o1777,
                owner: "hdfs".into(),
                group: "supergroup".into(),
                mtime: 60_000,
            },
            Op::Create {
                path: "/user/a b.txt".into(),
                id: 16388,
                perm: 0o644,
                owner: "alice".into(),
                group: "staff".into(),
                mtime: 1_764_000_000_000,
                replication: 3,
                block_size: 134_217_728,
                client_name: "c".into(),
                client_machine: "m".into(),
            },
            Op::AddBlock {
                path: "/user/a b.txt".into(),
                id: 1_073_741_825,
                gs: 1001,
                prev_len: 0,
            },
            Op::Close {
                path: "/user/a b.txt".into(),
                mtime: 1_764_000_060_000,
                len: 1234,
            },
        ];
        for op in &ops {
            ns.apply(op).unwrap();
        }
        ns
    }

    #[test]
    fn rows_follow_hdfs_delimited_columns_in_path_order() {
        let mut out = Vec::new();
        let rows = delimited(&namespace(), "\t", &mut out).unwrap();
        assert_eq!(rows, 4);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "Path\tReplication\tModificationTime\tAccessTime\tPreferredBlockSize\t\
             BlocksCount\tFileSize\tNSQUOTA\tDSQUOTA\tPermission\tUserName\tGroupName"
        );
        assert!(lines[1].starts_with("/\t0\t"), "{}", lines[1]);
        assert_eq!(
            lines[2],
            "/tmp\t0\t1970-01-01 00:01\t1970-01-01 00:00\t0\t0\t0\t-1\t-1\tdrwxrwxrwt\thdfs\tsupergroup"
        );
        assert_eq!(
            lines[3],
            "/user\t0\t2025-11-24 16:00\t1970-01-01 00:00\t0\t0\t0\t-1\t-1\tdrwxr-xr-x\thdfs\tsupergroup"
        );
        assert_eq!(
            lines[4],
            "/user/a b.txt\t3\t2025-11-24 16:01\t2025-11-24 16:00\t134217728\t1\t1234\t0\t0\t-rw-r--r--\talice\tstaff"
        );
    }

    #[test]
    fn the_delimiter_is_the_callers() {
        let mut out = Vec::new();
        delimited(&namespace(), ",", &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("Path,Replication,"), "{text}");
        assert!(text.contains("\n/tmp,0,"), "{text}");
    }
}
