//! Which DataNodes may join and which are to leave, from HDFS's hosts files: `dfs.hosts`
//! (the include list; empty means every host) and `dfs.hosts.exclude` (hosts to
//! decommission), words separated by white space with `#` comments, as Hadoop's
//! `HostFileManager` reads them; or, with `dfs.namenode.hosts.provider.classname` set to
//! `CombinedHostFileManager`, one JSON file in `dfs.hosts` listing each host with its
//! `adminState` (`NORMAL`, `DECOMMISSIONED`, `IN_MAINTENANCE`) and
//! `maintenanceExpireTimeInMS`. Read at start-up and again on `refreshNodes`. Pure parsing
//! and matching; the files are read by the caller.

use std::path::PathBuf;

const COMBINED: &str = "org.apache.hadoop.hdfs.server.blockmanagement.CombinedHostFileManager";

/// The hosts keys of the site configuration.
#[derive(Clone, Debug, Default)]
pub struct HostsConfig {
    /// `dfs.hosts`
    pub include: Option<PathBuf>,
    /// `dfs.hosts.exclude`
    pub exclude: Option<PathBuf>,
    /// `dfs.namenode.hosts.provider.classname` names `CombinedHostFileManager`.
    pub combined: bool,
}

impl HostsConfig {
    /// Takes `key` if it is one of the hosts keys.
    pub fn set(&mut self, key: &str, value: &str) -> bool {
        let path = || Some(PathBuf::from(value.trim())).filter(|p| !p.as_os_str().is_empty());
        match key {
            "dfs.hosts" => self.include = path(),
            "dfs.hosts.exclude" => self.exclude = path(),
            "dfs.namenode.hosts.provider.classname" => self.combined = value.trim() == COMBINED,
            _ => return false,
        }
        true
    }
}

/// One listed host: a name or address, and a transfer port (0: any).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Host {
    name: String,
    port: u32,
}

impl Host {
    fn parse(word: &str) -> Host {
        match word.rsplit_once(':') {
            Some((name, port)) if port.parse::<u32>().is_ok() => Host {
                name: name.to_string(),
                port: port.parse().unwrap_or(0),
            },
            _ => Host {
                name: word.to_string(),
                port: 0,
            },
        }
    }

    fn matches(&self, node: &NodeAddr) -> bool {
        (self.name == node.ip || self.name == node.host)
            && (self.port == 0 || self.port == node.xfer_port)
    }
}

/// How a DataNode is known to the hosts files.
pub struct NodeAddr<'a> {
    pub ip: &'a str,
    pub host: &'a str,
    pub xfer_port: u32,
}

/// What the hosts files ask of one DataNode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wanted {
    /// Not on a non-empty include list: it may not join.
    Disallowed,
    InService,
    Decommissioned,
    /// In maintenance until this time (ms since the epoch).
    Maintenance {
        until_ms: i64,
    },
}

/// A JSON entry's admin state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Listed {
    Normal,
    Decommissioned,
    Maintenance { until_ms: i64 },
}

/// The hosts files as last read.
#[derive(Clone, Debug, Default)]
pub struct HostRules {
    include: Vec<(Host, Listed)>,
    exclude: Vec<Host>,
}

impl HostRules {
    /// Rules from the files' texts (`None`: no such file configured).
    pub fn parse(
        cfg: &HostsConfig,
        include: Option<&str>,
        exclude: Option<&str>,
    ) -> Result<HostRules, String> {
        let include = match include {
            None => Vec::new(),
            Some(text) if cfg.combined => parse_combined(text)?,
            Some(text) => words(text)
                .map(|w| (Host::parse(w), Listed::Normal))
                .collect(),
        };
        let exclude = match exclude {
            Some(text) if !cfg.combined => words(text).map(Host::parse).collect(),
            _ => Vec::new(),
        };
        Ok(HostRules { include, exclude })
    }

    /// What the files ask of `node`.
    pub fn wanted(&self, node: &NodeAddr) -> Wanted {
        let listed = self.include.iter().find(|(h, _)| h.matches(node));
        if !self.include.is_empty() && listed.is_none() {
            return Wanted::Disallowed;
        }
        if self.exclude.iter().any(|h| h.matches(node)) {
            return Wanted::Decommissioned;
        }
        match listed.map(|(_, l)| *l) {
            Some(Listed::Decommissioned) => Wanted::Decommissioned,
            Some(Listed::Maintenance { until_ms }) => Wanted::Maintenance { until_ms },
            _ => Wanted::InService,
        }
    }
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(str::split_whitespace)
}

/// `CombinedHostsFileReader`'s format: a JSON array of host objects (or, as older
/// releases wrote it, the objects one after another).
fn parse_combined(text: &str) -> Result<Vec<(Host, Listed)>, String> {
    let mut entries: Vec<serde_json::Value> = Vec::new();
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        entries = serde_json::from_str(trimmed).map_err(|e| format!("bad hosts JSON: {e}"))?;
    } else {
        for v in serde_json::Deserializer::from_str(trimmed).into_iter::<serde_json::Value>() {
            entries.push(v.map_err(|e| format!("bad hosts JSON: {e}"))?);
        }
    }
    entries
        .iter()
        .map(|e| {
            let name = e["hostName"]
                .as_str()
                .ok_or_else(|| format!("a hosts entry without hostName: {e}"))?;
            let port = e["port"].as_u64().unwrap_or(0) as u32;
            let listed = match e["adminState"].as_str().unwrap_or("NORMAL") {
                "NORMAL" => Listed::Normal,
                "DECOMMISSIONED" | "DECOMMISSION_INPROGRESS" => Listed::Decommissioned,
                "IN_MAINTENANCE" | "ENTERING_MAINTENANCE" => Listed::Maintenance {
                    until_ms: e["maintenanceExpireTimeInMS"].as_i64().unwrap_or(i64::MAX),
                },
                other => return Err(format!("unknown adminState {other:?} for {name}")),
            };
            Ok((
                Host {
                    name: name.to_string(),
                    port,
                },
                listed,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node<'a>(ip: &'a str, port: u32) -> NodeAddr<'a> {
        NodeAddr {
            ip,
            host: "dn.example",
            xfer_port: port,
        }
    }

    #[test]
    fn plain_files_include_exclude_by_address_name_and_port() {
        let cfg = HostsConfig::default();
        let r = HostRules::parse(
            &cfg,
            Some("# allowed\n10.0.0.1 10.0.0.2:9866\n dn.example\n"),
            Some("10.0.0.2\n"),
        )
        .unwrap();
        assert_eq!(r.wanted(&node("10.0.0.1", 1)), Wanted::InService);
        assert_eq!(r.wanted(&node("10.0.0.2", 9866)), Wanted::Decommissioned);
        // By name, whatever the address.
        assert_eq!(r.wanted(&node("10.0.0.7", 1)), Wanted::InService);
        let r = HostRules::parse(&cfg, Some("10.0.0.1:9866"), None).unwrap();
        assert_eq!(
            r.wanted(&NodeAddr {
                ip: "10.0.0.1",
                host: "x",
                xfer_port: 9000
            }),
            Wanted::Disallowed,
            "listed with another port"
        );
        // No include list: everyone may join; an exclude naming unknown hosts is harmless.
        let r = HostRules::parse(&cfg, None, Some("ghost.example 10.9.9.9")).unwrap();
        assert_eq!(r.wanted(&node("10.0.0.1", 1)), Wanted::InService);
    }

    #[test]
    fn the_combined_json_file_gives_each_host_its_state() {
        let cfg = HostsConfig {
            combined: true,
            ..Default::default()
        };
        let text = r#"[
            {"hostName": "10.0.0.1"},
            {"hostName": "10.0.0.2", "port": 9866, "adminState": "DECOMMISSIONED"},
            {"hostName": "10.0.0.3", "adminState": "IN_MAINTENANCE", "maintenanceExpireTimeInMS": 1234}
        ]"#;
        let r = HostRules::parse(&cfg, Some(text), Some("10.0.0.1")).unwrap();
        assert_eq!(
            r.wanted(&node("10.0.0.1", 1)),
            Wanted::InService,
            "no exclude file"
        );
        assert_eq!(r.wanted(&node("10.0.0.2", 9866)), Wanted::Decommissioned);
        assert_eq!(
            r.wanted(&node("10.0.0.3", 1)),
            Wanted::Maintenance { until_ms: 1234 }
        );
        assert_eq!(r.wanted(&node("10.0.0.4", 1)), Wanted::Disallowed);
        // The older form: objects one after another.
        let r = HostRules::parse(
            &cfg,
            Some(r#"{"hostName": "a"} {"hostName": "b", "adminState": "DECOMMISSIONED"}"#),
            None,
        )
        .unwrap();
        assert_eq!(
            r.wanted(&NodeAddr {
                ip: "1.1.1.1",
                host: "b",
                xfer_port: 1
            }),
            Wanted::Decommissioned
        );
        assert!(HostRules::parse(&cfg, Some("[{\"port\": 1}]"), None).is_err());
        assert!(HostRules::parse(
            &cfg,
            Some("[{\"hostName\": \"a\", \"adminState\": \"WEIRD\"}]"),
            None
        )
        .is_err());
    }
}
