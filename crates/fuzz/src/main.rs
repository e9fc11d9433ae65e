//! `ferrite-fuzz`: runs decoders on random and mutated input (see the crate's docs).
//!
//!     ferrite-fuzz list
//!     ferrite-fuzz TARGET|all [-n COUNT]
//!
//! Prints each target's inputs per second; the first failure is shrunk and printed, and
//! the exit status is 1.

use std::time::Instant;

use clap::Parser;

#[derive(Parser)]
#[command(about = "Runs Ferrite's decoders on random and mutated input")]
struct Args {
    /// A target's name, `all`, or `list`.
    target: String,
    /// Inputs per target.
    #[arg(short = 'n', long, default_value_t = 100_000)]
    count: u32,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.target == "list" {
        for t in ferrite_fuzz::TARGETS {
            println!("{:20} {}", t.name, t.what);
        }
        return Ok(());
    }
    let targets: Vec<_> = if args.target == "all" {
        ferrite_fuzz::TARGETS.iter().collect()
    } else {
        match ferrite_fuzz::target(&args.target) {
            Some(t) => vec![t],
            None => anyhow::bail!(
                "no target {:?}; `ferrite-fuzz list` names them",
                args.target
            ),
        }
    };
    let mut failed = false;
    for t in targets {
        let started = Instant::now();
        let r = ferrite_fuzz::run(t, args.count);
        let secs = started.elapsed().as_secs_f64();
        match r {
            Ok(()) => println!(
                "target={} inputs={} secs={secs:.1} inputs_per_s={:.0} failures=0",
                t.name,
                args.count,
                f64::from(args.count) / secs
            ),
            Err(e) => {
                failed = true;
                println!("target={} FAILED after {secs:.1}s: {e}", t.name);
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
    Ok(())
}
