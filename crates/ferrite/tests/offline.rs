//! `ferrite oiv` and `ferrite oev` on the files a real cluster wrote: a NameNode and three
//! DataNodes take writes through Ferrite's client, an image is saved, more edits follow,
//! and the viewers read the image and the journal straight from the name directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

use common::*;
use ferrite_client::FileSystem;

fn ferrite(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrite"))
        .args(args)
        .env("FERRITE_LOG", "warn")
        .output()
        .expect("run ferrite")
}

fn stdout_of(args: &[&str]) -> String {
    let out = ferrite(args);
    assert!(
        out.status.success(),
        "ferrite {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Files in `dir` whose names start with `prefix`, sorted.
fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_viewers_read_what_a_running_cluster_wrote() {
    let root = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(root.path(), 0);
    let fs = FileSystem::connect(&cluster.url).await.unwrap();
    fs.mkdirs("/data/in dir", 0o750, true).await.unwrap();
    put(
        &fs,
        "/data/in dir/three-blocks",
        &data(2 * BLOCK as usize + 5, 1),
    )
    .await;
    fs.set_permission("/data", 0o1777).await.unwrap();
    stdout_of(&["admin", "--fs", &cluster.url, "save-namespace"]);
    let name_dir = root.path().join("nn").join("name");
    // As in HDFS, a save ends the journal segment first: the image's txid is the last of a
    // finalized segment, and the next segment starts right after it.
    let image = named(&name_dir, "fsimage_").pop().expect("an image");
    let file_name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    let image_txid: u64 = file_name(&image)["fsimage_".len()..].parse().unwrap();
    let finalized = named(&name_dir, "edits_0")
        .pop()
        .unwrap_or_else(|| panic!("no finalized segment in {:?}", named(&name_dir, "")));
    assert!(
        file_name(&finalized).ends_with(&format!("-{image_txid:019}")),
        "{finalized:?} ends at the image's txid {image_txid}"
    );
    let next = named(&name_dir, "edits_inprogress_");
    assert_eq!(
        next.iter().map(|p| file_name(p)).collect::<Vec<_>>(),
        [format!("edits_inprogress_{:019}", image_txid + 1)]
    );
    // After the image: only the journal holds these.
    fs.rename("/data/in dir/three-blocks", "/data/moved")
        .await
        .unwrap();
    fs.delete("/data/in dir", true).await.unwrap();

    // The image: HDFS's Delimited rows.
    let rows = stdout_of(&["oiv", "-i", image.to_str().unwrap()]);
    let lines: Vec<&str> = rows.lines().collect();
    assert!(
        lines[0].starts_with("Path\tReplication\tModificationTime\t"),
        "{rows}"
    );
    let file: Vec<&str> = lines
        .iter()
        .find(|l| l.starts_with("/data/in dir/three-blocks\t"))
        .unwrap_or_else(|| panic!("no file row in:\n{rows}"))
        .split('\t')
        .collect();
    let user = fs.user().to_string();
    assert_eq!(file[1], "3", "replication");
    assert_eq!(file[4], BLOCK.to_string(), "preferred block size");
    assert_eq!(file[5], "3", "blocks");
    assert_eq!(file[6], (2 * BLOCK + 5).to_string(), "length");
    assert_eq!(&file[9..], ["-rw-r--r--", &user, "supergroup"]);
    let dir = lines
        .iter()
        .find(|l| l.starts_with("/data\t"))
        .unwrap_or_else(|| panic!("no /data row in:\n{rows}"));
    assert!(dir.contains("\t-1\t-1\tdrwxrwxrwt\t"), "{dir}");
    assert!(
        !rows.contains("/data/moved"),
        "the image predates the rename"
    );

    // The journal: every edit since the image, in the segment being written.
    let live = named(&name_dir, "edits_inprogress_")
        .pop()
        .expect("a live segment");
    let edits = stdout_of(&["oev", "-i", live.to_str().unwrap()]);
    assert!(
        edits.contains(r#"OP_RENAME src="/data/in dir/three-blocks" dst=/data/moved "#),
        "{edits}"
    );
    assert!(
        edits.contains(r#"OP_DELETE path="/data/in dir" "#),
        "{edits}"
    );
    // The segment the save finalized: counts per kind of record.
    let mut stats = String::new();
    for seg in named(&name_dir, "edits_0") {
        stats += &stdout_of(&["oev", "-p", "stats", "-i", seg.to_str().unwrap()]);
    }
    for kind in [
        "OP_MKDIR",
        "OP_ADD ",
        "OP_ADD_BLOCK",
        "OP_CLOSE",
        "OP_SET_PERMISSIONS",
    ] {
        assert!(stats.contains(kind), "{kind} in:\n{stats}");
    }

    // A copy of a finalized segment damaged in the middle: reported with its offset and
    // what lies past it, and a failing exit status; the NameNode's files are untouched.
    let seg = named(&name_dir, "edits_0")
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x5a;
    let damaged = root.path().join("damaged");
    std::fs::write(&damaged, &bytes).unwrap();
    let out = ferrite(&["oev", "-i", damaged.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(report.contains("# DAMAGED at offset "), "{report}");
    assert!(report.contains("# past the damage"), "{report}");
    assert!(!ferrite(&["oiv", "-i", damaged.to_str().unwrap()])
        .status
        .success());
    cluster.stop();
}

/// A NameNode's data folder under `root` whose only finalized segment holds `/d1`..`/d8`
/// (txids 1..8) with the fourth record damaged in its middle, found where `oev` says it
/// is. Returns the `namenode` arguments for that folder (plus `extra`), the segment, and
/// the damage's offset.
async fn damaged_journal(root: &Path) -> (impl Fn(&[&str]) -> Vec<String>, PathBuf, usize) {
    let data = root.join("nn");
    let args = move |extra: &[&str]| -> Vec<String> {
        let mut a = vec!["namenode", "--port", "0", "--data", data.to_str().unwrap()];
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect()
    };
    let nn = spawn(&args(&[]));
    let fs = FileSystem::connect(&nn.ready).await.unwrap();
    for i in 1..=8 {
        assert!(fs.mkdirs(&format!("/d{i}"), 0o755, false).await.unwrap());
    }
    stdout_of(&["admin", "--fs", &nn.ready, "roll-edits"]);
    drop(fs);
    drop(nn); // kill -9: no image at shutdown, so start-up must replay the segment
    let seg = named(&root.join("nn/name"), "edits_0")
        .pop()
        .expect("a finalized segment");
    let listing = stdout_of(&["oev", "-i", seg.to_str().unwrap()]);
    let at: usize = listing
        .lines()
        .find_map(|l| l.strip_prefix("txid=4 offset="))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no txid 4 in:\n{listing}"));
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[at + 20] ^= 0x5a;
    std::fs::write(&seg, &bytes).unwrap();
    (args, seg, at)
}

/// The operator's way through a journal damaged in the middle, on real processes: start-up
/// refuses and names both tools; `oev` shows the damage and what lies past it; one start
/// with `--recover` keeps the edits before it and sets the segment aside; after that the
/// NameNode starts plainly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_journal_is_shown_then_recovered_from() {
    let root = tempfile::tempdir().unwrap();
    let (args, seg, at) = damaged_journal(root.path()).await;
    let name_dir = root.path().join("nn/name");

    let refused = Command::new(env!("CARGO_BIN_EXE_ferrite"))
        .args(args(&[]))
        .env("FERRITE_LOG", "warn")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        why.contains(&format!("offset {at}"))
            && why.contains("ferrite oev")
            && why.contains("--recover"),
        "{why}"
    );
    let out = ferrite(&["oev", "-i", seg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(
        report.contains(&format!("# DAMAGED at offset {at}: ")),
        "{report}"
    );
    assert!(
        report.contains("# past the damage: 4 records, txids 5..8"),
        "{report}"
    );

    let nn = spawn(&args(&["--recover"]));
    let fs = FileSystem::connect(&nn.ready).await.unwrap();
    for i in 1..=8 {
        let kept = fs.status(&format!("/d{i}")).await.unwrap().is_some();
        assert_eq!(kept, i <= 3, "/d{i}");
    }
    assert!(fs.mkdirs("/after", 0o755, false).await.unwrap());
    let files: Vec<String> = named(&name_dir, "edits_")
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let damaged = seg.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        files.contains(&format!("{damaged}.abandoned")) && !files.contains(&damaged),
        "the damaged segment is set aside under another name, not deleted: {files:?}"
    );
    drop(fs);
    drop(nn);
    let nn = spawn(&args(&[]));
    let fs = FileSystem::connect(&nn.ready).await.unwrap();
    assert!(fs.status("/after").await.unwrap().is_some());
    assert!(fs.status("/d3").await.unwrap().is_some());
    assert!(fs.status("/d4").await.unwrap().is_none());
}

/// `--recover skip` (HDFS's "continue"): every edit still readable past the damage is
/// replayed, the damaged one is lost, an image holds the result, and the damaged segment is
/// set aside; after that the NameNode starts plainly with the same namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_can_skip_the_damage_and_keep_what_follows_it() {
    let root = tempfile::tempdir().unwrap();
    let (args, seg, _) = damaged_journal(root.path()).await;
    let name_dir = root.path().join("nn/name");
    let kept = |i: u32| i != 4;

    let nn = spawn(&args(&["--recover", "skip"]));
    let fs = FileSystem::connect(&nn.ready).await.unwrap();
    for i in 1..=8 {
        let there = fs.status(&format!("/d{i}")).await.unwrap().is_some();
        assert_eq!(there, kept(i), "/d{i}");
    }
    assert!(fs.mkdirs("/after", 0o755, false).await.unwrap());
    let damaged = seg.file_name().unwrap().to_string_lossy().into_owned();
    let files: Vec<String> = named(&name_dir, "")
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        files.contains(&format!("{damaged}.abandoned")) && !files.contains(&damaged),
        "the damaged segment is set aside under another name, not deleted: {files:?}"
    );
    assert!(
        files.contains(&format!("fsimage_{:019}", 8)),
        "an image at the last txid read holds the result: {files:?}"
    );
    drop(fs);
    drop(nn);
    let nn = spawn(&args(&[]));
    let fs = FileSystem::connect(&nn.ready).await.unwrap();
    for i in 1..=8 {
        let there = fs.status(&format!("/d{i}")).await.unwrap().is_some();
        assert_eq!(there, kept(i), "/d{i} after a plain restart");
    }
    assert!(fs.status("/after").await.unwrap().is_some());
    drop(fs);
    drop(nn);
    // On a sound journal, `--recover skip` is a plain start: nothing else is set aside.
    let abandoned = || {
        named(&name_dir, "")
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "abandoned"))
            .count()
    };
    let before = abandoned();
    let nn = spawn(&args(&["--recover", "skip"]));
    let fs = FileSystem::connect(&nn.ready).await.unwrap();
    assert!(fs.status("/after").await.unwrap().is_some());
    assert!(fs.status("/d5").await.unwrap().is_some());
    assert_eq!(abandoned(), before);
}
