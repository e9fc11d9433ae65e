//! Operation records: every namespace mutation is one of these, applied by
//! [`Namespace::apply`](super::Namespace::apply). Live RPCs, journal replay and (later)
//! replication all go through the same records, so they cannot drift apart.
//!
//! A record carries every value the mutation needs (ids, times, owners), so applying it
//! consults no clock and no configuration: replay is deterministic.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Mkdir {
        path: String,
        id: u64,
        perm: u16,
        owner: String,
        group: String,
        mtime: i64,
    },
    /// Create a file open for write by `client_name`. An existing file at `path` is replaced.
    Create {
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
    },
    /// Allocate a new last block of an open file. The block before it (if any) is
    /// finished with `prev_len` bytes.
    AddBlock {
        path: String,
        id: u64,
        gs: u64,
        prev_len: u64,
    },
    /// Give the last block of an open file a new generation stamp (pipeline recovery), so
    /// replicas left by the failed pipeline can be told from the recovered ones.
    BumpGenerationStamp {
        path: String,
        id: u64,
        gs: u64,
    },
    /// Drop the last block of an open file (a writer that could not set up its pipeline).
    AbandonBlock {
        path: String,
        id: u64,
    },
    /// Close a file that was open for write (complete, or lease recovery). `len` is the
    /// file's final length; the last block gets whatever the earlier blocks do not hold.
    Close {
        path: String,
        mtime: i64,
        len: u64,
    },
    /// Move `src` to exactly `dst`; an existing `dst` is replaced when `overwrite` is set.
    Rename {
        src: String,
        dst: String,
        mtime: i64,
        overwrite: bool,
    },
    Delete {
        path: String,
        mtime: i64,
    },
    SetPermission {
        path: String,
        perm: u16,
    },
    SetOwner {
        path: String,
        owner: Option<String>,
        group: Option<String>,
    },
    SetTimes {
        path: String,
        mtime: Option<i64>,
        atime: Option<i64>,
    },
    SetReplication {
        path: String,
        replication: u16,
    },
    /// Open a closed file for write again by `client_name` (append). `last_len` is what its
    /// last block holds now (the summary needs it to follow later block records).
    Append {
        path: String,
        client_name: String,
        client_machine: String,
        last_len: u64,
    },
    /// Cut a closed file to `len` bytes: blocks past it are dropped. When `len` falls inside
    /// a block (`cut`: the bytes that block keeps, and the bytes it had), the file opens
    /// for write by `client_name` and, as in HDFS, keeps showing that block whole until
    /// block recovery has cut its replicas and closes the file at `len`.
    Truncate {
        path: String,
        len: u64,
        mtime: i64,
        client_name: String,
        client_machine: String,
        cut: Option<(u64, u64)>,
    },
    /// Move the blocks of `srcs`, in order, to the end of `target` and delete the sources.
    Concat {
        target: String,
        srcs: Vec<String>,
        mtime: i64,
    },
    /// Hands out generation stamps up to `gs` (a block recovery's id), so that none is
    /// given twice, even across a restart, while the recovery has not committed.
    SetGenerationStamp {
        gs: u64,
    },
    /// The last block of an open file takes stamp `gs` and holds `len` bytes: a block
    /// recovery's outcome, or the length an hsync recorded (`gs` unchanged then).
    UpdateLastBlock {
        path: String,
        id: u64,
        gs: u64,
        len: u64,
    },
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

impl Op {
    /// The name [`Display`](std::fmt::Display) gives this kind of record.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Mkdir { .. } => "OP_MKDIR",
            Op::Create { .. } => "OP_ADD",
            Op::AddBlock { .. } => "OP_ADD_BLOCK",
            Op::BumpGenerationStamp { .. } => "OP_BUMP_GENSTAMP",
            Op::AbandonBlock { .. } => "OP_ABANDON_BLOCK",
            Op::Close { .. } => "OP_CLOSE",
            Op::Rename { .. } => "OP_RENAME",
            Op::Delete { .. } => "OP_DELETE",
            Op::SetPermission { .. } => "OP_SET_PERMISSIONS",
            Op::SetOwner { .. } => "OP_SET_OWNER",
            Op::SetTimes { .. } => "OP_TIMES",
            Op::SetReplication { .. } => "OP_SET_REPLICATION",
            Op::SetGenerationStamp { .. } => "OP_SET_GENSTAMP_V2",
            Op::Append { .. } => "OP_APPEND",
            Op::Truncate { .. } => "OP_TRUNCATE",
            Op::Concat { .. } => "OP_CONCAT_DELETE",
            Op::UpdateLastBlock { .. } => "OP_UPDATE_BLOCKS",
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
#[cfg(test)]
pub(crate) fn mkdir_record(path: &str, id: u64, mtime: i64) -> Op {
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
#[cfg(test)]
pub(crate) fn create_record(path: &str, id: u64, block_size: u64, client: &str) -> Op {
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
        for op in crate::journal::codec::tests::sample_ops() {
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
