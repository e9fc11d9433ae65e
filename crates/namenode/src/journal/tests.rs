//! The syncer's group commit, driven by real committers on real files.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{Journal, JournalConfig};
use crate::namespace::Op;

fn config(dir: &std::path::Path, group_delay: Duration) -> JournalConfig {
    JournalConfig {
        dirs: vec![dir.to_path_buf()],
        segment_max_bytes: 64 << 20,
        segment_max_txns: 1_000_000,
        prealloc_chunk: 1 << 20,
        tail_bytes: 1 << 20,
        group_delay,
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

/// Closed-loop clients (commit, wait for the sync, commit again) all come back for the
/// next sync, so with a delay far longer than any round trip no sync should wait it out.
/// The syncer used to count the cohort after answering it: clients already back were
/// counted twice, the target was out of reach, and nearly every sync waited the full
/// delay. Stops at the first such wait rather than sitting through them.
#[test]
fn a_closed_loop_of_clients_never_waits_out_the_group_delay() {
    let dir = tempfile::tempdir().unwrap();
    let journal =
        Arc::new(Journal::start(config(dir.path(), Duration::from_secs(5)), 0, |_| {}).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let (journal, stop, rounds) = (journal.clone(), stop.clone(), rounds.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                let mut n = c;
                while !stop.load(Ordering::Relaxed) {
                    let txid = journal.append_all(&[mkdir(n)]);
                    if rt.block_on(journal.wait_synced(txid)).is_err() {
                        break; // closed under us at the end
                    }
                    rounds.fetch_add(1, Ordering::Relaxed);
                    n += 4;
                }
            })
        })
        .collect();
    let m = journal.metrics();
    while rounds.load(Ordering::Relaxed) < 400 && m.gathers_timed_out.load(Ordering::Relaxed) == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    stop.store(true, Ordering::Relaxed);
    // Closing ends a gather at once, so clients that stopped do not leave one waiting.
    journal.close();
    for c in clients {
        c.join().unwrap();
    }
    let syncs = m.syncs.load(Ordering::Relaxed);
    assert_eq!(
        m.gathers_timed_out.load(Ordering::Relaxed),
        0,
        "a sync waited out the delay for clients that were back ({syncs} syncs)"
    );
    assert!(
        m.txns_synced.load(Ordering::Relaxed) > syncs,
        "syncs carried more than one operation each: {syncs} syncs"
    );
}
