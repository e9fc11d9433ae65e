//! Write leases: which client holds which open files, and when it last renewed.
//! Pure bookkeeping with times passed in (milliseconds), so expiry is tested directly.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::namespace::Op;

/// Every create passes through these maps under the namespace lock: a fast hash, and the
/// holder's name shared (not copied per file) keep that cheap in time and memory.
type Fold = foldhash::fast::RandomState;

#[derive(Debug, Default)]
pub struct Lease {
    pub last_renewed_ms: i64,
    /// Inode ids of the files this holder has open.
    pub files: HashSet<u64, Fold>,
}

#[derive(Debug, Default)]
pub struct Leases {
    holders: HashMap<Arc<str>, Lease, Fold>,
    /// Inode id → holder, to drop a file's lease when it is closed or deleted.
    by_file: HashMap<u64, Arc<str>, Fold>,
}

impl Leases {
    pub fn add(&mut self, holder: &str, file_id: u64, now_ms: i64) {
        let name = match self.holders.get_key_value(holder) {
            Some((name, _)) => name.clone(),
            None => Arc::from(holder),
        };
        let lease = self.holders.entry(name.clone()).or_default();
        lease.last_renewed_ms = now_ms;
        lease.files.insert(file_id);
        self.by_file.insert(file_id, name);
    }

    pub fn remove_file(&mut self, file_id: u64) {
        if let Some(holder) = self.by_file.remove(&file_id) {
            if let Some(lease) = self.holders.get_mut(&*holder) {
                lease.files.remove(&file_id);
                if lease.files.is_empty() {
                    self.holders.remove(&*holder);
                }
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
    /// `closed_ids` are the open files the operation closed, deleted or replaced.
    pub fn on_op(&mut self, op: &Op, closed_ids: &[u64], now_ms: i64) {
        if let Op::Create {
            client_name, id, ..
        } = op
        {
            self.add(client_name, *id, now_ms);
        }
        for id in closed_ids {
            self.remove_file(*id);
        }
    }

    /// Files whose holder has not renewed within `hard_limit_ms`.
    pub fn expired(&self, now_ms: i64, hard_limit_ms: i64) -> Vec<(String, Vec<u64>)> {
        self.holders
            .iter()
            .filter(|(_, l)| now_ms - l.last_renewed_ms > hard_limit_ms)
            .map(|(h, l)| (h.to_string(), l.files.iter().copied().collect()))
            .collect()
    }

    pub fn holder_count(&self) -> usize {
        self.holders.len()
    }

    pub fn holder_of(&self, file_id: u64) -> Option<&str> {
        self.by_file.get(&file_id).map(|h| &**h)
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
        l.remove_file(11);
        assert_eq!(l.holder_count(), 1);
        assert_eq!(l.holder_of(10), Some("c1"));
    }
}
