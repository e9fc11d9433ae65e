//! Property tests: long random operation sequences, applied to the namespace (which
//! rejects what a journal could never hold) and, when accepted, to the summary. The
//! summary of every directory must equal a recomputation from the namespace, after the
//! sequence, after a rebuild, and after a checkpoint round trip.

use super::totals::{bucket, restricts, Totals};
use super::*;
use crate::namespace::inode::Slot;
use crate::namespace::ops::mkdir_record as mkdir_op;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// A path of 1..=3 components over a small alphabet, so that names collide often.
/// Directories are mostly named a..c and files f..h, so that deep paths stay reachable;
/// a third of the files get one of 40 numbered names, so that directories also outgrow
/// the summary's scanned list and their entries move within its hash-indexed slots.
fn path(r: &mut Rng, file: bool) -> String {
    let depth = 1 + r.below(3);
    let mut p: String = (1..depth)
        .map(|_| format!("/{}", r.pick(&["a", "b", "c"])))
        .collect();
    let last = if file || r.below(8) == 0 {
        if r.below(3) == 0 {
            format!("n{}", r.below(40))
        } else {
            r.pick(&["f", "g", "h"]).to_string()
        }
    } else {
        r.pick(&["a", "b", "c"]).to_string()
    };
    p.push('/');
    p.push_str(&last);
    p
}

const PERMS: [u16; 4] = [0o755, 0o700, 0o555, 0o751];

/// A random operation; those that act on an existing entry mostly pick one of `made`
/// (paths created earlier), so that most of them are valid.
fn random_op(r: &mut Rng, ns: &Namespace, made: &[String], n: u64) -> Op {
    let kind = r.below(25);
    if kind >= 20 {
        return random_file_op(r, ns, made, n, kind);
    }
    let p = if kind >= 8 && !made.is_empty() && r.below(4) != 0 {
        made[r.below(made.len() as u64) as usize].clone()
    } else {
        path(r, (4..=12).contains(&kind))
    };
    let mtime = 1_000 + n as i64;
    match kind {
        0..=3 => Op::Mkdir {
            path: p,
            id: 20_000 + n,
            perm: PERMS[r.below(4) as usize],
            owner: "u".into(),
            group: "g".into(),
            mtime,
        },
        4..=7 => Op::Create {
            path: p,
            id: 20_000 + n,
            perm: 0o644,
            owner: "u".into(),
            group: "g".into(),
            mtime,
            replication: 1 + r.below(3) as u16,
            block_size: 1 << 20,
            client_name: "c".into(),
            client_machine: "m".into(),
        },
        8..=9 => {
            let bits = r.below(40);
            Op::AddBlock {
                path: p,
                id: (1 << 30) + n,
                gs: 1_001 + n,
                prev_len: r.below(1 << bits),
            }
        }
        10 => {
            let last = ns.existing(&p).ok().and_then(|s| {
                ns.inode(s)
                    .file()
                    .and_then(|f| f.blocks().last().map(|b| b.id))
            });
            Op::AbandonBlock {
                path: p,
                id: last.unwrap_or(0),
            }
        }
        11..=12 => {
            let bits = r.below(45);
            Op::Close {
                path: p,
                mtime,
                len: r.below(1 << bits),
            }
        }
        13..=15 => {
            let file = r.below(2) == 0;
            let dst = path(r, file);
            Op::Rename {
                src: p,
                dst,
                mtime,
                overwrite: r.below(2) == 0,
            }
        }
        16..=17 => Op::Delete { path: p, mtime },
        18 => Op::SetPermission {
            path: p,
            perm: PERMS[r.below(4) as usize],
        },
        _ => Op::SetReplication {
            path: p,
            replication: 1 + r.below(5) as u16,
        },
    }
}

/// The records of append, hsync's length, block recovery, truncate and concat, on the
/// files made so far (what the namespace refuses is skipped by the caller).
fn random_file_op(r: &mut Rng, ns: &Namespace, made: &[String], n: u64, kind: u64) -> Op {
    let p = if made.is_empty() {
        path(r, true)
    } else {
        made[r.below(made.len() as u64) as usize].clone()
    };
    let file = ns.existing(&p).ok().and_then(|s| ns.inode(s).file());
    let blocks: Vec<_> = file.map(|f| f.blocks().to_vec()).unwrap_or_default();
    let len = file.map_or(0, |f| f.len());
    let last = blocks.last().copied();
    let mtime = 1_000 + n as i64;
    match kind {
        20 => Op::Append {
            path: p,
            client_name: "c2".into(),
            client_machine: "m2".into(),
            last_len: last.map_or(0, |b| b.len),
        },
        21 => Op::UpdateLastBlock {
            path: p,
            id: last.map_or(0, |b| b.id),
            gs: 5_000 + n,
            len: r.below(1 << 20),
        },
        22 => {
            let to = r.below(len + 1);
            let mut start = 0;
            let mut cut = None;
            for b in &blocks {
                if start < to && to < start + b.len {
                    cut = Some((to - start, b.len));
                    break;
                }
                start += b.len;
            }
            Op::Truncate {
                path: p,
                len: to,
                mtime,
                client_name: "c3".into(),
                client_machine: "m3".into(),
                cut,
            }
        }
        23 => Op::SetGenerationStamp { gs: 9_000 + n },
        _ => {
            let dir = p.rsplit_once('/').map_or("", |(d, _)| d).to_string();
            let srcs = made
                .iter()
                .filter(|m| m.rsplit_once('/').map(|(d, _)| d) == Some(dir.as_str()) && **m != p)
                .take(1 + r.below(2) as usize)
                .cloned()
                .collect();
            Op::Concat {
                target: p,
                srcs,
                mtime,
            }
        }
    }
}

/// Whether the namespace would take `op` from a journal: renames into their own subtree
/// or over one of their ancestors are refused by the planner before they get there.
fn plannable(op: &Op) -> bool {
    match op {
        Op::Rename { src, dst, .. } => {
            !dst.starts_with(&format!("{src}/")) && !src.starts_with(&format!("{dst}/"))
        }
        _ => true,
    }
}

fn remember(op: &Op, made: &mut Vec<String>) {
    if let Op::Create { path, .. } | Op::Mkdir { path, .. } = op {
        if made.len() < 8 {
            made.push(path.clone());
        } else {
            let i = (made.len() * 7 + path.len()) % made.len();
            made[i] = path.clone();
        }
    }
}

/// Recomputes a directory's summary from the namespace by walking it.
fn exact(ns: &Namespace, slot: Slot) -> (Totals, u64, u64) {
    let inode = ns.inode(slot);
    let mut tot = Totals::of_dir(inode.perm);
    let (mut files, mut dirs) = (0, 0);
    for c in inode.children().expect("a directory").slots() {
        let child = ns.inode(c);
        match child.file() {
            Some(f) => {
                files += 1;
                tot.files += 1;
                tot.bytes += f.len();
                tot.raw += f.len() * u64::from(child.replication);
                tot.hist[bucket(f.len())] += 1;
            }
            None => {
                dirs += 1;
                tot.add(&exact(ns, c).0);
            }
        }
    }
    (tot, files, dirs)
}

fn all_dirs(ns: &Namespace) -> Vec<Slot> {
    let mut out = vec![ROOT_SLOT];
    let mut i = 0;
    while i < out.len() {
        let kids: Vec<Slot> = ns
            .inode(out[i])
            .children()
            .map(|c| c.slots().collect())
            .unwrap_or_default();
        out.extend(kids.into_iter().filter(|&c| ns.inode(c).is_dir()));
        i += 1;
    }
    out
}

fn assert_matches(ns: &Namespace, s: &Summary, when: &str) {
    for slot in all_dirs(ns) {
        let path = ns.path_of(slot);
        let got = s
            .get(&path)
            .unwrap_or_else(|| panic!("{when}: {path} missing"));
        let (tot, files, dirs) = exact(ns, slot);
        assert!(got.is_dir, "{when}: {path}");
        assert_eq!(got.tot, tot, "{when}: totals of {path}");
        assert_eq!(
            (got.direct_files, got.direct_dirs),
            (files, dirs),
            "{when}: {path}"
        );
        let cs = ns
            .content_summary(&crate::namespace::perm::Caller::superuser("hdfs"), &path)
            .unwrap();
        assert_eq!(
            (cs.files, cs.dirs, cs.length, cs.space_consumed),
            (got.tot.files, got.tot.dirs, got.tot.bytes, got.tot.raw),
            "{when}: getContentSummary of {path}"
        );
        assert_eq!(got.tot.restricted > 0, {
            let mut any = false;
            let mut stack = vec![slot];
            while let Some(d) = stack.pop() {
                any |= restricts(ns.inode(d).perm);
                for c in ns.inode(d).children().unwrap().slots() {
                    if ns.inode(c).is_dir() {
                        stack.push(c);
                    }
                }
            }
            any
        });
    }
    assert_eq!(s.files(), ns.file_count(), "{when}: file count");
    assert_eq!(
        s.heaviest_dirs("/", 5, usize::MAX),
        Some((heaviest_recounted(ns, 5), true)),
        "{when}: heaviest directories"
    );
    s.tree().check_arena();
}

/// The `top` directories with the most bytes in their own files, counted from the
/// namespace.
fn heaviest_recounted(ns: &Namespace, top: usize) -> Vec<DirUsage> {
    let all: Vec<DirUsage> = all_dirs(ns)
        .into_iter()
        .map(|d| {
            let files: Vec<u64> = ns
                .inode(d)
                .children()
                .unwrap()
                .slots()
                .filter_map(|c| ns.inode(c).file().map(|f| f.len()))
                .collect();
            DirUsage {
                path: ns.path_of(d),
                own_bytes: files.iter().sum(),
                own_files: files.len() as u64,
            }
        })
        .filter(|d| d.own_bytes > 0)
        .collect();
    // The ranking is the summary's own; what is recounted here is each directory's bytes.
    rank(all, top)
}

/// A walk cut short by its budget says so, and ranks only what it saw.
#[test]
fn heaviest_dirs_stop_at_their_budget() {
    let mut ns = Namespace::new("hdfs", "supergroup", 1);
    let mut s = Summary::from_namespace(&ns, 0);
    let ops = [
        mkdir_op("/a", 10, 1),
        mkdir_op("/a/b", 11, 1),
        create_op("/a/b/x", 12, 1),
        Op::Close {
            path: "/a/b/x".into(),
            mtime: 2,
            len: 300,
        },
        create_op("/a/y", 13, 1),
        Op::Close {
            path: "/a/y".into(),
            mtime: 2,
            len: 100,
        },
    ];
    for (i, op) in ops.iter().enumerate() {
        ns.apply(op).unwrap();
        s.apply(i as u64 + 1, op).unwrap();
    }
    let usage = |path: &str, own_bytes, own_files| DirUsage {
        path: path.into(),
        own_bytes,
        own_files,
    };
    let (all, complete) = s.heaviest_dirs("/a", 10, 100).unwrap();
    assert!(complete);
    assert_eq!(all, vec![usage("/a/b", 300, 1), usage("/a", 100, 1)]);
    let (cut, complete) = s.heaviest_dirs("/a", 10, 1).unwrap();
    assert!(!complete);
    assert_eq!(cut, vec![usage("/a", 100, 1)]);
    assert_eq!(s.heaviest_dirs("/a/y", 10, 100), Some((vec![], true)));
    assert_eq!(s.heaviest_dirs("/nope", 10, 100), None);
}

/// A create record of `path` (mode 644, replication 3, 1 MiB blocks, client "c") at `mtime`.
pub(crate) fn create_op(path: &str, id: u64, mtime: i64) -> Op {
    Op::Create {
        path: path.into(),
        id,
        perm: 0o644,
        owner: "u".into(),
        group: "g".into(),
        mtime,
        replication: 3,
        block_size: 1 << 20,
        client_name: "c".into(),
        client_machine: "m".into(),
    }
}

fn run(seed: u64, steps: u64) {
    let mut r = Rng(seed);
    let mut ns = Namespace::new("hdfs", "supergroup", 1);
    let mut s = Summary::from_namespace(&ns, 0);
    let mut txid = 0;
    let mut made = Vec::new();
    for n in 0..steps {
        let op = random_op(&mut r, &ns, &made, n);
        if !plannable(&op) {
            continue;
        }
        if ns.apply(&op).is_err() {
            continue;
        }
        remember(&op, &mut made);
        txid += 1;
        s.apply(txid, &op).unwrap_or_else(|e| {
            panic!("seed {seed}: the summary refused what the namespace took: {e}")
        });
        if n % 500 == 0 {
            assert_matches(&ns, &s, &format!("seed {seed} step {n}"));
        }
    }
    assert!(
        txid > steps / 4,
        "the generator should mostly produce valid ops ({txid})"
    );
    assert_matches(&ns, &s, &format!("seed {seed} end"));
    let rebuilt = Summary::from_namespace(&ns, txid);
    assert_matches(&ns, &rebuilt, &format!("seed {seed} rebuilt"));
    let bytes = codec::encode(&s);
    let loaded = codec::decode(&bytes, "mem").unwrap();
    assert_eq!(loaded.txid(), txid);
    assert_matches(&ns, &loaded, &format!("seed {seed} reloaded"));
}

#[test]
fn random_sequences_match_a_recomputation() {
    for seed in 1..=12u64 {
        run(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15), 6_000);
    }
}

/// With keys of three bits, most directories share their key with others: events find
/// their directory by walking, or through the index where a key is still unique, and
/// every answer must be the same.
#[test]
fn random_sequences_match_when_directories_share_keys() {
    super::arena::KEY_MASK.with(|m| m.set(7));
    for seed in 1..=4u64 {
        run(seed.wrapping_mul(0x2545_f491_4f6c_dd1d), 4_000);
    }
}

/// A rename the tree refuses (a missing destination directory, or a directory moved below
/// itself, which the namespace never journals) leaves it as it was: the directory it would
/// have moved is still linked where it was, in the index, and counted once.
#[test]
fn a_refused_rename_leaves_the_tree_whole() {
    let mut t = tree::Tree::new(0o755, 0);
    let mkdir = |path: &str| mkdir_op(path, 1, 1);
    for p in ["/a", "/a/b", "/a/b/c"] {
        t.apply(&mkdir(p)).unwrap();
    }
    let rename = |dst: &str| Op::Rename {
        src: "/a/b".into(),
        dst: dst.into(),
        mtime: 2,
        overwrite: false,
    };
    assert!(t.apply(&rename("/missing/b")).is_err());
    assert!(t.apply(&rename("/a/b/c/b")).is_err());
    t.check_arena();
    assert!(matches!(t.find("/a/b/c"), Some(tree::Found::Dir(_))));
    assert_eq!(t.root().tot.dirs, 4);
}

#[test]
fn renames_within_one_directory_keep_the_totals_above_it() {
    let mut ns = Namespace::new("hdfs", "supergroup", 1);
    let mut s = Summary::from_namespace(&ns, 0);
    let mkdir = |path: &str, id: u64| mkdir_op(path, id, 1);
    let file = |path: &str, id: u64| create_op(path, id, 1);
    let close = |path: &str, len: u64| Op::Close {
        path: path.into(),
        mtime: 2,
        len,
    };
    let rename = |src: &str, dst: &str, overwrite: bool, mtime: i64| Op::Rename {
        src: src.into(),
        dst: dst.into(),
        mtime,
        overwrite,
    };
    let ops = [
        mkdir("/a", 10),
        mkdir("/a/b", 11),
        mkdir("/a/b/d", 12),
        mkdir("/a/b/d/e", 13),
        file("/a/b/d/e/x", 14),
        close("/a/b/d/e/x", 5),
        file("/a/b/f._COPYING_", 15),
        close("/a/b/f._COPYING_", 7),
        file("/a/b/g", 16),
        close("/a/b/g", 11),
        // A file, as `hdfs dfs -put` finishes one.
        rename("/a/b/f._COPYING_", "/a/b/f", false, 3),
        // A file over another: the replaced one's bytes leave the totals above.
        rename("/a/b/f", "/a/b/g", true, 4),
        // A directory with a subtree: its index keys must follow its new name.
        rename("/a/b/d", "/a/b/d2", false, 5),
        file("/a/b/d2/e/y", 17),
        close("/a/b/d2/e/y", 13),
        mkdir("/a/b/d2/e/z", 18),
    ];
    for (i, op) in ops.iter().enumerate() {
        ns.apply(op).unwrap();
        s.apply(i as u64 + 1, op).unwrap();
        assert_matches(&ns, &s, &format!("after {op:?}"));
    }
    // Refused without a change: the source is missing, or the destination is taken.
    for op in [
        rename("/a/b/nothing", "/a/b/h", false, 6),
        rename("/a/b/g", "/a/b/d2", false, 6),
    ] {
        assert!(s.apply(ops.len() as u64 + 1, &op).is_err(), "{op:?}");
        assert_matches(&ns, &s, &format!("after refusing {op:?}"));
    }
    let b = s.get("/a/b").unwrap();
    assert_eq!((b.tot.files, b.tot.bytes), (3, 7 + 5 + 13));
    assert!(s.get("/a/b/d").is_none());
    assert_eq!(s.get("/a/b/d2/e").unwrap().tot.files, 2);
}

#[test]
fn the_summary_carries_on_after_a_checkpoint_round_trip() {
    let mut r = Rng(77);
    let mut ns = Namespace::new("hdfs", "supergroup", 1);
    let mut s = Summary::from_namespace(&ns, 0);
    let mut txid = 0;
    let mut made = Vec::new();
    for n in 0..8_000 {
        if n == 4_000 {
            s = codec::decode(&codec::encode(&s), "mem").unwrap();
        }
        let op = random_op(&mut r, &ns, &made, n);
        if plannable(&op) && ns.apply(&op).is_ok() {
            remember(&op, &mut made);
            txid += 1;
            s.apply(txid, &op).unwrap();
        }
    }
    assert_matches(&ns, &s, "after restart");
}

#[test]
fn gaps_and_replays_are_told_apart() {
    let mut s = Summary::empty(0o755);
    let mk = |p: &str| mkdir_op(p, 1, 5);
    s.apply(1, &mk("/a")).unwrap();
    s.apply(1, &mk("/a")).unwrap(); // replayed: skipped
    assert!(matches!(
        s.apply(3, &mk("/b")),
        Err(super::Diverged::Gap { txid: 3, after: 1 })
    ));
    assert!(s.apply(2, &mk("/a")).is_err(), "a record that does not fit");
    assert_eq!(s.get("/").unwrap().tot.dirs, 2);
}

#[test]
fn damaged_checkpoints_are_refused_with_the_reason() {
    let mut s = Summary::empty(0o755);
    s.apply(
        1,
        &Op::Mkdir {
            path: "/d".into(),
            id: 1,
            perm: 0o755,
            owner: "u".into(),
            group: "g".into(),
            mtime: 5,
        },
    )
    .unwrap();
    let good = codec::encode(&s);
    let mut bad = good.clone();
    bad[10] ^= 1;
    let e = codec::decode(&bad, "x").err().unwrap().to_string();
    assert!(e.contains("checksum"), "{e}");
    let e = codec::decode(&good[..8], "x").err().unwrap().to_string();
    assert!(e.contains("not a summary"), "{e}");
    assert_eq!(
        codec::decode(&good, "x")
            .unwrap()
            .get("/d")
            .unwrap()
            .tot
            .dirs,
        1
    );
}

#[test]
fn largest_children_sorted_by_bytes() {
    let mut ns = Namespace::new("hdfs", "supergroup", 1);
    let ops = [("/x", 10u64), ("/y", 3000), ("/z", 70)];
    for (i, (p, len)) in ops.iter().enumerate() {
        for op in [
            Op::Create {
                path: p.to_string(),
                id: 100 + i as u64,
                perm: 0o644,
                owner: "u".into(),
                group: "g".into(),
                mtime: 1,
                replication: 2,
                block_size: 1 << 20,
                client_name: "c".into(),
                client_machine: "m".into(),
            },
            Op::Close {
                path: p.to_string(),
                mtime: 2,
                len: *len,
            },
        ] {
            ns.apply(&op).unwrap();
        }
    }
    let s = Summary::from_namespace(&ns, 6);
    let top = s.largest_children("/", 2).unwrap();
    let names: Vec<_> = top
        .iter()
        .map(|c| (c.name.as_str(), c.bytes, c.raw))
        .collect();
    assert_eq!(names, [("y", 3000, 6000), ("z", 70, 140)]);
    assert_eq!(s.get("/").unwrap().tot.hist[bucket(3000)], 1);
}

#[test]
fn an_abandoned_block_gives_back_the_length_rule_of_the_namespace() {
    let mut ns = Namespace::new("hdfs", "supergroup", 1);
    let mut s = Summary::from_namespace(&ns, 0);
    let add = |id: u64, prev_len: u64| Op::AddBlock {
        path: "/w".into(),
        id,
        gs: 2_000 + id,
        prev_len,
    };
    let ops = [
        create_op("/w", 500, 1),
        add(1 << 30, 0),
        add((1 << 30) + 1, 1 << 20),
        Op::AbandonBlock {
            path: "/w".into(),
            id: (1 << 30) + 1,
        },
        // The client retries, reporting the first block's length again, a little longer.
        add((1 << 30) + 2, (1 << 20) + 5),
    ];
    for (i, op) in ops.iter().enumerate() {
        ns.apply(op).unwrap();
        s.apply(i as u64 + 1, op).unwrap();
        assert_matches(&ns, &s, &format!("after {op:?}"));
    }
    assert_eq!(s.get("/w").unwrap().tot.bytes, (1 << 20) + 5);
}

#[test]
fn a_sharded_summary_equals_the_single_one() {
    use super::shard::Sharded;
    for seed in [3u64, 99, 12345] {
        let mut r = Rng(seed);
        let mut ns = Namespace::new("hdfs", "supergroup", 1);
        let mut made = Vec::new();
        let mut ops = Vec::new();
        for n in 0..6_000 {
            let op = random_op(&mut r, &ns, &made, n);
            if plannable(&op) && ns.apply(&op).is_ok() {
                remember(&op, &mut made);
                ops.push(op);
            }
        }
        let mut sharded = Sharded::split(Summary::empty(0o755).tree, 3);
        // In uneven batches, so that parallel runs and spanning events interleave.
        for chunk in ops.chunks(701) {
            sharded.apply_all(chunk).unwrap();
        }
        for slot in all_dirs(&ns) {
            let path = ns.path_of(slot);
            assert_eq!(
                sharded.totals(&path),
                Some(exact(&ns, slot).0),
                "seed {seed}: {path}"
            );
        }
    }
}

#[test]
fn a_checkpoint_written_in_many_chunks_reads_back() {
    // Some 2.5 MB of checkpoint: several spills, each feeding the running CRC.
    let mut ns = Namespace::new("hdfs", "supergroup", 1);
    let mut s = Summary::from_namespace(&ns, 0);
    for i in 0..60_000u64 {
        let op = Op::Create {
            path: format!("/d{}/a-longish-file-name-{i:08}", i % 7),
            id: 20_000 + i,
            perm: 0o644,
            owner: "u".into(),
            group: "g".into(),
            mtime: i as i64,
            replication: 3,
            block_size: 1 << 20,
            client_name: "c".into(),
            client_machine: "m".into(),
        };
        if i < 7 {
            let dir = Op::Mkdir {
                path: format!("/d{i}"),
                id: 10_000 + i,
                perm: 0o755,
                owner: "u".into(),
                group: "g".into(),
                mtime: 0,
            };
            ns.apply(&dir).unwrap();
            s.apply(s.txid() + 1, &dir).unwrap();
        }
        ns.apply(&op).unwrap();
        s.apply(s.txid() + 1, &op).unwrap();
    }
    let bytes = codec::encode(&s);
    assert!(bytes.len() > 2 << 20, "{} bytes", bytes.len());
    let back = codec::decode(&bytes, "x").unwrap();
    assert_eq!(back.txid(), s.txid());
    assert_matches(&ns, &back, "after a multi-chunk checkpoint");
    let mut bad = bytes.clone();
    bad[bytes.len() / 2] ^= 1;
    let e = codec::decode(&bad, "x").err().unwrap().to_string();
    assert!(e.contains("checksum"), "{e}");
}
