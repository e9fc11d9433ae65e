//! HAServiceProtocol's transitions in a Raft group, where leadership is the group's to
//! decide: `transitionToStandby` on the active hands its leadership to the follower
//! furthest along, and `transitionToActive` on a standby asks the leader to hand it over
//! to this node. So `hdfs haadmin -failover nn1 nn2` (standby on nn1, then active on nn2)
//! is a graceful leadership transfer, and nothing an operator types can make two actives.
//!
//! A hand-over: the leader stops taking changes (clients get `StandbyException` and fail
//! over), waits for what it journaled to commit and for the chosen follower to hold all
//! of it, stops its heartbeats, and asks that follower to campaign at once. The follower
//! wins (its log is as long as any) and the old leader follows. If no new leader shows up
//! in time, the old one takes changes again and the call fails with
//! `ServiceFailedException`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrite_ipc::net::Dial;
use ferrite_raft::{Acks, LeaderContact, NodeId, Raft};
use openraft::ServerState;
use tokio_util::sync::CancellationToken;

use crate::error::FsError;
use crate::journal::replicated::{HaJournal, Progress};
use crate::service::ha::HaState;
use crate::service::NameNodeService;

/// How long a hand-over may take before the leader takes changes again.
const HANDOVER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a NameNode asked to become active waits to hear of a leader before standing
/// for election itself (a group without one elects within an election timeout anyway).
const LEADER_WAIT: Duration = Duration::from_secs(3);
/// How often progress is looked at while waiting.
const POLL: Duration = Duration::from_millis(20);
/// How often a held client call looks again.
const HOLD_POLL: Duration = Duration::from_millis(5);

/// One NameNode's Raft state, as `ferrite admin ha-status` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaftStatus {
    pub id: NodeId,
    pub role: &'static str,
    pub term: u64,
    pub leader: Option<NodeId>,
    pub last_log_index: u64,
    pub committed: u64,
    pub applied_txid: u64,
    /// On the leader: each follower's last index known to be on it.
    pub peers: BTreeMap<NodeId, Option<u64>>,
}

/// What this node's Raft traffic says of the others' liveness: as a follower, when the
/// leader was last heard; as the leader, when its followers last acknowledged it.
pub struct Liveness {
    pub contact: Arc<LeaderContact>,
    pub acks: Arc<Acks>,
}

/// When follower `me` stands for election after leader `lost` is gone, in steps of two
/// heartbeats: the followers by id, but a cold one (see
/// [`NameNodeService::cold`]) after every warm one, so that a follower the DataNodes
/// already report to wins while the others are still far from their turn. No two
/// followers share a turn whatever each thinks of itself. None for the lost leader.
fn campaign_turn(
    members: impl Iterator<Item = NodeId>,
    lost: NodeId,
    me: NodeId,
    cold: bool,
) -> Option<usize> {
    let followers: Vec<NodeId> = members.filter(|&id| id != lost).collect();
    let turn = followers.iter().position(|&id| id == me)?;
    Some(if cold { turn + followers.len() } else { turn })
}

/// The HA group as this NameNode's HAServiceProtocol sees it.
pub struct HaControl {
    raft: Raft,
    me: NodeId,
    /// Every member's Raft address, this one's included.
    raft_addrs: BTreeMap<NodeId, String>,
    dial: Arc<dyn Dial>,
    journal: HaJournal,
    progress: Arc<Progress>,
    liveness: Liveness,
}

impl HaControl {
    pub fn new(
        raft: Raft,
        me: NodeId,
        raft_addrs: BTreeMap<NodeId, String>,
        dial: Arc<dyn Dial>,
        journal: HaJournal,
        progress: Arc<Progress>,
        liveness: Liveness,
    ) -> Self {
        HaControl {
            raft,
            me,
            raft_addrs,
            dial,
            journal,
            progress,
            liveness,
        }
    }

    /// Whether this leader may still answer clients from its own state: a majority has
    /// acknowledged an append of its term sent less than its lease ago. The lease is an
    /// election timeout less two heartbeats, and no follower stands for election (on its
    /// timer, or early in [`campaign_when_leader_lost`](Self::campaign_when_leader_lost))
    /// sooner than an election timeout after it last heard from this leader: so a leader
    /// cut off from its group stops answering before another can be elected, and never
    /// answers a read from a state a newer active has moved past.
    pub fn lease_valid(&self) -> bool {
        let (term, voters) = {
            let metrics = self.raft.metrics();
            let m = metrics.borrow();
            let voters = m.membership_config.membership().voter_ids().count();
            (m.current_term, voters)
        };
        let cfg = self.raft.config();
        let lease = cfg
            .election_timeout_min
            .saturating_sub(2 * cfg.heartbeat_interval);
        self.liveness
            .acks
            .quorum_since(term, voters)
            .is_some_and(|since| since.elapsed() < Duration::from_millis(lease))
    }

    /// Whether the group may be about to have a new active: this node leads (and is
    /// about to become active, or is handing over), knows no leader, or the one it knows
    /// has closed its connection (a killed process) or not been heard for three
    /// heartbeats. A client's call to a standby is then worth holding (see
    /// [`await_active`](Self::await_active)) rather than refusing.
    pub fn leader_in_doubt(&self) -> bool {
        let leader = self.raft.metrics().borrow().current_leader;
        let silence = Duration::from_millis(self.raft.config().heartbeat_interval * 3);
        match leader {
            Some(id) if id != self.me => self.liveness.contact.in_doubt(silence),
            _ => true,
        }
    }

    /// Stands for election once the leader's connection has closed (a killed process's
    /// sockets close at once) and the shortest election timeout has passed since it was
    /// last heard, instead of at a time drawn up to twice that. The followers go in turn
    /// (by node id, the lost leader skipped), two heartbeats apart, so they do not split
    /// the vote; each goes only if no leader was heard from meanwhile and it still follows
    /// the lost one (having voted for the first, the next follows nobody). A follower
    /// that is [cold](NameNodeService::cold) (restarted moments ago, no DataNode back
    /// yet) takes its turn after every warm one's, so a warm one, which serves at once,
    /// is elected first. A leader that only reconnected is heard within a heartbeat, and
    /// nothing happens. Never sooner than the timer could: the old leader's lease counts
    /// on it.
    pub async fn campaign_when_leader_lost(
        self: Arc<Self>,
        nn: Arc<NameNodeService>,
        stop: CancellationToken,
    ) {
        let heartbeat = Duration::from_millis(self.raft.config().heartbeat_interval);
        let election = Duration::from_millis(self.raft.config().election_timeout_min);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.liveness.contact.closed() => {}
            }
            let at = tokio::time::Instant::now();
            let Some(lost) = self.raft.metrics().borrow().current_leader else {
                continue;
            };
            let Some(heard) = self.liveness.contact.heard_at() else {
                continue;
            };
            let cold = nn.cold(crate::clock::now_ms());
            let Some(turn) = campaign_turn(self.raft_addrs.keys().copied(), lost, self.me, cold)
            else {
                continue; // this node led
            };
            // Not before an election timeout since the leader was last heard, as on the
            // timer: the leader's lease (see `lease_valid`) rests on that.
            let stagger = heartbeat * 2 * turn as u32;
            let when = (at + heartbeat * 2 + stagger).max(heard + election + stagger);
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep_until(when) => {}
            }
            let following = self.raft.metrics().borrow().current_leader == Some(lost);
            if following && !self.liveness.contact.heard_since(at) {
                tracing::info!(
                    lost,
                    "the leader's connection closed and it is silent; standing for election"
                );
                if let Err(e) = self.raft.trigger().elect().await {
                    tracing::warn!(error = %e, "could not stand for election");
                }
            }
        }
    }

    /// Waits while this node is a standby that has not heard from a live leader since the
    /// call arrived (at most a heartbeat when the leader is well), or an active without a
    /// lease, for at most
    /// three election timeouts: an election with a split vote or two. A group that cannot
    /// elect in that time (no majority) refuses after it.
    pub async fn await_active(&self, nn: &NameNodeService) {
        let arrived = tokio::time::Instant::now();
        let limit = Duration::from_millis(self.raft.config().election_timeout_max * 3);
        let settled = || match nn.ha_state() {
            // A heartbeat since the call arrived: the leader lived after it. (Its
            // connection closing can reach this node just after a client that saw
            // the same process die.)
            HaState::Standby => {
                !self.leader_in_doubt() && self.liveness.contact.heard_since(arrived)
            }
            HaState::Active => self.lease_valid(),
        };
        while !settled() && arrived.elapsed() < limit {
            tokio::time::sleep(HOLD_POLL).await;
        }
    }

    pub fn status(&self) -> RaftStatus {
        let m = self.raft.metrics().borrow().clone();
        let role = match m.state {
            ServerState::Leader => "leader",
            ServerState::Follower => "follower",
            ServerState::Candidate => "candidate",
            ServerState::Learner => "learner",
            ServerState::Shutdown => "shutdown",
        };
        let peers = m
            .replication
            .map(|r| {
                r.into_iter()
                    .filter(|(id, _)| *id != self.me)
                    .map(|(id, l)| (id, l.map(|l| l.index)))
                    .collect()
            })
            .unwrap_or_default();
        RaftStatus {
            id: self.me,
            role,
            term: m.current_term,
            leader: m.current_leader,
            last_log_index: m.last_log_index.unwrap_or(0),
            committed: m.last_applied.map_or(0, |l| l.index),
            applied_txid: self.progress.applied(),
            peers,
        }
    }

    fn leads(&self) -> bool {
        self.raft.metrics().borrow().state == ServerState::Leader
    }

    /// Whether a standby could take over now: it hears a leader (so its log is being kept
    /// up) and has applied what it holds. HAServiceProtocol's `readyToBecomeActive`.
    pub fn not_ready_reason(&self) -> Option<String> {
        let m = self.raft.metrics().borrow().clone();
        match m.current_leader {
            None => Some("it hears no leader of its HA group".into()),
            Some(_) if m.last_applied.map(|l| l.index) < m.last_log_index => Some(format!(
                "it has applied {} of the {} log entries it holds",
                m.last_applied.map_or(0, |l| l.index),
                m.last_log_index.unwrap_or(0)
            )),
            Some(_) => None,
        }
    }

    /// `transitionToStandby`: a standby stays one; the active hands its leadership to the
    /// follower furthest along.
    pub async fn to_standby(&self, nn: &NameNodeService) -> Result<(), FsError> {
        if !self.leads() {
            return Ok(());
        }
        self.hand_over(nn, None).await
    }

    /// `transitionToActive`: the active stays one; a standby asks the leader to hand over
    /// to it (or, with no leader, stands for election), and answers once it is active.
    pub async fn to_active(&self, nn: &NameNodeService) -> Result<(), FsError> {
        if nn.ha_state() == HaState::Active {
            return Ok(());
        }
        let leader = self.known_leader().await;
        let asked =
            match leader {
                Some(l) if l != self.me => {
                    let addr = self.addr(l)?;
                    // The leader gives up after HANDOVER_TIMEOUT: wait a little longer for its word.
                    let ttl = HANDOVER_TIMEOUT + Duration::from_secs(2);
                    ferrite_raft::hand_over(self.dial.as_ref(), addr, self.me, ttl)
                        .await
                        .map_err(|e| {
                            FsError::ServiceFailed(format!(
                                "the active NameNode (node {l}) did not hand over to node {}: {e}",
                                self.me
                            ))
                        })
                }
                _ => self.raft.trigger().elect().await.map_err(|e| {
                    FsError::ServiceFailed(format!("could not stand for election: {e}"))
                }),
            };
        asked?;
        let deadline = Instant::now() + HANDOVER_TIMEOUT;
        while nn.ha_state() != HaState::Active {
            if Instant::now() > deadline {
                return Err(FsError::ServiceFailed(format!(
                    "node {} did not become active within {HANDOVER_TIMEOUT:?}",
                    self.me
                )));
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(())
    }

    /// The leader this node knows of, waiting up to [`LEADER_WAIT`] to hear from one: a
    /// NameNode just started (or restarted on an empty disk) knows none until the leader's
    /// first heartbeat, and standing for election then would only disturb the group.
    async fn known_leader(&self) -> Option<NodeId> {
        let deadline = Instant::now() + LEADER_WAIT;
        loop {
            let leader = self.raft.metrics().borrow().current_leader;
            if leader.is_some() || Instant::now() > deadline {
                return leader;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    fn addr(&self, id: NodeId) -> Result<&str, FsError> {
        self.raft_addrs
            .get(&id)
            .map(String::as_str)
            .ok_or_else(|| FsError::ServiceFailed(format!("node {id} is not in the HA group")))
    }

    /// Hands this leader's leadership to `to`, or to the follower furthest along.
    pub async fn hand_over(&self, nn: &NameNodeService, to: Option<NodeId>) -> Result<(), FsError> {
        if !self.leads() {
            return Err(FsError::ServiceFailed(format!(
                "node {} is not the active NameNode",
                self.me
            )));
        }
        nn.begin_handover().await;
        let out = self.transfer(to).await;
        if out.is_err() {
            self.raft.runtime_config().heartbeat(true);
        }
        nn.end_handover();
        out?;
        // Answer once this node serves as a standby, so that whoever asked never sees two
        // actives: leadership has moved, but the NameNode demotes itself a moment later.
        let deadline = Instant::now() + HANDOVER_TIMEOUT;
        while nn.ha_state() == HaState::Active {
            if Instant::now() > deadline {
                return Err(FsError::ServiceFailed(format!(
                    "node {} handed over leadership but did not turn standby within {HANDOVER_TIMEOUT:?}",
                    self.me
                )));
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(())
    }

    async fn transfer(&self, to: Option<NodeId>) -> Result<(), FsError> {
        let deadline = Instant::now() + HANDOVER_TIMEOUT;
        let late = |what: &str| {
            FsError::ServiceFailed(format!(
                "could not hand over leadership within {HANDOVER_TIMEOUT:?}: {what}"
            ))
        };
        while self.journal.in_flight() {
            if Instant::now() > deadline {
                return Err(late("changes are still being committed"));
            }
            tokio::time::sleep(POLL).await;
        }
        // The successor must hold the whole log, or it could not win the election.
        let target = loop {
            let m = self.raft.metrics().borrow().clone();
            let last = m.last_log_index;
            let caught_up = m
                .replication
                .unwrap_or_default()
                .into_iter()
                .find(|(id, l)| {
                    *id != self.me && to.is_none_or(|t| t == *id) && l.map(|l| l.index) == last
                });
            if let Some((id, _)) = caught_up {
                break id;
            }
            if Instant::now() > deadline {
                return Err(late("no follower holds the whole log"));
            }
            tokio::time::sleep(POLL).await;
        };
        let addr = self.addr(target)?.to_string();
        // Without heartbeats the other followers' leader leases lapse, so they vote for
        // the successor if its first campaign is early.
        self.raft.runtime_config().heartbeat(false);
        while self.leads() {
            if Instant::now() > deadline {
                return Err(late(&format!("node {target} was not elected")));
            }
            let ttl = Duration::from_secs(1);
            if let Err(e) = ferrite_raft::campaign(self.dial.as_ref(), &addr, ttl).await {
                tracing::debug!(target, error = %e, "asking the successor to campaign");
            }
            let wait = Instant::now() + Duration::from_millis(500);
            while self.leads() && Instant::now() < wait {
                tokio::time::sleep(POLL).await;
            }
        }
        // Heartbeats back on for when this node leads again.
        self.raft.runtime_config().heartbeat(true);
        tracing::info!(successor = target, "leadership handed over");
        Ok(())
    }
}

/// Serves the group's hand-over requests (from a standby asked to become active).
pub struct HandOverRequests {
    pub control: Arc<HaControl>,
    pub nn: Arc<NameNodeService>,
}

impl ferrite_raft::HandOver for HandOverRequests {
    fn hand_over(&self, to: NodeId) -> ferrite_raft::HandOverFuture<'_> {
        Box::pin(async move {
            self.control
                .hand_over(&self.nn, Some(to))
                .await
                .map_err(|e| e.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::campaign_turn;

    #[test]
    fn followers_campaign_by_id_with_the_cold_ones_last() {
        let members = || [1, 2, 3].into_iter();
        // nn2 led; nn1 and nn3 both warm: by id.
        assert_eq!(campaign_turn(members(), 2, 1, false), Some(0));
        assert_eq!(campaign_turn(members(), 2, 3, false), Some(1));
        // nn1 restarted moments ago: nn3 goes first, nn1 after it.
        assert_eq!(campaign_turn(members(), 2, 1, true), Some(2));
        assert!(campaign_turn(members(), 2, 3, false) < campaign_turn(members(), 2, 1, true));
        // Both cold: still by id, and apart.
        assert_eq!(campaign_turn(members(), 2, 1, true), Some(2));
        assert_eq!(campaign_turn(members(), 2, 3, true), Some(3));
        // The lost leader has no turn.
        assert_eq!(campaign_turn(members(), 2, 2, false), None);
    }
}
