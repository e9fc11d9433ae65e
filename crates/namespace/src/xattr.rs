//! Extended attributes, as HDFS keeps them: a list of `(namespace, name, value)` per inode,
//! set, read, listed and removed with HDFS's rules and messages (its `FSDirXAttrOp` and
//! `XAttrPermissionFilter`).
//!
//! Few inodes have any, so they live beside the inodes, not in them: a map from slot to
//! the inode's optional parts ([`Features`]), empty for a namespace without xattrs. An
//! inode that goes takes its entry with it (`remove_subtree`).

use super::inode::{Slot, STICKY};
use super::perm::{Caller, READ, WRITE};
use super::{Namespace, Op};
use crate::error::FsError;

/// HDFS's xattr namespaces, numbered as `XAttrProto.XAttrNamespaceProto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum XAttrNs {
    User = 0,
    Trusted = 1,
    Security = 2,
    System = 3,
    Raw = 4,
}

impl XAttrNs {
    pub fn from_u8(v: u8) -> Option<XAttrNs> {
        Some(match v {
            0 => XAttrNs::User,
            1 => XAttrNs::Trusted,
            2 => XAttrNs::Security,
            3 => XAttrNs::System,
            4 => XAttrNs::Raw,
            _ => return None,
        })
    }

    pub fn prefix(self) -> &'static str {
        match self {
            XAttrNs::User => "user",
            XAttrNs::Trusted => "trusted",
            XAttrNs::Security => "security",
            XAttrNs::System => "system",
            XAttrNs::Raw => "raw",
        }
    }

    /// A prefixed name's namespace (case-insensitive, as Hadoop's `XAttrHelper`) and the
    /// rest, or HDFS's message for a name without one.
    pub fn split(prefixed: &str) -> Result<(XAttrNs, &str), FsError> {
        let bad = || {
            FsError::IllegalArgument(
                "An XAttr name must be prefixed with user/trusted/security/system/raw, \
                 followed by a '.'"
                    .into(),
            )
        };
        let (prefix, name) = prefixed.split_once('.').ok_or_else(bad)?;
        let ns = match prefix.to_ascii_lowercase().as_str() {
            "user" => XAttrNs::User,
            "trusted" => XAttrNs::Trusted,
            "security" => XAttrNs::Security,
            "system" => XAttrNs::System,
            "raw" => XAttrNs::Raw,
            _ => return Err(bad()),
        };
        if name.is_empty() {
            return Err(FsError::IllegalArgument(
                "XAttr name cannot be empty.".into(),
            ));
        }
        Ok((ns, name))
    }
}

/// HDFS's xattr that marks a file unreadable even by the superuser; it takes no value.
const UNREADABLE_BY_SUPERUSER: &str = "hdfs.unreadable.by.superuser";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XAttr {
    pub ns: XAttrNs,
    pub name: String,
    /// `None` for an attribute named without a value (listXAttrs' answers, and what the
    /// caller of get or remove names).
    pub value: Option<Vec<u8>>,
}

impl XAttr {
    pub fn prefixed(&self) -> String {
        format!("{}.{}", self.ns.prefix(), self.name)
    }

    fn same_name(&self, o: &XAttr) -> bool {
        self.ns == o.ns && self.name == o.name
    }
}

/// `setXAttr`'s flags (`XAttrSetFlagProto`).
pub const XATTR_CREATE: u32 = 1;
pub const XATTR_REPLACE: u32 = 2;

/// The configured limits (`dfs.namenode.xattrs.enabled`,
/// `dfs.namenode.fs-limits.max-xattrs-per-inode`, `…max-xattr-size`).
#[derive(Clone, Copy, Debug)]
pub struct XAttrLimits {
    pub enabled: bool,
    pub per_inode: usize,
    /// Name plus value, in bytes; 0 is no limit.
    pub size: usize,
}

impl Default for XAttrLimits {
    /// HDFS 3.4's defaults.
    fn default() -> Self {
        XAttrLimits {
            enabled: true,
            per_inode: 32,
            size: 16384,
        }
    }
}

/// Whether `caller` may name `x` at all (`XAttrPermissionFilter.checkPermissionForApi`).
/// Ferrite has no `/.reserved/raw` paths, so `raw.` attributes are never reachable.
fn check_namespace(caller: &Caller, x: &XAttr) -> Result<(), FsError> {
    if x.ns == XAttrNs::User || (x.ns == XAttrNs::Trusted && caller.superuser) {
        return Ok(());
    }
    if x.ns == XAttrNs::Security && x.name == UNREADABLE_BY_SUPERUSER {
        if x.value.is_some() {
            return Err(FsError::AccessDenied(format!(
                "Attempt to set a value for 'security.{UNREADABLE_BY_SUPERUSER}'. \
                 Values are not allowed for this xattr."
            )));
        }
        return Ok(());
    }
    Err(FsError::AccessDenied(format!(
        "User doesn't have permission for xattr: {}",
        x.prefixed()
    )))
}

/// What `caller` may see of an inode's attributes (`filterXAttrsForApi`).
fn visible(caller: &Caller, x: &XAttr) -> bool {
    match x.ns {
        XAttrNs::User => true,
        XAttrNs::Trusted => caller.superuser,
        XAttrNs::Security => x.name == UNREADABLE_BY_SUPERUSER,
        XAttrNs::System | XAttrNs::Raw => false,
    }
}

/// Counted against the per-inode limit.
fn user_visible(x: &XAttr) -> bool {
    matches!(x.ns, XAttrNs::User | XAttrNs::Trusted)
}

fn disabled() -> FsError {
    FsError::Io(
        "The XAttr operation has been rejected.  Support for XAttrs has been disabled by \
         setting dfs.namenode.xattrs.enabled to false."
            .into(),
    )
}

fn not_found() -> FsError {
    FsError::XAttrNotFound("At least one of the attributes provided was not found.".into())
}

impl Namespace {
    /// An inode's attributes, in stored order.
    pub fn xattrs_of(&self, slot: Slot) -> &[XAttr] {
        self.features.get(&slot).map_or(&[], |f| &f.xattrs)
    }

    /// HDFS refuses the superuser a file marked `security.hdfs.unreadable.by.superuser`
    /// (so that an administrator cannot read data its owners protect): checked where the
    /// file's blocks are located, when permissions are on.
    pub fn check_unreadable_by_superuser(
        &self,
        caller: &Caller,
        slot: Slot,
    ) -> Result<(), FsError> {
        if !caller.superuser || !caller.checks_enabled || self.features.is_empty() {
            return Ok(());
        }
        let marked = self
            .xattrs_of(slot)
            .iter()
            .any(|x| x.ns == XAttrNs::Security && x.name == UNREADABLE_BY_SUPERUSER);
        if marked {
            return Err(FsError::AccessDenied(format!(
                "Access is denied for {} since the superuser is not allowed to perform this \
                 operation.",
                caller.user
            )));
        }
        Ok(())
    }

    /// The inode at `src` and its normalized path; a missing one in HDFS's words for the
    /// xattr calls, which differ from its other calls'.
    fn resolve_for_xattrs(&self, caller: &Caller, src: &str) -> Result<(Slot, String), FsError> {
        self.resolve_checked_or(caller, src, |path| format!("cannot find {path}"))
    }

    /// HDFS's rule for changing an attribute of the user namespace: write access, or in a
    /// sticky directory the owner (or the superuser).
    fn check_xattr_change(&self, caller: &Caller, slot: Slot, x: &XAttr) -> Result<(), FsError> {
        if x.ns != XAttrNs::User || caller.bypass() {
            return Ok(());
        }
        let inode = self.inode(slot);
        if inode.is_dir() && inode.perm & STICKY != 0 {
            self.check_owner(caller, slot)
        } else {
            self.check_access(caller, slot, WRITE)
        }
    }

    pub fn plan_set_xattr(
        &self,
        caller: &Caller,
        src: &str,
        x: XAttr,
        flags: u32,
        limits: XAttrLimits,
    ) -> Result<Vec<Op>, FsError> {
        if !limits.enabled {
            return Err(disabled());
        }
        let value = x.value.as_deref().unwrap_or_default();
        let size = x.name.len() + value.len();
        if limits.size > 0 && size > limits.size {
            return Err(FsError::IllegalArgument(format!(
                "The XAttr is too big. The maximum combined size of the name and value is \
                 {}, but the total size is {size}",
                limits.size
            )));
        }
        check_namespace(caller, &x)?;
        let (slot, path) = self.resolve_for_xattrs(caller, src)?;
        self.check_xattr_change(caller, slot, &x)?;
        let existing = self.xattrs_of(slot);
        let exists = existing.iter().any(|a| a.same_name(&x));
        if exists && flags & XATTR_REPLACE == 0 {
            return Err(FsError::Io(format!(
                "XAttr: {} already exists. The REPLACE flag must be specified.",
                x.name
            )));
        }
        if !exists && flags & XATTR_CREATE == 0 {
            return Err(FsError::Io(format!(
                "XAttr: {} does not exist. The CREATE flag must be specified.",
                x.name
            )));
        }
        let others = existing
            .iter()
            .filter(|a| user_visible(a) && !a.same_name(&x))
            .count();
        if others + usize::from(user_visible(&x)) > limits.per_inode {
            return Err(FsError::Io(format!(
                "Cannot add additional XAttr to inode, would exceed limit of {}",
                limits.per_inode
            )));
        }
        if x.ns == XAttrNs::Security && self.inode(slot).file().is_none() {
            return Err(FsError::Io(format!(
                "Can only set 'security.{UNREADABLE_BY_SUPERUSER}' on a file."
            )));
        }
        Ok(vec![Op::SetXAttr {
            path,
            ns: x.ns as u8,
            name: x.name,
            value: x.value,
        }])
    }

    pub fn plan_remove_xattr(
        &self,
        caller: &Caller,
        src: &str,
        x: XAttr,
        limits: XAttrLimits,
    ) -> Result<Vec<Op>, FsError> {
        if !limits.enabled {
            return Err(disabled());
        }
        check_namespace(caller, &x)?;
        let (slot, path) = self.resolve_for_xattrs(caller, src)?;
        self.check_xattr_change(caller, slot, &x)?;
        if x.ns == XAttrNs::Security && x.name == UNREADABLE_BY_SUPERUSER {
            return Err(FsError::AccessDenied(format!(
                "The xattr 'security.{UNREADABLE_BY_SUPERUSER}' can not be deleted."
            )));
        }
        if !self.xattrs_of(slot).iter().any(|a| a.same_name(&x)) {
            return Err(FsError::Io(
                "No matching attributes found for remove operation".into(),
            ));
        }
        Ok(vec![Op::RemoveXAttr {
            path,
            ns: x.ns as u8,
            name: x.name,
        }])
    }

    /// `getXAttrs`: every attribute the caller may see (`wanted` empty), or exactly the
    /// ones named, in the order named.
    pub fn get_xattrs(
        &self,
        caller: &Caller,
        src: &str,
        wanted: &[XAttr],
        limits: XAttrLimits,
    ) -> Result<Vec<XAttr>, FsError> {
        if !limits.enabled {
            return Err(disabled());
        }
        for x in wanted {
            check_namespace(caller, x)?;
        }
        let all = self.readable_xattrs(caller, src)?;
        if wanted.is_empty() {
            return Ok(all);
        }
        wanted
            .iter()
            .map(|w| {
                all.iter()
                    .find(|a| a.same_name(w))
                    .cloned()
                    .ok_or_else(not_found)
            })
            .collect()
    }

    /// `listXAttrs`: the names the caller may see, without values.
    pub fn list_xattrs(
        &self,
        caller: &Caller,
        src: &str,
        limits: XAttrLimits,
    ) -> Result<Vec<XAttr>, FsError> {
        if !limits.enabled {
            return Err(disabled());
        }
        let mut all = self.readable_xattrs(caller, src)?;
        for x in &mut all {
            x.value = None;
        }
        Ok(all)
    }

    /// The attributes of `src` the caller may see (a `.snapshot` path: as it shows them).
    fn readable_xattrs(&self, caller: &Caller, src: &str) -> Result<Vec<XAttr>, FsError> {
        let a = self.resolve_attrs(caller, src, |path| format!("cannot find {path}"))?;
        self.check_access_with(caller, &a, READ)?;
        Ok(a.xattrs()
            .iter()
            .filter(|x| visible(caller, x))
            .cloned()
            .collect())
    }

    /// Applies a set: the attribute goes first, replacing one of that name (HDFS lists the
    /// attributes just set before the others).
    pub(super) fn apply_set_xattr(&mut self, slot: Slot, x: XAttr) {
        let list = &mut self.features.entry(slot).or_default().xattrs;
        list.retain(|a| !a.same_name(&x));
        list.insert(0, x);
    }

    pub(super) fn apply_remove_xattr(&mut self, slot: Slot, ns: XAttrNs, name: &str) {
        if let Some(f) = self.features.get_mut(&slot) {
            f.xattrs.retain(|a| !(a.ns == ns && a.name == name));
            if f.is_empty() {
                self.features.remove(&slot);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, value: &[u8]) -> XAttr {
        XAttr {
            ns: XAttrNs::User,
            name: name.into(),
            value: Some(value.to_vec()),
        }
    }

    fn ns_with_file() -> (Namespace, Caller) {
        let su = Caller::superuser("hdfs");
        let mut ns = Namespace::new("hdfs", "supergroup", 1);
        for op in ns.plan_mkdirs(&su, "/d", 0o755, true, 2).unwrap().ops {
            ns.apply(&op).unwrap();
        }
        (ns, su)
    }

    fn set(ns: &mut Namespace, su: &Caller, x: XAttr, limits: XAttrLimits) -> Result<(), FsError> {
        for op in ns.plan_set_xattr(su, "/d", x, XATTR_CREATE | XATTR_REPLACE, limits)? {
            ns.apply(&op).unwrap();
        }
        Ok(())
    }

    #[test]
    fn the_per_inode_limit_counts_user_and_trusted_attributes_only() {
        let (mut ns, su) = ns_with_file();
        let limits = XAttrLimits {
            per_inode: 2,
            ..Default::default()
        };
        set(&mut ns, &su, user("a", b"1"), limits).unwrap();
        set(&mut ns, &su, user("b", b"2"), limits).unwrap();
        // Replacing one is not adding one.
        set(&mut ns, &su, user("a", b"3"), limits).unwrap();
        let e = set(&mut ns, &su, user("c", b"4"), limits).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Cannot add additional XAttr to inode, would exceed limit of 2"
        );
        let slot = ns.existing("/d").unwrap();
        let names: Vec<&str> = ns.xattrs_of(slot).iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["a", "b"], "the one set last comes first");
    }

    #[test]
    fn size_counts_name_and_value_and_zero_turns_it_off() {
        let (mut ns, su) = ns_with_file();
        let limits = XAttrLimits {
            size: 10,
            ..Default::default()
        };
        set(&mut ns, &su, user("abcde", b"12345"), limits).unwrap();
        let e = set(&mut ns, &su, user("abcde", b"123456"), limits).unwrap_err();
        assert!(
            e.to_string().contains("is 10, but the total size is 11"),
            "{e}"
        );
        let off = XAttrLimits {
            size: 0,
            ..Default::default()
        };
        set(&mut ns, &su, user("abcde", &[0; 100_000]), off).unwrap();
        let disabled = XAttrLimits {
            enabled: false,
            ..Default::default()
        };
        assert!(ns
            .list_xattrs(&su, "/d", disabled)
            .unwrap_err()
            .to_string()
            .contains("dfs.namenode.xattrs.enabled to false"));
    }

    #[test]
    fn a_file_marked_unreadable_by_the_superuser_is_refused_to_it_alone() {
        let (mut ns, su) = ns_with_file();
        let args = crate::plan::CreateArgs {
            src: "/d/f",
            masked: 0o644,
            unmasked: None,
            client_name: "c",
            client_machine: "m",
            create: true,
            overwrite: false,
            create_parent: false,
            replication: 1,
            block_size: 1 << 20,
        };
        for op in ns.plan_create(&su, &args, 3).unwrap().ops {
            ns.apply(&op).unwrap();
        }
        let f = ns.existing("/d/f").unwrap();
        assert!(ns.check_unreadable_by_superuser(&su, f).is_ok());
        let mark = XAttr {
            ns: XAttrNs::Security,
            name: UNREADABLE_BY_SUPERUSER.into(),
            value: None,
        };
        for op in ns
            .plan_set_xattr(&su, "/d/f", mark, XATTR_CREATE, XAttrLimits::default())
            .unwrap()
        {
            ns.apply(&op).unwrap();
        }
        let e = ns.check_unreadable_by_superuser(&su, f).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Access is denied for hdfs since the superuser is not allowed to perform this operation."
        );
        let alice = Caller {
            user: "alice".into(),
            groups: Vec::new().into(),
            superuser: false,
            checks_enabled: true,
        };
        assert!(ns.check_unreadable_by_superuser(&alice, f).is_ok());
    }

    #[test]
    fn a_deleted_inode_takes_its_attributes_with_it() {
        let (mut ns, su) = ns_with_file();
        set(&mut ns, &su, user("a", b"1"), XAttrLimits::default()).unwrap();
        assert_eq!(ns.features.len(), 1);
        for op in ns.plan_delete(&su, "/d", true, 3).unwrap().unwrap().ops {
            ns.apply(&op).unwrap();
        }
        assert!(ns.features.is_empty());
    }
}
