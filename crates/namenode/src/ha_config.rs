//! An HA group in HDFS's own keys, from the same `hdfs-site.xml` the clients read:
//! `dfs.nameservices`, `dfs.ha.namenodes.<ns>`, `dfs.namenode.rpc-address.<ns>.<nn>`,
//! `dfs.namenode.http-address.<ns>.<nn>` and `dfs.ha.namenode.id`, plus Ferrite's one key per
//! NameNode for its Raft address, `ferrite.ha.raft-address.<ns>.<nn>`. Pure: the keys in,
//! the group out; which NameNode this process is, when `dfs.ha.namenode.id` does not say,
//! is found from the addresses it can bind (as HDFS finds it).

use std::collections::BTreeMap;

/// The keys this module reads (the configuration collects them as they come).
pub fn is_ha_key(key: &str) -> bool {
    key == "dfs.nameservices"
        || key == "dfs.ha.namenode.id"
        || key.starts_with("dfs.ha.namenodes.")
        || key.starts_with("dfs.namenode.rpc-address.")
        || key.starts_with("dfs.namenode.http-address.")
        || key.starts_with("ferrite.ha.raft-address.")
}

/// One NameNode of the group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HaNode {
    /// Its name in `dfs.ha.namenodes.<ns>` (`nn1`).
    pub name: String,
    /// Its Raft node id: its place in that list, from 1.
    pub id: u64,
    pub rpc: String,
    pub http: Option<String>,
    pub raft: String,
}

/// The group a NameNode belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HaGroup {
    pub nameservice: String,
    pub nodes: Vec<HaNode>,
    /// `dfs.ha.namenode.id`, when set.
    pub me: Option<String>,
}

/// Why the HA keys do not make a group.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HaConfigError {
    #[error("dfs.nameservices names {0:?}: Ferrite serves one nameservice per NameNode")]
    SeveralNameservices(Vec<String>),
    #[error("{key} is not set: every NameNode of {ns} needs it")]
    Missing { key: String, ns: String },
    #[error("dfs.ha.namenode.id is {0:?}, which dfs.ha.namenodes does not list")]
    UnknownMe(String),
    #[error("none of {0:?} is an address this host can serve on; set dfs.ha.namenode.id")]
    NotMine(Vec<String>),
}

/// The RPC addresses of nameservice `ns`'s NameNodes, as a DataNode or a client finds them
/// (`dfs.ha.namenodes.<ns>` and `dfs.namenode.rpc-address.<ns>.<nn>`); `None` when the keys
/// do not name it.
pub fn namenodes_of(
    keys: &BTreeMap<String, String>,
    ns: &str,
) -> Result<Option<Vec<String>>, HaConfigError> {
    let Some(members) = keys.get(&format!("dfs.ha.namenodes.{ns}")) else {
        return Ok(None);
    };
    list(members)
        .iter()
        .map(|name| {
            let key = format!("dfs.namenode.rpc-address.{ns}.{name}");
            keys.get(&key)
                .map(|v| v.trim().to_string())
                .ok_or_else(|| HaConfigError::Missing {
                    key,
                    ns: ns.to_string(),
                })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

impl HaGroup {
    /// The group the keys describe; `None` without a nameservice of two or more NameNodes
    /// (a lone NameNode, as before).
    pub fn from_keys(keys: &BTreeMap<String, String>) -> Result<Option<HaGroup>, HaConfigError> {
        let Some(services) = keys.get("dfs.nameservices") else {
            return Ok(None);
        };
        let names = list(services);
        let ns = match &names[..] {
            [] => return Ok(None),
            [one] => one.clone(),
            _ => return Err(HaConfigError::SeveralNameservices(names)),
        };
        let Some(members) = keys.get(&format!("dfs.ha.namenodes.{ns}")).map(|v| list(v)) else {
            return Ok(None);
        };
        if members.len() < 2 {
            return Ok(None);
        }
        let need = |key: String| {
            keys.get(&key)
                .map(|v| v.trim().to_string())
                .ok_or_else(|| HaConfigError::Missing {
                    key,
                    ns: ns.clone(),
                })
        };
        let nodes = members
            .iter()
            .enumerate()
            .map(|(i, name)| {
                Ok(HaNode {
                    name: name.clone(),
                    id: i as u64 + 1,
                    rpc: need(format!("dfs.namenode.rpc-address.{ns}.{name}"))?,
                    http: keys
                        .get(&format!("dfs.namenode.http-address.{ns}.{name}"))
                        .map(|v| v.trim().to_string()),
                    raft: need(format!("ferrite.ha.raft-address.{ns}.{name}"))?,
                })
            })
            .collect::<Result<Vec<_>, HaConfigError>>()?;
        let me = keys.get("dfs.ha.namenode.id").map(|v| v.trim().to_string());
        if let Some(m) = &me {
            if !nodes.iter().any(|n| &n.name == m) {
                return Err(HaConfigError::UnknownMe(m.clone()));
            }
        }
        Ok(Some(HaGroup {
            nameservice: ns,
            nodes,
            me,
        }))
    }

    /// This NameNode: the one `dfs.ha.namenode.id` names, or else the one whose RPC
    /// address `can_serve` accepts (an address of this host, free to bind).
    pub fn this_node(&self, can_serve: impl Fn(&str) -> bool) -> Result<&HaNode, HaConfigError> {
        if let Some(me) = &self.me {
            return Ok(self.nodes.iter().find(|n| &n.name == me).expect("checked"));
        }
        let mine: Vec<&HaNode> = self.nodes.iter().filter(|n| can_serve(&n.rpc)).collect();
        match mine[..] {
            [one] => Ok(one),
            _ => Err(HaConfigError::NotMine(
                self.nodes.iter().map(|n| n.rpc.clone()).collect(),
            )),
        }
    }
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn three() -> Vec<(&'static str, &'static str)> {
        vec![
            ("dfs.nameservices", "prod"),
            ("dfs.ha.namenodes.prod", "nn1, nn2,nn3"),
            ("dfs.namenode.rpc-address.prod.nn1", "10.0.0.1:8020"),
            ("dfs.namenode.rpc-address.prod.nn2", "10.0.0.2:8020"),
            ("dfs.namenode.rpc-address.prod.nn3", "10.0.0.3:8020"),
            ("dfs.namenode.http-address.prod.nn1", "10.0.0.1:9870"),
            ("ferrite.ha.raft-address.prod.nn1", "10.0.0.1:8021"),
            ("ferrite.ha.raft-address.prod.nn2", "10.0.0.2:8021"),
            ("ferrite.ha.raft-address.prod.nn3", "10.0.0.3:8021"),
        ]
    }

    #[test]
    fn hdfs_keys_make_a_group_numbered_in_list_order() {
        let g = HaGroup::from_keys(&keys(&three())).unwrap().unwrap();
        assert_eq!(g.nameservice, "prod");
        let names: Vec<(&str, u64)> = g.nodes.iter().map(|n| (n.name.as_str(), n.id)).collect();
        assert_eq!(names, [("nn1", 1), ("nn2", 2), ("nn3", 3)]);
        assert_eq!(g.nodes[0].http.as_deref(), Some("10.0.0.1:9870"));
        assert_eq!(g.nodes[1].http, None);
        assert_eq!(g.nodes[2].raft, "10.0.0.3:8021");
        // Found from the addresses this host serves, without dfs.ha.namenode.id.
        let me = g.this_node(|a| a == "10.0.0.2:8020").unwrap();
        assert_eq!(me.name, "nn2");
        assert!(g.this_node(|_| false).is_err());
    }

    #[test]
    fn a_datanode_finds_every_namenode_of_a_nameservice() {
        let k = keys(&three());
        let all = namenodes_of(&k, "prod").unwrap().unwrap();
        assert_eq!(all, ["10.0.0.1:8020", "10.0.0.2:8020", "10.0.0.3:8020"]);
        assert_eq!(namenodes_of(&k, "other").unwrap(), None);
        let gap = keys(&three()[..4]);
        assert_eq!(
            namenodes_of(&gap, "prod").unwrap_err().to_string(),
            "dfs.namenode.rpc-address.prod.nn3 is not set: every NameNode of prod needs it"
        );
    }

    #[test]
    fn a_lone_namenode_is_no_group_and_gaps_are_named() {
        assert_eq!(HaGroup::from_keys(&keys(&[])).unwrap(), None);
        let one = keys(&[("dfs.nameservices", "ns"), ("dfs.ha.namenodes.ns", "nn1")]);
        assert_eq!(HaGroup::from_keys(&one).unwrap(), None);
        let mut k = keys(&three());
        k.remove("ferrite.ha.raft-address.prod.nn2");
        assert_eq!(
            HaGroup::from_keys(&k).unwrap_err().to_string(),
            "ferrite.ha.raft-address.prod.nn2 is not set: every NameNode of prod needs it"
        );
        let mut k = keys(&three());
        k.insert("dfs.ha.namenode.id".into(), "nn9".into());
        assert_eq!(
            HaGroup::from_keys(&k).unwrap_err(),
            HaConfigError::UnknownMe("nn9".into())
        );
        k.insert("dfs.ha.namenode.id".into(), "nn3".into());
        let g = HaGroup::from_keys(&k).unwrap().unwrap();
        assert_eq!(g.this_node(|_| false).unwrap().name, "nn3");
    }
}
