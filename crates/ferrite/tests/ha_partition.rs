//! Safety when the active is cut off from its group: the test fault
//! `ferrite.ha.raft.fault.cut-file` stops its Raft traffic both ways and leaves its client
//! port up, so clients go on reaching it. Writers add directories with unique names, three
//! through the nameservice and one straight at the cut-off NameNode; a reader lists them
//! through the nameservice; every call's start, end and outcome is recorded. The majority
//! elects a new active, and the history must be linearizable as a grow-only set (see
//! `check`): no acknowledged add lost, no read missing what was acknowledged before it
//! began, no read seeing what is later gone, no read seeing less than an earlier one.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::ha::{active, ha_keys, namenode, NAMES};
use common::Proc;
use ferrite_client::fs::ClientOptions;
use ferrite_client::FileSystem;
use parking_lot::Mutex;

/// How long a call may take before the test counts its outcome as unknown.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

enum What {
    /// An add of `name`; `acked` when the client was told it was done.
    Add { name: String, acked: bool },
    /// A read, and the names it returned.
    Read(BTreeSet<String>),
}

struct Event {
    start: Instant,
    end: Instant,
    what: What,
}

type History = Arc<Mutex<Vec<Event>>>;

/// Checks a grow-only set's history of unique adds for linearizability: each condition
/// is necessary, and together they let every add be placed at a point that every read
/// agrees with. `last` is the set once everything settled.
fn check(history: &[Event], last: &BTreeSet<String>) -> Result<(), String> {
    let mut adds: BTreeMap<&str, &Event> = BTreeMap::new();
    let mut reads = Vec::new();
    for e in history {
        match &e.what {
            What::Add { name, .. } => {
                adds.insert(name, e);
            }
            What::Read(seen) => reads.push((e, seen)),
        }
    }
    let acked = |e: &Event| matches!(e.what, What::Add { acked: true, .. });
    for (name, e) in &adds {
        if acked(e) && !last.contains(*name) {
            return Err(format!("the acknowledged add of {name} was lost"));
        }
    }
    for name in last {
        if !adds.contains_key(name.as_str()) {
            return Err(format!("{name} appeared without an add"));
        }
    }
    for (r, seen) in &reads {
        for (name, a) in &adds {
            if acked(a) && a.end < r.start && !seen.contains(*name) {
                return Err(format!(
                    "a read missed {name}, acknowledged before it began"
                ));
            }
        }
        for name in seen.iter() {
            match adds.get(name.as_str()) {
                None => return Err(format!("a read saw {name}, never added")),
                Some(a) if a.start > r.end => {
                    return Err(format!("a read saw {name} before it was added"))
                }
                _ if !last.contains(name) => {
                    return Err(format!("a read saw {name}, which is gone at the end"))
                }
                _ => {}
            }
        }
    }
    for (r1, s1) in &reads {
        for (r2, s2) in &reads {
            if r1.end < r2.start && !s1.is_subset(s2) {
                let lost: Vec<_> = s1.difference(s2).take(5).collect();
                return Err(format!("a later read lost {lost:?}"));
            }
        }
    }
    Ok(())
}

async fn writer(id: String, fs: FileSystem, stop: Arc<AtomicBool>, history: History) {
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let name = format!("{id}-{n}");
        n += 1;
        let start = Instant::now();
        let path = format!("/p/{name}");
        let answer = tokio::time::timeout(CALL_TIMEOUT, fs.mkdirs(&path, 0o755, false)).await;
        let acked = matches!(answer, Ok(Ok(true)));
        let end = Instant::now();
        history.lock().push(Event {
            start,
            end,
            what: What::Add { name, acked },
        });
        if !acked {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn list(fs: &FileSystem) -> Option<BTreeSet<String>> {
    let listed = tokio::time::timeout(CALL_TIMEOUT, fs.list("/p")).await;
    Some(listed.ok()?.ok()?.into_iter().map(|s| s.path).collect())
}

async fn reader(fs: FileSystem, stop: Arc<AtomicBool>, history: History) {
    while !stop.load(Ordering::SeqCst) {
        let start = Instant::now();
        if let Some(seen) = list(&fs).await {
            history.lock().push(Event {
                start,
                end: Instant::now(),
                what: What::Read(seen),
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The group, each NameNode with a cut file of its own under `root`.
fn start(root: &Path, conf: &[String]) -> Vec<Option<Proc>> {
    (0..3)
        .map(|i| {
            let mut c = conf.to_vec();
            let cut = root.join(format!("cut-{}", NAMES[i]));
            c.push(format!("ferrite.ha.raft.fault.cut-file={}", cut.display()));
            Some(namenode(root, &c, i))
        })
        .collect()
}

async fn nameservice(rpcs: &[SocketAddr]) -> FileSystem {
    FileSystem::connect_any(rpcs, &ClientOptions::default())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_active_acknowledges_nothing_and_reads_stay_linearizable() {
    let root = tempfile::tempdir().unwrap();
    let (conf, rpcs) = ha_keys(&[]);
    let mut members = start(root.path(), &conf);
    let first = active(&rpcs, &[true; 3], "/p").await;

    let (stop, history): (Arc<AtomicBool>, History) = Default::default();
    let mut tasks = Vec::new();
    for i in 0..3 {
        let fs = nameservice(&rpcs).await;
        tasks.push(tokio::spawn(writer(
            format!("w{i}"),
            fs,
            stop.clone(),
            history.clone(),
        )));
    }
    let direct = FileSystem::connect(&format!("hdfs://{}", rpcs[first]))
        .await
        .unwrap();
    tasks.push(tokio::spawn(writer(
        "direct".into(),
        direct,
        stop.clone(),
        history.clone(),
    )));
    let fs = nameservice(&rpcs).await;
    tasks.push(tokio::spawn(reader(fs, stop.clone(), history.clone())));

    tokio::time::sleep(Duration::from_secs(1)).await;
    let cut_file = root.path().join(format!("cut-{}", NAMES[first]));
    std::fs::write(&cut_file, b"").unwrap();
    let cut = Instant::now();
    tokio::time::sleep(Duration::from_secs(4)).await;
    std::fs::remove_file(&cut_file).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::SeqCst);
    for t in tasks {
        t.await.unwrap();
    }

    // The cut-off NameNode may have stopped (it lost leadership with changes in
    // flight); the others settle the final state.
    if let Some(p) = members[first].as_mut() {
        if p.child.try_wait().unwrap().is_some() {
            members[first] = None;
        }
    }
    let live: Vec<bool> = members.iter().map(Option::is_some).collect();
    let now_active = active(&rpcs, &live, "/probe").await;
    let fs = FileSystem::connect(&format!("hdfs://{}", rpcs[now_active]))
        .await
        .unwrap();
    let last = list(&fs).await.expect("the final listing");

    let history = std::mem::take(&mut *history.lock());
    let acked_after_cut = history
        .iter()
        .filter(|e| e.start > cut && matches!(e.what, What::Add { acked: true, .. }))
        .count();
    assert!(
        acked_after_cut > 5,
        "the majority went on taking changes: {acked_after_cut} after the cut"
    );
    let reads = history
        .iter()
        .filter(|e| matches!(e.what, What::Read(_)))
        .count();
    assert!(reads > 20, "only {reads} reads");
    let direct_acked_after_cut = history
        .iter()
        .filter(|e| e.start > cut)
        .filter(
            |e| matches!(&e.what, What::Add { name, acked: true } if name.starts_with("direct")),
        )
        .count();
    eprintln!(
        "{} events, {reads} reads, {acked_after_cut} adds acknowledged after the cut \
         ({direct_acked_after_cut} of them by the cut-off NameNode), {} names at the end",
        history.len(),
        last.len()
    );
    if let Err(e) = check(&history, &last) {
        panic!("not linearizable: {e}");
    }
}

#[test]
fn the_checker_catches_a_lost_add_a_stale_read_and_a_dirty_read() {
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let add = |name: &str, s, e, acked| Event {
        start: at(s),
        end: at(e),
        what: What::Add {
            name: name.into(),
            acked,
        },
    };
    let read = |s, e, names: &[&str]| Event {
        start: at(s),
        end: at(e),
        what: What::Read(names.iter().map(|n| n.to_string()).collect()),
    };
    let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
    let good = vec![
        add("a", 0, 10, true),
        add("b", 5, 30, false),
        read(20, 25, &["a"]),
        read(26, 40, &["a", "b"]),
    ];
    assert_eq!(check(&good, &set(&["a", "b"])), Ok(()));
    assert!(
        check(&good, &set(&["b"])).is_err(),
        "a lost acknowledged add"
    );
    let stale = vec![add("a", 0, 10, true), read(20, 25, &[])];
    assert!(check(&stale, &set(&["a"])).is_err(), "a stale read");
    let dirty = vec![add("a", 0, 10, false), read(20, 25, &["a"])];
    assert!(check(&dirty, &set(&[])).is_err(), "a read of what was lost");
    let shrinking = vec![
        add("a", 0, 10, false),
        read(20, 25, &["a"]),
        read(30, 35, &[]),
    ];
    assert!(
        check(&shrinking, &set(&["a"])).is_err(),
        "a later read saw less"
    );
}
