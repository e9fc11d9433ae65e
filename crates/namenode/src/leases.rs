//! Write leases: which clients hold files open for write, how many, and when each last
//! renewed.
//! Pure bookkeeping with times passed in (milliseconds), so expiry is tested directly.

use std::collections::HashMap;

use crate::namespace::Op;

/// Every create passes through this map under the namespace lock: a fast hash keeps that
/// cheap.
type Fold = foldhash::fast::RandomState;

/// The holder lease recovery started by the lease monitor hands a file to, as HDFS names
/// its own: `HDFS_NameNode-` and the time (UTC), e.g. `HDFS_NameNode-2026-11-29
/// 04:31:07,123+0000`.
pub(crate) fn namenode_holder(now_ms: i64) -> String {
    let secs = now_ms.div_euclid(1000);
    let (y, m, d) = crate::trash::civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "HDFS_NameNode-{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02},{:03}+0000",
        s / 3600,
        s / 60 % 60,
        s % 60,
        now_ms.rem_euclid(1000)
    )
}

#[derive(Debug, Default)]
pub(crate) struct Lease {
    pub last_renewed_ms: i64,
    /// How many files this holder has open.
    pub open_files: usize,
}

/// Holders and how many files each has open; not which. A file's holder is in its inode
/// (the client named when it was created), so whoever closes or deletes a file passes it
/// in, and the rare expiry finds a holder's files in the namespace's open-file table. A set
/// of files per holder cost a random-access insert into a table as big as the open files
/// on every create (2% of an in-process create's CPU), and an entry per open file.
#[derive(Debug, Default)]
pub(crate) struct Leases {
    holders: HashMap<String, Lease, Fold>,
}

impl Leases {
    /// `holder` opened a file for write.
    pub(crate) fn add(&mut self, holder: &str, now_ms: i64) {
        let lease = match self.holders.get_mut(holder) {
            Some(lease) => lease,
            None => self.holders.entry(holder.to_owned()).or_default(),
        };
        lease.last_renewed_ms = now_ms;
        lease.open_files += 1;
    }

    /// One of `holder`'s files was closed; a holder left with none is forgotten.
    pub(crate) fn remove_file(&mut self, holder: &str) {
        if let Some(lease) = self.holders.get_mut(holder) {
            lease.open_files = lease.open_files.saturating_sub(1);
            if lease.open_files == 0 {
                self.holders.remove(holder);
            }
        }
    }

    /// Renews every lease of `holder`. Returns false when it holds none.
    pub(crate) fn renew(&mut self, holder: &str, now_ms: i64) -> bool {
        match self.holders.get_mut(holder) {
            Some(l) => {
                l.last_renewed_ms = now_ms;
                true
            }
            None => false,
        }
    }

    /// Keeps the lease table in step with a namespace operation that was just applied.
    /// `closed` names the holder of each open file the operation closed, deleted or
    /// replaced.
    pub(crate) fn on_op<'a>(
        &mut self,
        op: &Op,
        closed: impl IntoIterator<Item = &'a str>,
        now_ms: i64,
    ) {
        match op {
            Op::Create { client_name, .. }
            | Op::Append { client_name, .. }
            | Op::Truncate {
                client_name,
                cut: Some(_),
                ..
            } => self.add(client_name, now_ms),
            // Lease recovery takes the file from its writer; the new holder's lease starts
            // now (as HDFS renews a lease it reassigns).
            Op::ReassignLease {
                holder, new_holder, ..
            } => {
                self.remove_file(holder);
                self.add(new_holder, now_ms);
            }
            _ => {}
        }
        for holder in closed {
            self.remove_file(holder);
        }
    }

    /// Holders that have not renewed within `hard_limit_ms`.
    pub(crate) fn expired(&self, now_ms: i64, hard_limit_ms: i64) -> Vec<String> {
        let mut expired: Vec<(i64, &String)> = self
            .holders
            .iter()
            .filter(|(_, l)| now_ms - l.last_renewed_ms > hard_limit_ms)
            .map(|(h, l)| (l.last_renewed_ms, h))
            .collect();
        // Oldest first, as HDFS's lease manager takes them; and in one order whatever the
        // map's, so recoveries start (and take their ids) in the same order every run.
        expired.sort_unstable();
        expired.into_iter().map(|(_, h)| h.clone()).collect()
    }

    /// Forgets `holder` once its expired files have been recovered (any that could not be
    /// closed included), unless it renewed or opened a file meanwhile.
    pub(crate) fn forget_expired(&mut self, holder: &str, now_ms: i64, hard_limit_ms: i64) {
        if self
            .holders
            .get(holder)
            .is_some_and(|l| now_ms - l.last_renewed_ms > hard_limit_ms)
        {
            self.holders.remove(holder);
        }
    }

    /// When `holder` last renewed, if it holds a lease.
    pub(crate) fn renewed_ms(&self, holder: &str) -> Option<i64> {
        self.holders.get(holder).map(|l| l.last_renewed_ms)
    }

    pub(crate) fn holder_count(&self) -> usize {
        self.holders.len()
    }

    /// How many files `holder` has open (0 for a holder without a lease).
    #[cfg(test)]
    pub(crate) fn open_files_of(&self, holder: &str) -> usize {
        self.holders.get(holder).map_or(0, |l| l.open_files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namenode_holder_is_named_as_hdfs_names_it() {
        assert_eq!(
            namenode_holder(1_795_926_667_123),
            "HDFS_NameNode-2026-11-29 04:31:07,123+0000"
        );
    }

    #[test]
    fn a_reassigned_lease_moves_to_its_new_holder() {
        let mut l = Leases::default();
        l.add("writer", 0);
        let op = Op::ReassignLease {
            path: "/f".into(),
            holder: "writer".into(),
            new_holder: "recoverer".into(),
        };
        l.on_op(&op, [], 5);
        assert_eq!(l.open_files_of("writer"), 0);
        assert_eq!(l.open_files_of("recoverer"), 1);
        assert_eq!(l.renewed_ms("recoverer"), Some(5));
    }

    #[test]
    fn renew_expire_and_forget() {
        let mut l = Leases::default();
        l.add("c1", 0);
        l.add("c2", 0);
        assert!(l.renew("c1", 50_000));
        assert!(!l.renew("nobody", 50_000));
        assert_eq!(l.expired(70_000, 60_000), vec!["c2".to_string()]);
        // c1 renewed in time: not forgotten; c2 is.
        l.forget_expired("c1", 70_000, 60_000);
        l.forget_expired("c2", 70_000, 60_000);
        assert_eq!(l.holder_count(), 1);
        assert_eq!(l.open_files_of("c1"), 1);
        assert_eq!(l.open_files_of("c2"), 0);
    }

    #[test]
    fn operations_end_the_leases_of_the_files_they_close_and_forget_empty_holders() {
        let create = |id: u64, holder: &str| Op::Create {
            path: format!("/f{id}"),
            id,
            perm: 0o644,
            owner: "u".into(),
            group: "g".into(),
            mtime: 0,
            replication: 1,
            block_size: 1 << 20,
            client_name: holder.into(),
            client_machine: "m".into(),
        };
        let mut l = Leases::default();
        l.on_op(&create(1, "c1"), [], 0);
        l.on_op(&create(2, "c1"), [], 0);
        assert_eq!(l.open_files_of("c1"), 2);
        // Overwriting file 2 as another client: the new file is c2's, the old one's lease ends.
        l.on_op(&create(3, "c2"), ["c1"], 0);
        assert_eq!(l.open_files_of("c1"), 1);
        assert_eq!(l.open_files_of("c2"), 1);
        let close = Op::Close {
            path: "/f1".into(),
            mtime: 1,
            len: 0,
        };
        l.on_op(&close, ["c1"], 1);
        assert_eq!(l.holder_count(), 1, "c1 holds nothing and is forgotten");
        assert!(!l.renew("c1", 2));
        assert!(l.renew("c2", 2));
    }
}
