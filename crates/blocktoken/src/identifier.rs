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

    /// The token as Hadoop's `Token.encodeToUrlString` gives it (WebHDFS's `urlString`):
    /// its Writable form (identifier and password with their lengths, then the kind and
    /// service as `Text`) in URL-safe base64 without padding.
    pub fn to_url_string(&self) -> String {
        use base64::Engine;
        let mut w = Vec::new();
        for part in [&self.identifier[..], &self.password, KIND.as_bytes(), b""] {
            write_vlong(&mut w, part.len() as i64);
            w.extend_from_slice(part);
        }
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(w)
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

/// Hadoop's `WritableUtils.writeVLong`: one byte for -112..=127, else a length byte
/// (its sign folded in) and the value's bytes, most significant first.
pub(crate) fn write_vlong(out: &mut Vec<u8>, v: i64) {
    if (-112..=127).contains(&v) {
        out.push(v as u8);
        return;
    }
    let (negative, mut magnitude) = if v < 0 { (true, !v) } else { (false, v) };
    let mut len: i64 = if negative { -120 } else { -112 };
    let mut t = magnitude;
    while t != 0 {
        t >>= 8;
        len -= 1;
    }
    out.push(len as u8);
    let bytes = if len < -120 {
        -(len + 120)
    } else {
        -(len + 112)
    };
    magnitude = if negative { !v } else { v };
    for i in (0..bytes).rev() {
        out.push((magnitude >> (i * 8)) as u8);
    }
}

/// Whether `password` is the HMAC of `identifier` and `pool` under `secret`, compared in
/// constant time so that a forger learns nothing from how long a refusal takes.
pub(crate) fn signature_matches(
    secret: &[u8],
    identifier: &[u8],
    pool: &str,
    password: &[u8],
) -> bool {
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

    #[test]
    fn vlongs_and_url_strings_are_hadoops() {
        let enc = |v| {
            let mut out = Vec::new();
            write_vlong(&mut out, v);
            out
        };
        assert_eq!(enc(0), [0]);
        assert_eq!(enc(127), [127]);
        assert_eq!(enc(-112), [0x90]);
        assert_eq!(enc(128), [0x8f, 0x80]);
        assert_eq!(enc(300), [0x8e, 0x01, 0x2c]);
        assert_eq!(enc(-113), [0x87, 0x70]);
        let t = Token {
            identifier: Bytes::from_static(&[1, 2]),
            password: Bytes::from_static(&[3]),
        };
        use base64::Engine;
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(t.to_url_string())
            .unwrap();
        let mut want = vec![2, 1, 2, 1, 3, 16];
        want.extend_from_slice(b"HDFS_BLOCK_TOKEN");
        want.push(0);
        assert_eq!(raw, want);
    }

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
