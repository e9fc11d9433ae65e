//! `/fsck` on the NameNode's HTTP port, as HDFS's `FsckServlet` answers it, so that an
//! unmodified `hdfs fsck` (and `ferrite fsck`) prints HDFS's report: the tree walked a
//! directory page at a time through the service (no lock held across the walk), each file's
//! blocks checked against the block map, the totals and the verdict last.

pub mod report;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{ConnectInfo, State};
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use ferrite_http::webhdfs::{self as web, Params, ANONYMOUS};

use crate::clock::now_ms;
use crate::error::FsError;
use crate::service::{Admitted, NameNodeService, NodeFilter, Operation};
use crate::webhdfs::WebHdfsSlot;
use report::{Options, Totals};

pub fn router(slot: Arc<WebHdfsSlot>) -> Router {
    Router::new().route("/fsck", get(fsck)).with_state(slot)
}

async fn fsck(
    State(slot): State<Arc<WebHdfsSlot>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
) -> Response {
    let Some(w) = slot.get() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "NameNode still not started\n",
        )
            .into_response();
    };
    let p = web::query_of(&uri);
    let text = Fsck::new(&w.nn, &p, &peer.ip().to_string()).run().await;
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/plain;charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        text,
    )
        .into_response()
}

/// One fsck run: its options, what it has found so far, and the text it writes.
pub struct Fsck<'a> {
    nn: &'a NameNodeService,
    user: String,
    ip: String,
    path: String,
    o: Options,
    list_corrupt: bool,
    /// `startblockafter`: how many corrupt blocks an earlier page of the listing gave.
    listed_before: usize,
    delete: bool,
    t: Totals,
    dirs: u64,
    out: String,
    corrupt_files: Vec<String>,
}

/// A flag as `DFSck` sends it (`files=1`); any value but `0`/`false` turns it on.
fn flag(p: &Params, name: &str) -> bool {
    p.get(name)
        .is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
}

impl<'a> Fsck<'a> {
    pub fn new(nn: &'a NameNodeService, p: &Params, ip: &str) -> Self {
        Fsck {
            nn,
            user: p
                .get("ugi")
                .filter(|u| !u.is_empty())
                .unwrap_or(ANONYMOUS)
                .to_string(),
            ip: ip.to_string(),
            path: p
                .get("path")
                .filter(|p| !p.is_empty())
                .unwrap_or("/")
                .to_string(),
            o: Options {
                files: flag(p, "files"),
                blocks: flag(p, "blocks"),
                locations: flag(p, "locations"),
                racks: flag(p, "racks"),
                open_for_write: flag(p, "openforwrite"),
            },
            list_corrupt: flag(p, "listcorruptfileblocks"),
            listed_before: p
                .get("startblockafter")
                .and_then(|c| c.parse().ok())
                .unwrap_or(0),
            delete: flag(p, "delete"),
            t: Totals::default(),
            dirs: 0,
            out: String::new(),
            corrupt_files: Vec::new(),
        }
    }

    /// The whole report.
    pub async fn run(mut self) -> String {
        let started = Instant::now();
        self.out = format!(
            "FSCK started by {} (auth:SIMPLE) from /{} for path {} at {}\n",
            self.user,
            self.ip,
            self.path,
            report::java_date(now_ms())
        );
        if let Err(e) = self.walk_all().await {
            self.out.push_str(&format!(
                "FSCK ended at {} in {} milliseconds\n{e}\n\n\nFsck on path '{}' FAILED",
                report::java_date(now_ms()),
                started.elapsed().as_millis(),
                self.path
            ));
            return self.out;
        }
        if self.list_corrupt {
            return self.corrupt_listing();
        }
        self.summary(started)
    }

    /// Admission, then the walk; a missing path ends the report here.
    async fn walk_all(&mut self) -> Result<(), FsError> {
        let who = self
            .nn
            .admit(self.user.as_str(), self.ip.as_str(), Operation::Fsck)?;
        let root = self.nn.file_info(&who, &self.path)?;
        match root {
            None => {
                self.out
                    .push_str(&format!("\n\nPath '{}' does not exist", self.path));
                self.path.clear();
            }
            Some(st) => self.check(&who, self.path.clone(), st.is_dir).await?,
        }
        Ok(())
    }

    /// One path: a directory's entries page by page, or a file's blocks.
    async fn check(&mut self, who: &Admitted, path: String, is_dir: bool) -> Result<(), FsError> {
        let mut stack = vec![(path, is_dir)];
        while let Some((path, is_dir)) = stack.pop() {
            // HDFS marks progress with a blank line every thousand entries, the first
            // one included.
            if (self.dirs + self.t.files).is_multiple_of(1000) {
                self.out.push('\n');
            }
            if is_dir {
                if self.o.files {
                    self.out.push_str(&format!("{path} <dir>\n"));
                }
                self.dirs += 1;
                let children = self.children(who, &path)?;
                stack.extend(children.into_iter().rev());
            } else {
                self.check_file(who, &path).await?;
            }
        }
        Ok(())
    }

    /// A directory's entries as (path, is a directory), in name order.
    fn children(&self, who: &Admitted, dir: &str) -> Result<Vec<(String, bool)>, FsError> {
        let mut out = Vec::new();
        let mut after = Vec::new();
        loop {
            let Some(page) = self.nn.listing(who, dir, &after, false)? else {
                return Ok(out);
            };
            for e in &page.entries {
                let name = String::from_utf8_lossy(&e.name);
                let child = if dir == "/" {
                    format!("/{name}")
                } else {
                    format!("{dir}/{name}")
                };
                out.push((child, e.is_dir));
            }
            match page.entries.last() {
                Some(last) if page.remaining > 0 => after = last.name.clone(),
                _ => return Ok(out),
            }
        }
    }

    async fn check_file(&mut self, who: &Admitted, path: &str) -> Result<(), FsError> {
        let Some(f) = self.nn.fsck_file(who, path)? else {
            return Ok(()); // deleted meanwhile
        };
        let pool = self.nn.identity().block_pool_id.clone();
        let min = self.nn.config().min_replication;
        let bad = report::check_file(&f, &pool, min, &self.o, &mut self.t, &mut self.out);
        if bad {
            for b in f.blocks.iter().filter(|b| b.corrupt || b.live.is_empty()) {
                self.corrupt_files.push(format!("blk_{}\t{path}", b.id));
            }
            if self.delete {
                // Removed as the superuser, whoever asked for the check.
                let su = self.nn.superuser().to_string();
                let deleted = match self.nn.admit(su, who.ip(), Operation::Delete) {
                    Ok(su) => self.nn.delete(&su, path, false).await,
                    Err(e) => Err(e),
                };
                match deleted {
                    Ok(_) => tracing::warn!(path, "fsck: corrupt file deleted"),
                    Err(e) => self
                        .out
                        .push_str(&format!("\n{path}: failed to delete: {e}")),
                }
            }
        }
        Ok(())
    }

    /// `-list-corruptfileblocks`: a page of `blk_<id>\t<path>` lines after the cookie
    /// `DFSck` sent back, and the cookie for the next page. `DFSck` asks again until a
    /// page says "no more".
    fn corrupt_listing(mut self) -> String {
        let start = self.listed_before.min(self.corrupt_files.len());
        let page = &self.corrupt_files[start..];
        let filler = if !page.is_empty() {
            page.len().to_string()
        } else if start == 0 {
            "no".to_string()
        } else {
            "no more".to_string()
        };
        // Only the header stays: the listing replaces the walk's lines.
        let header = self.out.find('\n').map_or(self.out.len(), |i| i + 1);
        self.out.truncate(header);
        self.out
            .push_str(&format!("Cookie:\t{}\n", start + page.len()));
        for line in page {
            self.out.push_str(line);
            self.out.push('\n');
        }
        self.out.push_str(&format!(
            "\n\nThe filesystem under path '{}' has {filler} CORRUPT files\n\n",
            self.path
        ));
        self.out
    }

    fn summary(mut self, started: Instant) -> String {
        if self.path.is_empty() {
            return self.out; // the path does not exist
        }
        let live = self.nn.datanode_report(NodeFilter::Live).len();
        let c = self.nn.config();
        let verdict = if self.t.healthy() {
            "HEALTHY"
        } else {
            "CORRUPT"
        };
        let o = &mut self.out;
        o.push_str(&format!("\nStatus: {verdict}\n"));
        o.push_str(&format!(" Number of data-nodes:\t{live}\n"));
        o.push_str(&format!(" Number of racks:\t\t{}\n", usize::from(live > 0)));
        o.push_str(&format!(" Total dirs:\t\t\t{}\n", self.dirs));
        o.push_str(" Total symlinks:\t\t0\n");
        o.push_str("\nReplicated Blocks:\n");
        o.push_str(&report::totals_text(
            &self.t,
            c.replication,
            c.min_replication,
        ));
        o.push_str("\n\nErasure Coded Block Groups:\n");
        o.push_str(report::EC_TOTALS);
        o.push_str(&format!(
            "\nFSCK ended at {} in {} milliseconds\n",
            report::java_date(now_ms()),
            started.elapsed().as_millis()
        ));
        o.push_str(&format!(
            "\n\nThe filesystem under path '{}' is {verdict}",
            self.path
        ));
        self.out
    }
}
