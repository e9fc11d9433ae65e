//! Who may act for whom: Hadoop's `hadoop.proxyuser.<user>.{hosts,groups,users}` rules,
//! as its default impersonation provider applies them. Pure: the caller's groups and
//! address are passed in.

use std::collections::BTreeMap;

/// The rules by real user: the hosts it may connect from, and the groups and users it may
/// act for (`*`: any).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyUsers {
    rules: BTreeMap<String, Rule>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Rule {
    hosts: Vec<String>,
    groups: Vec<String>,
    users: Vec<String>,
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

fn allows(list: &[String], item: &str) -> bool {
    list.iter().any(|e| e == "*" || e == item)
}

impl ProxyUsers {
    /// Takes `hadoop.proxyuser.<user>.<what>`; answers false for any other key.
    pub fn set(&mut self, key: &str, value: &str) -> bool {
        let Some(rest) = key.strip_prefix("hadoop.proxyuser.") else {
            return false;
        };
        let Some((user, what)) = rest.rsplit_once('.') else {
            return false;
        };
        let rule = self.rules.entry(user.to_string()).or_default();
        match what {
            "hosts" => rule.hosts = list(value),
            "groups" => rule.groups = list(value),
            "users" => rule.users = list(value),
            _ => return false,
        }
        true
    }

    /// Whether `real` may act as `user` (whose groups are `groups`) from address `ip`;
    /// the refusal is HDFS's `AuthorizationException` message.
    pub fn authorize(
        &self,
        real: &str,
        user: &str,
        groups: &[String],
        ip: &str,
    ) -> Result<(), ProxyRefused> {
        let rule = self.rules.get(real);
        let as_user = rule
            .is_some_and(|r| allows(&r.users, user) || groups.iter().any(|g| allows(&r.groups, g)));
        if !as_user {
            return Err(ProxyRefused::User {
                real: real.into(),
                user: user.into(),
            });
        }
        if !rule.is_some_and(|r| allows(&r.hosts, ip)) {
            return Err(ProxyRefused::Host {
                real: real.into(),
                ip: ip.into(),
            });
        }
        Ok(())
    }
}

/// Why a real user may not act for another, in the words of HDFS's
/// `AuthorizationException`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxyRefused {
    /// Its rules name neither the user nor any of the user's groups.
    #[error("User: {real} is not allowed to impersonate {user}")]
    User { real: String, user: String },
    /// Its rules do not list the address the request comes from.
    #[error("Unauthorized connection for super-user: {real} from IP {ip}")]
    Host { real: String, ip: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_user_acts_only_for_whom_and_from_where_its_rules_say() {
        let mut p = ProxyUsers::default();
        assert!(!p.set("dfs.replication", "3"));
        assert!(p.set("hadoop.proxyuser.hue.hosts", "127.0.0.1, 10.0.0.1"));
        assert!(p.set("hadoop.proxyuser.hue.groups", "staff"));
        assert!(p.set("hadoop.proxyuser.oozie.hosts", "*"));
        assert!(p.set("hadoop.proxyuser.oozie.users", "alice"));
        let staff = ["staff".to_string()];
        assert_eq!(p.authorize("hue", "bob", &staff, "127.0.0.1"), Ok(()));
        let refused = p.authorize("hue", "bob", &[], "127.0.0.1").unwrap_err();
        assert_eq!(
            refused.to_string(),
            "User: hue is not allowed to impersonate bob"
        );
        let refused = p.authorize("hue", "bob", &staff, "10.9.9.9").unwrap_err();
        assert_eq!(
            refused,
            ProxyRefused::Host {
                real: "hue".into(),
                ip: "10.9.9.9".into()
            }
        );
        assert_eq!(
            refused.to_string(),
            "Unauthorized connection for super-user: hue from IP 10.9.9.9"
        );
        assert_eq!(p.authorize("oozie", "alice", &[], "1.2.3.4"), Ok(()));
        assert!(p.authorize("root", "alice", &[], "127.0.0.1").is_err());
    }
}
