//! `ferrite summary`: a path's namespace summary from the NameNode's summary service —
//! subtree totals, its largest children, and its file-size histogram.

use clap::Args;
use ferrite_ipc::client::IpcClient;
use ferrite_ipc::SUMMARY_PROTOCOL;
use ferrite_namenode::summary::bucket_bounds;
use ferrite_proto::ferrite::*;

use crate::admin::{default_fs, user};
use crate::dfs::format::human as size;

#[derive(Args)]
pub(crate) struct SummaryArgs {
    /// NameNode (hdfs://HOST:PORT). Default: $FERRITE_FS, then fs.defaultFS.
    #[arg(long = "fs")]
    fs: Option<String>,
    /// The path to summarize.
    path: String,
    /// List this many largest children by bytes.
    #[arg(long, default_value_t = 10)]
    top: u32,
    /// Print the file-size histogram.
    #[arg(long)]
    histogram: bool,
}

pub(crate) async fn run(args: SummaryArgs) -> anyhow::Result<()> {
    let addr = default_fs(args.fs)?;
    let c = IpcClient::connect(addr, &user(), SUMMARY_PROTOCOL).await?;
    let req = GetSummaryRequestProto {
        path: args.path.clone(),
        top: Some(args.top),
    };
    let r: GetSummaryResponseProto = c.call("getSummary", &req).await?;
    let Some(s) = r.summary else {
        anyhow::bail!("{}: No such file or directory", args.path);
    };
    println!("{}  (as of txid {})", args.path, s.txid);
    println!(
        "  files {} ({} directly)   directories {} ({} directly)",
        s.files, s.direct_files, s.dirs, s.direct_dirs
    );
    println!(
        "  bytes {} ({})   with replication {} ({})",
        s.bytes,
        size(s.bytes),
        s.raw_bytes,
        size(s.raw_bytes)
    );
    if !r.largest.is_empty() {
        println!("  largest children:");
        for ch in &r.largest {
            let kind = if ch.is_dir { "d" } else { "-" };
            println!(
                "    {kind} {:>12}  {:>10} files  {}",
                size(ch.bytes),
                ch.files,
                ch.name
            );
        }
    }
    if args.histogram {
        println!("  file sizes:");
        for ((lo, hi), n) in bucket_bounds().zip(&s.histogram) {
            if *n > 0 {
                let hi = if hi == u64::MAX {
                    "up".to_string()
                } else {
                    size(hi)
                };
                println!("    [{} .. {hi})  {n}", size(lo));
            }
        }
    }
    Ok(())
}
