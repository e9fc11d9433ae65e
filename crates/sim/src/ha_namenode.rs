//! An HA NameNode host: the real HA NameNode (the service, its Raft node and transport,
//! the failover control and the active's lease) on a memory Raft log that a power cut
//! trims to what was synced and a seeded part of the rest, serving on the simulated
//! network until the host is crashed. Its Raft metrics are watched for a second leader
//! in a term.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ferrite_namenode::ha_config::{HaGroup, HaNode};
use ferrite_namenode::{HaHost, NameNode};
use ferrite_raft::{MemoryDisk, NodeId, Timing};
use parking_lot::Mutex;

use crate::client::Findings;
use crate::namenode::{PORT, SUPERUSER};
use crate::net::{Reaper, SimDial, SimListener, Sockets};
use crate::raft_group::watch_leaders;

/// The port each NameNode's Raft transport listens on.
const RAFT_PORT: u16 = 7070;

/// The leader of each term, as the NameNodes' Raft metrics showed it.
pub(crate) type Leaders = Arc<Mutex<BTreeMap<u64, NodeId>>>;

/// The group of `n` NameNodes, named as their hosts are (only inside the simulation:
/// their addresses are the hosts').
fn group(n: usize) -> HaGroup {
    let nodes = (0..n)
        .map(|k| {
            let ip = turmoil::lookup(crate::namenode::host(k, n));
            HaNode {
                name: crate::namenode::host(k, n),
                id: k as NodeId + 1,
                rpc: format!("{ip}:{PORT}"),
                http: None,
                raft: format!("{ip}:{RAFT_PORT}"),
            }
        })
        .collect();
    HaGroup {
        nameservice: "sim".into(),
        nodes,
        me: None,
    }
}

/// Runs one life of NameNode `k` of `n` (until the simulator crashes it).
pub(crate) async fn run(
    k: usize,
    n: usize,
    disk: MemoryDisk,
    sockets: Arc<Sockets>,
    leaders: Leaders,
    findings: Findings,
    exited: Arc<Vec<AtomicBool>>,
) -> turmoil::Result {
    let _reaper = Reaper(sockets.clone());
    exited[k].store(false, Ordering::SeqCst);
    let group = group(n);
    let me = group.nodes[k].clone();
    let ip = turmoil::lookup(me.name.as_str());
    let host = HaHost {
        listener: SimListener::bind(ip, PORT, &sockets).await?,
        raft_listener: SimListener::bind(ip, RAFT_PORT, &sockets).await?,
        disk: Box::new(disk),
        dial: Arc::new(SimDial(Some(sockets.clone()))),
        superuser: SUPERUSER.into(),
    };
    let mut cfg = crate::namenode::config();
    cfg.raft_timing = Timing {
        // Small, so runs take snapshots, purge the log and send a snapshot to a member
        // left behind.
        snapshot_every: 200,
        ..Timing::default()
    };
    let nn = NameNode::start_ha_on(cfg, &group, &me, host).await?;
    let raft = nn.raft().expect("an HA NameNode has a Raft node").clone();
    let id = me.id;
    tokio::spawn(watch_leaders(raft, move |term| {
        let other = *leaders.lock().entry(term).or_insert(id);
        if other != id {
            let line = format!("nn{other} and nn{id} both led term {term}");
            let mut f = findings.lock();
            if !f.contains(&line) {
                f.push(line);
            }
        }
    }));
    // A NameNode that stops itself (its Raft node failed, or it lost leadership with
    // changes in flight) exits: the run restarts it, as a supervisor would.
    nn.fatal.cancelled().await;
    exited[k].store(true, Ordering::SeqCst);
    std::future::pending::<()>().await;
    Ok(())
}
