//! `ferrite`: one binary for every role. See `ferrite --help`.

mod admin;
mod balancer;
mod bench;
mod descriptors;
mod dfs;
mod fsck;
mod ha_status;
mod local_ha;
mod memory;
mod offline;
mod serve;
mod serve_ha;
mod summary;
mod summary_service;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "ferrite",
    version,
    about = "Ferrite: an HDFS-compatible distributed file system"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Everything in one process over one data folder: a NameNode and N DataNodes.
    Local(serve::ServeArgs),
    /// A NameNode on its own.
    Namenode(serve::ServeArgs),
    /// A DataNode on its own, joining a NameNode.
    Datanode(serve::DataNodeArgs),
    /// Hadoop's file system shell: -ls, -put, -get, -cat, ... (`ferrite dfs -help`).
    #[command(disable_help_flag = true)]
    Dfs {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Operator commands (safe mode, checkpoint).
    Admin(admin::AdminArgs),
    /// Levels DataNode usage, as `hdfs balancer` (`-threshold 10`, `-policy datanode`,
    /// `-idleiterations 5`, `-fs URI`, `-D KEY=VALUE`), with its output and exit codes.
    #[command(disable_help_flag = true)]
    Balancer {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// `hdfs fsck` through the NameNode's HTTP port: the same options, report and exit codes.
    Fsck(fsck::FsckArgs),
    /// A path's namespace summary: totals, largest children, size histogram.
    Summary(summary::SummaryArgs),
    /// The namespace summary as its own process, following a NameNode's journal.
    SummaryService(summary_service::ServiceArgs),
    /// A checkpoint image read offline, in `hdfs oiv -p Delimited`'s rows.
    Oiv(offline::OivArgs),
    /// A journal segment read offline, as `hdfs oev` reads edits: each record, or counts
    /// per kind (`-p stats`), then how the segment ends and what lies past any damage.
    Oev(offline::OevArgs),
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        what: bench::BenchCmd,
    },
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FERRITE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    let server = matches!(
        cli.cmd,
        Cmd::Local(_) | Cmd::Namenode(_) | Cmd::Datanode(_) | Cmd::SummaryService(_)
    );
    if server || matches!(&cli.cmd, Cmd::Bench { what } if what.hosts_a_namenode()) {
        memory::limit_arenas();
        descriptors::raise_soft_limit();
    }
    // One worker per core; blocking work (journal waits aside, mostly DataNode writes and
    // start-up scans) is capped, so the thread count stays fixed however many clients come.
    // DataNode reads use their own per-volume I/O threads instead.
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = worker_threads()? {
        rt.worker_threads(n);
    }
    let rt = rt.enable_all().max_blocking_threads(64).build()?;
    if server {
        memory::start_idle_trim();
    }
    rt.block_on(async {
        match cli.cmd {
            Cmd::Local(a) => serve::run(a, serve::Role::Local).await,
            Cmd::Namenode(a) => serve::run(a, serve::Role::NameNode).await,
            Cmd::Datanode(a) => serve::run_datanode(a).await,
            Cmd::Admin(a) => admin::run(a).await,
            Cmd::Dfs { args } => {
                let code = dfs::run(args).await?;
                std::process::exit(code)
            }
            Cmd::Balancer { args } => std::process::exit(balancer::run(args).await),
            Cmd::Bench { what } => bench::run(what).await,
            Cmd::Fsck(a) => fsck::run(a).await,
            Cmd::Summary(a) => summary::run(a).await,
            Cmd::SummaryService(a) => summary_service::run(a).await,
            Cmd::Oiv(a) => offline::run_oiv(a),
            Cmd::Oev(a) => offline::run_oev(a),
        }
    })
}

/// `TOKIO_WORKER_THREADS`, checked here: tokio reads it too when no count is given, but
/// answers a bad value with a panic.
fn worker_threads() -> anyhow::Result<Option<usize>> {
    parse_worker_threads(std::env::var_os("TOKIO_WORKER_THREADS").as_deref())
}

fn parse_worker_threads(v: Option<&std::ffi::OsStr>) -> anyhow::Result<Option<usize>> {
    let Some(v) = v else { return Ok(None) };
    match v.to_str().and_then(|s| s.trim().parse::<usize>().ok()) {
        Some(n) if n >= 1 => Ok(Some(n)),
        _ => anyhow::bail!(
            "TOKIO_WORKER_THREADS must be a number of threads, at least 1 (got {v:?})"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_worker_threads;
    use std::ffi::OsStr;

    #[test]
    fn worker_thread_counts_are_checked() {
        assert_eq!(parse_worker_threads(None).unwrap(), None);
        assert_eq!(
            parse_worker_threads(Some(OsStr::new("1"))).unwrap(),
            Some(1)
        );
        assert_eq!(
            parse_worker_threads(Some(OsStr::new(" 4 "))).unwrap(),
            Some(4)
        );
        for bad in ["", "0", "two", "-1"] {
            let e = parse_worker_threads(Some(OsStr::new(bad))).unwrap_err();
            assert!(e.to_string().contains("at least 1"), "{bad:?}: {e}");
        }
    }
}
