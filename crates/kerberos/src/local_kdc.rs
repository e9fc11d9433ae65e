//! A throw-away MIT KDC with a realm of its own, in a directory of its own: what the
//! secure-mode tests run against, and what `ferrite local --secure` starts for trying
//! secure mode on one machine. It drives MIT's own tools (`kdb5_util`, `kadmin.local`,
//! `krb5kdc`; Debian's `krb5-kdc` and `krb5-admin-server`), listening on loopback TCP only.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The MIT tools a local KDC needs.
const TOOLS: [&str; 3] = ["kdb5_util", "kadmin.local", "krb5kdc"];

/// Where Debian puts the tools, for a PATH without the sbin directories.
const SBIN: [&str; 2] = ["/usr/sbin", "/usr/local/sbin"];

/// A running KDC; stopped when dropped.
pub struct LocalKdc {
    pub realm: String,
    pub dir: PathBuf,
    /// The `krb5.conf` clients of this realm read (`KRB5_CONFIG`,
    /// `-Djava.security.krb5.conf`).
    pub krb5_conf: PathBuf,
    pub port: u16,
    kdc_conf: PathBuf,
    child: Option<Child>,
}

fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(SBIN)
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file());
    found
}

/// Ok when MIT's KDC tools are installed; else what to install.
pub fn tools_available() -> Result<(), String> {
    let missing: Vec<&str> = TOOLS.into_iter().filter(|t| tool(t).is_none()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "a local KDC needs MIT Kerberos's {} (on Debian or Ubuntu: apt-get install krb5-kdc \
         krb5-admin-server krb5-user)",
        missing.join(", ")
    ))
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl LocalKdc {
    /// Makes realm `realm`'s database under `dir` (which must be empty or new) and starts
    /// its KDC.
    pub fn start(dir: &Path, realm: &str) -> Result<LocalKdc, String> {
        tools_available()?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut kdc = LocalKdc {
            realm: realm.to_string(),
            dir: dir.to_path_buf(),
            krb5_conf: dir.join("krb5.conf"),
            port: 0,
            kdc_conf: dir.join("kdc.conf"),
            child: None,
        };
        kdc.write_confs()?;
        kdc.run(
            "kdb5_util",
            &[
                "create",
                "-s",
                "-r",
                realm,
                "-P",
                "ferrite-local-kdc-master",
            ],
        )?;
        // The port is let go of before the KDC binds it, and someone else may take it in
        // between (tests run side by side): a KDC that exits at once is started again on
        // another port.
        let mut last = String::new();
        for _ in 0..5 {
            kdc.port = free_port().map_err(|e| e.to_string())?;
            kdc.write_confs()?;
            match kdc.spawn_kdc() {
                Ok(()) => return Ok(kdc),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn write_confs(&self) -> Result<(), String> {
        let write = |p: &Path, text: String| {
            std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display()))
        };
        write(&self.krb5_conf, krb5_conf_text(&self.realm, self.port))?;
        write(
            &self.kdc_conf,
            kdc_conf_text(&self.dir, &self.realm, self.port),
        )
    }

    /// Starts krb5kdc on `self.port` and waits until it listens.
    fn spawn_kdc(&mut self) -> Result<(), String> {
        let out = self.dir.join("krb5kdc.out");
        let log = std::fs::File::create(&out).map_err(|e| e.to_string())?;
        let mut child = self
            .command("krb5kdc")?
            .args(["-n", "-r", &self.realm])
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("krb5kdc: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(20);
        let port = self.port;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            let exited = child.try_wait().map_err(|e| e.to_string())?.is_some();
            if exited || Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the KDC did not listen on 127.0.0.1:{port}; see {}",
                    out.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child = Some(child);
        Ok(())
    }

    fn command(&self, name: &str) -> Result<Command, String> {
        let path = tool(name).ok_or_else(|| tools_available().unwrap_err())?;
        let mut c = Command::new(path);
        c.env("KRB5_CONFIG", &self.krb5_conf)
            .env("KRB5_KDC_PROFILE", &self.kdc_conf)
            .stdin(Stdio::null());
        Ok(c)
    }

    fn run(&self, name: &str, args: &[&str]) -> Result<(), String> {
        let out = self
            .command(name)?
            .args(args)
            .output()
            .map_err(|e| format!("{name}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{name} {}: {}{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }

    /// Adds `principal` (`user`, or `service/host`; the realm is added) with a random key
    /// and writes its keys to `keytab`. Returns the full principal name.
    pub fn add_principal(&self, principal: &str, keytab: &Path) -> Result<String, String> {
        let full = format!("{principal}@{}", self.realm);
        let keytab = keytab.display().to_string();
        self.run(
            "kadmin.local",
            &[
                "-r",
                &self.realm,
                "-q",
                &format!("addprinc -randkey {full}"),
            ],
        )?;
        self.run(
            "kadmin.local",
            &[
                "-r",
                &self.realm,
                "-q",
                &format!("ktadd -k {keytab} {full}"),
            ],
        )?;
        Ok(full)
    }
}

impl Drop for LocalKdc {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn krb5_conf_text(realm: &str, port: u16) -> String {
    // TCP only (`udp_preference_limit = 1`), no DNS, and no reverse lookups: a client names
    // the host it dialled, as Hadoop's `_HOST` does.
    format!(
        "[libdefaults]\n  default_realm = {realm}\n  dns_lookup_kdc = false\n  \
         dns_lookup_realm = false\n  rdns = false\n  udp_preference_limit = 1\n  \
         ticket_lifetime = 1h\n  renew_lifetime = 1d\n  forwardable = true\n\
         [realms]\n  {realm} = {{\n    kdc = 127.0.0.1:{port}\n  }}\n"
    )
}

fn kdc_conf_text(dir: &Path, realm: &str, port: u16) -> String {
    let d = dir.display();
    format!(
        "[kdcdefaults]\n  kdc_ports = {port}\n  kdc_tcp_ports = {port}\n\
         [realms]\n  {realm} = {{\n    database_name = {d}/principal\n    \
         key_stash_file = {d}/stash\n    acl_file = {d}/kadm5.acl\n    max_life = 1h\n    \
         max_renewable_life = 1d\n  }}\n\
         [logging]\n  kdc = FILE:{d}/kdc.log\n"
    )
}
