//! The commands that move bytes: -put, -get, -cat, -tail, -cp. Progress bars appear on
//! stderr for -put and -get when it is a terminal.

use std::io::{IsTerminal, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use ferrite_client::{CreateOptions, FileStatus};
use indicatif::{ProgressBar, ProgressStyle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{flags, Failed, Res, Shell};

pub(super) fn now_ms() -> u64 {
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
pub(super) async fn put(sh: &mut Shell, args: &[String]) -> Res {
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
        if src != "-" && std::path::Path::new(src).is_dir() {
            // A directory goes up whole: its tree is made, then every file put into it.
            for (local, remote, is_dir) in local_tree(src, &target) {
                if is_dir {
                    sh.fs
                        .mkdirs(&remote, 0o755, true)
                        .await
                        .map_err(|e| sh.err(e))?;
                } else {
                    put_one(sh, &local, &remote, force, direct).await?;
                }
            }
            continue;
        }
        put_one(sh, src, &target, force, direct).await?;
    }
    Ok(())
}

/// Every directory and file under local directory `src` (itself first), each with its
/// place under remote `target`, parents before children.
fn local_tree(src: &str, target: &str) -> Vec<(String, String, bool)> {
    let mut out = vec![(src.to_string(), target.to_string(), true)];
    let mut i = 0;
    while i < out.len() {
        let (local, remote, is_dir) = out[i].clone();
        i += 1;
        if !is_dir {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&local) else {
            continue;
        };
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let dir = e.file_type().is_ok_and(|t| t.is_dir());
            out.push((
                e.path().to_string_lossy().into_owned(),
                format!("{}/{name}", remote.trim_end_matches('/')),
                dir,
            ));
        }
    }
    out
}

/// Puts one local file (or `-`, standard input) at remote `target`.
async fn put_one(sh: &mut Shell, src: &str, target: &str, force: bool, direct: bool) -> Res {
    if !force && sh.exists(target).await? {
        sh.fail(Failed(format!("put: `{target}': File exists")));
        return Ok(());
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
                return Ok(());
            }
        }
    };
    let tmp = if direct {
        target.to_string()
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
        if force && sh.exists(target).await? {
            sh.fs.delete(target, false).await.map_err(|e| sh.err(e))?;
        }
        if !sh.fs.rename(&tmp, target).await.map_err(|e| sh.err(e))? {
            sh.fail(Failed(format!("put: rename of {tmp} to {target} failed")));
        }
    }
    Ok(())
}

/// `-appendToFile <localsrc> ... <dst>`: the sources, in order, at the end of `dst` (made
/// when missing); `-` reads standard input.
pub(super) async fn append_to_file(sh: &mut Shell, args: &[String]) -> Res {
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
pub(super) async fn get(sh: &mut Shell, args: &[String]) -> Res {
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
        let src_abs = sh.abs(src);
        let local = if dst.is_dir() {
            dst.join(src_abs.rsplit('/').next().unwrap_or("out"))
        } else {
            dst.clone()
        };
        if !st.is_dir {
            get_one(sh, &src_abs, &local, force).await?;
            continue;
        }
        // A directory comes down whole: its tree is made locally, every file fetched.
        std::fs::create_dir_all(&local)
            .map_err(|e| Failed(format!("get: {}: {e}", local.display())))?;
        for (path, st) in sh.tree(&src_abs).await? {
            let rel = path
                .strip_prefix(&src_abs)
                .unwrap_or(&path)
                .trim_start_matches('/');
            if rel.is_empty() {
                continue;
            }
            let to = local.join(rel);
            if st.is_dir {
                std::fs::create_dir_all(&to)
                    .map_err(|e| Failed(format!("get: {}: {e}", to.display())))?;
            } else {
                get_one(sh, &path, &to, force).await?;
            }
        }
    }
    Ok(())
}

/// Fetches remote file `src` to `local`, through `<local>._COPYING_`.
async fn get_one(sh: &mut Shell, src: &str, local: &std::path::Path, force: bool) -> Res {
    if local.exists() && !force {
        sh.fail(Failed(format!("get: `{}': File exists", local.display())));
        return Ok(());
    }
    let tmp = local.with_file_name(format!(
        "{}._COPYING_",
        local
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    let mut r = sh.fs.open(src).await.map_err(|e| sh.err(e))?;
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
    std::fs::rename(&tmp, local).map_err(|e| Failed(format!("get: {e}")))
}

pub(super) async fn cat(sh: &mut Shell, args: &[String]) -> Res {
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
pub(super) async fn tail(sh: &mut Shell, args: &[String]) -> Res {
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
pub(super) async fn cp(sh: &mut Shell, args: &[String]) -> Res {
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
        let src_abs = sh.abs(src);
        let target = Shell::landing(&dst_abs, dst_is_dir, &src_abs);
        if !st.is_dir {
            cp_one(sh, &src_abs, &st, &target, force).await?;
            continue;
        }
        if target == src_abs || target.starts_with(&format!("{src_abs}/")) {
            sh.fail(Failed(format!(
                "cp: `{src}' to `{target}': is a subdirectory of itself"
            )));
            continue;
        }
        // A directory is copied whole: its tree is made, every file copied into it.
        for (path, st) in sh.tree(&src_abs).await? {
            let rel = path.strip_prefix(&src_abs).unwrap_or(&path);
            let to = format!("{target}{rel}");
            if st.is_dir {
                sh.fs
                    .mkdirs(&to, 0o755, true)
                    .await
                    .map_err(|e| sh.err(e))?;
            } else {
                cp_one(sh, &path, &st, &to, force).await?;
            }
        }
    }
    Ok(())
}

/// Copies remote file `src` (its status `st`) to `target`, with its replication and
/// block size.
async fn cp_one(sh: &mut Shell, src: &str, st: &FileStatus, target: &str, force: bool) -> Res {
    if !force && sh.exists(target).await? {
        sh.fail(Failed(format!("cp: `{target}': File exists")));
        return Ok(());
    }
    let mut r = sh.fs.open(src).await.map_err(|e| sh.err(e))?;
    let opts = CreateOptions {
        overwrite: true,
        replication: Some(st.replication),
        block_size: Some(st.block_size),
        ..Default::default()
    };
    let mut w = sh.fs.create(target, &opts).await.map_err(|e| sh.err(e))?;
    loop {
        let chunk = r.read_chunk().await.map_err(|e| sh.err(e))?;
        if chunk.is_empty() {
            break;
        }
        w.write(&chunk).await.map_err(|e| sh.err(e))?;
    }
    w.close().await.map_err(|e| sh.err(e))
}
