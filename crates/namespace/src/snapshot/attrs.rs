//! An inode's attributes as a snapshot shows them, for the reads HDFS answers at
//! `.snapshot` paths besides statuses and listings: getXAttrs and listXAttrs, getAclStatus
//! and checkAccess (getStoragePolicy resolves there too, but HDFS answers the inode's policy
//! as it is now). Each is the snapshot's version of the inode where it
//! changed since, else the live inode; permission checks read the same.

use crate::acl::{self, AclEntry, Asker, Scope};
use crate::error::FsError;
use crate::inode::Slot;
use crate::path::{components, join};
use crate::perm::{access_name, mode_string, Caller};
use crate::snapshot::view::Resolved;
use crate::snapshot::CURRENT;
use crate::snapshot::{Frozen, SnapId};
use crate::xattr::XAttr;
use crate::Namespace;

/// One inode's attributes, live or as a snapshot keeps them.
#[derive(Clone)]
pub struct Attrs<'a> {
    pub slot: Slot,
    frozen: Option<&'a Frozen>,
    ns: &'a Namespace,
    /// The path it was reached by, which a refusal names (a `.snapshot` path's inode may
    /// live elsewhere now, or nowhere); `None`: its live path.
    at: Option<String>,
}

impl<'a> Attrs<'a> {
    pub fn perm(&self) -> u16 {
        self.frozen
            .map_or(self.ns.inode(self.slot).perm, |f| f.perm)
    }

    pub fn owner(&self) -> u32 {
        self.frozen
            .map_or(self.ns.inode(self.slot).owner, |f| f.owner)
    }

    pub fn group(&self) -> u32 {
        self.frozen
            .map_or(self.ns.inode(self.slot).group, |f| f.group)
    }

    pub fn acl(&self) -> &'a [AclEntry] {
        match self.frozen {
            Some(f) => f.acl.as_deref().unwrap_or(&[]),
            None => self.ns.acl_of(self.slot),
        }
    }

    pub fn xattrs(&self) -> &'a [XAttr] {
        match self.frozen {
            Some(f) => f.features.as_ref().map_or(&[], |x| &x.xattrs),
            None => self.ns.xattrs_of(self.slot),
        }
    }
}

impl Namespace {
    /// `slot`'s attributes as snapshot `s` shows them ([`CURRENT`]: live).
    pub fn attrs_at(&self, slot: Slot, s: SnapId) -> Attrs<'_> {
        let frozen = if s == CURRENT || self.snaps.versions.is_empty() {
            None
        } else {
            self.version_at(slot, s)
        };
        Attrs {
            slot,
            frozen,
            ns: self,
            at: None,
        }
    }

    /// The inode `src` names, live or through a `.snapshot` (as that snapshot shows it),
    /// after the traverse check; `missing` words HDFS's message for a path that names
    /// nothing.
    pub fn resolve_attrs(
        &self,
        caller: &Caller,
        src: &str,
        missing: impl FnOnce(&str) -> String,
    ) -> Result<Attrs<'_>, FsError> {
        match self.snapshot_target(caller, src)? {
            Some(Some((slot, s))) => Ok(Attrs {
                at: Some(join(&components(src)?)),
                ..self.attrs_at(slot, s)
            }),
            Some(None) => Err(FsError::NotFound(missing(&join(&components(src)?)))),
            None => {
                let (slot, path) = self.resolve_checked_or(caller, src, missing)?;
                Ok(Attrs {
                    at: Some(path),
                    ..self.attrs_at(slot, CURRENT)
                })
            }
        }
    }

    /// The inode a `.snapshot` path names, with the snapshot: `None` for a path without
    /// one (resolve it as any other), `Some(None)` for one that names nothing. The
    /// `.snapshot` directory itself answers as its snapshottable directory does.
    pub fn snapshot_target(
        &self,
        caller: &Caller,
        src: &str,
    ) -> Result<Option<Option<(Slot, SnapId)>>, FsError> {
        Ok(self.snapshot_lookup(caller, src)?.map(|r| {
            r.map(|r| match r {
                Resolved::DotSnapshot(dir) => (dir, CURRENT),
                Resolved::At { slot, snap, .. } => (slot, snap),
            })
        }))
    }

    /// Checks `access` (rwx bits) against attributes `a`, as HDFS's permission checker:
    /// an ACL with access entries decides; otherwise the owner's, group's or others' bits.
    pub fn check_access_with(
        &self,
        caller: &Caller,
        a: &Attrs<'_>,
        access: u16,
    ) -> Result<(), FsError> {
        if caller.bypass() || access == 0 {
            return Ok(());
        }
        let is_owner = self.interned(&caller.user) == Some(a.owner());
        let group = self.user_name(a.group());
        let stored = a.acl();
        let allowed = if stored.first().is_some_and(|e| e.scope == Scope::Access) {
            let who = Asker {
                user: &caller.user,
                groups: &caller.groups,
                is_owner,
                owning_group: group,
            };
            acl::allows(a.perm(), stored, &who, access as u8)
        } else {
            let shift = if is_owner {
                6
            } else if caller.groups.iter().any(|g| g == group) {
                3
            } else {
                0
            };
            (a.perm() >> shift) & access == access
        };
        if allowed {
            return Ok(());
        }
        Err(FsError::PermissionDenied(Box::new(crate::error::Denied {
            user: caller.user.to_string(),
            access: access_name(access),
            inode: a.at.clone().unwrap_or_else(|| self.path_of(a.slot)),
            owner: self.user_name(a.owner()).to_string(),
            group: group.to_string(),
            mode: mode_string(self.inode(a.slot).is_dir(), a.perm()),
        })))
    }
}
