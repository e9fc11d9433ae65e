//! `ferrite dfs`: Hadoop's shell commands with Hadoop's option style and messages, on top
//! of ferrite-client. Works against Ferrite and against Apache HDFS.

mod edit;
mod expand;
pub(crate) mod format;
mod glob;
mod transfer;

use std::io::Write;

use ferrite_client::{Error as ClientError, FileStatus, FileSystem};

use format::{human, ls_time, perm_string};

const USAGE: &str = "Usage: ferrite dfs [-fs hdfs://HOST:PORT] [generic options]
\t[-appendToFile <localsrc> ... <dst>]
\t[-cat <src> ...]
\t[-checksum <src> ...]
\t[-chgrp [-R] GROUP PATH...]
\t[-chmod [-R] <MODE[,MODE]... | OCTALMODE> PATH...]
\t[-chown [-R] [OWNER][:[GROUP]] PATH...]
\t[-concat <target path> <src path> <src path> ...]
\t[-count [-q] [-h] <path> ...]
\t[-cp [-f] <src> ... <dst>]
\t[-du [-s] [-h] <path> ...]
\t[-get [-f] <src> ... <localdst>]
\t[-ls [-d] [-h] [-R] [<path> ...]]
\t[-mkdir [-p] <path> ...]
\t[-mv <src> ... <dst>]
\t[-put [-f] [-d] <localsrc> ... <dst>]
\t[-rm [-f] [-r|-R] [-skipTrash] <src> ...]
\t[-rmdir <dir> ...]
\t[-setrep [-w] <rep> <path> ...]
\t[-stat [format] <path> ...]
\t[-tail [-f] <file>]
\t[-test -[defsz] <path>]
\t[-touchz <path> ...]
\t[-truncate [-w] <length> <path> ...]";

/// A command failure: printed as `cmd: message`, exit status 1.
pub(crate) struct Failed(pub String);

type Res = Result<(), Failed>;

pub(crate) struct Shell {
    pub fs: FileSystem,
    /// The working directory relative paths resolve against (`/user/<name>`).
    pub home: String,
    pub url: String,
    cmd: String,
    errors: usize,
}

fn not_found(cmd: &str, path: &str) -> Failed {
    Failed(format!("{cmd}: `{path}': No such file or directory"))
}

fn remote(cmd: &str, e: ClientError) -> Failed {
    Failed(format!("{cmd}: {e}"))
}

/// Rows for a directory's entries, named under how the user wrote the directory.
fn child_rows(shown: &str, entries: Vec<FileStatus>) -> Vec<(String, FileStatus)> {
    entries
        .into_iter()
        .map(|e| {
            let name = format!("{}/{}", shown.trim_end_matches('/'), e.path);
            (name, e)
        })
        .collect()
}

/// Splits leading `-x` flags (from `allowed`) off the arguments.
fn flags<'a>(args: &'a [String], allowed: &[&str]) -> Result<(Vec<String>, &'a [String]), String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') && args[i].len() > 1 {
        if !allowed.contains(&args[i].as_str()) {
            return Err(format!("Illegal option {}", args[i]));
        }
        out.push(args[i].clone());
        i += 1;
    }
    Ok((out, &args[i..]))
}

pub(crate) async fn run(args: Vec<String>) -> anyhow::Result<i32> {
    let mut args = args;
    let mut url = None;
    if args.first().map(String::as_str) == Some("-fs") && args.len() > 1 {
        url = Some(args[1].clone());
        args.drain(..2);
    }
    let Some(cmd) = args.first().cloned() else {
        eprintln!("{USAGE}");
        return Ok(255);
    };
    // Help needs no NameNode (it failed with "no NameNode given" without one).
    if cmd == "-help" || cmd == "-usage" {
        println!("{USAGE}");
        return Ok(0);
    }
    let (url, namenodes) = crate::admin::namenodes(url, &[])?;
    let fs = FileSystem::connect_any(&namenodes, &Default::default()).await?;
    let home = format!("/user/{}", fs.user());
    let mut sh = Shell {
        fs,
        home,
        url,
        cmd: cmd.trim_start_matches('-').to_string(),
        errors: 0,
    };
    let rest = match sh.expand_args(&cmd, &args[1..]).await {
        Ok(r) => r,
        Err(Failed(msg)) => {
            eprintln!("{msg}");
            return Ok(1);
        }
    };
    let rest = &rest[..];
    let r = match cmd.as_str() {
        "-ls" => sh.ls(rest).await,
        "-mkdir" => sh.mkdir(rest).await,
        "-put" | "-copyFromLocal" => transfer::put(&mut sh, rest).await,
        "-get" | "-copyToLocal" => transfer::get(&mut sh, rest).await,
        "-cat" => transfer::cat(&mut sh, rest).await,
        "-appendToFile" => transfer::append_to_file(&mut sh, rest).await,
        "-truncate" => edit::truncate(&mut sh, rest).await,
        "-concat" => edit::concat(&mut sh, rest).await,
        "-tail" => transfer::tail(&mut sh, rest).await,
        "-cp" => transfer::cp(&mut sh, rest).await,
        "-checksum" => sh.checksum(rest).await,
        "-rm" => sh.rm(rest).await,
        "-rmdir" => sh.rmdir(rest).await,
        "-mv" => sh.mv(rest).await,
        "-du" => sh.du(rest).await,
        "-count" => sh.count(rest).await,
        "-stat" => sh.stat(rest).await,
        "-setrep" => sh.setrep(rest).await,
        "-chmod" => sh.chmod(rest).await,
        "-chown" => sh.chown(rest, false).await,
        "-chgrp" => sh.chown(rest, true).await,
        "-test" => return sh.test(rest).await,
        "-touchz" => sh.touchz(rest).await,
        other => {
            eprintln!("{}: Unknown command\n{USAGE}", other);
            return Ok(255);
        }
    };
    if let Err(Failed(msg)) = r {
        eprintln!("{msg}");
        sh.errors += 1;
    }
    Ok(if sh.errors > 0 { 1 } else { 0 })
}

impl Shell {
    /// An absolute path for `p` (relative ones live under the user's home).
    pub(crate) fn abs(&self, p: &str) -> String {
        let p = p
            .strip_prefix(&self.url)
            .or_else(|| {
                p.strip_prefix("hdfs://")
                    .and_then(|r| r.find('/').map(|i| &r[i..]))
            })
            .unwrap_or(p);
        let joined = if p.starts_with('/') {
            p.to_string()
        } else if p.is_empty() || p == "." {
            self.home.clone()
        } else {
            format!("{}/{}", self.home, p)
        };
        let mut parts: Vec<&str> = Vec::new();
        for c in joined.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                c => parts.push(c),
            }
        }
        format!("/{}", parts.join("/"))
    }

    /// Reports a per-path failure and goes on with the other paths, as Hadoop does.
    pub(crate) fn fail(&mut self, f: Failed) {
        eprintln!("{}", f.0);
        self.errors += 1;
    }

    pub(crate) async fn need(&self, p: &str) -> Result<FileStatus, Failed> {
        match self.fs.status(&self.abs(p)).await {
            Ok(Some(st)) => Ok(st),
            Ok(None) => Err(not_found(&self.cmd, p)),
            Err(e) => Err(remote(&self.cmd, e)),
        }
    }

    /// The status of `p`, or None after reporting why there is none (the command goes on
    /// with its other paths).
    pub(crate) async fn found(&mut self, p: &str) -> Option<FileStatus> {
        match self.need(p).await {
            Ok(st) => Some(st),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    pub(crate) async fn exists(&self, abs: &str) -> Result<bool, Failed> {
        Ok(self
            .fs
            .status(abs)
            .await
            .map_err(|e| self.err(e))?
            .is_some())
    }

    pub(crate) fn err(&self, e: ClientError) -> Failed {
        remote(&self.cmd, e)
    }

    pub(crate) fn usage(&self, why: &str) -> Failed {
        Failed(format!(
            "-{}: {why}\nUsage: ferrite dfs [generic options] -{} ...",
            self.cmd, self.cmd
        ))
    }

    async fn ls(&mut self, args: &[String]) -> Res {
        let (f, paths) = flags(args, &["-R", "-d", "-h"]).map_err(|e| self.usage(&e))?;
        let (recursive, dir_only, h) = (
            f.iter().any(|x| x == "-R"),
            f.iter().any(|x| x == "-d"),
            f.iter().any(|x| x == "-h"),
        );
        let paths = if paths.is_empty() {
            vec![".".to_string()]
        } else {
            paths.to_vec()
        };
        for p in &paths {
            let Some(st) = self.found(p).await else {
                continue;
            };
            let shown = if p.starts_with('/') {
                self.abs(p)
            } else {
                p.trim_end_matches('/').to_string()
            };
            if !st.is_dir || dir_only {
                self.print_rows(&[(shown, st)], h);
                continue;
            }
            if recursive {
                self.ls_tree(self.abs(p), shown, h).await?;
            } else {
                let entries = self.fs.list(&self.abs(p)).await.map_err(|e| self.err(e))?;
                println!("Found {} items", entries.len());
                let rows = child_rows(&shown, entries);
                self.print_rows(&rows, h);
            }
        }
        Ok(())
    }

    /// `-ls -R`: each directory's entries, each subdirectory's right after its own line.
    fn ls_tree<'a>(
        &'a self,
        dir: String,
        shown: String,
        h: bool,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Res> + 'a>> {
        Box::pin(async move {
            let entries = self.fs.list(&dir).await.map_err(|e| self.err(e))?;
            for (name, e) in child_rows(&shown, entries) {
                self.print_rows(&[(name.clone(), e.clone())], h);
                if e.is_dir {
                    let full = format!("{}/{}", dir.trim_end_matches('/'), e.path);
                    self.ls_tree(full, name, h).await?;
                }
            }
            Ok(())
        })
    }

    fn print_rows(&self, rows: &[(String, FileStatus)], h: bool) {
        let size = |st: &FileStatus| if h { human(st.len) } else { st.len.to_string() };
        let repl = |st: &FileStatus| {
            if st.is_dir {
                "-".to_string()
            } else {
                st.replication.to_string()
            }
        };
        let w_r = rows.iter().map(|(_, s)| repl(s).len()).max().unwrap_or(1);
        let w_o = rows.iter().map(|(_, s)| s.owner.len()).max().unwrap_or(1);
        let w_g = rows.iter().map(|(_, s)| s.group.len()).max().unwrap_or(1);
        let w_s = rows.iter().map(|(_, s)| size(s).len()).max().unwrap_or(1);
        let mut out = std::io::stdout().lock();
        for (name, st) in rows {
            let _ = writeln!(
                out,
                "{} {:>w_r$} {:<w_o$} {:<w_g$} {:>w_s$} {} {}",
                perm_string(st.is_dir, st.perm),
                repl(st),
                st.owner,
                st.group,
                size(st),
                ls_time(st.mtime),
                name
            );
        }
    }

    async fn mkdir(&mut self, args: &[String]) -> Res {
        let (f, paths) = flags(args, &["-p"]).map_err(|e| self.usage(&e))?;
        let parents = !f.is_empty();
        for p in paths {
            let abs = self.abs(p);
            if !parents {
                match self.fs.status(&abs).await {
                    Ok(Some(_)) => {
                        self.fail(Failed(format!("mkdir: `{p}': File exists")));
                        continue;
                    }
                    Ok(None) => {}
                    Err(e) => return Err(self.err(e)),
                }
                let parent = abs
                    .rsplit_once('/')
                    .map(|(d, _)| if d.is_empty() { "/" } else { d })
                    .unwrap_or("/");
                if self
                    .fs
                    .status(parent)
                    .await
                    .map_err(|e| self.err(e))?
                    .is_none()
                {
                    self.fail(Failed(format!("mkdir: `{p}': No such file or directory")));
                    continue;
                }
            }
            if let Err(e) = self.fs.mkdirs(&abs, 0o755, true).await {
                self.fail(self.err(e));
            }
        }
        Ok(())
    }

    async fn touchz(&mut self, args: &[String]) -> Res {
        for p in args {
            let abs = self.abs(p);
            if let Ok(Some(st)) = self.fs.status(&abs).await {
                if st.len != 0 {
                    self.fail(Failed(format!("touchz: `{p}': Not a zero-length file")));
                }
                continue;
            }
            let w = self
                .fs
                .create(&abs, &Default::default())
                .await
                .map_err(|e| self.err(e))?;
            w.close().await.map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    async fn checksum(&mut self, args: &[String]) -> Res {
        for p in args {
            let Some(st) = self.found(p).await else {
                continue;
            };
            if st.is_dir {
                self.fail(Failed(format!("checksum: `{p}': Is a directory")));
                continue;
            }
            let (algo, bytes) = self
                .fs
                .file_checksum(&self.abs(p))
                .await
                .map_err(|e| self.err(e))?;
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            println!("{p}\t{algo}\t{hex}");
        }
        Ok(())
    }

    /// The trash root and interval, when the server has trash on.
    async fn trash_interval(&self) -> Result<u64, Failed> {
        let d = self.fs.server_defaults().await.map_err(|e| {
            Failed(format!(
                "rm: Failed to get server trash configuration: {e}. Consider using -skipTrash option"
            ))
        })?;
        Ok(d.trash_interval.unwrap_or(0))
    }

    async fn rm(&mut self, args: &[String]) -> Res {
        let (f, paths) =
            flags(args, &["-r", "-R", "-f", "-skipTrash"]).map_err(|e| self.usage(&e))?;
        let recursive = f.iter().any(|x| x == "-r" || x == "-R");
        let force = f.iter().any(|x| x == "-f");
        let skip_trash = f.iter().any(|x| x == "-skipTrash");
        for p in paths {
            let abs = self.abs(p);
            let st = match self.fs.status(&abs).await.map_err(|e| self.err(e))? {
                Some(st) => st,
                None => {
                    if !force {
                        self.fail(not_found("rm", p));
                    }
                    continue;
                }
            };
            if st.is_dir && !recursive {
                self.fail(Failed(format!("rm: `{p}': Is a directory")));
                continue;
            }
            if !skip_trash
                && self.trash_interval().await? > 0
                && !abs.starts_with(&format!("{}/.Trash", self.home))
            {
                let base = format!("{}/.Trash/Current", self.home);
                let parent = abs.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
                self.fs
                    .mkdirs(&format!("{base}{parent}"), 0o700, true)
                    .await
                    .map_err(|e| self.err(e))?;
                let mut target = format!("{base}{abs}");
                if self
                    .fs
                    .status(&target)
                    .await
                    .map_err(|e| self.err(e))?
                    .is_some()
                {
                    target = format!("{target}{}", crate::dfs::transfer::now_ms());
                }
                self.fs
                    .rename_to_trash(&abs, &target)
                    .await
                    .map_err(|e| self.err(e))?;
                println!(
                    "Moved: '{}{}' to trash at: {}{}",
                    self.url, abs, self.url, target
                );
                continue;
            }
            match self.fs.delete(&abs, recursive).await {
                Ok(true) => println!("Deleted {p}"),
                Ok(false) => self.fail(Failed(format!("rm: Failed to delete {p}"))),
                Err(e) => self.fail(self.err(e)),
            }
        }
        Ok(())
    }

    async fn rmdir(&mut self, args: &[String]) -> Res {
        for p in args {
            let Some(st) = self.found(p).await else {
                continue;
            };
            if !st.is_dir {
                self.fail(Failed(format!("rmdir: `{p}': Is not a directory")));
                continue;
            }
            if let Err(e) = self.fs.delete(&self.abs(p), false).await {
                self.fail(Failed(format!(
                    "rmdir: `{p}': Directory is not empty ({e})"
                )));
            }
        }
        Ok(())
    }

    async fn mv(&mut self, args: &[String]) -> Res {
        if args.len() < 2 {
            return Err(self.usage("Not enough arguments: expected 2 but got 1"));
        }
        let (srcs, dst) = args.split_at(args.len() - 1);
        let dst_abs = self.abs(&dst[0]);
        let dst_is_dir = self.is_dir(&dst_abs).await?;
        if srcs.len() > 1 && !dst_is_dir {
            return Err(Failed(format!("mv: `{}': Is not a directory", dst[0])));
        }
        for s in srcs {
            if self.found(s).await.is_none() {
                continue;
            }
            let src_abs = self.abs(s);
            let target = Self::landing(&dst_abs, dst_is_dir, &src_abs);
            if dst_is_dir
                && self
                    .fs
                    .status(&target)
                    .await
                    .map_err(|e| self.err(e))?
                    .is_some()
            {
                self.fail(Failed(format!("mv: `{target}': File exists")));
                continue;
            }
            if !self
                .fs
                .rename(&src_abs, &target)
                .await
                .map_err(|e| self.err(e))?
            {
                self.fail(Failed(format!("mv: `{s}': Input/output error")));
            }
        }
        Ok(())
    }

    async fn du(&mut self, args: &[String]) -> Res {
        let (f, paths) = flags(args, &["-s", "-h", "-x", "-v"]).map_err(|e| self.usage(&e))?;
        let summary = f.iter().any(|x| x == "-s");
        let h = f.iter().any(|x| x == "-h");
        let size = |n: u64| if h { human(n) } else { n.to_string() };
        let paths = if paths.is_empty() {
            vec![".".to_string()]
        } else {
            paths.to_vec()
        };
        for p in &paths {
            let Some(st) = self.found(p).await else {
                continue;
            };
            let abs = self.abs(p);
            let mut rows = Vec::new();
            if st.is_dir && !summary {
                for e in self.fs.list(&abs).await.map_err(|e| self.err(e))? {
                    let child = format!("{}/{}", abs.trim_end_matches('/'), e.path);
                    let cs = self
                        .fs
                        .content_summary(&child)
                        .await
                        .map_err(|e| self.err(e))?;
                    let shown = format!("{}/{}", p.trim_end_matches('/'), e.path);
                    rows.push((size(cs.length), size(cs.space_consumed), shown));
                }
            } else {
                let cs = self
                    .fs
                    .content_summary(&abs)
                    .await
                    .map_err(|e| self.err(e))?;
                rows.push((size(cs.length), size(cs.space_consumed), p.clone()));
            }
            let w1 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
            let w2 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
            for (a, b, c) in rows {
                println!("{a:<w1$}  {b:<w2$}  {c}");
            }
        }
        Ok(())
    }

    async fn count(&mut self, args: &[String]) -> Res {
        let (f, paths) = flags(args, &["-q", "-h", "-v"]).map_err(|e| self.usage(&e))?;
        let quotas = f.iter().any(|x| x == "-q");
        let h = f.iter().any(|x| x == "-h");
        let size = |n: u64| if h { human(n) } else { n.to_string() };
        for p in paths {
            if self.found(p).await.is_none() {
                continue;
            }
            let cs = self
                .fs
                .content_summary(&self.abs(p))
                .await
                .map_err(|e| self.err(e))?;
            let mut line = String::new();
            if quotas {
                line.push_str(&format!(
                    "{:>12} {:>15} {:>12} {:>15} ",
                    "none", "inf", "none", "inf"
                ));
            }
            line.push_str(&format!(
                "{:>12} {:>12} {:>18} {p}",
                cs.dirs,
                cs.files,
                size(cs.length)
            ));
            println!("{line}");
        }
        Ok(())
    }

    async fn stat(&mut self, args: &[String]) -> Res {
        let (fmt, paths) = match args.first() {
            Some(f) if args.len() > 1 && f.contains('%') => (f.as_str(), &args[1..]),
            _ => ("%y", args),
        };
        for p in paths {
            match self.need(p).await {
                Ok(st) => {
                    let name = self.abs(p).rsplit('/').next().unwrap_or("").to_string();
                    println!("{}", format::stat(fmt, &st, &name));
                }
                Err(e) => self.fail(e),
            }
        }
        Ok(())
    }

    async fn setrep(&mut self, args: &[String]) -> Res {
        let (f, rest) = flags(args, &["-w", "-R"]).map_err(|e| self.usage(&e))?;
        let wait = f.iter().any(|x| x == "-w");
        let Some((rep, paths)) = rest.split_first() else {
            return Err(self.usage("Not enough arguments"));
        };
        let rep: u16 = rep.parse().map_err(|_| {
            Failed(format!(
                "setrep: Illegal replication, a positive integer expected: {rep}"
            ))
        })?;
        for p in paths {
            let Some(st) = self.found(p).await else {
                continue;
            };
            let abs = self.abs(p);
            let files = if st.is_dir {
                self.files_under(&abs).await?
            } else {
                vec![abs]
            };
            for file in &files {
                self.fs
                    .set_replication(file, rep)
                    .await
                    .map_err(|e| self.err(e))?;
                println!("Replication {rep} set: {file}");
            }
            if wait {
                for file in &files {
                    print!("Waiting for {file} ...");
                    let _ = std::io::stdout().flush();
                    loop {
                        let lbs = self
                            .fs
                            .block_locations(file)
                            .await
                            .map_err(|e| self.err(e))?;
                        if lbs.blocks.iter().all(|b| b.locs.len() == rep as usize) {
                            break;
                        }
                        print!(".");
                        let _ = std::io::stdout().flush();
                        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    }
                    println!(" done");
                }
            }
        }
        Ok(())
    }

    async fn files_under(&self, dir: &str) -> Result<Vec<String>, Failed> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_string()];
        while let Some(d) = stack.pop() {
            for e in self.fs.list(&d).await.map_err(|e| self.err(e))? {
                let full = format!("{}/{}", d.trim_end_matches('/'), e.path);
                if e.is_dir {
                    stack.push(full);
                } else {
                    out.push(full);
                }
            }
        }
        Ok(out)
    }

    /// The paths a command acts on: `p` itself, or with `recursive` everything under it
    /// too. Empty (after reporting why) when `p` does not exist.
    async fn targets(
        &mut self,
        p: &str,
        recursive: bool,
    ) -> Result<Vec<(String, FileStatus)>, Failed> {
        if recursive {
            return self.tree(p).await;
        }
        Ok(self
            .found(p)
            .await
            .map(|st| vec![(self.abs(p), st)])
            .unwrap_or_default())
    }

    /// Where `src` lands: inside `dst` when it is a directory, else at `dst`.
    pub(crate) fn landing(dst_abs: &str, dst_is_dir: bool, src_abs: &str) -> String {
        if dst_is_dir {
            let name = src_abs.rsplit('/').next().unwrap_or("");
            format!("{}/{name}", dst_abs.trim_end_matches('/'))
        } else {
            dst_abs.to_string()
        }
    }

    pub(crate) async fn is_dir(&self, abs: &str) -> Result<bool, Failed> {
        Ok(matches!(self.fs.status(abs).await.map_err(|e| self.err(e))?, Some(s) if s.is_dir))
    }

    /// Every path at and under `p` (for -R).
    pub(crate) async fn tree(&self, p: &str) -> Result<Vec<(String, FileStatus)>, Failed> {
        let st = self.need(p).await?;
        let abs = self.abs(p);
        let mut out = vec![(abs.clone(), st.clone())];
        if st.is_dir {
            let mut stack = vec![abs];
            while let Some(d) = stack.pop() {
                for e in self.fs.list(&d).await.map_err(|e| self.err(e))? {
                    let full = format!("{}/{}", d.trim_end_matches('/'), e.path);
                    if e.is_dir {
                        stack.push(full.clone());
                    }
                    out.push((full, e));
                }
            }
        }
        Ok(out)
    }

    async fn chmod(&mut self, args: &[String]) -> Res {
        let (f, rest) = flags(args, &["-R"]).map_err(|e| self.usage(&e))?;
        let Some((mode, paths)) = rest.split_first() else {
            return Err(self.usage("Not enough arguments"));
        };
        for p in paths {
            let targets = self.targets(p, !f.is_empty()).await?;
            for (path, st) in targets {
                let perm = format::chmod(mode, st.perm, st.is_dir).map_err(Failed)?;
                if let Err(e) = self.fs.set_permission(&path, perm).await {
                    self.fail(self.err(e));
                }
            }
        }
        Ok(())
    }

    async fn chown(&mut self, args: &[String], group_only: bool) -> Res {
        let (f, rest) = flags(args, &["-R"]).map_err(|e| self.usage(&e))?;
        let Some((spec, paths)) = rest.split_first() else {
            return Err(self.usage("Not enough arguments"));
        };
        let (owner, group) = if group_only {
            (None, Some(spec.as_str()))
        } else {
            match spec.split_once(':') {
                Some((o, g)) => ((!o.is_empty()).then_some(o), (!g.is_empty()).then_some(g)),
                None => (Some(spec.as_str()), None),
            }
        };
        for p in paths {
            let targets = self.targets(p, !f.is_empty()).await?;
            for (path, _) in targets {
                if let Err(e) = self.fs.set_owner(&path, owner, group).await {
                    self.fail(self.err(e));
                }
            }
        }
        Ok(())
    }

    async fn test(&mut self, args: &[String]) -> anyhow::Result<i32> {
        let (Some(flag), Some(p)) = (args.first(), args.get(1)) else {
            eprintln!("-test: Not enough arguments: expected 1 but got 0");
            return Ok(255);
        };
        let st = self.fs.status(&self.abs(p)).await?;
        let ok = match (flag.as_str(), &st) {
            ("-e", s) => s.is_some(),
            ("-d", Some(s)) => s.is_dir,
            ("-f", Some(s)) => !s.is_dir,
            ("-s", Some(s)) => s.len > 0,
            ("-z", Some(s)) => s.len == 0,
            ("-d" | "-f" | "-s" | "-z", None) => false,
            (other, _) => {
                eprintln!("-test: Illegal option {other}");
                return Ok(255);
            }
        };
        Ok(if ok { 0 } else { 1 })
    }
}
