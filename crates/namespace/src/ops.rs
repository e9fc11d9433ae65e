//! Operation records: every namespace mutation is one of these, applied by
//! [`Namespace::apply`](super::Namespace::apply). Live RPCs, journal replay and (later)
//! replication all go through the same records, so they cannot drift apart.
//!
//! A record carries every value the mutation needs (ids, times, owners), so applying it
//! consults no clock and no configuration: replay is deterministic.

/// Declares every record once: its variant, journal tag, name for people, and fields in
/// journal order. The enum, [`Op::tag`], [`Op::name`] and the field-by-field encoding
/// ([`Op::write_fields`], [`Op::read_fields`]) all come from this one list, so adding a
/// field cannot leave the journal codec behind.
macro_rules! records {
    ($(
        $(#[$meta:meta])*
        $variant:ident = $tag:literal, $name:literal {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),* $(,)?
        }
    )*) => {
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Op {
            $( $(#[$meta])* $variant { $( $(#[$fmeta])* $field: $ty ),* } ),*
        }

        impl Op {
            /// The record's tag in the journal.
            pub fn tag(&self) -> u8 {
                match self { $( Op::$variant { .. } => $tag ),* }
            }

            /// The name [`Display`](std::fmt::Display) gives this kind of record (HDFS's
            /// edits viewer's where HDFS has a counterpart).
            pub fn name(&self) -> &'static str {
                match self { $( Op::$variant { .. } => $name ),* }
            }

            /// Writes the fields in journal order (the tag is the caller's).
            pub fn write_fields<W: FieldWriter>(&self, w: &mut W) {
                match self {
                    $( Op::$variant { $( $field ),* } => { $( Field::write($field, w); )* } ),*
                }
            }

            /// Reads the fields of the record tagged `tag`, in journal order; `Ok(None)`
            /// for a tag no record has.
            pub fn read_fields<R: FieldReader>(tag: u8, r: &mut R) -> Result<Option<Op>, R::Error> {
                // Struct expressions evaluate their fields in the order written: journal order.
                Ok(Some(match tag {
                    $( $tag => Op::$variant { $( $field: Field::read(r)? ),* }, )*
                    _ => return Ok(None),
                }))
            }
        }
    };
}

records! {
    Mkdir = 1, "OP_MKDIR" {
        path: String,
        id: u64,
        perm: u16,
        owner: String,
        group: String,
        mtime: i64,
    }
    /// Create a file open for write by `client_name`. An existing file at `path` is replaced.
    Create = 2, "OP_ADD" {
        path: String,
        id: u64,
        perm: u16,
        owner: String,
        group: String,
        mtime: i64,
        replication: u16,
        block_size: u64,
        client_name: String,
        client_machine: String,
    }
    /// Close a file that was open for write (complete, or lease recovery). `len` is the
    /// file's final length; the last block gets whatever the earlier blocks do not hold.
    Close = 3, "OP_CLOSE" {
        path: String,
        mtime: i64,
        len: u64,
    }
    /// Move `src` to exactly `dst`; an existing `dst` is replaced when `overwrite` is set.
    Rename = 4, "OP_RENAME" {
        src: String,
        dst: String,
        mtime: i64,
        overwrite: bool,
    }
    Delete = 5, "OP_DELETE" {
        path: String,
        mtime: i64,
    }
    SetPermission = 6, "OP_SET_PERMISSIONS" {
        path: String,
        perm: u16,
    }
    SetOwner = 7, "OP_SET_OWNER" {
        path: String,
        owner: Option<String>,
        group: Option<String>,
    }
    SetTimes = 8, "OP_TIMES" {
        path: String,
        mtime: Option<i64>,
        atime: Option<i64>,
    }
    SetReplication = 9, "OP_SET_REPLICATION" {
        path: String,
        replication: u16,
    }
    /// Allocate a new last block of an open file. The block before it (if any) is
    /// finished with `prev_len` bytes.
    AddBlock = 10, "OP_ADD_BLOCK" {
        path: String,
        id: u64,
        gs: u64,
        prev_len: u64,
    }
    /// Drop the last block of an open file (a writer that could not set up its pipeline).
    AbandonBlock = 11, "OP_ABANDON_BLOCK" {
        path: String,
        id: u64,
    }
    /// Give the last block of an open file a new generation stamp (pipeline recovery), so
    /// replicas left by the failed pipeline can be told from the recovered ones.
    BumpGenerationStamp = 12, "OP_BUMP_GENSTAMP" {
        path: String,
        id: u64,
        gs: u64,
    }
    /// Hands out generation stamps up to `gs` (a block recovery's id), so that none is
    /// given twice, even across a restart, while the recovery has not committed.
    SetGenerationStamp = 13, "OP_SET_GENSTAMP_V2" {
        gs: u64,
    }
    /// The last block of an open file takes stamp `gs` and holds `len` bytes: a block
    /// recovery's outcome, or the length an hsync recorded (`gs` unchanged then).
    UpdateLastBlock = 14, "OP_UPDATE_BLOCKS" {
        path: String,
        id: u64,
        gs: u64,
        len: u64,
    }
    /// Open a closed file for write again by `client_name` (append). `last_len` is what its
    /// last block holds now (the summary needs it to follow later block records).
    Append = 15, "OP_APPEND" {
        path: String,
        client_name: String,
        client_machine: String,
        last_len: u64,
    }
    /// Cut a closed file to `len` bytes: blocks past it are dropped. When `len` falls inside
    /// a block (`cut`: the bytes that block keeps, and the bytes it had), the file opens
    /// for write by `client_name` and, as in HDFS, keeps showing that block whole until
    /// block recovery has cut its replicas and closes the file at `len`.
    Truncate = 16, "OP_TRUNCATE" {
        path: String,
        len: u64,
        mtime: i64,
        client_name: String,
        client_machine: String,
        cut: Option<(u64, u64)>,
    }
    /// Move the blocks of `srcs`, in order, to the end of `target` and delete the sources.
    Concat = 17, "OP_CONCAT_DELETE" {
        target: String,
        mtime: i64,
        srcs: Vec<String>,
    }
    /// Set an extended attribute (`ns` numbered as `XAttrNamespaceProto`), replacing one of
    /// the same name; it becomes the inode's first.
    SetXAttr = 18, "OP_SET_XATTR" {
        path: String,
        ns: u8,
        name: String,
        value: Option<Vec<u8>>,
    }
    RemoveXAttr = 19, "OP_REMOVE_XATTR" {
        path: String,
        ns: u8,
        name: String,
    }
    /// Give an inode a storage policy of its own (`policy` 0: none, inherit again).
    SetStoragePolicy = 20, "OP_SET_STORAGE_POLICY" {
        path: String,
        policy: u8,
    }
    /// An ACL change's outcome: the inode's permission (its group bits the mask, with an
    /// access ACL) and its kept entries in HDFS's text form (none: no ACL).
    SetAcl = 21, "OP_SET_ACL" {
        path: String,
        perm: u16,
        entries: Vec<String>,
    }
    /// A directory's namespace and storage-space quotas as they now are (-1: none).
    SetQuota = 22, "OP_SET_QUOTA" {
        path: String,
        ns: i64,
        space: i64,
    }
    /// A directory's space quota on one storage type (numbered as `StorageTypeProto`;
    /// -1: none).
    SetTypeQuota = 23, "OP_SET_QUOTA_BY_STORAGETYPE" {
        path: String,
        storage_type: u8,
        quota: i64,
    }
    /// A cache pool as it now is (added or modified).
    SetCachePool = 24, "OP_ADD_CACHE_POOL" {
        name: String,
        owner: String,
        group: String,
        mode: u16,
        limit: i64,
        max_relative_expiry_ms: i64,
        default_replication: u16,
    }
    /// A cache pool and its directives go.
    RemoveCachePool = 25, "OP_REMOVE_CACHE_POOL" {
        name: String,
    }
    /// A cache directive as it now is (added or modified); `expiry_ms` absolute.
    SetCacheDirective = 26, "OP_ADD_CACHE_DIRECTIVE" {
        id: u64,
        path: String,
        replication: u16,
        pool: String,
        expiry_ms: i64,
    }
    RemoveCacheDirective = 27, "OP_REMOVE_CACHE_DIRECTIVE" {
        id: u64,
    }
    /// The directory may have snapshots from now on.
    AllowSnapshot = 28, "OP_ALLOW_SNAPSHOT" {
        path: String,
    }
    DisallowSnapshot = 29, "OP_DISALLOW_SNAPSHOT" {
        path: String,
    }
    /// Snapshot `id` of directory `path`, named `name`, taken at `mtime` (the directory's
    /// time moves to it, as in HDFS).
    CreateSnapshot = 30, "OP_CREATE_SNAPSHOT" {
        path: String,
        name: String,
        id: u64,
        mtime: i64,
    }
    DeleteSnapshot = 31, "OP_DELETE_SNAPSHOT" {
        path: String,
        name: String,
        mtime: i64,
    }
    RenameSnapshot = 32, "OP_RENAME_SNAPSHOT" {
        path: String,
        old: String,
        new: String,
        mtime: i64,
    }
    /// Copy-on-truncate, right after the `Truncate` that cuts inside the last block of a
    /// file a snapshot shows: that block stays whole for the snapshot, and the file's last
    /// block becomes new block `id` (stamp `gs`), which block recovery fills with the
    /// bytes the cut keeps (HDFS's truncate with a `truncateBlock` of its own id).
    CopyOnTruncate = 33, "OP_TRUNCATE_COPY" {
        path: String,
        id: u64,
        gs: u64,
    }
    /// Lease recovery hands an open file's lease from `holder` to `new_holder` (the client
    /// that called recoverLease, or the NameNode itself), as HDFS's `reassignLease` does:
    /// until the file closes, its old writer's calls are refused.
    ReassignLease = 34, "OP_REASSIGN_LEASE" {
        path: String,
        holder: String,
        new_holder: String,
    }
    /// The RPC call (clientId, callId) whose records follow it, so that a NameNode
    /// replaying the journal answers that call's retry as the first attempt was answered
    /// (HDFS keeps these ids on its at-most-once edits). `answer` is what the call
    /// returned ([`RetryAnswer`]). `path` is how replay tells that the call's records
    /// survived: the path is there (with inode `id`, when not 0) or, with `gone`, is not.
    /// Changes nothing in the namespace.
    RetryId = 35, "OP_RETRY_ID" {
        client_id: Vec<u8>,
        call_id: i64,
        answer: u8,
        path: String,
        gone: bool,
        id: u64,
    }
}

/// What a call recorded by [`Op::RetryId`] answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryAnswer {
    /// Nothing (rename2, concat, deleteSnapshot, renameSnapshot).
    Empty = 0,
    /// `true` (delete, the legacy rename).
    True = 1,
    /// The status of the file at `path` (create).
    Status = 2,
    /// `path` itself, the new snapshot's (createSnapshot).
    Path = 3,
}

impl RetryAnswer {
    pub fn from_u8(v: u8) -> Option<RetryAnswer> {
        [
            RetryAnswer::Empty,
            RetryAnswer::True,
            RetryAnswer::Status,
            RetryAnswer::Path,
        ]
        .into_iter()
        .find(|a| *a as u8 == v)
    }
}

/// Where records' fields are written: the journal codec's buffer.
pub trait FieldWriter {
    fn u8(&mut self, v: u8);
    fn u16(&mut self, v: u16);
    fn u32(&mut self, v: u32);
    fn u64(&mut self, v: u64);
    /// A length-prefixed UTF-8 string.
    fn str(&mut self, v: &str);
    /// Length-prefixed bytes.
    fn bytes(&mut self, v: &[u8]);
}

/// Where records' fields are read from: bounds-checked, every error precise.
pub trait FieldReader {
    type Error;
    fn u8(&mut self) -> Result<u8, Self::Error>;
    fn u16(&mut self) -> Result<u16, Self::Error>;
    fn u32(&mut self) -> Result<u32, Self::Error>;
    fn u64(&mut self) -> Result<u64, Self::Error>;
    fn str(&mut self) -> Result<String, Self::Error>;
    fn bytes(&mut self) -> Result<Vec<u8>, Self::Error>;
    /// Refuses a count of `n` items that cannot fit in what is left (each takes at least
    /// `min_size` bytes), before anything is sized by it.
    fn check_count(&mut self, n: usize, min_size: usize) -> Result<(), Self::Error>;
}

/// A type a record field may have, with its encoding: integers little-endian, strings
/// `u32 length + UTF-8`, `bool` and `Option` a presence byte (any non-zero is set), lists
/// a `u32` count.
pub trait Field: Sized {
    fn write<W: FieldWriter>(&self, w: &mut W);
    fn read<R: FieldReader>(r: &mut R) -> Result<Self, R::Error>;
}

impl Field for u8 {
    fn write<W: FieldWriter>(&self, w: &mut W) {
        w.u8(*self)
    }
    fn read<R: FieldReader>(r: &mut R) -> Result<Self, R::Error> {
        r.u8()
    }
}

/// Bytes (an xattr's value): a `u32` length, then the bytes.
impl Field for Vec<u8> {
    fn write<W: FieldWriter>(&self, w: &mut W) {
        w.bytes(self)
    }
    fn read<R: FieldReader>(r: &mut R) -> Result<Self, R::Error> {
        r.bytes()
    }
}

impl Field for u16 {
    fn write<W: FieldWriter>(&self, w: &mut W) {
        w.u16(*self)
    }
    fn read<R: FieldReader>(r: &mut R) -> Result<Self, R::Error> {
        r.u16()
    }
}

impl Field for u64 {
    fn write<W: FieldWriter>(&self, w: &mut W) {
        w.u64(*self)
    }
    fn read<R: FieldReader>(r: &mut R) -> Result<Self, R::Error> {
        r.u64()
    }
}

impl Field for i64 {
    fn write<W: FieldWriter>(&self, w: &mut W) {
        w.u64(*self as u64)
    }
    fn read<R: FieldReader>(r: &mut R) -> Result<Self, R::Error> {
        Ok(r.u64()? as i64)
    }
}

impl Field for bool {
    fn write<W: FieldWriter>(&self, w: &mut W) {
        w.u8(u8::from(*self))
    }
    fn read<R: FieldReader>(r: &mut R) -> Result<Self, R::Error> {
        Ok(r.u8()? != 0)
    }
}

impl Field for String {
    fn write<W: FieldWriter>(&self, w: &mut W) {
        w.str(self)
    }
    fn read<R: FieldReader>(r: &mut R) -> Result<Self, R::Error> {
        r.str()
    }
}

impl<T: Field> Field for Option<T> {
    fn write<W: FieldWriter>(&self, w: &mut W) {
        match self {
            Some(v) => {
                w.u8(1);
                v.write(w);
            }
            None => w.u8(0),
        }
    }
    fn read<R: FieldReader>(r: &mut R) -> Result<Self, R::Error> {
        Ok(match r.u8()? {
            0 => None,
            _ => Some(T::read(r)?),
        })
    }
}

impl<A: Field, B: Field> Field for (A, B) {
    fn write<W: FieldWriter>(&self, w: &mut W) {
        self.0.write(w);
        self.1.write(w);
    }
    fn read<R: FieldReader>(r: &mut R) -> Result<Self, R::Error> {
        Ok((A::read(r)?, B::read(r)?))
    }
}

impl Field for Vec<String> {
    fn write<W: FieldWriter>(&self, w: &mut W) {
        w.u32(self.len() as u32);
        for s in self {
            w.str(s);
        }
    }
    fn read<R: FieldReader>(r: &mut R) -> Result<Self, R::Error> {
        let n = r.u32()? as usize;
        // Each string takes at least its length prefix.
        r.check_count(n, 4)?;
        (0..n).map(|_| r.str()).collect()
    }
}

/// One line per record for people (`ferrite oev`, logs): the op's name (HDFS's edits
/// viewer's where HDFS has a counterpart, `OP_ADD` for a create, say; in the same style
/// where it has none, `OP_BUMP_GENSTAMP`), then `key=value` fields. Strings that would not
/// read back as one word (spaces, quotes, `=`, control characters, or empty) are quoted
/// and escaped; times are milliseconds since the epoch, permissions octal.
impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())?;
        match self {
            Op::Mkdir {
                path,
                id,
                perm,
                owner,
                group,
                mtime,
            } => write!(
                f,
                " path={} id={id} perm={perm:04o} owner={} group={} mtime={mtime}",
                word(path),
                word(owner),
                word(group)
            ),
            Op::Create {
                path,
                id,
                perm,
                owner,
                group,
                mtime,
                replication,
                block_size,
                client_name,
                client_machine,
            } => write!(
                f,
                " path={} id={id} perm={perm:04o} owner={} group={} mtime={mtime} \
                 replication={replication} block_size={block_size} client={} machine={}",
                word(path),
                word(owner),
                word(group),
                word(client_name),
                word(client_machine)
            ),
            Op::AddBlock {
                path,
                id,
                gs,
                prev_len,
            } => write!(
                f,
                " path={} block={id} gs={gs} prev_len={prev_len}",
                word(path)
            ),
            Op::BumpGenerationStamp { path, id, gs } => {
                write!(f, " path={} block={id} gs={gs}", word(path))
            }
            Op::AbandonBlock { path, id } => {
                write!(f, " path={} block={id}", word(path))
            }
            Op::Close { path, mtime, len } => {
                write!(f, " path={} mtime={mtime} len={len}", word(path))
            }
            Op::SetXAttr {
                path,
                ns,
                name,
                value,
            } => write!(
                f,
                " path={} ns={ns} name={} value_len={}",
                word(path),
                word(name),
                value.as_ref().map_or(-1, |v| v.len() as i64)
            ),
            Op::RemoveXAttr { path, ns, name } => {
                write!(f, " path={} ns={ns} name={}", word(path), word(name))
            }
            Op::SetStoragePolicy { path, policy } => {
                write!(f, " path={} policy={policy}", word(path))
            }
            Op::SetCachePool {
                name,
                owner,
                group,
                mode,
                limit,
                max_relative_expiry_ms,
                default_replication,
            } => write!(
                f,
                " name={} owner={} group={} mode={mode:04o} limit={limit} max_expiry={max_relative_expiry_ms} replication={default_replication}",
                word(name),
                word(owner),
                word(group)
            ),
            Op::RemoveCachePool { name } => write!(f, " name={}", word(name)),
            Op::SetCacheDirective {
                id,
                path,
                replication,
                pool,
                expiry_ms,
            } => write!(
                f,
                " id={id} path={} replication={replication} pool={} expiry={expiry_ms}",
                word(path),
                word(pool)
            ),
            Op::RemoveCacheDirective { id } => write!(f, " id={id}"),
            Op::AllowSnapshot { path } | Op::DisallowSnapshot { path } => {
                write!(f, " path={}", word(path))
            }
            Op::CreateSnapshot {
                path,
                name,
                id,
                mtime,
            } => write!(
                f,
                " path={} name={} id={id} mtime={mtime}",
                word(path),
                word(name)
            ),
            Op::DeleteSnapshot { path, name, mtime } => {
                write!(f, " path={} name={} mtime={mtime}", word(path), word(name))
            }
            Op::RenameSnapshot {
                path,
                old,
                new,
                mtime,
            } => write!(
                f,
                " path={} old={} new={} mtime={mtime}",
                word(path),
                word(old),
                word(new)
            ),
            Op::ReassignLease {
                path,
                holder,
                new_holder,
            } => write!(
                f,
                " path={} holder={} new_holder={}",
                word(path),
                word(holder),
                word(new_holder)
            ),
            Op::CopyOnTruncate { path, id, gs } => {
                write!(f, " path={} id={id} gs={gs}", word(path))
            }
            Op::RetryId {
                client_id,
                call_id,
                answer,
                path,
                gone,
                id,
            } => {
                let client: String = client_id.iter().map(|b| format!("{b:02x}")).collect();
                write!(
                    f,
                    " client_id={client} call_id={call_id} answer={answer} path={} gone={gone} id={id}",
                    word(path)
                )
            }
            Op::SetQuota { path, ns, space } => {
                write!(f, " path={} ns={ns} space={space}", word(path))
            }
            Op::SetTypeQuota {
                path,
                storage_type,
                quota,
            } => write!(f, " path={} type={storage_type} quota={quota}", word(path)),
            Op::SetAcl {
                path,
                perm,
                entries,
            } => write!(
                f,
                " path={} perm={perm:04o} entries={}",
                word(path),
                word(&entries.join(","))
            ),
            Op::Rename {
                src,
                dst,
                mtime,
                overwrite,
            } => write!(
                f,
                " src={} dst={} mtime={mtime} overwrite={overwrite}",
                word(src),
                word(dst)
            ),
            Op::Delete { path, mtime } => {
                write!(f, " path={} mtime={mtime}", word(path))
            }
            Op::SetPermission { path, perm } => {
                write!(f, " path={} perm={perm:04o}", word(path))
            }
            Op::SetOwner { path, owner, group } => {
                write!(f, " path={}", word(path))?;
                if let Some(o) = owner {
                    write!(f, " owner={}", word(o))?;
                }
                if let Some(g) = group {
                    write!(f, " group={}", word(g))?;
                }
                Ok(())
            }
            Op::SetTimes { path, mtime, atime } => {
                write!(f, " path={}", word(path))?;
                if let Some(m) = mtime {
                    write!(f, " mtime={m}")?;
                }
                if let Some(a) = atime {
                    write!(f, " atime={a}")?;
                }
                Ok(())
            }
            Op::SetReplication { path, replication } => {
                write!(f, " path={} replication={replication}", word(path))
            }
            Op::SetGenerationStamp { gs } => write!(f, " gs={gs}"),
            Op::Truncate {
                path,
                len,
                mtime,
                client_name,
                client_machine,
                cut,
            } => {
                write!(f, " path={} len={len} mtime={mtime}", word(path))?;
                if let Some((kept, had)) = cut {
                    write!(
                        f,
                        " block_keeps={kept} block_had={had} client={} machine={}",
                        word(client_name),
                        word(client_machine)
                    )?;
                }
                Ok(())
            }
            Op::Concat {
                target,
                srcs,
                mtime,
            } => {
                write!(f, " target={} mtime={mtime}", word(target))?;
                for s in srcs {
                    write!(f, " src={}", word(s))?;
                }
                Ok(())
            }
            Op::Append {
                path,
                client_name,
                client_machine,
                last_len,
            } => write!(
                f,
                " path={} client={} machine={} last_len={last_len}",
                word(path),
                word(client_name),
                word(client_machine)
            ),
            Op::UpdateLastBlock { path, id, gs, len } => {
                write!(f, " path={} block={id} gs={gs} len={len}", word(path))
            }
        }
    }
}

/// A string field as one word: quoted and escaped unless it already reads back as one.
fn word(s: &str) -> std::borrow::Cow<'_, str> {
    let plain = !s.is_empty()
        && !s
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | '\\' | '='));
    if plain {
        s.into()
    } else {
        format!("{s:?}").into()
    }
}

/// A mkdir record of `path` (mode 755, owner u:g) at `mtime`, for tests that feed records.
#[cfg(any(test, feature = "test-support"))]
pub fn mkdir_record(path: &str, id: u64, mtime: i64) -> Op {
    Op::Mkdir {
        path: path.into(),
        id,
        perm: 0o755,
        owner: "u".into(),
        group: "g".into(),
        mtime,
    }
}

/// A create record of `path` (mode 644, owner hdfs:supergroup, replication 3, blocks of
/// `block_size`) open for `client`, for tests that feed records.
#[cfg(any(test, feature = "test-support"))]
pub fn create_record(path: &str, id: u64, block_size: u64, client: &str) -> Op {
    Op::Create {
        path: path.into(),
        id,
        perm: 0o644,
        owner: "hdfs".into(),
        group: "supergroup".into(),
        mtime: 1,
        replication: 3,
        block_size,
        client_name: client.into(),
        client_machine: "127.0.0.1".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::Op;

    #[test]
    fn records_read_as_one_line_of_named_fields() {
        for op in crate::codec::tests::sample_ops() {
            let line = op.to_string();
            assert!(line.starts_with(op.name()), "{line}");
            assert!(!line.contains('\n'), "{line}");
        }
        let mkdir = Op::Mkdir {
            path: "/a b/c=d".into(),
            id: 16390,
            perm: 0o1755,
            owner: "alice".into(),
            group: String::new(),
            mtime: 7,
        };
        assert_eq!(
            mkdir.to_string(),
            r#"OP_MKDIR path="/a b/c=d" id=16390 perm=1755 owner=alice group="" mtime=7"#
        );
        let chown = Op::SetOwner {
            path: "/x".into(),
            owner: None,
            group: Some("staff".into()),
        };
        assert_eq!(chown.to_string(), "OP_SET_OWNER path=/x group=staff");
    }
}
