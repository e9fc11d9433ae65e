//! The commands that move bytes: -put, -get, -cat, -tail, -cp. Progress bars appear on
//! stderr for -put and -get when it is a terminal.

use std::io::{IsTerminal, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use ferrite_client::CreateOptions;
use indicatif::{ProgressBar, ProgressStyle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{flags, Failed, Res, Shell};

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn progress(len: u64, name: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    pb.set_message(name.to_string());
    pb
}

/// `-put [-f] [-d] <localsrc> ... <dst>`: written to `<dst>._COPYING_` and renamed into
/// place when complete, as Hadoop does (`-d` writes in place).
pub async fn put(sh: &mut Shell, args: &[String]) -> Res {
    let (f, rest) = flags(args, &["-f", "-d", "-p", "-l"]).map_err(|e| sh.usage(&e))?;
    let force = f.iter().any(|x| x == "-f");
    let direct = f.iter().any(|x| x == "-d");
    if rest.len() < 2 {
        return Err(sh.usage("Not enough arguments: expected 2"));
    }
    let (srcs, dst) = rest.split_at(rest.len() - 1);
    let dst_abs = sh.abs(&dst[0]);
    let dst_st = sh.fs.status(&dst_abs).await.map_err(|e| sh.err(e))?;
    let dst_is_dir = dst_st.as_ref().is_some_and(|s| s.is_dir);
    if srcs.len() > 1 && !dst_is_dir {
        return Err(Failed(format!("put: `{}': Is not a directory", dst[0])));
    }
    for src in srcs {
        let target = if dst_is_dir {
            let name = std::path::Path::new(src)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            format!("{}/{name}", dst_abs.trim_end_matches('/'))
        } else {
            dst_abs.clone()
        };
        if !force && sh.exists(&target).await? {
            sh.fail(Failed(format!("put: `{target}': File exists")));
            continue;
        }
        let (mut input, len): (Box<dyn tokio::io::AsyncRead + Unpin + Send>, u64) = if src == "-" {
            (Box::new(tokio::io::stdin()), 0)
        } else {
            match tokio::fs::File::open(src).await {
                Ok(f) => {
                    let len = f.metadata().await.map(|m| m.len()).unwrap_or(0);
                    (Box::new(f), len)
                }
                Err(_) => {
                    sh.fail(Failed(format!("put: `{src}': No such file or directory")));
                    continue;
                }
            }
        };
        let tmp = if direct {
            target.clone()
        } else {
            format!("{target}._COPYING_")
        };
        let opts = CreateOptions {
            overwrite: true,
            ..Default::default()
        };
        let mut w = sh.fs.create(&tmp, &opts).await.map_err(|e| sh.err(e))?;
        let pb = progress(len, src);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = input
                .read(&mut buf)
                .await
                .map_err(|e| Failed(format!("put: {src}: {e}")))?;
            if n == 0 {
                break;
            }
            w.write(&buf[..n]).await.map_err(|e| sh.err(e))?;
            pb.inc(n as u64);
        }
        w.close().await.map_err(|e| sh.err(e))?;
        pb.finish_and_clear();
        if !direct {
            if force
                && sh
                    .fs
                    .status(&target)
                    .await
                    .map_err(|e| sh.err(e))?
                    .is_some()
            {
                sh.fs.delete(&target, false).await.map_err(|e| sh.err(e))?;
            }
            if !sh.fs.rename(&tmp, &target).await.map_err(|e| sh.err(e))? {
                sh.fail(Failed(format!("put: rename of {tmp} to {target} failed")));
            }
        }
    }
    Ok(())
}

/// `-appendToFile <localsrc> ... <dst>`: the sources, in order, at the end of `dst` (made
/// when missing); `-` reads standard input.
pub async fn append_to_file(sh: &mut Shell, args: &[String]) -> Res {
    if args.len() < 2 {
        return Err(sh.usage("Not enough arguments: expected 2"));
    }
    let (srcs, dst) = args.split_at(args.len() - 1);
    let target = sh.abs(&dst[0]);
    let mut w = match sh.fs.status(&target).await.map_err(|e| sh.err(e))? {
        Some(st) if st.is_dir => {
            return Err(Failed(format!(
                "appendToFile: `{}': Is a directory",
                dst[0]
            )))
        }
        Some(_) => sh.fs.append(&target).await.map_err(|e| sh.err(e))?,
        None => {
            let opts = CreateOptions::default();
            sh.fs.create(&target, &opts).await.map_err(|e| sh.err(e))?
        }
    };
    let mut buf = vec![0u8; 1 << 20];
    for src in srcs {
        let mut input: Box<dyn tokio::io::AsyncRead + Unpin + Send> = if src == "-" {
            Box::new(tokio::io::stdin())
        } else {
            match tokio::fs::File::open(src).await {
                Ok(f) => Box::new(f),
                Err(_) => {
                    return Err(Failed(format!(
                        "appendToFile: `{src}': No such file or directory"
                    )))
                }
            }
        };
        loop {
            let n = input
                .read(&mut buf)
                .await
                .map_err(|e| Failed(format!("appendToFile: {src}: {e}")))?;
            if n == 0 {
                break;
            }
            w.write(&buf[..n]).await.map_err(|e| sh.err(e))?;
        }
    }
    w.close().await.map_err(|e| sh.err(e))
}

/// `-get [-f] <src> ... <localdst>`: written to `<localdst>._COPYING_`, then renamed.
pub async fn get(sh: &mut Shell, args: &[String]) -> Res {
    let (f, rest) = flags(args, &["-f", "-p", "-crc", "-ignoreCrc"]).map_err(|e| sh.usage(&e))?;
    let force = f.iter().any(|x| x == "-f");
    if rest.len() < 2 {
        return Err(sh.usage("Not enough arguments: expected 2"));
    }
    let (srcs, dst) = rest.split_at(rest.len() - 1);
    let dst = std::path::PathBuf::from(&dst[0]);
    for src in srcs {
        let Some(st) = sh.found(src).await else {
            continue;
        };
        if st.is_dir {
            sh.fail(Failed(format!(
                "get: `{src}': Is a directory (copying directories is not supported yet)"
            )));
            continue;
        }
        let local = if dst.is_dir() {
            dst.join(sh.abs(src).rsplit('/').next().unwrap_or("out"))
        } else {
            dst.clone()
        };
        if local.exists() && !force {
            sh.fail(Failed(format!("get: `{}': File exists", local.display())));
            continue;
        }
        let tmp = local.with_file_name(format!(
            "{}._COPYING_",
            local
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        ));
        let mut r = sh.fs.open(&sh.abs(src)).await.map_err(|e| sh.err(e))?;
        let mut out = tokio::fs::File::create(&tmp)
            .await
            .map_err(|e| Failed(format!("get: {}: {e}", tmp.display())))?;
        let pb = progress(r.len(), src);
        loop {
            let chunk = r.read_chunk().await.map_err(|e| sh.err(e))?;
            if chunk.is_empty() {
                break;
            }
            out.write_all(&chunk)
                .await
                .map_err(|e| Failed(format!("get: {e}")))?;
            pb.inc(chunk.len() as u64);
        }
        out.flush().await.map_err(|e| Failed(format!("get: {e}")))?;
        drop(out);
        pb.finish_and_clear();
        std::fs::rename(&tmp, &local).map_err(|e| Failed(format!("get: {e}")))?;
    }
    Ok(())
}

pub async fn cat(sh: &mut Shell, args: &[String]) -> Res {
    let mut stdout = tokio::io::stdout();
    for p in args {
        let Some(st) = sh.found(p).await else {
            continue;
        };
        if st.is_dir {
            sh.fail(Failed(format!("cat: `{p}': Is a directory")));
            continue;
        }
        let mut r = sh.fs.open(&sh.abs(p)).await.map_err(|e| sh.err(e))?;
        loop {
            let chunk = r.read_chunk().await.map_err(|e| sh.err(e))?;
            if chunk.is_empty() {
                break;
            }
            if stdout.write_all(&chunk).await.is_err() {
                return Ok(()); // the reader went away (a closed pipe)
            }
        }
    }
    let _ = stdout.flush().await;
    Ok(())
}

/// `-tail [-f] <file>`: the last kilobyte; `-f` keeps printing what is appended.
pub async fn tail(sh: &mut Shell, args: &[String]) -> Res {
    let (f, rest) = flags(args, &["-f"]).map_err(|e| sh.usage(&e))?;
    let follow = !f.is_empty();
    let Some(p) = rest.first() else {
        return Err(sh.usage("Not enough arguments: expected 1 but got 0"));
    };
    let st = sh.need(p).await?;
    if st.is_dir {
        return Err(Failed(format!("tail: `{p}': Is a directory")));
    }
    let abs = sh.abs(p);
    let mut offset = st.len.saturating_sub(1024);
    loop {
        let r = sh.fs.open(&abs).await.map_err(|e| sh.err(e))?;
        let len = r.len();
        if len > offset {
            let bytes = r
                .pread(offset, (len - offset) as usize)
                .await
                .map_err(|e| sh.err(e))?;
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(&bytes);
            let _ = out.flush();
            offset = len;
        }
        if !follow {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    }
}

/// `-cp [-f] <src> ... <dst>`: through the client (read, then write).
pub async fn cp(sh: &mut Shell, args: &[String]) -> Res {
    let (f, rest) = flags(args, &["-f", "-p", "-d"]).map_err(|e| sh.usage(&e))?;
    let force = f.iter().any(|x| x == "-f");
    if rest.len() < 2 {
        return Err(sh.usage("Not enough arguments: expected 2"));
    }
    let (srcs, dst) = rest.split_at(rest.len() - 1);
    let dst_abs = sh.abs(&dst[0]);
    let dst_is_dir = sh.is_dir(&dst_abs).await?;
    for src in srcs {
        let Some(st) = sh.found(src).await else {
            continue;
        };
        if st.is_dir {
            sh.fail(Failed(format!(
                "cp: `{src}': Is a directory (copying directories is not supported yet)"
            )));
            continue;
        }
        let src_abs = sh.abs(src);
        let target = Shell::landing(&dst_abs, dst_is_dir, &src_abs);
        if !force && sh.exists(&target).await? {
            sh.fail(Failed(format!("cp: `{target}': File exists")));
            continue;
        }
        let mut r = sh.fs.open(&src_abs).await.map_err(|e| sh.err(e))?;
        let opts = CreateOptions {
            overwrite: true,
            replication: Some(st.replication),
            block_size: Some(st.block_size),
            ..Default::default()
        };
        let mut w = sh.fs.create(&target, &opts).await.map_err(|e| sh.err(e))?;
        loop {
            let chunk = r.read_chunk().await.map_err(|e| sh.err(e))?;
            if chunk.is_empty() {
                break;
            }
            w.write(&chunk).await.map_err(|e| sh.err(e))?;
        }
        w.close().await.map_err(|e| sh.err(e))?;
    }
    Ok(())
}
