//! POSIX permission checks as HDFS's `FSPermissionChecker` does them, for SIMPLE-auth users.

use super::inode::{Slot, STICKY};
use super::snapshot::id::CURRENT;
use super::{Namespace, Walk};
use crate::error::FsError;

/// rwx access bits, in the low three bits like a mode's "other" class.
pub const READ: u16 = 4;
pub const WRITE: u16 = 2;
pub const EXECUTE: u16 = 1;

/// Who is asking, resolved once per call.
#[derive(Clone, Debug)]
pub struct Caller {
    pub user: String,
    pub groups: std::sync::Arc<[String]>,
    /// The NameNode's own user, or a member of the superuser group.
    pub superuser: bool,
    /// `dfs.permissions.enabled=false` turns every check off.
    pub checks_enabled: bool,
}

impl Caller {
    pub fn superuser(user: &str) -> Self {
        Caller {
            user: user.into(),
            groups: Vec::new().into(),
            superuser: true,
            checks_enabled: true,
        }
    }

    pub fn bypass(&self) -> bool {
        self.superuser || !self.checks_enabled
    }
}

pub fn access_name(access: u16) -> &'static str {
    match access {
        READ => "READ",
        WRITE => "WRITE",
        EXECUTE => "EXECUTE",
        0o5 => "READ_EXECUTE",
        0o3 => "WRITE_EXECUTE",
        0o7 => "ALL",
        0o6 => "READ_WRITE",
        _ => "NONE",
    }
}

/// `rwxr-xr-x` style rendering with the type letter, as HDFS messages show it.
pub fn mode_string(is_dir: bool, perm: u16) -> String {
    let mut s = String::with_capacity(10);
    s.push(if is_dir { 'd' } else { '-' });
    for shift in [6, 3, 0] {
        let b = (perm >> shift) & 7;
        s.push(if b & 4 != 0 { 'r' } else { '-' });
        s.push(if b & 2 != 0 { 'w' } else { '-' });
        let x = b & 1 != 0;
        let special = shift == 0 && perm & STICKY != 0;
        s.push(match (x, special) {
            (true, true) => 't',
            (false, true) => 'T',
            (true, false) => 'x',
            (false, false) => '-',
        });
    }
    s
}

impl Namespace {
    fn is_owner(&self, caller: &Caller, slot: Slot) -> bool {
        self.interned(&caller.user) == Some(self.inode(slot).owner)
    }

    /// Checks `access` (rwx bits) on one inode (see
    /// [`check_access_with`](Self::check_access_with), which also checks a snapshot's).
    pub fn check_access(&self, caller: &Caller, slot: Slot, access: u16) -> Result<(), FsError> {
        if caller.bypass() || access == 0 {
            return Ok(());
        }
        self.check_access_with(caller, &self.attrs_at(slot, CURRENT), access)
    }

    /// EXECUTE on every directory passed through on the way to the walk's target (or to
    /// its deepest existing ancestor, which is itself passed through when the path is missing).
    pub fn check_traverse(&self, caller: &Caller, walk: &Walk) -> Result<(), FsError> {
        if caller.bypass() {
            return Ok(());
        }
        let through = if walk.target().is_some() {
            walk.slots.len() - 1
        } else {
            walk.slots.len()
        };
        for &s in &walk.slots[..through] {
            if self.inode(s).is_dir() {
                self.check_access(caller, s, EXECUTE)?;
            }
        }
        // HDFS's checker refuses a path through a file here; the superuser, whom it does
        // not check, finds nothing there instead.
        walk.require_dirs()
    }

    /// Only the owner (or the superuser) may change an inode's permission or times.
    pub fn check_owner(&self, caller: &Caller, slot: Slot) -> Result<(), FsError> {
        if caller.bypass() || self.is_owner(caller, slot) {
            return Ok(());
        }
        Err(FsError::NotOwner {
            user: caller.user.to_string(),
            inode: self.path_of(slot),
        })
    }

    /// The sticky bit on `parent` lets only the owner of `child` or of `parent` remove it.
    pub fn check_sticky(&self, caller: &Caller, parent: Slot, child: Slot) -> Result<(), FsError> {
        if caller.bypass() || self.inode(parent).perm & STICKY == 0 {
            return Ok(());
        }
        if self.is_owner(caller, parent) || self.is_owner(caller, child) {
            return Ok(());
        }
        Err(FsError::StickyBit {
            user: caller.user.to_string(),
            path: self.path_of(child),
            parent: self.path_of(parent),
        })
    }

    /// `access` on every directory in the subtree under `top` (delete -r, content summary).
    pub fn check_subtree(&self, caller: &Caller, top: Slot, access: u16) -> Result<(), FsError> {
        if caller.bypass() {
            return Ok(());
        }
        let mut stack = vec![top];
        while let Some(s) = stack.pop() {
            if let Some(children) = self.inode(s).children() {
                self.check_access(caller, s, access)?;
                stack.extend(children.slots());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_strings() {
        assert_eq!(mode_string(true, 0o755), "drwxr-xr-x");
        assert_eq!(mode_string(false, 0o644), "-rw-r--r--");
        assert_eq!(mode_string(true, 0o1777), "drwxrwxrwt");
        assert_eq!(mode_string(true, 0o1776), "drwxrwxrwT");
    }
}
