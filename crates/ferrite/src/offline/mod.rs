//! Offline viewers for the NameNode's files, as `hdfs oiv` and `hdfs oev` are for HDFS's:
//! they read a checkpoint image or a journal segment straight from disk, with no NameNode
//! running (or alongside one: nothing here writes). The formats are Ferrite's own, so
//! these stand in for HDFS's tools.

mod oev;
mod oiv;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use ferrite_namenode::atomic_file::map_committed;
use ferrite_namenode::namespace::Namespace;

#[derive(Args)]
pub(crate) struct OivArgs {
    /// The checkpoint image (`fsimage_<txid>` in a name directory).
    #[arg(short = 'i', long = "inputFile")]
    input: PathBuf,
    /// Where the rows go; standard output when absent or `-`.
    #[arg(short = 'o', long = "outputFile")]
    output: Option<PathBuf>,
    /// Only `Delimited` (HDFS's other processors read HDFS's image format).
    #[arg(short = 'p', long = "processor", default_value = "Delimited")]
    processor: String,
    /// Between fields.
    #[arg(long, default_value = "\t")]
    delimiter: String,
}

#[derive(Args)]
pub(crate) struct OevArgs {
    /// The journal segment (`edits_<first>-<last>` or `edits_inprogress_<first>` in a
    /// journal directory).
    #[arg(short = 'i', long = "inputFile")]
    input: PathBuf,
    /// Where the report goes; standard output when absent or `-`.
    #[arg(short = 'o', long = "outputFile")]
    output: Option<PathBuf>,
    #[arg(short = 'p', long = "processor", value_enum, default_value = "text")]
    processor: oev::Processor,
}

/// `ferrite oiv`. The image's checksums are verified as it is read.
pub(crate) fn run_oiv(a: OivArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        a.processor.eq_ignore_ascii_case("delimited"),
        "processor {:?} is not supported: Ferrite's image is its own format, and `Delimited` \
         is the processor that reads it",
        a.processor
    );
    let bytes =
        map_committed(&a.input).with_context(|| format!("cannot read {}", a.input.display()))?;
    let (ns, txid) = Namespace::decode_image(&bytes)
        .with_context(|| format!("{}: not a readable Ferrite image", a.input.display()))?;
    let mut out = output(a.output.as_deref())?;
    let rows = oiv::delimited(&ns, &a.delimiter, &mut out)?;
    out.flush()?;
    eprintln!("{}: image at txid {txid}, {rows} inodes", a.input.display());
    Ok(())
}

/// `ferrite oev`. Exits with status 1 when the segment is damaged (start-up would refuse
/// it), after the report.
pub(crate) fn run_oev(a: OevArgs) -> anyhow::Result<()> {
    // Read, not mapped: an in-progress segment may be appended to while it is read.
    let bytes =
        std::fs::read(&a.input).with_context(|| format!("cannot read {}", a.input.display()))?;
    let mut out = output(a.output.as_deref())?;
    let name = a.input.display().to_string();
    let verdict = oev::view(&bytes, &name, a.processor, &mut out)?;
    out.flush()?;
    if verdict.damaged {
        std::process::exit(1);
    }
    Ok(())
}

fn output(path: Option<&Path>) -> anyhow::Result<Box<dyn Write>> {
    Ok(match path {
        None => Box::new(BufWriter::new(io::stdout().lock())),
        Some(p) if p == Path::new("-") => Box::new(BufWriter::new(io::stdout().lock())),
        Some(p) => Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
    })
}
