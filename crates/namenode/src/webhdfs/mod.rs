//! WebHDFS on the NameNode's HTTP port (`/webhdfs/v1/<path>?op=…`): the JSON twin of
//! `rpc/`. Each request is parsed into domain values, admitted by the service's table
//! under the RPC operation it stands for, answered by one service operation, and written
//! as HDFS 3.4.1 writes it (`json.rs`). The data operations (OPEN, CREATE, APPEND,
//! GETFILECHECKSUM) answer with a redirect to a DataNode's HTTP port, which streams the
//! bytes through its own client (see the DataNode's `webhdfs.rs`).

mod acls;
pub mod json;
mod redirect;
mod snapshots;
mod xattrs;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use axum::extract::{ConnectInfo, State};
use axum::http::{Method, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use ferrite_http::webhdfs::{self as web, boolean, empty_ok, json_ok, Params, WebError};

use crate::error::FsError;
use crate::namespace::acl_ops::AclChange;
use crate::namespace::{perm, quota, storage_policy};
use crate::service::{Admitted, NameNodeService, Operation};
use json::JsonBlocks;

/// What WebHDFS serves from, set once the NameNode is up (the HTTP port opens first).
pub struct WebHdfs {
    pub nn: Arc<NameNodeService>,
    /// The NameNode's RPC address, which redirects hand the DataNodes
    /// (`namenoderpcaddress`).
    pub rpc_addr: String,
}

pub type WebHdfsSlot = OnceLock<WebHdfs>;

/// `/webhdfs/v1` and everything under it.
pub fn router(slot: Arc<WebHdfsSlot>) -> Router {
    Router::new()
        .route(web::PREFIX, any(handle))
        .route("/webhdfs/v1/", any(handle))
        .route("/webhdfs/v1/{*path}", any(handle))
        .with_state(slot)
}

async fn handle(
    State(slot): State<Arc<WebHdfsSlot>>,
    method: Method,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
) -> Response {
    match web::path_of(&uri) {
        Ok(path) => serve(&slot, method, peer, path, web::query_of(&uri)).await,
        Err(e) => e.into_response(),
    }
}

/// One request, from parsed parts to its answer.
struct Request<'a> {
    w: &'a WebHdfs,
    path: String,
    params: Params,
    user: String,
    ip: String,
    /// `op`, upper-cased.
    op: String,
}

async fn serve(
    slot: &WebHdfsSlot,
    method: Method,
    peer: SocketAddr,
    path: String,
    params: Params,
) -> Response {
    let Some(w) = slot.get() else {
        return WebError::new(
            "org.apache.hadoop.ipc.RetriableException",
            "NameNode still not started",
        )
        .into_response();
    };
    let ip = peer.ip().to_string();
    let (user, real) = params.user();
    if let Some(real) = real {
        if let Err(m) = w.nn.authorize_proxy(&real, &user, &ip) {
            return WebError::new(
                "org.apache.hadoop.security.authorize.AuthorizationException",
                m.to_string(),
            )
            .into_response();
        }
    }
    let Some(op) = params.op() else {
        return WebError::bad_op(None, method.as_str()).into_response();
    };
    let r = Request {
        w,
        path,
        params,
        user,
        ip,
        op,
    };
    let answer = match method {
        Method::GET => r.get().await,
        Method::PUT => r.put().await,
        Method::POST => r.post().await,
        Method::DELETE => r.delete().await,
        _ => Err(WebError::new(
            web::UNSUPPORTED,
            format!("{method} is not supported"),
        )),
    };
    answer.unwrap_or_else(|e| e.into_response())
}

/// A service error as WebHDFS reports it.
fn web(e: FsError) -> WebError {
    WebError::new(e.java_class(), e.to_string())
}

type Answer = Result<Response, WebError>;

impl Request<'_> {
    fn nn(&self) -> &NameNodeService {
        &self.w.nn
    }

    /// Admission to the RPC operation this request stands for.
    fn admit(&self, rpc_op: Operation) -> Result<Admitted, WebError> {
        self.nn()
            .admit(self.user.as_str(), self.ip.as_str(), rpc_op)
            .map_err(web)
    }

    async fn get(&self) -> Answer {
        let p = &self.params;
        match self.op.as_str() {
            "OPEN" | "GETFILECHECKSUM" => self.redirect().await,
            "GETFILESTATUS" => {
                let who = self.admit(Operation::GetFileInfo)?;
                match self.nn().file_info(&who, &self.path).map_err(web)? {
                    Some(st) => Ok(json_ok(json::file_status_doc(&st))),
                    None => Err(WebError::new(
                        "java.io.FileNotFoundException",
                        format!("File does not exist: {}", self.path),
                    )),
                }
            }
            "LISTSTATUS" => {
                let who = self.admit(Operation::GetListing)?;
                Ok(json_ok(json::listing_doc(&self.list_all(&who)?)))
            }
            "LISTSTATUS_BATCH" => {
                let who = self.admit(Operation::GetListing)?;
                let after = p.get("startafter").unwrap_or("");
                let l = self.page(&who, after.as_bytes())?;
                Ok(json_ok(json::batch_doc(&l.entries, l.remaining)))
            }
            "GETCONTENTSUMMARY" | "GETQUOTAUSAGE" => {
                let who = self.admit(if self.op == "GETQUOTAUSAGE" {
                    Operation::GetQuotaUsage
                } else {
                    Operation::GetContentSummary
                })?;
                let cs = self
                    .nn()
                    .content_summary(&who, &self.path)
                    .await
                    .map_err(web)?;
                let q = self.nn().quota_view(&who, &self.path).map_err(web)?;
                Ok(json_ok(if self.op == "GETQUOTAUSAGE" {
                    json::quota_usage_doc(&cs, &q)
                } else {
                    json::content_summary_doc(&cs, &q)
                }))
            }
            "GETHOMEDIRECTORY" => Ok(json_ok(json::path_doc(&self.home()))),
            "GETTRASHROOT" => {
                // HDFS first asks which encryption zone the parent is in, which needs
                // read access to it.
                let parent = match self.path.rsplit_once('/') {
                    Some(("", _)) | None => "/",
                    Some((p, _)) => p,
                };
                let who = self.admit(Operation::CheckAccess)?;
                self.nn()
                    .check_access(&who, parent, perm::READ)
                    .map_err(web)?;
                Ok(json_ok(json::path_doc(&format!("{}/.Trash", self.home()))))
            }
            "GETFILEBLOCKLOCATIONS" | "GET_BLOCK_LOCATIONS" => {
                let who = self.admit(Operation::GetBlockLocations)?;
                let offset = p.long("offset")?.unwrap_or(0).max(0) as u64;
                let length = p.long("length")?.map_or(u64::MAX, |l| l.max(0) as u64);
                let blocks = self.blocks(&who, offset, length).await?;
                Ok(json_ok(if self.op == "GET_BLOCK_LOCATIONS" {
                    blocks.located_blocks_doc()
                } else {
                    blocks.block_locations_doc()
                }))
            }
            "GETSERVERDEFAULTS" => {
                self.admit(Operation::GetServerDefaults)?;
                Ok(json_ok(json::server_defaults_doc(
                    &self.nn().server_defaults(),
                )))
            }
            "GETSTATUS" => {
                self.admit(Operation::GetFsStats)?;
                Ok(json_ok(json::fs_status_doc(&self.nn().fs_stats())))
            }
            "GETXATTRS" => {
                let who = self.admit(Operation::GetXAttrs)?;
                let wanted = p
                    .all("xattr.name")
                    .map(xattrs::name_param)
                    .collect::<Result<Vec<_>, _>>()?;
                let encoding = xattrs::encoding_param(p.required("encoding", "GETXATTRS")?)?;
                let got = self
                    .nn()
                    .get_xattrs(&who, &self.path, &wanted)
                    .map_err(web)?;
                Ok(json_ok(xattrs::xattrs_doc(&got, encoding)))
            }
            "GETACLSTATUS" => {
                let who = self.admit(Operation::GetAclStatus)?;
                let st = self.nn().acl_status(&who, &self.path).map_err(web)?;
                Ok(json_ok(acls::status_doc(&st)))
            }
            "LISTXATTRS" => {
                let who = self.admit(Operation::ListXAttrs)?;
                let got = self.nn().list_xattrs(&who, &self.path).map_err(web)?;
                Ok(json_ok(xattrs::names_doc(&got)))
            }
            "GETALLSTORAGEPOLICY" => {
                self.admit(Operation::GetStoragePolicies)?;
                Ok(json_ok(json::all_policies_doc()))
            }
            "GETSTORAGEPOLICY" => {
                let who = self.admit(Operation::GetStoragePolicy)?;
                let policy = self.nn().storage_policy(&who, &self.path).map_err(web)?;
                Ok(json_ok(json::policy_doc(policy)))
            }
            "CHECKACCESS" => {
                let who = self.admit(Operation::CheckAccess)?;
                let action = fs_action(p.get("fsaction").unwrap_or("---"))?;
                self.nn()
                    .check_access(&who, &self.path, action)
                    .map_err(web)?;
                Ok(empty_ok())
            }
            "GETSNAPSHOTDIFF" | "GETSNAPSHOTDIFFLISTING" => {
                let from = p.get("oldsnapshotname").unwrap_or("");
                let to = p.get("snapshotname").unwrap_or("");
                let (nn, path) = (self.nn(), self.path.as_str());
                Ok(json_ok(if self.op == "GETSNAPSHOTDIFF" {
                    let who = self.admit(Operation::GetSnapshotDiffReport)?;
                    let (root, entries) = nn.snapshot_diff(&who, path, from, to).map_err(web)?;
                    snapshots::diff_doc(&root, from, to, &entries)
                } else {
                    let who = self.admit(Operation::GetSnapshotDiffReportListing)?;
                    let (_, l) = nn
                        .snapshot_diff_listing(&who, path, from, to)
                        .map_err(web)?;
                    snapshots::diff_listing_doc(&l)
                }))
            }
            "GETSNAPSHOTTABLEDIRECTORYLIST" => {
                let who = self.admit(Operation::GetSnapshottableDirListing)?;
                let dirs = self.nn().snapshottable_dirs(&who);
                Ok(json_ok(snapshots::snapshottable_doc(&dirs)))
            }
            "GETSNAPSHOTLIST" => {
                let who = self.admit(Operation::GetSnapshotListing)?;
                let snaps = self.nn().snapshot_listing(&who, &self.path).map_err(web)?;
                Ok(json_ok(snapshots::snapshot_list_doc(&snaps)))
            }
            other => Err(self.not_served(other, "GET")),
        }
    }

    async fn put(&self) -> Answer {
        let p = &self.params;
        let (nn, path) = (self.nn(), self.path.as_str());
        match self.op.as_str() {
            "CREATE" => self.redirect().await,
            "MKDIRS" => {
                let who = self.admit(Operation::Mkdirs)?;
                let mode = crate::namespace::plan::Mode {
                    masked: p.permission("permission")?.unwrap_or(0o755),
                    unmasked: p.permission("unmaskedpermission")?,
                };
                nn.mkdirs(&who, path, mode, true).await.map_err(web)?;
                Ok(boolean(true))
            }
            "RENAME" => {
                let dst = p.required("destination", "RENAME")?;
                match p.get("renameoptions").filter(|o| !o.is_empty()) {
                    None => {
                        let who = self.admit(Operation::Rename)?;
                        Ok(boolean(nn.rename(&who, path, dst).await.map_err(web)?))
                    }
                    Some(opts) => {
                        let who = self.admit(Operation::Rename2)?;
                        let overwrite = opts.split(',').any(|o| o.trim() == "OVERWRITE");
                        nn.rename2(&who, path, dst, overwrite).await.map_err(web)?;
                        Ok(empty_ok())
                    }
                }
            }
            "SETREPLICATION" => {
                let who = self.admit(Operation::SetReplication)?;
                let r = match p.short("replication")? {
                    Some(r) => r.max(0) as u32,
                    None => u32::from(nn.config().replication),
                };
                Ok(boolean(
                    nn.set_replication(&who, path, r).await.map_err(web)?,
                ))
            }
            "SETOWNER" => {
                let who = self.admit(Operation::SetOwner)?;
                let (owner, group) = (p.get("owner"), p.get("group"));
                if owner.is_none_or(str::is_empty) && group.is_none_or(str::is_empty) {
                    return Err(WebError::illegal("Both owner and group are empty."));
                }
                nn.set_owner(&who, path, owner, group).await.map_err(web)?;
                Ok(empty_ok())
            }
            "SETPERMISSION" => {
                let who = self.admit(Operation::SetPermission)?;
                let perm = p.permission("permission")?.unwrap_or(0o755);
                nn.set_permission(&who, path, perm).await.map_err(web)?;
                Ok(empty_ok())
            }
            "SATISFYSTORAGEPOLICY" => {
                let who = self.admit(Operation::SatisfyStoragePolicy)?;
                nn.satisfy_storage_policy(&who, path).await.map_err(web)?;
                Ok(empty_ok())
            }
            "SETSTORAGEPOLICY" => {
                let who = self.admit(Operation::SetStoragePolicy)?;
                let name = p
                    .get("storagepolicy")
                    .filter(|n| !n.is_empty())
                    .ok_or_else(|| WebError::illegal("Storage policy name is empty."))?;
                nn.set_storage_policy(&who, path, Some(name))
                    .await
                    .map_err(web)?;
                Ok(empty_ok())
            }
            "SETXATTR" => {
                let who = self.admit(Operation::SetXAttr)?;
                let mut x = xattrs::name_param(p.required("xattr.name", "SETXATTR")?)?;
                x.value = p.get("xattr.value").map(xattrs::decode_value).transpose()?;
                let flags = xattrs::flag_param(p.get("flag"))?;
                nn.set_xattr(&who, path, x, flags).await.map_err(web)?;
                Ok(empty_ok())
            }
            "SETQUOTA" => {
                let who = self.admit(Operation::SetQuota)?;
                let ns_q = p.long("namespacequota")?.unwrap_or(quota::DONT_SET);
                let space = p.long("storagespacequota")?.unwrap_or(quota::DONT_SET);
                nn.set_quota(&who, path, ns_q, space, None)
                    .await
                    .map_err(web)?;
                Ok(empty_ok())
            }
            "SETQUOTABYSTORAGETYPE" => {
                let who = self.admit(Operation::SetQuota)?;
                let space = p.long("storagespacequota")?.unwrap_or(quota::DONT_SET);
                let name = p.required("storagetype", "SETQUOTABYSTORAGETYPE")?;
                let t = storage_policy::StorageType::by_name(name).ok_or_else(|| {
                    WebError::illegal(format!(
                        "No enum constant org.apache.hadoop.fs.StorageType.{}",
                        name.to_ascii_uppercase()
                    ))
                })?;
                nn.set_quota(&who, path, quota::DONT_SET, space, Some(t as u8))
                    .await
                    .map_err(web)?;
                Ok(empty_ok())
            }
            "MODIFYACLENTRIES" | "REMOVEACLENTRIES" | "REMOVEDEFAULTACL" | "REMOVEACL"
            | "SETACL" => {
                let spec = |with_perm| acls::spec_param(p.get("aclspec"), with_perm);
                let (rpc, change) = match self.op.as_str() {
                    "MODIFYACLENTRIES" => {
                        (Operation::ModifyAclEntries, AclChange::Modify(spec(true)?))
                    }
                    "REMOVEACLENTRIES" => (
                        Operation::RemoveAclEntries,
                        AclChange::RemoveEntries(spec(false)?),
                    ),
                    "REMOVEDEFAULTACL" => (Operation::RemoveDefaultAcl, AclChange::RemoveDefault),
                    "REMOVEACL" => (Operation::RemoveAcl, AclChange::Remove),
                    _ => (Operation::SetAcl, AclChange::Set(spec(true)?)),
                };
                let who = self.admit(rpc)?;
                nn.change_acl(&who, path, change).await.map_err(web)?;
                Ok(empty_ok())
            }
            "REMOVEXATTR" => {
                let who = self.admit(Operation::RemoveXAttr)?;
                let x = xattrs::name_param(p.required("xattr.name", "REMOVEXATTR")?)?;
                nn.remove_xattr(&who, path, x).await.map_err(web)?;
                Ok(empty_ok())
            }
            "SETTIMES" => {
                let who = self.admit(Operation::SetTimes)?;
                let time = |name| -> Result<Option<i64>, WebError> {
                    Ok(p.long(name)?.filter(|&t| t >= 0))
                };
                let (m, a) = (time("modificationtime")?, time("accesstime")?);
                nn.set_times(&who, path, m, a).await.map_err(web)?;
                Ok(empty_ok())
            }
            "ALLOWSNAPSHOT" => {
                let who = self.admit(Operation::AllowSnapshot)?;
                nn.allow_snapshot(&who, path).await.map_err(web)?;
                Ok(empty_ok())
            }
            "DISALLOWSNAPSHOT" => {
                let who = self.admit(Operation::DisallowSnapshot)?;
                nn.disallow_snapshot(&who, path).await.map_err(web)?;
                Ok(empty_ok())
            }
            "CREATESNAPSHOT" => {
                let who = self.admit(Operation::CreateSnapshot)?;
                let name = p.get("snapshotname").filter(|n| !n.is_empty());
                let made = nn.create_snapshot(&who, path, name).await.map_err(web)?;
                Ok(json_ok(json::path_doc(&made)))
            }
            "RENAMESNAPSHOT" => {
                let who = self.admit(Operation::RenameSnapshot)?;
                let old = p.required("oldsnapshotname", "RENAMESNAPSHOT")?;
                let new = p.required("snapshotname", "RENAMESNAPSHOT")?;
                nn.rename_snapshot(&who, path, old, new)
                    .await
                    .map_err(web)?;
                Ok(empty_ok())
            }
            other => Err(self.not_served(other, "PUT")),
        }
    }

    async fn post(&self) -> Answer {
        let p = &self.params;
        let (nn, path) = (self.nn(), self.path.as_str());
        match self.op.as_str() {
            "APPEND" => self.redirect().await,
            "UNSETSTORAGEPOLICY" => {
                let who = self.admit(Operation::UnsetStoragePolicy)?;
                nn.set_storage_policy(&who, path, None).await.map_err(web)?;
                Ok(empty_ok())
            }
            "CONCAT" => {
                let who = self.admit(Operation::Concat)?;
                let srcs: Vec<String> = p
                    .required("sources", "CONCAT")?
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                nn.concat(&who, path, &srcs).await.map_err(web)?;
                Ok(empty_ok())
            }
            "TRUNCATE" => {
                let who = self.admit(Operation::Truncate)?;
                let len = p.long("newlength")?.ok_or_else(|| {
                    WebError::illegal("Required param newlength for op: TRUNCATE is null or empty")
                })?;
                if len < 0 {
                    return Err(WebError::illegal(format!(
                        "Cannot truncate to a negative file size: {len}."
                    )));
                }
                let client = format!("webhdfs_{}", who.user());
                let done = nn
                    .truncate(&who, path, len as u64, &client)
                    .await
                    .map_err(web)?;
                Ok(boolean(done))
            }
            other => Err(self.not_served(other, "POST")),
        }
    }

    async fn delete(&self) -> Answer {
        match self.op.as_str() {
            "DELETE" => {
                let who = self.admit(Operation::Delete)?;
                let recursive = self.params.bool("recursive", false)?;
                let done = self
                    .nn()
                    .delete(&who, &self.path, recursive)
                    .await
                    .map_err(web)?;
                Ok(boolean(done))
            }
            "DELETESNAPSHOT" => {
                let who = self.admit(Operation::DeleteSnapshot)?;
                let name = self.params.required("snapshotname", "DELETESNAPSHOT")?;
                self.nn()
                    .delete_snapshot(&who, &self.path, name)
                    .await
                    .map_err(web)?;
                Ok(empty_ok())
            }
            other => Err(self.not_served(other, "DELETE")),
        }
    }

    /// An op this method does not have is a bad parameter; one of HDFS's that Ferrite
    /// does not serve yet (delegation tokens, erasure coding, symlinks) is unsupported.
    fn not_served(&self, op: &str, method: &str) -> WebError {
        if HDFS_OPS.iter().any(|(m, o)| *m == method && *o == op) {
            WebError::new(web::UNSUPPORTED, format!("{op} is not supported yet"))
        } else {
            WebError::bad_op(Some(op), method)
        }
    }

    fn home(&self) -> String {
        format!("/user/{}", self.user)
    }

    fn page(&self, who: &Admitted, after: &[u8]) -> Result<crate::service::Listing, WebError> {
        self.nn()
            .listing(who, &self.path, after, false)
            .map_err(web)?
            .ok_or_else(|| {
                WebError::new(
                    "java.io.FileNotFoundException",
                    format!("File {} does not exist.", self.path),
                )
            })
    }

    /// Every entry of the directory, page after page (a file lists as itself).
    fn list_all(
        &self,
        who: &Admitted,
    ) -> Result<Vec<crate::namespace::query::FileStatus>, WebError> {
        let mut all = Vec::new();
        let mut after = Vec::new();
        loop {
            let page = self.page(who, &after)?;
            let last = page.entries.last().map(|e| e.name.clone());
            all.extend(page.entries);
            match last {
                Some(name) if page.remaining > 0 && !name.is_empty() => after = name,
                _ => return Ok(all),
            }
        }
    }

    async fn blocks(
        &self,
        who: &Admitted,
        offset: u64,
        length: u64,
    ) -> Result<JsonBlocks, WebError> {
        self.nn()
            .block_locations(who, &self.path, offset, length)
            .await
            .map_err(web)
    }
}

/// `rwx`-style actions into permission bits.
fn fs_action(s: &str) -> Result<u16, WebError> {
    let b = s.as_bytes();
    let ok = b.len() == 3
        && matches!(b[0], b'r' | b'-')
        && matches!(b[1], b'w' | b'-')
        && matches!(b[2], b'x' | b'-');
    if !ok {
        return Err(WebError::illegal(format!(
            "Invalid value for webhdfs parameter \"fsaction\": Invalid value: \"{s}\" does not belong to the domain ^[r-][w-][x-]$"
        )));
    }
    let mut a = 0;
    if b[0] == b'r' {
        a |= perm::READ;
    }
    if b[1] == b'w' {
        a |= perm::WRITE;
    }
    if b[2] == b'x' {
        a |= perm::EXECUTE;
    }
    Ok(a)
}

/// Every operation of Hadoop 3.4.1's WebHDFS, by method: the ones not matched above are
/// HDFS's but not served here yet, which is a different answer from an op HDFS lacks.
const HDFS_OPS: &[(&str, &str)] = &[
    ("GET", "GETDELEGATIONTOKEN"),
    ("GET", "GETECPOLICY"),
    ("GET", "GETLINKTARGET"),
    ("GET", "GETFILELINKSTATUS"),
    ("GET", "GETTRASHROOTS"),
    ("PUT", "CREATESYMLINK"),
    ("PUT", "RENEWDELEGATIONTOKEN"),
    ("PUT", "CANCELDELEGATIONTOKEN"),
    ("PUT", "ENABLEECPOLICY"),
    ("PUT", "DISABLEECPOLICY"),
    ("PUT", "SETECPOLICY"),
    ("POST", "UNSETECPOLICY"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_parse_as_rwx() {
        assert_eq!(fs_action("rw-"), Ok(perm::READ | perm::WRITE));
        assert_eq!(fs_action("--x"), Ok(perm::EXECUTE));
        assert_eq!(fs_action("---"), Ok(0));
        assert!(fs_action("rwz").is_err());
        assert!(fs_action("rw").is_err());
    }
}
