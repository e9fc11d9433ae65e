//! SASL's GSSAPI mechanism (RFC 4752) on the server side, as Java's `GssKrb5Server` runs it
//! under Hadoop IPC: the Kerberos context is made first, then the server offers its
//! security layers (a sealed 4-byte message: a bit per layer and its largest buffer), and
//! the client's sealed answer picks one. Pure logic over [`AcceptContext`], so it is tested
//! without a KDC.

use crate::gss::{Context, Credential, GssError, Step};

/// SASL's quality of protection, `hadoop.rpc.protection`: what wraps each message after
/// the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Protection {
    /// `authentication`: nothing (SASL "auth").
    Authentication,
    /// `integrity`: signed (SASL "auth-int").
    Integrity,
    /// `privacy`: signed and encrypted (SASL "auth-conf").
    Privacy,
}

impl Protection {
    /// The layer's bit in SASL GSSAPI's security-layer octet.
    pub fn bit(self) -> u8 {
        match self {
            Protection::Authentication => 1,
            Protection::Integrity => 2,
            Protection::Privacy => 4,
        }
    }

    fn from_bit(bit: u8) -> Option<Protection> {
        [
            Protection::Authentication,
            Protection::Integrity,
            Protection::Privacy,
        ]
        .into_iter()
        .find(|p| p.bit() == bit)
    }

    /// Parses `hadoop.rpc.protection`'s comma-separated values.
    pub fn parse_list(text: &str) -> Result<Vec<Protection>, String> {
        text.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| match s.to_ascii_lowercase().as_str() {
                "authentication" => Ok(Protection::Authentication),
                "integrity" => Ok(Protection::Integrity),
                "privacy" => Ok(Protection::Privacy),
                _ => Err(format!("Unknown hadoop.rpc.protection value {s}")),
            })
            .collect()
    }
}

/// The acceptor's side of a GSSAPI context, as the handshake needs it.
pub trait AcceptContext {
    fn accept(&mut self, token: &[u8]) -> Result<Step, GssError>;
    fn wrap(&mut self, confidential: bool, msg: &[u8]) -> Result<Vec<u8>, GssError>;
    fn unwrap(&mut self, sealed: &[u8]) -> Result<Vec<u8>, GssError>;
    fn peer(&self) -> Result<String, GssError>;
}

/// A real acceptor: a [`Context`] accepting with a service's [`Credential`].
pub struct Acceptor {
    pub cred: std::sync::Arc<Credential>,
    pub ctx: Context,
}

impl Acceptor {
    pub fn new(cred: std::sync::Arc<Credential>) -> Acceptor {
        Acceptor {
            cred,
            ctx: Context::acceptor(),
        }
    }
}

impl AcceptContext for Acceptor {
    fn accept(&mut self, token: &[u8]) -> Result<Step, GssError> {
        self.ctx.accept(&self.cred, token)
    }
    fn wrap(&mut self, confidential: bool, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        self.ctx.wrap(confidential, msg)
    }
    fn unwrap(&mut self, sealed: &[u8]) -> Result<Vec<u8>, GssError> {
        self.ctx.unwrap(sealed)
    }
    fn peer(&self) -> Result<String, GssError> {
        self.ctx.peer()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslError {
    #[error("GSS initiate failed: {0}")]
    Gss(#[from] GssError),
    #[error("{0}")]
    Protocol(String),
}

/// What the server answers a client's token with.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// Another round: send this (SASL CHALLENGE).
    Challenge(Vec<u8>),
    /// Done (SASL SUCCESS, no token): the client is `principal`, and every message from
    /// now on is wrapped at `protection` (unless it is `Authentication`).
    Success {
        principal: String,
        protection: Protection,
    },
}

enum Stage {
    Context,
    OfferLayers,
    Choice,
    Done,
}

/// The largest wrapped message the server takes, as Java's default (`javax.security.sasl.maxbuffer`).
const MAX_BUFFER: u32 = 65536;

/// One client's GSSAPI handshake, on the server.
pub struct GssapiServer<C> {
    ctx: C,
    offered: Vec<Protection>,
    stage: Stage,
}

impl<C: AcceptContext> GssapiServer<C> {
    /// A handshake offering `offered` (`hadoop.rpc.protection`).
    pub fn new(ctx: C, offered: Vec<Protection>) -> Self {
        GssapiServer {
            ctx,
            offered,
            stage: Stage::Context,
        }
    }

    /// The context, once the handshake has succeeded (to wrap and unwrap with).
    pub fn into_context(self) -> C {
        self.ctx
    }

    /// Takes the client's next token.
    pub fn step(&mut self, token: &[u8]) -> Result<Answer, SaslError> {
        match self.stage {
            Stage::Context => {
                let step = self.ctx.accept(token)?;
                if step.established {
                    self.stage = Stage::OfferLayers;
                }
                Ok(Answer::Challenge(step.token))
            }
            Stage::OfferLayers => {
                // The client's answer to the context's last token carries nothing.
                if !token.is_empty() {
                    return Err(protocol("Handshake expecting no response data from server"));
                }
                let mask = self.offered.iter().fold(0u8, |m, p| m | p.bit());
                let mut offer = vec![mask];
                offer.extend_from_slice(&MAX_BUFFER.to_be_bytes()[1..]);
                self.stage = Stage::Choice;
                Ok(Answer::Challenge(self.ctx.wrap(false, &offer)?))
            }
            Stage::Choice => {
                let choice = self.ctx.unwrap(token)?;
                if choice.len() < 4 {
                    return Err(protocol("Final handshake response too short"));
                }
                let protection = Protection::from_bit(choice[0])
                    .filter(|p| self.offered.contains(p))
                    .ok_or_else(|| {
                        protocol(&format!(
                            "Client selected unsupported protection: {}",
                            choice[0]
                        ))
                    })?;
                let principal = self.ctx.peer()?;
                // An authorization id, if any, must be the client itself (Hadoop allows
                // no one to act as another through SASL; proxy users go in the header).
                let authzid = String::from_utf8_lossy(&choice[4..]);
                if !authzid.is_empty() && authzid != principal {
                    return Err(protocol(&format!(
                        "{principal} is not authorized to act as {authzid}"
                    )));
                }
                self.stage = Stage::Done;
                Ok(Answer::Success {
                    principal,
                    protection,
                })
            }
            Stage::Done => Err(protocol("SASL negotiation already complete")),
        }
    }
}

/// The client's side of the same handshake (Java's `GssKrb5Client`), for Ferrite's own
/// clients and DataNodes.
pub struct GssapiClient<'a> {
    cred: &'a Credential,
    /// `service@host`, e.g. `nn@namenode1.example`.
    target: String,
    ctx: Context,
    /// Acceptable layers, best first.
    wanted: Vec<Protection>,
    layers_next: bool,
    chosen: Option<Protection>,
}

impl<'a> GssapiClient<'a> {
    pub fn new(cred: &'a Credential, target: &str, wanted: Vec<Protection>) -> Self {
        let mut wanted = wanted;
        wanted.sort_unstable_by(|a, b| b.cmp(a));
        GssapiClient {
            cred,
            target: target.to_string(),
            ctx: Context::initiator(),
            wanted,
            layers_next: false,
            chosen: None,
        }
    }

    /// The first token (SASL INITIATE's).
    pub fn start(&mut self) -> Result<Vec<u8>, SaslError> {
        let step = self.ctx.initiate(self.cred, &self.target, None)?;
        self.layers_next = step.established;
        Ok(step.token)
    }

    /// Answers the server's challenge.
    pub fn step(&mut self, challenge: &[u8]) -> Result<Vec<u8>, SaslError> {
        if !self.layers_next {
            let step = self
                .ctx
                .initiate(self.cred, &self.target, Some(challenge))?;
            self.layers_next = step.established;
            return Ok(step.token);
        }
        let offer = self.ctx.unwrap(challenge)?;
        if offer.len() != 4 {
            return Err(protocol("Invalid security layer offer"));
        }
        let chosen = self
            .wanted
            .iter()
            .copied()
            .find(|p| offer[0] & p.bit() != 0)
            .ok_or_else(|| protocol("No common protection layer between client and server"))?;
        self.chosen = Some(chosen);
        let mut answer = vec![chosen.bit()];
        answer.extend_from_slice(&MAX_BUFFER.to_be_bytes()[1..]);
        Ok(self.ctx.wrap(false, &answer)?)
    }

    /// The layer agreed, and the context to wrap with, once the server said SUCCESS.
    pub fn finish(self) -> Result<(Protection, Context), SaslError> {
        let p = self
            .chosen
            .ok_or_else(|| protocol("Server said SUCCESS before the handshake ended"))?;
        Ok((p, self.ctx))
    }
}

fn protocol(msg: &str) -> SaslError {
    SaslError::Protocol(msg.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A context that is made after two tokens, and "seals" by prefixing a byte.
    struct Fake {
        rounds: u32,
    }

    impl AcceptContext for Fake {
        fn accept(&mut self, token: &[u8]) -> Result<Step, GssError> {
            self.rounds += 1;
            Ok(Step {
                token: [b"re:", token].concat(),
                established: self.rounds == 2,
            })
        }
        fn wrap(&mut self, _: bool, msg: &[u8]) -> Result<Vec<u8>, GssError> {
            Ok([&[0xAA], msg].concat())
        }
        fn unwrap(&mut self, sealed: &[u8]) -> Result<Vec<u8>, GssError> {
            match sealed.split_first() {
                Some((0xAA, rest)) => Ok(rest.to_vec()),
                _ => Err(GssError {
                    call: "gss_unwrap",
                    major: 0x0007_0000,
                    minor: 0,
                    message: "A token had an invalid Message Integrity Check (MIC)".into(),
                }),
            }
        }
        fn peer(&self) -> Result<String, GssError> {
            Ok("alice@R".into())
        }
    }

    fn server(offered: &[Protection]) -> GssapiServer<Fake> {
        let mut s = GssapiServer::new(Fake { rounds: 0 }, offered.to_vec());
        assert_eq!(s.step(b"t1").unwrap(), Answer::Challenge(b"re:t1".to_vec()));
        assert_eq!(s.step(b"t2").unwrap(), Answer::Challenge(b"re:t2".to_vec()));
        s
    }

    #[test]
    fn the_layers_are_offered_sealed_and_the_choice_ends_it() {
        let mut s = server(&[Protection::Authentication, Protection::Privacy]);
        // Offer: auth|conf, max buffer 65536 in three bytes.
        assert_eq!(
            s.step(b"").unwrap(),
            Answer::Challenge(vec![0xAA, 0b101, 0x01, 0x00, 0x00])
        );
        assert_eq!(
            s.step(&[0xAA, 4, 0, 0xff, 0xff]).unwrap(),
            Answer::Success {
                principal: "alice@R".into(),
                protection: Protection::Privacy
            }
        );
        assert!(s.step(b"").is_err());
    }

    #[test]
    fn a_choice_not_offered_a_forged_seal_or_another_identity_is_refused() {
        let mut s = server(&[Protection::Privacy]);
        s.step(b"").unwrap();
        assert!(matches!(
            s.step(&[0xAA, 1, 0, 0, 0]),
            Err(SaslError::Protocol(_))
        ));
        let mut s = server(&[Protection::Privacy]);
        s.step(b"").unwrap();
        assert!(matches!(
            s.step(&[0x00, 4, 0, 0, 0]),
            Err(SaslError::Gss(_))
        ));
        let mut s = server(&[Protection::Authentication]);
        s.step(b"").unwrap();
        let as_bob = [&[0xAA, 1, 0, 0, 0][..], b"bob@R"].concat();
        assert!(matches!(s.step(&as_bob), Err(SaslError::Protocol(_))));
        let mut s = server(&[Protection::Authentication]);
        s.step(b"").unwrap();
        let as_self = [&[0xAA, 1, 0, 0, 0][..], b"alice@R"].concat();
        assert!(matches!(s.step(&as_self), Ok(Answer::Success { .. })));
    }

    #[test]
    fn protection_lists_parse_as_hadoop_writes_them() {
        assert_eq!(
            Protection::parse_list("authentication, privacy").unwrap(),
            vec![Protection::Authentication, Protection::Privacy]
        );
        assert!(Protection::parse_list("secret").is_err());
    }
}
