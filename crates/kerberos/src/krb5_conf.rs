//! The default realm, which `DEFAULT` auth_to_local rules and `_HOST`-less principals
//! need: read from the `krb5.conf` MIT's library reads (`KRB5_CONFIG`, else
//! `/etc/krb5.conf`), `[libdefaults] default_realm`.

use std::path::PathBuf;

/// The file MIT's library reads: the first of `KRB5_CONFIG`'s colon-separated list.
pub fn path() -> PathBuf {
    std::env::var("KRB5_CONFIG")
        .ok()
        .and_then(|v| v.split(':').next().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/etc/krb5.conf"))
}

/// The default realm named in `text` (a krb5.conf), if any.
pub fn default_realm(text: &str) -> Option<String> {
    let mut in_libdefaults = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with('[') {
            in_libdefaults = line.starts_with("[libdefaults]");
            continue;
        }
        if !in_libdefaults {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            if k.trim() == "default_realm" {
                return Some(v.trim().to_string());
            }
        }
    }
    None
}

/// The default realm of this machine's Kerberos configuration ("" when none is set).
pub fn machine_default_realm() -> String {
    std::fs::read_to_string(path())
        .ok()
        .and_then(|t| default_realm(&t))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_realm_comes_from_libdefaults_only() {
        let conf = "[realms]\n default_realm = WRONG\n[libdefaults]\n  # c\n  default_realm = EXAMPLE.COM\n  rdns = false\n";
        assert_eq!(default_realm(conf).as_deref(), Some("EXAMPLE.COM"));
        assert_eq!(default_realm("[libdefaults]\n rdns = false\n"), None);
    }
}
