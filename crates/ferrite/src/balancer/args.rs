//! `ferrite balancer`'s command line, in `hdfs balancer`'s words: single-dash options, and
//! Hadoop's generic `-fs` and `-D KEY=VALUE`.

use std::time::Duration;

pub(crate) const USAGE: &str = "Usage: ferrite balancer
\t[-policy <policy>]\tthe balancing policy: datanode or blockpool
\t[-threshold <threshold>]\tPercentage of disk capacity
\t[-idleiterations <idleiterations>]\tNumber of consecutive idle iterations (-1 for Infinite) before exit.
\t[-fs hdfs://HOST:PORT]\tthe NameNode (default: $FERRITE_FS, then fs.defaultFS)
\t[-D KEY=VALUE]\ta configuration key (dfs.heartbeat.interval, dfs.balancer.getBlocks.min-block-size, dfs.balancer.max-size-to-move, dfs.blocksize)";

#[derive(Clone, Debug)]
pub(crate) struct BalancerArgs {
    /// Percent of capacity a node may differ from the mean by.
    pub threshold: f64,
    /// Iterations in a row that move nothing before giving up (-1: never).
    pub idle_iterations: i32,
    pub fs: Option<String>,
    /// `KEY=VALUE` pairs from `-D`.
    pub conf: Vec<String>,
    /// `dfs.heartbeat.interval`: two of them pass between iterations, so the NameNode
    /// reports the usage the moves left.
    pub heartbeat: Duration,
    /// `dfs.balancer.getBlocks.min-block-size`: smaller blocks are not worth a move.
    pub min_block_size: u64,
    /// `dfs.balancer.max-size-to-move`: most bytes one node gives or takes per iteration.
    pub max_size_to_move: u64,
    /// `dfs.blocksize`, for the lock file (None: the NameNode's default).
    pub block_size: Option<u64>,
}

pub(crate) fn parse(argv: &[String]) -> Result<BalancerArgs, String> {
    let mut a = BalancerArgs {
        threshold: 10.0,
        idle_iterations: 5,
        fs: None,
        conf: Vec::new(),
        heartbeat: Duration::from_secs(3),
        min_block_size: 10 << 20,
        max_size_to_move: 10 << 30,
        block_size: None,
    };
    let mut it = argv.iter();
    while let Some(opt) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{opt} needs a value"))
        };
        match opt.to_ascii_lowercase().as_str() {
            "-threshold" => {
                let v = value()?;
                a.threshold = v
                    .parse::<f64>()
                    .ok()
                    .filter(|t| (1.0..=100.0).contains(t))
                    .ok_or_else(|| {
                        format!("Expecting a number in the range of [1.0, 100.0]: {v}")
                    })?;
            }
            "-policy" => {
                let v = value()?;
                // One block pool per cluster: both policies level the same numbers.
                if !["datanode", "blockpool"].contains(&v.to_ascii_lowercase().as_str()) {
                    return Err(format!("Illegal policy name: {v}"));
                }
            }
            "-idleiterations" => {
                let v = value()?;
                a.idle_iterations = v
                    .parse()
                    .map_err(|_| format!("Illegal idleiterations: {v}"))?;
            }
            "-fs" | "--fs" => a.fs = Some(value()?),
            "-d" => a.conf.push(value()?),
            _ => return Err(format!("Illegal argument: {opt}")),
        }
    }
    let pairs = crate::serve::config_pairs(&a.conf).map_err(|e| e.to_string())?;
    for (k, v) in &pairs {
        let size =
            || ferrite_ipc::conf::parse_size(v).ok_or_else(|| format!("{k}: not a size: {v}"));
        match k.as_str() {
            "dfs.heartbeat.interval" => {
                let secs: u64 = v.trim().parse().map_err(|_| format!("{k}: {v}"))?;
                a.heartbeat = Duration::from_secs(secs.max(1));
            }
            "dfs.balancer.getBlocks.min-block-size" => a.min_block_size = size()?,
            "dfs.balancer.max-size-to-move" => a.max_size_to_move = size()?,
            "dfs.blocksize" => a.block_size = Some(size()?),
            _ => {}
        }
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<BalancerArgs, String> {
        parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn options_as_hdfs_balancer_takes_them() {
        let a = args("-threshold 5 -policy datanode -idleiterations -1 -D dfs.heartbeat.interval=1 -D dfs.balancer.getBlocks.min-block-size=1k").unwrap();
        assert_eq!(a.threshold, 5.0);
        assert_eq!(a.idle_iterations, -1);
        assert_eq!(a.heartbeat, Duration::from_secs(1));
        assert_eq!(a.min_block_size, 1024);
        let d = args("").unwrap();
        assert_eq!((d.threshold, d.idle_iterations), (10.0, 5));
    }

    #[test]
    fn bad_options_say_what_is_wrong() {
        assert_eq!(
            args("-threshold 0").unwrap_err(),
            "Expecting a number in the range of [1.0, 100.0]: 0"
        );
        assert_eq!(
            args("-policy rack").unwrap_err(),
            "Illegal policy name: rack"
        );
        assert_eq!(args("-bogus").unwrap_err(), "Illegal argument: -bogus");
        assert_eq!(args("-threshold").unwrap_err(), "-threshold needs a value");
    }
}
