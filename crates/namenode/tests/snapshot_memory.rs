//! What a snapshot costs in NameNode heap per inode changed after it, counted by a
//! counting allocator (heap bytes asked for, not RSS: the same on every machine). The
//! workload is the snapshot benchmark's (`bench/snapshot-vs-hdfs.sh`): one change in four
//! each a new file, a chmod, a rename within its directory and a delete, to files that
//! existed when the snapshot was taken; the same changes with no snapshot are the baseline.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use ferrite_namenode::namespace::{Caller, Namespace, Op};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call goes to `System` unchanged; the counter only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract for `l` is passed on.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: `p` came from `System` with this layout.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n as isize - l.size() as isize, Ordering::Relaxed);
        // SAFETY: as `dealloc`, and `n` is the caller's.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

const FILES: usize = 40_000;
const CHANGES: usize = 8_000;
const PER_DIR: usize = 1_000;

fn file(i: usize) -> String {
    format!("/b/g{}/f{i}", i / PER_DIR)
}

/// FILES closed empty files under /b (as the benchmark's tree), and /b/new.
fn tree() -> Namespace {
    let su = Caller::superuser("hdfs");
    let mut ns = Namespace::new("hdfs", "supergroup", 1);
    for d in (0..FILES / PER_DIR)
        .map(|g| format!("/b/g{g}"))
        .chain(["/b/new".into()])
    {
        let p = ns.plan_mkdirs(&su, &d, 0o755, true, 1).unwrap();
        ns.apply_planned(&p, |_, _| {});
    }
    for i in 0..FILES {
        create(&mut ns, &file(i), 1000 + i as u64);
    }
    ns
}

fn create(ns: &mut Namespace, path: &str, id: u64) {
    for op in [
        Op::Create {
            path: path.into(),
            id,
            perm: 0o644,
            owner: "hdfs".into(),
            group: "supergroup".into(),
            mtime: 2,
            replication: 3,
            block_size: 1 << 27,
            client_name: "c".into(),
            client_machine: "m".into(),
        },
        Op::Close {
            path: path.into(),
            mtime: 2,
            len: 0,
        },
    ] {
        ns.apply(&op).unwrap();
    }
}

/// The benchmark's changes; heap bytes they added.
fn change(ns: &mut Namespace) -> isize {
    let before = LIVE.load(Ordering::Relaxed);
    // Spread over the directories as the benchmark's clients spread them.
    let spread = |j: usize| (j % 40) * PER_DIR + j / 40;
    for j in 0..CHANGES {
        let i = spread(j);
        let op = match j % 4 {
            0 => {
                create(ns, &format!("/b/new/n{j}"), 10_000_000 + j as u64);
                continue;
            }
            1 => Op::SetPermission {
                path: file(i),
                perm: 0o600,
            },
            2 => Op::Rename {
                src: file(i),
                dst: format!("/b/g{}/r{i}", i / PER_DIR),
                mtime: 3,
                overwrite: false,
            },
            _ => Op::Delete {
                path: file(i),
                mtime: 3,
            },
        };
        ns.apply(&op).unwrap();
    }
    LIVE.load(Ordering::Relaxed) - before
}

#[test]
fn heap_per_changed_inode_under_a_snapshot() {
    let mut plain = tree();
    let without = change(&mut plain);
    drop(plain);

    let su = Caller::superuser("hdfs");
    let mut ns = tree();
    for op in ns.plan_allow_snapshot("/b").unwrap() {
        ns.apply(&op).unwrap();
    }
    let (_, ops) = ns.plan_create_snapshot(&su, "/b", Some("s"), 3).unwrap();
    for op in ops {
        ns.apply(&op).unwrap();
    }
    let with = change(&mut ns);
    let per = (with - without) / CHANGES as isize;
    eprintln!(
        "heap per change: {} without a snapshot, {} with: {per} per changed inode",
        without / CHANGES as isize,
        with / CHANGES as isize
    );
    // HDFS 3.4.1's live heap grew ~247 bytes per changed inode in the same workload
    // (BENCHMARKS.md); ours was 744 before versions stopped reserving room for four,
    // boxed what few have, and deletes stopped saving a version of what they keep.
    assert!(per <= 230, "{per} heap bytes per changed inode");
}
