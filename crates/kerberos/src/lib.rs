//! Kerberos for Ferrite's secure mode, as Hadoop uses it.
//!
//! - [`gss`]: credentials and security contexts through the system's MIT GSSAPI library,
//!   loaded at run time ([`ffi`] says why).
//! - [`sasl`]: SASL's GSSAPI mechanism on the server side, the handshake Hadoop IPC runs.
//! - [`auth_to_local`]: principals mapped to user names by `hadoop.security.auth_to_local`.
//! - [`krb5_conf`]: the default realm, from the same `krb5.conf` the library reads.
//! - [`local_kdc`]: a throw-away MIT KDC for tests and `ferrite local --secure`.

pub mod auth_to_local;
mod ffi;
pub mod gss;
pub mod krb5_conf;
pub mod local_kdc;
pub mod sasl;
