//! HAServiceProtocol, as `hdfs haadmin` calls it on each NameNode, and Ferrite's view of
//! the group's Raft state (`ferrite admin ha-status`). A lone NameNode answers as HDFS's
//! does without HA: healthy, and every other call refused with "HA for namenode is not
//! enabled". In a group, the transitions move Raft leadership (see `ha_control`).

use ferrite_ipc::{Router, HA_SERVICE_PROTOCOL, NAMENODE_STATS_PROTOCOL};
use ferrite_proto::common::*;
use ferrite_proto::ferrite::{GetRaftStatusRequestProto, RaftPeerProto, RaftStatusProto};

use super::{Nn, Register, Res};
use crate::error::FsError;
use crate::ha_control::HaControl;
use crate::service::ha::HaState;
use crate::service::NameNodeService;
use crate::service::{Admitted, Operation};

pub(super) fn register(r: &mut Router<NameNodeService>) {
    let p = HA_SERVICE_PROTOCOL;
    r.op(p, Operation::MonitorHealth, monitor_health)
        .op(p, Operation::GetServiceStatus, get_service_status)
        .op(p, Operation::TransitionToActive, transition_to_active)
        .op(p, Operation::TransitionToStandby, transition_to_standby)
        .op(p, Operation::TransitionToObserver, transition_to_observer)
        .op(
            NAMENODE_STATS_PROTOCOL,
            Operation::GetRaftStatus,
            get_raft_status,
        );
}

fn control(nn: &NameNodeService) -> Result<&HaControl, FsError> {
    nn.ha_control()
        .map(|c| &**c)
        .ok_or_else(|| FsError::ServiceFailed("HA for namenode is not enabled".into()))
}

async fn monitor_health(
    nn: Nn,
    _: Admitted,
    _: MonitorHealthRequestProto,
) -> Res<MonitorHealthResponseProto> {
    // HDFS's test: the NameNode has the resources it needs (its journal's disk space).
    if nn.ha_control().is_some() && nn.resources_low() {
        return Err(
            FsError::HealthCheckFailed("The NameNode has no resources available".into()).into(),
        );
    }
    Ok(MonitorHealthResponseProto {})
}

async fn get_service_status(
    nn: Nn,
    _: Admitted,
    _: GetServiceStatusRequestProto,
) -> Res<GetServiceStatusResponseProto> {
    let c = control(&nn)?;
    let (state, reason) = match nn.ha_state() {
        HaState::Active => (HaServiceStateProto::Active, None),
        HaState::Standby => (HaServiceStateProto::Standby, c.not_ready_reason()),
    };
    Ok(GetServiceStatusResponseProto {
        state: state as i32,
        ready_to_become_active: Some(reason.is_none()),
        not_ready_reason: reason,
    })
}

async fn transition_to_active(
    nn: Nn,
    _: Admitted,
    _: TransitionToActiveRequestProto,
) -> Res<TransitionToActiveResponseProto> {
    control(&nn)?.to_active(&nn).await?;
    Ok(TransitionToActiveResponseProto {})
}

async fn transition_to_standby(
    nn: Nn,
    _: Admitted,
    _: TransitionToStandbyRequestProto,
) -> Res<TransitionToStandbyResponseProto> {
    control(&nn)?.to_standby(&nn).await?;
    Ok(TransitionToStandbyResponseProto {})
}

async fn transition_to_observer(
    nn: Nn,
    _: Admitted,
    _: TransitionToObserverRequestProto,
) -> Res<TransitionToObserverResponseProto> {
    control(&nn)?;
    Err(FsError::ServiceFailed(
        "Ferrite's NameNodes are active or standby: every standby is a voting member of the \
         group's Raft log, and none serves as an observer"
            .into(),
    )
    .into())
}

async fn get_raft_status(
    nn: Nn,
    _: Admitted,
    _: GetRaftStatusRequestProto,
) -> Res<RaftStatusProto> {
    let s = control(&nn)?.status();
    Ok(RaftStatusProto {
        id: s.id,
        role: s.role.into(),
        term: s.term,
        leader: s.leader,
        last_log_index: s.last_log_index,
        committed: s.committed,
        applied_txid: s.applied_txid,
        peers: s
            .peers
            .into_iter()
            .map(|(id, matched)| RaftPeerProto { id, matched })
            .collect(),
        ha_state: nn.ha_state().word().into(),
    })
}
