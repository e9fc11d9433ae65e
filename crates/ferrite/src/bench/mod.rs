//! `ferrite bench …`: workload generators that talk to a server over the real wire protocol,
//! so the same run can target Ferrite or an Apache HDFS NameNode.

mod conn;
mod inproc;
mod namenode;
mod stream;
mod summary;
mod throughput;

use clap::Subcommand;

#[derive(Subcommand)]
pub(crate) enum BenchCmd {
    /// NameNode operations over real RPC (mkdirs, create, fileStatus), plus memory probes
    /// (inode-memory, listing).
    Namenode(namenode::NamenodeArgs),
    /// The namespace summary's event rate (1 worker and all cores), rebuild and checkpoint.
    Summary(summary::SummaryArgs),
    /// A DataNode's streaming rate for a file, the client's CRC work optional.
    Stream(stream::StreamArgs),
}

impl BenchCmd {
    /// Whether this benchmark runs a NameNode in this process (`namenode --inproc`), which
    /// then gets a server's memory settings, so that its figures are a server's.
    pub(crate) fn hosts_a_namenode(&self) -> bool {
        matches!(self, BenchCmd::Namenode(a) if a.inproc())
    }
}

pub(crate) async fn run(cmd: BenchCmd) -> anyhow::Result<()> {
    match cmd {
        BenchCmd::Namenode(a) => namenode::run(a).await,
        BenchCmd::Summary(a) => summary::run(a),
        BenchCmd::Stream(a) => stream::run(a).await,
    }
}
