//! In-process NameNode benchmarks: the real NameNode (journal on local disk, group commit)
//! driven through its RPC methods without sockets; the disk's fdatasync rate; and restart
//! time after a large journal.

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrite_namenode::journal::JournalMetrics;
use ferrite_namenode::server::load_storage;
use ferrite_namenode::service::{NameNodeService, Operation};
use ferrite_namenode::{Config, NameNode, NameNodeHandle};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::conn::Conn;
use super::throughput::{self, Outcome};

/// The benchmark's NameNode configuration, then `conf` (`--conf KEY=VALUE`) on top.
pub(super) fn config(dir: &Path, conf: &[String]) -> anyhow::Result<Config> {
    let mut cfg = Config {
        name_dirs: vec![dir.join("name")],
        min_block_size: 16,
        // The benchmark's files stay open (create without close); keep their leases.
        lease_hard_limit_sec: 86_400,
        // No periodic image mid-run: the restart probe must replay the whole journal.
        checkpoint_txns: u64::MAX,
        ..Default::default()
    };
    let unknown = cfg.apply_cli(conf)?;
    anyhow::ensure!(
        unknown.is_empty(),
        "configuration keys the NameNode does not use: {unknown:?}"
    );
    Ok(cfg)
}

/// A NameNode on `dir` in this process, and `threads` socket-free connections to it.
async fn start_local(
    dir: &Path,
    conf: &[String],
    threads: usize,
) -> anyhow::Result<(NameNodeHandle, Vec<Arc<Conn>>)> {
    let nn = NameNode::start(config(dir, conf)?, TcpListener::bind("127.0.0.1:0").await?).await?;
    let user = nn.state.superuser().to_string();
    let conns = (0..threads)
        .map(|_| {
            Arc::new(Conn::Local {
                nn: nn.state.clone(),
                user: user.as_str().into(),
            })
        })
        .collect();
    Ok((nn, conns))
}

/// Before an op: resets the summary's maximum lag and returns its lag counters and its
/// count of catch-ups from disk.
fn lag_start(state: &NameNodeService) -> (u64, u64, u64) {
    let Some(s) = state.summary() else {
        return (0, 0, 0);
    };
    let m = &s.metrics;
    m.lag_max_us.store(0, Ordering::Relaxed);
    (
        m.lag_sum_us.load(Ordering::Relaxed),
        m.lag_batches.load(Ordering::Relaxed),
        m.disk_catch_ups.load(Ordering::Relaxed),
    )
}

/// After an op: waits for the summary to catch up, then reports its lag behind the journal
/// during the op (from each batch's sync to its records being applied), and how often it
/// fell out of the journal's in-memory tail and read the segments instead.
async fn lag_report(state: &NameNodeService, (sum0, n0, disk0): (u64, u64, u64)) -> String {
    let Some(s) = state.summary() else {
        return String::new();
    };
    let last = state.last_txid();
    s.caught_up(last, Duration::from_secs(10)).await;
    let m = &s.metrics;
    let sum = m.lag_sum_us.load(Ordering::Relaxed) - sum0;
    let n = (m.lag_batches.load(Ordering::Relaxed) - n0).max(1);
    format!(
        " summary_lag_mean_ms={:.2} summary_lag_max_ms={:.2} summary_disk_catch_ups={}",
        sum as f64 / n as f64 / 1e3,
        m.lag_max_us.load(Ordering::Relaxed) as f64 / 1e3,
        m.disk_catch_ups.load(Ordering::Relaxed) - disk0
    )
}

/// The journal's (syncs, transactions synced, microseconds spent syncing) so far.
fn sync_counts(m: &JournalMetrics) -> (u64, u64, u64) {
    (
        m.syncs.load(Ordering::Relaxed),
        m.txns_synced.load(Ordering::Relaxed),
        m.sync_micros.load(Ordering::Relaxed),
    )
}

/// Runs `ops` against a fresh in-process NameNode in `dir`, printing one line per op.
pub(super) async fn throughput(
    dir: &Path,
    conf: &[String],
    ops: &[String],
    threads: usize,
    count: usize,
) -> anyhow::Result<()> {
    let (nn, conns) = start_local(dir, conf, threads).await?;
    let state = nn.state.clone();
    let per = count.div_ceil(threads);
    for op in ops {
        if throughput::needs_files(op) {
            throughput::generate(&conns, op, per).await?;
            // The summary follows the files just made in the background; timing starts
            // once it has, so that the op is not charged with the set-up's work.
            if let Some(s) = state.summary() {
                s.caught_up(state.last_txid(), Duration::from_secs(30))
                    .await;
            }
        }
        let m = state.journal_metrics().expect("journal on disk");
        let (s0, t0, us0) = sync_counts(m);
        let lag0 = lag_start(&state);
        let out = throughput::timed(&conns, op, per).await?;
        let lag = lag_report(&state, lag0).await;
        let (s1, t1, us1) = sync_counts(m);
        // The mean sync (write and fdatasync) against the disk's bare 4 KiB fdatasync says
        // how close the journal runs to the disk; syncs_per_s against its rate, how busy.
        let journal = if s1 > s0 {
            format!(
                " fdatasyncs={} txns_per_sync={:.1} syncs_per_s={:.0} mean_sync_us={:.0}",
                s1 - s0,
                (t1 - t0) as f64 / (s1 - s0) as f64,
                (s1 - s0) as f64 / out.secs,
                (us1 - us0) as f64 / (s1 - s0) as f64
            )
        } else {
            String::new()
        };
        print_outcome("inproc", op, &out, &format!("{journal}{lag}"));
    }
    drop(conns);
    nn.shutdown().await;
    Ok(())
}

pub(super) fn print_outcome(mode: &str, op: &str, o: &Outcome, extra: &str) {
    println!(
        "mode={mode} op={op} ops={} elapsed_ms={:.0} ops_per_s={:.0} p50_ms={:.3} p99_ms={:.3}{extra}",
        o.ops,
        o.secs * 1000.0,
        o.ops_per_s(),
        o.p50_ms,
        o.p99_ms
    );
}

/// The disk's rate of 4 KiB write + fdatasync in `dir`, one at a time, for `secs` seconds:
/// the ceiling a journal without group commit would hit.
pub(super) fn fsync_rate(dir: &Path, secs: u64) -> anyhow::Result<f64> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("fsync-probe");
    let mut f = std::fs::File::create(&path)?;
    f.write_all(&vec![0u8; 1 << 20])?;
    f.sync_all()?;
    let block = vec![7u8; 4096];
    let started = Instant::now();
    let mut n = 0u64;
    while started.elapsed() < Duration::from_secs(secs) {
        f.write_all_at(&block, (n % 256) * 4096)?;
        f.sync_data()?;
        n += 1;
    }
    let rate = n as f64 / started.elapsed().as_secs_f64();
    drop(f);
    std::fs::remove_file(&path)?;
    println!("mode=disk op=fdatasync-4k syncs_per_s={rate:.0}");
    Ok(rate)
}

/// Journals `files` creates in-process, closes the journal without an image, and times the
/// start-up that replays them.
pub(super) async fn replay(
    dir: &Path,
    conf: &[String],
    files: usize,
    threads: usize,
) -> anyhow::Result<()> {
    {
        let (nn, conns) = start_local(dir, conf, threads).await?;
        let state = nn.state.clone();
        let out = throughput::timed(&conns, "create", files.div_ceil(threads)).await?;
        print_outcome("inproc", "create", &out, "");
        // Stop without the shutdown image, as after a crash: start-up must replay everything.
        state.close(false);
        drop(conns);
        std::mem::forget(nn);
    }
    let cfg = config(dir, conf)?;
    let started = Instant::now();
    let storage =
        tokio::task::spawn_blocking(move || load_storage(&cfg, "bench", CancellationToken::new()))
            .await??;
    let ms = started.elapsed().as_millis();
    println!(
        "mode=inproc op=restart edits_replayed={} inodes={} startup_ms={ms} (image txid {})",
        storage.startup.edits_replayed,
        storage.ns.inode_count(),
        storage.startup.image_txid
    );
    if let Some(j) = &storage.journal {
        j.close();
    }
    Ok(())
}

/// The user the guarded benchmark creates as: not the superuser (whose checks are
/// skipped), and named last among the ACLs' named users, so every check reads them all.
const GUARDED_USER: &str = "zz-bench";

/// `guarded-create`: creates as an ordinary user under 5 ancestors that each carry a
/// namespace and a space quota and an ACL of 10 named users (the user among them), against
/// the same creates under the same directories with plain permissions; alternating, a
/// fresh NameNode each run, `rounds` pairs. Prints each run and the median ratio.
pub(super) async fn guarded_create(
    dir: &Path,
    conf: &[String],
    threads: usize,
    count: usize,
    rounds: usize,
) -> anyhow::Result<()> {
    let mut ratios = Vec::new();
    for _ in 0..rounds {
        let mut rates = [0.0; 2];
        for (i, guarded) in [false, true].into_iter().enumerate() {
            let _ = std::fs::remove_dir_all(dir);
            let out = one_guarded_run(dir, conf, threads, count, guarded).await?;
            let mode = if guarded { "guarded" } else { "plain" };
            print_outcome(mode, "create", &out, "");
            rates[i] = out.ops_per_s();
        }
        ratios.push(rates[1] / rates[0]);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "guarded_over_plain_median={:.3} runs={:?}",
        ratios[ratios.len() / 2],
        ratios.iter().map(|r| format!("{r:.3}")).collect::<Vec<_>>()
    );
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}

async fn one_guarded_run(
    dir: &Path,
    conf: &[String],
    threads: usize,
    count: usize,
    guarded: bool,
) -> anyhow::Result<Outcome> {
    use ferrite_namenode::namespace::acl::AclEntry;
    use ferrite_namenode::namespace::acl_ops::AclChange;
    let nn = NameNode::start(config(dir, conf)?, TcpListener::bind("127.0.0.1:0").await?).await?;
    let state = nn.state.clone();
    let su = state.superuser().to_string();
    let per = count.div_ceil(threads);
    // Every directory a create's path passes through that exists before the clock starts:
    // the root, /nnbench, /nnbench/create, each client's t<k> and its d<n>.
    let mut dirs = vec![
        "/".to_string(),
        throughput::BASE.to_string(),
        format!("{}/create", throughput::BASE),
    ];
    for k in 0..threads {
        let t = format!("{}/create/t{k}", throughput::BASE);
        dirs.push(t.clone());
        for n in 0..=per / 256 {
            dirs.push(format!("{t}/d{n}"));
        }
    }
    let mut spec: Vec<AclEntry> = (0..9)
        .map(|i| AclEntry::parse(&format!("user:u{i}:r-x"), true).expect("entry"))
        .collect();
    spec.push(AclEntry::parse(&format!("user:{GUARDED_USER}:rwx"), true).expect("entry"));
    let as_su = |op| state.admit(su.as_str(), "127.0.0.1", op);
    let (mkdirs, set_quota) = (as_su(Operation::Mkdirs)?, as_su(Operation::SetQuota)?);
    let (acl, chmod) = (
        as_su(Operation::ModifyAclEntries)?,
        as_su(Operation::SetPermission)?,
    );
    for d in &dirs {
        state.mkdirs(&mkdirs, d, 0o755, true).await?;
        if guarded {
            state
                .set_quota(&set_quota, d, i64::MAX / 2, i64::MAX / 2, None)
                .await?;
            state
                .change_acl(&acl, d, AclChange::Modify(spec.clone()))
                .await?;
        } else {
            state.set_permission(&chmod, d, 0o777).await?;
        }
    }
    let conns: Vec<Arc<Conn>> = (0..threads)
        .map(|_| {
            Arc::new(Conn::Local {
                nn: state.clone(),
                user: GUARDED_USER.into(),
            })
        })
        .collect();
    let out = throughput::timed(&conns, "create", per).await;
    drop(conns);
    nn.shutdown().await;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every op runs against a real in-process NameNode: its inputs exist (or not) as the
    /// op needs, and each client's every operation succeeds.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_op_runs_its_inputs_against_a_real_namenode() {
        let dir = tempfile::tempdir().unwrap();
        // The ops are under test here, not the machine's free space: a CI disk with less
        // than the default 100 MB reserve would otherwise put the NameNode in safe mode.
        let conf = ["dfs.namenode.resource.du.reserved=0".to_string()];
        let (nn, conns) = start_local(dir.path(), &conf, 3).await.unwrap();
        for op in throughput::OPS {
            if throughput::needs_files(op) {
                throughput::generate(&conns, op, 5).await.unwrap();
            }
            let out = throughput::timed(&conns, op, 5).await.unwrap();
            assert_eq!(out.ops, 15, "{op}");
        }
        let exists = |p: &str| {
            let comps = ferrite_namenode::namespace::path::components(p).unwrap();
            nn.state
                .with_namespace(|ns| ns.walk(&comps).unwrap().target().is_some())
        };
        assert!(exists(&throughput::file_path("create", 2, 4)));
        assert!(exists(&format!(
            "{}.r",
            throughput::file_path("rename", 1, 3)
        )));
        assert!(!exists(&throughput::file_path("rename", 1, 3)));
        assert!(!exists(&throughput::file_path("delete", 0, 0)));
        nn.shutdown().await;
    }

    #[test]
    fn conf_pairs_override_the_benchmark_defaults_and_typos_are_refused() {
        let dir = Path::new("/nonexistent");
        assert!(config(dir, &[]).unwrap().summary_enabled);
        let cfg = config(
            dir,
            &[
                "ferrite.summary.enabled=false".into(),
                "ferrite.journal.group-commit.delay.us=0".into(),
            ],
        )
        .unwrap();
        assert!(!cfg.summary_enabled);
        assert_eq!(cfg.journal_group_delay_us, 0);
        assert_eq!(
            cfg.checkpoint_txns,
            u64::MAX,
            "the benchmark's own settings stay"
        );
        let err = config(dir, &["ferrite.sumary.enabled=false".into()]).unwrap_err();
        assert!(err.to_string().contains("ferrite.sumary.enabled"), "{err}");
    }
}
