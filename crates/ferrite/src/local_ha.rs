//! `ferrite local --namenodes N`: an HA cluster on this machine. Each NameNode is a
//! `ferrite namenode` process of its own (so that one can be killed to watch a failover),
//! configured in HDFS's keys through a `hdfs-site.xml` written under the data folder —
//! the same file a client points `HADOOP_CONF_DIR` at. The DataNodes run in this process
//! and report to every NameNode.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use anyhow::Context;
use ferrite_datanode::DnConfig;
use tracing::{info, warn};

use crate::serve::{config_pairs, start_local_datanodes, ServeArgs, Shutdown};

/// The nameservice `ferrite local` names its group.
pub(crate) const NAMESERVICE: &str = "ferrite";

/// One NameNode's addresses.
struct Addrs {
    rpc: String,
    http: String,
    raft: String,
}

/// A free port on `bind`, or `base + i` when the caller chose fixed ports.
///
/// The NameNode processes bind their ports after this one lets go of it, so a port the
/// kernel hands out (`bind(0)`, and every outgoing connection's local port) could be taken
/// by anyone in between: under parallel tests a NameNode of the group then failed with
/// "Address already in use". Ports below the kernel's ephemeral range are not handed out
/// that way, so a free one picked there stays free unless someone names it.
fn port(bind: &str, base: u16, i: u16) -> anyhow::Result<u16> {
    if base != 0 {
        return Ok(base + i);
    }
    let below = ephemeral_low().saturating_sub(1);
    let lowest = 10_000u16;
    if below > lowest {
        for _ in 0..64 {
            let p = lowest + (random() % u64::from(below - lowest)) as u16;
            if std::net::TcpListener::bind((bind, p)).is_ok() {
                return Ok(p);
            }
        }
    }
    Ok(std::net::TcpListener::bind((bind, 0))?.local_addr()?.port())
}

/// The first port of the kernel's ephemeral range (32768 when it cannot be read).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(u64::from(std::process::id()));
    h.finish()
}

/// The group's keys: what every NameNode and every client of `hdfs://ferrite/` reads.
fn group_keys(args: &ServeArgs, n: u16) -> anyhow::Result<BTreeMap<String, String>> {
    let http_base = args
        .http_port
        .unwrap_or(if args.port == 0 { 0 } else { 9870 });
    let raft_base = if args.port == 0 { 0 } else { args.port + 100 };
    let ns = NAMESERVICE;
    let names: Vec<String> = (1..=n).map(|i| format!("nn{i}")).collect();
    let mut keys = BTreeMap::from([
        ("fs.defaultFS".to_string(), format!("hdfs://{ns}")),
        ("dfs.nameservices".to_string(), ns.to_string()),
        (format!("dfs.ha.namenodes.{ns}"), names.join(",")),
        (
            format!("dfs.client.failover.proxy.provider.{ns}"),
            "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider".into(),
        ),
        // `hdfs haadmin -failover` insists on a fencing method; the Raft term fences an
        // old active already, so there is nothing to run.
        (
            "dfs.ha.fencing.methods".to_string(),
            "shell(/bin/true)".into(),
        ),
        // Hadoop's client pauses 500 ms at its second failover and doubles each time after;
        // during an election every NameNode it tries is a standby, so by the time the new
        // active serves (about two seconds) its next pause is seconds long. Shorter pauses
        // let it see the new active within about a second of it taking over.
        (
            "dfs.client.failover.sleep.base.millis".to_string(),
            "100".into(),
        ),
        (
            "dfs.client.failover.sleep.max.millis".to_string(),
            "1000".into(),
        ),
    ]);
    for (i, name) in names.iter().enumerate() {
        let i = i as u16;
        let a = Addrs {
            rpc: format!("{}:{}", args.bind, port(&args.bind, args.port, i)?),
            http: format!("{}:{}", args.bind, port(&args.bind, http_base, i)?),
            raft: format!("{}:{}", args.bind, port(&args.bind, raft_base, i)?),
        };
        keys.insert(format!("dfs.namenode.rpc-address.{ns}.{name}"), a.rpc);
        keys.insert(format!("dfs.namenode.http-address.{ns}.{name}"), a.http);
        keys.insert(format!("ferrite.ha.raft-address.{ns}.{name}"), a.raft);
    }
    keys.extend(crate::serve::local_topology(args)?);
    Ok(keys)
}

/// Hadoop's `<configuration>` file of `keys`.
fn site_xml(keys: &BTreeMap<String, String>) -> String {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut out = String::from("<?xml version=\"1.0\"?>\n<configuration>\n");
    for (k, v) in keys {
        out.push_str(&format!(
            "  <property><name>{}</name><value>{}</value></property>\n",
            esc(k),
            esc(v)
        ));
    }
    out.push_str("</configuration>\n");
    out
}

/// Writes the client configuration directory: `core-site.xml` (the default file system)
/// and `hdfs-site.xml` (the nameservice), both holding every key.
fn write_conf(dir: &Path, keys: &BTreeMap<String, String>) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let xml = site_xml(keys);
    for f in ["core-site.xml", "hdfs-site.xml"] {
        std::fs::write(dir.join(f), &xml).with_context(|| format!("writing {f}"))?;
    }
    Ok(())
}

/// Starts NameNode `name` as a process of its own and waits for its ready line.
fn spawn_namenode(args: &ServeArgs, conf_dir: &Path, name: &str) -> anyhow::Result<Child> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.arg("namenode")
        .arg("--data")
        .arg(args.data.join(name))
        .args(["--bind", &args.bind])
        .args(["--conf", &format!("dfs.ha.namenode.id={name}")]);
    for c in &args.conf {
        cmd.args(["--conf", c]);
    }
    let mut child = cmd
        .env("HADOOP_CONF_DIR", conf_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting NameNode {name}"))?;
    let mut out = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    out.read_line(&mut line)?;
    if !line.starts_with("ready ") {
        let _ = child.kill();
        anyhow::bail!("NameNode {name} did not start (see its log above)");
    }
    // Keep the pipe open and drained, so that a later line on the child's stdout neither
    // blocks it nor fails on a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    info!(name, pid = child.id(), "NameNode process serving");
    Ok(child)
}

fn resolve(addr: &str) -> anyhow::Result<SocketAddr> {
    std::net::ToSocketAddrs::to_socket_addrs(addr)?
        .next()
        .with_context(|| format!("resolving {addr}"))
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let n = u16::try_from(args.namenodes).context("--namenodes")?;
    if n < 3 {
        // Two cannot lose one and keep a majority; one is plain `ferrite local`.
        anyhow::bail!("an HA group needs three or more NameNodes (--namenodes {n})");
    }
    let keys = group_keys(&args, n)?;
    let conf_dir = args.data.join("conf");
    write_conf(&conf_dir, &keys)?;
    let mut children = Vec::new();
    for i in 1..=n {
        match spawn_namenode(&args, &conf_dir, &format!("nn{i}")) {
            Ok(c) => children.push(c),
            Err(e) => {
                stop_all(&mut children);
                return Err(e);
            }
        }
    }
    let namenodes = (1..=n)
        .map(|i| resolve(&keys[&format!("dfs.namenode.rpc-address.{NAMESERVICE}.nn{i}")]))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let pairs = config_pairs(&args.conf)?;
    let mut dn_cfg = DnConfig::new(Vec::new(), namenodes[0]);
    dn_cfg
        .apply(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|e| anyhow::anyhow!(e))?;
    let datanodes = match start_local_datanodes(&args, &dn_cfg, namenodes.clone()).await {
        Ok(d) => d,
        Err(e) => {
            stop_all(&mut children);
            return Err(e);
        }
    };
    let shutdown = Shutdown::install()?;
    {
        let list: Vec<String> = namenodes.iter().map(ToString::to_string).collect();
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "ready hdfs://{NAMESERVICE} conf={} namenodes={}",
            conf_dir.display(),
            list.join(",")
        )?;
        out.flush()?;
    }
    eprintln!(
        "HA cluster: nameservice hdfs://{NAMESERVICE}/, NameNodes {}; clients: export HADOOP_CONF_DIR={}",
        children
            .iter()
            .enumerate()
            .map(|(i, c)| format!("nn{} (pid {})", i + 1, c.id()))
            .collect::<Vec<_>>()
            .join(", "),
        conf_dir.display()
    );
    shutdown.wait().await;
    info!("shutting down");
    for dn in datanodes {
        dn.shutdown().await;
    }
    stop_all(&mut children);
    Ok(())
}

/// SIGTERM to every NameNode still running, then waits for each.
fn stop_all(children: &mut [Child]) {
    for c in children.iter() {
        // SAFETY: kill(2) on a child's pid, which is ours until it is waited for.
        unsafe {
            libc::kill(c.id() as i32, libc::SIGTERM);
        }
    }
    for c in children.iter_mut() {
        match c.wait() {
            Ok(st) if !st.success() => warn!(pid = c.id(), status = %st, "NameNode exited"),
            Err(e) => warn!(pid = c.id(), error = %e, "waiting for a NameNode"),
            Ok(_) => {}
        }
    }
}
