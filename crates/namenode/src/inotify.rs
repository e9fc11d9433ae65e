//! HDFS's inotify (`getEditsFromTxid`): the journal's records as the events HDFS's
//! `InotifyFSEditLogOpTranslator` makes of its edit-log ops. Pure: records in, events out.
//!
//! Ferrite's records carry less than HDFS's in two places, so two fields are always
//! their default: a create's `overwrite` (a create replacing a file is one record, as
//! HDFS's delete-then-add is not) and an append's `newBlock`.

use ferrite_proto::hdfs::*;
use prost::Message;

use crate::namespace::acl::{AclEntry, Kind, Scope};
use crate::namespace::Op;

fn event<M: Message>(kind: EventType, contents: M) -> EventProto {
    EventProto {
        r#type: kind as i32,
        contents: contents.encode_to_vec(),
    }
}

fn perms(perm: u16) -> FsPermissionProto {
    FsPermissionProto {
        perm: u32::from(perm),
    }
}

fn metadata(path: &str, kind: MetadataUpdateType) -> MetadataUpdateEventProto {
    MetadataUpdateEventProto {
        path: path.to_string(),
        r#type: kind as i32,
        ..Default::default()
    }
}

fn acl_proto(e: &AclEntry) -> AclEntryProto {
    AclEntryProto {
        r#type: match e.kind {
            Kind::User => 0,
            Kind::Group => 1,
            Kind::Mask => 2,
            Kind::Other => 3,
        },
        scope: match e.scope {
            Scope::Access => 0,
            Scope::Default => 1,
        },
        permissions: i32::from(e.perm),
        name: e.name.clone(),
    }
}

/// The events one record makes; none for records inotify does not report (blocks,
/// generation stamps, quotas, storage policies).
pub(crate) fn events(op: &Op) -> Vec<EventProto> {
    use EventType::*;
    match op {
        Op::Mkdir {
            path,
            perm,
            owner,
            group,
            mtime,
            ..
        } => vec![event(
            EventCreate,
            CreateEventProto {
                r#type: INodeType::ITypeDirectory as i32,
                path: path.clone(),
                ctime: *mtime,
                owner_name: owner.clone(),
                group_name: group.clone(),
                perms: perms(*perm),
                ..Default::default()
            },
        )],
        Op::Create {
            path,
            perm,
            owner,
            group,
            mtime,
            replication,
            block_size,
            ..
        } => vec![event(
            EventCreate,
            CreateEventProto {
                r#type: INodeType::ITypeFile as i32,
                path: path.clone(),
                ctime: *mtime,
                owner_name: owner.clone(),
                group_name: group.clone(),
                perms: perms(*perm),
                replication: Some(i32::from(*replication)),
                symlink_target: None,
                overwrite: Some(false),
                default_block_size: Some(*block_size as i64),
                erasure_coded: Some(false),
            },
        )],
        Op::Close { path, mtime, len } => vec![event(
            EventClose,
            CloseEventProto {
                path: path.clone(),
                file_size: *len as i64,
                timestamp: *mtime,
            },
        )],
        Op::Append { path, .. } => vec![event(
            EventAppend,
            AppendEventProto {
                path: path.clone(),
                new_block: Some(false),
            },
        )],
        Op::Rename {
            src, dst, mtime, ..
        } => vec![event(
            EventRename,
            RenameEventProto {
                src_path: src.clone(),
                dest_path: dst.clone(),
                timestamp: *mtime,
            },
        )],
        Op::Delete { path, mtime } => vec![unlink(path, *mtime)],
        Op::Truncate {
            path, len, mtime, ..
        } => vec![event(
            EventTruncate,
            TruncateEventProto {
                path: path.clone(),
                file_size: *len as i64,
                timestamp: *mtime,
            },
        )],
        // As HDFS: the target is appended to, each source unlinked, the target closed.
        Op::Concat {
            target,
            mtime,
            srcs,
        } => {
            let mut out = vec![event(
                EventAppend,
                AppendEventProto {
                    path: target.clone(),
                    new_block: Some(false),
                },
            )];
            out.extend(srcs.iter().map(|s| unlink(s, *mtime)));
            out.push(event(
                EventClose,
                CloseEventProto {
                    path: target.clone(),
                    file_size: -1,
                    timestamp: *mtime,
                },
            ));
            out
        }
        Op::SetPermission { path, perm } => vec![event(
            EventMetadata,
            MetadataUpdateEventProto {
                perms: Some(perms(*perm)),
                ..metadata(path, MetadataUpdateType::MetaTypePerms)
            },
        )],
        Op::SetOwner { path, owner, group } => vec![event(
            EventMetadata,
            MetadataUpdateEventProto {
                owner_name: owner.clone(),
                group_name: group.clone(),
                ..metadata(path, MetadataUpdateType::MetaTypeOwner)
            },
        )],
        Op::SetTimes { path, mtime, atime } => vec![event(
            EventMetadata,
            MetadataUpdateEventProto {
                mtime: Some(mtime.unwrap_or(-1)),
                atime: Some(atime.unwrap_or(-1)),
                ..metadata(path, MetadataUpdateType::MetaTypeTimes)
            },
        )],
        Op::SetReplication { path, replication } => vec![event(
            EventMetadata,
            MetadataUpdateEventProto {
                replication: Some(i32::from(*replication)),
                ..metadata(path, MetadataUpdateType::MetaTypeReplication)
            },
        )],
        Op::SetAcl { path, entries, .. } => vec![event(
            EventMetadata,
            MetadataUpdateEventProto {
                acls: entries
                    .iter()
                    .filter_map(|e| AclEntry::parse(e, true).ok())
                    .map(|e| acl_proto(&e))
                    .collect(),
                ..metadata(path, MetadataUpdateType::MetaTypeAcls)
            },
        )],
        Op::SetXAttr {
            path,
            ns,
            name,
            value,
        } => vec![event(
            EventMetadata,
            MetadataUpdateEventProto {
                x_attrs: vec![XAttrProto {
                    namespace: i32::from(*ns),
                    name: name.clone(),
                    value: value.clone(),
                }],
                x_attrs_removed: Some(false),
                ..metadata(path, MetadataUpdateType::MetaTypeXattrs)
            },
        )],
        Op::RemoveXAttr { path, ns, name } => vec![event(
            EventMetadata,
            MetadataUpdateEventProto {
                x_attrs: vec![XAttrProto {
                    namespace: i32::from(*ns),
                    name: name.clone(),
                    value: None,
                }],
                x_attrs_removed: Some(true),
                ..metadata(path, MetadataUpdateType::MetaTypeXattrs)
            },
        )],
        _ => Vec::new(),
    }
}

fn unlink(path: &str, mtime: i64) -> EventProto {
    event(
        EventType::EventUnlink,
        UnlinkEventProto {
            path: path.to_string(),
            timestamp: mtime,
        },
    )
}

/// The records `(txid, op)` read from the journal as HDFS's events list: one batch per
/// record that makes events; `synced` the journal's last durable txid. With nothing read,
/// first and last are -1, which tells the client to come back later.
pub(crate) fn events_list(records: &[(u64, Op)], synced: u64) -> EventsListProto {
    let batch = records
        .iter()
        .filter_map(|(txid, op)| {
            let events = events(op);
            (!events.is_empty()).then_some(EventBatchProto {
                txid: *txid as i64,
                events,
            })
        })
        .collect();
    let (first, last) = match (records.first(), records.last()) {
        (Some(f), Some(l)) => (f.0 as i64, l.0 as i64),
        _ => (-1, -1),
    };
    EventsListProto {
        events: Vec::new(),
        first_txid: first,
        last_txid: last,
        sync_txid: synced as i64,
        batch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_become_hdfs_events_and_block_records_none() {
        let records = vec![
            (
                5,
                Op::Mkdir {
                    path: "/d".into(),
                    id: 16386,
                    perm: 0o755,
                    owner: "a".into(),
                    group: "g".into(),
                    mtime: 9,
                },
            ),
            (
                6,
                Op::AddBlock {
                    path: "/d/f".into(),
                    id: 1,
                    gs: 2,
                    prev_len: 0,
                },
            ),
            (
                7,
                Op::Concat {
                    target: "/d/t".into(),
                    mtime: 10,
                    srcs: vec!["/d/s1".into(), "/d/s2".into()],
                },
            ),
        ];
        let l = events_list(&records, 7);
        assert_eq!((l.first_txid, l.last_txid, l.sync_txid), (5, 7, 7));
        assert_eq!(l.batch.len(), 2, "the block record makes no event");
        let kinds: Vec<i32> = l.batch[1].events.iter().map(|e| e.r#type).collect();
        assert_eq!(kinds, [2, 5, 5, 1], "append, two unlinks, close");
        let create = CreateEventProto::decode(&l.batch[0].events[0].contents[..]).unwrap();
        assert_eq!((create.path.as_str(), create.r#type), ("/d", 1));
        let empty = events_list(&[], 7);
        assert_eq!((empty.first_txid, empty.last_txid), (-1, -1));
    }
}
