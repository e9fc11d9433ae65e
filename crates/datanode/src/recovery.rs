//! Block recovery, led by this DataNode as the primary the NameNode chose: ask every
//! replica what it holds (InterDatanodeProtocol `initReplicaRecovery`, or our own dataset),
//! choose the length every good replica has, cut them all to it under the new generation
//! stamp (`updateReplicaUnderRecovery`), and report to the NameNode
//! (`commitBlockSynchronization`), which then closes the file.

use std::sync::Arc;
use std::time::Duration;

use ferrite_ipc::client::{ClientError, IpcClient};
use ferrite_ipc::INTER_DATANODE_PROTOCOL;
use ferrite_proto::datanode::received_deleted_block_info_proto::BlockStatus;
use ferrite_proto::datanode::CommitBlockSynchronizationRequestProto;
use ferrite_proto::hdfs::{
    BlockProto, DatanodeInfoProto, ExtendedBlockProto, InitReplicaRecoveryRequestProto,
    InitReplicaRecoveryResponseProto, RecoveringBlockProto, ReplicaStateProto,
    UpdateReplicaUnderRecoveryRequestProto, UpdateReplicaUnderRecoveryResponseProto,
};
use tracing::{debug, info, warn};

use crate::nn_link::NnLink;
use crate::storage::recovery::{RecoveryState, ReplicaInfo};
use crate::storage::{Dataset, StorageError};

/// How long the primary waits for another DataNode's answer.
const PEER_TIMEOUT: Duration = Duration::from_secs(20);

/// What the primary decided: the length, and which replicas (by index into the block's
/// locations) take part.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub len: u64,
    pub participants: Vec<usize>,
}

/// Chooses the recovered length, as HDFS does with three differences noted below, from
/// the replicas of the best state that answered ([`RecoveryState`]'s order):
/// - finalized replicas know the block's length (the newest, longest one's); they and the
///   unfinished replicas that stayed up and hold exactly as much take part;
/// - else the unfinished replicas that stayed up take part at the shortest length among
///   them: each holds every byte the writer's pipeline acknowledged (an hflush returns
///   only then), so nothing acknowledged is lost and nothing unacknowledged is kept on one
///   replica only;
/// - else, only replicas left unfinished by restarts (a power cut may have taken
///   acknowledged bytes from any of them): the longest is the block (HDFS: the shortest).
///
/// Empty replicas take no part, as in HDFS; nor does a replica under an older stamp than
/// one that stayed up (HDFS: any stamp not older than the NameNode's); and finalized ones
/// that disagree give the longest (HDFS refuses). A truncate's length wins where the
/// replicas hold it. None when no replica holds a byte.
pub(crate) fn choose(replicas: &[(usize, ReplicaInfo)], truncate: Option<u64>) -> Option<Plan> {
    // A replica that stayed up under a newer stamp was set up by the writer after the
    // others' stamp (an append or a pipeline recovery reopened it with every byte they
    // have): one under an older stamp is stale, however finished it looks. HDFS keeps
    // any stamp the NameNode's is not newer than, and so may take a stale finalized one.
    let newest = replicas
        .iter()
        .filter(|(_, r)| r.state != RecoveryState::Rwr && r.len > 0)
        .map(|(_, r)| r.gs)
        .max()
        .unwrap_or(0);
    let holding: Vec<(usize, ReplicaInfo)> = replicas
        .iter()
        .filter(|(_, r)| r.len > 0 && r.gs >= newest)
        .copied()
        .collect();
    let replicas = &holding[..];
    let best = replicas.iter().map(|(_, r)| r.state).min()?;
    let len = match best {
        // Finalized replicas agree unless one was damaged (a power cut shortened it) or
        // is older (a stamp an append or a recovery moved on from): the newest and
        // longest is the block.
        RecoveryState::Finalized => replicas
            .iter()
            .filter(|(_, r)| r.state == best)
            .map(|(_, r)| (r.gs, r.len))
            .max()
            .map(|(_, len)| len)?,
        RecoveryState::Rbw => replicas
            .iter()
            .filter(|(_, r)| r.state == best)
            .map(|(_, r)| r.len)
            .min()?,
        // Only replicas left unfinished by restarts: each may have lost flushed bytes,
        // so the longest is kept (every byte of it was written to the file; replicas of
        // one stamp hold one stream) and the shorter ones are dropped and copied anew.
        // HDFS takes the shortest here, keeping more copies of fewer bytes.
        RecoveryState::Rwr => replicas
            .iter()
            .filter(|(_, r)| r.state == best)
            .map(|(_, r)| r.len)
            .max()?,
    };
    let takes_part = |r: &ReplicaInfo| match best {
        RecoveryState::Finalized => r.state <= RecoveryState::Rbw && r.len == len,
        RecoveryState::Rbw => r.state == best,
        RecoveryState::Rwr => r.state == best && r.len == len,
    };
    let participants: Vec<usize> = replicas
        .iter()
        .filter(|(_, r)| takes_part(r))
        .map(|&(i, _)| i)
        .collect();
    let len = match truncate {
        Some(t) if t <= len => t,
        _ => len,
    };
    Some(Plan { len, participants })
}

/// Why a step of a block recovery failed. The primary logs it and gives the recovery up
/// (the NameNode starts it again); a peer's step answers it to the primary.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RecoveryError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("the disk task stopped: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("{addr}: {source}")]
    Peer {
        addr: String,
        #[source]
        source: ClientError,
    },
    #[error("{addr} did not answer {method} in time")]
    Timeout { addr: String, method: String },
    #[error("{addr} answered initReplicaRecovery without its block")]
    NoBlock { addr: String },
    #[error("no replica could be reached")]
    Unreachable,
    #[error("no replica could be updated")]
    NoneUpdated,
    #[error("commitBlockSynchronization: {0}")]
    Commit(#[source] ClientError),
}

/// Carries out one recovery the NameNode ordered. Failures are logged: the NameNode starts
/// the recovery again, with another primary, when no report comes.
pub(crate) async fn run(ds: Arc<Dataset>, link: Arc<NnLink>, rb: RecoveringBlockProto) {
    let id = rb.block.b.block_id;
    match recover(&ds, &link, &rb).await {
        Ok(len) => info!(
            block = id,
            recovery_id = rb.new_gen_stamp,
            len,
            "block recovered"
        ),
        Err(e) => {
            warn!(block = id, recovery_id = rb.new_gen_stamp, error = %e, "block recovery failed")
        }
    }
}

async fn recover(
    ds: &Arc<Dataset>,
    link: &Arc<NnLink>,
    rb: &RecoveringBlockProto,
) -> Result<u64, RecoveryError> {
    let block = &rb.block.b;
    let recovery_id = rb.new_gen_stamp;
    let me = link.uuid();
    let locs = &rb.block.locs;
    let mut found = Vec::new();
    let mut answered = 0;
    for (i, loc) in locs.iter().enumerate() {
        let got = if loc.id.datanode_uuid == me {
            let (bid, gs) = (block.block_id, block.generation_stamp);
            on_disk(ds, move |ds| Ok(ds.init_recovery(bid, gs, recovery_id)?)).await
        } else {
            init_remote(loc, link, rb).await
        };
        debug!(block = block.block_id, node = %loc.id.datanode_uuid, answer = ?got.as_ref().ok(), "replica asked");
        match got {
            Ok(Some(info)) => {
                answered += 1;
                found.push((i, info));
            }
            Ok(None) => answered += 1,
            Err(e) => {
                warn!(block = block.block_id, node = %loc.id.datanode_uuid, error = %e, "a replica could not join the recovery")
            }
        }
    }
    let truncate = rb.truncate_block.as_ref().and_then(|b| b.num_bytes);
    // Copy-on-truncate: the truncate's block has an id of its own, and the replicas are
    // copied into it rather than cut.
    let copy_to = rb
        .truncate_block
        .as_ref()
        .map(|b| b.block_id)
        .filter(|&id| id != block.block_id);
    let commit =
        |len, delete, holders: Vec<(usize, String)>| CommitBlockSynchronizationRequestProto {
            block: block.clone(),
            new_gen_stamp: recovery_id,
            new_length: len,
            close_file: true,
            delete_block: delete,
            new_taragets: holders.iter().map(|(i, _)| locs[*i].id.clone()).collect(),
            new_target_storages: holders.into_iter().map(|(_, s)| s).collect(),
        };
    let Some(plan) = choose(&found, truncate) else {
        if answered == locs.len() {
            // Every DataNode answered and none holds a byte of the block: nothing was
            // written to it.
            link.commit_block_sync(&commit(0, true, Vec::new()))
                .await
                .map_err(RecoveryError::Commit)?;
            return Ok(0);
        }
        return Err(RecoveryError::Unreachable);
    };
    let mut holders = Vec::new();
    for &i in &plan.participants {
        let loc = &locs[i];
        let done = if loc.id.datanode_uuid == me {
            update_local(
                ds.clone(),
                link,
                block.block_id,
                recovery_id,
                copy_to,
                plan.len,
            )
            .await
        } else {
            update_remote(loc, link, block, recovery_id, copy_to, plan.len).await
        };
        match done {
            Ok(storage) => holders.push((i, storage)),
            Err(e) => {
                warn!(block = block.block_id, node = %loc.id.datanode_uuid, error = %e, "a replica could not be updated")
            }
        }
    }
    if holders.is_empty() {
        return Err(RecoveryError::NoneUpdated);
    }
    link.commit_block_sync(&commit(plan.len, false, holders))
        .await
        .map_err(RecoveryError::Commit)?;
    Ok(plan.len)
}

/// Runs a dataset call off the async workers: recovery renames, cuts and syncs files.
async fn on_disk<T: Send + 'static>(
    ds: &Arc<Dataset>,
    f: impl FnOnce(&Dataset) -> Result<T, RecoveryError> + Send + 'static,
) -> Result<T, RecoveryError> {
    ds.off_thread(f).await?
}

/// updateReplicaUnderRecovery on this node's own replica (cut, or copied into block
/// `copy_to`): the storage now holding the result. The NameNode hears of the recovered
/// replica at once, as HDFS's DataNodes tell it: a report of the replica's old stamp that
/// crossed the recovery makes the NameNode drop this node as a location, and only this
/// report (or the next full one, hours away) gives it back.
pub(crate) async fn update_local(
    ds: Arc<Dataset>,
    link: &NnLink,
    id: u64,
    recovery_id: u64,
    copy_to: Option<u64>,
    len: u64,
) -> Result<String, RecoveryError> {
    let (storage, r) = on_disk(&ds, move |ds| {
        let r = match copy_to {
            Some(new_id) => ds.copy_recovered(id, recovery_id, new_id, len),
            None => ds.update_recovered(id, recovery_id, len),
        }?;
        Ok((ds.volumes[r.volume].storage_uuid.clone(), r))
    })
    .await?;
    // Not waited for: the primary's commitBlockSynchronization names this node anyway.
    drop(link.report_block(&storage, r.id, r.gs, r.len, BlockStatus::Received));
    Ok(storage)
}

/// initReplicaRecovery on this node's own replica, answered as the protocol answers it.
pub(crate) async fn init_local(
    ds: Arc<Dataset>,
    rb: RecoveringBlockProto,
) -> Result<InitReplicaRecoveryResponseProto, RecoveryError> {
    on_disk(&ds, move |ds| init_answer(ds, &rb)).await
}

async fn call<Req: prost::Message, Resp: prost::Message + Default>(
    loc: &DatanodeInfoProto,
    link: &NnLink,
    method: &str,
    req: &Req,
) -> Result<Resp, RecoveryError> {
    // By host name with `dfs.datanode.use.datanode.hostname`, as for pipelines.
    let addr = link.peer_ipc_addr(&loc.id);
    let attempt = async {
        let user = link.user();
        let c = IpcClient::dial(link.dialer(), &addr, &user, INTER_DATANODE_PROTOCOL).await?;
        c.call::<Req, Resp>(method, req).await
    };
    match tokio::time::timeout(PEER_TIMEOUT, attempt).await {
        Ok(r) => r.map_err(|e: ClientError| RecoveryError::Peer { addr, source: e }),
        Err(_) => Err(RecoveryError::Timeout {
            addr,
            method: method.to_string(),
        }),
    }
}

async fn init_remote(
    loc: &DatanodeInfoProto,
    link: &NnLink,
    rb: &RecoveringBlockProto,
) -> Result<Option<ReplicaInfo>, RecoveryError> {
    let req = InitReplicaRecoveryRequestProto { block: rb.clone() };
    let resp: InitReplicaRecoveryResponseProto =
        call(loc, link, "initReplicaRecovery", &req).await?;
    if !resp.replica_found {
        return Ok(None);
    }
    let b = resp.block.ok_or(RecoveryError::NoBlock {
        addr: link.peer_ipc_addr(&loc.id),
    })?;
    // RUR and TEMPORARY are not answered by initReplicaRecovery; anything unknown is
    // ranked last.
    let state = match resp.state.map(ReplicaStateProto::try_from) {
        Some(Ok(ReplicaStateProto::Finalized)) => RecoveryState::Finalized,
        Some(Ok(ReplicaStateProto::Rbw)) => RecoveryState::Rbw,
        _ => RecoveryState::Rwr,
    };
    Ok(Some(ReplicaInfo {
        state,
        gs: b.gen_stamp,
        len: b.num_bytes.unwrap_or(0),
    }))
}

async fn update_remote(
    loc: &DatanodeInfoProto,
    link: &NnLink,
    block: &ExtendedBlockProto,
    recovery_id: u64,
    copy_to: Option<u64>,
    len: u64,
) -> Result<String, RecoveryError> {
    let req = UpdateReplicaUnderRecoveryRequestProto {
        block: block.clone(),
        recovery_id,
        new_length: len,
        // 0: cut in place (HDFS's DataNodes copy only for an id other than the block's).
        new_block_id: Some(copy_to.unwrap_or(0)),
    };
    let resp: UpdateReplicaUnderRecoveryResponseProto =
        call(loc, link, "updateReplicaUnderRecovery", &req).await?;
    Ok(resp.storage_uuid.unwrap_or_default())
}

/// initReplicaRecovery, answered from this node's dataset.
fn init_answer(
    ds: &Dataset,
    rb: &RecoveringBlockProto,
) -> Result<InitReplicaRecoveryResponseProto, RecoveryError> {
    let b = &rb.block.b;
    let found = ds.init_recovery(b.block_id, b.generation_stamp, rb.new_gen_stamp)?;
    Ok(match found {
        None => InitReplicaRecoveryResponseProto {
            replica_found: false,
            state: None,
            block: None,
        },
        Some(r) => InitReplicaRecoveryResponseProto {
            replica_found: true,
            state: Some(match r.state {
                RecoveryState::Finalized => ReplicaStateProto::Finalized,
                RecoveryState::Rbw => ReplicaStateProto::Rbw,
                RecoveryState::Rwr => ReplicaStateProto::Rwr,
            } as i32),
            block: Some(BlockProto {
                block_id: b.block_id,
                gen_stamp: r.gs,
                num_bytes: Some(r.len),
            }),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(state: RecoveryState, len: u64) -> ReplicaInfo {
        ReplicaInfo {
            state,
            gs: 1001,
            len,
        }
    }

    #[test]
    fn unfinished_replicas_agree_on_the_shortest_and_finalized_ones_win() {
        let rbw = [
            (0, rep(RecoveryState::Rbw, 1500)),
            (1, rep(RecoveryState::Rbw, 1200)),
            (2, rep(RecoveryState::Rbw, 1800)),
        ];
        assert_eq!(
            choose(&rbw, None),
            Some(Plan {
                len: 1200,
                participants: vec![0, 1, 2]
            })
        );
        let mixed = [
            (0, rep(RecoveryState::Rbw, 900)),
            (1, rep(RecoveryState::Finalized, 1200)),
            (2, rep(RecoveryState::Rbw, 1200)),
        ];
        assert_eq!(
            choose(&mixed, None),
            Some(Plan {
                len: 1200,
                participants: vec![1, 2]
            })
        );
        assert_eq!(choose(&rbw, Some(100)).map(|p| p.len), Some(100));
        assert_eq!(
            choose(&rbw, Some(5000)).map(|p| p.len),
            Some(1200),
            "truncate cannot grow"
        );
        assert_eq!(choose(&[], None), None);
    }

    #[test]
    fn replicas_left_unfinished_by_a_restart_count_only_when_nothing_better_is_left() {
        // A power cut took the last 54 acknowledged bytes from replica 0.
        let cut = [
            (0, rep(RecoveryState::Rwr, 313)),
            (1, rep(RecoveryState::Rbw, 367)),
            (2, rep(RecoveryState::Rbw, 400)),
        ];
        assert_eq!(
            choose(&cut, None),
            Some(Plan {
                len: 367,
                participants: vec![1, 2]
            })
        );
        let finalized = [
            (0, rep(RecoveryState::Rwr, 1200)),
            (1, rep(RecoveryState::Finalized, 1200)),
        ];
        assert_eq!(choose(&finalized, None).unwrap().participants, vec![1]);
        // An append whose pipeline failed half set up: two replicas reopened under the new
        // stamp, two still finalized under the old one, one of them cut short by a power
        // cut. The new stamp's replicas hold every byte.
        let old = |state, len| ReplicaInfo {
            gs: 1000,
            ..rep(state, len)
        };
        let append = [
            (0, rep(RecoveryState::Rbw, 8038)),
            (1, old(RecoveryState::Finalized, 512)),
            (2, old(RecoveryState::Finalized, 8038)),
            (3, rep(RecoveryState::Rbw, 8100)),
        ];
        assert_eq!(
            choose(&append, None),
            Some(Plan {
                len: 8038,
                participants: vec![0, 3]
            })
        );
        // Finalized replicas that disagree under one stamp: the longest is the block.
        let disagree = [
            (0, rep(RecoveryState::Finalized, 512)),
            (1, rep(RecoveryState::Finalized, 8038)),
        ];
        assert_eq!(choose(&disagree, None).unwrap().len, 8038);
        let emptied = [
            (0, rep(RecoveryState::Rwr, 0)),
            (1, rep(RecoveryState::Rwr, 115)),
        ];
        assert_eq!(
            choose(&emptied, None),
            Some(Plan {
                len: 115,
                participants: vec![1]
            }),
            "a replica a power cut emptied takes no part"
        );
        assert_eq!(choose(&emptied[..1], None), None);
        // Both restarted, one cut shorter by its power cut: the longer one holds the
        // bytes an hflush acknowledged.
        let all_restarted = [
            (0, rep(RecoveryState::Rwr, 3072)),
            (1, rep(RecoveryState::Rwr, 1777)),
            (2, rep(RecoveryState::Rwr, 3072)),
        ];
        assert_eq!(
            choose(&all_restarted, None),
            Some(Plan {
                len: 3072,
                participants: vec![0, 2]
            })
        );
    }
}
