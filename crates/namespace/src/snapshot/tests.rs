//! Snapshots against copies of the tree: random creates (with blocks), appends, truncates
//! (on a block boundary, and inside a block: copy-on-truncate when a snapshot shows the
//! block), mkdirs, deletes, renames (within the snapshottable directory, out of it and back
//! in), chmods, and snapshot creation and deletion. At every snapshot the test copies the live subtree;
//! after every step each remaining snapshot's view (through `.snapshot` paths) equals its
//! copy. Again after an image round trip and after replaying the records on an empty
//! namespace; and once every snapshot is deleted, nothing they kept is left.

use std::collections::BTreeMap;

use proptest::prelude::*;

use crate::blocks::{NewBlock, Previous};
use crate::error::FsError;
use crate::plan::CreateArgs;
use crate::{Caller, Namespace, Op, Planned};

const DIRS: [&str; 5] = ["/r", "/r/a", "/r/a/b", "/r/c", "/x"];
/// The two snapshottable directories (neither is moved by the steps).
const ROOTS: [&str; 2] = ["/r", "/x"];

fn snap_of(k: u8) -> (&'static str, String) {
    (ROOTS[usize::from(k / 3)], format!("s{k}"))
}
const BS: u64 = 1024;

#[derive(Clone, Debug)]
enum Step {
    Create { dir: usize, name: u8, len: u64 },
    Append { dir: usize, name: u8, more: u64 },
    Truncate { dir: usize, name: u8, len: u64 },
    Mkdir { dir: usize, name: u8 },
    Delete { dir: usize, name: u8, sub: bool },
    Rename { from: usize, name: u8, to: usize },
    RenameDir { from: usize, to: usize },
    Chmod { dir: usize, name: u8, perm: u16 },
    Snap { k: u8 },
    DelSnap { k: u8 },
}

fn step() -> impl Strategy<Value = Step> {
    let dir = 0..DIRS.len();
    let name = 0u8..3;
    prop_oneof![
        3 => (dir.clone(), name.clone(), 0u64..2500).prop_map(|(dir, name, len)| Step::Create { dir, name, len }),
        1 => (dir.clone(), name.clone(), 1u64..1500).prop_map(|(dir, name, more)| Step::Append { dir, name, more }),
        1 => (dir.clone(), name.clone(), 0u64..2500).prop_map(|(dir, name, len)| Step::Truncate { dir, name, len }),
        1 => (dir.clone(), name.clone()).prop_map(|(dir, name)| Step::Mkdir { dir, name }),
        2 => (dir.clone(), name.clone(), any::<bool>()).prop_map(|(dir, name, sub)| Step::Delete { dir, name, sub }),
        2 => (dir.clone(), name.clone(), dir.clone()).prop_map(|(from, name, to)| Step::Rename { from, name, to }),
        // The snapshottable directory itself stays put (its path is where views are read).
        1 => (1..DIRS.len() - 1, dir.clone()).prop_map(|(from, to)| Step::RenameDir { from, to }),
        1 => (dir, name, prop_oneof![Just(0o755u16), Just(0o700), Just(0o644)]).prop_map(|(dir, name, perm)| Step::Chmod { dir, name, perm }),
        // s0–s2 of /r, s3–s5 of /x.
        3 => (0u8..6).prop_map(|k| Step::Snap { k }),
        2 => (0u8..6).prop_map(|k| Step::DelSnap { k }),
    ]
}

/// What a copy keeps of an entry: kind, permission, times, length and blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    dir: bool,
    perm: u16,
    mtime: i64,
    len: u64,
    blocks: Vec<u64>,
}

type Copy = BTreeMap<String, Entry>;

struct World {
    ns: Namespace,
    log: Vec<Op>,
    su: Caller,
    now: i64,
    /// By (root, snapshot name).
    copies: BTreeMap<(String, String), Copy>,
}

/// The subtree at `top` (a live path or a snapshot's), by listings and lookups as clients
/// make them; paths relative to `top`.
fn subtree(ns: &Namespace, su: &Caller, top: &str) -> Copy {
    let mut out = Copy::new();
    let mut stack = vec![String::new()];
    while let Some(rel) = stack.pop() {
        let path = format!("{top}{rel}");
        let st = ns
            .get_file_info(su, &path)
            .unwrap()
            .expect("listed entries exist");
        let blocks = if st.is_dir {
            Vec::new()
        } else {
            let range = match ns.snapshot_block_range(su, &path, 0, u64::MAX).unwrap() {
                Some(r) => r,
                None => ns.block_range(ns.existing(&path).unwrap(), 0, u64::MAX),
            };
            range.blocks.iter().map(|p| p.block.id).collect()
        };
        out.insert(
            rel.clone(),
            Entry {
                dir: st.is_dir,
                perm: st.perm,
                mtime: if rel.is_empty() { 0 } else { st.mtime },
                len: st.len,
                blocks,
            },
        );
        if st.is_dir {
            let listing = ns.list(su, &path, b"", 10_000).unwrap().unwrap();
            for e in listing.entries {
                stack.push(format!("{rel}/{}", String::from_utf8(e.name).unwrap()));
            }
        }
    }
    out
}

/// The writer "w"'s create of `path` (mode 644, two replicas, overwriting).
fn create_args(path: &str) -> CreateArgs<'_> {
    CreateArgs {
        src: path,
        masked: 0o644,
        unmasked: None,
        client_name: "w",
        client_machine: "m",
        create: true,
        overwrite: true,
        create_parent: false,
        replication: 2,
        block_size: BS,
    }
}

impl World {
    /// An empty namespace, worked on as the superuser.
    fn new() -> Self {
        World {
            ns: Namespace::new("hdfs", "supergroup", 1),
            log: Vec::new(),
            su: Caller::superuser("hdfs"),
            now: 1,
            copies: BTreeMap::new(),
        }
    }

    fn apply(&mut self, planned: Planned) {
        let applied = self.ns.apply_planned(&planned, |_, _| {});
        assert!(applied.failed.is_none(), "{:?}", applied.failed);
        self.log.extend(planned.ops);
    }

    fn apply_ops(&mut self, ops: Vec<Op>) {
        for op in ops {
            self.ns.apply(&op).unwrap();
            self.log.push(op);
        }
    }

    fn write(
        &mut self,
        path: &str,
        mut left: u64,
        mut prev: Option<Previous>,
    ) -> Result<(), FsError> {
        while left > 0 {
            let (nb, planned) = self.ns.plan_add_block(path, "w", 0, prev)?;
            let NewBlock::Fresh(p) = nb else {
                panic!("no retry here")
            };
            self.apply(planned);
            let l = left.min(BS);
            prev = Some(Previous {
                id: p.block.id,
                gs: p.block.gs,
                len: l,
            });
            left -= l;
        }
        let (_, planned) = self
            .ns
            .plan_complete(path, "w", 0, prev, self.now, |_| true)?;
        self.apply(planned);
        Ok(())
    }

    /// What block recovery's commit records for a truncate that cut inside a block: the
    /// block (the cut one, or copy-on-truncate's new one) holds `keep` bytes under a new
    /// stamp, and the file closes at `len`.
    fn recover_cut(&mut self, path: &str, block: u64, keep: u64, len: u64) {
        let gs = self.ns.next_gs();
        self.apply_ops(vec![
            Op::SetGenerationStamp { gs },
            Op::UpdateLastBlock {
                path: path.into(),
                id: block,
                gs,
                len: keep,
            },
            Op::Close {
                path: path.into(),
                mtime: self.now,
                len,
            },
        ]);
    }

    fn run(&mut self, s: &Step) {
        self.now += 1;
        let file = |dir: usize, name: u8| format!("{}/f{name}", DIRS[dir]);
        let _ = match s {
            Step::Create { dir, name, len } => {
                let path = file(*dir, *name);
                match self.ns.plan_create(&self.su, &create_args(&path), self.now) {
                    Ok(p) => {
                        self.apply(p);
                        self.write(&path, *len, None)
                    }
                    Err(e) => Err(e),
                }
            }
            Step::Append { dir, name, more } => {
                let path = file(*dir, *name);
                match self.ns.plan_append(&self.su, &path, "w", "m", true) {
                    Ok((_, p)) => {
                        self.apply(p);
                        self.write(&path, *more, None)
                    }
                    Err(e) => Err(e),
                }
            }
            Step::Truncate { dir, name, len } => {
                let path = file(*dir, *name);
                match self
                    .ns
                    .plan_truncate(&self.su, &path, *len, "t", "m", self.now)
                {
                    Ok((t, p)) => {
                        self.apply(p);
                        if let Some((block, keep)) = t.recover {
                            self.recover_cut(&path, block, keep, *len);
                        }
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            Step::Mkdir { dir, name } => {
                let path = format!("{}/d{name}", DIRS[*dir]);
                self.ns
                    .plan_mkdirs(&self.su, &path, 0o755, false, self.now)
                    .map(|p| self.apply(p))
            }
            Step::Delete { dir, name, sub } => {
                let path = if *sub {
                    format!("{}/d{name}", DIRS[*dir])
                } else {
                    file(*dir, *name)
                };
                self.ns
                    .plan_delete(&self.su, &path, true, self.now)
                    .map(|p| p.into_iter().for_each(|p| self.apply(p)))
            }
            Step::Rename { from, name, to } => {
                let dst = format!("{}/f{}", DIRS[*to], (name + 1) % 3);
                self.ns
                    .plan_rename2(&self.su, &file(*from, *name), &dst, true, self.now)
                    .map(|p| self.apply(p))
            }
            Step::RenameDir { from, to } => {
                let dst = format!("{}/d{}", DIRS[*to], from % 3);
                self.ns
                    .plan_rename(&self.su, DIRS[*from], &dst, self.now)
                    .map(|p| p.into_iter().for_each(|p| self.apply(p)))
            }
            Step::Chmod { dir, name, perm } => {
                let path = if name % 2 == 0 {
                    DIRS[*dir].to_string()
                } else {
                    file(*dir, *name)
                };
                self.ns
                    .plan_set_permission(&self.su, &path, *perm)
                    .map(|ops| self.apply_ops(ops))
            }
            Step::Snap { k } => {
                let (root, name) = snap_of(*k);
                match self
                    .ns
                    .plan_create_snapshot(&self.su, root, Some(&name), self.now)
                {
                    Ok((_, ops)) => {
                        self.apply_ops(ops);
                        let copy = subtree(&self.ns, &self.su, root);
                        self.copies.insert((root.to_string(), name), copy);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            Step::DelSnap { k } => {
                let (root, name) = snap_of(*k);
                match self
                    .ns
                    .plan_delete_snapshot(&self.su, root, &name, self.now)
                {
                    Ok(ops) => {
                        self.apply_ops(ops);
                        self.copies.remove(&(root.to_string(), name));
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
        };
    }
}

/// Every snapshot's view equals its copy, and every diff between two of them (or one and
/// now) accounts for what differs between their copies.
fn check_views(ns: &Namespace, su: &Caller, copies: &BTreeMap<(String, String), Copy>) {
    for ((root, name), copy) in copies {
        let view = subtree(ns, su, &format!("{root}/.snapshot/{name}"));
        assert_eq!(&view, copy, "snapshot {name} of {root}");
    }
    for root in ROOTS.into_iter().filter(|r| ns.existing(r).is_ok()) {
        let now = subtree(ns, su, root);
        let mut states: Vec<(&str, &Copy)> = copies
            .iter()
            .filter(|((r, _), _)| r == root)
            .map(|((_, n), c)| (n.as_str(), c))
            .collect();
        states.push(("", &now));
        for &x in &states {
            for &y in &states {
                check_diff(ns, su, root, x, y);
            }
        }
    }
}

/// The report of changes from `x` to `y` accounts for every difference: a path only in
/// `y` is created (or a rename's target), or lies below one; a path only in `x` is deleted
/// (or a rename's source), or lies below one; a file whose permission or length differs at
/// the same path is reported itself, or lies below (or is) something reported. (As in
/// HDFS, times and blocks alone make no change: a file rewritten to its old length is not
/// reported.)
fn check_diff(
    ns: &Namespace,
    su: &Caller,
    root: &str,
    (x, cx): (&str, &Copy),
    (y, cy): (&str, &Copy),
) {
    let (_, entries) = ns.snapshot_diff(su, root, x, y).unwrap();
    let rel = |p: &[u8]| {
        let p = String::from_utf8(p.to_vec()).unwrap();
        if p.is_empty() {
            p
        } else {
            format!("/{p}")
        }
    };
    let under = |k: &str, p: &str| k == p || k.starts_with(&format!("{p}/"));
    let (mut made, mut gone, mut touched) = (Vec::new(), Vec::new(), Vec::new());
    for e in &entries {
        let p = rel(&e.path);
        match e.kind {
            '+' => made.push(p.clone()),
            '-' => gone.push(p.clone()),
            'R' => {
                let t = rel(e.target.as_ref().unwrap());
                gone.push(p.clone());
                made.push(t.clone());
                touched.push(t);
            }
            _ => {}
        }
        touched.push(p);
    }
    for k in cy.keys().filter(|k| !cx.contains_key(*k)) {
        assert!(
            made.iter().any(|m| under(k, m)),
            "diff {x} -> {y} misses new {k}: {entries:?}"
        );
    }
    for k in cx.keys().filter(|k| !cy.contains_key(*k)) {
        assert!(
            gone.iter().any(|g| under(k, g)),
            "diff {x} -> {y} misses gone {k}: {entries:?}"
        );
    }
    for (k, a) in cx {
        let Some(b) = cy.get(k) else { continue };
        if !a.dir && !b.dir && (a.perm, a.len) != (b.perm, b.len) {
            assert!(
                touched.iter().any(|t| under(k, t)),
                "diff {x} -> {y} misses {k}: {a:?} vs {b:?} in {entries:?}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_snapshot_shows_its_copy_after_every_step_an_image_and_a_replay(
        steps in prop::collection::vec(step(), 1..50)
    ) {
        let mut w = World::new();
        for d in DIRS {
            let p = w.ns.plan_mkdirs(&w.su, d, 0o755, true, 1).unwrap();
            w.apply(p);
        }
        for root in ROOTS {
            let ops = w.ns.plan_allow_snapshot(root).unwrap();
            w.apply_ops(ops);
        }
        for s in &steps {
            w.run(s);
            check_views(&w.ns, &w.su, &w.copies);
        }
        let (back, _) = Namespace::decode_image(&w.ns.encode_image(1)).unwrap();
        check_views(&back, &w.su, &w.copies);
        prop_assert_eq!(back.dump(), w.ns.dump());
        let mut replayed = Namespace::new("hdfs", "supergroup", 1);
        for op in &w.log {
            replayed.apply(op).unwrap();
        }
        check_views(&replayed, &w.su, &w.copies);
        prop_assert_eq!(replayed.dump(), w.ns.dump());
        // Once no snapshot is left, nothing is kept for one.
        for (root, name) in w.copies.keys().cloned().collect::<Vec<_>>() {
            let ops = w.ns.plan_delete_snapshot(&w.su, &root, &name, w.now).unwrap();
            w.apply_ops(ops);
        }
        prop_assert!(w.ns.snaps.versions.is_empty());
        prop_assert!(w.ns.snaps.held.is_empty());
        prop_assert!(w.ns.snaps.kept_blocks.is_empty());
        prop_assert_eq!(w.ns.arena.len() as u64, w.ns.files + w.ns.dirs);
    }
}

#[test]
fn files_a_snapshot_shows_are_not_concatenated_away_and_are_copied_on_truncate() {
    let mut w = World::new();
    let p = w.ns.plan_mkdirs(&w.su, "/r", 0o755, true, 1).unwrap();
    w.apply(p);
    for name in [0, 1] {
        w.run(&Step::Create {
            dir: 0,
            name,
            len: 1500,
        });
    }
    let ops = w.ns.plan_allow_snapshot("/r").unwrap();
    w.apply_ops(ops);
    w.run(&Step::Snap { k: 0 });
    let e =
        w.ns.plan_concat(&w.su, "/r/f0", &["/r/f1".to_string()], 9)
            .unwrap_err();
    assert_eq!(e.to_string(), "concat: the src file /r/f1 is in snapshot");
    // On a block boundary nothing is cut in place: the snapshot keeps the dropped block.
    let (t, planned) =
        w.ns.plan_truncate(&w.su, "/r/f0", 1024, "c", "m", 9)
            .unwrap();
    assert!(t.recover.is_none());
    w.apply(planned);
    check_views(&w.ns, &w.su, &w.copies);
    // Inside a block the snapshot shows: copied, never cut in place.
    let f1 = w.ns.existing("/r/f1").unwrap();
    let old = w.ns.last_block(f1).unwrap();
    let (t, planned) =
        w.ns.plan_truncate(&w.su, "/r/f1", 1100, "c", "m", 9)
            .unwrap();
    let (new, keep) = t.recover.unwrap();
    assert_ne!(new, old.id, "the cut goes to a new block");
    assert_eq!(keep, 76);
    assert!(matches!(planned.ops[1], Op::CopyOnTruncate { id, .. } if id == new));
    w.apply(planned);
    let uc = w.ns.inode(f1).file().unwrap().uc().unwrap().cut.unwrap();
    assert_eq!((uc.keep, uc.copy_of), (76, Some(old)));
    // The cut waits for recovery across an image.
    let (back, _) = Namespace::decode_image(&w.ns.encode_image(1)).unwrap();
    assert_eq!(back.dump(), w.ns.dump());
    w.recover_cut("/r/f1", new, keep, 1100);
    check_views(&w.ns, &w.su, &w.copies);
    assert_eq!(
        w.ns.snapshot_block(old.id),
        Some(old),
        "the snapshot keeps the block whole"
    );
    // A second truncate of the copy, which no snapshot shows, cuts in place.
    let (t, _) =
        w.ns.plan_truncate(&w.su, "/r/f1", 1050, "c", "m", 10)
            .unwrap();
    assert_eq!(t.recover, Some((new, 26)));
    // Deleting the snapshot gives the old block up.
    let ops = w.ns.plan_delete_snapshot(&w.su, "/r", "s0", 11).unwrap();
    let fx = w.ns.apply(&ops[0]).unwrap();
    assert!(fx.removed_blocks.contains(&(old.id, old.gs)), "{fx:?}");
}

#[test]
fn deleting_the_last_snapshot_of_a_deleted_file_gives_its_blocks_up() {
    let mut w = World::new();
    let p = w.ns.plan_mkdirs(&w.su, "/r", 0o755, true, 1).unwrap();
    w.apply(p);
    w.run(&Step::Create {
        dir: 0,
        name: 0,
        len: 100,
    });
    let block =
        w.ns.block_range(w.ns.existing("/r/f0").unwrap(), 0, u64::MAX)
            .blocks[0]
            .block;
    let ops = w.ns.plan_allow_snapshot("/r").unwrap();
    w.apply_ops(ops);
    w.run(&Step::Snap { k: 0 });
    w.run(&Step::Delete {
        dir: 0,
        name: 0,
        sub: false,
    });
    assert!(
        w.ns.block_position(block.id).is_some(),
        "the snapshot keeps it"
    );
    let ops = w.ns.plan_delete_snapshot(&w.su, "/r", "s0", 9).unwrap();
    let fx = w.ns.apply(&ops[0]).unwrap();
    assert_eq!(fx.removed_blocks, vec![(block.id, block.gs)]);
    assert!(w.ns.block_position(block.id).is_none());
}

/// Content summaries count what snapshots keep as HDFS 3.4.1 does (its figures for the
/// same sequence, at replication 2): deleted subtrees in every figure and again as the
/// `snapshot*` ones; blocks a truncate cut off a live file in its space only.
#[test]
fn content_summaries_count_what_snapshots_keep() {
    let mut w = World::new();
    for d in ["/r/a/b", "/r/c"] {
        let p = w.ns.plan_mkdirs(&w.su, d, 0o755, true, 1).unwrap();
        w.apply(p);
    }
    // f0, f1 in /r, one file in each of a, a/b and c: 49 bytes each.
    for (dir, name) in [(0, 0), (0, 1), (1, 0), (2, 0), (3, 0)] {
        w.run(&Step::Create { dir, name, len: 49 });
    }
    let ops = w.ns.plan_allow_snapshot("/r").unwrap();
    w.apply_ops(ops);
    // Names: /r, a, a/b, c and five files.
    let ops = w.ns.plan_set_quota(&w.su, "/r", 10, 100_000, None).unwrap();
    w.apply_ops(ops);
    w.run(&Step::Snap { k: 0 });
    for gone in ["/r/f0", "/r/a"] {
        let planned = w.ns.plan_delete(&w.su, gone, true, w.now).unwrap();
        planned.into_iter().for_each(|p| w.apply(p));
    }
    w.run(&Step::Append {
        dir: 0,
        name: 1,
        more: 49,
    });
    let summary = |w: &World, p: &str| {
        let cs = w.ns.content_summary(&w.su, p).unwrap();
        let s = cs.snapshot;
        (
            (cs.dirs, cs.files, cs.length, cs.space_consumed),
            (s.dirs, s.files, s.length, s.space),
        )
    };
    // Live: /r, /r/c; f1 (98 bytes), c/f0. Kept: f0, a, a/f0, a/b, a/b/f0.
    assert_eq!(summary(&w, "/r"), ((4, 5, 294, 588), (2, 3, 147, 294)));
    // Quotas still count what the snapshot keeps, and refuse past it.
    let used = |w: &World| w.ns.quota_view(&w.su, "/r").unwrap().used.unwrap();
    assert_eq!((used(&w).ns, used(&w).space), (9, 588));
    let _ =
        w.ns.plan_mkdirs(&w.su, "/r/m", 0o755, false, w.now)
            .unwrap();
    let ops = w.ns.plan_set_quota(&w.su, "/r", 9, -1, None).unwrap();
    w.apply_ops(ops);
    assert!(matches!(
        w.ns.plan_mkdirs(&w.su, "/r/m", 0o755, false, w.now),
        Err(FsError::NsQuotaExceeded {
            quota: 9,
            count: 10,
            ..
        })
    ));
    let ops = w.ns.plan_set_quota(&w.su, "/r", -1, -1, None).unwrap();
    w.apply_ops(ops);
    assert_eq!(summary(&w, "/r/c"), ((1, 1, 49, 98), (0, 0, 0, 0)));
    assert_eq!(summary(&w, "/"), ((5, 5, 294, 588), (2, 3, 147, 294)));
    w.run(&Step::Snap { k: 1 });
    let planned = w.ns.plan_delete(&w.su, "/r/f1", true, w.now).unwrap();
    planned.into_iter().for_each(|p| w.apply(p));
    assert_eq!(summary(&w, "/r"), ((4, 5, 294, 588), (2, 4, 245, 490)));
    let ops = w.ns.plan_delete_snapshot(&w.su, "/r", "s0", w.now).unwrap();
    w.apply_ops(ops);
    assert_eq!(summary(&w, "/r"), ((2, 2, 147, 294), (0, 1, 98, 196)));
    // A truncate on a block boundary: the cut-off blocks count in the space only.
    w.run(&Step::Create {
        dir: 3,
        name: 1,
        len: 2500,
    });
    w.run(&Step::Snap { k: 2 });
    let (_, planned) =
        w.ns.plan_truncate(&w.su, "/r/c/f1", 1024, "c", "m", w.now)
            .unwrap();
    w.apply(planned);
    assert_eq!(summary(&w, "/r/c"), ((1, 2, 1073, 5098), (0, 0, 0, 0)));
    // A create over a file a snapshot shows keeps the old one charged too.
    let ops = w.ns.plan_set_quota(&w.su, "/r", 100, -1, None).unwrap();
    w.apply_ops(ops);
    let before = used(&w).ns;
    w.run(&Step::Create {
        dir: 3,
        name: 1,
        len: 10,
    });
    assert_eq!(used(&w).ns, before + 1);
}

/// The diff benchmark's shape in process, to see where its time goes:
/// `cargo test --release -p ferrite-namenode --lib diff_cost -- --ignored --nocapture`.
#[test]
#[ignore]
fn diff_cost() {
    use crate::ops::{create_record, mkdir_record};
    let su = Caller::superuser("hdfs");
    let mut ns = Namespace::new("hdfs", "supergroup", 1);
    let mut id = 20_000u64;
    let mut next = || {
        id += 1;
        id
    };
    ns.apply(&mkdir_record("/b", next(), 1)).unwrap();
    for d in 0..1000 {
        ns.apply(&mkdir_record(&format!("/b/d{d}"), next(), 1))
            .unwrap();
        for f in 0..1000 {
            let p = format!("/b/d{d}/f{f}");
            ns.apply(&create_record(&p, next(), 1024, "w")).unwrap();
            ns.apply(&Op::Close {
                path: p,
                mtime: 2,
                len: 0,
            })
            .unwrap();
        }
    }
    for op in ns.plan_allow_snapshot("/b").unwrap() {
        ns.apply(&op).unwrap();
    }
    let (_, ops) = ns.plan_create_snapshot(&su, "/b", Some("s9"), 3).unwrap();
    for op in ops {
        ns.apply(&op).unwrap();
    }
    for i in 0..25_000u64 {
        let d = i % 1000;
        let f = i / 1000 * 40;
        let p = format!("/b/d{d}/new{i}");
        ns.apply(&create_record(&p, next(), 1024, "w")).unwrap();
        ns.apply(&Op::Close {
            path: p,
            mtime: 4,
            len: 0,
        })
        .unwrap();
        ns.apply(&Op::SetPermission {
            path: format!("/b/d{d}/f{f}"),
            perm: 0o600,
        })
        .unwrap();
        ns.apply(&Op::Rename {
            src: format!("/b/d{d}/f{}", f + 1),
            dst: format!("/b/d{d}/r{}", f + 1),
            mtime: 4,
            overwrite: false,
        })
        .unwrap();
        ns.apply(&Op::Delete {
            path: format!("/b/d{d}/f{}", f + 2),
            mtime: 4,
        })
        .unwrap();
    }
    let rounds = std::env::var("DIFF_ROUNDS").map_or(3, |r| r.parse().unwrap());
    for _ in 0..rounds {
        let t = std::time::Instant::now();
        let (_, l) = ns.snapshot_diff_listing(&su, "/b", "s9", "").unwrap();
        let walk = t.elapsed();
        let t = std::time::Instant::now();
        let (_, r) = ns.snapshot_diff(&su, "/b", "s9", "").unwrap();
        eprintln!(
            "listing {:?} ({} modified, {} created, {} deleted); report {:?} ({} entries)",
            walk,
            l.modified.len(),
            l.created.len(),
            l.deleted.len(),
            t.elapsed(),
            r.len()
        );
    }
}

/// A snapshottable directory deleted once its snapshots are gone leaves no trace: it is no
/// longer listed, and nothing refers to its freed slot (found by the interop scenario:
/// the next allowSnapshot read the dead slot).
#[test]
fn a_deleted_snapshottable_directory_is_forgotten() {
    let su = Caller::superuser("hdfs");
    let mut ns = Namespace::new("hdfs", "supergroup", 1);
    let apply = |ns: &mut Namespace, ops: Vec<Op>| {
        for op in ops {
            ns.apply(&op).unwrap();
        }
    };
    for d in ["/p/e", "/q"] {
        let p = ns.plan_mkdirs(&su, d, 0o755, true, 1).unwrap();
        ns.apply_planned(&p, |_, _| {});
    }
    let ops = ns.plan_allow_snapshot("/p/e").unwrap();
    apply(&mut ns, ops);
    let (_, ops) = ns.plan_create_snapshot(&su, "/p/e", Some("x"), 2).unwrap();
    apply(&mut ns, ops);
    let ops = ns.plan_delete_snapshot(&su, "/p/e", "x", 3).unwrap();
    apply(&mut ns, ops);
    let planned = ns.plan_delete(&su, "/p", true, 4).unwrap().unwrap();
    ns.apply_planned(&planned, |_, _| {});
    assert!(ns.snapshot_roots().is_empty());
    // New inodes may take the freed slots; allowing another directory reads every root.
    let p = ns.plan_mkdirs(&su, "/q/a/b", 0o755, true, 5).unwrap();
    ns.apply_planned(&p, |_, _| {});
    let ops = ns.plan_allow_snapshot("/q/a").unwrap();
    apply(&mut ns, ops);
    assert_eq!(ns.snapshot_roots().len(), 1);
}

/// A directory renamed in place is its parent's `R` line and no `M` of its own (HDFS
/// 3.4.1's report, found comparing WebHDFS answers); backward, what was made reads as
/// gone first, then the rename and what went as made, as HDFS writes them; the paged
/// form lists what a directory made in name order.
#[test]
fn a_renamed_directory_is_one_rename_line_both_ways() {
    let mut w = World::new();
    for d in ["/s/d", "/s/f"] {
        let p = w.ns.plan_mkdirs(&w.su, d, 0o755, true, 1).unwrap();
        w.apply(p);
    }
    let ops = w.ns.plan_allow_snapshot("/s").unwrap();
    w.apply_ops(ops);
    let snap = |w: &mut World, name| {
        let (_, ops) =
            w.ns.plan_create_snapshot(&w.su, "/s", Some(name), 2)
                .unwrap();
        w.apply_ops(ops);
    };
    snap(&mut w, "s1");
    let p = w.ns.plan_mkdirs(&w.su, "/s/g", 0o755, true, 3).unwrap();
    w.apply(p);
    let p = w.ns.plan_delete(&w.su, "/s/f", true, 3).unwrap().unwrap();
    w.apply(p);
    let p = w.ns.plan_rename(&w.su, "/s/d", "/s/e", 3).unwrap().unwrap();
    w.apply(p);
    snap(&mut w, "s2");
    let report = |w: &World, dir, x, y| {
        let (_, r) = w.ns.snapshot_diff(&w.su, dir, x, y).unwrap();
        r.iter()
            .map(|e| {
                let target = e.target.as_deref().map(|t| String::from_utf8_lossy(t));
                let path = String::from_utf8_lossy(&e.path);
                format!(
                    "{} {path}{}",
                    e.kind,
                    target.map_or(String::new(), |t| format!(" {t}"))
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(report(&w, "/s", "s1", "s2"), ["M ", "+ g", "R d e", "- f"]);
    assert_eq!(report(&w, "/s", "s2", "s1"), ["M ", "- g", "R e d", "+ f"]);
    assert!(report(&w, "/s/e", "s1", "s2").is_empty());
    let (_, l) = w.ns.snapshot_diff_listing(&w.su, "/s", "s1", "s2").unwrap();
    let created: Vec<&[u8]> = l.created.iter().map(|e| e.path.as_slice()).collect();
    assert_eq!(created, [b"e", b"g"]);
    assert_eq!(l.modified.len(), 1);
    // `.` is a name to the NameNode (only Hadoop's shell reads it as now).
    assert!(w.ns.snapshot_diff(&w.su, "/s", "s1", ".").is_err());
}

/// The snapshot root is reported only for a change of its own that HDFS compares (here a
/// chmod), not for the time a snapshot's creation gives it; a directory whose children
/// changed is, and a times-only change of a directory or a file is not.
#[test]
fn only_what_hdfs_compares_makes_an_m_line() {
    let mut w = World::new();
    let p = w.ns.plan_mkdirs(&w.su, "/s/d", 0o755, true, 1).unwrap();
    w.apply(p);
    let ops = w.ns.plan_allow_snapshot("/s").unwrap();
    w.apply_ops(ops);
    for path in ["/s/d/f1", "/s/d/f2"] {
        let p = w.ns.plan_create(&w.su, &create_args(path), 1).unwrap();
        w.apply(p);
        w.write(path, 10, None).unwrap();
    }
    let snap = |w: &mut World, name, at| {
        let (_, ops) =
            w.ns.plan_create_snapshot(&w.su, "/s", Some(name), at)
                .unwrap();
        w.apply_ops(ops);
    };
    let report = |w: &World, x, y| {
        let (_, r) = w.ns.snapshot_diff(&w.su, "/s", x, y).unwrap();
        r.iter()
            .map(|e| format!("{} {}", e.kind, String::from_utf8_lossy(&e.path)))
            .collect::<Vec<_>>()
    };
    snap(&mut w, "s1", 2);
    let p =
        w.ns.plan_delete(&w.su, "/s/d/f1", false, 3)
            .unwrap()
            .unwrap();
    w.apply(p);
    let p =
        w.ns.plan_set_times(&w.su, "/s/d/f2", Some(9), Some(9))
            .unwrap();
    w.apply_ops(p);
    snap(&mut w, "s2", 4);
    assert_eq!(report(&w, "s1", "s2"), ["M d", "- d/f1"]);
    assert_eq!(report(&w, "s1", ""), ["M d", "- d/f1"]);
    let (_, l) = w.ns.snapshot_diff_listing(&w.su, "/s", "s1", "s2").unwrap();
    assert_eq!(l.modified.len(), 1, "{l:?}");
    let p = w.ns.plan_set_permission(&w.su, "/s", 0o700).unwrap();
    w.apply_ops(p);
    assert_eq!(report(&w, "s2", ""), ["M "]);
    assert_eq!(report(&w, "s1", ""), ["M ", "M d", "- d/f1"]);
}
