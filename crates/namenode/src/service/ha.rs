//! Active or standby: a lone NameNode is always active; in an HA group the Raft leader is,
//! and the others follow its log. A standby refuses clients as HDFS's does — with
//! `StandbyException`, which Hadoop's failover proxy takes as "try the next NameNode" —
//! and still serves the DataNodes (they report to every NameNode, so a new active's block
//! map is warm) and the HA protocol itself.

use std::sync::atomic::{AtomicU8, Ordering};

use super::admission::Operation;
use super::NameNodeService;

/// HDFS's `HAServiceState`, as far as a NameNode can be in one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HaState {
    Active,
    Standby,
}

impl HaState {
    /// The word HDFS's messages and `hdfs haadmin` use.
    pub fn word(self) -> &'static str {
        match self {
            HaState::Active => "active",
            HaState::Standby => "standby",
        }
    }
}

/// The state, switchable while the NameNode serves.
#[derive(Debug, Default)]
pub(crate) struct HaCell(AtomicU8);

const ACTIVE: u8 = 0;
const STANDBY: u8 = 1;

impl HaCell {
    fn get(&self) -> HaState {
        match self.0.load(Ordering::SeqCst) {
            ACTIVE => HaState::Active,
            _ => HaState::Standby,
        }
    }

    fn set(&self, s: HaState) {
        let v = match s {
            HaState::Active => ACTIVE,
            HaState::Standby => STANDBY,
        };
        self.0.store(v, Ordering::SeqCst);
    }
}

impl Operation {
    /// Whether a standby serves it: the DataNodes' calls, the HA state, Ferrite's own
    /// statistics. Every client operation waits for the active, as on HDFS.
    pub fn served_by_standby(self) -> bool {
        matches!(
            self,
            Operation::VersionRequest
                | Operation::RegisterDatanode
                | Operation::SendHeartbeat
                | Operation::BlockReport
                | Operation::BlockReceivedAndDeleted
                | Operation::ErrorReport
                | Operation::GetHAServiceState
                | Operation::GetNameNodeStats
        )
    }
}

impl NameNodeService {
    /// Whether this NameNode is active or standby now.
    pub fn ha_state(&self) -> HaState {
        self.ha.get()
    }

    /// Becomes active or standby (the HA group's leadership decides).
    pub fn set_ha_state(&self, s: HaState) {
        self.ha.set(s);
    }
}
