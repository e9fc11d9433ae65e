//! HDFS's operation counters of `NameNodeActivity` (`CreateFileOps`, `FilesCreated`,
//! `FilesDeleted`, `GetListingOps`, …), with HDFS's meanings: most count calls that
//! succeeded, which the RPC router already counts per method (calls less errors), so a
//! lookup pays nothing more for them. Kept here is only what the router cannot see: inodes
//! made and removed by the mutations applied (counted under the writers' turn, where no
//! other thread touches the counters), the calls that answered `false` (a delete or
//! rename that found nothing does not count in HDFS), listings of a missing directory,
//! and the entries listings returned.

use std::sync::atomic::{AtomicU64, Ordering};

use ferrite_ipc::metrics::MethodSnapshot;

use crate::namespace::Op;

#[derive(Default)]
pub(crate) struct Activity {
    files_created: AtomicU64,
    files_deleted: AtomicU64,
    deletes_false: AtomicU64,
    renames_false: AtomicU64,
    listings_missing: AtomicU64,
    files_listed: AtomicU64,
}

/// The counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActivityFacts {
    pub files_created: u64,
    pub files_deleted: u64,
    pub deletes_false: u64,
    pub renames_false: u64,
    pub listings_missing: u64,
    pub files_listed: u64,
}

fn add(c: &AtomicU64, n: u64) {
    if n > 0 {
        c.fetch_add(n, Ordering::Relaxed);
    }
}

impl Activity {
    /// Records applied live (not replayed), and the namespace's inode count around them:
    /// every file and directory made counts as created, as in HDFS (a create's missing
    /// parents too), and whatever else the count lost was deleted (by a delete, or by a
    /// rename or create that replaced something).
    pub(crate) fn applied(&self, ops: &[Op], inodes_before: usize, inodes_after: usize) {
        let made = ops
            .iter()
            .filter(|op| matches!(op, Op::Mkdir { .. } | Op::Create { .. }))
            .count();
        add(&self.files_created, made as u64);
        let removed = (inodes_before + made).saturating_sub(inodes_after);
        add(&self.files_deleted, removed as u64);
    }

    pub(crate) fn delete_answered_false(&self) {
        add(&self.deletes_false, 1);
    }

    pub(crate) fn rename_answered_false(&self) {
        add(&self.renames_false, 1);
    }

    /// A listing answered: `Some(entries)`, or `None` for a directory that is not there.
    pub(crate) fn listed(&self, entries: Option<usize>) {
        match entries {
            Some(n) => add(&self.files_listed, n as u64),
            None => add(&self.listings_missing, 1),
        }
    }

    pub(crate) fn facts(&self) -> ActivityFacts {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ActivityFacts {
            files_created: get(&self.files_created),
            files_deleted: get(&self.files_deleted),
            deletes_false: get(&self.deletes_false),
            renames_false: get(&self.renames_false),
            listings_missing: get(&self.listings_missing),
            files_listed: get(&self.files_listed),
        }
    }
}

/// `NameNodeActivity`'s operation counters from the router's per-method counts and `a`,
/// under HDFS's names. Calls HDFS counts whether or not they succeed (getFileInfo,
/// getBlockLocations, getAdditionalDatanode) count every call; the others successes only.
/// Appends, truncates and symlinks are never done here: their counters stay 0.
pub(crate) fn op_counters(
    methods: &[MethodSnapshot],
    a: &ActivityFacts,
) -> Vec<(&'static str, u64)> {
    let sum = |name: &str, f: fn(&MethodSnapshot) -> u64| -> u64 {
        methods.iter().filter(|m| m.method == name).map(f).sum()
    };
    let calls = |name| sum(name, |m| m.calls);
    // A retry answered from the retry cache returns before HDFS counts it.
    let ok = |name| {
        sum(name, |m| {
            m.calls.saturating_sub(m.errors + m.retry_cache_hits)
        })
    };
    vec![
        ("CreateFileOps", ok("create")),
        ("FilesCreated", a.files_created),
        ("FilesAppended", 0),
        ("GetBlockLocations", calls("getBlockLocations")),
        (
            "FilesRenamed",
            (ok("rename") + ok("rename2")).saturating_sub(a.renames_false),
        ),
        ("FilesTruncated", 0),
        (
            "GetListingOps",
            ok("getListing").saturating_sub(a.listings_missing),
        ),
        (
            "DeleteFileOps",
            ok("delete").saturating_sub(a.deletes_false),
        ),
        ("FilesDeleted", a.files_deleted),
        (
            "FileInfoOps",
            calls("getFileInfo") + calls("getFileLinkInfo"),
        ),
        ("AddBlockOps", ok("addBlock")),
        ("GetAdditionalDatanodeOps", calls("getAdditionalDatanode")),
        ("CreateSymlinkOps", 0),
        ("GetLinkTargetOps", 0),
        ("FilesInGetListingOps", a.files_listed),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn method(name: &'static str, calls: u64, errors: u64) -> MethodSnapshot {
        MethodSnapshot {
            protocol: "org.apache.hadoop.hdfs.protocol.ClientProtocol",
            method: name,
            calls,
            errors,
            total_micros: 0,
            retry_cache_hits: 0,
        }
    }

    fn mkdir(path: &str) -> Op {
        crate::namespace::ops::mkdir_record(path, 0, 0)
    }

    #[test]
    fn inodes_made_and_lost_are_counted_as_hdfs_counts_them() {
        let a = Activity::default();
        // mkdirs /a/b/c with /a missing: three directories.
        a.applied(&[mkdir("/a"), mkdir("/a/b"), mkdir("/a/b/c")], 1, 4);
        // A recursive delete of /a: three inodes gone, nothing made.
        let del = Op::Delete {
            path: "/a".into(),
            mtime: 0,
        };
        a.applied(&[del], 4, 1);
        let f = a.facts();
        assert_eq!((f.files_created, f.files_deleted), (3, 3));
    }

    #[test]
    fn counters_are_successes_less_the_answers_hdfs_does_not_count() {
        let a = Activity::default();
        a.delete_answered_false();
        a.rename_answered_false();
        a.listed(None);
        a.listed(Some(5));
        a.listed(Some(2));
        let methods = [
            MethodSnapshot {
                retry_cache_hits: 1,
                ..method("create", 5, 1)
            },
            method("delete", 3, 0),
            method("rename", 2, 0),
            method("rename2", 1, 0),
            method("getListing", 3, 0),
            method("getFileInfo", 6, 2),
            method("getFileLinkInfo", 1, 0),
            method("getBlockLocations", 5, 1),
        ];
        let got: std::collections::HashMap<_, _> =
            op_counters(&methods, &a.facts()).into_iter().collect();
        assert_eq!(got["CreateFileOps"], 3, "less a failure and a retry");
        assert_eq!(got["DeleteFileOps"], 2, "a delete that found nothing");
        assert_eq!(got["FilesRenamed"], 2);
        assert_eq!(got["GetListingOps"], 2, "a listing of nothing");
        assert_eq!(got["FilesInGetListingOps"], 7);
        assert_eq!(got["FileInfoOps"], 7, "every call, failed ones too");
        assert_eq!(got["GetBlockLocations"], 5);
        assert_eq!(got["FilesAppended"], 0);
    }
}
