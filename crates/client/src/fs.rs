//! The FileSystem entry point: a NameNode connection, the client's name (its lease
//! identity), lease renewal while files are open, and the namespace calls.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use ferrite_ipc::net::Dial;
use ferrite_proto::hdfs::*;
use md5::{Digest, Md5};
use tokio::io::BufReader;

use crate::block_reader::xfer_addr;
use crate::error::{Error, Result};
use crate::namenodes::NameNodes;
use crate::reader::FileReader;
use crate::shared::Inner;
use crate::writer::FileWriter;

#[derive(Clone)]
pub struct FileSystem {
    inner: Arc<Inner>,
    pub addr: SocketAddr,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileStatus {
    /// The full path for getFileInfo; the entry name for listings.
    pub path: String,
    pub is_dir: bool,
    pub len: u64,
    pub perm: u16,
    pub owner: String,
    pub group: String,
    pub mtime: u64,
    pub atime: u64,
    pub replication: u16,
    pub block_size: u64,
    pub file_id: u64,
    pub children: i32,
}

impl FileStatus {
    fn from_proto(p: HdfsFileStatusProto, path: String) -> Self {
        FileStatus {
            path,
            is_dir: p.file_type == hdfs_file_status_proto::FileType::IsDir as i32,
            len: p.length,
            perm: p.permission.perm as u16,
            owner: p.owner,
            group: p.group,
            mtime: p.modification_time,
            atime: p.access_time,
            replication: p.block_replication.unwrap_or(0) as u16,
            block_size: p.blocksize.unwrap_or(0),
            file_id: p.file_id.unwrap_or(0),
            children: p.children_num.unwrap_or(-1),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContentSummary {
    pub length: u64,
    pub files: u64,
    pub dirs: u64,
    pub space_consumed: u64,
    pub quota: i64,
    pub space_quota: i64,
}

#[derive(Clone, Debug)]
pub struct CreateOptions {
    pub overwrite: bool,
    /// None: the server default.
    pub replication: Option<u16>,
    pub block_size: Option<u64>,
    pub perm: u16,
    pub create_parent: bool,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions {
            overwrite: false,
            replication: None,
            block_size: None,
            perm: 0o644,
            create_parent: true,
        }
    }
}

/// Parses `hdfs://host:port` (or `host:port`).
pub fn parse_url(url: &str) -> Result<SocketAddr> {
    let hostport = url
        .trim_start_matches("hdfs://")
        .split('/')
        .next()
        .unwrap_or_default();
    let hostport = if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:8020")
    };
    hostport
        .to_socket_addrs()
        .map_err(|e| Error::Invalid(format!("bad file system address {url}: {e}")))?
        .next()
        .ok_or_else(|| Error::Invalid(format!("{url} resolves to nothing")))
}

/// The user a client acts as: `HADOOP_USER_NAME`, else the login user.
pub fn default_user() -> String {
    std::env::var("HADOOP_USER_NAME")
        .or_else(|_| std::env::var("USER"))
        .unwrap_or_else(|_| "root".into())
}

/// How a client behaves; the defaults are HDFS's.
#[derive(Clone)]
pub struct ClientOptions {
    /// The user to act as (SIMPLE authentication).
    pub user: String,
    /// How often the lease is renewed while files are open (HDFS: half the 60 s soft
    /// limit, about 30 s).
    pub lease_renewal: Duration,
    /// How the NameNode and DataNodes are reached: TCP, or the simulator's network.
    pub dial: Arc<dyn Dial>,
    /// The IPC clientId, from which the client name is made too; random unless set (the
    /// simulator sets it, so that a seed replays exactly).
    pub client_id: Option<[u8; 16]>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            user: default_user(),
            lease_renewal: Duration::from_secs(20),
            dial: ferrite_ipc::net::tcp(),
            client_id: None,
        }
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("user", &self.user)
            .field("lease_renewal", &self.lease_renewal)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// A client name as Hadoop's look (`DFSClient_…`), from the clientId.
fn client_name(id: [u8; 16]) -> String {
    format!("ferrite_client_{}", uuid::Uuid::from_bytes(id).simple())
}

impl FileSystem {
    pub async fn connect(url: &str) -> Result<FileSystem> {
        Self::connect_with(url, &ClientOptions::default()).await
    }

    pub async fn connect_with(url: &str, opts: &ClientOptions) -> Result<FileSystem> {
        Self::connect_any(&[parse_url(url)?], opts).await
    }

    /// A client of an HA nameservice whose NameNodes are `namenodes`: calls go to the
    /// active one, failing over as Hadoop's `ConfiguredFailoverProxyProvider` does. With
    /// one address, the same as [`connect_with`](Self::connect_with).
    pub async fn connect_any(namenodes: &[SocketAddr], opts: &ClientOptions) -> Result<FileSystem> {
        let first = *namenodes
            .first()
            .ok_or_else(|| Error::Invalid("no NameNode address".into()))?;
        let id = opts
            .client_id
            .unwrap_or_else(|| *uuid::Uuid::new_v4().as_bytes());
        let addrs = namenodes.iter().map(ToString::to_string).collect();
        let nn = NameNodes::connect(addrs, opts.dial.clone(), &opts.user, id)
            .await
            .map_err(|e| match e {
                // A NameNode that cannot be reached is an I/O error, as it always was.
                ferrite_ipc::client::ClientError::Io(io) => Error::Io(io),
                other => other.into(),
            })?;
        Ok(Self::over(
            Arc::new(nn),
            first,
            opts,
            Default::default(),
            id,
        ))
    }

    fn over(
        nn: Arc<NameNodes>,
        addr: SocketAddr,
        opts: &ClientOptions,
        defaults: Arc<tokio::sync::OnceCell<FsServerDefaultsProto>>,
        id: [u8; 16],
    ) -> FileSystem {
        let inner = Arc::new(Inner {
            nn,
            client_name: client_name(id),
            dial: opts.dial.clone(),
            user: opts.user.clone(),
            open_writers: AtomicUsize::new(0),
            lease_renewal: opts.lease_renewal,
            defaults,
        });
        tokio::spawn(renew_leases(Arc::downgrade(&inner), opts.lease_renewal));
        FileSystem { inner, addr }
    }

    /// A new client of the same NameNode as the same user, over this one's connection:
    /// its own client name, so its own leases, with no connect and handshake to wait for.
    /// (HDFS's DataNode serves each WebHDFS request with a new DFSClient the same way.)
    pub fn session(&self) -> FileSystem {
        let opts = ClientOptions {
            user: self.inner.user.clone(),
            lease_renewal: self.inner.lease_renewal,
            dial: self.inner.dial.clone(),
            client_id: None,
        };
        Self::over(
            self.inner.nn.clone(),
            self.addr,
            &opts,
            self.inner.defaults.clone(),
            *uuid::Uuid::new_v4().as_bytes(),
        )
    }

    /// False once the NameNode connection has closed; calls then fail.
    pub fn is_connected(&self) -> bool {
        !self.inner.nn.is_closed()
    }

    pub fn user(&self) -> &str {
        &self.inner.user
    }

    async fn call<Req: prost::Message, Resp: prost::Message + Default>(
        &self,
        method: &str,
        req: &Req,
    ) -> Result<Resp> {
        Ok(self.inner.nn.call(method, req).await?)
    }

    /// The live DataNodes, as `hdfs dfsadmin -report -live` lists them
    /// (getDatanodeReport; HDFS's `DistributedFileSystem.getDataNodeStats`).
    pub async fn live_datanodes(&self) -> Result<Vec<DatanodeInfoProto>> {
        let req = GetDatanodeReportRequestProto {
            r#type: DatanodeReportTypeProto::Live as i32,
        };
        let r: GetDatanodeReportResponseProto = self.call("getDatanodeReport", &req).await?;
        Ok(r.di)
    }

    /// The DataNodes of one kind (all, live, dead, decommissioning, …), as `hdfs dfsadmin
    /// -report` lists them.
    pub async fn datanode_report(
        &self,
        kind: DatanodeReportTypeProto,
    ) -> Result<Vec<DatanodeInfoProto>> {
        let req = GetDatanodeReportRequestProto {
            r#type: kind as i32,
        };
        let r: GetDatanodeReportResponseProto = self.call("getDatanodeReport", &req).await?;
        Ok(r.di)
    }

    /// Has the NameNode read its hosts files again (`hdfs dfsadmin -refreshNodes`).
    pub async fn refresh_nodes(&self) -> Result<()> {
        let _: ferrite_proto::hdfs::RefreshNodesResponseProto = self
            .call(
                "refreshNodes",
                &ferrite_proto::hdfs::RefreshNodesRequestProto {},
            )
            .await?;
        Ok(())
    }

    pub async fn server_defaults(&self) -> Result<FsServerDefaultsProto> {
        let r: GetServerDefaultsResponseProto = self
            .call("getServerDefaults", &GetServerDefaultsRequestProto {})
            .await?;
        Ok(r.server_defaults)
    }

    pub async fn status(&self, path: &str) -> Result<Option<FileStatus>> {
        let r: GetFileInfoResponseProto = self
            .call("getFileInfo", &GetFileInfoRequestProto { src: path.into() })
            .await?;
        Ok(r.fs.map(|p| FileStatus::from_proto(p, path.to_string())))
    }

    /// Every entry of a directory (all pages), or the file itself.
    pub async fn list(&self, path: &str) -> Result<Vec<FileStatus>> {
        let mut out = Vec::new();
        let mut after = Vec::new();
        loop {
            let req = GetListingRequestProto {
                src: path.into(),
                start_after: after.clone(),
                need_location: false,
            };
            let r: GetListingResponseProto = self.call("getListing", &req).await?;
            let Some(list) = r.dir_list else {
                return Err(Error::NotFound(format!("File {path} does not exist.")));
            };
            for p in list.partial_listing {
                after = p.path.clone();
                let name = String::from_utf8_lossy(&p.path).into_owned();
                out.push(FileStatus::from_proto(p, name));
            }
            if list.remaining_entries == 0 {
                return Ok(out);
            }
        }
    }

    /// recoverLease (`DistributedFileSystem.recoverLease`): true once the file is closed;
    /// false while its last block is still being recovered (ask again).
    pub async fn recover_lease(&self, path: &str) -> Result<bool> {
        let req = RecoverLeaseRequestProto {
            src: path.into(),
            client_name: self.inner.client_name.clone(),
        };
        let r: RecoverLeaseResponseProto = self.call("recoverLease", &req).await?;
        Ok(r.result)
    }

    pub async fn mkdirs(&self, path: &str, perm: u16, create_parent: bool) -> Result<bool> {
        let req = MkdirsRequestProto {
            src: path.into(),
            masked: FsPermissionProto { perm: perm as u32 },
            create_parent,
            unmasked: None,
        };
        let r: MkdirsResponseProto = self.call("mkdirs", &req).await?;
        Ok(r.result)
    }

    pub async fn delete(&self, path: &str, recursive: bool) -> Result<bool> {
        let req = DeleteRequestProto {
            src: path.into(),
            recursive,
        };
        let r: DeleteResponseProto = self.call("delete", &req).await?;
        Ok(r.result)
    }

    /// Legacy rename (false when it cannot be done), as `hdfs dfs -mv` uses.
    pub async fn rename(&self, src: &str, dst: &str) -> Result<bool> {
        let req = RenameRequestProto {
            src: src.into(),
            dst: dst.into(),
        };
        let r: RenameResponseProto = self.call("rename", &req).await?;
        Ok(r.result)
    }

    /// Cuts a file to `len` bytes. True when it is ready at once; false while the
    /// DataNodes cut its last block (the file is closed when they have).
    pub async fn truncate(&self, path: &str, len: u64) -> Result<bool> {
        let req = TruncateRequestProto {
            src: path.into(),
            new_length: len,
            client_name: self.inner.client_name.clone(),
        };
        let r: TruncateResponseProto = self.call("truncate", &req).await?;
        Ok(r.result)
    }

    /// Moves the blocks of `srcs`, in order, to the end of `target` and deletes them.
    pub async fn concat(&self, target: &str, srcs: &[String]) -> Result<()> {
        let req = ConcatRequestProto {
            trg: target.into(),
            srcs: srcs.to_vec(),
        };
        let _: ConcatResponseProto = self.call("concat", &req).await?;
        Ok(())
    }

    /// Whether a file is closed (not open for write, nor being recovered).
    pub async fn is_file_closed(&self, path: &str) -> Result<bool> {
        let req = IsFileClosedRequestProto { src: path.into() };
        let r: IsFileClosedResponseProto = self.call("isFileClosed", &req).await?;
        Ok(r.result)
    }

    pub async fn rename_to_trash(&self, src: &str, dst: &str) -> Result<()> {
        let req = Rename2RequestProto {
            src: src.into(),
            dst: dst.into(),
            overwrite_dest: false,
            move_to_trash: Some(true),
        };
        let _: Rename2ResponseProto = self.call("rename2", &req).await?;
        Ok(())
    }

    pub async fn set_replication(&self, path: &str, replication: u16) -> Result<bool> {
        let req = SetReplicationRequestProto {
            src: path.into(),
            replication: replication as u32,
        };
        let r: SetReplicationResponseProto = self.call("setReplication", &req).await?;
        Ok(r.result)
    }

    pub async fn set_permission(&self, path: &str, perm: u16) -> Result<()> {
        let req = SetPermissionRequestProto {
            src: path.into(),
            permission: FsPermissionProto { perm: perm as u32 },
        };
        let _: SetPermissionResponseProto = self.call("setPermission", &req).await?;
        Ok(())
    }

    pub async fn set_owner(
        &self,
        path: &str,
        owner: Option<&str>,
        group: Option<&str>,
    ) -> Result<()> {
        let req = SetOwnerRequestProto {
            src: path.into(),
            username: owner.map(str::to_string),
            groupname: group.map(str::to_string),
        };
        let _: SetOwnerResponseProto = self.call("setOwner", &req).await?;
        Ok(())
    }

    pub async fn content_summary(&self, path: &str) -> Result<ContentSummary> {
        let req = GetContentSummaryRequestProto { path: path.into() };
        let r: GetContentSummaryResponseProto = self.call("getContentSummary", &req).await?;
        let s = r.summary;
        Ok(ContentSummary {
            length: s.length,
            files: s.file_count,
            dirs: s.directory_count,
            space_consumed: s.space_consumed,
            quota: s.quota as i64,
            space_quota: s.space_quota as i64,
        })
    }

    /// The located blocks of a whole file.
    pub async fn block_locations(&self, path: &str) -> Result<LocatedBlocksProto> {
        crate::reader::block_locations(&self.inner, path).await
    }

    pub async fn create(&self, path: &str, opts: &CreateOptions) -> Result<FileWriter> {
        let defaults = self
            .inner
            .defaults
            .get_or_try_init(|| self.server_defaults())
            .await?
            .clone();
        let block_size = opts.block_size.unwrap_or(defaults.block_size);
        if block_size == 0 || block_size % defaults.bytes_per_checksum.max(1) as u64 != 0 {
            return Err(Error::Invalid(format!(
                "block size {block_size} is not a multiple of the checksum chunk {}",
                defaults.bytes_per_checksum
            )));
        }
        let flags = 1 | if opts.overwrite { 2 } else { 0 };
        let req = CreateRequestProto {
            src: path.into(),
            masked: FsPermissionProto {
                perm: opts.perm as u32,
            },
            client_name: self.inner.client_name.clone(),
            create_flag: flags,
            create_parent: opts.create_parent,
            replication: opts
                .replication
                .map(u32::from)
                .unwrap_or(defaults.replication),
            block_size,
            crypto_protocol_version: Vec::new(),
            unmasked: None,
            ec_policy_name: None,
            storage_policy: None,
        };
        let replication = req.replication as u16;
        let r: CreateResponseProto = self.call("create", &req).await?;
        let file_id = r.fs.and_then(|f| f.file_id).unwrap_or(0);
        Ok(FileWriter::new(
            self.inner.clone(),
            path,
            file_id,
            block_size,
            replication,
        ))
    }

    /// Opens an existing file to write more at its end: in its last block while that has
    /// room (the DataNodes reopen their replicas), else in a new block.
    pub async fn append(&self, path: &str) -> Result<FileWriter> {
        let req = AppendRequestProto {
            src: path.into(),
            client_name: self.inner.client_name.clone(),
            flag: Some(0x04), // CreateFlag.APPEND
        };
        let r: AppendResponseProto = self.call("append", &req).await?;
        let st = r
            .stat
            .ok_or_else(|| Error::Invalid(format!("append of {path}: no file status")))?;
        let block_size = st.blocksize.unwrap_or(0);
        if block_size == 0 {
            return Err(Error::Invalid(format!("append of {path}: no block size")));
        }
        FileWriter::appending(
            self.inner.clone(),
            path,
            st.file_id.unwrap_or(0),
            block_size,
            st.block_replication.unwrap_or(0) as u16,
            st.length,
            r.block,
        )
        .await
    }

    pub async fn open(&self, path: &str) -> Result<FileReader> {
        let blocks = crate::reader::locate(&self.inner, path).await?;
        Ok(FileReader::new(self.inner.clone(), path, blocks))
    }

    /// HDFS's file checksum (MD5 of the per-block MD5s of chunk CRCs), as
    /// `hdfs dfs -checksum` prints it: (algorithm name, bytes).
    pub async fn file_checksum(&self, path: &str) -> Result<(String, Vec<u8>)> {
        let lbs = self.block_locations(path).await?;
        let mut block_md5s = Vec::new();
        let mut bytes_per_crc = 0;
        let mut crc_per_block = 0;
        let mut crc_type = 2;
        for (i, lb) in lbs.blocks.iter().enumerate() {
            let mut last_err = None;
            let mut got = None;
            for dn in &lb.locs {
                match block_checksum(&*self.inner.dial, dn, lb).await {
                    Ok(r) => {
                        got = Some(r);
                        break;
                    }
                    Err(e) => last_err = Some(e),
                }
            }
            let r = got.ok_or_else(|| {
                last_err.unwrap_or_else(|| {
                    Error::DataNode(format!("no replica of blk_{}", lb.b.block_id))
                })
            })?;
            if i == 0 {
                bytes_per_crc = r.bytes_per_crc;
                crc_type = r.crc_type.unwrap_or(2);
            }
            // Java records the chunk count only when the file has several blocks.
            if i == 0 && lbs.blocks.len() > 1 {
                crc_per_block = r.crc_per_block;
            }
            block_md5s.extend_from_slice(&r.block_checksum);
        }
        // Java digests the whole backing array of its DataOutputBuffer, which starts at
        // 32 bytes and doubles: the block MD5s padded with zeros to that capacity. Clients
        // compare checksums across systems (distcp), so ours must match byte for byte.
        let mut cap = 32;
        while cap < block_md5s.len() {
            cap *= 2;
        }
        block_md5s.resize(cap, 0);
        let md5 = Md5::digest(&block_md5s);
        let kind = if crc_type == 1 { "CRC32" } else { "CRC32C" };
        let name = format!("MD5-of-{crc_per_block}MD5-of-{bytes_per_crc}{kind}");
        let mut bytes = Vec::with_capacity(28);
        bytes.extend_from_slice(&bytes_per_crc.to_be_bytes());
        bytes.extend_from_slice(&crc_per_block.to_be_bytes());
        bytes.extend_from_slice(&md5);
        Ok((name, bytes))
    }
}

async fn block_checksum(
    dial: &dyn Dial,
    dn: &DatanodeInfoProto,
    lb: &LocatedBlockProto,
) -> Result<OpBlockChecksumResponseProto> {
    let addr = xfer_addr(dn);
    let s = dial.dial(&addr).await?;
    let (rd, mut s) = (s.read, s.write);
    let op = OpBlockChecksumProto {
        header: BaseHeaderProto {
            block: lb.b.clone(),
            token: Some(lb.block_token.clone()),
            trace_info: None,
        },
        block_checksum_options: None,
    };
    ferrite_transfer::io::write_op(&mut s, ferrite_transfer::op::BLOCK_CHECKSUM, &op).await?;
    let mut rd = BufReader::new(rd);
    let r: BlockOpResponseProto = ferrite_transfer::io::read_delimited(&mut rd).await?;
    if r.status != Status::Success as i32 {
        return Err(Error::DataNode(format!(
            "{addr}: BLOCK_CHECKSUM refused: {}",
            r.message.unwrap_or_default()
        )));
    }
    r.checksum_response
        .ok_or_else(|| Error::DataNode(format!("{addr}: no checksum in the answer")))
}

/// Renews the client's lease while it has files open (HDFS clients renew about every
/// 30 s; the soft limit is 60 s).
async fn renew_leases(inner: std::sync::Weak<Inner>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let Some(inner) = inner.upgrade() else { return };
        if inner.open_writers.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            continue;
        }
        let req = RenewLeaseRequestProto {
            client_name: inner.client_name.clone(),
            namespaces: Vec::new(),
        };
        if let Err(e) = inner
            .nn
            .call::<_, RenewLeaseResponseProto>("renewLease", &req)
            .await
        {
            tracing::warn!(error = %e, "lease renewal failed");
        }
    }
}
