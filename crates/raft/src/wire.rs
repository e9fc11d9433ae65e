//! openraft's types to and from `FerriteRaft.proto`'s messages: the frames between
//! NameNodes and the records of the log on disk share them. A message that lacks a field
//! openraft cannot do without (a vote without its leader) is refused, never defaulted.

use std::collections::{BTreeMap, BTreeSet};

use ferrite_proto::ferrite::raft as pb;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{
    BasicNode, CommittedLeaderId, Entry, EntryPayload, LeaderId, LogId, Membership, SnapshotMeta,
    StoredMembership, Vote,
};

use crate::{Batch, NodeId, TypeConfig};

/// A message from another NameNode (or a log record) that cannot stand for what it claims.
#[derive(Debug, thiserror::Error)]
#[error("malformed Raft message: {0} is missing")]
pub struct Malformed(pub &'static str);

type Result<T> = std::result::Result<T, Malformed>;

fn need<T>(v: Option<T>, what: &'static str) -> Result<T> {
    v.ok_or(Malformed(what))
}

fn leader_to(l: &LeaderId<NodeId>) -> pb::LeaderIdProto {
    pb::LeaderIdProto {
        term: l.term,
        voted_for: l.voted_for,
    }
}

fn leader_from(l: pb::LeaderIdProto) -> LeaderId<NodeId> {
    LeaderId {
        term: l.term,
        voted_for: l.voted_for,
    }
}

pub(crate) fn vote_to(v: &Vote<NodeId>) -> pb::VoteProto {
    pb::VoteProto {
        leader: Some(leader_to(&v.leader_id)),
        committed: v.committed,
    }
}

pub(crate) fn vote_from(v: Option<pb::VoteProto>) -> Result<Vote<NodeId>> {
    let v = need(v, "vote")?;
    let leader = leader_from(need(v.leader, "vote's leader")?);
    Ok(Vote {
        leader_id: leader,
        committed: v.committed,
    })
}

pub(crate) fn log_id_to(id: &LogId<NodeId>) -> pb::LogIdProto {
    pb::LogIdProto {
        term: id.leader_id.term,
        index: id.index,
    }
}

/// An absent log id is "none": the log before its first entry.
pub(crate) fn log_id_from(id: Option<pb::LogIdProto>) -> Result<Option<LogId<NodeId>>> {
    Ok(id.map(|id| LogId::new(CommittedLeaderId::new(id.term, 0), id.index)))
}

fn opt_log_id_to(id: &Option<LogId<NodeId>>) -> Option<pb::LogIdProto> {
    id.as_ref().map(log_id_to)
}

fn membership_to(m: &Membership<NodeId, BasicNode>) -> pb::MembershipProto {
    pb::MembershipProto {
        configs: m
            .get_joint_config()
            .iter()
            .map(|c| pb::VoterSetProto {
                voters: c.iter().copied().collect(),
            })
            .collect(),
        nodes: m
            .nodes()
            .map(|(id, n)| pb::NodeProto {
                id: *id,
                addr: n.addr.clone(),
            })
            .collect(),
    }
}

fn membership_from(m: pb::MembershipProto) -> Membership<NodeId, BasicNode> {
    let configs: Vec<BTreeSet<NodeId>> = m
        .configs
        .into_iter()
        .map(|c| c.voters.into_iter().collect())
        .collect();
    let nodes: BTreeMap<NodeId, BasicNode> = m
        .nodes
        .into_iter()
        .map(|n| (n.id, BasicNode { addr: n.addr }))
        .collect();
    Membership::new(configs, nodes)
}

pub(crate) fn entry_to(e: &Entry<TypeConfig>) -> pb::EntryProto {
    use pb::entry_proto::Payload;
    let payload = match &e.payload {
        EntryPayload::Blank => Payload::Blank(pb::EmptyProto {}),
        EntryPayload::Normal(b) => Payload::Normal(b.0.clone()),
        EntryPayload::Membership(m) => Payload::Membership(membership_to(m)),
    };
    pb::EntryProto {
        log_id: Some(log_id_to(&e.log_id)),
        payload: Some(payload),
    }
}

pub(crate) fn entry_from(e: pb::EntryProto) -> Result<Entry<TypeConfig>> {
    use pb::entry_proto::Payload;
    let log_id = need(log_id_from(e.log_id)?, "entry's log id")?;
    let payload = match need(e.payload, "entry's payload")? {
        Payload::Blank(_) => EntryPayload::Blank,
        Payload::Normal(b) => EntryPayload::Normal(Batch(b)),
        Payload::Membership(m) => EntryPayload::Membership(membership_from(m)),
    };
    Ok(Entry { log_id, payload })
}

pub(crate) fn vote_request_to(r: &VoteRequest<NodeId>) -> pb::VoteRequestProto {
    pb::VoteRequestProto {
        vote: Some(vote_to(&r.vote)),
        last_log_id: opt_log_id_to(&r.last_log_id),
    }
}

pub(crate) fn vote_request_from(r: pb::VoteRequestProto) -> Result<VoteRequest<NodeId>> {
    Ok(VoteRequest {
        vote: vote_from(r.vote)?,
        last_log_id: log_id_from(r.last_log_id)?,
    })
}

pub(crate) fn vote_response_to(r: &VoteResponse<NodeId>) -> pb::VoteResponseProto {
    pb::VoteResponseProto {
        vote: Some(vote_to(&r.vote)),
        granted: r.vote_granted,
        last_log_id: opt_log_id_to(&r.last_log_id),
    }
}

pub(crate) fn vote_response_from(r: pb::VoteResponseProto) -> Result<VoteResponse<NodeId>> {
    Ok(VoteResponse {
        vote: vote_from(r.vote)?,
        vote_granted: r.granted,
        last_log_id: log_id_from(r.last_log_id)?,
    })
}

pub(crate) fn append_to(r: &AppendEntriesRequest<TypeConfig>) -> pb::AppendEntriesRequestProto {
    pb::AppendEntriesRequestProto {
        vote: Some(vote_to(&r.vote)),
        prev_log_id: opt_log_id_to(&r.prev_log_id),
        entries: r.entries.iter().map(entry_to).collect(),
        leader_commit: opt_log_id_to(&r.leader_commit),
    }
}

pub(crate) fn append_from(
    r: pb::AppendEntriesRequestProto,
) -> Result<AppendEntriesRequest<TypeConfig>> {
    Ok(AppendEntriesRequest {
        vote: vote_from(r.vote)?,
        prev_log_id: log_id_from(r.prev_log_id)?,
        entries: r
            .entries
            .into_iter()
            .map(entry_from)
            .collect::<Result<_>>()?,
        leader_commit: log_id_from(r.leader_commit)?,
    })
}

pub(crate) fn append_response_to(
    r: &AppendEntriesResponse<NodeId>,
) -> pb::AppendEntriesResponseProto {
    use pb::append_entries_response_proto::Result as R;
    let result = match r {
        AppendEntriesResponse::Success => R::Success(pb::EmptyProto {}),
        AppendEntriesResponse::PartialSuccess(m) => R::Partial(pb::PartialSuccessProto {
            matching: opt_log_id_to(m),
        }),
        AppendEntriesResponse::Conflict => R::Conflict(pb::EmptyProto {}),
        AppendEntriesResponse::HigherVote(v) => R::HigherVote(vote_to(v)),
    };
    pb::AppendEntriesResponseProto {
        result: Some(result),
    }
}

pub(crate) fn append_response_from(
    r: pb::AppendEntriesResponseProto,
) -> Result<AppendEntriesResponse<NodeId>> {
    use pb::append_entries_response_proto::Result as R;
    Ok(match need(r.result, "append's result")? {
        R::Success(_) => AppendEntriesResponse::Success,
        R::Partial(p) => AppendEntriesResponse::PartialSuccess(log_id_from(p.matching)?),
        R::Conflict(_) => AppendEntriesResponse::Conflict,
        R::HigherVote(v) => AppendEntriesResponse::HigherVote(vote_from(Some(v))?),
    })
}

pub(crate) fn snapshot_meta_to(m: &SnapshotMeta<NodeId, BasicNode>) -> pb::SnapshotMetaProto {
    pb::SnapshotMetaProto {
        last_log_id: opt_log_id_to(&m.last_log_id),
        membership_log_id: opt_log_id_to(m.last_membership.log_id()),
        membership: Some(membership_to(m.last_membership.membership())),
        snapshot_id: m.snapshot_id.clone(),
    }
}

pub(crate) fn snapshot_meta_from(
    m: pb::SnapshotMetaProto,
) -> Result<SnapshotMeta<NodeId, BasicNode>> {
    let membership = membership_from(need(m.membership, "snapshot's membership")?);
    Ok(SnapshotMeta {
        last_log_id: log_id_from(m.last_log_id)?,
        last_membership: StoredMembership::new(log_id_from(m.membership_log_id)?, membership),
        snapshot_id: m.snapshot_id,
    })
}

pub(crate) fn install_to(
    r: &InstallSnapshotRequest<TypeConfig>,
) -> pb::InstallSnapshotRequestProto {
    pb::InstallSnapshotRequestProto {
        vote: Some(vote_to(&r.vote)),
        meta: Some(snapshot_meta_to(&r.meta)),
        offset: r.offset,
        data: r.data.clone(),
        done: r.done,
    }
}

pub(crate) fn install_from(
    r: pb::InstallSnapshotRequestProto,
) -> Result<InstallSnapshotRequest<TypeConfig>> {
    Ok(InstallSnapshotRequest {
        vote: vote_from(r.vote)?,
        meta: snapshot_meta_from(need(r.meta, "snapshot's meta")?)?,
        offset: r.offset,
        data: r.data,
        done: r.done,
    })
}

pub(crate) fn install_response_to(
    r: &InstallSnapshotResponse<NodeId>,
) -> pb::InstallSnapshotResponseProto {
    pb::InstallSnapshotResponseProto {
        vote: Some(vote_to(&r.vote)),
    }
}

pub(crate) fn install_response_from(
    r: pb::InstallSnapshotResponseProto,
) -> Result<InstallSnapshotResponse<NodeId>> {
    Ok(InstallSnapshotResponse {
        vote: vote_from(r.vote)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn lid(term: u64, node: u64, index: u64) -> LogId<NodeId> {
        LogId::new(CommittedLeaderId::new(term, node), index)
    }

    #[test]
    fn every_entry_kind_survives_the_round_trip() {
        let nodes: BTreeMap<NodeId, BasicNode> = (1..=3)
            .map(|i| (i, BasicNode::new(format!("10.0.0.{i}:8020"))))
            .collect();
        let joint = vec![BTreeSet::from([1, 2]), BTreeSet::from([1, 2, 3])];
        let entries = [
            Entry {
                log_id: lid(1, 1, 1),
                payload: EntryPayload::Blank,
            },
            Entry {
                log_id: lid(2, 3, 7),
                payload: EntryPayload::Normal(Batch(Bytes::from_static(b"records"))),
            },
            Entry {
                log_id: lid(3, 2, 9),
                payload: EntryPayload::Membership(Membership::new(joint, nodes)),
            },
        ];
        for e in entries {
            let back = entry_from(entry_to(&e)).unwrap();
            assert_eq!(back.log_id, e.log_id);
            assert_eq!(format!("{:?}", back.payload), format!("{:?}", e.payload));
        }
    }

    #[test]
    fn calls_and_answers_survive_the_round_trip() {
        let vote = Vote::new_committed(4, 2);
        let req = AppendEntriesRequest::<TypeConfig> {
            vote,
            prev_log_id: Some(lid(3, 1, 10)),
            entries: vec![],
            leader_commit: None,
        };
        let back = append_from(append_to(&req)).unwrap();
        assert_eq!(back.vote, vote);
        assert_eq!(back.prev_log_id, req.prev_log_id);
        assert_eq!(back.leader_commit, None);
        for r in [
            AppendEntriesResponse::Success,
            AppendEntriesResponse::PartialSuccess(Some(lid(1, 1, 3))),
            AppendEntriesResponse::Conflict,
            AppendEntriesResponse::HigherVote(Vote::new(9, 3)),
        ] {
            assert_eq!(append_response_from(append_response_to(&r)).unwrap(), r);
        }
        let v = VoteResponse {
            vote: Vote::new(5, 1),
            vote_granted: true,
            last_log_id: None,
        };
        assert_eq!(vote_response_from(vote_response_to(&v)).unwrap(), v);
    }

    #[test]
    fn a_vote_without_its_leader_is_refused() {
        let bad = pb::VoteRequestProto {
            vote: Some(pb::VoteProto {
                leader: None,
                committed: true,
            }),
            last_log_id: None,
        };
        assert!(vote_request_from(bad).is_err());
        assert!(vote_request_from(pb::VoteRequestProto::default()).is_err());
    }
}
