//! The namespace's ACL calls (HDFS's `FSDirAclOp`): plan the five changes, answer
//! `getAclStatus`, apply the record, check access through an ACL, and give new inodes the
//! default ACL of their directory.
//!
//! Inodes' kept entries live in a table of their own ([`SharedAcls`]: slot → list), each
//! distinct list held once, so the million files a default ACL hands its entries to hold
//! one list between them, as HDFS's `AclFeature`s are shared. (In the general `Features`
//! entry an ACL cost ~90 bytes an inode; here ~30.)

use std::collections::HashSet;
use std::sync::Arc;

use super::acl::{self, AclEntry, Scope};
use super::inode::{Slot, PERM_MASK};
use super::perm::Caller;
use super::{Namespace, Op};
use crate::error::FsError;

/// One ACL call's change.
#[derive(Clone, Debug)]
pub enum AclChange {
    Modify(Vec<AclEntry>),
    RemoveEntries(Vec<AclEntry>),
    RemoveDefault,
    Remove,
    Set(Vec<AclEntry>),
}

/// `getAclStatus`'s answer: the kept entries (not the three the bits give).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclStatus {
    pub owner: String,
    pub group: String,
    pub sticky: bool,
    pub entries: Vec<AclEntry>,
    pub perm: u16,
}

/// Which inodes have an ACL, and each distinct kept-entry list, once.
#[derive(Default)]
pub struct SharedAcls {
    by_slot: std::collections::HashMap<Slot, Arc<[AclEntry]>>,
    lists: HashSet<Arc<[AclEntry]>>,
}

impl SharedAcls {
    pub fn is_empty(&self) -> bool {
        self.lists.is_empty()
    }

    /// Every inode with an ACL, and its entries.
    pub fn iter(&self) -> impl Iterator<Item = (Slot, &[AclEntry])> {
        self.by_slot.iter().map(|(&s, a)| (s, &a[..]))
    }

    /// An inode that goes lets go of its ACL.
    pub(super) fn forget(&mut self, slot: Slot) {
        if let Some(a) = self.by_slot.remove(&slot) {
            self.release(a);
        }
    }

    fn share(&mut self, entries: Vec<AclEntry>) -> Arc<[AclEntry]> {
        if let Some(a) = self.lists.get(entries.as_slice()) {
            return a.clone();
        }
        let a: Arc<[AclEntry]> = entries.into();
        self.lists.insert(a.clone());
        a
    }

    /// An inode lets go of `a`; the list goes when no other inode holds it.
    fn release(&mut self, a: Arc<[AclEntry]>) {
        // This one and the table's.
        if Arc::strong_count(&a) == 2 {
            self.lists.remove(&*a);
        }
    }
}

fn disabled() -> FsError {
    FsError::Acl(
        "The ACL operation has been rejected.  Support for ACLs has been disabled by setting \
         dfs.namenode.acls.enabled to false."
            .into(),
    )
}

impl Namespace {
    /// The inode's kept entries (empty: no ACL).
    pub fn acl_of(&self, slot: Slot) -> &[AclEntry] {
        if self.acls.is_empty() {
            return &[];
        }
        self.acls.by_slot.get(&slot).map_or(&[], |a| &a[..])
    }

    pub fn has_acl(&self, slot: Slot) -> bool {
        !self.acl_of(slot).is_empty()
    }

    /// The record for one ACL call: only the owner (or the superuser) may change an ACL.
    pub fn plan_acl_change(
        &self,
        caller: &Caller,
        src: &str,
        change: AclChange,
        enabled: bool,
    ) -> Result<Vec<Op>, FsError> {
        if !enabled {
            return Err(disabled());
        }
        let (slot, path) = self.resolve_checked_or(caller, src, |p| {
            format!("Directory/File does not exist {p}")
        })?;
        self.check_owner(caller, slot)?;
        // HDFS names the path in every refusal of the ACL itself.
        self.acl_record(slot, path, change).map_err(|e| match e {
            FsError::Acl(m) => FsError::Acl(format!("{m} Path: {}", self.path_of(slot))),
            e => e,
        })
    }

    fn acl_record(&self, slot: Slot, path: String, change: AclChange) -> Result<Vec<Op>, FsError> {
        let inode = self.inode(slot);
        let stored = self.acl_of(slot);
        let existing = acl::logical(inode.perm, stored);
        let new = match change {
            AclChange::Remove => None,
            AclChange::Set(spec) if spec.is_empty() => None,
            AclChange::Set(spec) => Some(acl::replace(&existing, spec)?),
            AclChange::Modify(spec) => Some(acl::merge(&existing, spec)?),
            AclChange::RemoveEntries(spec) => Some(acl::filter_by_spec(&existing, spec)?),
            AclChange::RemoveDefault => Some(acl::filter_default(&existing)?),
        };
        let (perm, kept) = match new {
            Some(new) => acl::to_storage(&new, inode.perm, inode.is_dir(), &path)?,
            None => (acl::without_acl(inode.perm, stored), Vec::new()),
        };
        Ok(vec![Op::SetAcl {
            path,
            perm,
            entries: kept.iter().map(ToString::to_string).collect(),
        }])
    }

    /// `getAclStatus`: passing through the path is all it needs, as in HDFS.
    pub fn acl_status(
        &self,
        caller: &Caller,
        src: &str,
        enabled: bool,
    ) -> Result<AclStatus, FsError> {
        if !enabled {
            return Err(disabled());
        }
        // A `.snapshot` path answers as the snapshot shows the inode.
        let a = self.resolve_attrs(caller, src, |p| format!("cannot find {p}"))?;
        Ok(AclStatus {
            owner: self.user_name(a.owner()).to_string(),
            group: self.user_name(a.group()).to_string(),
            sticky: a.perm() & super::inode::STICKY != 0,
            entries: a.acl().to_vec(),
            perm: a.perm(),
        })
    }

    /// Applies a SetAcl record: the permission and the kept entries, exactly.
    pub(super) fn apply_set_acl(
        &mut self,
        slot: Slot,
        perm: u16,
        entries: &[String],
    ) -> Result<(), FsError> {
        let kept = entries
            .iter()
            .map(|e| AclEntry::parse(e, true))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| FsError::internal("ACL record", e))?;
        self.arena.get_mut(slot).perm = perm & PERM_MASK;
        self.put_acl(slot, kept);
        Ok(())
    }

    /// Sets (or, with no entries, clears) an inode's kept entries.
    pub(super) fn put_acl(&mut self, slot: Slot, kept: Vec<AclEntry>) {
        let old = match kept.is_empty() {
            true => self.acls.by_slot.remove(&slot),
            false => {
                let shared = self.acls.share(kept);
                self.acls.by_slot.insert(slot, shared)
            }
        };
        if let Some(old) = old {
            self.acls.release(old);
        }
    }

    /// A new inode under a directory with a default ACL takes it (HDFS's
    /// `copyINodeDefaultAcl`), its permission (the create's mode) filtering it. A record
    /// need not carry this: the parent's ACL, in the tree, decides it, live and in replay.
    pub(super) fn inherit_default_acl(&mut self, parent: Slot, child: Slot) {
        let default = self.default_acl_of(parent);
        if default.is_empty() {
            return;
        }
        let inode = self.inode(child);
        let (perm, kept) = acl::inherit(&default, inode.perm, inode.is_dir());
        self.arena.get_mut(child).perm = perm & PERM_MASK;
        if !kept.is_empty() {
            self.put_acl(child, kept);
        }
    }

    /// The permission (and whether it has an ACL) a file a Create record makes at `src` will have under the default
    /// ACL it will inherit, if it inherits one (the nearest existing directory's: any
    /// made on the way take it and hand it on unchanged). For the create's reply, which is
    /// built before the record applies.
    pub fn acl_for_new_file(&self, src: &str, op: &Op) -> Option<(u16, bool)> {
        if self.acls.is_empty() {
            return None;
        }
        let Op::Create { perm, .. } = op else {
            return None;
        };
        let mut dir = src.trim_end_matches('/');
        let slot = loop {
            dir = match dir.rsplit_once('/') {
                Some(("", _)) | None => "/",
                Some((p, _)) => p,
            };
            if let Ok(s) = self.existing(dir) {
                break s;
            }
            if dir == "/" {
                return None;
            }
        };
        let default = self.default_acl_of(slot);
        if default.is_empty() {
            return None;
        }
        let (perm, kept) = acl::inherit(&default, *perm, false);
        Some((perm, !kept.is_empty()))
    }

    fn default_acl_of(&self, dir: Slot) -> Vec<AclEntry> {
        self.acl_of(dir)
            .iter()
            .filter(|e| e.scope == Scope::Default)
            .cloned()
            .collect()
    }

    /// Whether new entries in `dir` take a default ACL (and so the create's unmasked mode,
    /// as HDFS's POSIX inheritance does).
    pub fn has_default_acl(&self, dir: Slot) -> bool {
        self.acl_of(dir).iter().any(|e| e.scope == Scope::Default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::CreateArgs;

    fn spec(s: &str) -> Vec<AclEntry> {
        s.split(',')
            .map(|e| AclEntry::parse(e, true).unwrap())
            .collect()
    }

    fn apply_all(ns: &mut Namespace, ops: Vec<Op>, log: &mut Vec<Op>) {
        for op in ops {
            ns.apply(&op).unwrap();
            log.push(op);
        }
    }

    fn create(ns: &mut Namespace, su: &Caller, src: &str, log: &mut Vec<Op>) {
        let args = CreateArgs {
            src,
            masked: 0o644,
            unmasked: Some(0o666),
            client_name: "c",
            client_machine: "m",
            create: true,
            overwrite: false,
            create_parent: true,
            replication: 1,
            block_size: 1 << 20,
        };
        let ops = ns.plan_create(su, &args, 3).unwrap().ops;
        apply_all(ns, ops, log);
    }

    #[test]
    fn files_under_a_default_acl_share_one_list_which_goes_with_the_last_of_them() {
        let su = Caller::superuser("hdfs");
        let mut ns = Namespace::new("hdfs", "supergroup", 1);
        let mut log = Vec::new();
        let ops = ns.plan_mkdirs(&su, "/d", 0o755, false, 2).unwrap().ops;
        apply_all(&mut ns, ops, &mut log);
        let ops = ns
            .plan_acl_change(
                &su,
                "/d",
                AclChange::Modify(spec("default:user:alice:rwx")),
                true,
            )
            .unwrap();
        apply_all(&mut ns, ops, &mut log);
        for i in 0..50 {
            create(&mut ns, &su, &format!("/d/f{i}"), &mut log);
        }
        // The directory's list, and the one every file took.
        assert_eq!(ns.acls.lists.len(), 2);
        let f = ns.existing("/d/f7").unwrap();
        let st = ns.status(f, false);
        // The default ACL (user::rwx, mask::rwx, other::r-x from /d's 755) filtered by the
        // unmasked 666, not by the umask's 644: user rw-, mask rw-, other r--.
        assert!(st.has_acl);
        assert_eq!(st.perm, 0o664);
        // Replay from the records alone gives the same tree, ACLs included.
        let mut again = Namespace::new("hdfs", "supergroup", 1);
        for op in &log {
            again.apply(op).unwrap();
        }
        assert_eq!(again.dump(), ns.dump());
        let ops = ns.plan_delete(&su, "/d", true, 4).unwrap().unwrap().ops;
        apply_all(&mut ns, ops, &mut log);
        assert!(ns.acls.is_empty(), "no inode holds a list any more");
        assert!(ns.acls.by_slot.is_empty());
        assert!(ns.features.is_empty());
    }

    #[test]
    fn only_the_owner_changes_an_acl_and_a_named_user_reads_through_it() {
        let su = Caller::superuser("hdfs");
        let mut ns = Namespace::new("hdfs", "supergroup", 1);
        let mut log = Vec::new();
        let ops = ns.plan_mkdirs(&su, "/p", 0o700, false, 2).unwrap().ops;
        apply_all(&mut ns, ops, &mut log);
        let alice = Caller {
            user: "alice".into(),
            groups: vec!["eng".to_string()].into(),
            superuser: false,
            checks_enabled: true,
        };
        let p = ns.existing("/p").unwrap();
        assert!(ns.check_access(&alice, p, 4).is_err());
        let change = AclChange::Modify(spec("user:alice:r-x"));
        let e = ns
            .plan_acl_change(&alice, "/p", change.clone(), true)
            .unwrap_err();
        assert!(e.to_string().contains("is not the owner"), "{e}");
        let ops = ns.plan_acl_change(&su, "/p", change, true).unwrap();
        apply_all(&mut ns, ops, &mut log);
        assert!(ns.check_access(&alice, p, 4 | 1).is_ok());
        assert!(ns.check_access(&alice, p, 2).is_err());
        let off = ns
            .plan_acl_change(&su, "/p", AclChange::Remove, false)
            .unwrap_err();
        assert!(matches!(off, FsError::Acl(_)) && off.to_string().contains("disabled"));
        let ops = ns
            .plan_acl_change(&su, "/p", AclChange::Remove, true)
            .unwrap();
        apply_all(&mut ns, ops, &mut log);
        assert!(ns.check_access(&alice, p, 4).is_err());
        assert_eq!(
            ns.inode(p).perm,
            0o700,
            "the group bits are the group entry again"
        );
    }
}
