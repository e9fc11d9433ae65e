//! The replica state machine over every replica store: one suite, run on disk and in
//! memory. Each case starts a `Dataset` over a harness's volumes, and starts it again
//! over the same volumes where a restart matters.

use std::sync::Arc;

use ferrite_transfer::checksum::{Checksum, META_HEADER_LEN};

use super::memory_files::MemoryFiles;
use super::recovery::RecoveryState;
use super::*;

/// The room each test replica is promised.
const BLOCK: u64 = 1 << 20;

/// Volumes to run the suite on.
trait Harness {
    /// The volumes as a (re)starting DataNode opens them: same stores, fresh state.
    fn volumes(&self) -> Vec<Volume>;
    /// Makes volume `vi` fail as a dying disk does.
    fn break_volume(&self, vi: usize);

    fn start(&self) -> Dataset {
        Dataset::from_volumes(self.volumes())
    }
}

struct OnDisk {
    dir: tempfile::TempDir,
    count: usize,
}

impl OnDisk {
    fn new(count: usize) -> Self {
        OnDisk {
            dir: tempfile::tempdir().unwrap(),
            count,
        }
    }

    fn root(&self, vi: usize) -> std::path::PathBuf {
        self.dir.path().join(format!("v{vi}"))
    }
}

impl Harness for OnDisk {
    fn volumes(&self) -> Vec<Volume> {
        (0..self.count)
            .map(|vi| Volume::open(&self.root(vi), "BP-1", "dn-1", "C").unwrap().0)
            .collect()
    }

    fn break_volume(&self, vi: usize) {
        std::fs::remove_dir_all(self.root(vi)).unwrap();
    }
}

struct InMemory(Vec<Arc<MemoryFiles>>);

impl InMemory {
    fn new(count: usize) -> Self {
        InMemory(
            (0..count)
                .map(|_| Arc::new(MemoryFiles::new(1 << 30)))
                .collect(),
        )
    }
}

impl Harness for InMemory {
    fn volumes(&self) -> Vec<Volume> {
        self.0
            .iter()
            .enumerate()
            .map(|(vi, f)| {
                let root = std::path::PathBuf::from(format!("memory:{vi}"));
                Volume::with_files(&root, &format!("DS-{vi}"), f.clone())
            })
            .collect()
    }

    fn break_volume(&self, vi: usize) {
        self.0[vi].fail();
    }
}

fn sums_of(data: &[u8]) -> Vec<u8> {
    let mut sums = Vec::new();
    Checksum::CRC32C_512.compute_into(data, &mut sums);
    sums
}

/// Replica `r`'s stored data and checksums (without the meta header).
fn stored(ds: &Dataset, r: &Replica) -> (Vec<u8>, Vec<u8>) {
    let s = ds.open_streams(r).unwrap();
    let mut data = vec![0; s.len(Part::Data).unwrap() as usize];
    s.read_at(Part::Data, 0, &mut data).unwrap();
    let mut meta = vec![0; s.len(Part::Meta).unwrap() as usize];
    s.read_at(Part::Meta, 0, &mut meta).unwrap();
    (data, meta.split_off(META_HEADER_LEN))
}

fn write_finalize_find_after_restart_and_invalidate(h: &dyn Harness) {
    let ds = h.start();
    let c = Checksum::CRC32C_512;
    let f = ds.create_rbw(10, 1001, &c, BLOCK).unwrap();
    let data = vec![3u8; 600];
    let sums = sums_of(&data);
    // A partial chunk first, then the whole again from its chunk start (hflush).
    f.write_at(0, &data[..100], &sums[..4], &c).unwrap();
    f.write_at(0, &data, &sums, &c).unwrap();
    f.truncate(600, &c).unwrap();
    assert!(matches!(
        ds.create_rbw(10, 1001, &c, BLOCK),
        Err(StorageError::Exists(10))
    ));
    let r = ds.finalize(f, 600).unwrap();
    assert_eq!(r.state, State::Finalized);
    assert_eq!(stored(&ds, &r), (data.clone(), sums.clone()));
    assert!(matches!(
        ds.create_rbw(10, 1001, &c, BLOCK),
        Err(StorageError::Exists(10))
    ));
    // A copy under a newer stamp replaces a finished replica the block moved on from.
    let stale = ds.create_rbw(12, 1001, &c, BLOCK).unwrap();
    ds.finalize(stale, 0).unwrap();
    let newer = ds.create_rbw(12, 1003, &c, BLOCK).unwrap();
    let copy = ds.finalize(newer, 0).unwrap();
    assert_eq!((copy.gs, copy.state), (1003, State::Finalized));
    assert!(ds.invalidate(12, 1003));
    // An unfinished replica stays apart and is found again after a restart.
    let g = ds.create_rbw(11, 1002, &c, BLOCK).unwrap();
    g.write_at(0, &data[..512], &sums[..4], &c).unwrap();
    drop(g);
    drop(ds);
    let ds = h.start();
    assert_eq!(ds.get(10).unwrap().len, 600);
    let p = ds.get(11).unwrap();
    assert_eq!((p.state, p.len), (State::Rbw, 512));
    // An older-generation leftover is replaced by a new writer.
    assert!(ds.create_rbw(11, 1003, &c, BLOCK).is_ok());
    assert!(!ds.invalidate(10, 999), "another generation is kept");
    assert!(ds.invalidate(10, 1001));
    assert!(ds.get(10).is_none());
    assert!(ds.open_streams(&r).is_err(), "its bytes are gone");
    drop(ds);
    let ds = h.start();
    assert!(ds.get(10).is_none(), "and stay gone after a restart");
    assert_eq!(ds.get(11).unwrap().gs, 1003);
}

fn pipeline_recovery_renames_the_stamp_and_cuts_back_to_the_acknowledged_bytes(h: &dyn Harness) {
    let ds = h.start();
    let c = Checksum::CRC32C_512;
    let f = ds.create_rbw(7, 1001, &c, BLOCK).unwrap();
    let data = vec![5u8; 1536];
    let sums = sums_of(&data);
    f.write_at(0, &data, &sums, &c).unwrap();
    ds.set_len(7, 1536);
    drop(f);
    assert!(
        ds.recover(7, 1000, 0, BLOCK).is_err(),
        "an older stamp is refused"
    );
    assert!(
        ds.recover(7, 1002, 4096, BLOCK).is_err(),
        "more acked than stored"
    );
    let (files, len, got) = ds.recover(7, 1002, 1024, BLOCK).unwrap();
    assert_eq!((len, got), (1024, c));
    let r = ds.get(7).unwrap();
    assert_eq!((r.gs, r.len, r.state), (1002, 1024, State::Rbw));
    assert_eq!(stored(&ds, &r), (data[..1024].to_vec(), sums[..8].to_vec()));
    // The writer goes on from the acknowledged offset and finishes.
    let files = files.unwrap();
    files.write_at(1024, &data[..512], &sums[..4], &c).unwrap();
    let old = ds.finalize(files, 1536).unwrap();
    // A finalized replica in close recovery only takes the new stamp.
    let (none, len, _) = ds.recover(7, 1003, 0, BLOCK).unwrap();
    assert!(none.is_none());
    assert_eq!(len, 1536);
    let now = ds.get(7).unwrap();
    assert_eq!((now.gs, now.state), (1003, State::Finalized));
    assert_eq!(stored(&ds, &now).0.len(), 1536);
    assert!(ds.open_streams(&old).is_err(), "the old stamp is gone");
    drop(ds);
    assert_eq!(h.start().get(7).unwrap().gs, 1003);
}

fn append_reopens_a_finalized_replica_and_continues_its_last_chunk(h: &dyn Harness) {
    let ds = h.start();
    let c = Checksum::CRC32C_512;
    let all: Vec<u8> = (0..1000u32).map(|i| (i * 13) as u8).collect();
    let f = ds.create_rbw(5, 1001, &c, BLOCK).unwrap();
    f.write_at(0, &all[..700], &sums_of(&all[..700]), &c)
        .unwrap();
    ds.finalize(f, 700).unwrap();
    assert!(ds.append(5, 1000, 1002, 700, BLOCK).is_err(), "wrong stamp");
    assert!(
        ds.append(5, 1001, 1002, 600, BLOCK).is_err(),
        "wrong length"
    );
    let (files, len, got) = ds.append(5, 1001, 1002, 700, BLOCK).unwrap();
    assert_eq!((len, got), (700, c));
    let r = ds.get(5).unwrap();
    assert_eq!((r.gs, r.state, r.len), (1002, State::Rbw, 700));
    // The writer re-sends the partial chunk from its start, as an append's first packet.
    files
        .write_at(512, &all[512..], &sums_of(&all[512..]), &c)
        .unwrap();
    let r = ds.finalize(files, 1000).unwrap();
    assert_eq!(stored(&ds, &r), (all.clone(), sums_of(&all)));
    drop(ds);
    let again = h.start().get(5).unwrap();
    assert_eq!(
        (again.gs, again.len, again.state),
        (1002, 1000, State::Finalized)
    );
}

fn block_recovery_stops_the_writer_cuts_inside_a_chunk_and_finalizes(h: &dyn Harness) {
    let ds = h.start();
    let c = Checksum::CRC32C_512;
    let data: Vec<u8> = (0..1300u32).map(|i| (i * 7) as u8).collect();
    let sums = sums_of(&data);
    let f = ds.create_rbw(9, 1001, &c, BLOCK).unwrap();
    f.write_at(0, &data, &sums, &c).unwrap();
    ds.set_len(9, 1300);
    assert_eq!(ds.init_recovery(77, 1001, 1005).unwrap(), None);
    assert!(
        ds.init_recovery(9, 1002, 1005).is_err(),
        "the replica is older than the block"
    );
    let got = ds.init_recovery(9, 1001, 1005).unwrap().unwrap();
    assert_eq!(
        (got.state, got.len, got.gs),
        (RecoveryState::Rbw, 1300, 1001)
    );
    // The writer is stopped: nothing it sends lands any more.
    assert!(f.write_at(1024, &data[1024..], &sums[8..], &c).is_err());
    assert!(ds.finalize(f, 1300).is_err());
    assert!(
        ds.init_recovery(9, 1001, 1004).is_err(),
        "an older recovery cannot take it back"
    );
    assert!(
        ds.update_recovered(9, 1006, 700).is_err(),
        "another recovery"
    );
    assert!(
        ds.update_recovered(9, 1005, 1301).is_err(),
        "past its bytes"
    );
    let r = ds.update_recovered(9, 1005, 700).unwrap();
    assert_eq!((r.state, r.gs, r.len), (State::Finalized, 1005, 700));
    // Again: nothing changes.
    assert_eq!(ds.update_recovered(9, 1005, 700).unwrap(), r);
    assert_eq!(
        ds.init_recovery(9, 1001, 1005).unwrap().unwrap().state,
        RecoveryState::Finalized
    );
    // The partial last chunk's checksum is computed afresh.
    assert_eq!(
        stored(&ds, &r),
        (data[..700].to_vec(), sums_of(&data[..700]))
    );
    drop(ds);
    let again = h.start().get(9).unwrap();
    assert_eq!(
        (again.gs, again.len, again.state),
        (1005, 700, State::Finalized)
    );
}

fn copy_on_truncate_copies_the_kept_bytes_and_leaves_the_source_whole(h: &dyn Harness) {
    let ds = h.start();
    let c = Checksum::CRC32C_512;
    let data: Vec<u8> = (0..1300u32).map(|i| (i * 13) as u8).collect();
    let sums = sums_of(&data);
    let f = ds.create_rbw(9, 1001, &c, BLOCK).unwrap();
    f.write_at(0, &data, &sums, &c).unwrap();
    let old = ds.finalize(f, 1300).unwrap();
    ds.init_recovery(9, 1001, 1007).unwrap().unwrap();
    assert!(
        ds.copy_recovered(9, 1008, 10, 700).is_err(),
        "another recovery"
    );
    assert!(
        ds.copy_recovered(9, 1007, 10, 1301).is_err(),
        "past its bytes"
    );
    let copy = ds.copy_recovered(9, 1007, 10, 700).unwrap();
    assert_eq!(
        (copy.id, copy.state, copy.gs, copy.len),
        (10, State::Finalized, 1007, 700)
    );
    assert_eq!(ds.copy_recovered(9, 1007, 10, 700).unwrap(), copy, "again");
    assert_eq!(
        stored(&ds, &copy),
        (data[..700].to_vec(), sums_of(&data[..700]))
    );
    let source = ds.get(9).unwrap();
    assert_eq!((source.gs, source.len, source.recovery_id), (1001, 1300, 0));
    assert_eq!(stored(&ds, &source), stored(&ds, &old));
    // A later attempt of the recovery (a new id) replaces the earlier copy.
    ds.init_recovery(9, 1001, 1009).unwrap().unwrap();
    let again = ds.copy_recovered(9, 1009, 10, 650).unwrap();
    assert_eq!((again.gs, again.len), (1009, 650));
    drop(ds);
    let ds = h.start();
    assert_eq!(ds.get(10).map(|r| (r.gs, r.len)), Some((1009, 650)));
    assert_eq!(ds.get(9).map(|r| (r.gs, r.len)), Some((1001, 1300)));
}

fn bytes_without_their_checksums_do_not_count(h: &dyn Harness) {
    let ds = h.start();
    let c = Checksum::CRC32C_512;
    let data = vec![1u8; 1024];
    let sums = sums_of(&data);
    let f = ds.create_rbw(3, 1001, &c, BLOCK).unwrap();
    f.write_at(0, &data, &sums[..4], &c).unwrap();
    ds.set_len(3, 1024);
    drop(f);
    drop(ds);
    assert_eq!(h.start().get(3).unwrap().len, 512, "after a restart");
    let ds = h.start();
    let got = ds.init_recovery(3, 1001, 1002).unwrap().unwrap();
    assert_eq!(got.len, 512, "in block recovery");
    // A finished replica whose last checksums were lost counts the covered bytes only.
    let g = ds.create_rbw(6, 1001, &c, BLOCK).unwrap();
    g.write_at(0, &data, &sums, &c).unwrap();
    let done = ds.finalize(g, 1024).unwrap();
    ds.open_streams(&done)
        .unwrap()
        .set_len(Part::Meta, META_HEADER_LEN as u64 + 4)
        .unwrap();
    // A torn checksum header: not one checked byte.
    let r = ds.get(3).unwrap();
    ds.open_streams(&r).unwrap().set_len(Part::Meta, 3).unwrap();
    drop(ds);
    let ds = h.start();
    assert_eq!(ds.get(3).unwrap().len, 0, "after a restart");
    assert_eq!(ds.get(6).unwrap().len, 512, "finished, one checksum left");
    let got = ds.init_recovery(3, 1001, 1003).unwrap().unwrap();
    assert_eq!(got.len, 0, "in block recovery");
}

fn a_replica_left_unfinished_by_a_restart_waits_for_block_recovery(h: &dyn Harness) {
    let ds = h.start();
    let c = Checksum::CRC32C_512;
    let data = vec![3u8; 1024];
    let f = ds.create_rbw(4, 1001, &c, BLOCK).unwrap();
    f.write_at(0, &data, &sums_of(&data), &c).unwrap();
    ds.set_len(4, 1024);
    assert_eq!(ds.get(4).unwrap().readable_len(), Some(1024));
    drop((f, ds));
    let ds = h.start();
    assert_eq!(ds.get(4).unwrap().readable_len(), None, "not readable");
    assert!(
        ds.recover(4, 1002, 512, BLOCK).is_err(),
        "no writer takes it up again"
    );
    let got = ds.init_recovery(4, 1001, 1003).unwrap().unwrap();
    assert_eq!((got.state, got.len), (RecoveryState::Rwr, 1024));
    let r = ds.update_recovered(4, 1003, 1024).unwrap();
    assert_eq!((r.state, r.restarted), (State::Finalized, false));
}

fn a_broken_volume_is_taken_out_and_its_blocks_reported_lost(h: &dyn Harness) {
    let ds = h.start();
    let c = Checksum::CRC32C_512;
    let f = ds.create_rbw(10, 1001, &c, BLOCK).unwrap();
    ds.finalize(f, 0).unwrap();
    assert!(ds.check_volume(0).is_empty(), "a healthy volume stays");
    h.break_volume(0);
    assert_eq!(ds.check_volume(0), vec![10]);
    assert!(ds.check_volume(0).is_empty(), "lost once");
    assert_eq!(ds.failed_volumes(), 1);
    assert!(ds.report()[0].2.is_empty());
    assert!(matches!(
        ds.create_rbw(12, 1, &c, BLOCK),
        Err(StorageError::NoVolume)
    ));
}

fn a_new_replica_needs_room_for_a_whole_block_and_holds_it_until_written(h: &dyn Harness) {
    let ds = h.start();
    let c = Checksum::CRC32C_512;
    let v = &ds.volumes[0];
    let free = v.space().1;
    let huge = free + (1 << 40);
    match ds.create_rbw(1, 1001, &c, huge) {
        Err(e @ StorageError::NoSpace { need, most }) => {
            assert_eq!(need, huge);
            assert!(most < huge);
            assert!(e.to_string().contains("out of space"), "{e}");
        }
        other => panic!("a block larger than the medium: {:?}", other.map(|f| f.id)),
    }
    assert!(ds.get(1).is_none(), "nothing was created");
    // Room for one block of this size, not two: the first writer's promise keeps the
    // second off the volume.
    let block = free / 2 + free / 8;
    let f = ds.create_rbw(2, 1001, &c, block).unwrap();
    assert_eq!(v.reserved(), block);
    assert_eq!(v.usable().1, v.space().1.saturating_sub(block));
    assert!(matches!(
        ds.create_rbw(3, 1001, &c, block),
        Err(StorageError::NoSpace { .. })
    ));
    assert_eq!(v.reserved(), block, "a refused writer holds nothing");
    // Bytes stored count in the medium's free space, so they are promised no more.
    f.write_at(0, &[7u8; 512], &[0u8; 4], &c).unwrap();
    assert_eq!(v.reserved(), block - 512);
    ds.finalize(f, 512).unwrap();
    assert_eq!(v.reserved(), 0, "a finished replica holds nothing");
    // A writer that goes away gives its promise back too; so does a recovery's.
    let g = ds.create_rbw(4, 1001, &c, block).unwrap();
    drop(g);
    assert_eq!(v.reserved(), 0);
    let (h, _, _) = ds.recover(4, 1002, 0, block).unwrap();
    assert_eq!(v.reserved(), block);
    drop(h);
    assert_eq!(v.reserved(), 0);
}

/// Volume 0 DISK, volume 1 SSD.
fn typed(h: &dyn Harness) -> Dataset {
    let mut vols = h.volumes();
    vols[1].storage_type = 2;
    Dataset::from_volumes(vols)
}

fn a_replica_moves_to_a_volume_of_another_type_and_a_left_over_copy_is_resolved(h: &dyn Harness) {
    let ds = typed(h);
    let c = Checksum::CRC32C_512;
    let data: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
    let sums = sums_of(&data);
    let f = ds.create_rbw_on(7, 70, &c, BLOCK, Some(1)).unwrap();
    f.write_at(0, &data, &sums, &c).unwrap();
    let r = ds.finalize(f, 3000).unwrap();
    assert_eq!(r.volume, 0);
    assert!(
        ds.move_to_type(7, 69, 2).is_err(),
        "another stamp is refused"
    );
    assert!(ds.move_to_type(7, 70, 1).is_err(), "already on that type");
    let moved = ds.move_to_type(7, 70, 2).unwrap();
    assert_eq!((moved.volume, moved.len, moved.gs), (1, 3000, 70));
    assert_eq!(ds.get(7), Some(moved.clone()));
    assert_eq!(stored(&ds, &moved), (data.clone(), sums.clone()));
    assert!(ds.open_streams(&r).is_err(), "the original is deleted");
    assert!(matches!(
        ds.move_to_type(7, 70, 3),
        Err(StorageError::NoVolume)
    ));
    // A crash between the copy and the delete leaves both; a restart keeps one.
    let leftover = ds.volumes[0].files.create(7, 70).unwrap();
    leftover.write_at(Part::Data, 0, &data).unwrap();
    let meta = [&ferrite_transfer::checksum::meta_header(&c)[..], &sums].concat();
    leftover.write_at(Part::Meta, 0, &meta).unwrap();
    let done = Key {
        id: 7,
        gs: 70,
        state: State::Finalized,
    };
    ds.volumes[0]
        .files
        .rename(
            Key {
                state: State::Rbw,
                ..done
            },
            done,
        )
        .unwrap();
    drop((leftover, ds));
    let ds = typed(h);
    assert_eq!(
        ds.get(7).unwrap().volume,
        0,
        "a full tie keeps the copy found first"
    );
    assert!(
        ds.volumes[1].files.open(done).is_err(),
        "and deletes the other"
    );
    assert_eq!(ds.volumes[0].scan().len(), 1);
}

/// Every case, each on fresh volumes from `make`.
fn suite<H: Harness>(make: impl Fn(usize) -> H) {
    write_finalize_find_after_restart_and_invalidate(&make(2));
    pipeline_recovery_renames_the_stamp_and_cuts_back_to_the_acknowledged_bytes(&make(1));
    append_reopens_a_finalized_replica_and_continues_its_last_chunk(&make(1));
    block_recovery_stops_the_writer_cuts_inside_a_chunk_and_finalizes(&make(1));
    copy_on_truncate_copies_the_kept_bytes_and_leaves_the_source_whole(&make(1));
    bytes_without_their_checksums_do_not_count(&make(1));
    a_replica_left_unfinished_by_a_restart_waits_for_block_recovery(&make(1));
    a_broken_volume_is_taken_out_and_its_blocks_reported_lost(&make(1));
    a_new_replica_needs_room_for_a_whole_block_and_holds_it_until_written(&make(1));
    a_replica_moves_to_a_volume_of_another_type_and_a_left_over_copy_is_resolved(&make(2));
}

#[test]
fn replicas_on_disk_conform() {
    suite(OnDisk::new);
}

#[test]
fn replicas_in_memory_conform() {
    suite(InMemory::new);
}
