//! The NameNode's WebHDFS answers as HDFS 3.4.1 writes them: its field names, its types
//! (permissions as octal text, times in ms), keys in its order (sorted, as its `TreeMap`s
//! give them). Pure: domain values in, JSON out.

use std::ops::Range;

use ferrite_blocktoken::Token;
use std::borrow::Cow;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::blocks::registry::{NodeIx, Registry};
use crate::clock::monotonic_ms;
use crate::namespace::blocks::Placed;
use crate::namespace::query::{ContentSummary, FileStatus};
use crate::namespace::quota::{type_name, QuotaView, NONE};
use crate::namespace::storage_policy::{Policy, POLICIES};
use crate::service::LocatedSink;
use crate::service::{FsStats, ServerDefaults};

/// Sorts an object's keys, as HDFS's `TreeMap`s order them.
fn sorted(mut m: Map<String, Value>) -> Value {
    m.sort_keys();
    Value::Object(m)
}

/// One `FileStatus` object (a listing's entry, or a path's own with an empty suffix),
/// serialized straight from the status it borrows: HDFS's keys in HDFS's (sorted) order,
/// with no map built per entry (a listing of 100 spent most of its time in the allocator
/// and a `Map` per entry).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStatusJson<'a> {
    access_time: i64,
    /// Only when there is an ACL, as HDFS writes it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    acl_bit: bool,
    block_size: u64,
    children_num: i32,
    file_id: u64,
    group: &'a str,
    length: u64,
    modification_time: i64,
    owner: &'a str,
    path_suffix: Cow<'a, str>,
    permission: Octal,
    replication: u16,
    /// Only for a snapshottable directory (HDFS makes the root one from the start, with a
    /// snapshot quota of 0).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    snapshot_enabled: bool,
    storage_policy: u8,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl<'a> FileStatusJson<'a> {
    pub fn of(st: &'a FileStatus) -> Self {
        FileStatusJson {
            access_time: st.atime,
            acl_bit: st.has_acl,
            block_size: st.block_size,
            children_num: st.children,
            file_id: st.file_id,
            group: &st.group,
            length: st.len,
            modification_time: st.mtime,
            owner: &st.owner,
            path_suffix: String::from_utf8_lossy(&st.name),
            permission: Octal(st.perm & 0o1777),
            replication: st.replication,
            snapshot_enabled: st.snapshot_enabled,
            storage_policy: st.storage_policy,
            kind: if st.is_dir { "DIRECTORY" } else { "FILE" },
        }
    }
}

/// Permission bits as HDFS writes them: octal digits in a string.
struct Octal(u16);

impl Serialize for Octal {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:o}", self.0))
    }
}

pub fn file_status(st: &FileStatus) -> Value {
    serde_json::to_value(FileStatusJson::of(st)).expect("a status serializes")
}

pub fn file_status_doc(st: &FileStatus) -> Value {
    json!({ "FileStatus": file_status(st) })
}

#[derive(Serialize)]
pub struct Statuses<'a> {
    #[serde(rename = "FileStatus")]
    list: Vec<FileStatusJson<'a>>,
}

impl<'a> Statuses<'a> {
    fn of(entries: &'a [FileStatus]) -> Self {
        Statuses {
            list: entries.iter().map(FileStatusJson::of).collect(),
        }
    }
}

/// LISTSTATUS's answer.
#[derive(Serialize)]
pub struct ListingDoc<'a> {
    #[serde(rename = "FileStatuses")]
    statuses: Statuses<'a>,
}

pub fn listing_doc(entries: &[FileStatus]) -> ListingDoc<'_> {
    ListingDoc {
        statuses: Statuses::of(entries),
    }
}

/// LISTSTATUS_BATCH's page.
#[derive(Serialize)]
pub struct BatchDoc<'a> {
    #[serde(rename = "DirectoryListing")]
    listing: BatchPage<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BatchPage<'a> {
    partial_listing: ListingDoc<'a>,
    remaining_entries: u32,
}

pub fn batch_doc(entries: &[FileStatus], remaining: u32) -> BatchDoc<'_> {
    BatchDoc {
        listing: BatchPage {
            partial_listing: listing_doc(entries),
            remaining_entries: remaining,
        },
    }
}

/// One policy as HDFS's `JsonUtil` writes it (keys sorted).
fn policy(p: &Policy) -> Value {
    let names = |t: &[crate::namespace::storage_policy::StorageType]| -> Vec<&str> {
        t.iter().map(|t| t.name()).collect()
    };
    json!({
        "copyOnCreateFile": p.copy_on_create_file,
        "creationFallbacks": names(p.creation_fallbacks),
        "id": p.id,
        "name": p.name,
        "replicationFallbacks": names(p.replication_fallbacks),
        "storageTypes": names(p.types),
    })
}

/// GETSTORAGEPOLICY.
pub fn policy_doc(p: &Policy) -> Value {
    json!({ "BlockStoragePolicy": policy(p) })
}

/// GETALLSTORAGEPOLICY.
pub fn all_policies_doc() -> Value {
    let all: Vec<Value> = POLICIES.iter().map(policy).collect();
    json!({ "BlockStoragePolicies": { "BlockStoragePolicy": all } })
}

/// The quota half of a summary: HDFS's `typeQuota` names only the types with a quota.
fn type_quota(q: &QuotaView) -> Value {
    let mut m = Map::new();
    for (i, &quota) in q.types.iter().enumerate() {
        if quota != NONE {
            let consumed = q.used.map_or(0, |u| u.types[i]);
            m.insert(
                type_name(i).to_string(),
                json!({"consumed": consumed, "quota": quota}),
            );
        }
    }
    sorted(m)
}

/// GETCONTENTSUMMARY.
pub fn content_summary_doc(cs: &ContentSummary, q: &QuotaView) -> Value {
    json!({"ContentSummary": {
        "directoryCount": cs.dirs,
        "ecPolicy": "",
        "fileCount": cs.files,
        "length": cs.length,
        "quota": q.ns,
        "snapshotDirectoryCount": cs.snapshot.dirs,
        "snapshotFileCount": cs.snapshot.files,
        "snapshotLength": cs.snapshot.length,
        "snapshotSpaceConsumed": cs.snapshot.space,
        "spaceConsumed": cs.space_consumed,
        "spaceQuota": q.space,
        "typeQuota": type_quota(q),
    }})
}

/// GETQUOTAUSAGE: a quota directory's own count, or the summary's for another.
pub fn quota_usage_doc(cs: &ContentSummary, q: &QuotaView) -> Value {
    let (count, space) = match q.used {
        Some(u) => (u.ns as u64, u.space as u64),
        None => (cs.files + cs.dirs, cs.space_consumed),
    };
    json!({"QuotaUsage": {
        "fileAndDirectoryCount": count,
        "quota": q.ns,
        "spaceConsumed": space,
        "spaceQuota": q.space,
        "typeQuota": type_quota(q),
    }})
}

pub fn server_defaults_doc(d: &ServerDefaults) -> Value {
    json!({"FsServerDefaults": {
        "blockSize": d.block_size,
        "bytesPerChecksum": d.bytes_per_checksum,
        "checksumType": d.checksum_type,
        "defaultStoragePolicyId": d.storage_policy_id,
        "encryptDataTransfer": false,
        "fileBufferSize": d.file_buffer_size,
        "keyProviderUri": "",
        "replication": d.replication,
        "trashInterval": d.trash_interval_min,
        "writePacketSize": d.write_packet_size,
    }})
}

pub fn fs_status_doc(s: &FsStats) -> Value {
    json!({"FsStatus": {
        "capacity": s.capacity,
        "remaining": s.remaining,
        "used": s.used,
    }})
}

pub fn path_doc(path: &str) -> Value {
    json!({ "Path": path })
}

/// A file's blocks as both of HDFS's forms want them, gathered straight from the block
/// map: GETFILEBLOCKLOCATIONS's `BlockLocations` and GET_BLOCK_LOCATIONS's `LocatedBlocks`.
pub struct JsonBlocks {
    pool: String,
    file_len: u64,
    under_construction: bool,
    tokens: Vec<(Range<usize>, Option<Token>)>,
    blocks: Vec<JsonBlock>,
    last: Option<JsonBlock>,
}

struct JsonBlock {
    placed: Placed,
    nodes: Vec<Value>,
    /// `ip:port`, host name, and topology path of each replica.
    names: Vec<(String, String, String)>,
    token: Option<Token>,
}

impl LocatedSink for JsonBlocks {
    fn start(
        pool: &str,
        file_len: u64,
        under_construction: bool,
        tokens: Vec<(Range<usize>, Option<Token>)>,
    ) -> Self {
        JsonBlocks {
            pool: pool.to_string(),
            file_len,
            under_construction,
            tokens,
            blocks: Vec::new(),
            last: None,
        }
    }

    fn push(&mut self, p: &Placed, replicas: &[(NodeIx, u8)], reg: &Registry, is_last: bool) {
        let index = self.blocks.len();
        let token = self
            .tokens
            .iter()
            .find(|(r, _)| r.contains(&index))
            .and_then(|(_, t)| t.clone());
        let mut nodes = Vec::new();
        let mut names = Vec::new();
        for &(ix, _) in replicas {
            let n = reg.get(ix);
            let id = &n.id;
            let name = id.xfer_addr();
            names.push((name.clone(), id.host.clone(), format!("{}/{name}", n.rack)));
            nodes.push(sorted(Map::from_iter([
                ("adminState".into(), json!("NORMAL")),
                ("blockPoolUsed".into(), json!(n.dfs_used())),
                ("cacheCapacity".into(), json!(0)),
                ("cacheUsed".into(), json!(0)),
                ("capacity".into(), json!(n.capacity())),
                ("dfsUsed".into(), json!(n.dfs_used())),
                ("hostName".into(), json!(id.host)),
                ("infoPort".into(), json!(id.info_port)),
                ("infoSecurePort".into(), json!(0)),
                ("ipAddr".into(), json!(id.ip)),
                ("ipcPort".into(), json!(id.ipc_port)),
                (
                    "lastBlockReportMonotonic".into(),
                    json!(monotonic_ms(n.last_block_report_ms)),
                ),
                ("lastBlockReportTime".into(), json!(n.last_block_report_ms)),
                ("lastUpdate".into(), json!(n.last_heartbeat_ms)),
                (
                    "lastUpdateMonotonic".into(),
                    json!(monotonic_ms(n.last_heartbeat_ms)),
                ),
                ("name".into(), json!(name)),
                ("networkLocation".into(), json!(n.rack)),
                ("remaining".into(), json!(n.remaining())),
                ("storageID".into(), json!(id.uuid)),
                ("xceiverCount".into(), json!(n.xceivers)),
                ("xferPort".into(), json!(id.xfer_port)),
            ])));
        }
        let b = JsonBlock {
            placed: *p,
            nodes,
            names,
            token,
        };
        // The service pushes a file's last block once more, flagged, after the list (in
        // which a closed file's last block already is).
        if is_last {
            self.last = Some(b);
        } else {
            self.blocks.push(b);
        }
    }
}

impl JsonBlocks {
    /// The first replica of the first block, for a redirect: its host name and HTTP port
    /// are in the node's JSON.
    pub fn first_node(&self) -> Option<&Value> {
        self.blocks
            .first()
            .or(self.last.as_ref())
            .and_then(|b| b.nodes.first())
    }

    /// GETFILEBLOCKLOCATIONS: each block's offset, length and replicas.
    pub fn block_locations_doc(&self) -> Value {
        let list: Vec<Value> = self
            .blocks
            .iter()
            .map(|b| {
                json!({
                    "cachedHosts": [],
                    "corrupt": false,
                    "hosts": b.names.iter().map(|n| n.1.clone()).collect::<Vec<_>>(),
                    "length": b.placed.block.len,
                    "names": b.names.iter().map(|n| n.0.clone()).collect::<Vec<_>>(),
                    "offset": b.placed.offset,
                    "storageTypes": vec!["DISK"; b.names.len()],
                    "topologyPaths": b.names.iter().map(|n| n.2.clone()).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({"BlockLocations": {"BlockLocation": list}})
    }

    /// GET_BLOCK_LOCATIONS: HDFS's `LocatedBlocks` in JSON.
    pub fn located_blocks_doc(&self) -> Value {
        let one = |b: &JsonBlock| {
            let url = b
                .token
                .as_ref()
                .map_or_else(|| "AAAAAA".to_string(), Token::to_url_string);
            json!({
                "block": {
                    "blockId": b.placed.block.id,
                    "blockPoolId": self.pool,
                    "generationStamp": b.placed.block.gs,
                    "numBytes": b.placed.block.len,
                },
                "blockToken": {"urlString": url},
                "cachedLocations": [],
                "isCorrupt": false,
                "locations": b.nodes,
                "startOffset": b.placed.offset,
                "storageTypes": vec!["DISK"; b.nodes.len()],
            })
        };
        json!({"LocatedBlocks": {
            "fileLength": self.file_len,
            "isLastBlockComplete": !self.under_construction,
            "isUnderConstruction": self.under_construction,
            "lastLocatedBlock": self.last.as_ref().map(one),
            "locatedBlocks": self.blocks.iter().map(one).collect::<Vec<_>>(),
        }})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(name: &str, is_dir: bool) -> FileStatus {
        FileStatus {
            is_dir,
            name: name.as_bytes().to_vec(),
            len: if is_dir { 0 } else { 14 },
            perm: if is_dir { 0o750 } else { 0o644 },
            owner: "root".into(),
            group: "supergroup".into(),
            mtime: 5,
            atime: 4,
            replication: if is_dir { 0 } else { 1 },
            block_size: if is_dir { 0 } else { 134217728 },
            file_id: 16389,
            children: 0,
            under_construction: false,
            storage_policy: 0,
            has_acl: false,
            snapshot_enabled: false,
        }
    }

    #[test]
    fn a_status_is_hdfs_fields_in_hdfs_order() {
        assert_eq!(
            file_status(&status("f1", false)).to_string(),
            r#"{"accessTime":4,"blockSize":134217728,"childrenNum":0,"fileId":16389,"group":"supergroup","length":14,"modificationTime":5,"owner":"root","pathSuffix":"f1","permission":"644","replication":1,"storagePolicy":0,"type":"FILE"}"#
        );
        let mut root = status("", true);
        root.snapshot_enabled = true;
        let doc = file_status_doc(&root).to_string();
        assert!(doc.contains(r#""snapshotEnabled":true,"storagePolicy":0,"type":"DIRECTORY""#));
        assert!(doc.contains(r#""permission":"750""#));
    }

    #[test]
    fn summaries_carry_hdfs_figures() {
        let cs = ContentSummary {
            length: 14,
            files: 1,
            dirs: 2,
            space_consumed: 14,
            snapshot: Default::default(),
        };
        let none = QuotaView {
            ns: NONE,
            space: NONE,
            types: [NONE; crate::namespace::quota::N_TYPES],
            used: None,
        };
        assert_eq!(
            content_summary_doc(&cs, &none).to_string(),
            r#"{"ContentSummary":{"directoryCount":2,"ecPolicy":"","fileCount":1,"length":14,"quota":-1,"snapshotDirectoryCount":0,"snapshotFileCount":0,"snapshotLength":0,"snapshotSpaceConsumed":0,"spaceConsumed":14,"spaceQuota":-1,"typeQuota":{}}}"#
        );
        assert_eq!(
            quota_usage_doc(&cs, &none).to_string(),
            r#"{"QuotaUsage":{"fileAndDirectoryCount":3,"quota":-1,"spaceConsumed":14,"spaceQuota":-1,"typeQuota":{}}}"#
        );
    }
}
