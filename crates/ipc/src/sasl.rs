//! The SASL negotiation of a connection (callId -33), as Hadoop's `Server.saslProcess`
//! runs it.
//!
//! Without security the only method is SIMPLE: NEGOTIATE is answered SUCCESS, which both
//! the Java client and hdfs-native take as "use SIMPLE", and INITIATE(SIMPLE) gets no reply.
//! With Kerberos ([`ServerSecurity`]) NEGOTIATE lists KERBEROS (GSSAPI, with this server's
//! service and host, which the client checks against the principal it expects), and the
//! GSSAPI exchange runs until the client is known by its principal, mapped to a user by
//! `hadoop.security.auth_to_local`.

use std::sync::Arc;

use ferrite_kerberos::auth_to_local::{AuthToLocal, Principal};
use ferrite_kerberos::gss::Credential;
use ferrite_kerberos::sasl::{Acceptor, Answer, GssapiServer, Protection, SaslError};
use ferrite_proto::common::rpc_sasl_proto::{SaslAuth, SaslState};
use ferrite_proto::common::RpcSaslProto;

use crate::error::class;

/// A server's Kerberos identity and rules.
pub struct ServerSecurity {
    /// `service/host@REALM`, `_HOST` already filled in.
    pub principal: String,
    service: String,
    host: String,
    cred: Arc<Credential>,
    protection: Vec<Protection>,
    names: AuthToLocal,
}

impl std::fmt::Debug for ServerSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServerSecurity({})", self.principal)
    }
}

impl ServerSecurity {
    /// Logs in as `principal` from `keytab` (the keys are read now, so a wrong keytab
    /// stops the server at start-up, as HDFS's login does).
    pub fn login(
        principal: &str,
        keytab: &str,
        protection: Vec<Protection>,
        names: AuthToLocal,
    ) -> Result<ServerSecurity, String> {
        let p = Principal::parse(principal)
            .filter(|p| p.host.is_some())
            .ok_or_else(|| {
                format!("{principal} is not a service principal (service/host@REALM)")
            })?;
        if protection.iter().any(|&p| p != Protection::Authentication) {
            return Err(
                "hadoop.rpc.protection: only authentication is served so far \
                 (integrity and privacy wrap every call, which Ferrite does not do yet)"
                    .into(),
            );
        }
        let cred = Credential::acceptor(principal, keytab)
            .map_err(|e| format!("Login failure for {principal} from keytab {keytab}: {e}"))?;
        Ok(ServerSecurity {
            principal: principal.to_string(),
            service: p.service,
            host: p.host.unwrap_or_default(),
            cred: Arc::new(cred),
            protection,
            names,
        })
    }

    fn kerberos_auth(&self) -> SaslAuth {
        SaslAuth {
            method: "KERBEROS".into(),
            mechanism: "GSSAPI".into(),
            protocol: Some(self.service.clone()),
            server_id: Some(self.host.clone()),
            challenge: None,
        }
    }

    /// The methods a client may use, as HDFS lists them in its refusals.
    pub(crate) fn available(&self) -> &'static str {
        "[KERBEROS]"
    }
}

#[derive(Debug, PartialEq)]
pub(crate) enum SaslOutcome {
    /// Send this message back (callId -33) and keep negotiating.
    Reply(RpcSaslProto),
    /// Negotiation is over without authentication (SIMPLE); the connection context comes
    /// next. Nothing to send.
    Done,
    /// Send this SUCCESS; the client is `user` (its principal mapped), known as
    /// `principal`.
    Authenticated {
        reply: RpcSaslProto,
        user: String,
        principal: String,
    },
    /// Refuse and close with this exception.
    Refuse { class: &'static str, msg: String },
}

/// One connection's negotiation.
pub(crate) struct SaslSession {
    security: Option<Arc<ServerSecurity>>,
    negotiated: bool,
    gss: Option<GssapiServer<Acceptor>>,
}

impl SaslSession {
    pub(crate) fn new(security: Option<Arc<ServerSecurity>>) -> SaslSession {
        SaslSession {
            security,
            negotiated: false,
            gss: None,
        }
    }

    /// Handles one SASL message from the client.
    pub(crate) fn on_message(&mut self, msg: &RpcSaslProto) -> SaslOutcome {
        let Some(sec) = self.security.clone() else {
            return simple_only(msg);
        };
        match SaslState::try_from(msg.state) {
            Ok(SaslState::Negotiate) => {
                if self.negotiated {
                    return refuse(
                        class::ACCESS_CONTROL,
                        "Client already attempted negotiation",
                    );
                }
                self.negotiated = true;
                SaslOutcome::Reply(RpcSaslProto {
                    state: SaslState::Negotiate as i32,
                    auths: vec![sec.kerberos_auth()],
                    ..Default::default()
                })
            }
            Ok(SaslState::Initiate) => {
                if msg.auths.len() != 1 {
                    return refuse(class::SASL, "Client mechanism is malformed");
                }
                let auth = &msg.auths[0];
                if auth.method != "KERBEROS" || auth.mechanism != "GSSAPI" {
                    return refuse(
                        class::ACCESS_CONTROL,
                        &format!(
                            "{} authentication is not enabled.  Available:{}",
                            auth.method,
                            sec.available()
                        ),
                    );
                }
                self.gss = Some(GssapiServer::new(
                    Acceptor::new(sec.cred.clone()),
                    sec.protection.clone(),
                ));
                self.token(&sec, msg)
            }
            Ok(SaslState::Response) if self.gss.is_some() => self.token(&sec, msg),
            _ => refuse(
                class::SASL,
                &format!("Client sent unsupported state {}", state_name(msg.state)),
            ),
        }
    }

    fn token(&mut self, sec: &ServerSecurity, msg: &RpcSaslProto) -> SaslOutcome {
        let Some(token) = &msg.token else {
            return refuse(class::SASL, "Client did not send a token");
        };
        let gss = self.gss.as_mut().expect("set by INITIATE");
        match gss.step(token) {
            Ok(Answer::Challenge(c)) => SaslOutcome::Reply(RpcSaslProto {
                state: SaslState::Challenge as i32,
                token: Some(c),
                ..Default::default()
            }),
            Ok(Answer::Success { principal, .. }) => {
                self.gss = None;
                match sec.names.short_name(&principal) {
                    Ok(user) => SaslOutcome::Authenticated {
                        reply: RpcSaslProto {
                            state: SaslState::Success as i32,
                            ..Default::default()
                        },
                        user,
                        principal,
                    },
                    Err(e) => refuse(class::ACCESS_CONTROL, &e.to_string()),
                }
            }
            Err(SaslError::Gss(e)) => refuse(class::SASL, &format!("GSS initiate failed: {e}")),
            Err(SaslError::Protocol(m)) => refuse(class::SASL, &m),
        }
    }
}

fn refuse(class: &'static str, msg: &str) -> SaslOutcome {
    SaslOutcome::Refuse {
        class,
        msg: msg.to_string(),
    }
}

fn state_name(state: i32) -> String {
    SaslState::try_from(state)
        .map(|s| s.as_str_name().to_string())
        .unwrap_or_else(|_| state.to_string())
}

/// A server whose only method is SIMPLE.
fn simple_only(msg: &RpcSaslProto) -> SaslOutcome {
    match SaslState::try_from(msg.state) {
        Ok(SaslState::Negotiate) => SaslOutcome::Reply(RpcSaslProto {
            state: SaslState::Success as i32,
            ..Default::default()
        }),
        Ok(SaslState::Initiate) => {
            let method = msg.auths.first().map(|a| a.method.as_str());
            if method == Some("SIMPLE") {
                SaslOutcome::Done
            } else {
                refuse(
                    class::ACCESS_CONTROL,
                    &format!(
                        "{} authentication is not enabled.  Available:[SIMPLE]",
                        method.unwrap_or("<none>")
                    ),
                )
            }
        }
        _ => refuse(
            class::ACCESS_CONTROL,
            &format!(
                "Unexpected SASL state {} during SIMPLE negotiation",
                state_name(msg.state)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(state: SaslState, method: Option<&str>) -> RpcSaslProto {
        RpcSaslProto {
            state: state as i32,
            auths: method
                .map(|m| SaslAuth {
                    method: m.into(),
                    mechanism: String::new(),
                    ..Default::default()
                })
                .into_iter()
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn negotiate_gets_success() {
        let out = SaslSession::new(None).on_message(&msg(SaslState::Negotiate, None));
        let SaslOutcome::Reply(r) = out else {
            panic!("expected a reply")
        };
        assert_eq!(r.state, SaslState::Success as i32);
    }

    #[test]
    fn initiate_simple_ends_quietly_others_refused() {
        let mut s = SaslSession::new(None);
        assert_eq!(
            s.on_message(&msg(SaslState::Initiate, Some("SIMPLE"))),
            SaslOutcome::Done
        );
        assert_eq!(
            s.on_message(&msg(SaslState::Initiate, Some("KERBEROS"))),
            SaslOutcome::Refuse {
                class: class::ACCESS_CONTROL,
                msg: "KERBEROS authentication is not enabled.  Available:[SIMPLE]".into()
            }
        );
        assert!(matches!(
            s.on_message(&msg(SaslState::Wrap, None)),
            SaslOutcome::Refuse { .. }
        ));
    }
}
