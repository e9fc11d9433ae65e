//! `ferrite admin ha-status`: every NameNode of an HA nameservice, as its Raft node sees
//! itself, in one table — who leads, in which term, and how far each trails the leader.

use std::net::SocketAddr;

use ferrite_ipc::client::IpcClient;
use ferrite_ipc::NAMENODE_STATS_PROTOCOL;
use ferrite_proto::ferrite::{GetRaftStatusRequestProto, RaftStatusProto};

use crate::admin::user;

async fn status(addr: SocketAddr) -> anyhow::Result<RaftStatusProto> {
    let c = IpcClient::connect(addr, &user(), NAMENODE_STATS_PROTOCOL).await?;
    Ok(c.call("getRaftStatus", &GetRaftStatusRequestProto {})
        .await?)
}

/// The table's rows: each NameNode's answer, its lag behind the leader's log where a
/// leader answered (the leader's last index less what this node has applied).
fn rows(answers: &[(SocketAddr, anyhow::Result<RaftStatusProto>)]) -> Vec<String> {
    let leader_last = answers.iter().find_map(|(_, s)| {
        s.as_ref()
            .ok()
            .filter(|s| s.role == "leader")
            .map(|s| s.last_log_index)
    });
    let mut out = vec![format!(
        "{:<22} {:>3} {:<9} {:<8} {:>5} {:>6} {:>10} {:>10} {:>12} {:>6}",
        "NAMENODE",
        "ID",
        "ROLE",
        "HA",
        "TERM",
        "LEADER",
        "LAST_INDEX",
        "COMMITTED",
        "APPLIED_TXID",
        "LAG"
    )];
    for (addr, s) in answers {
        match s {
            Ok(s) => {
                let lag =
                    leader_last.map_or("-".into(), |l| l.saturating_sub(s.committed).to_string());
                let leader = s.leader.map_or("-".into(), |l| l.to_string());
                out.push(format!(
                    "{:<22} {:>3} {:<9} {:<8} {:>5} {:>6} {:>10} {:>10} {:>12} {:>6}",
                    addr.to_string(),
                    s.id,
                    s.role,
                    s.ha_state,
                    s.term,
                    leader,
                    s.last_log_index,
                    s.committed,
                    s.applied_txid,
                    lag
                ));
            }
            Err(e) => out.push(format!("{:<22} unreachable: {e:#}", addr.to_string())),
        }
    }
    out
}

pub(crate) async fn run(fs: Option<String>, conf: &[String]) -> anyhow::Result<()> {
    let (target, namenodes) = crate::admin::namenodes(fs, conf)?;
    let mut answers = Vec::new();
    for addr in namenodes {
        answers.push((addr, status(addr).await));
    }
    for line in rows(&answers) {
        println!("{line}");
    }
    if answers.iter().all(|(_, s)| s.is_err()) {
        anyhow::bail!("no NameNode of {target} answered");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: u64, role: &str, last: u64, committed: u64) -> RaftStatusProto {
        RaftStatusProto {
            id,
            role: role.into(),
            term: 3,
            leader: Some(2),
            last_log_index: last,
            committed,
            applied_txid: committed * 2,
            peers: vec![],
            ha_state: if role == "leader" {
                "active"
            } else {
                "standby"
            }
            .into(),
        }
    }

    #[test]
    fn lag_is_measured_from_the_leaders_log_and_a_silent_node_is_named() {
        let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:2".parse().unwrap();
        let c: SocketAddr = "127.0.0.1:3".parse().unwrap();
        let answers = vec![
            (a, Ok(node(1, "follower", 40, 37))),
            (b, Ok(node(2, "leader", 42, 42))),
            (c, Err(anyhow::anyhow!("connection refused"))),
        ];
        let rows = rows(&answers);
        assert!(rows[0].starts_with("NAMENODE"));
        assert!(
            rows[1].contains(" follower ") && rows[1].ends_with("     5"),
            "{}",
            rows[1]
        );
        assert!(
            rows[2].contains(" leader ")
                && rows[2].contains(" active ")
                && rows[2].ends_with("     0")
        );
        assert_eq!(
            rows[3],
            "127.0.0.1:3            unreachable: connection refused"
        );
    }
}
