//! `-truncate` and `-concat`: the shell's calls that reshape existing files.

use std::io::Write;
use std::time::Duration;

use super::{flags, Failed, Res, Shell};

/// `-truncate [-w] <length> <path> ...`, printing what Hadoop's shell prints.
pub(super) async fn truncate(sh: &mut Shell, args: &[String]) -> Res {
    let (f, rest) = flags(args, &["-w"]).map_err(|e| sh.usage(&e))?;
    let wait = f.iter().any(|x| x == "-w");
    let Some((len, paths)) = rest.split_first() else {
        return Err(sh.usage("Not enough arguments"));
    };
    if paths.is_empty() {
        return Err(sh.usage("Not enough arguments"));
    }
    let len: u64 = len.parse().map_err(|_| {
        Failed(format!(
            "truncate: Illegal length, a non-negative integer expected: {len}"
        ))
    })?;
    let mut waiting = Vec::new();
    for p in paths {
        let Some(st) = sh.found(p).await else {
            continue;
        };
        if st.is_dir {
            sh.fail(Failed(format!("truncate: `{p}': Is a directory")));
            continue;
        }
        let abs = sh.abs(p);
        match sh.fs.truncate(&abs, len).await {
            Ok(true) => println!("Truncated {abs} to length: {len}"),
            Ok(false) if wait => waiting.push(abs),
            Ok(false) => println!(
                "Truncating {abs} to length: {len}. Wait for block recovery to complete before further updating this file."
            ),
            Err(e) => sh.fail(sh.err(e)),
        }
    }
    for abs in waiting {
        println!("Waiting for {abs} ...");
        let _ = std::io::stdout().flush();
        loop {
            let closed = sh.fs.is_file_closed(&abs).await.map_err(|e| sh.err(e))?;
            let st = sh.fs.status(&abs).await.map_err(|e| sh.err(e))?;
            if closed && st.is_some_and(|s| s.len == len) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        println!("Truncated {abs} to length: {len}");
    }
    Ok(())
}

/// `-concat <target path> <src path> <src path> ...`
pub(super) async fn concat(sh: &mut Shell, args: &[String]) -> Res {
    if args.len() < 3 {
        return Err(Failed(
            "concat: The number of source paths is less than 2. <target path> <src path> <src path> ..."
                .into(),
        ));
    }
    let target = sh.abs(&args[0]);
    let srcs: Vec<String> = args[1..].iter().map(|p| sh.abs(p)).collect();
    sh.fs.concat(&target, &srcs).await.map_err(|e| sh.err(e))
}
