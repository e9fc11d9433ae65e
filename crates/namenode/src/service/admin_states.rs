//! Decommission and maintenance: the hosts files (see `crate::hosts`) applied to the
//! DataNodes — at registration, on `refreshNodes`, and when a maintenance window ends. The
//! replication scan (`BlockManager::check_replication`) does the copying and tells when a
//! leaving node is no longer needed.

use tracing::{info, warn};

use super::{Admitted, NameNodeService, Operation};
use crate::blocks::registry::{AdminState, Liveness, NodeId, NodeIx};
use crate::blocks::BlockManager;
use crate::clock::now_ms;
use crate::error::FsError;
use crate::hosts::{HostRules, HostsConfig, NodeAddr, Wanted};

/// Reads and parses the configured hosts files.
pub(super) fn read_host_rules(cfg: &HostsConfig) -> Result<HostRules, String> {
    let read = |p: &Option<std::path::PathBuf>| -> Result<Option<String>, String> {
        p.as_ref()
            .map(|p| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display())))
            .transpose()
    };
    HostRules::parse(
        cfg,
        read(&cfg.include)?.as_deref(),
        read(&cfg.exclude)?.as_deref(),
    )
}

fn addr(id: &NodeId) -> NodeAddr<'_> {
    NodeAddr {
        ip: &id.ip,
        host: &id.host,
        xfer_port: id.xfer_port,
    }
}

/// The state a node in state `now_state` moves to when the files ask `wanted` at `now`.
fn next_state(now_state: AdminState, wanted: Wanted, now: i64) -> AdminState {
    match wanted {
        Wanted::InService | Wanted::Disallowed => AdminState::Normal,
        Wanted::Decommissioned if now_state.decommission() => now_state,
        Wanted::Decommissioned => AdminState::Decommissioning,
        Wanted::Maintenance { until_ms } if until_ms <= now => AdminState::Normal,
        Wanted::Maintenance { until_ms } => match now_state {
            AdminState::InMaintenance { .. } => AdminState::InMaintenance { until_ms },
            _ => AdminState::EnteringMaintenance { until_ms },
        },
    }
}

impl NameNodeService {
    /// `refreshNodes`: reads the hosts files again and moves every registered node to
    /// what they ask: decommission or maintenance started, a node listed again brought
    /// back into service (its surplus replicas trimmed by the next scan), a node no longer
    /// on the include list dropped (it is refused when it registers again).
    pub fn refresh_nodes(&self, who: &Admitted) -> Result<(), FsError> {
        who.check(Operation::RefreshNodes);
        let rules = read_host_rules(&self.cfg.hosts).map_err(FsError::Io)?;
        let now = now_ms();
        let mut mgr = self.blocks.lock();
        let nodes: Vec<NodeIx> = mgr.reg.iter().map(|(ix, _)| ix).collect();
        for ix in nodes {
            let wanted = rules.wanted(&addr(&mgr.reg.get(ix).id));
            if wanted == Wanted::Disallowed {
                let n = mgr.reg.get_mut(ix);
                if !n.dead {
                    warn!(node = %n.id.xfer_addr(), "DataNode no longer on the include list: dropped");
                    // Dead at the monitor's next check; refused when it registers again.
                    n.last_heartbeat_ms = i64::MIN / 2;
                }
                continue;
            }
            set_admin(&mut mgr, ix, wanted, now);
        }
        mgr.needs_scan = true;
        *self.host_rules.write() = rules;
        Ok(())
    }

    /// What the hosts files ask of a node registering as `id`: refused if they do not
    /// let it in (HDFS's `DisallowedDatanodeException`).
    pub(super) fn hosts_admit(&self, id: &NodeId) -> Result<Wanted, FsError> {
        let wanted = self.host_rules.read().wanted(&addr(id));
        if wanted == Wanted::Disallowed {
            return Err(FsError::DisallowedDatanode(format!(
                "Datanode denied communication with namenode because the host is not in the include-list: DatanodeRegistration({}, datanodeUuid={}, infoPort={}, ipcPort={})",
                id.xfer_addr(),
                id.uuid,
                id.info_port,
                id.ipc_port
            )));
        }
        Ok(wanted)
    }

    /// Brings nodes whose maintenance window has ended back into service; one that is
    /// gone by then counts as dead from now on, and its blocks are copied. The DataNode
    /// monitor's step.
    pub(super) fn end_expired_maintenance(&self, mgr: &mut BlockManager, now: i64) {
        let dead_ms = self.cfg.dead_interval_ms();
        let expired: Vec<NodeIx> = mgr
            .reg
            .iter()
            .filter(|(_, n)| n.admin.maintenance_until().is_some_and(|t| t <= now))
            .map(|(ix, _)| ix)
            .collect();
        for ix in expired {
            let n = mgr.reg.get_mut(ix);
            n.admin = AdminState::Normal;
            let gone = n.dead || n.liveness(now, u64::MAX, dead_ms) == Liveness::Dead;
            info!(node = %n.id.xfer_addr(), gone, "maintenance window over: back in service");
            if gone {
                n.dead = true;
                mgr.node_lost(ix);
            }
            mgr.needs_scan = true;
        }
    }
}

/// Moves node `ix` to what `wanted` asks, logging a change.
pub(super) fn set_admin(mgr: &mut BlockManager, ix: NodeIx, wanted: Wanted, now: i64) {
    let n = mgr.reg.get_mut(ix);
    let next = next_state(n.admin, wanted, now);
    if next != n.admin {
        info!(node = %n.id.xfer_addr(), from = ?n.admin, to = ?next, "DataNode admin state");
        n.admin = next;
        mgr.needs_scan = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_move_as_hdfs_moves_them() {
        use AdminState::*;
        let m = |until_ms| Wanted::Maintenance { until_ms };
        assert_eq!(
            next_state(Normal, Wanted::Decommissioned, 0),
            Decommissioning
        );
        assert_eq!(
            next_state(Decommissioned, Wanted::Decommissioned, 0),
            Decommissioned
        );
        assert_eq!(next_state(Decommissioned, Wanted::InService, 0), Normal);
        assert_eq!(
            next_state(Normal, m(10), 0),
            EnteringMaintenance { until_ms: 10 }
        );
        assert_eq!(
            next_state(InMaintenance { until_ms: 10 }, m(20), 0),
            InMaintenance { until_ms: 20 },
            "a longer window, without entering again"
        );
        assert_eq!(
            next_state(Normal, m(10), 10),
            Normal,
            "a window already over"
        );
        assert_eq!(
            next_state(Decommissioning, m(10), 0),
            EnteringMaintenance { until_ms: 10 }
        );
    }
}
