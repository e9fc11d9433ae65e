//! `ferrite fsck`: `hdfs fsck` against the NameNode's `/fsck` (its HTTP port), with
//! DFSck's options, output and exit codes, so scripts written for one run with the other.
//! The option parsing, the corrupt-file listing's paging and the exit code are pure; the
//! HTTP GET (hyper's client, one connection per request) is at the edge.

use std::io::Write;

use anyhow::{anyhow, Context};
use clap::Args;
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;

const USAGE: &str = "Usage: ferrite fsck [--http HOST:PORT] <path> [-list-corruptfileblocks | \
[-move | -delete | -openforwrite] [-files [-blocks [-locations | -racks]]]]";

#[derive(Args)]
pub(crate) struct FsckArgs {
    /// The NameNode's HTTP address (HDFS's `dfs.namenode.http-address`).
    #[arg(long, default_value = "127.0.0.1:9870")]
    http: String,
    /// HDFS's fsck arguments: a path, then -files, -blocks, -locations, -racks,
    /// -openforwrite, -delete, -list-corruptfileblocks.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

/// What the arguments ask the servlet for.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    /// The query after `/fsck?`, without the cookie.
    query: String,
    dir: String,
    list_corrupt: bool,
}

/// DFSck's arguments into the servlet's query, as DFSck builds it.
fn request(args: &[String], user: &str) -> Result<Request, String> {
    let mut q = form_urlencoded::Serializer::new(String::new());
    q.append_pair("ugi", user);
    let mut dir = None;
    let mut list_corrupt = false;
    for a in args {
        let flag = match a.as_str() {
            "-move" => "move",
            "-delete" => "delete",
            "-files" => "files",
            "-openforwrite" => "openforwrite",
            "-blocks" => "blocks",
            "-locations" => "locations",
            "-racks" => "racks",
            "-replicaDetails" => "replicadetails",
            "-list-corruptfileblocks" => {
                list_corrupt = true;
                "listcorruptfileblocks"
            }
            p if !p.starts_with('-') => {
                if dir.replace(p.to_string()).is_some() {
                    return Err(format!(
                        "fsck: can only operate on one path at a time '{p}'"
                    ));
                }
                continue;
            }
            other => return Err(format!("fsck: Illegal option '{other}'")),
        };
        q.append_pair(flag, "1");
    }
    let dir = dir.unwrap_or_else(|| "/".into());
    q.append_pair("path", &dir);
    Ok(Request {
        query: q.finish(),
        dir,
        list_corrupt,
    })
}

/// DFSck's exit code from the report's last line.
fn exit_code(last_line: &str) -> i32 {
    if last_line.ends_with("is HEALTHY") || last_line.ends_with("does not exist") {
        0
    } else if last_line.ends_with("is CORRUPT") {
        1
    } else if last_line.ends_with("is DECOMMISSIONED") {
        2
    } else if last_line.ends_with("is DECOMMISSIONING") {
        3
    } else {
        -1
    }
}

/// A byte stream cut into whole lines, remembering the last one.
#[derive(Default)]
struct Lines {
    partial: Vec<u8>,
    last: String,
}

impl Lines {
    /// The whole lines `chunk` completes, each with its newline.
    fn take(&mut self, chunk: &[u8]) -> String {
        self.partial.extend_from_slice(chunk);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return String::new();
        };
        let done: Vec<u8> = self.partial.drain(..=end).collect();
        let text = String::from_utf8_lossy(&done).into_owned();
        if let Some(l) = text.trim_end_matches('\n').rsplit('\n').next() {
            self.last = l.to_string();
        }
        text
    }

    /// What is left (a last line without its newline gets one) and the last line.
    fn finish(mut self) -> (String, String) {
        if self.partial.is_empty() {
            return (String::new(), self.last);
        }
        let rest = String::from_utf8_lossy(&self.partial).into_owned();
        self.last = rest.clone();
        (rest + "\n", self.last)
    }
}

/// The corrupt-file listing across pages, as DFSck gathers it.
#[derive(Default)]
struct CorruptListing {
    cookie: u64,
    found: u64,
    done: bool,
    out: String,
}

impl CorruptListing {
    /// Takes one page's text; afterwards `done` says whether to ask for another.
    fn page(&mut self, dir: &str, text: &str) {
        let before = self.cookie;
        for line in text.lines() {
            if let Some(c) = line.strip_prefix("Cookie:") {
                match c.trim().parse() {
                    Ok(c) => self.cookie = c,
                    Err(_) => {
                        self.done = true;
                        return;
                    }
                }
                continue;
            }
            if line.ends_with("has no CORRUPT files")
                || line.ends_with("has no more CORRUPT files")
                || line.ends_with("does not exist")
            {
                self.done = true;
                return;
            }
            if line.is_empty()
                || line.starts_with("FSCK started by")
                || line.starts_with("FSCK ended at")
                || line.starts_with("The filesystem under path")
            {
                continue;
            }
            self.found += 1;
            if self.found == 1 {
                self.out.push_str(&format!(
                    "The list of corrupt blocks under path '{dir}' are:\n"
                ));
            }
            self.out.push_str(line);
            self.out.push('\n');
        }
        // A page that moved the cookie nowhere would be asked for again for ever.
        if self.cookie == before {
            self.done = true;
        }
    }

    fn finish(mut self, dir: &str) -> (String, i32) {
        self.out.push_str(&format!(
            "The filesystem under path '{dir}' has {} CORRUPT blocks\n",
            self.found
        ));
        (self.out, if self.found == 0 { 0 } else { -1 })
    }
}

pub(crate) async fn run(a: FsckArgs) -> anyhow::Result<()> {
    if a.args.is_empty() {
        eprintln!("{USAGE}");
        std::process::exit(255);
    }
    let req = match request(&a.args, &ferrite_client::fs::default_user()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            std::process::exit(255);
        }
    };
    // DFSck resolves the path through the file system first, and a missing one ends it
    // there, with exit code 0 and nothing on stdout. The HTTP port's WebHDFS tells the same.
    let status = format!(
        "/webhdfs/v1{}?op=GETFILESTATUS&user.name={}",
        ferrite_http::webhdfs::encode_path(&req.dir),
        ferrite_http::webhdfs::encode_value(&ferrite_client::fs::default_user())
    );
    if get(&a.http, &status, |_| {}).await? == hyper::StatusCode::NOT_FOUND {
        eprintln!(
            "FileSystem is inaccessible due to:\njava.io.FileNotFoundException: File does not exist: {}\nDFSck exiting.",
            req.dir
        );
        std::process::exit(0);
    }
    let base = format!("/fsck?{}", req.query);
    eprintln!("Connecting to namenode via http://{}{base}", a.http);
    let code = if req.list_corrupt {
        let mut listing = CorruptListing::default();
        while !listing.done {
            let url = match listing.cookie {
                0 => base.clone(),
                c => format!("{base}&startblockafter={c}"),
            };
            let mut page = Vec::new();
            get(&a.http, &url, |chunk| page.extend_from_slice(chunk)).await?;
            listing.page(&req.dir, &String::from_utf8_lossy(&page));
        }
        let (text, code) = listing.finish(&req.dir);
        print!("{text}");
        code
    } else {
        // The report streams as the walk goes: print it line by line as it comes, each
        // line ended as DFSck's println ends it (the servlet's last line has no newline).
        let mut lines = Lines::default();
        let mut stdout = std::io::stdout().lock();
        get(&a.http, &base, |chunk| {
            let _ = stdout.write_all(lines.take(chunk).as_bytes());
        })
        .await?;
        let (rest, last) = lines.finish();
        let _ = stdout.write_all(rest.as_bytes());
        let _ = stdout.flush();
        exit_code(&last)
    };
    std::process::exit(code)
}

/// One GET of `path_and_query` from `addr`, its body handed over as it arrives. Any
/// status but 200 and 404 is an error.
async fn get(
    addr: &str,
    path_and_query: &str,
    mut each: impl FnMut(&[u8]),
) -> anyhow::Result<hyper::StatusCode> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("cannot reach the NameNode's HTTP port at {addr}"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    let driver = tokio::spawn(conn);
    let req = hyper::Request::get(path_and_query)
        .header(hyper::header::HOST, addr)
        .body(http_body_util::Empty::<bytes::Bytes>::new())?;
    let mut resp = sender.send_request(req).await?;
    let status = resp.status();
    if !status.is_success() && status != hyper::StatusCode::NOT_FOUND {
        return Err(anyhow!("fsck: the NameNode answered {status}"));
    }
    while let Some(frame) = resp.body_mut().frame().await {
        if let Ok(data) = frame?.into_data() {
            each(&data);
        }
    }
    driver.abort();
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_become_dfscks_query() {
        let r = request(&args(&["/a b", "-files", "-blocks", "-locations"]), "alice").unwrap();
        assert_eq!(
            r.query,
            "ugi=alice&files=1&blocks=1&locations=1&path=%2Fa+b"
        );
        assert_eq!(r.dir, "/a b");
        assert!(!r.list_corrupt);
        let r = request(&args(&["-list-corruptfileblocks"]), "u").unwrap();
        assert!(r.list_corrupt);
        assert_eq!(r.dir, "/");
        assert_eq!(
            request(&args(&["/a", "/b"]), "u").unwrap_err(),
            "fsck: can only operate on one path at a time '/b'"
        );
        assert_eq!(
            request(&args(&["-bogus"]), "u").unwrap_err(),
            "fsck: Illegal option '-bogus'"
        );
    }

    #[test]
    fn lines_are_ended_as_printed_line_by_line() {
        let mut l = Lines::default();
        assert_eq!(l.take(b"FSCK sta"), "");
        assert_eq!(l.take(b"rted\n\nThe file"), "FSCK started\n\n");
        assert_eq!(l.take(b"system is HEALTHY"), "");
        assert_eq!(
            l.finish(),
            (
                "The filesystem is HEALTHY\n".to_string(),
                "The filesystem is HEALTHY".to_string()
            )
        );
        let mut ended = Lines::default();
        assert_eq!(ended.take(b"a\nb\n"), "a\nb\n");
        assert_eq!(ended.finish(), (String::new(), "b".to_string()));
    }

    #[test]
    fn exit_codes_follow_the_verdict() {
        assert_eq!(exit_code("The filesystem under path '/' is HEALTHY"), 0);
        assert_eq!(exit_code("The filesystem under path '/' is CORRUPT"), 1);
        assert_eq!(exit_code("Path '/x' does not exist"), 0);
        assert_eq!(exit_code("something else"), -1);
    }

    #[test]
    fn the_corrupt_listing_follows_cookies_until_no_more() {
        let mut l = CorruptListing::default();
        l.page(
            "/",
            "FSCK started by u\nCookie:\t2\nblk_1\t/a\nblk_2\t/b\n\n\nThe filesystem under path '/' has 2 CORRUPT files\n",
        );
        assert!(!l.done);
        assert_eq!(l.cookie, 2);
        l.page(
            "/",
            "FSCK started by u\nCookie:\t2\n\n\nThe filesystem under path '/' has no more CORRUPT files\n",
        );
        assert!(l.done);
        let (text, code) = l.finish("/");
        assert_eq!(
            text,
            "The list of corrupt blocks under path '/' are:\nblk_1\t/a\nblk_2\t/b\n\
             The filesystem under path '/' has 2 CORRUPT blocks\n"
        );
        assert_eq!(code, -1);
        let mut none = CorruptListing::default();
        none.page(
            "/",
            "Cookie:\t0\n\n\nThe filesystem under path '/' has no CORRUPT files\n",
        );
        assert!(none.done);
        assert_eq!(none.finish("/").1, 0);
    }
}
