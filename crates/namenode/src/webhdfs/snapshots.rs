//! WebHDFS's snapshot answers as HDFS 3.4.1's `JsonUtil` writes them: the diff report
//! (`SnapshotDiffReport`), its paged form (`SnapshotDiffReportListing`), the snapshottable
//! directories (`SnapshottableDirectoryList`) and one directory's snapshots
//! (`SnapshotList`). Keys sorted, as HDFS's `TreeMap`s give them. Pure.

use serde_json::{json, Map, Value};

use super::json::file_status;
use crate::namespace::snapshot::diff::{DiffEntry, DiffListing, ListingEntry};
use crate::namespace::snapshot::ops::snapshot_path;
use crate::service::{SnapshotEntry, SnapshottableDir};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// HDFS's `DiffType` by name, from the report's one-letter label.
fn diff_type(kind: char) -> &'static str {
    match kind {
        '+' => "CREATE",
        '-' => "DELETE",
        'R' => "RENAME",
        _ => "MODIFY",
    }
}

/// GETSNAPSHOTDIFF's answer. `to` is written as the caller named it (empty for now).
pub(super) fn diff_doc(root: &str, from: &str, to: &str, entries: &[DiffEntry]) -> Value {
    let list: Vec<Value> = entries
        .iter()
        .map(|e| {
            let mut m = Map::new();
            m.insert("sourcePath".into(), text(&e.path).into());
            if let Some(t) = &e.target {
                m.insert("targetPath".into(), text(t).into());
            }
            m.insert("type".into(), diff_type(e.kind).into());
            Value::Object(m)
        })
        .collect();
    json!({"SnapshotDiffReport": {
        "diffList": list,
        "fromSnapshot": from,
        "snapshotRoot": root,
        "toSnapshot": to,
    }})
}

fn listing_entry(e: &ListingEntry) -> Value {
    let mut m = Map::new();
    m.insert("dirId".into(), e.dir_id.into());
    m.insert("fileId".into(), e.file_id.into());
    m.insert("isReference".into(), e.reference.into());
    m.insert("sourcePath".into(), text(&e.path).into());
    if let Some(t) = &e.target {
        m.insert("targetPath".into(), text(t).into());
    }
    Value::Object(m)
}

/// GETSNAPSHOTDIFFLISTING's answer: the whole report in one page, so the cursor
/// (`lastPath`, `lastIndex`) says there is no next one, as the RPC's does.
pub(super) fn diff_listing_doc(l: &DiffListing) -> Value {
    let list = |v: &[ListingEntry]| v.iter().map(listing_entry).collect::<Vec<_>>();
    json!({"SnapshotDiffReportListing": {
        "createList": list(&l.created),
        "deleteList": list(&l.deleted),
        "isFromEarlier": l.from_earlier,
        "lastIndex": -1,
        "lastPath": "",
        "modifyList": list(&l.modified),
    }})
}

/// GETSNAPSHOTTABLEDIRECTORYLIST's answer; `null` when there is none, as HDFS's RPC
/// answers no listing at all then.
pub(super) fn snapshottable_doc(dirs: &[SnapshottableDir]) -> Value {
    let list = (!dirs.is_empty()).then(|| {
        dirs.iter()
            .map(|d| {
                json!({
                    "dirStatus": file_status(&d.status),
                    "parentFullPath": d.parent,
                    "snapshotNumber": d.snapshots,
                    "snapshotQuota": d.quota,
                })
            })
            .collect::<Vec<_>>()
    });
    json!({ "SnapshottableDirectoryList": list })
}

/// GETSNAPSHOTLIST's answer: each snapshot's root status, id and path.
pub(super) fn snapshot_list_doc(snaps: &[SnapshotEntry]) -> Value {
    let list = (!snaps.is_empty()).then(|| {
        snaps
            .iter()
            .map(|s| {
                json!({
                    "deletionStatus": "ACTIVE",
                    "dirStatus": file_status(&s.status),
                    "fullPath": snapshot_path(&s.root, &text(&s.status.name)),
                    "snapshotID": s.id,
                })
            })
            .collect::<Vec<_>>()
    });
    json!({ "SnapshotList": list })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_entries_name_their_type_and_target() {
        let e = [
            DiffEntry {
                kind: 'M',
                path: Vec::new(),
                target: None,
            },
            DiffEntry {
                kind: 'R',
                path: b"a".to_vec(),
                target: Some(b"b".to_vec()),
            },
        ];
        let doc = diff_doc("/d", "s1", "", &e);
        let list = &doc["SnapshotDiffReport"]["diffList"];
        assert_eq!(list[0], json!({"sourcePath": "", "type": "MODIFY"}));
        assert_eq!(
            list[1],
            json!({"sourcePath": "a", "targetPath": "b", "type": "RENAME"})
        );
        assert_eq!(doc["SnapshotDiffReport"]["toSnapshot"], "");
    }

    #[test]
    fn no_snapshottable_directory_is_null() {
        assert_eq!(
            snapshottable_doc(&[]),
            json!({ "SnapshottableDirectoryList": null })
        );
    }
}
