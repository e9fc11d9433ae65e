//! The token identifier: who may do what to which blocks until when, under which key.
//! Serialized once per token and signed once with HMAC-SHA1, as HDFS signs its tokens.

use bytes::Bytes;
use ferrite_proto::common::TokenProto;
use ferrite_proto::ferrite::BlockTokenIdProto;
use ferrite_proto::Message;
use hmac::{Hmac, Mac};
use sha1::Sha1;

use crate::runs::{covers, flatten, Run};
use crate::{Modes, TokenError, KIND};

type HmacSha1 = Hmac<Sha1>;

/// A decoded identifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockTokenId {
    pub expiry_ms: u64,
    pub key_id: u32,
    pub user: String,
    pub modes: Modes,
    /// Flat `(first, stride, count)` triples; see [`crate::runs`].
    pub runs: Vec<u64>,
}

impl BlockTokenId {
    pub fn new(expiry_ms: u64, key_id: u32, user: &str, modes: Modes, runs: &[Run]) -> Self {
        BlockTokenId {
            expiry_ms,
            key_id,
            user: user.to_string(),
            modes,
            runs: flatten(runs),
        }
    }

    pub fn encode(&self) -> Bytes {
        BlockTokenIdProto {
            expiry_date: self.expiry_ms,
            key_id: self.key_id,
            user_id: self.user.clone(),
            modes: self.modes.0,
            runs: self.runs.clone(),
        }
        .encode_to_vec()
        .into()
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, TokenError> {
        let p =
            BlockTokenIdProto::decode(bytes).map_err(|e| TokenError::Malformed(e.to_string()))?;
        Ok(BlockTokenId {
            expiry_ms: p.expiry_date,
            key_id: p.key_id,
            user: p.user_id,
            modes: Modes(p.modes),
            runs: p.runs,
        })
    }

    pub fn covers(&self, block_id: u64) -> bool {
        covers(&self.runs, block_id)
    }
}

/// A signed token: the identifier's bytes and their HMAC. Cloning shares the bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub identifier: Bytes,
    pub password: Bytes,
}

impl Token {
    /// Signs an encoded identifier, for block pool `pool`, with `secret`.
    pub fn sign(identifier: Bytes, pool: &str, secret: &[u8]) -> Token {
        let password = mac(secret, &identifier, pool)
            .finalize()
            .into_bytes()
            .to_vec()
            .into();
        Token {
            identifier,
            password,
        }
    }

    /// The wire form, taking the bytes rather than sharing them.
    pub fn into_proto(self) -> TokenProto {
        TokenProto {
            identifier: self.identifier,
            password: self.password,
            kind: KIND.to_string(),
            service: String::new(),
        }
    }

    pub fn to_proto(&self) -> TokenProto {
        TokenProto {
            identifier: self.identifier.clone(),
            password: self.password.clone(),
            kind: KIND.to_string(),
            service: String::new(),
        }
    }
}

/// Whether `password` is the HMAC of `identifier` and `pool` under `secret`, compared in
/// constant time so that a forger learns nothing from how long a refusal takes.
pub fn signature_matches(secret: &[u8], identifier: &[u8], pool: &str, password: &[u8]) -> bool {
    mac(secret, identifier, pool).verify_slice(password).is_ok()
}

/// HMAC-SHA1 of the identifier, the pool's id and that id's length. The length comes last
/// so that the signed bytes split into (identifier, pool) one way only: no identifier with
/// a pool's first bytes moved onto its end signs the same as the original.
fn mac(secret: &[u8], identifier: &[u8], pool: &str) -> HmacSha1 {
    // HMAC takes keys of any length; this cannot fail.
    let mut m = HmacSha1::new_from_slice(secret).expect("HMAC accepts any key length");
    m.update(identifier);
    m.update(pool.as_bytes());
    m.update(&(pool.len() as u64).to_le_bytes());
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::runs_of;

    #[test]
    fn identifier_round_trips() {
        let id = BlockTokenId::new(
            1_700_000_000_000,
            42,
            "alice",
            Modes::READ,
            &runs_of([10, 11, 12, 99]),
        );
        let back = BlockTokenId::decode(&id.encode()).unwrap();
        assert_eq!(back, id);
        assert!(back.covers(11) && back.covers(99) && !back.covers(13));
    }

    #[test]
    fn garbage_is_malformed() {
        assert!(matches!(
            BlockTokenId::decode(&[0xff, 0xff, 0xff]),
            Err(TokenError::Malformed(_))
        ));
    }

    #[test]
    fn signatures_verify_only_with_the_key_and_bytes_signed() {
        let ident = Bytes::from_static(b"identifier");
        let t = Token::sign(ident.clone(), "BP-1", b"secret");
        assert_eq!(t.password.len(), 20);
        let verifies = |secret: &[u8], ident: &[u8], pool: &str, password: &[u8]| {
            signature_matches(secret, ident, pool, password)
        };
        assert!(verifies(b"secret", &ident, "BP-1", &t.password));
        assert!(!verifies(b"other", &ident, "BP-1", &t.password));
        assert!(!verifies(b"secret", b"identifies", "BP-1", &t.password));
        assert!(!verifies(b"secret", &ident, "BP-1", &t.password[..19]));
        // The pool is signed: another pool, or the same bytes split elsewhere, fail.
        assert!(!verifies(b"secret", &ident, "BP-2", &t.password));
        assert!(!verifies(b"secret", b"identifierB", "P-1", &t.password));
    }
}
