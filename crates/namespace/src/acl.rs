//! POSIX ACLs as HDFS keeps and checks them: the entry model, the four transformations its
//! calls make (`AclTransformation`), how an ACL is split between the permission bits and
//! the inode's entries (`AclStorage`), default-ACL inheritance, and the check with named
//! entries and the mask (`FSPermissionChecker`). Everything here is pure; the namespace's
//! calls are in [`super::acl_ops`].
//!
//! Storage follows HDFS, so that `chmod` keeps working unchanged on an inode with an ACL:
//! the owner and other entries are the permission's user and other bits, the access mask
//! is its group bits, and only the rest (named users, the owning group, named groups, and
//! every default entry) is kept as entries.

use std::cmp::Ordering;
use std::fmt;

use crate::error::FsError;

/// HDFS's most entries in an ACL (and in one request's spec).
pub const MAX_ENTRIES: usize = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Access = 0,
    Default = 1,
}

/// Entry types, in the order an ACL sorts them (and numbered as `AclEntryTypeProto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    User = 0,
    Group = 1,
    Mask = 2,
    Other = 3,
}

impl Kind {
    pub fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            0 => Kind::User,
            1 => Kind::Group,
            2 => Kind::Mask,
            3 => Kind::Other,
            _ => return None,
        })
    }

    fn word(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Group => "group",
            Kind::Mask => "mask",
            Kind::Other => "other",
        }
    }
}

/// One entry. `perm` is rwx in the low three bits; a removal spec's entries carry none
/// (`perm` is then ignored, as HDFS ignores it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AclEntry {
    pub scope: Scope,
    pub kind: Kind,
    pub name: Option<String>,
    pub perm: u8,
}

impl AclEntry {
    pub fn new(scope: Scope, kind: Kind, name: Option<&str>, perm: u8) -> Self {
        AclEntry {
            scope,
            kind,
            name: name.map(str::to_string),
            perm: perm & 7,
        }
    }

    /// HDFS's order: access before default; user, group, mask, other; the unnamed entry
    /// before the named ones, which go by name.
    fn key_cmp(&self, o: &AclEntry) -> Ordering {
        (self.scope, self.kind)
            .cmp(&(o.scope, o.kind))
            .then_with(|| self.name.cmp(&o.name))
    }

    fn same_key(&self, o: &AclEntry) -> bool {
        self.key_cmp(o) == Ordering::Equal
    }

    fn base(scope: Scope, kind: Kind, perm: u8) -> Self {
        AclEntry::new(scope, kind, None, perm)
    }

    /// Parses HDFS's text form, `[default:]type:[name][:perm]` (the form `setfacl`
    /// specs and WebHDFS's `aclspec` use), with `AclEntry.parseAclEntry`'s messages.
    /// `with_perm` is false for a removal spec, whose entries name no permission.
    pub fn parse(s: &str, with_perm: bool) -> Result<AclEntry, FsError> {
        let invalid = || FsError::IllegalArgument(format!("Invalid <aclSpec> : {s}"));
        // Java's split: trailing empty fields are dropped.
        let mut parts: Vec<&str> = s.split(':').collect();
        while parts.last() == Some(&"") {
            parts.pop();
        }
        let mut i = 0;
        let scope = if parts.first() == Some(&"default") {
            i += 1;
            Scope::Default
        } else {
            Scope::Access
        };
        let kind = match parts
            .get(i)
            .ok_or_else(invalid)?
            .to_ascii_lowercase()
            .as_str()
        {
            "user" => Kind::User,
            "group" => Kind::Group,
            "mask" => Kind::Mask,
            "other" => Kind::Other,
            _ => {
                return Err(FsError::IllegalArgument(format!(
                    "Invalid type of acl in <aclSpec> :{s}"
                )))
            }
        };
        i += 1;
        let name = parts.get(i).copied().filter(|n| !n.is_empty());
        if i < parts.len() {
            i += 1;
        }
        let mut perm = 0;
        if with_perm {
            let p = parts.get(i).ok_or_else(invalid)?;
            perm = parse_action(p).ok_or_else(|| {
                FsError::IllegalArgument(format!("Invalid permission in <aclSpec> : {s}"))
            })?;
            i += 1;
        }
        if parts.len() > i {
            return Err(invalid());
        }
        Ok(AclEntry::new(scope, kind, name, perm))
    }
}

/// HDFS's `AclEntry.toString`: `default:user:bruce:rwx`, `group::r-x`.
impl fmt::Display for AclEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.scope == Scope::Default {
            f.write_str("default:")?;
        }
        write!(
            f,
            "{}:{}:{}",
            self.kind.word(),
            self.name.as_deref().unwrap_or(""),
            action_symbol(self.perm)
        )
    }
}

/// `rwx`, `r-x`, `---`.
pub fn action_symbol(perm: u8) -> String {
    [(4, 'r'), (2, 'w'), (1, 'x')]
        .iter()
        .map(|&(bit, c)| if perm & bit != 0 { c } else { '-' })
        .collect()
}

fn parse_action(s: &str) -> Option<u8> {
    let b = s.as_bytes();
    if b.len() != 3 {
        return None;
    }
    let mut perm = 0;
    for (i, (bit, c)) in [(4, b'r'), (2, b'w'), (1, b'x')].into_iter().enumerate() {
        match b[i] {
            x if x == c => perm |= bit,
            b'-' => {}
            _ => return None,
        }
    }
    Some(perm)
}

fn acl_error(m: impl Into<String>) -> FsError {
    FsError::Acl(m.into())
}

/// At most [`MAX_ENTRIES`] in each scope.
fn check_max_entries(entries: &[AclEntry]) -> Result<(), FsError> {
    for (scope, word) in [(Scope::Access, "access"), (Scope::Default, "default")] {
        let n = entries.iter().filter(|e| e.scope == scope).count();
        if n > MAX_ENTRIES {
            return Err(acl_error(format!(
                "Invalid ACL: ACL has {n} {word} entries, which exceeds maximum of {MAX_ENTRIES}."
            )));
        }
    }
    Ok(())
}

/// A spec from a request, checked for size (before any work is done on it) and sorted.
fn validated_spec(mut spec: Vec<AclEntry>) -> Result<Vec<AclEntry>, FsError> {
    spec.sort_by(AclEntry::key_cmp);
    check_max_entries(&spec)?;
    Ok(spec)
}

fn find<'a>(list: &'a [AclEntry], key: &AclEntry) -> Option<&'a AclEntry> {
    list.iter().find(|e| e.same_key(key))
}

/// What a transformation collects before the masks are worked out.
#[derive(Default)]
struct Builder {
    entries: Vec<AclEntry>,
    /// Per scope (index): the mask given (by the spec, or kept from the old ACL).
    provided_mask: [Option<AclEntry>; 2],
    /// Per scope: the mask was added or removed.
    mask_dirty: [bool; 2],
    /// Per scope: some entry was added or removed.
    scope_dirty: [bool; 2],
}

impl Builder {
    fn keep_or_mask(&mut self, e: AclEntry) {
        if e.kind == Kind::Mask {
            let scope = e.scope as usize;
            self.provided_mask[scope] = Some(e);
        } else {
            self.entries.push(e);
        }
    }

    fn take_changed(&mut self, e: AclEntry) {
        self.scope_dirty[e.scope as usize] = true;
        if e.kind == Kind::Mask {
            self.mask_dirty[e.scope as usize] = true;
        }
        self.keep_or_mask(e);
    }

    fn finish(mut self) -> Result<Vec<AclEntry>, FsError> {
        copy_defaults_if_needed(&mut self.entries);
        self.calculate_masks()?;
        build_and_validate(self.entries)
    }

    /// A mask for every scope that needs one: the one given (or kept, in a scope that did
    /// not change), else the union of the group class (the owning group and every named
    /// entry). A scope needs one when it has named entries, or had a mask before: as in
    /// HDFS, an ACL whose last named entry goes keeps a recalculated mask (and stays
    /// extended) until `removeAcl` or a `setAcl` without one makes it minimal again.
    fn calculate_masks(&mut self) -> Result<(), FsError> {
        let mut found = [false; 2];
        let mut union = [0u8; 2];
        let mut needed = [false; 2];
        for e in &self.entries {
            let s = e.scope as usize;
            found[s] = true;
            if e.kind == Kind::Group || e.name.is_some() {
                union[s] |= e.perm;
            }
            if e.name.is_some() {
                needed[s] = true;
            }
        }
        for scope in [Scope::Access, Scope::Default] {
            let s = scope as usize;
            if !found[s] {
                continue;
            }
            let provided = self.provided_mask[s].take();
            match provided {
                None if needed[s] && self.mask_dirty[s] => {
                    return Err(acl_error(
                        "Invalid ACL: mask is required and cannot be deleted.",
                    ));
                }
                Some(m) if !self.scope_dirty[s] || self.mask_dirty[s] => self.entries.push(m),
                had if needed[s] || had.is_some() => {
                    self.entries
                        .push(AclEntry::base(scope, Kind::Mask, union[s]))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Default user, group and other entries the spec left out are copied from the access
/// ones.
fn copy_defaults_if_needed(entries: &mut Vec<AclEntry>) {
    entries.sort_by(AclEntry::key_cmp);
    if !entries.iter().any(|e| e.scope == Scope::Default) {
        return;
    }
    let mut copied = Vec::new();
    for kind in [Kind::User, Kind::Group, Kind::Other] {
        let default_key = AclEntry::base(Scope::Default, kind, 0);
        if find(entries, &default_key).is_some() {
            continue;
        }
        if let Some(a) = find(entries, &AclEntry::base(Scope::Access, kind, 0)) {
            copied.push(AclEntry::base(Scope::Default, kind, a.perm));
        }
    }
    entries.extend(copied);
}

fn build_and_validate(mut entries: Vec<AclEntry>) -> Result<Vec<AclEntry>, FsError> {
    entries.sort_by(AclEntry::key_cmp);
    for pair in entries.windows(2) {
        if pair[0].same_key(&pair[1]) {
            return Err(acl_error(
                "Invalid ACL: multiple entries with same scope, type and name.",
            ));
        }
    }
    if let Some(e) = entries
        .iter()
        .find(|e| e.name.is_some() && matches!(e.kind, Kind::Mask | Kind::Other))
    {
        return Err(acl_error(format!(
            "Invalid ACL: this entry type must not have a name: {e}."
        )));
    }
    check_max_entries(&entries)?;
    let has_default = entries.iter().any(|e| e.scope == Scope::Default);
    for kind in [Kind::User, Kind::Group, Kind::Other] {
        if find(&entries, &AclEntry::base(Scope::Access, kind, 0)).is_none() {
            return Err(acl_error(
                "Invalid ACL: the user, group and other entries are required.",
            ));
        }
        if has_default && find(&entries, &AclEntry::base(Scope::Default, kind, 0)).is_none() {
            return Err(acl_error(
                "Invalid default ACL: the user, group and other entries are required.",
            ));
        }
    }
    Ok(entries)
}

/// `modifyAclEntries`: the spec's entries replace those with the same key, or are added.
pub fn merge(existing: &[AclEntry], spec: Vec<AclEntry>) -> Result<Vec<AclEntry>, FsError> {
    let spec = validated_spec(spec)?;
    let mut b = Builder::default();
    let mut used = vec![false; spec.len()];
    for e in existing {
        match spec.iter().position(|s| s.same_key(e)) {
            Some(i) => {
                used[i] = true;
                b.take_changed(spec[i].clone());
            }
            None => b.keep_or_mask(e.clone()),
        }
    }
    for (s, used) in spec.into_iter().zip(used) {
        if !used {
            b.take_changed(s);
        }
    }
    b.finish()
}

/// `removeAclEntries`: entries with a key in the spec go.
pub fn filter_by_spec(
    existing: &[AclEntry],
    spec: Vec<AclEntry>,
) -> Result<Vec<AclEntry>, FsError> {
    let spec = validated_spec(spec)?;
    let mut b = Builder::default();
    for e in existing {
        if find(&spec, e).is_some() {
            b.scope_dirty[e.scope as usize] = true;
            if e.kind == Kind::Mask {
                b.mask_dirty[e.scope as usize] = true;
            }
        } else {
            b.keep_or_mask(e.clone());
        }
    }
    b.finish()
}

/// `removeDefaultAcl`: the access entries alone.
pub fn filter_default(existing: &[AclEntry]) -> Result<Vec<AclEntry>, FsError> {
    build_and_validate(
        existing
            .iter()
            .filter(|e| e.scope == Scope::Access)
            .cloned()
            .collect(),
    )
}

/// `setAcl`: each scope the spec names is replaced whole; a scope it does not name stays.
pub fn replace(existing: &[AclEntry], spec: Vec<AclEntry>) -> Result<Vec<AclEntry>, FsError> {
    let spec = validated_spec(spec)?;
    let mut b = Builder::default();
    for s in spec {
        b.take_changed(s);
    }
    for e in existing {
        if !b.scope_dirty[e.scope as usize] {
            b.keep_or_mask(e.clone());
        }
    }
    b.finish()
}

/// rwx of the user, group and other classes of a permission.
fn class(perm: u16, shift: u16) -> u8 {
    ((perm >> shift) & 7) as u8
}

fn with_classes(user: u8, group: u8, other: u8, keep: u16) -> u16 {
    (u16::from(user) << 6) | (u16::from(group) << 3) | u16::from(other) | (keep & 0o1000)
}

/// The whole ACL of an inode, from its permission and its entries (`stored`): what every
/// change starts from. Without an access ACL, the three entries its bits give.
pub fn logical(perm: u16, stored: &[AclEntry]) -> Vec<AclEntry> {
    let (access, default): (Vec<&AclEntry>, Vec<&AclEntry>) =
        stored.iter().partition(|e| e.scope == Scope::Access);
    let mut out = Vec::with_capacity(stored.len() + 3);
    out.push(AclEntry::base(Scope::Access, Kind::User, class(perm, 6)));
    if access.is_empty() {
        out.push(AclEntry::base(Scope::Access, Kind::Group, class(perm, 3)));
    } else {
        out.extend(access.into_iter().cloned());
        out.push(AclEntry::base(Scope::Access, Kind::Mask, class(perm, 3)));
    }
    out.push(AclEntry::base(Scope::Access, Kind::Other, class(perm, 0)));
    out.extend(default.into_iter().cloned());
    out
}

/// A valid, sorted ACL split for storage: the new permission (sticky bit kept from `perm`)
/// and the entries to keep (none for an ACL the bits alone express). `path` is for the
/// message refusing a default ACL on a file.
pub fn to_storage(
    acl: &[AclEntry],
    perm: u16,
    is_dir: bool,
    path: &str,
) -> Result<(u16, Vec<AclEntry>), FsError> {
    if acl.len() == 3 {
        return Ok((
            with_classes(acl[0].perm, acl[1].perm, acl[2].perm, perm),
            Vec::new(),
        ));
    }
    let pivot = acl
        .iter()
        .position(|e| e.scope == Scope::Default)
        .unwrap_or(acl.len());
    let (access, default) = acl.split_at(pivot);
    if !default.is_empty() && !is_dir {
        return Err(acl_error(format!(
            "Invalid ACL: only directories may have a default ACL. Path: {path}"
        )));
    }
    Ok(split_extended(access, default, perm))
}

/// An extended ACL's permission (owner, mask or group, other) and kept entries.
fn split_extended(access: &[AclEntry], default: &[AclEntry], perm: u16) -> (u16, Vec<AclEntry>) {
    let n = access.len();
    let mut kept = Vec::with_capacity(n.saturating_sub(3) + default.len());
    if n > 3 {
        // Between the owner entry and the mask and other entries.
        kept.extend_from_slice(&access[1..n - 2]);
    }
    kept.extend_from_slice(default);
    let bits = with_classes(access[0].perm, access[n - 2].perm, access[n - 1].perm, perm);
    (bits, kept)
}

/// The permission once the ACL is removed: the owning group's entry goes back into the
/// group bits, where the mask was.
pub fn without_acl(perm: u16, stored: &[AclEntry]) -> u16 {
    if stored.first().map(|e| e.scope) != Some(Scope::Access) {
        return perm;
    }
    match stored
        .iter()
        .find(|e| e.scope == Scope::Access && e.kind == Kind::Group && e.name.is_none())
    {
        Some(g) => (perm & !0o070) | (u16::from(g.perm) << 3),
        None => perm,
    }
}

/// What a new inode gets under a directory with a default ACL (`parent_default`, not
/// empty): its access ACL is the default one filtered by `mode` (the create's permission),
/// and a directory takes the default ACL too. Answers the permission and kept entries.
pub fn inherit(parent_default: &[AclEntry], mode: u16, is_dir: bool) -> (u16, Vec<AclEntry>) {
    let minimal = parent_default.len() == 3;
    let access: Vec<AclEntry> = parent_default
        .iter()
        .map(|e| {
            let filter = match (e.kind, &e.name) {
                (Kind::User, None) => class(mode, 6),
                (Kind::Group, _) if minimal => class(mode, 3),
                (Kind::Mask, _) => class(mode, 3),
                (Kind::Other, _) => class(mode, 0),
                _ => 7,
            };
            AclEntry {
                scope: Scope::Access,
                perm: e.perm & filter,
                ..e.clone()
            }
        })
        .collect();
    let default: &[AclEntry] = if is_dir { parent_default } else { &[] };
    if access.len() == 3 && default.is_empty() {
        return (
            with_classes(access[0].perm, access[1].perm, access[2].perm, mode),
            Vec::new(),
        );
    }
    split_extended(&access, default, mode)
}

/// Who is asking, as the ACL check needs it.
pub struct Asker<'a> {
    pub user: &'a str,
    pub groups: &'a [String],
    pub is_owner: bool,
    /// The inode's owning group.
    pub owning_group: &'a str,
}

/// HDFS's check of an inode with an access ACL: the owner by the user bits; else a named
/// user entry, or every group entry the caller is in, each through the mask (the group
/// bits); the other bits only when no entry matched.
pub fn allows(perm: u16, stored: &[AclEntry], who: &Asker, access: u8) -> bool {
    if who.is_owner {
        return class(perm, 6) & access == access;
    }
    let mask = class(perm, 3);
    let mut matched = false;
    for e in stored.iter().take_while(|e| e.scope == Scope::Access) {
        match e.kind {
            Kind::User if e.name.as_deref() == Some(who.user) => {
                return e.perm & mask & access == access;
            }
            Kind::Group => {
                let group = e.name.as_deref().unwrap_or(who.owning_group);
                if who.groups.iter().any(|g| g == group) {
                    if e.perm & mask & access == access {
                        return true;
                    }
                    matched = true;
                }
            }
            _ => {}
        }
    }
    !matched && class(perm, 0) & access == access
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> Vec<AclEntry> {
        s.split(',')
            .map(|e| AclEntry::parse(e, true).unwrap())
            .collect()
    }

    fn text(acl: &[AclEntry]) -> String {
        acl.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    #[test]
    fn entries_parse_and_print_in_hdfs_text_form() {
        for s in [
            "user:bruce:rwx",
            "default:group::r-x",
            "mask::r--",
            "other::---",
        ] {
            assert_eq!(AclEntry::parse(s, true).unwrap().to_string(), s);
        }
        let removal = AclEntry::parse("default:user:bruce", false).unwrap();
        assert_eq!(removal.name.as_deref(), Some("bruce"));
        assert!(AclEntry::parse("user:bruce:rwz", true).is_err());
        assert!(AclEntry::parse("nobody:x:rwx", true).is_err());
        assert!(AclEntry::parse("user:a:rwx:x", true).is_err());
        assert_eq!(
            AclEntry::parse("user:bruce:", false)
                .unwrap()
                .name
                .as_deref(),
            Some("bruce")
        );
    }

    #[test]
    fn modify_adds_a_named_entry_and_computes_the_mask() {
        let existing = logical(0o750, &[]);
        let acl = merge(&existing, spec("user:bruce:rwx")).unwrap();
        assert_eq!(
            text(&acl),
            "user::rwx,user:bruce:rwx,group::r-x,mask::rwx,other::---"
        );
        let (perm, kept) = to_storage(&acl, 0o750, false, "/f").unwrap();
        assert_eq!(perm, 0o770, "the mask becomes the group bits");
        assert_eq!(text(&kept), "user:bruce:rwx,group::r-x");
        assert_eq!(text(&logical(perm, &kept)), text(&acl));
        assert_eq!(without_acl(perm, &kept), 0o750);
    }

    #[test]
    fn a_default_spec_gets_its_base_entries_from_the_access_acl() {
        let acl = merge(&logical(0o755, &[]), spec("default:user:bruce:r-x")).unwrap();
        assert_eq!(
            text(&acl),
            "user::rwx,group::r-x,other::r-x,default:user::rwx,default:user:bruce:r-x,\
             default:group::r-x,default:mask::r-x,default:other::r-x"
        );
        assert!(to_storage(&acl, 0o755, false, "/f")
            .unwrap_err()
            .to_string()
            .contains("only directories may have a default ACL"));
        let (perm, kept) = to_storage(&acl, 0o755, true, "/d").unwrap();
        assert_eq!(perm, 0o755, "no access ACL: the bits stay");
        assert_eq!(kept.len(), 5);
    }

    #[test]
    fn removing_the_mask_of_an_acl_that_needs_one_is_refused() {
        let acl = merge(&logical(0o750, &[]), spec("user:bruce:rwx")).unwrap();
        let e = filter_by_spec(&acl, spec("mask::---")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Invalid ACL: mask is required and cannot be deleted."
        );
        // With no named entry left the mask stays, recalculated from the group class (as
        // HDFS keeps it): the ACL is still extended until it is removed.
        let left = filter_by_spec(&acl, spec("user:bruce:---")).unwrap();
        assert_eq!(text(&left), "user::rwx,group::r-x,mask::r-x,other::---");
        let (perm, kept) = to_storage(&left, 0o770, false, "/f").unwrap();
        assert_eq!((perm, text(&kept)), (0o750, "group::r-x".to_string()));
        assert_eq!(text(&logical(perm, &kept)), text(&left));
    }

    #[test]
    fn set_replaces_only_the_scopes_it_names() {
        let acl = merge(&logical(0o755, &[]), spec("default:user:bruce:r-x")).unwrap();
        let set = replace(&acl, spec("user::rw-,group::r--,other::---")).unwrap();
        assert!(text(&set).starts_with("user::rw-,group::r--,other::---,default:"));
        assert!(replace(&acl, spec("user::rw-")).is_err());
        assert_eq!(filter_default(&acl).unwrap().len(), 3);
    }

    #[test]
    fn named_entries_are_checked_through_the_mask_and_other_only_without_a_match() {
        let acl = merge(
            &logical(0o700, &[]),
            spec("user:bruce:rwx,group:eng:r--,mask::r-x"),
        )
        .unwrap();
        let (perm, kept) = to_storage(&acl, 0o700, false, "/f").unwrap();
        let ask = |user: &'static str, groups: &'static [String]| Asker {
            user,
            groups,
            is_owner: false,
            owning_group: "staff",
        };
        assert!(allows(perm, &kept, &ask("bruce", &[]), 4 | 1));
        assert!(
            !allows(perm, &kept, &ask("bruce", &[]), 2),
            "the mask takes w away"
        );
        let eng: &'static [String] = Box::leak(vec!["eng".to_string()].into_boxed_slice());
        assert!(allows(perm, &kept, &ask("carol", eng), 4));
        assert!(!allows(perm, &kept, &ask("carol", eng), 1));
        assert!(!allows(perm, &kept, &ask("dave", &[]), 4), "other is ---");
    }

    #[test]
    fn a_new_child_inherits_the_default_acl_filtered_by_its_mode() {
        let acl = merge(&logical(0o755, &[]), spec("default:user:bruce:rwx")).unwrap();
        let (_, kept) = to_storage(&acl, 0o755, true, "/d").unwrap();
        let default: Vec<AclEntry> = kept
            .into_iter()
            .filter(|e| e.scope == Scope::Default)
            .collect();
        let (perm, file_kept) = inherit(&default, 0o644, false);
        assert_eq!(text(&file_kept), "user:bruce:rwx,group::r-x");
        assert_eq!(
            perm,
            0o644 & 0o7 | 0o600 | (0o7 & 0o4) << 3,
            "mask filtered by the mode's group bits"
        );
        let (_, dir_kept) = inherit(&default, 0o755, true);
        assert_eq!(
            dir_kept.len(),
            2 + default.len(),
            "a directory takes the default ACL too"
        );
    }
}
