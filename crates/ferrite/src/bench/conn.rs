//! One connection of the NameNode benchmark: over RPC, or straight into the NameNode's RPC
//! methods in this process (no socket, no encoding), as NNThroughputBenchmark's in-process
//! mode does. The same workload code drives both.

use std::sync::Arc;

use anyhow::bail;
use ferrite_ipc::client::IpcClient;
use ferrite_namenode::rpc;
use ferrite_namenode::service::{NameNodeService, Operation};
use ferrite_proto::hdfs::*;

pub(super) enum Conn {
    Rpc(IpcClient),
    /// Calls admitted and handled as the router does, without the socket and the codec.
    Local {
        nn: Arc<NameNodeService>,
        user: Arc<str>,
    },
}

macro_rules! call {
    ($conn:expr, $op:expr, $handler:path, $req:expr) => {
        match $conn {
            Conn::Rpc(c) => c.call($op.name(), &$req).await?,
            Conn::Local { nn, user } => {
                let who = nn.admit(user.clone(), "127.0.0.1", $op)?;
                $handler(nn.clone(), who, $req).await?
            }
        }
    };
}

fn perm(p: u32) -> FsPermissionProto {
    FsPermissionProto { perm: p }
}

impl Conn {
    /// `create` as NNThroughputBenchmark sends it: CREATE|OVERWRITE, createParent, 16-byte blocks.
    pub(super) async fn create(&self, src: &str, client: &str) -> anyhow::Result<()> {
        let req = CreateRequestProto {
            src: src.into(),
            masked: perm(0o755),
            client_name: client.into(),
            create_flag: 0x03,
            create_parent: true,
            replication: 1,
            block_size: 16,
            ..Default::default()
        };
        let _: CreateResponseProto = call!(self, Operation::Create, rpc::client::create, req);
        Ok(())
    }

    pub(super) async fn complete(&self, src: &str, client: &str) -> anyhow::Result<()> {
        let req = CompleteRequestProto {
            src: src.into(),
            client_name: client.into(),
            last: None,
            file_id: None,
        };
        let r: CompleteResponseProto = call!(self, Operation::Complete, rpc::blocks::complete, req);
        if !r.result {
            bail!("complete({src}) returned false");
        }
        Ok(())
    }

    pub(super) async fn mkdirs(&self, src: &str) -> anyhow::Result<()> {
        let req = MkdirsRequestProto {
            src: src.into(),
            masked: perm(0o755),
            create_parent: true,
            unmasked: None,
        };
        let _: MkdirsResponseProto = call!(self, Operation::Mkdirs, rpc::client::mkdirs, req);
        Ok(())
    }

    /// `open`: getBlockLocations of the first 16 bytes.
    pub(super) async fn open(&self, src: &str) -> anyhow::Result<()> {
        let req = GetBlockLocationsRequestProto {
            src: src.into(),
            offset: 0,
            length: 16,
        };
        match self {
            Conn::Rpc(c) => {
                let r: GetBlockLocationsResponseProto = c.call("getBlockLocations", &req).await?;
                if r.locations.is_none() {
                    bail!("{src} missing");
                }
            }
            // In process the reply is built but, as in NNThroughputBenchmark, not serialized;
            // a missing file is an error here too.
            Conn::Local { nn, user } => {
                let who = nn.admit(user.clone(), "127.0.0.1", Operation::GetBlockLocations)?;
                rpc::blocks::get_block_locations(nn.clone(), who, req).await?;
            }
        }
        Ok(())
    }

    pub(super) async fn stat(&self, src: &str) -> anyhow::Result<()> {
        let req = GetFileInfoRequestProto { src: src.into() };
        let r: GetFileInfoResponseProto = call!(
            self,
            Operation::GetFileInfo,
            rpc::client::get_file_info,
            req
        );
        if r.fs.is_none() {
            bail!("{src} missing");
        }
        Ok(())
    }

    /// The legacy `rename`, as NNThroughputBenchmark uses it.
    pub(super) async fn rename(&self, src: &str, dst: &str) -> anyhow::Result<()> {
        let req = RenameRequestProto {
            src: src.into(),
            dst: dst.into(),
        };
        let r: RenameResponseProto = call!(self, Operation::Rename, rpc::client::rename, req);
        if !r.result {
            bail!("rename({src}) returned false");
        }
        Ok(())
    }

    pub(super) async fn delete(&self, src: &str, recursive: bool) -> anyhow::Result<bool> {
        let req = DeleteRequestProto {
            src: src.into(),
            recursive,
        };
        let r: DeleteResponseProto = call!(self, Operation::Delete, rpc::client::delete, req);
        Ok(r.result)
    }
}
