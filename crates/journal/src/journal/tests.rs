//! The syncer's group commit, driven by real committers on real files.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{Journal, JournalConfig};
use ferrite_namespace::Op;

pub(super) fn config(dir: &std::path::Path, group_delay: Duration) -> JournalConfig {
    JournalConfig {
        dirs: vec![dir.to_path_buf()],
        segment_max_bytes: 64 << 20,
        segment_max_txns: 1_000_000,
        prealloc_chunk: 1 << 20,
        tail_bytes: 1 << 20,
        group_delay,
        dir_timeout: Duration::from_secs(20),
        restore_failed: false,
        policy: Default::default(),
    }
}

fn mkdir(n: usize) -> Op {
    Op::Mkdir {
        path: format!("/d{n}"),
        id: 16_386 + n as u64,
        perm: 0o755,
        owner: "u".into(),
        group: "g".into(),
        mtime: 1,
    }
}

/// `n` closed-loop clients (commit, wait for the sync, commit again), client `c` until
/// `stops[c]` is set, counting their rounds.
fn closed_loop(
    journal: &Arc<Journal>,
    stops: &[Arc<AtomicBool>],
    rounds: &Arc<AtomicUsize>,
) -> Vec<std::thread::JoinHandle<()>> {
    let n = stops.len();
    (0..n)
        .map(|c| {
            let (journal, stop, rounds) = (journal.clone(), stops[c].clone(), rounds.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                let mut i = c;
                while !stop.load(Ordering::Relaxed) {
                    let txid = journal.append_all(&[mkdir(i)]);
                    if rt.block_on(journal.wait_synced(txid)).is_err() {
                        break; // closed under us at the end
                    }
                    rounds.fetch_add(1, Ordering::Relaxed);
                    i += n;
                }
            })
        })
        .collect()
}

/// Waits until the clients have made `target` rounds in all, or a sync waited out the
/// group delay (rather than sitting through more of them).
fn run_until(journal: &Journal, rounds: &AtomicUsize, target: usize) {
    let m = journal.metrics();
    while rounds.load(Ordering::Relaxed) < target
        && m.gathers_timed_out.load(Ordering::Relaxed) == 0
    {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Stops every client, closes the journal (which ends a gather at once, so clients that
/// stopped do not leave one waiting) and returns (syncs, gathers that timed out).
fn finish(
    journal: &Journal,
    stops: &[Arc<AtomicBool>],
    clients: Vec<std::thread::JoinHandle<()>>,
) -> (u64, u64) {
    for s in stops {
        s.store(true, Ordering::Relaxed);
    }
    journal.close();
    for c in clients {
        c.join().unwrap();
    }
    let m = journal.metrics();
    let syncs = m.syncs.load(Ordering::Relaxed);
    assert!(
        m.txns_synced.load(Ordering::Relaxed) > syncs,
        "syncs carried more than one operation each: {syncs} syncs"
    );
    (syncs, m.gathers_timed_out.load(Ordering::Relaxed))
}

/// Closed-loop clients all come back for the next sync, so with a delay far longer than
/// any round trip no sync should wait it out. The syncer used to count the cohort after
/// answering it: clients already back were counted twice, the target was out of reach, and
/// nearly every sync waited the full delay.
#[test]
fn a_closed_loop_of_clients_never_waits_out_the_group_delay() {
    let dir = tempfile::tempdir().unwrap();
    let journal =
        Arc::new(Journal::start(config(dir.path(), Duration::from_secs(5)), 0, |_| {}).unwrap());
    let stops: Vec<_> = (0..4).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let rounds = Arc::new(AtomicUsize::new(0));
    let clients = closed_loop(&journal, &stops, &rounds);
    run_until(&journal, &rounds, 400);
    let (syncs, timed_out) = finish(&journal, &stops, clients);
    assert_eq!(
        timed_out, 0,
        "a sync waited out the delay for clients that were back ({syncs} syncs)"
    );
}

/// A sync waits for at most `GATHER_MAX` operations, however many clients it answered: so
/// when some of a large cohort stop, the ones left (still more than `GATHER_MAX`) never
/// leave a sync waiting for the missing. Waiting for the whole cohort, a sync would wait
/// out the delay as soon as one client had stopped.
#[test]
fn a_sync_waits_for_no_more_than_gather_max_operations() {
    let dir = tempfile::tempdir().unwrap();
    let journal =
        Arc::new(Journal::start(config(dir.path(), Duration::from_secs(5)), 0, |_| {}).unwrap());
    let n = super::GATHER_MAX + 16;
    let stops: Vec<_> = (0..n).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let rounds = Arc::new(AtomicUsize::new(0));
    let clients = closed_loop(&journal, &stops, &rounds);
    run_until(&journal, &rounds, 10 * n);
    for s in &stops[super::GATHER_MAX + 4..] {
        s.store(true, Ordering::Relaxed);
    }
    let now = rounds.load(Ordering::Relaxed);
    run_until(&journal, &rounds, now + 10 * n);
    let (syncs, timed_out) = finish(&journal, &stops, clients);
    assert_eq!(
        timed_out, 0,
        "a sync waited for clients that had stopped ({syncs} syncs)"
    );
}

/// Appends `n` mkdirs (txids after `from`) and waits until they are on disk.
fn commit_mkdirs(journal: &Journal, rt: &tokio::runtime::Runtime, from: usize, n: usize) -> u64 {
    let mut last = 0;
    for i in from..from + n {
        last = journal.append_all(&[mkdir(i)]);
    }
    rt.block_on(journal.wait_synced(last)).unwrap();
    last
}

/// (first, last) of every segment in `dir`, `None` for an in-progress one's end.
fn segments(dir: &std::path::Path) -> Vec<(u64, Option<u64>)> {
    let list = super::segment::list(dir).unwrap();
    list.iter().map(|s| (s.first, s.last)).collect()
}

fn replayed(dirs: &[std::path::PathBuf], after: u64) -> Result<Vec<u64>, String> {
    let mut txids = Vec::new();
    super::recover::replay(dirs, after, |txid, _| {
        txids.push(txid);
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok(txids)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_roll_finalizes_the_segment_and_answers_where_the_next_starts() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::start(config(dir.path(), Duration::ZERO), 0, |_| {}).unwrap();
    let rt = runtime();
    commit_mkdirs(&journal, &rt, 0, 5);
    assert_eq!(rt.block_on(journal.roll()).unwrap(), 6);
    assert_eq!(segments(dir.path()), [(1, Some(5)), (6, None)]);
    // Nothing written since: the segment stays, and says where it starts.
    assert_eq!(rt.block_on(journal.roll()).unwrap(), 6);
    assert_eq!(segments(dir.path()), [(1, Some(5)), (6, None)]);
    // Records appended but not yet synced go into the segment the roll ends.
    for i in 5..8 {
        journal.append_all(&[mkdir(i)]);
    }
    assert_eq!(rt.block_on(journal.roll()).unwrap(), 9);
    assert_eq!(journal.last_synced().unwrap(), 8);
    commit_mkdirs(&journal, &rt, 8, 2);
    journal.close();
    assert_eq!(
        segments(dir.path()),
        [(1, Some(5)), (6, Some(8)), (9, Some(10))]
    );
    assert_eq!(
        replayed(&[dir.path().to_path_buf()], 0).unwrap(),
        (1..=10).collect::<Vec<_>>()
    );
    assert!(
        rt.block_on(journal.roll()).is_err(),
        "a closed journal does not roll"
    );
}

/// A directory out of service comes back at a roll once restoring is on, never before,
/// and never by being made anew: a directory that is gone may be a disk not mounted.
#[test]
fn a_failed_directory_comes_back_at_a_roll_only_when_restoring_is_on() {
    let root = tempfile::tempdir().unwrap();
    let (good, bad) = (root.path().join("good"), root.path().join("bad"));
    // A file where the directory should be: unusable at start.
    std::fs::write(&bad, b"not a directory").unwrap();
    let mut cfg = config(&good, Duration::ZERO);
    cfg.dirs.push(bad.clone());
    let journal = Journal::start(cfg, 0, |_| {}).unwrap();
    let rt = runtime();
    let failed = |j: &Journal| j.metrics().dirs().iter().any(|d| d.failed.is_some());
    assert!(failed(&journal));
    commit_mkdirs(&journal, &rt, 0, 3);
    // Fixed, but restoring is off (HDFS's default): it stays out.
    std::fs::remove_file(&bad).unwrap();
    std::fs::create_dir(&bad).unwrap();
    commit_mkdirs(&journal, &rt, 3, 1);
    assert_eq!(rt.block_on(journal.roll()).unwrap(), 5);
    assert!(failed(&journal) && segments(&bad).is_empty());
    // On, while the directory is gone: not made anew.
    journal.set_restore_failed(true);
    assert!(journal.restore_failed());
    std::fs::remove_dir(&bad).unwrap();
    commit_mkdirs(&journal, &rt, 4, 1);
    assert_eq!(rt.block_on(journal.roll()).unwrap(), 6);
    assert!(failed(&journal) && !bad.exists());
    // Back, and restoring on: in service from the next segment on.
    std::fs::create_dir(&bad).unwrap();
    commit_mkdirs(&journal, &rt, 5, 2);
    assert_eq!(rt.block_on(journal.roll()).unwrap(), 8);
    assert!(!failed(&journal), "{:?}", journal.metrics().dirs());
    assert_eq!(journal.metrics().failed_dirs(), 0);
    commit_mkdirs(&journal, &rt, 7, 4);
    journal.close();
    assert_eq!(segments(&bad), [(8, Some(11))]);
    // The restored copy alone holds everything from its first segment on, and together
    // with the other the whole journal.
    assert_eq!(
        replayed(std::slice::from_ref(&bad), 7).unwrap(),
        (8..=11).collect::<Vec<_>>()
    );
    assert!(replayed(std::slice::from_ref(&bad), 0)
        .unwrap_err()
        .contains("missing"));
    assert_eq!(
        replayed(&[bad, good], 0).unwrap(),
        (1..=11).collect::<Vec<_>>()
    );
}

/// With half its target pending, a sync goes at once rather than idle the disk for the
/// rest; with fewer, it waits for them (here in vain: the wait runs out).
#[test]
fn a_sync_with_half_its_target_pending_does_not_wait() {
    let wake = parking_lot::Condvar::new();
    let pending = parking_lot::Mutex::new(super::Pending {
        buf: Vec::new(),
        last_appended: 0,
        closing: false,
        commits: 16,
        wake_at: 32,
        rolls: Vec::new(),
    });
    let mut p = pending.lock();
    assert!(super::gather(&wake, &mut p, Duration::from_micros(1)));
    p.commits = 15;
    assert!(!super::gather(&wake, &mut p, Duration::from_micros(1)));
}

#[test]
fn a_failed_required_directory_fails_the_batch_and_stops_the_journal() {
    let (keep, req) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut cfg = config(keep.path(), Duration::ZERO);
    let req_dir = req.path().join("j");
    cfg.dirs.push(req_dir.clone());
    cfg.policy.required = vec![req_dir.clone()];
    let fired = Arc::new(std::sync::Mutex::new(None));
    let f = fired.clone();
    let journal = Journal::start(cfg, 0, move |msg| *f.lock().unwrap() = Some(msg)).unwrap();
    let rt = runtime();
    commit_mkdirs(&journal, &rt, 0, 3);
    // The required directory goes away: its next write fails.
    std::fs::remove_dir_all(&req_dir).unwrap();
    std::fs::write(&req_dir, b"not a directory").unwrap();
    roll_and_write_one(&journal, &rt);
    let msg = fired.lock().unwrap().clone().expect("the journal stopped");
    assert!(msg.contains("required journal directory"), "{msg}");
    assert!(journal.last_synced().is_err(), "nothing more is durable");
}

/// Rolls (so that the next segment must be created in every directory) and commits one
/// more operation, which must not be acknowledged if the roll lost a required directory.
fn roll_and_write_one(journal: &Journal, rt: &tokio::runtime::Runtime) {
    let _ = rt.block_on(journal.roll());
    let txid = journal.append_all(&[mkdir(99)]);
    let synced = rt.block_on(journal.wait_synced(txid));
    assert!(
        synced.is_err(),
        "acknowledged without the required directory"
    );
}
