//! An HA nameservice under the faults operators meet besides a crash: an active that
//! freezes past the election timeout and wakes up, a follower whose disk fills up, a
//! NameNode whose disk is wiped, and a rolling restart of every NameNode while clients work.

mod common;

use std::time::Duration;

use common::disk::SmallDisk;
use common::ha::{
    active, datanode, every_namenode_holds, ha_keys, is_standby, make_standby, namenode,
    start_group, Load, NAMES,
};
use common::{send_signal, term, Proc};
use ferrite_client::fs::ClientOptions;
use ferrite_client::FileSystem;

const SIGCONT: i32 = 18;
const SIGSTOP: i32 = 19;

/// The active frozen (`SIGSTOP`) past the election timeout, with a client's change sent to
/// it: the others elect a new active meanwhile. Woken, the old active must not acknowledge
/// that change unless the group committed it — it steps down or stops — and every
/// NameNode agrees on whether it happened; the group then carries on with all three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_active_wakes_to_acknowledge_nothing_it_cannot_commit() {
    let root = tempfile::tempdir().unwrap();
    let (conf, rpcs) = ha_keys(&[]);
    let mut nns = start_group(root.path(), &conf);
    let mut live = [true; 3];
    let old = active(&rpcs, &live, "/before").await;
    let pid = nns[old].as_ref().unwrap().child.id();

    // A client that knows only the old active, so that nothing moves its call elsewhere.
    let bound = FileSystem::connect(&format!("hdfs://{}", rpcs[old]))
        .await
        .unwrap();
    send_signal(pid, SIGSTOP);
    let pending = tokio::spawn(async move { bound.mkdirs("/while-frozen", 0o755, true).await });
    live[old] = false;
    let new = active(&rpcs, &live, "/elected").await;
    assert_ne!(new, old);
    send_signal(pid, SIGCONT);

    let answer = tokio::time::timeout(Duration::from_secs(30), pending)
        .await
        .expect("the woken NameNode answers or closes the connection")
        .unwrap();
    // It stepped down: stopped, or refusing clients as a standby.
    let exited = wait_exit_or_standby(nns[old].as_mut().unwrap(), rpcs[old]).await;
    if exited {
        nns[old] = Some(namenode(root.path(), &conf, old));
    }
    let fs = FileSystem::connect_any(&rpcs, &ClientOptions::default())
        .await
        .unwrap();
    fs.mkdirs("/after", 0o755, true).await.unwrap();
    let holds = |p: &'static str| {
        let rpcs = rpcs.clone();
        async move {
            let mut seen = Vec::new();
            for target in 0..3 {
                if active(&rpcs, &[true; 3], "/probe").await != target {
                    common::ha::make_active(rpcs[target]).await;
                }
                let fs = FileSystem::connect(&format!("hdfs://{}", rpcs[target]))
                    .await
                    .unwrap();
                seen.push(fs.status(p).await.unwrap().is_some());
            }
            seen
        }
    };
    // The change is acknowledged only if the group committed it. (Almost always it is
    // refused and nowhere; it can also have reached a follower in the instant before the
    // stop took hold, and then the new active commits it, acknowledged or not.)
    let seen = holds("/while-frozen").await;
    assert!(
        seen == [true; 3] || seen == [false; 3],
        "on some only: {seen:?}"
    );
    assert!(
        answer.is_err() || seen == [true; 3],
        "the old active acknowledged a change its group never committed"
    );
    assert_eq!(holds("/before").await, [true; 3]);
    assert_eq!(holds("/after").await, [true; 3]);
}

/// Whether the woken NameNode stopped (`true`) or turned standby (`false`), within 20 s.
/// One that stops answers as a standby for a moment first, so a standby is watched a
/// little longer.
async fn wait_exit_or_standby(p: &mut Proc, rpc: std::net::SocketAddr) -> bool {
    let exited = wait_exit_or_standby_once(p, rpc).await;
    if !exited {
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    exited || p.child.try_wait().unwrap().is_some()
}

async fn wait_exit_or_standby_once(p: &mut Proc, rpc: std::net::SocketAddr) -> bool {
    for _ in 0..200 {
        if p.child.try_wait().unwrap().is_some() {
            return true;
        }
        if let Ok(fs) = FileSystem::connect(&format!("hdfs://{rpc}")).await {
            if let Err(e) = fs.mkdirs("/probe-old", 0o755, true).await {
                if is_standby(&e) {
                    return false;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the woken active neither stopped nor turned standby");
}

/// A standby loses its whole name directory while the group goes on far past the log the
/// active keeps (a snapshot every 20 entries). Restarted empty, it installs the active's
/// image as a Raft snapshot, catches up from the log, and — made active — holds every
/// directory created before and while it was gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wiped_namenode_rejoins_from_the_actives_snapshot() {
    let root = tempfile::tempdir().unwrap();
    let (conf, rpcs) = ha_keys(&["ferrite.ha.raft.snapshot.entries=20"]);
    let mut nns = start_group(root.path(), &conf);
    let first = active(&rpcs, &[true; 3], "/w").await;
    let fs = FileSystem::connect_any(&rpcs, &ClientOptions::default())
        .await
        .unwrap();
    for i in 0..60 {
        fs.mkdirs(&format!("/w/a{i}"), 0o755, true).await.unwrap();
    }
    let wiped = (first + 1) % 3;
    nns[wiped] = None; // SIGKILL
    std::fs::remove_dir_all(root.path().join(NAMES[wiped])).unwrap();
    for i in 0..60 {
        fs.mkdirs(&format!("/w/b{i}"), 0o755, true).await.unwrap();
    }
    nns[wiped] = Some(namenode(root.path(), &conf, wiped));
    // The hand-over waits for the chosen NameNode to hold the whole log.
    common::ha::make_active(rpcs[wiped]).await;
    assert_eq!(active(&rpcs, &[true; 3], "/w").await, wiped);
    let fs = FileSystem::connect(&format!("hdfs://{}", rpcs[wiped]))
        .await
        .unwrap();
    let mut names: Vec<String> = fs
        .list("/w")
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.path)
        .collect();
    names.sort();
    let mut want: Vec<String> = (0..60)
        .flat_map(|i| [format!("a{i}"), format!("b{i}")])
        .collect();
    want.sort();
    assert_eq!(names, want);
}

/// Every NameNode restarted in turn (SIGTERM), standbys first, the active after handing
/// its role over as an operator would, while four clients and two DataNodes work: no
/// call fails, and every NameNode ends holding exactly what was acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_under_load_fails_no_call() {
    let root = tempfile::tempdir().unwrap();
    let (conf, rpcs) = ha_keys(&[]);
    let mut nns = start_group(root.path(), &conf);
    let _dns: Vec<Proc> = (0..2).map(|i| datanode(root.path(), &conf, i)).collect();
    let leader = active(&rpcs, &[true; 3], "/probe").await;
    let load = Load::start(4, &rpcs);
    let order = (0..3).filter(|&i| i != leader).chain([leader]);
    for i in order {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if i == leader {
            make_standby(rpcs[i]).await;
        }
        let mut old = nns[i].take().unwrap();
        term(&mut old.child);
        nns[i] = Some(namenode(root.path(), &conf, i));
        // The group has an active again before the next NameNode goes.
        active(&rpcs, &[true; 3], "/probe").await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let expected = load.finish().await;
    assert!(expected.len() > 4, "the clients did work: {expected:?}");
    every_namenode_holds(&rpcs, &expected).await;
}

/// Whether process `p` exits within 30 s.
async fn stops(p: &mut Proc) -> bool {
    for _ in 0..300 {
        if let Ok(Some(_)) = p.child.try_wait() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// A follower's disk fills up while four clients work: it can no longer make the log
/// durable, so it stops rather than acknowledge appends it did not keep, and the other
/// two carry on without a failed call. With space freed it comes back and catches up (its
/// log's torn tail cut off). Then the active's disk fills: it stops too, a follower takes
/// over, and still no call fails. Every NameNode ends holding exactly what was acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namenode_whose_disk_fills_stops_and_rejoins_once_space_is_freed() {
    let root = tempfile::tempdir().unwrap();
    let disks: Vec<SmallDisk> = NAMES
        .iter()
        .map(|n| SmallDisk::mount(&root.path().join(n), 64))
        .collect();
    let (conf, rpcs) = ha_keys(&[]);
    let mut nns = start_group(root.path(), &conf);
    let _dns: Vec<Proc> = (0..2).map(|i| datanode(root.path(), &conf, i)).collect();
    let leader = active(&rpcs, &[true; 3], "/probe").await;
    let load = Load::start(4, &rpcs);
    tokio::time::sleep(Duration::from_secs(1)).await;

    let full = (leader + 1) % 3;
    disks[full].fill();
    assert!(
        stops(nns[full].as_mut().unwrap()).await,
        "the follower with a full disk stops"
    );
    // The two others go on acknowledging.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut live = [true; 3];
    live[full] = false;
    assert_eq!(active(&rpcs, &live, "/probe").await, leader);

    disks[full].free();
    nns[full] = Some(namenode(root.path(), &conf, full));
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Then the active's disk: it stops, and a follower takes over as after a crash.
    disks[leader].fill();
    assert!(
        stops(nns[leader].as_mut().unwrap()).await,
        "the active with a full disk stops"
    );
    let mut live = [true; 3];
    live[leader] = false;
    assert_ne!(active(&rpcs, &live, "/probe").await, leader);
    tokio::time::sleep(Duration::from_secs(1)).await;
    disks[leader].free();
    nns[leader] = Some(namenode(root.path(), &conf, leader));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let expected = load.finish().await;
    assert!(expected.len() > 4, "the clients did work: {expected:?}");
    every_namenode_holds(&rpcs, &expected).await;
    drop(nns);
    drop(disks);
}
