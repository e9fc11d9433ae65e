//! One suite, run against every image store: what the service and start-up rely on.

use std::io::Write;

use super::*;
use crate::startup_progress::StartupProgress;
use ferrite_namespace::Caller;

/// A namespace holding directories `/d0` … `/d{n-1}`.
fn namespace_with(dirs: usize) -> Namespace {
    let mut ns = Namespace::new("root", "supergroup", 1);
    let su = Caller::superuser("root");
    for i in 0..dirs {
        let planned = ns
            .plan_mkdirs(&su, &format!("/d{i}"), 0o755, true, 2)
            .unwrap();
        for op in &planned.ops {
            ns.apply(op).unwrap();
        }
    }
    ns
}

fn save_namespace(store: &dyn ImageStore, ns: &Namespace, txid: u64) -> Saved {
    store
        .save(&mut |sink| ns.write_image(txid, sink).map(|_| txid))
        .unwrap()
}

fn txids(store: &dyn ImageStore) -> Vec<u64> {
    store.list().iter().map(|i| i.txid).collect()
}

fn load(store: &dyn ImageStore) -> Result<Option<(usize, u64)>, String> {
    let progress = StartupProgress::new(std::time::Instant::now());
    load_newest(store, &progress)
        .map(|o| o.map(|(ns, t, _)| (ns.inode_count(), t)))
        .map_err(|e| e.to_string())
}

/// The behaviour every [`ImageStore`] keeps.
pub(super) fn suite(store: &dyn ImageStore) {
    // Empty: nothing listed, nothing to load, a read of any txid fails.
    assert!(store.list().is_empty());
    assert_eq!(load(store), Ok(None));
    assert!(store.read(1).is_err());

    // Two images, listed newest first with their sizes; the newest loads.
    let five = save_namespace(store, &namespace_with(1), 5);
    let nine = save_namespace(store, &namespace_with(3), 9);
    assert_eq!((five.txid, nine.txid), (5, 9));
    assert!(five.copies >= 1 && nine.bytes > five.bytes);
    let listed = store.list();
    assert_eq!(txids(store), [9, 5]);
    assert_eq!(listed[0].bytes, nine.bytes);
    assert!(listed.iter().all(|i| i.written_ms.is_some_and(|t| t > 0)));
    assert_eq!(store.read(5).unwrap().len() as u64, five.bytes);
    assert_eq!(load(store), Ok(Some((4, 9))), "root and three directories");
    assert!(store.describe(9).contains(&image_name(9)));

    // A write that fails leaves no image behind.
    let failed = store.save(&mut |sink| {
        sink.write_all(b"half an image")?;
        Err(io::Error::other("no space left on device"))
    });
    assert!(failed.is_err());
    assert_eq!(txids(store), [9, 5]);

    // A damaged newest image is passed over for the next one.
    store
        .save(&mut |sink| sink.write_all(b"not an image at all").map(|_| 12))
        .unwrap();
    assert_eq!(txids(store), [12, 9, 5]);
    assert_eq!(load(store), Ok(Some((4, 9))));

    // Pruning keeps the newest, answers the oldest kept, and drops the rest.
    assert_eq!(store.prune(2), Some(9));
    assert_eq!(txids(store), [12, 9]);
    assert!(store.read(5).is_err());
    assert_eq!(store.prune(0), Some(12), "at least one is always kept");
    // Only a damaged image left: start-up must not begin from an empty namespace.
    let err = load(store).unwrap_err();
    assert!(err.contains("no usable checkpoint image"), "{err}");
}

#[test]
fn images_on_disk_conform() {
    let t = tempfile::tempdir().unwrap();
    let dirs = vec![t.path().join("name1"), t.path().join("name2")];
    let store = DiskImages::new(dirs.clone());
    suite(&store);
    // On disk every copy is kept in step.
    for d in &dirs {
        assert_eq!(
            disk::tests::names_in(d)
                .into_iter()
                .filter(|n| n.starts_with("fsimage_"))
                .collect::<Vec<_>>(),
            [image_name(12)]
        );
    }
}

#[test]
fn images_in_memory_conform() {
    suite(&MemoryImages::default());
}
