//! Validation of mutations: each `plan_*` checks a request against the tree and the caller's
//! permissions and returns the [`Op`] records that carry it out. Nothing here mutates.
//! Messages and exception kinds follow what an HDFS NameNode answers.

use super::blocks::Previous;
use super::inode::{Body, Slot, ROOT_SLOT};
use super::lease_check::Held;
use super::path::{check_new_name, components, join};
use super::perm::{Caller, EXECUTE, WRITE};
use super::{Namespace, Op};
use crate::error::FsError;

/// The arguments of `create` after the RPC layer has checked them against configuration.
#[derive(Clone, Debug)]
pub struct CreateArgs<'a> {
    pub src: &'a str,
    pub masked: u16,
    /// The permission before the client's umask, when it sends one (Hadoop's clients do):
    /// used instead of `masked` under a default ACL.
    pub unmasked: Option<u16>,
    pub client_name: &'a str,
    pub client_machine: &'a str,
    pub create: bool,
    pub overwrite: bool,
    pub create_parent: bool,
    pub replication: u16,
    pub block_size: u64,
}

impl CreateArgs<'_> {
    fn mode(&self) -> Mode {
        Mode {
            masked: self.masked,
            unmasked: self.unmasked,
        }
    }
}

/// Where a record applies, as its plan's walk found it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct At {
    /// Mkdir and Create: the directory the new entry goes into. Any other record: the
    /// inode it changes (a rename's source).
    pub slot: Option<Slot>,
    /// Rename: the directory the destination goes into.
    pub dst_dir: Option<Slot>,
}

impl At {
    pub fn slot(slot: Slot) -> Self {
        At {
            slot: Some(slot),
            dst_dir: None,
        }
    }
}

/// The records a plan returns, with where they apply.
///
/// A record replayed from the journal is applied by walking its path. Applied straight
/// after its plan, under the same write lock, it need not be: nothing can have moved in
/// between. That second walk (2–3 cache misses per level in a big namespace) was a fifth
/// of an in-process create's time under the lock. The plan knows where its first record
/// applies; the later ones may apply to what an earlier one creates, which only a chain
/// (`mkdir -p`, then perhaps the file) lets us name.
#[derive(Debug, Default)]
pub struct Planned {
    pub ops: Vec<Op>,
    pub first_at: At,
    /// Each record after the first goes into the directory the one before it created.
    pub chained: bool,
    /// The call fails with this once the records are applied: a `mkdir -p` or a create
    /// whose parents were made before a limit refused the next entry keeps them, as in HDFS.
    pub then_fail: Option<FsError>,
}

impl Planned {
    pub fn at(first_at: At, ops: Vec<Op>) -> Self {
        Planned {
            ops,
            first_at,
            ..Default::default()
        }
    }

    /// A chain from `dir`: each record after the first goes into what the one before created.
    pub fn chain(dir: Slot, ops: Vec<Op>) -> Self {
        Planned {
            ops,
            first_at: At::slot(dir),
            chained: true,
            then_fail: None,
        }
    }

    /// The directories a create or mkdirs made before `refused` stopped it: made, and the
    /// call failed with `refused`. Nothing made, the call simply fails.
    fn made_then_refused(dir: Slot, ops: Vec<Op>, refused: FsError) -> Result<Self, FsError> {
        if ops.is_empty() {
            return Err(refused);
        }
        Ok(Planned {
            then_fail: Some(refused),
            ..Planned::chain(dir, ops)
        })
    }

    /// Where record `i` applies, given the inode the record before it created, if any.
    pub fn at_of(&self, i: usize, created_before: Option<Slot>) -> At {
        match i {
            0 => self.first_at,
            _ if self.chained => At {
                slot: created_before,
                dst_dir: None,
            },
            _ => At::default(),
        }
    }
}

impl From<Vec<Op>> for Planned {
    fn from(ops: Vec<Op>) -> Self {
        Planned {
            ops,
            ..Default::default()
        }
    }
}

/// Adds u+wx, as HDFS does for directories it creates implicitly.
fn implicit_dir_perm(perm: u16) -> u16 {
    perm | 0o300
}

/// A create's or mkdirs' permission: after the client's umask, and before it when sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    pub masked: u16,
    pub unmasked: Option<u16>,
}

impl From<u16> for Mode {
    fn from(masked: u16) -> Self {
        Mode {
            masked,
            unmasked: None,
        }
    }
}

impl Namespace {
    /// Refuses a new entry in `dir` (at `dir_comps`) once it holds the most allowed
    /// (HDFS's `MaxDirectoryItemsExceededException`, with its message).
    /// The modes of a new entry in `dir` and of the directories made on the way to it. Under
    /// a default ACL, the unmasked mode for both, as HDFS's POSIX ACL inheritance has it:
    /// the default ACL, not the umask, decides (the missing directories, too, get exactly
    /// that mode, not the usual u+wx); otherwise the masked one, with u+wx for the
    /// directories so their creator can go on through them.
    fn new_entry_modes(&self, dir: Slot, mode: Mode) -> (u16, u16) {
        match mode.unmasked {
            Some(u) if self.has_default_acl(dir) => (u, u),
            _ => (mode.masked, implicit_dir_perm(mode.masked)),
        }
    }

    /// Of the entries `found..end` a create or mkdirs would add one after another under
    /// `dir`, those its quotas let in: fewer, with the refusal of the first that does not
    /// fit, when a quota runs out first (HDFS adds them one at a time, so those before it
    /// stay).
    fn quota_limited(
        &self,
        dir: Slot,
        found: usize,
        end: usize,
        refused: Option<FsError>,
    ) -> (usize, Option<FsError>) {
        match self.new_inodes_fit(dir, end - found) {
            (fits, Some(e)) => (found + fits, Some(e)),
            (_, None) => (end, refused),
        }
    }

    fn check_room(&self, dir: Slot, dir_comps: &[&str]) -> Result<(), FsError> {
        let items = self.inode(dir).children().map_or(0, |c| c.len());
        if items < self.limits.dir_items {
            return Ok(());
        }
        Err(FsError::DirectoryFull {
            dir: join(dir_comps),
            limit: self.limits.dir_items,
            items,
        })
    }

    /// Checks the entries a create or mkdirs adds, `comps[found..]`, in the order HDFS adds
    /// them: each name's length, and room in `dir` for the first (the others go into
    /// directories made with them). Returns where the entries that may be made end, and
    /// why the one there may not.
    fn check_new_entries(
        &self,
        dir: Slot,
        comps: &[&str],
        found: usize,
    ) -> (usize, Option<FsError>) {
        for i in found..comps.len() {
            let checked = check_new_name(comps[i], &comps[..i], self.limits.component_len)
                .and_then(|()| {
                    if i == found {
                        self.check_room(dir, &comps[..found])
                    } else {
                        Ok(())
                    }
                });
            if let Err(e) = checked {
                return (i, Some(e));
            }
        }
        (comps.len(), None)
    }

    /// Ops that create the missing directories `comps[made]` under `parent`: the last of
    /// `comps` with `last_perm`, the others with `parent_perm`.
    fn mkdir_ops(
        &self,
        caller: &Caller,
        comps: &[&str],
        made: std::ops::Range<usize>,
        parent: Slot,
        (last_perm, parent_perm): (u16, u16),
        now: i64,
    ) -> Vec<Op> {
        let group = self.user_name(self.inode(parent).group).to_string();
        let mut id = self.next_inode_id();
        made.map(|i| {
            let op = Op::Mkdir {
                path: join(&comps[..=i]),
                id,
                perm: if i + 1 == comps.len() {
                    last_perm
                } else {
                    parent_perm
                },
                owner: caller.user.clone(),
                group: group.clone(),
                mtime: now,
            };
            id += 1;
            op
        })
        .collect()
    }

    pub fn plan_mkdirs(
        &self,
        caller: &Caller,
        src: &str,
        mode: impl Into<Mode>,
        create_parent: bool,
        now: i64,
    ) -> Result<Planned, FsError> {
        let comps = components(src)?;
        let walk = self.walk(&comps)?;
        self.check_traverse(caller, &walk)?;
        walk.require_dirs()?;
        if let Some(t) = walk.target() {
            if self.inode(t).is_dir() {
                return Ok(Planned::default());
            }
            return Err(FsError::AlreadyExists(format!(
                "Path is not a directory: {src}"
            )));
        }
        let found = walk.slots.len() - 1;
        if comps.len() - found > 1 && !create_parent {
            return Err(FsError::parent_missing(join(&comps[..comps.len() - 1])));
        }
        let ancestor = walk.last();
        self.check_access(caller, ancestor, WRITE)?;
        let (end, refused) = self.check_new_entries(ancestor, &comps, found);
        let (end, refused) = self.quota_limited(ancestor, found, end, refused);
        let ops = self.mkdir_ops(
            caller,
            &comps,
            found..end,
            ancestor,
            self.new_entry_modes(ancestor, mode.into()),
            now,
        );
        match refused {
            None => Ok(Planned::chain(ancestor, ops)),
            Some(e) => Planned::made_then_refused(ancestor, ops, e),
        }
    }

    pub fn plan_create(
        &self,
        caller: &Caller,
        a: &CreateArgs,
        now: i64,
    ) -> Result<Planned, FsError> {
        let src = a.src;
        let comps = components(src)?;
        if comps.is_empty() {
            return Err(FsError::AlreadyExists(
                "/ already exists as a directory".into(),
            ));
        }
        let walk = self.walk(&comps)?;
        self.check_traverse(caller, &walk)?;
        walk.require_dirs()?;
        if let Some(t) = walk.target() {
            let inode = self.inode(t);
            let file = match &inode.body {
                Body::Dir(_) => {
                    return Err(FsError::AlreadyExists(format!(
                        "{src} already exists as a directory"
                    )))
                }
                Body::File(f) => f,
            };
            if let Some(uc) = file.uc() {
                return Err(FsError::LeaseConflict(Box::new(crate::error::Conflict {
                    op: "CREATE_FILE".into(),
                    path: src.to_string(),
                    client: a.client_name.to_string(),
                    machine: a.client_machine.to_string(),
                    held: crate::error::HeldBy::Other {
                        client: uc.client_name.to_string(),
                        machine: uc.client_machine.to_string(),
                    },
                })));
            }
            if !a.overwrite {
                return Err(FsError::AlreadyExists(format!(
                    "{src} for client {} already exists",
                    a.client_machine
                )));
            }
            self.check_access(caller, inode.parent, WRITE)?;
            self.check_access(caller, t, WRITE)?;
            let op = self.create_op(caller, a, inode.parent, self.next_inode_id(), now);
            return Ok(Planned::at(At::slot(inode.parent), vec![op]));
        }
        if !a.create {
            return Err(FsError::file_not_found(src));
        }
        let found = walk.slots.len() - 1;
        let ancestor = walk.last();
        if comps.len() - found > 1 && !a.create_parent {
            return Err(FsError::parent_missing(join(&comps[..comps.len() - 1])));
        }
        self.check_access(caller, ancestor, WRITE)?;
        let (end, refused) = self.check_new_entries(ancestor, &comps, found);
        let (end, refused) = self.quota_limited(ancestor, found, end, refused);
        let (_, dir_perm) = self.new_entry_modes(ancestor, a.mode());
        let mut ops = self.mkdir_ops(
            caller,
            &comps,
            found..end.min(comps.len() - 1),
            ancestor,
            (dir_perm, dir_perm),
            now,
        );
        if let Some(e) = refused {
            return Planned::made_then_refused(ancestor, ops, e);
        }
        let id = self.next_inode_id() + ops.len() as u64;
        ops.push(self.create_op(caller, a, ancestor, id, now));
        // The missing parents' Mkdirs, each in the one before, the first in `ancestor`, then
        // the Create in the last.
        Ok(Planned::chain(ancestor, ops))
    }

    fn create_op(
        &self,
        caller: &Caller,
        a: &CreateArgs,
        group_from: Slot,
        id: u64,
        now: i64,
    ) -> Op {
        Op::Create {
            path: a.src.to_string(),
            id,
            // The directory the file goes into is `group_from`, or one made on the way,
            // which took (and hands on) the default ACL of `group_from`.
            perm: self.new_entry_modes(group_from, a.mode()).0,
            owner: caller.user.clone(),
            group: self.user_name(self.inode(group_from).group).to_string(),
            mtime: now,
            replication: a.replication,
            block_size: a.block_size,
            client_name: a.client_name.to_string(),
            client_machine: a.client_machine.to_string(),
        }
    }

    /// `complete` for a file with no blocks: returns whether the file is closed, and the ops.
    /// Plans complete. `last` is the client's final view of the last block; the file
    /// closes only once `replicated` says that block has its minimum of finished replicas
    /// (otherwise the answer is false and the client asks again).
    pub fn plan_complete(
        &self,
        src: &str,
        client_name: &str,
        file_id: u64,
        last: Option<Previous>,
        now: i64,
        replicated: impl Fn(u64) -> bool,
    ) -> Result<(bool, Planned), FsError> {
        let Held { slot, moved } = match self.check_lease(src, client_name, file_id) {
            Ok(held) => held,
            Err(e) if e.is_lease_expired() && self.completed_before(src, file_id, last) => {
                // A retried complete whose first answer was lost: the file is closed with
                // the last block the client names (HDFS-3031), so it succeeded.
                tracing::debug!(src, client_name, "complete of a closed file: {e}");
                return Ok((true, Planned::default()));
            }
            Err(e) => return Err(e),
        };
        let file = self.inode(slot).file().expect("a file under construction");
        let ours = file.blocks().last().map(|b| b.id);
        if ours != last.map(|l| l.id) {
            return Err(FsError::Io(format!(
                "complete of {src}: last block {:?} does not match the file's last block {ours:?}",
                last.map(|l| l.id)
            )));
        }
        let len = match last {
            Some(l) if !replicated(l.id) => return Ok((false, Planned::default())),
            Some(l) => self.length_with_last(slot, l.len),
            None => 0,
        };
        let close = Op::Close {
            path: moved.unwrap_or_else(|| src.to_string()),
            mtime: now,
            len,
        };
        Ok((true, Planned::at(At::slot(slot), vec![close])))
    }

    /// Whether the file a complete names is closed already with the last block `last`
    /// names (same id and generation stamp; or neither has one).
    fn completed_before(&self, src: &str, file_id: u64, last: Option<Previous>) -> bool {
        let Some(held) = self.writer_file(src, file_id) else {
            return false;
        };
        let Some(file) = self.inode(held.slot).file().filter(|f| f.uc().is_none()) else {
            return false;
        };
        let ours = file.blocks().last().map(|b| (b.id, b.gs));
        ours == last.map(|l| (l.id, l.gs))
    }

    /// Legacy `rename`: `Ok(None)` is the `false` answer HDFS gives for most failures.
    pub fn plan_rename(
        &self,
        caller: &Caller,
        src: &str,
        dst: &str,
        now: i64,
    ) -> Result<Option<Planned>, FsError> {
        let src_comps = components(src)?;
        let mut dst_comps = components(dst)?;
        let src_walk = self.walk(&src_comps)?;
        self.check_traverse(caller, &src_walk)?;
        let Some(s) = src_walk.target() else {
            return Ok(None);
        };
        if s == ROOT_SLOT {
            return Ok(None);
        }
        let mut dst_walk = self.walk(&dst_comps)?;
        // As HDFS: a destination past a file is an error, not a false answer.
        dst_walk.require_dirs()?;
        let into_dir = dst_walk.target().is_some_and(|d| self.inode(d).is_dir());
        if into_dir {
            dst_comps.push(src_comps.last().expect("not the root"));
        }
        if src_comps == dst_comps {
            return Ok(Some(Planned::default()));
        }
        if dst_comps.starts_with(&src_comps) {
            return Err(FsError::Io(format!(
                "Rename destination {dst} is a directory or file under source {src}"
            )));
        }
        // HDFS 3.4.1 moves no snapshottable directory that has snapshots (nor one holding
        // such), with delete's message: not even into the trash.
        self.check_no_snapshots_below(s)?;
        // Only a move into a directory has a new destination path to walk; otherwise the
        // walk above is already it (a rename's path walks are most of its cost here).
        if into_dir {
            dst_walk = match self.walk(&dst_comps) {
                Ok(w) => w,
                Err(FsError::ParentNotDirectory(_)) => return Ok(None),
                Err(e) => return Err(e),
            };
        }
        self.check_traverse(caller, &dst_walk)?;
        if dst_walk.target().is_some() || dst_walk.slots.len() < dst_comps.len() {
            return Ok(None);
        }
        let src_parent = self.inode(s).parent;
        self.check_access(caller, src_parent, WRITE)?;
        self.check_sticky(caller, src_parent, s)?;
        // Every component but the last was found: the walk ends at the destination's directory.
        let dst_dir = dst_walk.last();
        self.check_access(caller, dst_dir, WRITE)?;
        let (dst_name, dst_parent) = dst_comps.split_last().expect("not the root");
        check_new_name(dst_name, dst_parent, self.limits.component_len)?;
        // Within one directory a rename adds no entry, and HDFS does not check there.
        if dst_dir != src_parent {
            self.check_room(dst_dir, dst_parent)?;
        }
        self.check_rename_quota(s, dst_dir, None)?;
        let rename = Op::Rename {
            src: join(&src_comps),
            dst: join(&dst_comps),
            mtime: now,
            overwrite: false,
        };
        let at = At {
            slot: Some(s),
            dst_dir: Some(dst_dir),
        };
        Ok(Some(Planned::at(at, vec![rename])))
    }

    /// `rename2` (`Options.Rename`): exact target, typed exceptions.
    pub fn plan_rename2(
        &self,
        caller: &Caller,
        src: &str,
        dst: &str,
        overwrite: bool,
        now: i64,
    ) -> Result<Planned, FsError> {
        let src_comps = components(src)?;
        let dst_comps = components(dst)?;
        if src_comps == dst_comps {
            return Err(FsError::AlreadyExists(format!(
                "The source {src} and destination {dst} are the same"
            )));
        }
        if dst_comps.starts_with(&src_comps) {
            return Err(FsError::Io(format!(
                "Rename destination {dst} is a directory or file under source {src}"
            )));
        }
        let src_walk = self.walk(&src_comps)?;
        self.check_traverse(caller, &src_walk)?;
        let s = src_walk
            .target()
            .ok_or_else(|| FsError::NotFound(format!("rename source {src} is not found.")))?;
        if s == ROOT_SLOT {
            return Err(FsError::Io("rename source cannot be the root".into()));
        }
        self.check_no_snapshots_below(s)?;
        let dst_parent_comps = &dst_comps[..dst_comps.len().saturating_sub(1)];
        let parent_walk = self.walk(dst_parent_comps)?;
        self.check_traverse(caller, &parent_walk)?;
        let dp = parent_walk.target().ok_or_else(|| {
            FsError::NotFound(format!("rename destination parent {dst} not found."))
        })?;
        if !self.inode(dp).is_dir() {
            return Err(FsError::ParentNotDirectory(format!(
                "rename destination parent {dst} is a file."
            )));
        }
        let src_parent = self.inode(s).parent;
        self.check_access(caller, src_parent, WRITE)?;
        self.check_sticky(caller, src_parent, s)?;
        self.check_access(caller, dp, WRITE)?;
        let name = dst_comps
            .last()
            .expect("dst is not the root, it is not under src");
        check_new_name(name, dst_parent_comps, self.limits.component_len)?;
        if let Some(d) = self.child(dp, name.as_bytes()) {
            let (src_dir, dst_dir) = (self.inode(s).is_dir(), self.inode(d).is_dir());
            if src_dir != dst_dir {
                let kind = if dst_dir { "directories" } else { "files" };
                return Err(FsError::Io(format!(
                    "Source {src} and destination {dst} must both be {kind}"
                )));
            }
            if !overwrite {
                return Err(FsError::AlreadyExists(format!(
                    "rename destination {dst} already exists"
                )));
            }
            if self.inode(d).children().is_some_and(|c| !c.is_empty()) {
                return Err(FsError::Io(format!(
                    "rename destination directory is not empty: {dst}"
                )));
            }
            self.check_sticky(caller, dp, d)?;
        } else if dp != src_parent {
            // Replacing an entry adds none, so only a new name is checked.
            self.check_room(dp, dst_parent_comps)?;
        }
        self.check_rename_quota(s, dp, self.child(dp, name.as_bytes()))?;
        let rename = Op::Rename {
            src: join(&src_comps),
            dst: join(&dst_comps),
            mtime: now,
            overwrite,
        };
        let at = At {
            slot: Some(s),
            dst_dir: Some(dp),
        };
        Ok(Planned::at(at, vec![rename]))
    }

    /// `delete`: `Ok(None)` when there is nothing to delete (the `false` answer).
    pub fn plan_delete(
        &self,
        caller: &Caller,
        src: &str,
        recursive: bool,
        now: i64,
    ) -> Result<Option<Planned>, FsError> {
        let comps = components(src)?;
        let walk = self.walk(&comps)?;
        self.check_traverse(caller, &walk)?;
        let Some(t) = walk.target() else {
            return Ok(None);
        };
        let non_empty = self.inode(t).children().is_some_and(|c| !c.is_empty());
        if non_empty && !recursive {
            return Err(FsError::NotEmpty(format!(
                "`{src} is non empty': Directory is not empty"
            )));
        }
        if t == ROOT_SLOT {
            return Ok(None);
        }
        let parent = self.inode(t).parent;
        self.check_access(caller, parent, WRITE | EXECUTE)?;
        self.check_sticky(caller, parent, t)?;
        if non_empty {
            self.check_subtree(caller, t, 0o7)?;
        }
        self.check_no_snapshots_below(t)?;
        let delete = Op::Delete {
            path: join(&comps),
            mtime: now,
        };
        Ok(Some(Planned::at(At::slot(t), vec![delete])))
    }

    /// The existing inode `src` names, after the traverse check, with its normalized path.
    pub fn resolve_checked(&self, caller: &Caller, src: &str) -> Result<(Slot, String), FsError> {
        let comps = components(src)?;
        let t = self.checked_target(caller, src, &comps)?;
        Ok((t, join(&comps)))
    }

    /// [`resolve_checked`](Self::resolve_checked), a missing path reported in the words
    /// `missing` gives the normalized path (HDFS's message for it differs from call to
    /// call: "cannot find P" for xattrs, "File/Directory does not exist: P" for storage
    /// policies).
    pub fn resolve_checked_or(
        &self,
        caller: &Caller,
        src: &str,
        missing: impl FnOnce(&str) -> String,
    ) -> Result<(Slot, String), FsError> {
        let comps = components(src)?;
        let path = join(&comps);
        match self.checked_target(caller, src, &comps) {
            Ok(t) => Ok((t, path)),
            Err(e) if e.is_not_found() => Err(FsError::NotFound(missing(&path))),
            Err(e) => Err(e),
        }
    }

    /// [`resolve_checked`](Self::resolve_checked) without the path: what every read needs
    /// (getBlockLocations, getFileInfo), and nothing allocated for it.
    pub fn resolve_slot(&self, caller: &Caller, src: &str) -> Result<Slot, FsError> {
        self.checked_target(caller, src, &components(src)?)
    }

    fn checked_target(&self, caller: &Caller, src: &str, comps: &[&str]) -> Result<Slot, FsError> {
        let walk = self.walk(comps)?;
        self.check_traverse(caller, &walk)?;
        walk.target().ok_or_else(|| FsError::file_not_found(src))
    }

    pub fn plan_set_permission(
        &self,
        caller: &Caller,
        src: &str,
        perm: u16,
    ) -> Result<Vec<Op>, FsError> {
        let (t, path) = self.resolve_checked(caller, src)?;
        self.check_owner(caller, t)?;
        Ok(vec![Op::SetPermission { path, perm }])
    }

    pub fn plan_set_owner(
        &self,
        caller: &Caller,
        src: &str,
        owner: Option<&str>,
        group: Option<&str>,
    ) -> Result<Vec<Op>, FsError> {
        let (t, path) = self.resolve_checked(caller, src)?;
        self.check_owner(caller, t)?;
        if !caller.bypass() {
            if owner.is_some_and(|o| o != caller.user) {
                return Err(FsError::AccessDenied(format!(
                    "User {} is not a super user (non-super user cannot change owner).",
                    caller.user
                )));
            }
            if let Some(g) = group.filter(|g| !caller.groups.iter().any(|x| x == g)) {
                return Err(FsError::AccessDenied(format!(
                    "User {} does not belong to {g}",
                    caller.user
                )));
            }
        }
        Ok(vec![Op::SetOwner {
            path,
            owner: owner.map(Into::into),
            group: group.map(Into::into),
        }])
    }

    pub fn plan_set_times(
        &self,
        caller: &Caller,
        src: &str,
        mtime: Option<i64>,
        atime: Option<i64>,
    ) -> Result<Vec<Op>, FsError> {
        let (t, path) = self.resolve_checked(caller, src)?;
        self.check_access(caller, t, WRITE)?;
        Ok(vec![Op::SetTimes { path, mtime, atime }])
    }

    /// The record an open makes to move a file's access time, as HDFS's getBlockLocations
    /// does: none when another open has moved it within `precision_ms` since the caller
    /// looked. Reading needs no write permission, so only the path's traversal is checked
    /// here; the read permission was checked when the blocks were looked up.
    pub fn plan_access_time(
        &self,
        caller: &Caller,
        src: &str,
        now: i64,
        precision_ms: u64,
    ) -> Result<Vec<Op>, FsError> {
        let (t, path) = self.resolve_checked(caller, src)?;
        if !access_time_due(self.inode(t).atime, now, precision_ms) {
            return Ok(Vec::new());
        }
        Ok(vec![Op::SetTimes {
            path,
            mtime: None,
            atime: Some(now),
        }])
    }

    /// `setReplication`: `Ok(None)` for a directory (the `false` answer).
    pub fn plan_set_replication(
        &self,
        caller: &Caller,
        src: &str,
        replication: u16,
    ) -> Result<Option<Vec<Op>>, FsError> {
        let (t, path) = self.resolve_checked(caller, src)?;
        if self.inode(t).is_dir() {
            return Ok(None);
        }
        self.check_access(caller, t, WRITE)?;
        self.check_file_growth(t, self.charged_bytes(t), replication)?;
        Ok(Some(vec![Op::SetReplication { path, replication }]))
    }
}

/// Whether a read at `now` moves an access time last set at `atime`: HDFS moves it at most
/// once per `dfs.namenode.accesstime.precision`, so that reads stay reads nearly always;
/// a precision of 0 turns access times off.
pub fn access_time_due(atime: i64, now: i64, precision_ms: u64) -> bool {
    precision_ms > 0 && now > atime.saturating_add(precision_ms.min(i64::MAX as u64) as i64)
}
