//! Twenty failovers under load: eight clients — four of Ferrite's and four threads of
//! Hadoop's own (`ConfiguredFailoverProxyProvider`) — create, write, rename and delete
//! files through the nameservice while the active NameNode is killed with SIGKILL and
//! restarted, round after round. No client sees an error (each call fails over and is
//! retried under its own ids), and afterwards every NameNode, made active in turn by a
//! graceful hand-over, holds exactly what the clients were told was done.

mod common;

use std::time::{Duration, Instant};

use common::ha::{active, datanode, every_namenode_holds, ha_keys, namenode, JavaLoad, Load};
use common::Proc;

/// Ferrite's clients, and Hadoop's client threads.
const CLIENTS: usize = 4;
const JAVA_THREADS: usize = 4;
const ROUNDS: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_kills_of_the_active_under_eight_clients_lose_and_invent_nothing() {
    let root = tempfile::tempdir().unwrap();
    let (conf, rpcs) = ha_keys(&[]);
    let mut nns: Vec<Option<Proc>> = (0..3)
        .map(|i| Some(namenode(root.path(), &conf, i)))
        .collect();
    let _dns: Vec<Proc> = (0..2).map(|i| datanode(root.path(), &conf, i)).collect();
    let mut live = [true; 3];
    active(&rpcs, &live, "/probe").await;

    let load = Load::start(CLIENTS, &rpcs);
    let java = JavaLoad::start(JAVA_THREADS, &conf);
    let mut took = Vec::new();
    for round in 0..ROUNDS {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let leader = active(&rpcs, &live, "/probe").await;
        let killed = Instant::now();
        nns[leader] = None; // SIGKILL
        live[leader] = false;
        let next = active(&rpcs, &live, &format!("/probe{round}")).await;
        took.push(killed.elapsed());
        assert_ne!(next, leader);
        nns[leader] = Some(namenode(root.path(), &conf, leader));
        live[leader] = true;
    }
    let mut expected = load.finish().await;
    let by_java = java.finish();
    assert!(
        by_java.len() > JAVA_THREADS,
        "Hadoop's client did work: {by_java:?}"
    );
    expected.extend(by_java);
    took.sort();
    eprintln!(
        "failovers: median {:?}, worst {:?}",
        took[took.len() / 2],
        took[took.len() - 1]
    );
    assert!(
        expected.len() > CLIENTS,
        "the clients did work: {expected:?}"
    );
    every_namenode_holds(&rpcs, &expected).await;
}
