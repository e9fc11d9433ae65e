//! Starting a NameNode of an HA group: standby, with its namespace filled from the group's
//! Raft log (a snapshot, then the committed entries), until its Raft node leads.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrite_ipc::net::{Dial, Listen};
use ferrite_raft::{FileDisk, LeaderContact, LogDisk, Raft};
use openraft::BasicNode;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::clock::now_ms;
use crate::config::Config;
use crate::ha_config::{HaGroup, HaNode};
use crate::ha_control::{HaControl, HandOverRequests, Liveness};
use crate::identity::Identity;
use crate::journal::replicated::{HaJournal, Progress, RecordApplier};
use crate::server::{current_user, ensure_dir, NameNode, NameNodeHandle};
use crate::service::ha::{drive, Replicated};
use crate::service::NameNodeService;

/// The group's one identity. HDFS formats one NameNode and copies its VERSION to the
/// others (`-bootstrapStandby`); here every member derives the same cluster and block
/// pool from the nameservice's name, so no copy is needed.
fn group_identity(nameservice: &str) -> Identity {
    let seed = nameservice.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let mut id = Identity::generate(seed, 0);
    id.cluster_id = format!("CID-{nameservice}");
    id.block_pool_id = format!("BP-{}-{nameservice}-0", id.namespace_id);
    id
}

/// The Raft side of a running HA NameNode, stopped with it.
pub(crate) struct HaParts {
    pub(crate) raft: Raft,
    pub(crate) stop: CancellationToken,
}

/// What an HA NameNode runs on besides its configuration: its client and Raft
/// listeners, its Raft log, how it reaches the other members, and its superuser. A
/// process gets TCP, a file and its user ([`NameNode::start_ha`]); the simulator, its
/// own network and a memory disk.
pub struct HaHost<L, R> {
    pub listener: L,
    pub raft_listener: R,
    pub disk: Box<dyn LogDisk>,
    pub dial: Arc<dyn Dial>,
    pub superuser: String,
}

impl NameNode {
    /// Starts NameNode `me` of `group`, serving clients on `listener` (as a standby until
    /// it leads) and Raft's calls on `raft_listener`; its Raft log lives in the first name
    /// directory's `raft/`.
    pub async fn start_ha(
        cfg: Config,
        group: &HaGroup,
        me: &HaNode,
        listener: TcpListener,
        raft_listener: TcpListener,
    ) -> std::io::Result<NameNodeHandle> {
        let dir = cfg
            .name_dirs
            .first()
            .cloned()
            .ok_or_else(|| std::io::Error::other("an HA NameNode needs a name directory"))?;
        ensure_dir(&dir)?;
        let name = ferrite_ipc::hostnames::server_host_name(listener.local_addr()?.ip());
        let superuser = cfg.security.login_user(&name).unwrap_or_else(current_user);
        let host = HaHost {
            listener,
            raft_listener,
            disk: Box::new(FileDisk::open(&dir.join("raft"))?),
            dial: ferrite_ipc::net::tcp(),
            superuser,
        };
        Self::start_ha_on(cfg, group, me, host).await
    }

    /// [`start_ha`](Self::start_ha) on whatever `host` provides.
    pub async fn start_ha_on<L: Listen, R: Listen + Sync>(
        cfg: Config,
        group: &HaGroup,
        me: &HaNode,
        host: HaHost<L, R>,
    ) -> std::io::Result<NameNodeHandle> {
        crate::clock::monotonic_ms(now_ms());
        // The active's lease is an election timeout less two heartbeats (see
        // `HaControl::lease_valid`): it needs a couple of heartbeats' room.
        if cfg.raft_timing.heartbeat * 4 > cfg.raft_timing.election_min {
            return Err(std::io::Error::other(
                "ferrite.ha.raft.election-timeout.ms must be at least four times ferrite.ha.raft.heartbeat.ms",
            ));
        }
        let timing = cfg.raft_timing.clone();
        let cut_file = cfg.raft_cut_file.clone();
        let HaHost {
            listener,
            raft_listener,
            disk,
            dial,
            superuser,
        } = host;
        let progress = Progress::at(0);
        let journal = HaJournal::new(progress.clone());
        let identity = group_identity(&group.nameservice);
        let state = Arc::new(NameNodeService::for_ha(
            cfg,
            &superuser,
            identity,
            journal.clone(),
        ));
        let applier = RecordApplier::new(progress.clone(), Replicated(state.clone()));
        let cut = crate::raft_cut::Cut::default();
        let dial = cut.dial(dial);
        let member = ferrite_raft::start(me.id, &timing, disk, Box::new(applier), dial.clone())
            .await
            .map_err(std::io::Error::other)?;
        let raft = member.raft;
        let raft_addrs = group.nodes.iter().map(|n| (n.id, n.raft.clone())).collect();
        let contact = Arc::new(LeaderContact::default());
        let liveness = Liveness {
            contact: contact.clone(),
            acks: member.acks.clone(),
        };
        let control = Arc::new(HaControl::new(
            raft.clone(),
            me.id,
            raft_addrs,
            dial,
            journal.clone(),
            progress.clone(),
            liveness,
        ));
        state.set_ha_control(control.clone());
        let (fatal, stop) = (CancellationToken::new(), CancellationToken::new());
        let hand_over = HandOverRequests {
            control: control.clone(),
            nn: state.clone(),
        };
        if let Some(file) = cut_file {
            tokio::spawn(cut.clone().follow(file, stop.clone()));
        }
        tokio::spawn(ferrite_raft::serve_with(
            raft.clone(),
            cut.listener(raft_listener),
            Some(Arc::new(hand_over)),
            contact,
            stop.clone(),
        ));
        tokio::spawn(
            control
                .clone()
                .campaign_when_leader_lost(state.clone(), stop.clone()),
        );
        tokio::spawn(drive(
            state.clone(),
            raft.clone(),
            journal,
            progress,
            fatal.clone(),
            stop.clone(),
        ));
        let initialized = raft.is_initialized().await.map_err(std::io::Error::other)?;
        if !initialized && me.id == 1 {
            // The first NameNode listed starts the group; the others join when it calls.
            let members: BTreeMap<u64, BasicNode> = group
                .nodes
                .iter()
                .map(|n| (n.id, BasicNode::new(&n.raft)))
                .collect();
            raft.initialize(members)
                .await
                .map_err(std::io::Error::other)?;
        }
        let mut nn = Self::serve(state, listener, fatal)?;
        nn.ha = Some(HaParts { raft, stop });
        info!(addr = %nn.addr, name = %me.name, nameservice = %group.nameservice, "HA NameNode serving (standby until it leads)");
        Ok(nn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_member_derives_the_same_identity_from_the_nameservice() {
        let a = group_identity("prod");
        assert_eq!(a, group_identity("prod"));
        assert_ne!(a.block_pool_id, group_identity("test").block_pool_id);
        assert_eq!(a.cluster_id, "CID-prod");
    }
}
