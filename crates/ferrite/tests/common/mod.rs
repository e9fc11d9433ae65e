#![allow(unreachable_pub)] // helpers every test binary of this crate shares
//! What the process-level tests share: spawning `ferrite namenode` and `ferrite datanode`
//! processes on ephemeral loopback ports, stopping them, and test data. Each test binary
//! uses its own subset.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use ferrite_client::{CreateOptions, FileSystem};

pub mod disk;
pub mod ha;
pub mod java;

pub const BLOCK: u64 = 1024;

pub struct Proc {
    pub child: Child,
    /// The address the ready line gives first (a NameNode's URL, a DataNode's transfer
    /// address).
    pub ready: String,
    /// Its HTTP server (`/jmx`), when the ready line names one.
    pub http: Option<SocketAddr>,
    /// The whole ready line.
    pub line: String,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn spawn(args: &[String]) -> Proc {
    spawn_with_env(args, &[])
}

/// [`spawn`] with environment variables of its own.
pub fn spawn_with_env(args: &[String], env: &[(&str, &std::ffi::OsStr)]) -> Proc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferrite"))
        .args(args)
        .envs(env.iter().copied())
        .env("FERRITE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn ferrite");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("ready "), "unexpected first line {line:?}");
    let mut words = line.split_whitespace().skip(1);
    Proc {
        child,
        ready: words.next().unwrap_or("").to_string(),
        http: words
            .next()
            .and_then(|h| h.trim_start_matches("http://").parse().ok()),
        line: line.trim_end().to_string(),
    }
}

/// A DataNode process of the NameNode at `nn` (`host:port`) serving on address `ip`, so
/// the NameNode sees it as a host of its own, with its data in `root/dn<i>`.
pub fn datanode_at(root: &Path, nn: &str, ip: &str, i: usize) -> Proc {
    datanode_with(root, nn, ip, i, &[])
}

/// [`datanode_at`] with configuration keys of its own (`key=value`).
pub fn datanode_with(root: &Path, nn: &str, ip: &str, i: usize, conf: &[&str]) -> Proc {
    datanode_with_env(root, nn, ip, i, conf, &[])
}

/// [`datanode_with`] with environment variables of its own.
pub fn datanode_with_env(
    root: &Path,
    nn: &str,
    ip: &str,
    i: usize,
    conf: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> Proc {
    let mut args: Vec<String> = [
        "datanode",
        "--namenode",
        nn,
        "--bind",
        ip,
        "--port",
        "0",
        "--ipc-port",
        "0",
        "--data",
        &root.join(format!("dn{i}")).display().to_string(),
        "--conf",
        "dfs.heartbeat.interval=1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for kv in conf {
        args.push("--conf".into());
        args.push(kv.to_string());
    }
    spawn_with_env(&args, env)
}

/// Waits until the NameNode counts `n` live DataNodes; panics after ten seconds.
pub async fn wait_live(fs: &FileSystem, n: usize) {
    for _ in 0..100 {
        if fs.live_datanodes().await.unwrap().len() == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{n} DataNodes did not register");
}

/// The JSON document at `path` of the HTTP server at `http`, over plain HTTP/1.0.
pub fn http_json(http: SocketAddr, path: &str) -> serde_json::Value {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(http).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {http}\r\n\r\n").unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    serde_json::from_str(body).unwrap()
}

/// Bean `name` of the `/jmx` at `http` (the first that matches), over plain HTTP, as
/// HDFS's monitoring reads it.
pub fn jmx_bean(http: SocketAddr, name: &str) -> serde_json::Value {
    http_json(http, &format!("/jmx?qry={name}"))["beans"][0].take()
}

/// Parses one of the attributes HDFS gives as JSON inside a string.
pub fn json_attr(bean: &serde_json::Value, attr: &str) -> serde_json::Value {
    serde_json::from_str(
        bean[attr]
            .as_str()
            .unwrap_or_else(|| panic!("{attr} in {bean}")),
    )
    .unwrap()
}

pub struct Cluster {
    pub root: PathBuf,
    pub nn: Option<Proc>,
    pub dns: Vec<Proc>,
    pub url: String,
}

impl Cluster {
    pub fn start(root: &Path, nn_port: u16) -> Cluster {
        Self::start_with(root, nn_port, &[], true)
    }

    pub fn start_with(root: &Path, nn_port: u16, nn_conf: &[&str], datanodes: bool) -> Cluster {
        let conf = |k: &str| vec!["--conf".to_string(), k.to_string()];
        let mut args = vec![
            "namenode".to_string(),
            "--port".into(),
            nn_port.to_string(),
            "--data".into(),
            root.join("nn").display().to_string(),
        ];
        args.extend(conf("dfs.namenode.fs-limits.min-block-size=0"));
        args.extend(conf("dfs.namenode.safemode.extension=0"));
        args.extend(conf("dfs.heartbeat.interval=1"));
        args.extend(conf("dfs.namenode.redundancy.interval.seconds=1"));
        for c in nn_conf {
            args.extend(conf(c));
        }
        let nn = spawn(&args);
        let url = nn.ready.clone();
        let mut c = Cluster {
            root: root.to_path_buf(),
            nn: Some(nn),
            dns: Vec::new(),
            url,
        };
        if datanodes {
            c.start_datanodes();
        }
        c
    }

    /// Starts the three DataNodes (on their folders from any earlier run).
    pub fn start_datanodes(&mut self) {
        self.dns = (0..3).map(|i| self.spawn_datanode(i)).collect();
    }

    /// Starts one more DataNode, `dn{n}` for the `n` running.
    pub fn add_datanode(&mut self) {
        let dn = self.spawn_datanode(self.dns.len());
        self.dns.push(dn);
    }

    /// Kills DataNode `i` (SIGKILL) and waits for it to be gone.
    pub fn kill_datanode(&mut self, i: usize) {
        let _ = self.dns[i].child.kill();
        let _ = self.dns[i].child.wait();
    }

    fn spawn_datanode(&self, i: usize) -> Proc {
        let nn_addr = self.url.trim_start_matches("hdfs://").to_string();
        let a: Vec<String> = [
            "datanode",
            "--namenode",
            &nn_addr,
            "--port",
            "0",
            "--ipc-port",
            "0",
            "--data",
            &self.root.join(format!("dn{i}")).display().to_string(),
            "--conf",
            "dfs.heartbeat.interval=1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        spawn(&a)
    }

    /// The NameNode process alone (for a cluster started without DataNodes).
    pub fn into_namenode(mut self) -> Proc {
        self.nn.take().expect("a NameNode")
    }

    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }

    pub fn stop(mut self) {
        for mut d in self.dns.drain(..) {
            term(&mut d.child);
        }
        if let Some(mut nn) = self.nn.take() {
            term(&mut nn.child);
        }
    }

    pub fn dn_addr(&self, i: usize) -> SocketAddr {
        self.dns[i].ready.parse().unwrap()
    }

    /// The block file of `id` on every DataNode that has one.
    pub fn block_files(&self, id: u64) -> Vec<PathBuf> {
        let mut out = Vec::new();
        find(&self.root, &format!("blk_{id}"), &mut out);
        out.retain(|p| p.to_string_lossy().contains("/finalized/"));
        out
    }
}

pub fn term(c: &mut Child) {
    send_signal(c.id(), 15);
    for _ in 0..100 {
        if let Ok(Some(_)) = c.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = c.kill();
    let _ = c.wait();
}

/// Sends a signal (the process may already be gone: a test killed it).
pub fn send_signal(pid: u32, sig: i32) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

pub fn find(dir: &Path, name: &str, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            find(&p, name, out);
        } else if p.file_name().and_then(|n| n.to_str()) == Some(name) {
            out.push(p);
        }
    }
}

pub fn data(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e3779b97f4a7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub async fn put(fs: &FileSystem, path: &str, bytes: &[u8]) {
    let opts = CreateOptions {
        block_size: Some(BLOCK),
        overwrite: true,
        ..Default::default()
    };
    let mut w = fs.create(path, &opts).await.unwrap();
    // Odd-sized writes, so packets and blocks are cut independently of the caller.
    for piece in bytes.chunks(777) {
        w.write(piece).await.unwrap();
    }
    w.close().await.unwrap();
}

pub async fn get(fs: &FileSystem, path: &str) -> Vec<u8> {
    fs.open(path).await.unwrap().read_to_end().await.unwrap()
}
