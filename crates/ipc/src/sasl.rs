//! The SASL negotiation a SIMPLE-only server performs (callId -33).
//!
//! A client that opened with the SASL auth byte sends NEGOTIATE; a server whose only method
//! is SIMPLE answers SUCCESS, which both the Java client and hdfs-native take as "use SIMPLE".
//! A client that still sends INITIATE(SIMPLE) gets no reply, as from a Java server. Anything
//! else (TOKEN, KERBEROS) is refused with FATAL_UNAUTHORIZED.

use ferrite_proto::common::rpc_sasl_proto::SaslState;
use ferrite_proto::common::RpcSaslProto;

#[derive(Debug, PartialEq)]
pub(crate) enum SaslOutcome {
    /// Send this message back (callId -33) and keep negotiating.
    Reply(RpcSaslProto),
    /// Negotiation is over; the connection context comes next. Nothing to send.
    Done,
    /// Refuse and close, with this message.
    Refuse(String),
}

/// Handles one SASL message from the client.
pub(crate) fn on_sasl_message(msg: &RpcSaslProto) -> SaslOutcome {
    match SaslState::try_from(msg.state) {
        Ok(SaslState::Negotiate) => SaslOutcome::Reply(RpcSaslProto {
            state: SaslState::Success as i32,
            ..Default::default()
        }),
        Ok(SaslState::Initiate) => {
            let simple = msg
                .auths
                .first()
                .map(|a| a.method == "SIMPLE")
                .unwrap_or(false);
            if simple {
                SaslOutcome::Done
            } else {
                let method = msg
                    .auths
                    .first()
                    .map(|a| a.method.as_str())
                    .unwrap_or("<none>");
                SaslOutcome::Refuse(format!(
                    "Client asked for {method} authentication; this server only allows SIMPLE"
                ))
            }
        }
        _ => SaslOutcome::Refuse(format!(
            "Unexpected SASL state {} during SIMPLE negotiation",
            msg.state
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_proto::common::rpc_sasl_proto::SaslAuth;

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
        let out = on_sasl_message(&msg(SaslState::Negotiate, None));
        let SaslOutcome::Reply(r) = out else {
            panic!("expected a reply")
        };
        assert_eq!(r.state, SaslState::Success as i32);
    }

    #[test]
    fn initiate_simple_ends_quietly_others_refused() {
        assert_eq!(
            on_sasl_message(&msg(SaslState::Initiate, Some("SIMPLE"))),
            SaslOutcome::Done
        );
        assert!(matches!(
            on_sasl_message(&msg(SaslState::Initiate, Some("KERBEROS"))),
            SaslOutcome::Refuse(_)
        ));
        assert!(matches!(
            on_sasl_message(&msg(SaslState::Wrap, None)),
            SaslOutcome::Refuse(_)
        ));
    }
}
