//! User → groups mapping, as Hadoop's default shell-based mapping sees it on this host:
//! a user's primary group from `/etc/passwd` plus every `/etc/group` entry listing them,
//! with `hadoop.user.group.static.mapping.overrides` taking precedence. Parsing is pure;
//! reading the files happens once at start-up.

use std::collections::HashMap;
use std::sync::Arc;

#[derive(Default, Clone, Debug)]
pub struct GroupMapping {
    /// Shared lists, so resolving a caller (once per RPC) allocates nothing.
    by_user: HashMap<String, Arc<[String]>>,
    none: Arc<[String]>,
}

impl GroupMapping {
    /// Reads this host's account files (missing files give an empty mapping).
    pub fn from_host(static_overrides: &str) -> Self {
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        let group = std::fs::read_to_string("/etc/group").unwrap_or_default();
        Self::parse(&passwd, &group, static_overrides)
    }

    pub fn parse(passwd: &str, group: &str, static_overrides: &str) -> Self {
        let mut gid_name = HashMap::new();
        let mut members: HashMap<String, Vec<String>> = HashMap::new();
        for line in group.lines().filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = line.split(':').collect();
            if f.len() < 4 {
                continue;
            }
            gid_name.insert(f[2].to_string(), f[0].to_string());
            for u in f[3].split(',').filter(|u| !u.is_empty()) {
                members
                    .entry(u.to_string())
                    .or_default()
                    .push(f[0].to_string());
            }
        }
        let mut by_user: HashMap<String, Vec<String>> = HashMap::new();
        for line in passwd.lines().filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = line.split(':').collect();
            if f.len() < 4 {
                continue;
            }
            let mut groups = Vec::new();
            if let Some(primary) = gid_name.get(f[3]) {
                groups.push(primary.clone());
            }
            by_user.insert(f[0].to_string(), groups);
        }
        for (user, gs) in members {
            let entry = by_user.entry(user).or_default();
            for g in gs {
                if !entry.contains(&g) {
                    entry.push(g);
                }
            }
        }
        for item in static_overrides.split(';').filter(|s| !s.trim().is_empty()) {
            if let Some((user, gs)) = item.split_once('=') {
                let list = gs
                    .split(',')
                    .map(str::trim)
                    .filter(|g| !g.is_empty())
                    .map(String::from)
                    .collect();
                by_user.insert(user.trim().to_string(), list);
            }
        }
        let by_user = by_user
            .into_iter()
            .map(|(u, g)| (u, Arc::from(g)))
            .collect();
        GroupMapping {
            by_user,
            none: Arc::from(Vec::new()),
        }
    }

    /// The user's groups, primary first; empty for users this host does not know.
    pub fn groups(&self, user: &str) -> Arc<[String]> {
        self.by_user.get(user).unwrap_or(&self.none).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primary_secondary_and_overrides() {
        let passwd = "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n";
        let group = "root:x:0:\nalice:x:1000:\nstaff:x:50:alice,bob\n";
        let m = GroupMapping::parse(passwd, group, "carol=eng,ops;dr.who=");
        assert_eq!(&*m.groups("alice"), ["alice", "staff"]);
        assert_eq!(&*m.groups("bob"), ["staff"]);
        assert_eq!(&*m.groups("carol"), ["eng", "ops"]);
        assert!(m.groups("dr.who").is_empty());
        assert!(m.groups("nobody-here").is_empty());
    }
}
