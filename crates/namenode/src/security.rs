//! Secure mode's keys: `hadoop.security.authentication`, the NameNode's principal and
//! keytab, `hadoop.security.auth_to_local` and `hadoop.rpc.protection`; and the IPC
//! server's Kerberos identity made from them at start-up.

use std::sync::Arc;

use ferrite_ipc::sasl::ServerSecurity;
use ferrite_kerberos::auth_to_local::{fill_host, AuthToLocal};
use ferrite_kerberos::sasl::Protection;

#[derive(Clone, Debug, Default)]
pub struct SecurityConfig {
    /// `hadoop.security.authentication`: "kerberos" (else SIMPLE).
    pub kerberos: bool,
    /// `dfs.namenode.kerberos.principal`, `_HOST` not yet filled in.
    pub principal: Option<String>,
    /// `dfs.namenode.keytab.file`.
    pub keytab: Option<String>,
    /// `hadoop.security.auth_to_local` (empty: DEFAULT).
    pub auth_to_local: String,
    /// `hadoop.rpc.protection` (empty: authentication).
    pub rpc_protection: String,
    /// A value of `hadoop.security.authentication` that is neither simple nor kerberos.
    bad_method: Option<String>,
}

impl SecurityConfig {
    /// Takes `key` if it is one of secure mode's; false otherwise.
    pub fn set(&mut self, key: &str, value: &str) -> bool {
        let v = value.trim();
        match key {
            "hadoop.security.authentication" => match v.to_ascii_lowercase().as_str() {
                "kerberos" => self.kerberos = true,
                "simple" => self.kerberos = false,
                _ => self.bad_method = Some(v.to_string()),
            },
            "dfs.namenode.kerberos.principal" => self.principal = Some(v.to_string()),
            "dfs.namenode.keytab.file" => self.keytab = Some(v.to_string()),
            "hadoop.security.auth_to_local" => self.auth_to_local = v.to_string(),
            "hadoop.rpc.protection" => self.rpc_protection = v.to_string(),
            _ => return false,
        }
        true
    }

    /// The user the NameNode runs as in secure mode: its principal's short name (as HDFS
    /// takes its login user's), which is the superuser; `None` for SIMPLE.
    pub fn login_user(&self, host: &str) -> Option<String> {
        if !self.kerberos {
            return None;
        }
        let principal = fill_host(self.principal.as_deref()?, host);
        let realm = ferrite_kerberos::krb5_conf::machine_default_realm();
        let names = AuthToLocal::new(&self.auth_to_local, &realm).ok()?;
        names.short_name(&principal).ok().or_else(|| {
            ferrite_kerberos::auth_to_local::Principal::parse(&principal).map(|p| p.service)
        })
    }

    /// The IPC server's security when Kerberos is on (`None` for SIMPLE), logged in from
    /// the keytab; `host` fills the principal's `_HOST`.
    pub fn server_security(&self, host: &str) -> Result<Option<Arc<ServerSecurity>>, String> {
        if let Some(bad) = &self.bad_method {
            return Err(format!(
                "Invalid attribute value for hadoop.security.authentication of {bad}"
            ));
        }
        if !self.kerberos {
            return Ok(None);
        }
        let principal = self
            .principal
            .as_deref()
            .ok_or("dfs.namenode.kerberos.principal must be set in secure mode")?;
        let keytab = self
            .keytab
            .as_deref()
            .ok_or("dfs.namenode.keytab.file must be set in secure mode")?;
        let principal = fill_host(principal, host);
        let realm = ferrite_kerberos::krb5_conf::machine_default_realm();
        let names = AuthToLocal::new(&self.auth_to_local, &realm).map_err(|e| e.to_string())?;
        let protection = if self.rpc_protection.trim().is_empty() {
            vec![Protection::Authentication]
        } else {
            Protection::parse_list(&self.rpc_protection)?
        };
        ServerSecurity::login(&principal, keytab, protection, names).map(|s| Some(Arc::new(s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_needs_nothing_and_kerberos_needs_its_keys() {
        let mut c = SecurityConfig::default();
        assert!(c.server_security("h").unwrap().is_none());
        assert!(c.set("hadoop.security.authentication", "kerberos"));
        assert!(c.server_security("h").unwrap_err().contains("principal"));
        c.set("dfs.namenode.kerberos.principal", "nn/_HOST@R");
        assert!(c.server_security("h").unwrap_err().contains("keytab"));
        c.set("hadoop.security.authentication", "token");
        assert!(c.server_security("h").unwrap_err().contains("of token"));
        assert!(!c.set("dfs.replication", "3"));
    }
}
