//! One suite for every [`EditLog`]: the journal on disk and the one in memory must agree on
//! everything the service relies on — consecutive txids, durability before an answer,
//! followers reading back exactly what was appended, rolls, and closing.

use std::time::Duration;

use super::codec::{decode_record, Next};
use super::{EditLog, Journal, MemoryJournal};
use ferrite_namespace::ops::mkdir_record;
use ferrite_namespace::Op;

fn on_disk(dir: &std::path::Path) -> Box<dyn EditLog> {
    let cfg = super::tests::config(dir, Duration::ZERO);
    Box::new(Journal::start(cfg, 0, |_| {}).expect("a journal"))
}

fn in_memory() -> Box<dyn EditLog> {
    Box::new(MemoryJournal::default())
}

/// The records `from..=upto` of `log`'s followers' stream, in order. It waits for them: a
/// follower may look between a record's sync and its publication.
fn read_back(log: &dyn EditLog, from: u64, upto: u64) -> Vec<(u64, Op)> {
    let mut out: Vec<(u64, Op)> = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while out.last().map_or(from, |(t, _)| t + 1) <= upto && std::time::Instant::now() < deadline {
        let next = out.last().map_or(from, |(t, _)| t + 1);
        let batches = log
            .read_from(next, usize::MAX, Duration::from_secs(1))
            .expect("still in memory");
        for b in batches {
            let mut buf = &b.bytes[..];
            while let Ok(Next::Record { txid, op, size }) = decode_record(buf) {
                if txid >= next && txid <= upto {
                    out.push((txid, op));
                }
                buf = &buf[size..];
            }
        }
    }
    out
}

async fn suite(log: Box<dyn EditLog>) {
    let log = log.as_ref();
    assert_eq!(log.last_appended(), 0);
    let ops: Vec<Op> = (0..5)
        .map(|i| mkdir_record(&format!("/d{i}"), 16390 + i, 1))
        .collect();
    assert_eq!(
        log.append_all(&ops[..2]),
        2,
        "txids start at 1, one per record"
    );
    assert_eq!(log.append_all(&ops[2..]), 5);
    assert_eq!(
        log.append_all(&[]),
        5,
        "nothing appended answers the last txid"
    );
    assert_eq!(log.last_appended(), 5);
    assert_eq!(log.issued(), 5, "replies rest on what was appended");

    log.wait_synced(5).await.expect("durable");
    assert!(log.last_synced().expect("healthy") >= 5);
    assert!(log.durable().0 >= 5);

    let back = read_back(log, 1, 5);
    let want: Vec<(u64, Op)> = (1..).zip(ops.iter().cloned()).collect();
    assert_eq!(back, want, "followers read exactly what was appended");
    assert_eq!(read_back(log, 4, 5), want[3..].to_vec(), "from the middle");
    let none_yet = log
        .read_from(6, usize::MAX, Duration::from_millis(20))
        .expect("in memory");
    assert!(none_yet.is_empty(), "nothing past the last synced record");

    let next = log.roll().await.expect("rolls");
    assert_eq!(next, 6, "the next segment starts after the last record");
    let more = [mkdir_record("/after-roll", 16400, 2)];
    assert_eq!(log.append_all(&more), 6);
    log.wait_synced(6).await.expect("durable");
    assert_eq!(read_back(log, 6, 6), vec![(6, more[0].clone())]);

    assert!(!log.restore_failed());
    log.set_restore_failed(true);
    assert!(log.restore_failed());

    let last = [mkdir_record("/last", 16401, 3)];
    log.append_all(&last);
    log.close();
    assert_eq!(
        log.last_synced().unwrap_or(0).max(log.durable().0),
        7,
        "closing makes everything appended durable"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_on_disk_conforms() {
    let dir = tempfile::tempdir().unwrap();
    suite(on_disk(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_in_memory_conforms() {
    suite(in_memory()).await;
}

/// Held syncs keep appended records from being durable, as a slow disk would.
#[tokio::test]
async fn memory_syncs_can_be_held_back() {
    let log = in_memory();
    assert!(log.hold_syncs(true));
    log.append_all(&[mkdir_record("/held", 16390, 1)]);
    assert_eq!(log.durable().0, 0);
    let wait = log.wait_synced(1);
    assert!(
        tokio::time::timeout(Duration::from_millis(50), wait)
            .await
            .is_err(),
        "not durable while held"
    );
    log.hold_syncs(false);
    log.wait_synced(1).await.unwrap();
    assert_eq!(log.durable().0, 1);
}
