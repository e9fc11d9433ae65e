//! Directory quotas as HDFS keeps them: a namespace quota (inodes, the directory itself
//! included), a storage-space quota (bytes times replication), and space quotas per storage
//! type. The usage of every directory with a quota is kept with it and changed by every
//! record that changes it, so a check costs one step per ancestor, never a walk.
//!
//! A file is charged as HDFS charges it: its blocks' bytes times its replication, the last
//! block counted at the full preferred block size while the file is open for write; by
//! storage type, each replica on the type its storage policy puts it on.
//!
//! Usage lives here, in the namespace, not in the summary: a quota is checked while a call
//! is planned under the namespace lock, against the exact state the call sees, and the
//! summary is updated after, may lag, and may be turned off.

use std::ops::{AddAssign, Neg, SubAssign};

use super::inode::{Body, Slot, ROOT_SLOT};
use super::storage_policy::{self, StorageType};
use super::{Namespace, Op};
use crate::error::FsError;

/// StorageType ids 1..=6, by index `id - 1`.
pub const N_TYPES: usize = 6;

const TYPES: [StorageType; N_TYPES] = [
    StorageType::Disk,
    StorageType::Ssd,
    StorageType::Archive,
    StorageType::RamDisk,
    StorageType::Provided,
    StorageType::Nvdimm,
];

/// No quota of that kind (HDFS's `-1`, `QUOTA_RESET`).
pub const NONE: i64 = -1;
/// Leave that kind as it is (HDFS's `QUOTA_DONT_SET`, `Long.MAX_VALUE`).
pub const DONT_SET: i64 = i64::MAX;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub ns: i64,
    pub space: i64,
    pub types: [i64; N_TYPES],
}

impl AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        self.ns += o.ns;
        self.space += o.space;
        for (a, b) in self.types.iter_mut().zip(o.types) {
            *a += b;
        }
    }
}

impl SubAssign for Usage {
    fn sub_assign(&mut self, o: Usage) {
        *self += -o;
    }
}

impl Neg for Usage {
    type Output = Usage;
    fn neg(self) -> Usage {
        Usage {
            ns: -self.ns,
            space: -self.space,
            types: self.types.map(|t| -t),
        }
    }
}

impl Usage {
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }
}

/// A directory's quotas ([`NONE`] for a kind it has not) and what its subtree uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quota {
    pub ns: i64,
    pub space: i64,
    pub types: [i64; N_TYPES],
    pub used: Usage,
}

impl Quota {
    fn is_empty(&self) -> bool {
        self.ns == NONE && self.space == NONE && self.types.iter().all(|&t| t == NONE)
    }

    pub fn has_type_quota(&self) -> bool {
        self.types.iter().any(|&t| t != NONE)
    }
}

/// A storage type's index in [`Usage::types`], from its id.
pub fn type_index(id: u8) -> Option<usize> {
    (1..=N_TYPES as u8)
        .contains(&id)
        .then(|| usize::from(id - 1))
}

pub fn type_name(index: usize) -> &'static str {
    TYPES[index].name()
}

/// What a change to the tree does to quota usage, found before the record applies and
/// finished after ([`Namespace::quota_before`], [`Namespace::quota_after`]).
pub(super) enum Pending {
    None,
    /// Charge the quotas above the inode at `path` (after the record) with what its
    /// subtree uses then, plus `delta` (less what it used before, or a file it replaced).
    Add {
        path: String,
        delta: Usage,
    },
    /// Charge `delta`, worked out before, from `from` up (a delete).
    Charge {
        from: Slot,
        delta: Usage,
    },
    /// `moved` (what `slot` uses) leaves the quotas above `from` and joins those above
    /// its new parent, where `replaced` (an entry it overwrote) has gone.
    Move {
        slot: Slot,
        from: Slot,
        moved: Usage,
        replaced: Usage,
        /// The storage policy in force at `slot` before: under another, its usage by
        /// type is counted again where it lands.
        policy: u8,
    },
    /// Usage under `slot` must be counted again (a storage policy changed).
    Recount {
        slot: Slot,
    },
}

impl Namespace {
    pub fn quota_of(&self, slot: Slot) -> Option<&Quota> {
        if self.quotas_set == 0 {
            return None;
        }
        self.features.get(&slot)?.quota.as_deref()
    }

    /// What one file uses (itself, its space, its space by type under `policy`).
    pub(super) fn file_usage(&self, slot: Slot, policy: u8) -> Usage {
        let inode = self.inode(slot);
        match &inode.body {
            Body::Dir(_) => Usage {
                ns: 1,
                ..Default::default()
            },
            Body::File(_) => Self::usage_for(policy, self.charged_bytes(slot), inode.replication),
        }
    }

    /// What `top` and everything under it uses. A directory with a quota of its own
    /// answers for its subtree from what it keeps.
    pub(super) fn subtree_usage(&self, top: Slot) -> Usage {
        match self.quota_of(top) {
            Some(q) => q.used,
            None => self.count_subtree(top),
        }
    }

    /// [`subtree_usage`](Self::subtree_usage), `top` itself walked (only the quotas
    /// below it trusted).
    fn count_subtree(&self, top: Slot) -> Usage {
        let mut total = Usage::default();
        let mut stack = vec![(top, self.storage_policy_of(top))];
        while let Some((s, inherited)) = stack.pop() {
            if s != top {
                if let Some(q) = self.quota_of(s) {
                    total += q.used;
                    continue;
                }
            }
            let own = self.features.get(&s).map_or(0, |f| f.storage_policy);
            let policy = if own != storage_policy::UNSPECIFIED {
                own
            } else {
                inherited
            };
            total += self.file_usage(s, policy);
            if let Some(children) = self.inode(s).children() {
                stack.extend(children.slots().map(|c| (c, policy)));
            }
        }
        total
    }

    /// Adds `delta` to every quota from `from` up to the root.
    fn charge(&mut self, from: Slot, delta: Usage) {
        if delta.is_zero() {
            return;
        }
        let mut s = from;
        loop {
            if let Some(q) = self
                .features
                .get_mut(&s)
                .and_then(|f| f.quota.as_deref_mut())
            {
                q.used += delta;
            }
            if s == ROOT_SLOT {
                return;
            }
            s = self.inode(s).parent;
        }
    }

    fn has_quota_from(&self, from: Slot) -> bool {
        if self.quotas_set == 0 {
            return false;
        }
        let mut s = from;
        loop {
            if self.quota_of(s).is_some() {
                return true;
            }
            if s == ROOT_SLOT {
                return false;
            }
            s = self.inode(s).parent;
        }
    }

    /// Refuses a change that would take a quota from `from` up to the root past its
    /// limit (the deepest first, as HDFS checks), with HDFS's exception and message.
    /// Only growth is checked: a change that frees is always allowed.
    pub fn check_quota(&self, from: Slot, delta: Usage) -> Result<(), FsError> {
        if self.quotas_set == 0 {
            return Ok(());
        }
        let mut s = from;
        loop {
            if let Some(q) = self.quota_of(s) {
                self.check_one(s, q, &delta)?;
            }
            if s == ROOT_SLOT {
                return Ok(());
            }
            s = self.inode(s).parent;
        }
    }

    fn check_one(&self, s: Slot, q: &Quota, d: &Usage) -> Result<(), FsError> {
        let grows = d.ns > 0 || d.space > 0 || d.types.iter().any(|&t| t > 0);
        if !grows {
            return Ok(());
        }
        // Snapshots' deleted inodes and cut-off blocks count too, as in HDFS.
        let mut used = q.used;
        used += self.snapshot_usage(s);
        let over =
            |quota: i64, used: i64, delta: i64| quota >= 0 && delta > 0 && used > quota - delta;
        if over(q.ns, used.ns, d.ns) {
            return Err(FsError::NsQuotaExceeded {
                dir: self.path_of(s),
                quota: q.ns,
                count: used.ns + d.ns,
            });
        }
        if over(q.space, used.space, d.space) {
            return Err(FsError::DsQuotaExceeded {
                dir: self.path_of(s),
                quota: q.space,
                consumed: used.space + d.space,
            });
        }
        for i in 0..N_TYPES {
            if over(q.types[i], used.types[i], d.types[i]) {
                return Err(FsError::TypeQuotaExceeded {
                    storage_type: type_name(i),
                    dir: self.path_of(s),
                    quota: q.types[i],
                    consumed: used.types[i] + d.types[i],
                });
            }
        }
        Ok(())
    }

    /// Before a record applies: what it will change in quota usage.
    pub(super) fn quota_before(&self, op: &Op, at: super::At) -> Pending {
        if self.quotas_set == 0 {
            return Pending::None;
        }
        let existing = |p: &str| self.existing(p).ok();
        let parent_of = |s: Slot| self.inode(s).parent;
        match op {
            Op::Mkdir { path, .. } => Pending::Add {
                path: path.clone(),
                delta: Usage::default(),
            },
            Op::Create { path, .. } => {
                // A file it replaces goes first. Its directory, when the plan found it,
                // spares a walk of the path.
                let replaced = match at.slot {
                    Some(dir) => {
                        let name = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
                        self.child(dir, name.as_bytes())
                    }
                    None => existing(path),
                };
                let gone = replaced.map(|s| self.subtree_usage(s)).unwrap_or_default();
                Pending::Add {
                    path: path.clone(),
                    delta: -gone,
                }
            }
            Op::Delete { path, .. } => match existing(path) {
                Some(s) if s != ROOT_SLOT && self.has_quota_from(parent_of(s)) => Pending::Charge {
                    from: parent_of(s),
                    delta: -self.subtree_usage(s),
                },
                _ => Pending::None,
            },
            Op::Rename { src, dst, .. } => match existing(src) {
                Some(slot) if slot != ROOT_SLOT => Pending::Move {
                    slot,
                    from: parent_of(slot),
                    moved: self.subtree_usage(slot),
                    replaced: existing(dst)
                        .map(|d| self.subtree_usage(d))
                        .unwrap_or_default(),
                    policy: self.storage_policy_of(slot),
                },
                _ => Pending::None,
            },
            Op::Concat { target, srcs, .. } => {
                let Some(t) = existing(target) else {
                    return Pending::None;
                };
                let mut before = self.subtree_usage(t);
                for s in srcs.iter().filter_map(|s| existing(s)) {
                    before += self.subtree_usage(s);
                }
                Pending::Add {
                    path: target.clone(),
                    delta: -before,
                }
            }
            Op::SetStoragePolicy { path, .. } => match existing(path) {
                Some(slot) => Pending::Recount { slot },
                None => Pending::None,
            },
            Op::AddBlock { path, .. }
            | Op::AbandonBlock { path, .. }
            | Op::Close { path, .. }
            | Op::UpdateLastBlock { path, .. }
            | Op::Append { path, .. }
            | Op::Truncate { path, .. }
            | Op::CopyOnTruncate { path, .. }
            | Op::SetReplication { path, .. }
            | Op::BumpGenerationStamp { path, .. } => match existing(path) {
                Some(s) if self.has_quota_from(s) => Pending::Add {
                    path: path.clone(),
                    delta: -self.subtree_usage(s),
                },
                _ => Pending::None,
            },
            _ => Pending::None,
        }
    }

    /// After the record applied: charges what [`quota_before`](Self::quota_before) found.
    /// `made` is the inode a Mkdir or Create just made, which spares a walk of its path.
    pub(super) fn quota_after(&mut self, pending: Pending, made: Option<Slot>) {
        match pending {
            Pending::None => {}
            Pending::Charge { from, delta } => self.charge(from, delta),
            Pending::Add { path, mut delta } => {
                let Some(slot) = made.or_else(|| self.existing(&path).ok()) else {
                    return;
                };
                if slot != ROOT_SLOT {
                    delta += self.subtree_usage(slot);
                    self.charge(self.inode(slot).parent, delta);
                }
            }
            Pending::Move {
                slot,
                from,
                moved,
                replaced,
                policy,
            } => {
                self.charge(from, -moved);
                let mut landed = moved;
                if self.storage_policy_of(slot) != policy {
                    self.recount(slot, false);
                    landed = self.subtree_usage(slot);
                }
                landed -= replaced;
                self.charge(self.inode(slot).parent, landed);
            }
            Pending::Recount { slot } => self.recount(slot, true),
        }
    }

    /// Counts again the usage of every quota inside `slot`'s subtree (itself included)
    /// and, with `above_too`, of those above it: after a storage policy changed there (every
    /// replica's type under it may have), or a subtree moved under another policy.
    fn recount(&mut self, slot: Slot, above_too: bool) {
        let mut dirs: Vec<Slot> = self
            .features
            .iter()
            .filter(|(_, f)| f.quota.is_some())
            .map(|(&s, _)| s)
            .filter(|&s| self.is_at_or_under(s, slot) || above_too && self.is_at_or_under(slot, s))
            .collect();
        // Deepest first, so that each count can use the ones below it.
        dirs.sort_by_key(|&s| std::cmp::Reverse(self.depth_of(s)));
        for s in dirs {
            let used = self.count_subtree(s);
            if let Some(q) = self
                .features
                .get_mut(&s)
                .and_then(|f| f.quota.as_deref_mut())
            {
                q.used = used;
            }
        }
    }

    fn depth_of(&self, mut s: Slot) -> usize {
        let mut d = 0;
        while s != ROOT_SLOT {
            s = self.inode(s).parent;
            d += 1;
        }
        d
    }

    /// Sets a directory's quotas (a SetQuota record): counts its usage when it gets its
    /// first, and drops the record of it when it has none left.
    pub(super) fn apply_quota(&mut self, slot: Slot, ns: i64, space: i64, types: [i64; N_TYPES]) {
        let had = self.quota_of(slot).is_some();
        let q = Quota {
            ns,
            space,
            types,
            used: Usage::default(),
        };
        if q.is_empty() {
            if had {
                let f = self.features.get_mut(&slot).expect("had a quota");
                f.quota = None;
                if f.is_empty() {
                    self.features.remove(&slot);
                }
                self.quotas_set -= 1;
            }
            return;
        }
        if !had {
            self.quotas_set += 1;
            let used = self.count_subtree(slot);
            self.features.entry(slot).or_default().quota = Some(Box::new(Quota { used, ..q }));
            return;
        }
        let cur = self
            .features
            .get_mut(&slot)
            .and_then(|f| f.quota.as_deref_mut());
        let cur = cur.expect("had a quota");
        (cur.ns, cur.space, cur.types) = (ns, space, types);
    }

    /// An image's quota, its usage left for [`count_all_quotas`](Self::count_all_quotas).
    pub(super) fn set_quota_unchecked(
        &mut self,
        slot: Slot,
        ns: i64,
        space: i64,
        types: [i64; N_TYPES],
    ) {
        self.quotas_set += 1;
        let q = Quota {
            ns,
            space,
            types,
            used: Usage::default(),
        };
        self.features.entry(slot).or_default().quota = Some(Box::new(q));
    }

    /// After an image load: every quota's usage, counted deepest first.
    pub(super) fn count_all_quotas(&mut self) {
        if self.quotas_set == 0 {
            return;
        }
        self.recount(ROOT_SLOT, false);
    }
}

/// The checks the planners make, and `setQuota`.
impl Namespace {
    /// What `usage` a file of `bytes` (as charged) at `repl` under `policy` has. As in
    /// HDFS, a file under no storage policy at all (not even an inherited one) is charged
    /// to no storage type: type quotas count only files whose policy is set.
    pub(super) fn usage_for(policy: u8, bytes: u64, repl: u16) -> Usage {
        let mut u = Usage {
            ns: 1,
            space: (bytes * u64::from(repl)) as i64,
            ..Default::default()
        };
        let Some(p) = storage_policy::by_id(policy) else {
            return u;
        };
        for r in 0..repl as usize {
            let t = p.types[r.min(p.types.len() - 1)];
            u.types[t as usize - 1] += bytes as i64;
        }
        u
    }

    /// The bytes a file is charged for now (its open last block at the preferred size).
    pub fn charged_bytes(&self, slot: Slot) -> u64 {
        let Some(f) = self.inode(slot).file() else {
            return 0;
        };
        let blocks = f.blocks();
        let bytes: u64 = blocks.iter().map(|b| b.len).sum();
        match (f.uc(), blocks.last()) {
            (Some(_), Some(last)) => bytes - last.len + f.block_size.max(last.len),
            _ => bytes,
        }
    }

    /// Refuses a file change after which it would be charged `bytes_after` at
    /// `repl_after` (addBlock, append, truncate, setReplication) past a quota above it.
    pub fn check_file_growth(
        &self,
        slot: Slot,
        bytes_after: u64,
        repl_after: u16,
    ) -> Result<(), FsError> {
        if !self.has_quota_from(slot) {
            return Ok(());
        }
        let policy = self.storage_policy_of(slot);
        let mut delta = Self::usage_for(policy, bytes_after, repl_after);
        delta -= self.file_usage(slot, policy);
        self.check_quota(self.inode(slot).parent, delta)
    }

    /// How many of `n` new inodes made one after another under `dir` fit its quotas, and
    /// the refusal of the first that does not.
    pub fn new_inodes_fit(&self, dir: Slot, n: usize) -> (usize, Option<FsError>) {
        if !self.has_quota_from(dir) {
            return (n, None);
        }
        for i in 0..n {
            let one = Usage {
                ns: 1 + i as i64,
                ..Default::default()
            };
            if let Err(e) = self.check_quota(dir, one) {
                return (i, Some(e));
            }
        }
        (n, None)
    }

    /// A rename moving `src` into `dst_dir` (replacing `replaced`): only the quotas above
    /// the destination that are not above the source can be exceeded.
    pub fn check_rename_quota(
        &self,
        src: Slot,
        dst_dir: Slot,
        replaced: Option<Slot>,
    ) -> Result<(), FsError> {
        if !self.has_quota_from(dst_dir) {
            return Ok(());
        }
        let mut above_src = std::collections::HashSet::new();
        let mut s = src;
        while s != ROOT_SLOT {
            s = self.inode(s).parent;
            above_src.insert(s);
        }
        let mut delta = self.subtree_usage(src);
        if let Some(r) = replaced {
            delta -= self.subtree_usage(r);
        }
        let mut s = dst_dir;
        while !above_src.contains(&s) {
            if let Some(q) = self.quota_of(s) {
                self.check_one(s, q, &delta)?;
            }
            if s == ROOT_SLOT {
                break;
            }
            s = self.inode(s).parent;
        }
        Ok(())
    }

    /// concat: the sources' blocks take the target's replication.
    pub fn check_concat_quota(&self, target: Slot, srcs: &[Slot]) -> Result<(), FsError> {
        if !self.has_quota_from(target) {
            return Ok(());
        }
        let policy = self.storage_policy_of(target);
        let mut before = self.file_usage(target, policy);
        let mut bytes = self.charged_bytes(target);
        for &s in srcs {
            before += self.file_usage(s, self.storage_policy_of(s));
            bytes += self.charged_bytes(s);
        }
        let mut delta = Self::usage_for(policy, bytes, self.inode(target).replication);
        delta -= before;
        self.check_quota(self.inode(target).parent, delta)
    }

    /// `setQuota` (`storage_type` None) or `setQuotaByStorageType`: HDFS's values (-1
    /// clears, `i64::MAX` leaves as is), checks and messages. The superuser's alone
    /// (admission checks that).
    pub fn plan_set_quota(
        &self,
        caller: &super::Caller,
        src: &str,
        ns: i64,
        space: i64,
        storage_type: Option<u8>,
    ) -> Result<Vec<Op>, FsError> {
        let legal = |v: i64| v >= 0 || v == NONE;
        if !legal(ns) || !legal(space) {
            return Err(FsError::IllegalArgument(format!(
                "Illegal value for nsQuota or ssQuota : {ns} and {space}"
            )));
        }
        if storage_type.is_some() && ns != DONT_SET {
            return Err(FsError::UnsupportedAction(format!(
                "Failed to set quota by storage type because eitherdfs.quota.by.storage.type.enabled \
                 is set to true or nsQuota value is illegal {ns}"
            )));
        }
        let (slot, path) =
            self.resolve_checked_or(caller, src, |p| format!("Directory does not exist: {p}"))?;
        if !self.inode(slot).is_dir() {
            return Err(FsError::NotDirectory(format!(
                "`{path}': Is not a directory"
            )));
        }
        let (old_ns, old_space, old_types) = self.quotas_at(slot);
        if let Some(t) = storage_type {
            let i = type_index(t)
                .ok_or_else(|| FsError::IllegalArgument(format!("no storage type {t}")))?;
            let quota = if space == DONT_SET {
                old_types[i]
            } else {
                space
            };
            if quota == old_types[i] {
                return Ok(Vec::new());
            }
            return Ok(vec![Op::SetTypeQuota {
                path,
                storage_type: t,
                quota,
            }]);
        }
        let ns = match ns {
            DONT_SET => old_ns,
            // HDFS takes clearing the root's namespace quota as going back to its first.
            NONE if slot == ROOT_SLOT => i64::MAX,
            ns => ns,
        };
        let space = if space == DONT_SET { old_space } else { space };
        if (ns, space) == (old_ns, old_space) {
            return Ok(Vec::new());
        }
        Ok(vec![Op::SetQuota { path, ns, space }])
    }

    /// A directory's quotas as HDFS reports them: the root always has a namespace quota
    /// (`Long.MAX_VALUE` until one is set), which Ferrite keeps only once it is set, so
    /// that a namespace without quotas pays nothing for the root's.
    pub fn quotas_at(&self, slot: Slot) -> (i64, i64, [i64; N_TYPES]) {
        match self.quota_of(slot) {
            Some(q) => (q.ns, q.space, q.types),
            None if slot == ROOT_SLOT => (i64::MAX, NONE, [NONE; N_TYPES]),
            None => (NONE, NONE, [NONE; N_TYPES]),
        }
    }
}

/// A directory's quotas and, where it has a quota, what its subtree uses as quotas count
/// it (`getQuotaUsage`, and the quota half of `getContentSummary`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaView {
    pub ns: i64,
    pub space: i64,
    pub types: [i64; N_TYPES],
    /// `None` where the directory keeps no usage (no quota of its own).
    pub used: Option<Usage>,
}

impl Namespace {
    /// The quota view of `src` (after the traverse check).
    pub fn quota_view(&self, caller: &super::Caller, src: &str) -> Result<QuotaView, FsError> {
        if let Some(r) = self.snapshot_lookup(caller, src)? {
            // A snapshot keeps no quota of its own.
            r.ok_or_else(|| FsError::file_not_found(src))?;
            return Ok(QuotaView {
                ns: NONE,
                space: NONE,
                types: [NONE; N_TYPES],
                used: None,
            });
        }
        let slot = self.resolve_slot(caller, src)?;
        let (ns, space, types) = self.quotas_at(slot);
        Ok(QuotaView {
            ns,
            space,
            types,
            used: self.quota_of(slot).map(|q| {
                let mut used = q.used;
                used += self.snapshot_usage(slot);
                used
            }),
        })
    }
}
