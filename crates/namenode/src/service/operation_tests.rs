//! The service's operations in process, without sockets: admission, replies and errors of
//! every ClientProtocol operation, and the DataNode side that placement and completion
//! need. A memory-only NameNode (no directories, nothing journaled) serves each test;
//! DataNodes are registrations and reports, as the protocol makes them.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use ferrite_blocktoken::Token;

use super::ha::HaState;
use super::*;
use crate::blocks::registry::{NodeId, NodeIx, Registry, StorageState};
use crate::blocks::report::{ReplicaState, Reported};
use crate::namespace::blocks::{Placed, Previous};
use crate::namespace::inode::Block;

const SU: &str = "hdfs";
const ALICE: &str = "alice";
const CLIENT: &str = "DFSClient_test";

fn service(cfg: Config) -> Arc<NameNodeService> {
    Arc::new(NameNodeService::in_memory(cfg, SU))
}

fn nn() -> Arc<NameNodeService> {
    service(Config::default())
}

/// `user`, calling from loopback, admitted to `op` by the service's table.
fn by(nn: &NameNodeService, user: &str, op: Operation) -> Admitted {
    nn.admit(user, "127.0.0.1", op).expect("admitted")
}

/// Registers DataNode `i` with one roomy storage, as registration and a first heartbeat
/// would.
fn datanode(nn: &NameNodeService, i: u32) -> String {
    let uuid = format!("dn-{i}");
    let ip = format!("127.0.0.{}", i + 1);
    nn.register_datanode(
        &nn.admit("dn", ip, Operation::RegisterDatanode).unwrap(),
        NodeRegistration {
            id: NodeId {
                ip: String::new(),
                host: format!("dn{i}"),
                uuid: uuid.clone(),
                xfer_port: 9866,
                info_port: 9864,
                ipc_port: 9867,
            },
            cluster_id: String::new(),
            rack: "/default-rack".into(),
        },
    )
    .unwrap();
    let storage = StorageState {
        storage_type: 1,
        uuid: format!("DS-{i}"),
        failed: false,
        capacity: 1 << 40,
        dfs_used: 0,
        remaining: 1 << 40,
    };
    nn.heartbeat(
        &by(nn, ALICE, Operation::SendHeartbeat),
        &uuid,
        HeartbeatReport {
            xceivers: 0,
            storages: vec![storage],
        },
    );
    uuid
}

/// Every node of `lb` reports its replica finished at `len`.
fn received(nn: &NameNodeService, lb: &LocatedBlock, len: u64) {
    reported(nn, lb, len, ReplicaState::Finalized, ReplicaEvent::Received);
}

/// Every node of `lb` reports its replica at `len`, in `state`, as `event`.
fn reported(
    nn: &NameNodeService,
    lb: &LocatedBlock,
    len: u64,
    state: ReplicaState,
    event: ReplicaEvent,
) {
    for l in &lb.locations {
        let r = Reported {
            id: lb.block.id,
            len,
            gs: lb.block.gs,
            state,
        };
        nn.incremental_report(
            &by(nn, ALICE, Operation::BlockReceivedAndDeleted),
            &l.node.id.uuid,
            &[(l.storage_uuid.clone(), vec![(r, event)])],
            &[],
        )
        .unwrap();
    }
}

fn create_req(src: &str) -> CreateRequest<'_> {
    CreateRequest {
        src,
        masked: 0o644,
        unmasked: None,
        client_name: CLIENT,
        create: true,
        overwrite: false,
        append: false,
        create_parent: true,
        replication: 3,
        block_size: 1 << 20,
    }
}

/// Writes a closed file of one block of `len` bytes through create, addBlock, the
/// DataNodes' reports and complete.
async fn write_file(nn: &NameNodeService, user: &str, src: &str, len: u64) -> LocatedBlock {
    let lb = first_block_by(nn, user, src).await;
    received(nn, &lb, len);
    let last = Previous {
        id: lb.block.id,
        gs: lb.block.gs,
        len,
    };
    assert!(nn
        .complete(
            &by(nn, ALICE, Operation::Complete),
            src,
            CLIENT,
            0,
            Some(last)
        )
        .await
        .unwrap());
    lb
}

/// A new file `src` (by alice) with its first block placed.
async fn first_block(nn: &NameNodeService, src: &str) -> LocatedBlock {
    first_block_by(nn, ALICE, src).await
}

/// A new file `src` by `user`, with its first block placed.
async fn first_block_by(nn: &NameNodeService, user: &str, src: &str) -> LocatedBlock {
    nn.create(&by(nn, user, Operation::Create), &create_req(src))
        .await
        .unwrap();
    nn.add_block(
        &by(nn, user, Operation::AddBlock),
        &AddBlock {
            src,
            client_name: CLIENT,
            file_id: 0,
            previous: None,
            excluded: HashSet::new(),
        },
    )
    .await
    .unwrap()
}

/// A NameNode with three DataNodes and a root everyone may write in.
async fn three_datanodes() -> Arc<NameNodeService> {
    let nn = nn();
    for i in 0..3 {
        datanode(&nn, i);
    }
    nn.set_permission(&by(&nn, SU, Operation::SetPermission), "/", 0o777)
        .await
        .unwrap();
    nn
}

#[derive(Default)]
struct Collected {
    file_len: u64,
    under_construction: bool,
    tokens: usize,
    blocks: Vec<(u64, u64, usize, bool)>,
}

impl LocatedSink for Collected {
    fn start(_: &str, file_len: u64, uc: bool, tokens: Vec<(Range<usize>, Option<Token>)>) -> Self {
        Collected {
            file_len,
            under_construction: uc,
            tokens: tokens.len(),
            blocks: Vec::new(),
        }
    }

    fn push(&mut self, p: &Placed, replicas: &[(NodeIx, u8)], _: &Registry, is_last: bool) {
        self.blocks
            .push((p.block.id, p.block.len, replicas.len(), is_last));
    }
}

/// An admission covers its own operation and any whose checks are no stricter: a read's
/// cannot run a mutation, which would skip the safe-mode check (debug builds stop there).
#[cfg(debug_assertions)]
#[tokio::test]
#[should_panic(expected = "mkdirs admitted as getFileInfo")]
async fn a_read_admission_cannot_run_a_mutation() {
    let nn = nn();
    let read = by(&nn, ALICE, Operation::GetFileInfo);
    assert!(nn.file_info(&read, "/").unwrap().is_some());
    let _ = nn.mkdirs(&read, "/a", 0o755, false).await;
}

#[tokio::test]
async fn admission_follows_the_table_for_every_front_end() {
    let nn = nn();
    assert!(nn.admit(ALICE, "127.0.0.1", Operation::Mkdirs).is_ok());
    assert!(nn.admit(ALICE, "127.0.0.1", Operation::GetFileInfo).is_ok());
    let denied = nn
        .admit(ALICE, "127.0.0.1", Operation::SaveNamespace)
        .unwrap_err();
    assert!(denied.is_access_denied());
    assert_eq!(
        denied.to_string(),
        "Access denied for user alice. Superuser privilege is required for operation \
         saveNamespace"
    );
    assert!(nn.admit(SU, "127.0.0.1", Operation::SaveNamespace).is_ok());
    // An operation the table lacks cannot be named: front ends admit by `Operation`.
    nn.safe_mode_action(&by(&nn, SU, Operation::SetSafeMode), SafeModeAction::Enter)
        .unwrap();
    let e = nn.admit(ALICE, "127.0.0.1", Operation::Mkdirs).unwrap_err();
    let FsError::InSafeMode { .. } = e else {
        panic!("{e:?}")
    };
    let msg = e.to_string();
    assert!(
        msg.starts_with("Cannot mkdirs. Name node is in safe mode.\nIt was turned on manually."),
        "{msg}"
    );
    assert!(
        nn.admit(ALICE, "127.0.0.1", Operation::GetListing).is_ok(),
        "reads go on"
    );
    // Only the superuser changes safe mode; anyone may ask.
    assert!(nn
        .safe_mode_action(&by(&nn, ALICE, Operation::SetSafeMode), SafeModeAction::Get)
        .unwrap());
    assert!(matches!(
        nn.safe_mode_action(
            &by(&nn, ALICE, Operation::SetSafeMode),
            SafeModeAction::Leave
        ),
        Err(e) if e.is_access_denied()
    ));
    assert!(!nn
        .safe_mode_action(&by(&nn, SU, Operation::SetSafeMode), SafeModeAction::Leave)
        .unwrap());
    assert!(nn.admit(ALICE, "127.0.0.1", Operation::Mkdirs).is_ok());
}

#[tokio::test]
async fn names_lookups_and_listings() {
    let nn = nn();
    nn.mkdirs(&by(&nn, SU, Operation::Mkdirs), "/a/b", 0o755, true)
        .await
        .unwrap();
    assert!(matches!(
        nn.mkdirs(&by(&nn, SU, Operation::Mkdirs), "/x/y", 0o755, false)
            .await,
        Err(e) if e.is_not_found()
    ));
    let st = nn
        .file_info(&by(&nn, ALICE, Operation::GetFileInfo), "/a/b")
        .unwrap()
        .unwrap();
    assert!(st.is_dir);
    assert_eq!(st.perm, 0o755);
    assert_eq!(
        nn.file_info(&by(&nn, ALICE, Operation::GetFileInfo), "/nope")
            .unwrap(),
        None
    );
    assert_eq!(
        nn.file_link_info(&by(&nn, ALICE, Operation::GetFileLinkInfo), "/a")
            .unwrap()
            .map(|s| s.is_dir),
        Some(true)
    );
    let by_inode = format!("/.reserved/.inodes/{}", st.file_id);
    assert_eq!(
        nn.file_info(&by(&nn, SU, Operation::GetFileInfo), &by_inode)
            .unwrap()
            .unwrap()
            .file_id,
        st.file_id
    );

    nn.mkdirs(&by(&nn, SU, Operation::Mkdirs), "/a/c", 0o755, false)
        .await
        .unwrap();
    let l = nn
        .listing(&by(&nn, ALICE, Operation::GetListing), "/a", b"", false)
        .unwrap()
        .unwrap();
    let names: Vec<_> = l.entries.iter().map(|e| e.name.clone()).collect();
    assert_eq!(names, vec![b"b".to_vec(), b"c".to_vec()]);
    assert_eq!(l.remaining, 0);
    assert!(l.located.is_empty());
    let after_b = nn
        .listing(&by(&nn, ALICE, Operation::GetListing), "/a", b"b", false)
        .unwrap()
        .unwrap();
    assert_eq!(after_b.entries.len(), 1);
    assert!(nn
        .listing(&by(&nn, ALICE, Operation::GetListing), "/none", b"", false)
        .unwrap()
        .is_none());

    assert!(nn
        .rename(&by(&nn, SU, Operation::Rename), "/a/c", "/a/d")
        .await
        .unwrap());
    assert!(!nn
        .rename(&by(&nn, SU, Operation::Rename), "/a/missing", "/a/e")
        .await
        .unwrap());
    assert!(matches!(
        nn.rename2(
            &by(&nn, SU, Operation::Rename2),
            "/a/missing",
            "/a/e",
            false
        )
        .await,
        Err(e) if e.is_not_found()
    ));
    nn.rename2(&by(&nn, SU, Operation::Rename2), "/a/d", "/a/e", false)
        .await
        .unwrap();
    assert!(matches!(
        nn.delete(&by(&nn, SU, Operation::Delete), "/a", false)
            .await,
        Err(FsError::NotEmpty(_))
    ));
    assert!(nn
        .delete(&by(&nn, SU, Operation::Delete), "/a/e", false)
        .await
        .unwrap());
    assert!(!nn
        .delete(&by(&nn, SU, Operation::Delete), "/a/e", false)
        .await
        .unwrap());
    let cs = nn
        .content_summary(&by(&nn, ALICE, Operation::GetContentSummary), "/")
        .await
        .unwrap();
    assert_eq!((cs.dirs, cs.files), (3, 0));
}

#[tokio::test]
async fn permissions_owners_times_and_replication() {
    let nn = three_datanodes().await;
    nn.mkdirs(&by(&nn, SU, Operation::Mkdirs), "/p", 0o755, true)
        .await
        .unwrap();
    // alice cannot write under a directory she does not own.
    assert!(matches!(
        nn.mkdirs(&by(&nn, ALICE, Operation::Mkdirs), "/p/q", 0o755, false)
            .await,
        Err(e) if e.is_access_denied()
    ));
    nn.set_owner(&by(&nn, SU, Operation::SetOwner), "/p", Some(ALICE), None)
        .await
        .unwrap();
    nn.mkdirs(&by(&nn, ALICE, Operation::Mkdirs), "/p/q", 0o755, false)
        .await
        .unwrap();
    assert_eq!(
        nn.set_owner(&by(&nn, SU, Operation::SetOwner), "/p", None, Some(""))
            .await,
        Err(FsError::Io(
            "Both the user name and the group name are null".into()
        ))
    );
    nn.set_permission(&by(&nn, ALICE, Operation::SetPermission), "/p/q", 0o700)
        .await
        .unwrap();
    assert_eq!(
        nn.file_info(&by(&nn, ALICE, Operation::GetFileInfo), "/p/q")
            .unwrap()
            .unwrap()
            .perm,
        0o700
    );
    nn.set_times(&by(&nn, SU, Operation::SetTimes), "/p/q", Some(1_000), None)
        .await
        .unwrap();
    assert_eq!(
        nn.file_info(&by(&nn, SU, Operation::GetFileInfo), "/p/q")
            .unwrap()
            .unwrap()
            .mtime,
        1_000
    );

    write_file(&nn, ALICE, "/p/f", 10).await;
    assert!(nn
        .set_replication(&by(&nn, ALICE, Operation::SetReplication), "/p/f", 2)
        .await
        .unwrap());
    assert_eq!(
        nn.file_info(&by(&nn, ALICE, Operation::GetFileInfo), "/p/f")
            .unwrap()
            .unwrap()
            .replication,
        2
    );
    assert!(
        !nn.set_replication(&by(&nn, ALICE, Operation::SetReplication), "/p/q", 2)
            .await
            .unwrap(),
        "a directory"
    );
    let e = nn
        .set_replication(&by(&nn, ALICE, Operation::SetReplication), "/p/f", 600)
        .await
        .unwrap_err();
    assert_eq!(
        e,
        FsError::Io("Requested replication factor of 600 exceeds maximum of 512 for /p/f".into())
    );
    assert_eq!(
        nn.regular_file_status(&by(&nn, ALICE, Operation::GetFileInfo), "/p/f")
            .unwrap()
            .block_size,
        1 << 20
    );
    assert!(nn
        .regular_file_status(&by(&nn, ALICE, Operation::GetFileInfo), "/p/q")
        .is_err());
}

#[tokio::test]
async fn create_checks_its_numbers_and_answers_the_new_status() {
    let nn = three_datanodes().await;
    let mut req = create_req("/f");
    req.block_size = 1000;
    let e = nn
        .create(&by(&nn, ALICE, Operation::Create), &req)
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("Specified block size is less than configured minimum value"),
        "{e}"
    );
    let mut req = create_req("/f");
    req.replication = 0;
    assert!(nn
        .create(&by(&nn, ALICE, Operation::Create), &req)
        .await
        .is_err());
    let st = nn
        .create(&by(&nn, ALICE, Operation::Create), &create_req("/f"))
        .await
        .unwrap()
        .unwrap();
    assert!(st.under_construction);
    assert_eq!(st.owner, ALICE);
    // The writer holds a lease, which renewLease keeps.
    assert_eq!(nn.lease_holders(), 1);
    nn.renew_lease(&by(&nn, ALICE, Operation::RenewLease), CLIENT);
    assert_eq!(nn.lease_holders(), 1);
    assert!(matches!(
        nn.create(&by(&nn, ALICE, Operation::Create), &create_req("/f"))
            .await,
        Err(FsError::LeaseConflict(_) | FsError::AlreadyExists(_))
    ));
    // No block was written: lease recovery closes the file at once.
    assert!(nn
        .recover_lease(&by(&nn, ALICE, Operation::RecoverLease), "/f", "recoverer")
        .await
        .unwrap());
    assert!(
        !nn.regular_file_status(&by(&nn, SU, Operation::GetFileInfo), "/f")
            .unwrap()
            .under_construction
    );
}

#[tokio::test]
async fn a_file_is_written_located_and_closed() {
    let nn = three_datanodes().await;
    nn.create(&by(&nn, ALICE, Operation::Create), &create_req("/w"))
        .await
        .unwrap();
    let add = |previous| AddBlock {
        src: "/w",
        client_name: CLIENT,
        file_id: 0,
        previous,
        excluded: HashSet::new(),
    };
    let first = nn
        .add_block(&by(&nn, ALICE, Operation::AddBlock), &add(None))
        .await
        .unwrap();
    assert_eq!(first.locations.len(), 3);
    assert!(first.token.is_some(), "block tokens are on by default");
    // The next block waits for the first to have a finished replica.
    let prev = Previous {
        id: first.block.id,
        gs: first.block.gs,
        len: 1 << 20,
    };
    assert!(matches!(
        nn.add_block(&by(&nn, ALICE, Operation::AddBlock), &add(Some(prev)))
            .await,
        Err(FsError::NotReplicatedYet(_))
    ));
    received(&nn, &first, 1 << 20);
    let second = nn
        .add_block(&by(&nn, ALICE, Operation::AddBlock), &add(Some(prev)))
        .await
        .unwrap();
    assert_eq!(second.offset, 1 << 20);
    // hflush's length shows to readers while the block is written.
    nn.fsync(
        &by(&nn, ALICE, Operation::Fsync),
        "/w",
        CLIENT,
        0,
        Some(100),
    )
    .await
    .unwrap();
    let open: Collected = nn
        .block_locations(
            &by(&nn, ALICE, Operation::GetBlockLocations),
            "/w",
            0,
            u64::MAX,
        )
        .await
        .unwrap();
    assert!(open.under_construction);
    assert_eq!(open.tokens, 1);
    // As HDFS: the block being written is in the list and again as the last block.
    assert_eq!(open.blocks.len(), 3);
    assert_eq!((open.blocks[1].1, open.blocks[1].3), (100, false));
    assert_eq!((open.blocks[2].0, open.blocks[2].1), (second.block.id, 100));
    assert!(open.blocks[2].3, "the block being written comes last");

    let last = Previous {
        id: second.block.id,
        gs: second.block.gs,
        len: 7,
    };
    assert!(!nn
        .complete(
            &by(&nn, ALICE, Operation::Complete),
            "/w",
            CLIENT,
            0,
            Some(last)
        )
        .await
        .unwrap());
    received(&nn, &second, 7);
    assert!(nn
        .complete(
            &by(&nn, ALICE, Operation::Complete),
            "/w",
            CLIENT,
            0,
            Some(last)
        )
        .await
        .unwrap());
    let closed: Collected = nn
        .block_locations(
            &by(&nn, ALICE, Operation::GetBlockLocations),
            "/w",
            0,
            u64::MAX,
        )
        .await
        .unwrap();
    assert_eq!(closed.file_len, (1 << 20) + 7);
    assert!(!closed.under_construction);
    assert!(closed.blocks.iter().all(|b| b.2 == 3));
    assert!(
        nn.recover_lease(&by(&nn, ALICE, Operation::RecoverLease), "/w", "recoverer")
            .await
            .unwrap(),
        "closed"
    );

    let l = nn
        .listing(&by(&nn, ALICE, Operation::GetListing), "/", b"", true)
        .unwrap()
        .unwrap();
    let located = l.located[0].as_ref().unwrap();
    assert_eq!(located.blocks.len(), 2);
    assert!(located.blocks.iter().all(|b| b.token.is_none()));
    let (st, blocks) = nn
        .located_file_info(&by(&nn, ALICE, Operation::GetLocatedFileInfo), "/w", true)
        .unwrap()
        .unwrap();
    assert_eq!(st.len, (1 << 20) + 7);
    assert!(blocks.unwrap().blocks.iter().all(|b| b.token.is_some()));
    assert!(nn
        .located_file_info(
            &by(&nn, ALICE, Operation::GetLocatedFileInfo),
            "/gone",
            false
        )
        .unwrap()
        .is_none());
    assert!(matches!(
        nn.block_locations::<Collected>(
            &by(&nn, ALICE, Operation::GetBlockLocations),
            "/gone",
            0,
            1
        )
        .await,
        Err(e) if e.is_not_found()
    ));
}

#[tokio::test]
async fn pipeline_recovery_bumps_the_stamp_and_drops_lost_nodes() {
    let nn = three_datanodes().await;
    datanode(&nn, 3);
    let lb = first_block(&nn, "/r").await;
    let bumped = nn
        .update_block_for_pipeline(
            &by(&nn, ALICE, Operation::UpdateBlockForPipeline),
            lb.block,
            CLIENT,
        )
        .await
        .unwrap();
    assert!(bumped.block.gs > lb.block.gs);
    let kept: Vec<(&str, &str)> = lb.locations[..2]
        .iter()
        .map(|l| (l.node.id.uuid.as_str(), l.storage_uuid.as_str()))
        .collect();
    let none = HashSet::new();
    let ask = AdditionalDatanodes {
        src: "/r",
        client_name: CLIENT,
        file_id: 0,
        block: bumped.block,
        existing: &kept,
        excluded: &none,
        wanted: 1,
    };
    let more = nn
        .additional_datanodes(&by(&nn, ALICE, Operation::GetAdditionalDatanode), &ask)
        .unwrap();
    assert_eq!(more.locations.len(), 3);
    let uuids: Vec<&str> = kept.iter().map(|k| k.0).collect();
    nn.update_pipeline(
        &by(&nn, ALICE, Operation::UpdatePipeline),
        CLIENT,
        lb.block,
        bumped.block,
        &uuids,
    )
    .await
    .unwrap();
    let other = Block {
        id: lb.block.id + 1,
        ..lb.block
    };
    assert!(nn
        .update_pipeline(
            &by(&nn, ALICE, Operation::UpdatePipeline),
            CLIENT,
            other,
            bumped.block,
            &uuids
        )
        .await
        .is_err());
    // Another writer's calls are refused, by HDFS's checkLease.
    let theirs = AdditionalDatanodes {
        client_name: "someone-else",
        ..ask
    };
    assert!(matches!(
        nn.additional_datanodes(&by(&nn, ALICE, Operation::GetAdditionalDatanode), &theirs),
        Err(e) if e.is_lease_expired()
    ));
    nn.abandon_block(
        &by(&nn, ALICE, Operation::AbandonBlock),
        "/r",
        CLIENT,
        0,
        lb.block.id,
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn append_truncate_and_concat() {
    let nn = three_datanodes().await;
    write_file(&nn, ALICE, "/t", 100).await;
    // A directory is no file to append to.
    nn.mkdirs(&by(&nn, ALICE, Operation::Mkdirs), "/dir", 0o755, false)
        .await
        .unwrap();
    assert!(nn
        .append(&by(&nn, ALICE, Operation::Append), "/dir", CLIENT, false)
        .await
        .is_err());
    let a = nn
        .append(&by(&nn, ALICE, Operation::Append), "/t", CLIENT, false)
        .await
        .unwrap();
    let block = a.block.expect("the partial last block is reopened");
    assert_eq!(block.locations.len(), 3);
    assert!(a.status.unwrap().under_construction);
    // Another client meets the first one's lease.
    assert!(matches!(
        nn.append(&by(&nn, ALICE, Operation::Append), "/t", "other", false)
            .await,
        Err(FsError::LeaseConflict(_))
    ));
    received(&nn, &block, 150);
    let last = Previous {
        id: block.block.id,
        gs: block.block.gs,
        len: 150,
    };
    assert!(nn
        .complete(
            &by(&nn, ALICE, Operation::Complete),
            "/t",
            CLIENT,
            0,
            Some(last)
        )
        .await
        .unwrap());
    assert!(matches!(
        nn.truncate(&by(&nn, ALICE, Operation::Truncate), "/t", 500, CLIENT)
            .await,
        Err(FsError::Reshape(_))
    ));
    assert!(
        nn.truncate(&by(&nn, ALICE, Operation::Truncate), "/t", 0, CLIENT)
            .await
            .unwrap(),
        "a block boundary"
    );
    assert_eq!(
        nn.regular_file_status(&by(&nn, ALICE, Operation::GetFileInfo), "/t")
            .unwrap()
            .len,
        0
    );

    write_file(&nn, ALICE, "/c1", 1 << 20).await;
    write_file(&nn, ALICE, "/c2", 5).await;
    nn.concat(
        &by(&nn, ALICE, Operation::Concat),
        "/c1",
        &["/c2".to_string()],
    )
    .await
    .unwrap();
    assert_eq!(
        nn.regular_file_status(&by(&nn, ALICE, Operation::GetFileInfo), "/c1")
            .unwrap()
            .len,
        (1 << 20) + 5
    );
    assert_eq!(
        nn.file_info(&by(&nn, ALICE, Operation::GetFileInfo), "/c2")
            .unwrap(),
        None
    );
    assert!(nn
        .concat(
            &by(&nn, ALICE, Operation::Concat),
            "/c1",
            &["/c1".to_string()]
        )
        .await
        .is_err());
}

#[tokio::test]
async fn datanodes_register_beat_report_and_fail() {
    let nn = nn();
    let beat = HeartbeatReport::default();
    assert_eq!(
        nn.heartbeat(
            &by(&nn, ALICE, Operation::SendHeartbeat),
            "stranger",
            beat.clone()
        ),
        vec![DnCommand::Register]
    );
    assert!(matches!(
        nn.block_report(&by(&nn, ALICE, Operation::BlockReport), "stranger", &[]),
        Err(FsError::UnregisteredNode(_))
    ));
    let e = nn
        .register_datanode(
            &nn.admit("dn", "127.0.0.9", Operation::RegisterDatanode)
                .unwrap(),
            NodeRegistration {
                id: NodeId {
                    ip: "10.1.1.1".into(),
                    host: "h".into(),
                    uuid: "x".into(),
                    xfer_port: 1,
                    info_port: 2,
                    ipc_port: 3,
                },
                cluster_id: "CID-other".into(),
                rack: "/default-rack".into(),
            },
        )
        .unwrap_err();
    assert!(
        e.to_string().contains("belongs to cluster CID-other"),
        "{e}"
    );
    let uuid = datanode(&nn, 0);
    assert_eq!(nn.datanode_report(NodeFilter::Live).len(), 1);
    assert_eq!(nn.datanode_report(NodeFilter::Dead).len(), 0);
    assert_eq!(nn.datanode_report(NodeFilter::All)[0].id.ip, "127.0.0.1");
    assert_eq!(nn.fs_stats().capacity, 1 << 40);
    nn.block_report(
        &by(&nn, ALICE, Operation::BlockReport),
        &uuid,
        &[("DS-0".into(), Vec::new())],
    )
    .unwrap();
    nn.datanode_error(
        &by(&nn, ALICE, Operation::ErrorReport),
        &uuid,
        true,
        1,
        "disk gone",
    );
    assert_eq!(nn.datanode_report(NodeFilter::Live).len(), 0);
    assert_eq!(
        nn.heartbeat(&by(&nn, ALICE, Operation::SendHeartbeat), &uuid, beat),
        vec![DnCommand::Register]
    );
}

#[tokio::test]
async fn a_corrupt_replica_stops_being_handed_out() {
    let nn = three_datanodes().await;
    let lb = write_file(&nn, ALICE, "/bad", 10).await;
    let bad = lb.locations[0].node.id.uuid.clone();
    nn.mark_bad_blocks(
        &by(&nn, ALICE, Operation::ReportBadBlocks),
        &[(lb.block.id, vec![bad.as_str()])],
    );
    let after: Collected = nn
        .block_locations(&by(&nn, ALICE, Operation::GetBlockLocations), "/bad", 0, 10)
        .await
        .unwrap();
    assert_eq!(after.blocks[0].2, 2);
}

#[tokio::test]
async fn administration_on_the_memory_journal() {
    let nn = nn();
    assert_eq!(
        nn.save_namespace_now(&by(&nn, SU, Operation::SaveNamespace), 0, 0)
            .await,
        Err(FsError::Io(
            "Safe mode should be turned ON in order to create namespace image.".into()
        ))
    );
    nn.mkdirs(&by(&nn, SU, Operation::Mkdirs), "/x", 0o755, false)
        .await
        .unwrap();
    let next = nn
        .roll_edits(&by(&nn, SU, Operation::RollEdits))
        .await
        .unwrap();
    assert_eq!(
        next,
        nn.last_txid() + 1,
        "the next segment starts after the last record"
    );
    assert!(!nn
        .restore_failed_storage(&by(&nn, SU, Operation::RestoreFailedStorage), "check")
        .unwrap());
    assert!(nn
        .restore_failed_storage(&by(&nn, SU, Operation::RestoreFailedStorage), "true")
        .unwrap());
    assert!(matches!(
        nn.restore_failed_storage(&by(&nn, SU, Operation::RestoreFailedStorage), "maybe"),
        Err(FsError::IllegalArgument(_))
    ));
    nn.safe_mode_action(&by(&nn, SU, Operation::SetSafeMode), SafeModeAction::Enter)
        .unwrap();
    assert!(matches!(
        nn.roll_edits(&by(&nn, SU, Operation::RollEdits)).await,
        Err(FsError::InSafeMode { .. })
    ));
    // The image goes into memory, where image transfer finds it and start-up would.
    assert!(nn
        .save_namespace_now(&by(&nn, SU, Operation::SaveNamespace), 0, 0)
        .await
        .unwrap());
    let txid = nn.last_txid();
    assert_eq!(nn.last_image_txid(), txid);
    assert!(nn.image_recent_enough(3600, 0), "nothing journaled since");
    let chunk = nn
        .image_chunk(&by(&nn, SU, Operation::GetImage), 0, 0, u64::MAX)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((chunk.txid, chunk.total), (txid, chunk.data.len() as u64));
    let (image, at) = Namespace::decode_image_with(&chunk.data, &mut |_, _| ()).unwrap();
    assert_eq!(at, txid);
    let su = Caller::superuser(SU);
    assert!(image.lookup(&su, "/x").unwrap().is_some());
    let tail = nn
        .image_chunk(&by(&nn, SU, Operation::GetImage), txid, 10, 5)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&tail.data[..], &chunk.data[10..15]);
    assert!(matches!(
        nn.image_chunk(&by(&nn, SU, Operation::GetImage), txid + 1, 0, 1)
            .await,
        Err(e) if e.is_not_found()
    ));
    assert!(matches!(
        nn.path_summary(
            &by(&nn, SU, Operation::GetSummary),
            "/",
            |_, _| (),
            |_| false
        )
        .await,
        Err(FsError::Unsupported(_))
    ));
}

/// A mutation answers only once its records are durable: with the journal's syncs held,
/// mkdirs does not return; released, it does, and the directory is there.
#[tokio::test]
async fn answers_wait_for_the_journal() {
    let nn = nn();
    assert!(nn.hold_memory_syncs(true));
    let made = {
        let nn = nn.clone();
        tokio::spawn(async move {
            nn.mkdirs(&by(&nn, SU, Operation::Mkdirs), "/durable", 0o755, false)
                .await
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(
        !made.is_finished(),
        "answered before its record was durable"
    );
    // Applied already (readers see it), durable not yet: as HDFS's edit log orders them.
    assert!(nn
        .file_info(&by(&nn, SU, Operation::GetFileInfo), "/durable")
        .unwrap()
        .is_some());
    nn.hold_memory_syncs(false);
    made.await.unwrap().unwrap();
}

/// readEdits hands a follower exactly the records the namespace applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_read_the_records_applied() {
    let nn = nn();
    nn.mkdirs(&by(&nn, SU, Operation::Mkdirs), "/a/b", 0o755, true)
        .await
        .unwrap();
    nn.rename2(&by(&nn, SU, Operation::Rename2), "/a/b", "/a/c", false)
        .await
        .unwrap();
    let last = nn.last_txid();
    let (bytes, synced) = nn
        .read_edits(
            &by(&nn, SU, Operation::ReadEdits),
            1,
            1 << 20,
            std::time::Duration::ZERO,
        )
        .await
        .unwrap();
    assert_eq!(synced, last);
    let mut buf = &bytes[..];
    let mut ops = Vec::new();
    while let Ok(crate::journal::codec::Next::Record { op, size, .. }) =
        crate::journal::codec::decode_record(buf)
    {
        ops.push(op.name());
        buf = &buf[size..];
    }
    assert_eq!(ops, vec!["OP_MKDIR", "OP_MKDIR", "OP_RENAME"]);
}

/// A writer that went away after hflushing: recoverLease starts block recovery, the
/// primary's heartbeat brings the order, and commitBlockSynchronization closes the file
/// at the length the replicas agreed on.
/// The recovery orders the DataNodes' next heartbeats carry.
fn recovery_orders(nn: &NameNodeService) -> Vec<RecoveringBlock> {
    (0..3)
        .flat_map(|i| {
            let beat = HeartbeatReport {
                xceivers: 0,
                storages: Vec::new(),
            };
            nn.heartbeat(
                &by(nn, ALICE, Operation::SendHeartbeat),
                &format!("dn-{i}"),
                beat,
            )
        })
        .filter_map(|c| match c {
            DnCommand::Recover(b) => Some(b),
            _ => None,
        })
        .flatten()
        .collect()
}

/// A NameNode started less than a dead-node interval ago may not have heard from every
/// DataNode: when the only replicas it knows of were left unfinished by their nodes'
/// restarts (each may have lost flushed bytes), lease recovery waits for a node that
/// stayed up. One up for longer recovers from what it has.
#[tokio::test]
async fn a_new_namenode_waits_for_late_reports_before_recovering_from_restarted_replicas() {
    for (up_for_ms, recovers) in [(0, false), (Config::default().dead_interval_ms(), true)] {
        let mut svc = NameNodeService::in_memory(Config::default(), SU);
        svc.started_ms -= up_for_ms as i64 + 1;
        let nn = Arc::new(svc);
        for i in 0..3 {
            datanode(&nn, i);
        }
        nn.set_permission(&by(&nn, SU, Operation::SetPermission), "/", 0o777)
            .await
            .unwrap();
        let lb = first_block(&nn, "/r").await;
        // Each node restarted mid-write: its full report holds the replica as RWR.
        for l in &lb.locations {
            let rwr = Reported {
                id: lb.block.id,
                len: 200,
                gs: lb.block.gs,
                state: ReplicaState::WaitingRecovery,
            };
            nn.block_report(
                &by(&nn, ALICE, Operation::BlockReport),
                &l.node.id.uuid,
                &[(l.storage_uuid.clone(), vec![rwr])],
            )
            .unwrap();
        }
        let closed = nn
            .recover_lease(&by(&nn, SU, Operation::RecoverLease), "/r", "recoverer")
            .await
            .unwrap();
        assert!(!closed, "the block's length needs its replicas' agreement");
        assert_eq!(
            recovery_orders(&nn).len(),
            usize::from(recovers),
            "up for {up_for_ms} ms"
        );
    }
}

#[tokio::test]
async fn lease_recovery_closes_at_the_length_the_primary_reports() {
    let nn = three_datanodes().await;
    let lb = first_block(&nn, "/h").await;
    // Each DataNode holds the block unfinished: the writer's hflushed bytes.
    reported(
        &nn,
        &lb,
        300,
        ReplicaState::Unfinished,
        ReplicaEvent::Receiving,
    );
    assert!(
        !nn.recover_lease(&by(&nn, SU, Operation::RecoverLease), "/h", "recoverer")
            .await
            .unwrap(),
        "recovery under way"
    );
    assert!(
        nn.regular_file_status(&by(&nn, SU, Operation::GetFileInfo), "/h")
            .unwrap()
            .under_construction
    );
    // Meanwhile the file is the recoverer's: its old writer is refused (HDFS's
    // reassignLease), though the file is not closed yet.
    let refused = nn
        .fsync(
            &by(&nn, ALICE, Operation::Fsync),
            "/h",
            CLIENT,
            0,
            Some(300),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, FsError::NotLeaseOwner { owner, .. } if owner == "recoverer"),
        "{refused}"
    );
    assert!(matches!(
        nn.complete(&by(&nn, ALICE, Operation::Complete), "/h", CLIENT, 0, None)
            .await,
        Err(e) if e.is_lease_expired()
    ));
    // A third writer meets the recovery under way; the recoverer's lease is live, so
    // HDFS's words name who recovers (and the file's machine), not a lapsed lease.
    let busy = nn
        .append(&by(&nn, ALICE, Operation::Append), "/h", "third", false)
        .await
        .unwrap_err();
    assert_eq!(
        busy.java_class(),
        "org.apache.hadoop.hdfs.protocol.RecoveryInProgressException"
    );
    assert!(
        busy.to_string()
            .ends_with("because another recovery is in progress by recoverer on 127.0.0.1"),
        "{busy}"
    );
    // The primary's next heartbeat carries the order, with a new stamp.
    let orders = recovery_orders(&nn);
    assert_eq!(orders.len(), 1, "one primary: {orders:?}");
    let order = &orders[0];
    assert_eq!(order.block.block.id, lb.block.id);
    assert!(order.recovery_id > lb.block.gs);
    assert_eq!(order.block.locations.len(), 3);
    let report = |recovery_id| SyncReport {
        block_id: lb.block.id,
        old_gs: lb.block.gs,
        recovery_id,
        new_len: 300,
        close: true,
        delete: false,
        holders: lb
            .locations
            .iter()
            .map(|l| (l.node.id.uuid.clone(), l.storage_uuid.clone()))
            .collect(),
    };
    assert!(
        nn.commit_block_sync(
            &by(&nn, ALICE, Operation::CommitBlockSynchronization),
            report(order.recovery_id + 1)
        )
        .await
        .is_err(),
        "a report of another recovery is refused"
    );
    nn.commit_block_sync(
        &by(&nn, ALICE, Operation::CommitBlockSynchronization),
        report(order.recovery_id),
    )
    .await
    .unwrap();
    let st = nn
        .regular_file_status(&by(&nn, SU, Operation::GetFileInfo), "/h")
        .unwrap();
    assert!(!st.under_construction);
    assert_eq!(st.len, 300, "every hflushed byte is kept");
    let closed: Collected = nn
        .block_locations(
            &by(&nn, ALICE, Operation::GetBlockLocations),
            "/h",
            0,
            u64::MAX,
        )
        .await
        .unwrap();
    // The block in the list and again as the last block, as HDFS answers.
    let block = (lb.block.id, 300, 3);
    let want = [
        (block.0, block.1, block.2, false),
        (block.0, block.1, block.2, true),
    ];
    assert_eq!(closed.blocks, want);
    assert_eq!(nn.lease_holders(), 0);
}

/// A storage of `ty` for node `i` (`DS-i` is its DISK, as `datanode` registers it).
fn storage(i: u32, ty: u8) -> StorageState {
    StorageState {
        storage_type: ty,
        uuid: if ty == 1 {
            format!("DS-{i}")
        } else {
            format!("SSD-{i}")
        },
        failed: false,
        capacity: 1 << 40,
        dfs_used: 0,
        remaining: 1 << 40,
    }
}

/// Node `uuid` reports a finished replica of `lb`'s block on `storage`, received by a move
/// from `hint`.
fn moved_to(nn: &NameNodeService, uuid: &str, storage: &str, lb: &LocatedBlock, hint: &str) {
    let r = Reported {
        id: lb.block.id,
        len: 10,
        gs: lb.block.gs,
        state: ReplicaState::Finalized,
    };
    let hints = [(lb.block.id, hint.to_string())];
    let hints: &[(u64, String)] = if hint.is_empty() { &[] } else { &hints };
    nn.incremental_report(
        &by(nn, ALICE, Operation::BlockReceivedAndDeleted),
        uuid,
        &[(storage.into(), vec![(r, ReplicaEvent::Received)])],
        hints,
    )
    .unwrap();
}

#[tokio::test]
async fn the_satisfier_marks_a_path_moves_its_replicas_and_unmarks_it() {
    let nn = three_datanodes().await;
    // Node 2 has an SSD beside its DISK; node 3 only an SSD (it gets no HOT replica).
    let beat = |storages| HeartbeatReport {
        xceivers: 0,
        storages,
    };
    nn.heartbeat(
        &by(&nn, ALICE, Operation::SendHeartbeat),
        "dn-2",
        beat(vec![storage(2, 1), storage(2, 2)]),
    );
    let dn3 = datanode(&nn, 3);
    let gone = StorageState {
        failed: true,
        ..storage(3, 1)
    };
    nn.heartbeat(
        &by(&nn, ALICE, Operation::SendHeartbeat),
        &dn3,
        beat(vec![gone, storage(3, 2)]),
    );
    let lb = write_file(&nn, SU, "/d/f", 10).await;
    nn.set_storage_policy(
        &by(&nn, SU, Operation::SetStoragePolicy),
        "/d",
        Some("ONE_SSD"),
    )
    .await
    .unwrap();
    let e = nn
        .satisfy_storage_policy(&by(&nn, ALICE, Operation::SatisfyStoragePolicy), "/d")
        .await
        .unwrap_err();
    assert!(e.is_access_denied(), "{e}");
    let e = nn
        .satisfy_storage_policy(&by(&nn, SU, Operation::SatisfyStoragePolicy), "/nope")
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "cannot find /nope");
    nn.satisfy_storage_policy(&by(&nn, SU, Operation::SatisfyStoragePolicy), "/d")
        .await
        .unwrap();
    nn.satisfy_storage_policy(&by(&nn, SU, Operation::SatisfyStoragePolicy), "/d")
        .await
        .unwrap(); // already asked: skipped quietly
    let marked = |p: &str| {
        nn.list_xattrs(&by(&nn, SU, Operation::ListXAttrs), p)
            .unwrap()
            .iter()
            .any(|x| x.prefixed() == "user.hdfs.sps")
    };
    assert!(marked("/d"));
    // ONE_SSD wants one of the three DISK replicas on SSD: node 2's, moved between its
    // own volumes.
    let (orders, done) = nn.satisfier_pass();
    assert!(done.is_empty());
    assert_eq!(orders.len(), 1);
    let o = &orders[0];
    assert_eq!(
        (o.source.id.uuid.as_str(), o.target.id.uuid.as_str()),
        ("dn-2", "dn-2")
    );
    assert_eq!((o.storage_type, o.block.id), (2, lb.block.id));
    assert!(
        nn.satisfier_pass().0.is_empty(),
        "nothing more while it moves"
    );
    moved_to(&nn, "dn-2", "SSD-2", &lb, "");
    nn.move_finished(lb.block.id, Ok(()));
    let (orders, done) = nn.satisfier_pass();
    assert!(orders.is_empty());
    assert_eq!(done.len(), 1);
    assert!(done[0].satisfied);
    nn.satisfier_finish(&done).await;
    assert!(!marked("/d"));
    assert!(nn.satisfier.lock().paths().is_empty(), "done with");

    // ALL_SSD: node 2's SSD has the block already; one DISK replica can go to node 3 (a
    // copy, the source's replica then surplus by the delete hint); the third cannot move.
    nn.set_storage_policy(
        &by(&nn, SU, Operation::SetStoragePolicy),
        "/d/f",
        Some("ALL_SSD"),
    )
    .await
    .unwrap();
    nn.satisfy_storage_policy(&by(&nn, SU, Operation::SatisfyStoragePolicy), "/d/f")
        .await
        .unwrap();
    let (orders, _) = nn.satisfier_pass();
    assert_eq!(orders.len(), 1);
    let o = &orders[0];
    assert_eq!(o.target.id.uuid, "dn-3");
    let source = o.source.id.uuid.clone();
    moved_to(&nn, "dn-3", "SSD-3", &lb, &source);
    nn.move_finished(lb.block.id, Ok(()));
    let holders = nn.blocks.lock().places(lb.block.id).len();
    assert_eq!(holders, 3, "the hinted copy is dropped, three remain");
    // What is left cannot be placed: after its rounds the path is given up on.
    let mut gave_up = None;
    for _ in 0..5 {
        let (orders, done) = nn.satisfier_pass();
        assert!(orders.is_empty());
        if let Some(d) = done.first() {
            gave_up = Some(*d);
            break;
        }
    }
    assert_eq!(gave_up.map(|d| d.satisfied), Some(false));

    // A mark found at start-up (a restart) queues the path again.
    nn.satisfier_finish(&[gave_up.unwrap()]).await;
    nn.satisfy_storage_policy(&by(&nn, SU, Operation::SatisfyStoragePolicy), "/d")
        .await
        .unwrap();
    let id = nn.satisfier.lock().paths()[0];
    nn.satisfier.lock().remove(id);
    nn.requeue_satisfier();
    assert_eq!(nn.satisfier.lock().paths(), vec![id]);
}

#[tokio::test]
async fn the_satisfier_off_refuses_as_hdfs_does_by_default() {
    let mut cfg = Config::default();
    cfg.satisfier.enabled = false;
    let nn = service(cfg);
    let e = nn
        .satisfy_storage_policy(&by(&nn, SU, Operation::SatisfyStoragePolicy), "/")
        .await
        .unwrap_err();
    assert!(matches!(e, FsError::UnsupportedAction(_)));
    assert!(e.to_string().starts_with("Cannot request to satisfy storage policy when storage policy satisfier feature has been disabled by admin."), "{e}");
}

/// One acknowledged call of the simulator's seed 24608, run as the superuser.
#[derive(Clone, Copy)]
enum Step {
    Mk(&'static str),
    Cr(&'static str),
    Del(&'static str),
    Mv(&'static str, &'static str),
    R2(&'static str, &'static str, bool),
    Snap(&'static str, &'static str),
    Unsnap(&'static str, &'static str),
}

async fn run_step(nn: &NameNodeService, step: Step) {
    use Step::*;
    let su = |op| by(nn, SU, op);
    match step {
        Mk(p) => nn
            .mkdirs(&su(Operation::Mkdirs), p, 0o755, true)
            .await
            .unwrap(),
        Cr(p) => {
            let st = nn
                .create(&su(Operation::Create), &create_req(p))
                .await
                .unwrap()
                .unwrap();
            let done = su(Operation::Complete);
            assert!(nn
                .complete(&done, p, CLIENT, st.file_id, None)
                .await
                .unwrap());
        }
        Del(p) => assert!(nn.delete(&su(Operation::Delete), p, true).await.unwrap()),
        Mv(a, b) => assert!(nn.rename(&su(Operation::Rename), a, b).await.unwrap()),
        R2(a, b, overwrite) => nn
            .rename2(&su(Operation::Rename2), a, b, overwrite)
            .await
            .unwrap(),
        Snap(root, name) => {
            nn.create_snapshot(&su(Operation::CreateSnapshot), root, Some(name))
                .await
                .unwrap();
        }
        Unsnap(root, name) => nn
            .delete_snapshot(&su(Operation::DeleteSnapshot), root, name)
            .await
            .unwrap(),
    }
}

/// Found by the simulator (seed 24608): three clients each working in a snapshottable
/// directory of its own; deleting c1's last snapshot after directories were moved between
/// its snapshots and the moved tree deleted, while the others created and deleted files.
#[tokio::test]
async fn deleting_snapshots_after_moves_and_deletes_keeps_the_namespace_whole() {
    use Step::*;
    let nn = nn();
    for root in ["/c0", "/c1", "/c2"] {
        run_step(&nn, Mk(root)).await;
        nn.allow_snapshot(&by(&nn, SU, Operation::AllowSnapshot), root)
            .await
            .unwrap();
    }
    for step in [
        Cr("/c0/f1"),
        Cr("/c2/f1"),
        Del("/c0/f1"),
        Mk("/c1/d2"),
        Mk("/c2/d2"),
        Snap("/c2", "s3"),
        Snap("/c1", "s3"),
        Cr("/c0/f4"),
        Cr("/c2/f4"),
        Mk("/c1/d4"),
        Cr("/c0/f5"),
        Snap("/c1", "s5"),
        Cr("/c2/f5"),
        Del("/c0/f4"),
        Mk("/c1/d6"),
        Del("/c0/f5"),
        Cr("/c2/f6"),
        Mk("/c1/d4/d8"),
        Mk("/c2/d7"),
        Cr("/c0/f7"),
        Mv("/c1/d4", "/c1/d2/r9"),
        Mk("/c2/d7/d8"),
        Del("/c0/f7"),
        Mk("/c1/d2/r9/d10"),
        Mk("/c2/d9"),
        Cr("/c2/f10"),
        Cr("/c0/f8"),
        Unsnap("/c1", "s5"),
        Mk("/c0/d9"),
        Snap("/c1", "s11"),
        Mk("/c1/d12"),
        Cr("/c2/f11"),
        Cr("/c0/f10"),
        Mk("/c1/d6/d13"),
        Mv("/c2/f10", "/c2/r13"),
        Mv("/c1/d2/r9/d10", "/c1/d2/r14"),
        Cr("/c0/f11"),
        Unsnap("/c1", "s3"),
        Mk("/c0/d12"),
        Snap("/c0", "s13"),
        Cr("/c2/f15"),
        Cr("/c1/d6/f16"),
        R2("/c2/r13", "/c2/r16", true),
        Del("/c1/d2"),
        Mk("/c2/d17"),
        Cr("/c0/f14"),
        Del("/c0/f8"),
        Cr("/c1/f17"),
        Cr("/c2/f18"),
        Snap("/c0", "s15"),
        Unsnap("/c1", "s11"),
    ] {
        run_step(&nn, step).await;
    }
    // With every snapshot gone, nothing is kept: every inode is a live one, and each is
    // counted once.
    for step in [
        Unsnap("/c0", "s13"),
        Unsnap("/c0", "s15"),
        Unsnap("/c2", "s3"),
    ] {
        run_step(&nn, step).await;
    }
    let cs = nn
        .content_summary(&by(&nn, SU, Operation::GetContentSummary), "/")
        .await
        .unwrap();
    let (files, dirs, inodes) =
        nn.with_namespace(|ns| (ns.file_count(), ns.dir_count(), ns.inode_count() as u64));
    assert_eq!((cs.files, cs.dirs), (files, dirs));
    assert_eq!(
        inodes,
        files + dirs,
        "an inode nothing lists was left behind"
    );
}

/// Start-up safe mode counts complete blocks: a finished replica of an open file's last
/// block (a recovery finalized it, an append reopened it) is not one.
#[tokio::test]
async fn safe_blocks_leave_out_the_finished_last_block_of_an_open_file() {
    let nn = three_datanodes().await;
    write_file(&nn, ALICE, "/closed", 100).await;
    let open = first_block(&nn, "/open").await;
    received(&nn, &open, 50);
    assert_eq!(nn.safe_block_counts(), (1, 1));
}

/// A standby refuses clients with HDFS's StandbyException (the category names reads and
/// writes apart; Hadoop's failover proxy moves on at it), before any other check, and
/// still serves the DataNodes and the HA state.
#[tokio::test]
async fn a_standby_refuses_clients_and_serves_datanodes() {
    let nn = nn();
    // Admitted while active, run after the switch: the commit path refuses it too (so do
    // the monitors' own changes).
    let early = by(&nn, ALICE, Operation::Mkdirs);
    nn.set_ha_state(HaState::Standby);
    assert!(matches!(
        nn.mkdirs(&early, "/late", 0o755, false).await,
        Err(FsError::Standby { .. })
    ));
    let refused = |user: &str, op| nn.admit(user, "127.0.0.1", op).unwrap_err();
    let read = refused(ALICE, Operation::GetFileInfo);
    assert_eq!(read.java_class(), "org.apache.hadoop.ipc.StandbyException");
    assert_eq!(
        read.to_string(),
        "Operation category READ is not supported in state standby. Visit https://s.apache.org/sbnn-error"
    );
    assert!(refused(ALICE, Operation::Mkdirs)
        .to_string()
        .starts_with("Operation category WRITE "));
    // Before the superuser check: anyone learns to go to the active.
    assert!(matches!(
        refused(ALICE, Operation::SaveNamespace),
        FsError::Standby { .. }
    ));
    for op in [
        Operation::RegisterDatanode,
        Operation::SendHeartbeat,
        Operation::BlockReport,
        Operation::BlockReceivedAndDeleted,
        Operation::GetHAServiceState,
    ] {
        assert!(nn.admit("dn", "127.0.0.1", op).is_ok(), "{}", op.name());
    }
    datanode(&nn, 0);
    nn.set_ha_state(HaState::Active);
    assert!(nn.admit(ALICE, "127.0.0.1", Operation::GetFileInfo).is_ok());
}

/// In safe mode a block none of whose replicas is known (not reported yet, after a
/// restart) is refused with HDFS's "Zero blocklocations" rather than listed empty: a
/// reader would take the file for shorter than it is. A file whose replicas are in reads
/// as usual.
#[tokio::test]
async fn safe_mode_refuses_a_read_of_a_block_with_no_known_replica() {
    let nn = three_datanodes().await;
    write_file(&nn, ALICE, "/reported", 100).await;
    let gone = write_file(&nn, ALICE, "/gone", 100).await;
    reported(
        &nn,
        &gone,
        100,
        ReplicaState::Finalized,
        ReplicaEvent::Deleted,
    );
    nn.safe_mode_action(&by(&nn, SU, Operation::SetSafeMode), SafeModeAction::Enter)
        .unwrap();
    let read = |src: &'static str| {
        let nn = &nn;
        async move {
            nn.block_locations::<Collected>(
                &by(nn, ALICE, Operation::GetBlockLocations),
                src,
                0,
                u64::MAX,
            )
            .await
        }
    };
    assert!(read("/reported").await.is_ok());
    let Err(FsError::InSafeMode { refused, .. }) = read("/gone").await else {
        panic!("listed a block with no replica in safe mode");
    };
    assert_eq!(refused, "Zero blocklocations for /gone");
    received(&nn, &gone, 100);
    assert!(read("/gone").await.is_ok(), "reported again");
}

/// NamenodeProtocol.getBlocks, as Hadoop's Balancer asks it.
#[tokio::test]
async fn get_blocks_lists_a_nodes_complete_blocks_with_their_places_up_to_the_size() {
    use super::balancing::BlocksWanted;
    let nn = three_datanodes().await;
    for i in 0..4 {
        write_file(&nn, ALICE, &format!("/f{i}"), 1000 + i).await;
    }
    // A block still being written is never moved.
    let open = first_block(&nn, "/open").await;
    received(&nn, &open, 10);
    let want = |size, min_block_size, hot_ms| BlocksWanted {
        uuid: "dn-0".into(),
        xfer_addr: "127.0.0.1:9866".into(),
        size,
        min_block_size,
        hot_ms,
        storage_type: None,
    };
    let su = by(&nn, SU, Operation::GetBlocks);
    let all = nn.blocks_of_node(&su, &want(u64::MAX, 0, 0)).unwrap();
    assert_eq!(all.len(), 4, "{all:?}");
    assert!(all.iter().all(|b| b.id != open.block.id));
    for b in &all {
        assert_eq!(b.places.len(), 3, "{b:?}");
        assert!(b.places.iter().any(|(node, _, _)| node == "dn-0"));
        assert!(b
            .places
            .iter()
            .all(|(_, storage, ty)| storage.starts_with("DS-") && *ty == 1));
    }
    // It stops once the blocks add up to the size asked for.
    assert_eq!(nn.blocks_of_node(&su, &want(1, 0, 0)).unwrap().len(), 1);
    // Blocks under the minimum size, and blocks of files changed lately, are left out.
    let big = nn.blocks_of_node(&su, &want(u64::MAX, 1002, 0)).unwrap();
    assert!(
        big.iter().all(|b| b.len >= 1002) && big.len() == 2,
        "{big:?}"
    );
    assert!(nn
        .blocks_of_node(&su, &want(u64::MAX, 0, 3_600_000))
        .unwrap()
        .is_empty());

    // HDFS's refusals.
    let e = nn.blocks_of_node(&su, &want(0, 0, 0)).unwrap_err();
    assert_eq!(e.to_string(), "Unexpected not positive size: 0");
    let mut stranger = want(10, 0, 0);
    stranger.uuid = "dn-9".into();
    stranger.xfer_addr = "10.0.0.9:9866".into();
    let e = nn.blocks_of_node(&su, &stranger).unwrap_err();
    assert_eq!(e.to_string(), "Datanode 10.0.0.9:9866 not found.");
    let e = nn
        .admit(ALICE, "127.0.0.1", Operation::GetBlocks)
        .unwrap_err();
    assert!(
        e.to_string().contains("Superuser privilege is required"),
        "{e}"
    );
    nn.set_safe_mode(true);
    let e = nn.blocks_of_node(&su, &want(10, 0, 0)).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("Cannot execute getBlocks. Name node is in safe mode."),
        "{e}"
    );
}

#[tokio::test]
async fn a_balancer_bandwidth_reaches_each_datanode_once() {
    let nn = nn();
    let (a, b) = (datanode(&nn, 0), datanode(&nn, 1));
    let beat = |uuid: &str| {
        nn.heartbeat(
            &by(&nn, ALICE, Operation::SendHeartbeat),
            uuid,
            HeartbeatReport::default(),
        )
    };
    let wanted = DnCommand::BalancerBandwidth(1 << 20);
    assert!(!beat(&a).contains(&wanted));
    // The superuser's alone, as HDFS's.
    assert!(nn
        .admit(ALICE, "127.0.0.1", Operation::SetBalancerBandwidth)
        .is_err());
    nn.set_balancer_bandwidth(&by(&nn, SU, Operation::SetBalancerBandwidth), 1 << 20);
    for uuid in [&a, &b] {
        assert!(beat(uuid).contains(&wanted), "{uuid}");
        // Sent once: the node keeps it from then on.
        assert!(!beat(uuid).contains(&wanted), "{uuid}");
    }
}
