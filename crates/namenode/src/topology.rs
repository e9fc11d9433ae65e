//! Which rack a DataNode (or a reader) is on, as Hadoop's `DNSToSwitchMapping` answers:
//! `net.topology.node.switch.mapping.impl` chooses the mapping — `ScriptBasedMapping` (the
//! default) runs `net.topology.script.file.name` with addresses as arguments and reads one
//! network location per argument from its output; `TableMapping` reads "address location"
//! lines from `net.topology.table.file.name`. Without either every node is on
//! `/default-rack`. Answers are cached per address, as Hadoop's `CachedDNSToSwitchMapping`
//! caches them, so a script runs once per new node and never on a client's call.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use parking_lot::Mutex;
use tracing::{error, warn};

use crate::blocks::registry::DEFAULT_RACK;

/// Hadoop's class names for the two mappings.
const TABLE_MAPPING: &str = "org.apache.hadoop.net.TableMapping";

/// How long a topology script may run before its node is put on the default rack: a script
/// that hangs must not hold up a DataNode's registration for ever.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(15);

/// The topology keys of the site configuration.
#[derive(Clone, Debug, Default)]
pub struct TopologyConfig {
    /// `net.topology.node.switch.mapping.impl`
    pub mapping: Option<String>,
    /// `net.topology.script.file.name`
    pub script: Option<PathBuf>,
    /// `net.topology.table.file.name`
    pub table: Option<PathBuf>,
}

impl TopologyConfig {
    /// Takes `key` if it is one of the topology keys.
    pub fn set(&mut self, key: &str, value: &str) -> bool {
        let path = || Some(PathBuf::from(value.trim())).filter(|p| !p.as_os_str().is_empty());
        match key {
            "net.topology.node.switch.mapping.impl" => self.mapping = Some(value.trim().into()),
            "net.topology.script.file.name" => self.script = path(),
            "net.topology.table.file.name" => self.table = path(),
            // Hadoop batches up to this many addresses per script run; we resolve a node
            // at a time, so any value will do.
            "net.topology.script.number.args" => {}
            _ => return false,
        }
        true
    }
}

enum Mapping {
    /// Every node on the default rack.
    Flat,
    Table(HashMap<String, String>),
    Script(PathBuf),
}

/// The NameNode's topology mapping, with its cache.
pub struct Topology {
    mapping: Mapping,
    cache: Mutex<HashMap<String, String>>,
    script_timeout: Duration,
}

impl Topology {
    /// The mapping `cfg` names. A table that cannot be read leaves every node on the
    /// default rack, as Hadoop's `TableMapping` does (logged).
    pub fn new(cfg: &TopologyConfig) -> Topology {
        let table = cfg.mapping.as_deref() == Some(TABLE_MAPPING);
        let mapping = match (table, &cfg.table, &cfg.script) {
            (true, Some(path), _) => match std::fs::read_to_string(path) {
                Ok(text) => Mapping::Table(parse_table(&text)),
                Err(e) => {
                    error!(file = %path.display(), error = %e, "cannot read the topology table; every node is on /default-rack");
                    Mapping::Flat
                }
            },
            (true, None, _) => {
                warn!("TableMapping without net.topology.table.file.name: every node is on /default-rack");
                Mapping::Flat
            }
            (false, _, Some(script)) => Mapping::Script(script.clone()),
            (false, _, None) => Mapping::Flat,
        };
        Topology {
            mapping,
            cache: Mutex::new(HashMap::new()),
            script_timeout: SCRIPT_TIMEOUT,
        }
    }

    /// The rack of the node at `ip` (named `host`), running the script if it has not
    /// answered for this address before.
    pub async fn resolve(&self, ip: &str, host: &str) -> String {
        if let Some(rack) = self.known(ip, host) {
            return rack;
        }
        let Mapping::Script(script) = &self.mapping else {
            return DEFAULT_RACK.into();
        };
        let rack = run_script(script, ip, self.script_timeout).await.unwrap_or_else(|why| {
            error!(script = %script.display(), ip, %why, "topology script failed; the node is on /default-rack");
            DEFAULT_RACK.into()
        });
        self.cache.lock().insert(ip.to_string(), rack.clone());
        rack
    }

    /// Whether every node is on the default rack (no mapping configured): then no rack
    /// sets one node apart from another.
    pub fn is_flat(&self) -> bool {
        matches!(self.mapping, Mapping::Flat)
    }

    /// The rack of `ip` if it is known without running anything: from the table, or from
    /// an earlier answer of the script.
    pub fn known(&self, ip: &str, host: &str) -> Option<String> {
        match &self.mapping {
            Mapping::Flat => Some(DEFAULT_RACK.into()),
            Mapping::Table(t) => Some(
                t.get(ip)
                    .or_else(|| t.get(host))
                    .cloned()
                    .unwrap_or_else(|| DEFAULT_RACK.into()),
            ),
            Mapping::Script(_) => self.cache.lock().get(ip).cloned(),
        }
    }
}

/// "address location" lines; blank lines and `#` comments skipped, as `TableMapping`.
fn parse_table(text: &str) -> HashMap<String, String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            match (words.next(), words.next()) {
                (Some(host), Some(rack)) => Some((host.to_string(), normalize(rack))),
                _ => None,
            }
        })
        .collect()
}

/// A network location as Hadoop keeps it: starting with `/`, without a trailing one.
fn normalize(rack: &str) -> String {
    let trimmed = rack.trim().trim_end_matches('/');
    if trimmed.is_empty() {
        DEFAULT_RACK.into()
    } else if trimmed.starts_with('/') {
        trimmed.into()
    } else {
        format!("/{trimmed}")
    }
}

/// Runs the topology script for one address and reads its location.
async fn run_script(script: &std::path::Path, ip: &str, limit: Duration) -> Result<String, String> {
    let run = tokio::process::Command::new(script)
        .arg(ip)
        .kill_on_drop(true)
        .output();
    let out = match tokio::time::timeout(limit, run).await {
        Err(_) => return Err(format!("no answer within {limit:?}")),
        Ok(Err(e)) => return Err(e.to_string()),
        Ok(Ok(out)) => out,
    };
    if !out.status.success() {
        return Err(format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    match text.split_whitespace().collect::<Vec<_>>()[..] {
        [rack] => Ok(normalize(rack)),
        ref words => Err(format!(
            "answered {} locations for one address: {text:?}",
            words.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> TopologyConfig {
        let mut c = TopologyConfig::default();
        for (k, v) in pairs {
            assert!(c.set(k, v));
        }
        c
    }

    #[tokio::test]
    async fn a_table_maps_addresses_and_names_and_the_rest_go_to_the_default_rack() {
        let dir = tempfile::tempdir().unwrap();
        let table = dir.path().join("topology.table");
        std::fs::write(
            &table,
            "# host rack\n127.0.1.1 /dc1/rack1\nnode2.example /rack2/\n\n127.0.1.3 rack3 extra\n",
        )
        .unwrap();
        let t = Topology::new(&cfg(&[
            ("net.topology.node.switch.mapping.impl", TABLE_MAPPING),
            ("net.topology.table.file.name", table.to_str().unwrap()),
        ]));
        assert_eq!(t.resolve("127.0.1.1", "x").await, "/dc1/rack1");
        assert_eq!(t.resolve("127.0.1.2", "node2.example").await, "/rack2");
        assert_eq!(t.resolve("127.0.1.3", "y").await, "/rack3");
        assert_eq!(t.resolve("127.0.1.9", "z").await, DEFAULT_RACK);
        // The table file set without TableMapping chosen means nothing, as in Hadoop.
        let t = Topology::new(&cfg(&[(
            "net.topology.table.file.name",
            table.to_str().unwrap(),
        )]));
        assert_eq!(t.resolve("127.0.1.1", "x").await, DEFAULT_RACK);
    }

    #[tokio::test]
    async fn a_script_answers_once_per_address_and_a_failing_one_means_the_default_rack() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = |name: &str, body: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            p
        };
        let runs = dir.path().join("runs");
        let good = script(
            "good.sh",
            &format!(
                "echo run >> {}\ncase $1 in 10.0.1.*) echo /rack1;; *) echo /rack2;; esac",
                runs.display()
            ),
        );
        let t = Topology::new(&cfg(&[(
            "net.topology.script.file.name",
            good.to_str().unwrap(),
        )]));
        assert_eq!(t.known("10.0.1.5", ""), None, "not run on a lookup");
        assert_eq!(t.resolve("10.0.1.5", "").await, "/rack1");
        assert_eq!(t.resolve("10.0.1.5", "").await, "/rack1");
        assert_eq!(t.resolve("10.0.2.5", "").await, "/rack2");
        assert_eq!(t.known("10.0.1.5", "").as_deref(), Some("/rack1"));
        let ran = std::fs::read_to_string(&runs).unwrap();
        assert_eq!(ran.lines().count(), 2, "cached per address");

        for bad in [
            script("fails.sh", "echo oops >&2; exit 3"),
            script("two.sh", "echo /a /b"),
            dir.path().join("missing.sh"),
        ] {
            let t = Topology::new(&cfg(&[(
                "net.topology.script.file.name",
                bad.to_str().unwrap(),
            )]));
            assert_eq!(t.resolve("10.0.1.5", "").await, DEFAULT_RACK, "{bad:?}");
        }
        let mut t = Topology::new(&cfg(&[(
            "net.topology.script.file.name",
            script("hangs.sh", "sleep 30").to_str().unwrap(),
        )]));
        t.script_timeout = Duration::from_millis(300);
        assert_eq!(
            t.resolve("10.0.1.5", "").await,
            DEFAULT_RACK,
            "a hung script"
        );
    }
}
