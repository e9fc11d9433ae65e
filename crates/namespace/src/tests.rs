//! State-machine tests of the namespace: no sockets, no clocks.

use super::plan::CreateArgs;
use super::*;

fn su() -> Caller {
    Caller::superuser("hdfs")
}

fn user(name: &str) -> Caller {
    Caller {
        user: name.into(),
        groups: vec![name.to_string()].into(),
        superuser: false,
        checks_enabled: true,
    }
}

/// Plans and applies, recording every op in `log` (as the journal would).
struct Harness {
    ns: Namespace,
    log: Vec<Op>,
    now: i64,
}

impl Harness {
    fn new() -> Self {
        Harness {
            ns: Namespace::new("hdfs", "supergroup", 1),
            log: Vec::new(),
            now: 1000,
        }
    }

    /// Applies planned records as the NameNode does: the first where its plan found it
    /// (which debug builds check against a walk), then the journal replays them by path.
    fn commit(&mut self, planned: impl Into<Planned>) {
        self.commit_made(planned)
            .expect("the plan does not end with an error");
    }

    /// [`commit`](Self::commit) for a plan that may make something and then fail (see
    /// `Planned::then_fail`): returns that error.
    fn commit_made(&mut self, planned: impl Into<Planned>) -> Result<(), FsError> {
        let mut planned = planned.into();
        let then_fail = planned.then_fail.take();
        let applied = self.ns.apply_planned(&planned, |_, _| {});
        assert!(applied.failed.is_none(), "planned op applies: {applied:?}");
        self.log.extend(planned.ops);
        self.now += 1;
        then_fail.map_or(Ok(()), Err)
    }

    fn mkdirs(&mut self, c: &Caller, p: &str) -> Result<(), FsError> {
        let ops = self.ns.plan_mkdirs(c, p, 0o755, true, self.now)?;
        self.commit_made(ops)
    }

    fn create(&mut self, c: &Caller, p: &str, overwrite: bool) -> Result<(), FsError> {
        let args = CreateArgs {
            src: p,
            masked: 0o644,
            unmasked: None,
            client_name: "cli",
            client_machine: "127.0.0.1",
            create: true,
            overwrite,
            create_parent: true,
            replication: 3,
            block_size: 128 << 20,
        };
        let ops = self.ns.plan_create(c, &args, self.now)?;
        self.commit_made(ops)
    }

    /// A legacy rename by the superuser that must succeed.
    fn rename(&mut self, src: &str, dst: &str) {
        let ops = self
            .ns
            .plan_rename(&su(), src, dst, self.now)
            .unwrap()
            .unwrap();
        self.commit(ops);
    }

    /// A delete by the superuser that must find its path.
    fn delete(&mut self, path: &str, recursive: bool) {
        let ops = self
            .ns
            .plan_delete(&su(), path, recursive, self.now)
            .unwrap()
            .unwrap();
        self.commit(ops);
    }

    fn touch(&mut self, c: &Caller, p: &str) {
        self.create(c, p, false).unwrap();
        let (ok, ops) = self
            .ns
            .plan_complete(p, "cli", 0, None, self.now, |_| true)
            .unwrap();
        assert!(ok);
        self.commit(ops);
    }

    fn replayed(&self) -> Namespace {
        let mut ns = Namespace::new("hdfs", "supergroup", 1);
        for op in &self.log {
            ns.apply(op).expect("journal replays");
        }
        ns
    }
}

#[test]
fn mkdirs_creates_parents_and_is_idempotent() {
    let mut h = Harness::new();
    h.mkdirs(&su(), "/a/b/c").unwrap();
    let st = h.ns.get_file_info(&su(), "/a/b/c").unwrap().unwrap();
    assert!(st.is_dir);
    assert_eq!(st.perm, 0o755);
    assert_eq!(
        h.ns.get_file_info(&su(), "/a").unwrap().unwrap().perm,
        0o755
    );
    let before = h.log.len();
    h.mkdirs(&su(), "/a/b/c").unwrap();
    assert_eq!(
        h.log.len(),
        before,
        "mkdirs of an existing dir records nothing"
    );
    assert!(matches!(
        h.ns.plan_mkdirs(&su(), "/x/y", 0o755, false, 0),
        Err(e) if e.is_not_found()
    ));
}

#[test]
fn create_rules() {
    let mut h = Harness::new();
    h.touch(&su(), "/d/f");
    assert!(matches!(
        h.create(&su(), "/d/f", false),
        Err(FsError::AlreadyExists(_))
    ));
    assert!(matches!(
        h.create(&su(), "/d", true),
        Err(FsError::AlreadyExists(_))
    ));
    assert!(matches!(
        h.create(&su(), "/d/f/g", true),
        Err(FsError::ParentNotDirectory(_))
    ));
    assert!(matches!(
        h.ns.plan_mkdirs(&su(), "/d/f", 0o755, true, 0),
        Err(FsError::AlreadyExists(_))
    ));
    let old_id = h.ns.get_file_info(&su(), "/d/f").unwrap().unwrap().file_id;
    h.create(&su(), "/d/f", true).unwrap();
    let st = h.ns.get_file_info(&su(), "/d/f").unwrap().unwrap();
    assert_ne!(st.file_id, old_id, "overwrite makes a new inode");
    assert!(st.under_construction);
    assert!(matches!(
        h.create(&su(), "/d/f", true),
        Err(FsError::LeaseConflict(_))
    ));
    assert!(matches!(
        h.ns.plan_complete("/d/f", "other", 0, None, 0, |_| true),
        Err(e) if e.is_lease_expired()
    ));
    // Implicit parent of a 0644 file gets u+wx, as in HDFS.
    h.create(&su(), "/p/q/f", false).unwrap();
    assert_eq!(
        h.ns.get_file_info(&su(), "/p/q").unwrap().unwrap().perm,
        0o744
    );
}

#[test]
fn rename_legacy_and_rename2() {
    let mut h = Harness::new();
    h.touch(&su(), "/a/f");
    h.mkdirs(&su(), "/b").unwrap();
    // Legacy: into an existing directory.
    h.rename("/a/f", "/b");
    assert!(h.ns.get_file_info(&su(), "/b/f").unwrap().is_some());
    // Legacy: false for a missing source or a missing destination parent.
    assert!(h.ns.plan_rename(&su(), "/nope", "/x", 0).unwrap().is_none());
    assert!(h
        .ns
        .plan_rename(&su(), "/b/f", "/zz/y", 0)
        .unwrap()
        .is_none());
    assert!(matches!(
        h.ns.plan_rename(&su(), "/b", "/b/c", 0),
        Err(FsError::Io(_))
    ));
    // rename2 typed errors.
    h.touch(&su(), "/b/g");
    assert!(matches!(
        h.ns.plan_rename2(&su(), "/b/f", "/b/g", false, 0),
        Err(FsError::AlreadyExists(_))
    ));
    assert!(matches!(
        h.ns.plan_rename2(&su(), "/missing", "/b/x", false, 0),
        Err(e) if e.is_not_found()
    ));
    assert!(matches!(
        h.ns.plan_rename2(&su(), "/b/f", "/no/x", false, 0),
        Err(e) if e.is_not_found()
    ));
    assert!(matches!(
        h.ns.plan_rename2(&su(), "/b/f", "/b", true, 0),
        Err(FsError::AlreadyExists(_)) | Err(FsError::Io(_))
    ));
    let ops =
        h.ns.plan_rename2(&su(), "/b/f", "/b/g", true, h.now)
            .unwrap();
    h.commit(ops);
    assert!(h.ns.get_file_info(&su(), "/b/f").unwrap().is_none());
    assert_eq!(h.ns.file_count(), 1);
}

#[test]
fn rename_legacy_within_a_directory() {
    let mut h = Harness::new();
    h.touch(&su(), "/b/f");
    h.touch(&su(), "/b/g");
    // False onto an existing file.
    assert!(h
        .ns
        .plan_rename(&su(), "/b/f", "/b/g", 0)
        .unwrap()
        .is_none());
    // A new name in the same directory.
    h.rename("/b/f", "/b/f2");
    assert!(h.ns.get_file_info(&su(), "/b/f2").unwrap().is_some());
    assert!(h.ns.get_file_info(&su(), "/b/f").unwrap().is_none());
    // False into a directory that already holds the name.
    h.touch(&su(), "/a/f2");
    assert!(h.ns.plan_rename(&su(), "/a/f2", "/b", 0).unwrap().is_none());
    // A destination below a file: as before, the walk's error.
    assert!(matches!(
        h.ns.plan_rename(&su(), "/b/f2", "/b/g/x", 0),
        Err(FsError::ParentNotDirectory(_))
    ));
    assert_eq!(h.ns.file_count(), 3);
}

#[test]
fn delete_rules() {
    let mut h = Harness::new();
    h.touch(&su(), "/d/e/f");
    assert!(matches!(
        h.ns.plan_delete(&su(), "/d", false, 0),
        Err(FsError::NotEmpty(_))
    ));
    assert!(h
        .ns
        .plan_delete(&su(), "/nothing", true, 0)
        .unwrap()
        .is_none());
    assert!(h.ns.plan_delete(&su(), "/", true, 0).unwrap().is_none());
    h.delete("/d", true);
    assert_eq!(
        (h.ns.file_count(), h.ns.dir_count(), h.ns.inode_count()),
        (0, 1, 1)
    );
}

#[test]
fn permissions_are_enforced_for_other_users() {
    let mut h = Harness::new();
    h.mkdirs(&su(), "/private").unwrap();
    h.commit(h.ns.plan_set_permission(&su(), "/private", 0o700).unwrap());
    let alice = user("alice");
    let e =
        h.ns.plan_mkdirs(&alice, "/private/x", 0o755, true, 0)
            .unwrap_err();
    assert!(
        e.is_access_denied() && e.to_string().contains("user=alice, access=EXECUTE"),
        "{e}"
    );
    assert!(matches!(
        h.ns.plan_mkdirs(&alice, "/x", 0o755, true, 0),
        Err(e) if e.is_access_denied()
    ));
    // A directory alice owns is hers to use.
    h.commit(h.ns.plan_mkdirs(&su(), "/home", 0o755, true, 0).unwrap());
    h.commit(
        h.ns.plan_set_owner(&su(), "/home", Some("alice"), None)
            .unwrap(),
    );
    h.mkdirs(&alice, "/home/a").unwrap();
    assert!(matches!(
        h.ns.plan_set_owner(&alice, "/home/a", Some("bob"), None),
        Err(e) if e.is_access_denied()
    ));
    assert!(matches!(
        h.ns.plan_set_permission(&user("bob"), "/home/a", 0o777),
        Err(e) if e.is_access_denied()
    ));
    // Sticky bit: bob may not remove alice's entry from a shared 1777 directory.
    h.commit(h.ns.plan_mkdirs(&su(), "/tmp", 0o777, true, 0).unwrap());
    h.commit(h.ns.plan_set_permission(&su(), "/tmp", 0o1777).unwrap());
    h.touch(&alice, "/tmp/a");
    assert!(matches!(
        h.ns.plan_delete(&user("bob"), "/tmp/a", false, 0),
        Err(e) if e.is_access_denied()
    ));
    assert!(h
        .ns
        .plan_delete(&alice, "/tmp/a", false, 0)
        .unwrap()
        .is_some());
}

#[test]
fn listing_pages_in_name_order() {
    let mut h = Harness::new();
    // Half added in name order (each goes after the last entry), half in reverse (each
    // goes in between): both ways of finding an entry's place.
    let evens = (0..2500).step_by(2);
    let odds = (1..2500).step_by(2).rev();
    for i in evens.chain(odds) {
        h.touch(&su(), &format!("/big/f{i:05}"));
    }
    let mut after = Vec::new();
    let mut seen = Vec::new();
    loop {
        let page = h.ns.list(&su(), "/big", &after, 1000).unwrap().unwrap();
        assert!(page.entries.len() <= 1000);
        after = page.entries.last().unwrap().name.clone();
        seen.extend(page.entries.into_iter().map(|e| e.name));
        if page.remaining == 0 {
            break;
        }
    }
    assert_eq!(seen.len(), 2500);
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    assert!(h.ns.list(&su(), "/nope", b"", 10).unwrap().is_none());
    let file = h.ns.list(&su(), "/big/f00001", b"", 10).unwrap().unwrap();
    assert_eq!(file.entries.len(), 1);
    assert!(file.entries[0].name.is_empty());
}

/// A directory big enough to be kept in runs (past 8,192 entries), filled in scrambled
/// order, thinned by deletes and renames within it, then shrunk back: listings stay in
/// name order, every name resolves, and the journal and the image rebuild it exactly.
#[test]
fn a_big_directory_lists_resolves_and_replays_through_growth_and_shrinkage() {
    let mut h = Harness::new();
    let n = 20_000u64;
    let name = |i: u64| format!("/big/f{:06}", (i * 7919) % n);
    for i in 0..n {
        h.create(&su(), &name(i), false).unwrap();
    }
    let list_all = |ns: &Namespace| {
        let mut after = Vec::new();
        let mut seen = Vec::new();
        loop {
            let page = ns.list(&su(), "/big", &after, 1000).unwrap().unwrap();
            let Some(last) = page.entries.last() else {
                break;
            };
            after = last.name.clone();
            seen.extend(page.entries.into_iter().map(|e| e.name));
            if page.remaining == 0 {
                break;
            }
        }
        seen
    };
    let seen = list_all(&h.ns);
    assert_eq!(seen.len(), n as usize);
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    for i in 0..n {
        let p = name(i);
        if i % 3 == 0 {
            h.delete(&p, false);
        } else if i % 3 == 1 {
            let to = p.replace("/f", "/g");
            h.rename(&p, &to);
        }
    }
    let seen = list_all(&h.ns);
    assert_eq!(seen.len(), (n - n.div_ceil(3)) as usize);
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    for i in 0..n {
        let p = name(i);
        let want = match i % 3 {
            0 => None,
            1 => Some(p.replace("/f", "/g")),
            _ => Some(p.clone()),
        };
        assert_eq!(h.ns.existing(&p).is_ok(), want.as_deref() == Some(&p));
        if let Some(w) = want {
            assert!(h.ns.existing(&w).is_ok(), "{w}");
        }
    }
    let (image, _) = Namespace::decode_image(&h.ns.encode_image(1)).unwrap();
    assert_eq!(image.dump(), h.ns.dump());
    assert_eq!(list_all(&image), seen);
    // Down to a handful: back to one vector, still in order.
    for i in 30..n {
        let p = match i % 3 {
            0 => continue,
            1 => name(i).replace("/f", "/g"),
            _ => name(i),
        };
        h.delete(&p, false);
    }
    let left = list_all(&h.ns);
    assert_eq!(left.len(), 20);
    assert!(left.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(h.replayed().dump(), h.ns.dump());
}

/// `dfs.namenode.fs-limits.max-directory-items`: what adds an entry to a full directory
/// fails with HDFS's message; what adds none (an overwrite, a rename within it) does not;
/// and replay does not check, so a journal written under a higher limit still loads.
#[test]
fn a_full_directory_refuses_new_entries_but_not_replacements() {
    let mut h = Harness::new();
    h.ns.set_limits(Limits {
        dir_items: 3,
        ..Limits::default()
    });
    for f in ["a", "b"] {
        h.touch(&su(), &format!("/full/{f}"));
    }
    h.mkdirs(&su(), "/full/sub").unwrap();
    h.touch(&su(), "/elsewhere/f");
    let full = |r: Result<(), FsError>| match r {
        Err(e @ FsError::DirectoryFull { .. }) => {
            assert_eq!(
                e.to_string(),
                "The directory item limit of /full is exceeded: limit=3 items=3"
            );
        }
        other => panic!("expected DirectoryFull, got {other:?}"),
    };
    full(h.create(&su(), "/full/c", false));
    full(h.mkdirs(&su(), "/full/d/e"));
    full(
        h.ns.plan_rename(&su(), "/elsewhere/f", "/full/f", h.now)
            .map(|_| ()),
    );
    full(
        h.ns.plan_rename(&su(), "/elsewhere/f", "/full", h.now)
            .map(|_| ()),
    );
    full(
        h.ns.plan_rename2(&su(), "/elsewhere/f", "/full/f", false, h.now)
            .map(|_| ()),
    );
    // Creating under a new directory checks only the directory that exists.
    h.create(&su(), "/full/sub/x/y", false).unwrap();
    // No new entry: an overwrite, renames within the directory, a replacing rename2.
    h.create(&su(), "/full/a", true).unwrap();
    h.rename("/full/a", "/full/a2");
    let ops =
        h.ns.plan_rename2(&su(), "/elsewhere/f", "/full/b", true, h.now)
            .unwrap();
    h.commit(ops);
    // Room again after a delete.
    h.delete("/full/b", false);
    h.create(&su(), "/full/c", false).unwrap();
    // The root is a directory like any other.
    h.ns.set_limits(Limits {
        dir_items: 2,
        ..Limits::default()
    });
    match h.mkdirs(&su(), "/third") {
        Err(e @ FsError::DirectoryFull { .. }) => {
            assert!(e.to_string().contains("limit of / is"), "{e}")
        }
        other => panic!("expected DirectoryFull, got {other:?}"),
    }
    let mut replay = Namespace::new("hdfs", "supergroup", 1);
    replay.set_limits(Limits {
        dir_items: 1,
        ..Limits::default()
    });
    for op in &h.log {
        replay.apply(op).expect("replay does not check the limit");
    }
    assert_eq!(replay.dump(), h.ns.dump());
}

/// A name over 255 bytes is refused where it would be added, with HDFS's exception, and
/// is simply not found where it is looked up.
#[test]
fn over_long_names_are_refused_when_added_and_absent_when_looked_up() {
    let mut h = Harness::new();
    h.touch(&su(), "/d/f");
    let long = "n".repeat(256);
    let too_long = |r: Result<(), FsError>, dir: &str| match r {
        Err(e @ FsError::ComponentTooLong { .. }) => {
            let m = e.to_string();
            assert!(
                m.ends_with(&format!(
                    "in directory {dir} is exceeded: limit=255 length=256"
                )),
                "{m}"
            )
        }
        other => panic!("expected ComponentTooLong, got {other:?}"),
    };
    too_long(h.create(&su(), &format!("/d/{long}"), false), "/d");
    too_long(
        h.create(&su(), &format!("/d/new/{long}/f"), false),
        "/d/new",
    );
    too_long(h.mkdirs(&su(), &format!("/d/{long}")), "/d");
    too_long(h.mkdirs(&su(), &format!("/d/m1/m2/{long}/x")), "/d/m1/m2");
    // As in HDFS, the directories made before the refused name stay.
    for made in ["/d/new", "/d/m1/m2"] {
        let st = h.ns.get_file_info(&su(), made).unwrap().expect(made);
        assert!(st.is_dir, "{made}");
    }
    // Nothing from the refused name on: /d/m1/m2 is empty.
    let below = h.ns.list(&su(), "/d/m1/m2", b"", 10).unwrap().unwrap();
    assert!(below.entries.is_empty());
    let renamed = |to: &str| h.ns.plan_rename(&su(), "/d/f", to, h.now).map(|_| ());
    too_long(renamed(&format!("/d/{long}")), "/d");
    let renamed2 =
        h.ns.plan_rename2(&su(), "/d/f", &format!("/{long}"), false, h.now);
    too_long(renamed2.map(|_| ()), "/");
    assert!(h
        .ns
        .get_file_info(&su(), &format!("/d/{long}"))
        .unwrap()
        .is_none());
    assert!(h
        .ns
        .get_file_info(&su(), &format!("/{long}/f"))
        .unwrap()
        .is_none());
    // 255 bytes is allowed.
    h.create(&su(), &format!("/d/{}", &long[1..]), false)
        .unwrap();
    // A lower configured limit: names that exist stay, renames within a directory are
    // checked too (HDFS checks the length on every rename), and replay does not check.
    h.ns.set_limits(Limits {
        component_len: 4,
        ..Limits::default()
    });
    match h.mkdirs(&su(), "/d/12345") {
        Err(e @ FsError::ComponentTooLong { .. }) => {
            let m = e.to_string();
            assert!(
                m.ends_with("in directory /d is exceeded: limit=4 length=5"),
                "{m}"
            )
        }
        other => panic!("expected ComponentTooLong, got {other:?}"),
    }
    assert!(matches!(
        h.ns.plan_rename(&su(), "/d/f", "/d/12345", h.now),
        Err(FsError::ComponentTooLong { .. })
    ));
    h.touch(&su(), "/d/1234");
    let mut replay = Namespace::new("hdfs", "supergroup", 1);
    replay.set_limits(Limits {
        component_len: 1,
        ..Limits::default()
    });
    for op in &h.log {
        replay
            .apply(op)
            .expect("replay does not check name lengths");
    }
    assert_eq!(replay.dump(), h.ns.dump());
}

#[test]
fn content_summary_counts_the_subtree() {
    let mut h = Harness::new();
    h.touch(&su(), "/s/a/1");
    h.touch(&su(), "/s/a/2");
    h.touch(&su(), "/s/b/3");
    let cs = h.ns.content_summary(&su(), "/s").unwrap();
    assert_eq!((cs.files, cs.dirs, cs.length), (3, 3, 0));
    assert!(matches!(
        h.ns.content_summary(&su(), "/none"),
        Err(e) if e.is_not_found()
    ));
}

#[test]
fn replaying_the_log_rebuilds_the_same_namespace() {
    let mut h = Harness::new();
    for i in 0..200 {
        h.touch(&su(), &format!("/r/d{}/f{i}", i % 7));
        if i % 5 == 0 {
            let ops =
                h.ns.plan_rename2(
                    &su(),
                    &format!("/r/d{}/f{i}", i % 7),
                    &format!("/r/moved{i}"),
                    false,
                    h.now,
                )
                .unwrap();
            h.commit(ops);
        }
        if i % 11 == 0 {
            if let Some(ops) =
                h.ns.plan_delete(&su(), &format!("/r/d{}", i % 7), true, h.now)
                    .unwrap()
            {
                h.commit(ops);
            }
        }
    }
    h.commit(
        h.ns.plan_set_owner(&su(), "/r", Some("alice"), Some("staff"))
            .unwrap(),
    );
    h.commit(h.ns.plan_set_times(&su(), "/r", Some(5), Some(6)).unwrap());
    h.commit(
        h.ns.plan_set_replication(&su(), "/r/moved0", 2)
            .unwrap()
            .unwrap(),
    );
    let replayed = h.replayed();
    assert_eq!(replayed.dump(), h.ns.dump());
    assert_eq!(replayed.next_inode_id(), h.ns.next_inode_id());
}

#[test]
fn names_move_in_steps_and_every_path_resolves_throughout() {
    let mut h = Harness::new();
    let long = "m".repeat(40);
    let path = |i: usize| format!("/d{}/{long}{i}", i % 16);
    let n = 40_000;
    // Applied as the journal replays them, and logged so that `replayed` has them too.
    let apply = |h: &mut Harness, op: Op| {
        h.ns.apply(&op).unwrap();
        h.log.push(op);
    };
    for i in 0..n {
        let op = Op::Create {
            path: path(i),
            id: 100_000 + i as u64,
            perm: 0o644,
            owner: "u".into(),
            group: "g".into(),
            mtime: 1,
            replication: 1,
            block_size: 1 << 20,
            client_name: "c".into(),
            client_machine: "m".into(),
        };
        if i < 16 {
            h.mkdirs(&su(), &format!("/d{i}")).unwrap();
        }
        apply(&mut h, op);
    }
    let resolves = |ns: &Namespace, i: usize, alive: bool| {
        assert_eq!(
            ns.get_file_info(&su(), &path(i)).unwrap().is_some(),
            alive,
            "{}",
            path(i)
        );
    };
    // Delete until more than half the names are garbage: the move starts.
    let mut deleted = 0;
    while h.ns.name_move.is_none() {
        let p = path(deleted);
        apply(&mut h, Op::Delete { path: p, mtime: 2 });
        deleted += 1;
    }
    assert!(deleted < n, "the move never started");
    // A few more changes, each moving a step, and names made meanwhile (a rename, new
    // files) in the new buffer: every path resolves while the move is half done.
    for j in 0..5 {
        let src = path(n - 1 - j);
        let dst = format!("{src}.r");
        let rename = Op::Rename {
            src,
            dst,
            mtime: 3,
            overwrite: false,
        };
        apply(&mut h, rename);
    }
    assert!(h.ns.name_move.is_some(), "the move is still under way");
    for i in (0..n - 5).step_by(7) {
        resolves(&h.ns, i, i >= deleted);
    }
    for j in 0..5 {
        let dst = format!("{}.r", path(n - 1 - j));
        assert!(h.ns.get_file_info(&su(), &dst).unwrap().is_some(), "{dst}");
    }
    // Through to the end of the move: the old buffer is gone, and nothing was lost.
    let before = h.ns.name_heap_bytes();
    let mut k = 0;
    while h.ns.name_move.is_some() {
        h.mkdirs(&su(), &format!("/x{k}")).unwrap();
        k += 1;
    }
    assert!(h.ns.name_heap_bytes() < before, "{before}");
    // The emptied buffer waits to be freed by whoever holds the lock, once released.
    let retired = h.ns.take_retired();
    assert!(retired.capacity() > 1 << 20, "{}", retired.capacity());
    assert!(h.ns.take_retired().is_empty());
    for i in 0..n - 5 {
        resolves(&h.ns, i, i >= deleted);
    }
    assert_eq!(h.replayed().dump(), h.ns.dump());
}

#[test]
fn names_are_compacted_after_heavy_churn() {
    let mut h = Harness::new();
    h.mkdirs(&su(), "/c").unwrap();
    let long = "n".repeat(200);
    for i in 0..12_000 {
        let p = format!("/c/{long}{i}");
        h.touch(&su(), &p);
        h.delete(&p, false);
    }
    assert!(
        h.ns.name_heap_bytes() < 2 << 20,
        "{}",
        h.ns.name_heap_bytes()
    );
    assert_eq!(h.replayed().dump(), h.ns.dump());
}

/// Two names in one small directory whose lookup tags collide: a lookup must not stop at
/// the first entry with the tag, and must find each of them and what lies below them.
#[test]
fn walks_find_names_whose_tags_collide() {
    let mut seen = std::collections::HashMap::new();
    let (a, b) = (0u32..)
        .map(|i| format!("c{i}"))
        .find_map(|n| {
            let t = children::tag(n.as_bytes());
            seen.insert(t, n.clone()).map(|earlier| (earlier, n))
        })
        .unwrap();
    let mut h = Harness::new();
    for name in [&a, &b] {
        h.mkdirs(&su(), &format!("/d/{name}/below")).unwrap();
    }
    for name in [&a, &b] {
        let comps = ["d", name.as_str(), "below"];
        let w = h.ns.walk(&comps).unwrap();
        assert_eq!(w.slots.len(), 4, "{name}: every component found");
        assert_eq!(h.ns.name(w.slots[2]), name.as_bytes());
        assert_eq!(h.ns.name(w.slots[3]), b"below");
    }
    // A missing name that shares the tag is not mistaken for the present one.
    h.ns.apply(&Op::Delete {
        path: format!("/d/{b}"),
        mtime: 1,
    })
    .unwrap();
    let comps = ["d", b.as_str()];
    assert_eq!(h.ns.walk(&comps).unwrap().slots.len(), 2, "{b} is gone");
}

/// A path that goes on past a file, as HDFS 3.4.1 answers it: the superuser (whom the
/// permission checker skips) finds nothing there, anyone else is refused by the traverse
/// check, and nobody may add a name there.
#[test]
fn a_path_past_a_file_is_missing_for_the_superuser_and_refused_for_others() {
    let mut h = Harness::new();
    h.create(&su(), "/d/f", false).unwrap();
    h.commit(vec![Op::SetPermission {
        path: "/d".into(),
        perm: 0o755,
    }]);
    let walk = h.ns.walk(&["d", "f", "x"]).unwrap();
    assert!(walk.target().is_none());
    assert_eq!(walk.not_dir.as_deref(), Some("/d/f (is not a directory)"));
    assert!(matches!(h.ns.get_file_info(&su(), "/d/f/x"), Ok(None)));
    assert!(matches!(
        h.ns.get_file_info(&user("alice"), "/d/f/x"),
        Err(FsError::ParentNotDirectory(m)) if m == "/d/f (is not a directory)"
    ));
    assert!(matches!(
        h.ns.plan_mkdirs(&su(), "/d/f/x", 0o755, true, 1),
        Err(FsError::ParentNotDirectory(_))
    ));
    assert!(matches!(
        h.create(&su(), "/d/f/x", false),
        Err(FsError::ParentNotDirectory(_))
    ));
    assert!(matches!(
        h.ns.plan_rename(&su(), "/d", "/d/f/x", 1),
        Err(FsError::ParentNotDirectory(_))
    ));
}

/// Create answers with the status its record describes, computed after the turn; it must
/// be what reading the applied file gives: for a new file under new parents, for one that
/// overwrote another, and for mode bits outside what an inode keeps.
#[test]
fn a_create_records_status_is_the_applied_files_status() {
    let mut h = Harness::new();
    h.create(&su(), "/a/b/f", false).unwrap();
    h.touch(&su(), "/a/g");
    h.create(&su(), "/a/g", true).unwrap();
    let (id, now) = (h.ns.next_inode_id(), h.now);
    h.commit(vec![Op::Create {
        path: "/a/h".into(),
        id,
        perm: 0o7777,
        owner: "someone".into(),
        group: "somegroup".into(),
        mtime: now,
        replication: 2,
        block_size: 1 << 20,
        client_name: "cli".into(),
        client_machine: "127.0.0.1".into(),
    }]);
    let creates: Vec<&Op> = h
        .log
        .iter()
        .filter(|op| matches!(op, Op::Create { .. }))
        .collect();
    // The second create of /a/g replaced the first.
    assert_eq!(creates.len(), 4);
    for (op, path) in [
        (creates[0], "/a/b/f"),
        (creates[2], "/a/g"),
        (creates[3], "/a/h"),
    ] {
        let slot = h.ns.file_slot(&su(), path).unwrap();
        let applied = h.ns.status(slot, false);
        assert_eq!(query::created_status(op), Some(applied), "{path}");
    }
    assert_eq!(query::created_status(&h.log[0]), None, "a mkdir record");
}

/// As HDFS completes a file: the modification time moves to the close, the access time
/// stays the create's (`hdfs dfs -stat %x` after a put shows when it began).
#[test]
fn closing_a_file_moves_its_modification_time_only() {
    let mut h = Harness::new();
    h.create(&su(), "/f", false).unwrap();
    let created = h.now - 1;
    h.now += 60_000;
    let (ok, ops) =
        h.ns.plan_complete("/f", "cli", 0, None, h.now, |_| true)
            .unwrap();
    assert!(ok);
    h.commit(ops);
    for ns in [&h.ns, &h.replayed()] {
        let st = ns.status(ns.existing("/f").unwrap(), false);
        assert_eq!((st.atime, st.mtime), (created, created + 60_001));
    }
}

#[test]
fn an_open_moves_the_access_time_once_per_precision() {
    let mut h = Harness::new();
    h.create(&su(), "/f", false).unwrap();
    let created = h.now - 1;
    const HOUR: i64 = 3_600_000;
    let plan = |ns: &Namespace, who: &Caller, path: &str, now: i64, precision: i64| {
        ns.plan_access_time(who, path, now, precision as u64)
    };
    // Within the precision, or with access times off (0), nothing is recorded.
    assert!(plan(&h.ns, &su(), "/f", created + HOUR, HOUR)
        .unwrap()
        .is_empty());
    assert!(plan(&h.ns, &su(), "/f", created + 2 * HOUR, 0)
        .unwrap()
        .is_empty());
    // Past it, a reader without write permission records the new access time only.
    let later = created + HOUR + 1;
    let ops = plan(&h.ns, &user("reader"), "/f", later, HOUR).unwrap();
    assert_eq!(ops.len(), 1);
    h.commit(ops);
    for ns in [&h.ns, &h.replayed()] {
        let st = ns.status(ns.existing("/f").unwrap(), false);
        assert_eq!((st.atime, st.mtime), (later, created));
    }
    assert!(plan(&h.ns, &su(), "/f", later + HOUR, HOUR)
        .unwrap()
        .is_empty());
    assert!(matches!(
        plan(&h.ns, &su(), "/gone", later + 2 * HOUR, HOUR),
        Err(e) if e.is_not_found()
    ));
}

/// Append, truncate (on a boundary and inside a block, then the recovery's records),
/// concat, a write to a file renamed while open, and recovery records all replay to the
/// same namespace.
#[test]
fn replaying_appends_truncates_and_concats_rebuilds_the_same_namespace() {
    use super::blocks::{NewBlock, Previous};
    let mut h = Harness::new();
    // `n` files under /w of three 1 KiB-ish blocks each, written by "cli".
    let write = |h: &mut Harness, path: &str| {
        h.create(&su(), path, false).unwrap();
        let mut prev = None;
        for len in [128 << 20, 128 << 20, 700] {
            let (nb, planned) = h.ns.plan_add_block(path, "cli", 0, prev).unwrap();
            h.commit(planned);
            let NewBlock::Fresh(p) = nb else { panic!() };
            prev = Some(Previous {
                id: p.block.id,
                gs: p.block.gs,
                len,
            });
        }
        let (ok, planned) =
            h.ns.plan_complete(path, "cli", 0, prev, h.now, |_| true)
                .unwrap();
        assert!(ok);
        h.commit(planned);
    };
    for f in ["a", "b", "c", "d"] {
        write(&mut h, &format!("/w/{f}"));
    }
    let (a, planned) = h.ns.plan_append(&su(), "/w/a", "app", "m", false).unwrap();
    h.commit(planned);
    let last = a.last.expect("a partial last block");
    // The appender's file is renamed while open; its writes follow it.
    h.rename("/w/a", "/w/a2");
    let file_id = a.file_id;
    let (nb, planned) =
        h.ns.plan_add_block(
            "/w/a",
            "app",
            file_id,
            Some(Previous {
                id: last.block.id,
                gs: last.block.gs,
                len: 128 << 20,
            }),
        )
        .unwrap();
    h.commit(planned);
    let NewBlock::Fresh(p) = nb else { panic!() };
    let (ok, planned) =
        h.ns.plan_complete(
            "/w/a",
            "app",
            file_id,
            Some(Previous {
                id: p.block.id,
                gs: p.block.gs,
                len: 5,
            }),
            h.now,
            |_| true,
        )
        .unwrap();
    assert!(ok);
    h.commit(planned);
    assert_eq!(
        h.ns.status(h.ns.existing("/w/a2").unwrap(), false).len,
        3 * (128 << 20) + 5
    );
    let (t, planned) =
        h.ns.plan_truncate(&su(), "/w/b", 128 << 20, "tr", "m", h.now)
            .unwrap();
    assert!(t.recover.is_none());
    h.commit(planned);
    let (t, planned) =
        h.ns.plan_truncate(&su(), "/w/c", 1000, "tr", "m", h.now)
            .unwrap();
    let (block, kept) = t.recover.unwrap();
    h.commit(planned);
    let gs = h.ns.next_gs();
    let path = "/w/c".to_string();
    h.commit(vec![
        Op::SetGenerationStamp { gs },
        Op::UpdateLastBlock {
            path: path.clone(),
            id: block,
            gs,
            len: kept,
        },
        Op::Close {
            path,
            mtime: h.now,
            len: 1000,
        },
    ]);
    let planned =
        h.ns.plan_concat(&su(), "/w/b", &["/w/c".into(), "/w/d".into()], h.now)
            .unwrap();
    h.commit(planned);
    assert_eq!(
        h.ns.status(h.ns.existing("/w/b").unwrap(), false).len,
        (128 << 20) + 1000 + 2 * (128 << 20) + 700
    );
    let replayed = h.replayed();
    assert_eq!(replayed.dump(), h.ns.dump());
    assert_eq!(replayed.next_gs(), h.ns.next_gs());
}

/// Start-up safe mode counts complete blocks: an open file's last block is not one.
#[test]
fn complete_blocks_leave_out_the_last_block_of_each_open_file() {
    use super::blocks::{NewBlock, Previous};
    let mut h = Harness::new();
    let add = |h: &mut Harness, path: &str, prev: Option<Previous>| {
        let (nb, planned) = h.ns.plan_add_block(path, "cli", 0, prev).unwrap();
        h.commit(planned);
        let NewBlock::Fresh(p) = nb else { panic!() };
        Previous {
            id: p.block.id,
            gs: p.block.gs,
            len: 1024,
        }
    };
    h.create(&su(), "/open", false).unwrap();
    let first = add(&mut h, "/open", None);
    add(&mut h, "/open", Some(first));
    h.create(&su(), "/empty-open", false).unwrap();
    h.create(&su(), "/closed", false).unwrap();
    let only = add(&mut h, "/closed", None);
    let (ok, planned) =
        h.ns.plan_complete("/closed", "cli", 0, Some(only), h.now, |_| true)
            .unwrap();
    assert!(ok);
    h.commit(planned);
    assert_eq!(h.ns.block_count(), 3);
    // /open's first block and /closed's block; /empty-open has none.
    assert_eq!(h.ns.complete_block_count(), 2);
}
