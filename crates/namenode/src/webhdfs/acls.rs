//! WebHDFS's ACL parameter and answer, as HDFS's `AclPermissionParam` and `JsonUtil` have
//! them: `aclspec` a comma-separated list of entries in their text form (without the
//! permission for REMOVEACLENTRIES), and `AclStatus` with the kept entries as text. Pure.

use ferrite_http::webhdfs::WebError;
use serde_json::{json, Value};

use crate::namespace::acl::AclEntry;
use crate::namespace::acl_ops::AclStatus;

/// HDFS's `AclPermissionParam` domain, as its message prints it.
const DOMAIN: &str = "^(default:)?(user|group|mask|other):[[A-Za-z_][A-Za-z0-9._-]]*:([rwx-]{3})?\
     (,(default:)?(user|group|mask|other):[[A-Za-z_][A-Za-z0-9._-]]*:([rwx-]{3})?)*$";

/// One entry of the domain: `(default:)?(user|group|mask|other):[A-Za-z0-9._-]*:([rwx-]{3})?`
/// (the name's two classes are one union in Java's syntax).
fn in_domain(entry: &str) -> bool {
    let e = entry.strip_prefix("default:").unwrap_or(entry);
    let Some((kind, rest)) = e.split_once(':') else {
        return false;
    };
    let Some((name, perm)) = rest.split_once(':') else {
        return false;
    };
    matches!(kind, "user" | "group" | "mask" | "other")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && (perm.is_empty() || perm.len() == 3 && perm.bytes().all(|b| b"rwx-".contains(&b)))
}

/// `aclspec`; absent or empty is no entries. Checked against HDFS's domain first, then
/// parsed as its entries are.
pub(super) fn spec_param(v: Option<&str>, with_perm: bool) -> Result<Vec<AclEntry>, WebError> {
    let v = v.unwrap_or_default();
    if !v.is_empty() && !v.split(',').all(in_domain) {
        return Err(WebError::illegal(format!(
            "Invalid value for webhdfs parameter \"aclspec\": Invalid value: \"{v}\" does not \
             belong to the domain {DOMAIN}"
        )));
    }
    v.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| AclEntry::parse(e, with_perm).map_err(super::web))
        .collect()
}

/// `{"AclStatus": {...}}`, keys sorted as HDFS's `TreeMap` gives them; the permission as
/// octal text with the sticky bit.
pub(super) fn status_doc(st: &AclStatus) -> Value {
    let entries: Vec<String> = st.entries.iter().map(ToString::to_string).collect();
    json!({"AclStatus": {
        "entries": entries,
        "group": st.group,
        "owner": st.owner,
        "permission": format!("{:o}", st.perm & 0o1777),
        "stickyBit": st.sticky,
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_and_without_permissions() {
        let s = spec_param(Some("user:bruce:rwx,default:group::r-x"), true).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].to_string(), "default:group::r-x");
        assert_eq!(spec_param(Some("user:bruce:"), false).unwrap().len(), 1);
        assert!(
            spec_param(Some("user:bruce"), false).is_err(),
            "outside the domain"
        );
        assert!(spec_param(Some("user:bruce:"), true).is_err());
        assert!(spec_param(None, true).unwrap().is_empty());
    }
}
