//! Journal and image round trips at the state level: what the live operations built is
//! exactly what start-up rebuilds, from the journal alone, from an image plus journal, and
//! after a torn tail.

use std::path::Path;

use ferrite_namenode::namespace::blocks::{NewBlock, Previous};
use ferrite_namenode::namespace::plan::CreateArgs;
use ferrite_namenode::namespace::Caller;
use ferrite_namenode::server::load_storage;
use ferrite_namenode::service::NameNodeService;
use ferrite_namenode::{groups::GroupMapping, identity::Identity, Config};
use tokio_util::sync::CancellationToken;

fn config(dir: &Path) -> Config {
    Config {
        name_dirs: vec![dir.join("name")],
        journal_segment_txns: 97,
        // Purge right behind the retained images, so that the tests see purging.
        extra_edits_retained: 0,
        ..Default::default()
    }
}

fn open(dir: &Path) -> NameNodeService {
    let cfg = config(dir);
    let storage = load_storage(&cfg, "hdfs", CancellationToken::new()).unwrap();
    NameNodeService::new(
        cfg,
        "hdfs".into(),
        GroupMapping::default(),
        Identity::generate(1, 1),
        storage,
    )
}

/// Creates `path` (and its missing parents) as client "c", open for write.
async fn create(st: &NameNodeService, su: &Caller, path: &str, now: i64) {
    let args = CreateArgs {
        src: path,
        masked: 0o644,
        unmasked: None,
        client_name: "c",
        client_machine: "m",
        create: true,
        overwrite: false,
        create_parent: true,
        replication: 3,
        block_size: 1 << 27,
    };
    st.commit(|ns| Ok(((), ns.plan_create(su, &args, now)?)))
        .await
        .unwrap();
}

/// A deterministic mixed workload (creates, closes, renames, deletes, attribute changes).
async fn workload(st: &NameNodeService, from: u64, to: u64) {
    let su = Caller::superuser("hdfs");
    for i in from..to {
        let d = i % 13;
        let f = format!("/d{d}/f{i}");
        create(st, &su, &f, i as i64).await;
        // Zero to two blocks; sometimes a lone block is abandoned, as a failed pipeline does.
        let mut prev: Option<Previous> = None;
        for k in 0..i % 3 {
            let nb = st
                .commit(|ns| ns.plan_add_block(&f, "c", 0, prev))
                .await
                .unwrap();
            let (NewBlock::Fresh(p) | NewBlock::Retry(p)) = nb;
            prev = Some(Previous {
                id: p.block.id,
                gs: p.block.gs,
                len: 1000 + k,
            });
        }
        if i % 3 == 1 && i % 7 == 1 {
            let id = prev.take().expect("one block").id;
            st.commit(|ns| ns.plan_abandon_block(&f, "c", 0, id))
                .await
                .unwrap();
        }
        if i % 4 != 0 {
            st.commit(|ns| ns.plan_complete(&f, "c", 0, prev, i as i64, |_| true))
                .await
                .unwrap();
        }
        if i % 3 == 0 {
            st.commit(|ns| {
                Ok((
                    (),
                    ns.plan_rename2(&su, &f, &format!("/moved/r{i}"), false, i as i64)?,
                ))
            })
            .await
            .ok();
        }
        if i % 17 == 0 {
            st.commit(|ns| {
                Ok((
                    (),
                    ns.plan_delete(&su, &format!("/d{}", (i + 5) % 13), true, i as i64)?
                        .unwrap_or_default(),
                ))
            })
            .await
            .unwrap();
        }
        if i % 11 == 0 {
            st.commit(|ns| {
                Ok((
                    (),
                    ns.plan_set_permission(&su, "/moved", 0o700 + (i % 8) as u16)?,
                ))
            })
            .await
            .ok();
            st.commit(|ns| {
                Ok((
                    (),
                    ns.plan_set_owner(&su, "/moved", Some(&format!("u{}", i % 3)), None)?,
                ))
            })
            .await
            .ok();
        }
    }
}

fn dump(st: &NameNodeService) -> String {
    st.with_namespace(|ns| ns.dump())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_replay_rebuilds_the_live_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let st = open(dir.path());
    workload(&st, 0, 600).await;
    let live = dump(&st);
    let last = st.last_txid();
    st.close(false); // no image: everything comes from the journal
    drop(st);
    let back = open(dir.path());
    assert_eq!(dump(&back), live);
    assert_eq!(back.startup_report().image_txid, 0);
    assert_eq!(back.startup_report().edits_replayed, last);
    assert_eq!(back.startup_report().last_txid, last);
    // Open files got their leases back.
    assert!(back.lease_holders() > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_plus_journal_rebuilds_the_live_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let st = open(dir.path());
    workload(&st, 0, 300).await;
    let image_txid = st.save_namespace().unwrap();
    workload(&st, 300, 500).await;
    let live = dump(&st);
    st.close(false);
    drop(st);
    let back = open(dir.path());
    assert_eq!(dump(&back), live);
    assert_eq!(back.startup_report().image_txid, image_txid);
    assert!(
        back.startup_report().edits_replayed > 0
            && back.startup_report().edits_replayed < back.startup_report().last_txid
    );
    // Segments wholly before the retained images are purged after the next checkpoints.
    back.save_namespace().unwrap();
    workload(&back, 500, 520).await;
    back.save_namespace().unwrap();
    let segs = std::fs::read_dir(dir.path().join("name"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("edits_"))
        .count();
    let images = std::fs::read_dir(dir.path().join("name"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("fsimage_"))
        .count();
    assert_eq!(images, 2, "two images retained");
    assert!(segs <= 3, "old segments purged, {segs} left");
    let live = dump(&back);
    back.close(false);
    drop(back);
    assert_eq!(dump(&open(dir.path())), live);
}

/// A checkpoint holds the namespace only while it forks its image writer: a create
/// completes while the image is still being written, the image is the namespace as of the
/// fork, and the create comes back from the journal on top of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutations_proceed_while_a_checkpoint_image_is_written() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let st = std::sync::Arc::new(open(dir.path()));
    workload(&st, 0, 200).await;
    let txid_before = st.last_txid();
    // The image writer says it has started, then waits for the go-ahead.
    let (mut started_r, started_w) = std::io::pipe().unwrap();
    let (go_r, mut go_w) = std::io::pipe().unwrap();
    let saver = {
        let st = st.clone();
        std::thread::spawn(move || {
            st.save_namespace_with(|| {
                let _ = (&started_w).write_all(b"s");
                let _ = (&go_r).read_exact(&mut [0]);
            })
        })
    };
    started_r.read_exact(&mut [0]).unwrap();
    // Its own task, so that a create stuck on the namespace lock cannot stall the timeout.
    let during = tokio::spawn({
        let st = st.clone();
        async move { create(&st, &Caller::superuser("hdfs"), "/during/checkpoint", 1).await }
    });
    let done = tokio::time::timeout(std::time::Duration::from_secs(20), during).await;
    go_w.write_all(b"g").unwrap(); // release the writer first, so a failure cannot hang
    assert!(
        done.is_ok(),
        "a create waited for the checkpoint image to be written"
    );
    let image_txid = saver.join().unwrap().unwrap();
    assert_eq!(
        image_txid, txid_before,
        "the image is the namespace as of the fork"
    );
    let live = dump(&st);
    let last = st.last_txid();
    assert!(last > image_txid);
    st.close(false);
    drop(st);
    let back = open(dir.path());
    assert_eq!(dump(&back), live);
    assert_eq!(back.startup_report().image_txid, image_txid);
    assert_eq!(back.startup_report().edits_replayed, last - image_txid);
}

/// Many clients committing at once, with the group-commit delay on (the default): every
/// acknowledged create is in the journal after a restart, and syncs carried several records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_commits_under_the_group_commit_delay_are_all_durable() {
    let dir = tempfile::tempdir().unwrap();
    let st = std::sync::Arc::new(open(dir.path()));
    assert!(st.config().journal_group_delay_us > 0, "the default delays");
    let tasks: Vec<_> = (0..16)
        .map(|t| {
            let st = st.clone();
            tokio::spawn(async move {
                let su = Caller::superuser("hdfs");
                for i in 0..50 {
                    let f = format!("/c{t}/f{i}");
                    create(&st, &su, &f, 0).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let m = st.journal_metrics().unwrap();
    let (syncs, txns) = (
        m.syncs.load(std::sync::atomic::Ordering::Relaxed),
        m.txns_synced.load(std::sync::atomic::Ordering::Relaxed),
    );
    assert!(
        txns > syncs,
        "{txns} records in {syncs} syncs: no group commit"
    );
    let live = dump(&st);
    st.close(false);
    drop(st);
    let back = open(dir.path());
    assert_eq!(dump(&back), live);
    assert_eq!(back.with_namespace(|ns| ns.file_count()), 16 * 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_tail_is_truncated_and_corruption_in_the_middle_stops_startup() {
    let dir = tempfile::tempdir().unwrap();
    let st = open(dir.path());
    workload(&st, 0, 50).await;
    let live = dump(&st);
    let last = st.last_txid();
    st.close(false);
    drop(st);
    let name = dir.path().join("name");
    let mut segs: Vec<_> = std::fs::read_dir(&name)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("edits_")
        })
        .collect();
    segs.sort();
    let newest = segs.last().unwrap().clone();
    // Append half a record (as a crash mid-write would leave) to the newest segment.
    let mut bytes = std::fs::read(&newest).unwrap();
    bytes.extend_from_slice(&[40, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7]);
    std::fs::write(&newest, &bytes).unwrap();
    let back = open(dir.path());
    assert_eq!(
        dump(&back),
        live,
        "the torn record is dropped, nothing else"
    );
    assert_eq!(back.startup_report().last_txid, last);
    back.close(false);
    drop(back);

    // Flip a byte inside the first segment's second record: records follow it, so start-up
    // must refuse and name the file and offset.
    let first = segs.first().unwrap().clone();
    let mut bytes = std::fs::read(&first).unwrap();
    let second_record = 16 + 8 + u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
    bytes[second_record + 12] ^= 0xff;
    std::fs::write(&first, &bytes).unwrap();
    let cfg = config(dir.path());
    // With no image, replay starts at txid 1 and must read the damaged record.
    for f in std::fs::read_dir(&name).unwrap().filter_map(|e| e.ok()) {
        if f.file_name().to_string_lossy().starts_with("fsimage_") {
            std::fs::remove_file(f.path()).unwrap();
        }
    }
    let err = load_storage(&cfg, "hdfs", CancellationToken::new())
        .err()
        .expect("corruption must stop start-up")
        .to_string();
    assert!(
        err.contains(&first.display().to_string())
            && err.contains(&format!("offset {second_record}"))
            && err.contains("ferrite oev")
            && err.contains("--recover"),
        "{err}"
    );

    // The operator's way out (`--recover`): the edit before the damage is kept, every
    // segment holding anything after it is set aside, and the NameNode starts.
    let mut recovering = cfg.clone();
    recovering.recovery = ferrite_namenode::config::Recovery::Stop;
    let storage = load_storage(&recovering, "hdfs", CancellationToken::new()).unwrap();
    assert_eq!(storage.startup.last_txid, 1);
    storage.journal.as_ref().unwrap().close();
    drop(storage);
    let aside = std::fs::read_dir(&name)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".abandoned"))
        .count();
    assert_eq!(
        aside,
        segs.len(),
        "every segment held edits after the damage"
    );
    // From then on a plain start-up is clean, and picks up where recovery left off.
    let back = open(dir.path());
    assert_eq!(back.startup_report().last_txid, 1);
    back.close(false);
}
