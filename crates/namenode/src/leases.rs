//! Write leases: which client holds which open files, and when it last renewed.
//! Pure bookkeeping with times passed in (milliseconds), so expiry is tested directly.

use std::collections::{HashMap, HashSet};

use crate::namespace::Op;

/// Every create passes through these maps under the namespace lock: a fast hash keeps that
/// cheap.
type Fold = foldhash::fast::RandomState;

#[derive(Debug, Default)]
pub struct Lease {
    pub last_renewed_ms: i64,
    /// Inode ids of the files this holder has open.
    pub files: HashSet<u64, Fold>,
}

/// Holders only: a file's holder is in its inode (the client named when it was created), so
/// whoever closes or deletes a file passes it in. A second map from file to holder cost a
/// random-access insert per create (about 2% of an in-process create's CPU) and an entry
/// per open file.
#[derive(Debug, Default)]
pub struct Leases {
    holders: HashMap<String, Lease, Fold>,
}

impl Leases {
    pub fn add(&mut self, holder: &str, file_id: u64, now_ms: i64) {
        let lease = match self.holders.get_mut(holder) {
            Some(lease) => lease,
            None => self.holders.entry(holder.to_owned()).or_default(),
        };
        lease.last_renewed_ms = now_ms;
        lease.files.insert(file_id);
    }

    /// Ends `holder`'s lease on one file; a holder left with none is forgotten.
    pub fn remove_file(&mut self, holder: &str, file_id: u64) {
        if let Some(lease) = self.holders.get_mut(holder) {
            lease.files.remove(&file_id);
            if lease.files.is_empty() {
                self.holders.remove(holder);
            }
        }
    }

    /// Renews every lease of `holder`. Returns false when it holds none.
    pub fn renew(&mut self, holder: &str, now_ms: i64) -> bool {
        match self.holders.get_mut(holder) {
            Some(l) => {
                l.last_renewed_ms = now_ms;
                true
            }
            None => false,
        }
    }

    /// Keeps the lease table in step with a namespace operation that was just applied.
    /// `closed` are the open files the operation closed, deleted or replaced, with their
    /// holders.
    pub fn on_op(&mut self, op: &Op, closed: &[(u64, String)], now_ms: i64) {
        if let Op::Create {
            client_name, id, ..
        } = op
        {
            self.add(client_name, *id, now_ms);
        }
        for (id, holder) in closed {
            self.remove_file(holder, *id);
        }
    }

    /// Files whose holder has not renewed within `hard_limit_ms`.
    pub fn expired(&self, now_ms: i64, hard_limit_ms: i64) -> Vec<(String, Vec<u64>)> {
        self.holders
            .iter()
            .filter(|(_, l)| now_ms - l.last_renewed_ms > hard_limit_ms)
            .map(|(h, l)| (h.clone(), l.files.iter().copied().collect()))
            .collect()
    }

    pub fn holder_count(&self) -> usize {
        self.holders.len()
    }

    /// Who holds `file_id` (a scan of every holder: for tests and diagnostics).
    pub fn holder_of(&self, file_id: u64) -> Option<&str> {
        self.holders
            .iter()
            .find(|(_, l)| l.files.contains(&file_id))
            .map(|(h, _)| h.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renew_and_expire() {
        let mut l = Leases::default();
        l.add("c1", 10, 0);
        l.add("c2", 11, 0);
        assert!(l.renew("c1", 50_000));
        assert!(!l.renew("nobody", 50_000));
        let exp = l.expired(70_000, 60_000);
        assert_eq!(exp, vec![("c2".to_string(), vec![11])]);
        l.remove_file("c2", 11);
        assert_eq!(l.holder_count(), 1);
        assert_eq!(l.holder_of(10), Some("c1"));
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
        l.on_op(&create(1, "c1"), &[], 0);
        l.on_op(&create(2, "c1"), &[], 0);
        // Overwriting file 2 as another client: the new file is c2's, the old one's lease ends.
        l.on_op(&create(3, "c2"), &[(2, "c1".to_string())], 0);
        assert_eq!(l.holder_of(1), Some("c1"));
        assert_eq!(l.holder_of(2), None);
        assert_eq!(l.holder_of(3), Some("c2"));
        let close = Op::Close {
            path: "/f1".into(),
            mtime: 1,
            len: 0,
        };
        l.on_op(&close, &[(1, "c1".to_string())], 1);
        assert_eq!(l.holder_count(), 1, "c1 holds nothing and is forgotten");
        assert!(!l.renew("c1", 2));
        assert!(l.renew("c2", 2));
    }
}
