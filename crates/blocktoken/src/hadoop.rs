//! Block tokens in Hadoop's own format, read so that tools which sign their own tokens with
//! the NameNode's exported keys are served: Hadoop's Balancer and Mover get the keys with
//! `getBlockKeys` and sign each move themselves. Their identifier is the Writable form of
//! HDFS's `BlockTokenIdentifier` (the default, `dfs.block.access.token.protobuf.enable`
//! off): expiry and key id, user, block pool, one block id and the modes; the password is
//! the HMAC-SHA1 of those bytes under the key, with nothing else mixed in.
//!
//! Only read: Ferrite signs its own tokens in its own format (see [`crate::identifier`]).

use hmac::{Hmac, Mac};
use sha1::Sha1;

use crate::{Modes, TokenError};

/// What a Hadoop block token says (the storage types and ids it may carry are not checked
/// by Ferrite's DataNodes, which place a moved replica by the op's own storage type).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HadoopTokenId {
    pub expiry_ms: u64,
    pub key_id: u32,
    pub user: String,
    pub pool: String,
    pub block_id: u64,
    pub modes: Modes,
}

impl HadoopTokenId {
    /// Reads the Writable form; anything cut short or out of range is malformed.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, TokenError> {
        let mut r = Reader(bytes);
        let expiry = r.vlong()?;
        let key_id = r.vlong()?;
        let user = r.string()?;
        let pool = r.string()?;
        let block_id = r.vlong()?;
        let count = r.vlong()?;
        if !(0..=4).contains(&count) {
            return Err(malformed("mode count"));
        }
        let mut modes = Modes::default();
        for _ in 0..count {
            modes = modes.with(match r.text()?.as_str() {
                "READ" => Modes::READ,
                "WRITE" => Modes::WRITE,
                "COPY" => Modes::COPY,
                "REPLACE" => Modes::REPLACE,
                other => return Err(malformed(&format!("access mode {other}"))),
            });
        }
        Ok(HadoopTokenId {
            expiry_ms: u64::try_from(expiry).map_err(|_| malformed("expiry"))?,
            // A Java int: Ferrite's key ids are any u32, so half of them come back negative.
            key_id: i32::try_from(key_id).map_err(|_| malformed("key id"))? as u32,
            user,
            pool,
            block_id: block_id as u64,
            modes,
        })
    }
}

/// Whether `password` is the HMAC-SHA1 of `identifier` under `secret`, as Hadoop signs.
pub(crate) fn hadoop_signature_matches(secret: &[u8], identifier: &[u8], password: &[u8]) -> bool {
    let mut mac = Hmac::<Sha1>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(identifier);
    mac.verify_slice(password).is_ok()
}

fn malformed(what: &str) -> TokenError {
    TokenError::Malformed(format!("Hadoop block token: bad {what}"))
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], TokenError> {
        if self.0.len() < n {
            return Err(malformed("length (cut short)"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    /// Hadoop's `WritableUtils` variable-length long: one byte for -112..=127, else a
    /// byte giving the sign and the count of big-endian bytes that follow.
    fn vlong(&mut self) -> Result<i64, TokenError> {
        let first = self.take(1)?[0] as i8;
        if first >= -112 {
            return Ok(i64::from(first));
        }
        let negative = first < -120;
        let len = if negative {
            -120 - i32::from(first)
        } else {
            -112 - i32::from(first)
        } as usize;
        let mut v: i64 = 0;
        for &b in self.take(len)? {
            v = (v << 8) | i64::from(b);
        }
        Ok(if negative { !v } else { v })
    }

    /// `WritableUtils.writeString`: a four-byte length (-1 for none), then UTF-8.
    fn string(&mut self) -> Result<String, TokenError> {
        let len = i32::from_be_bytes(self.take(4)?.try_into().expect("four bytes"));
        if len < 0 {
            return Ok(String::new());
        }
        let bytes = self.take(len as usize)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| malformed("string"))
    }

    /// `Text.writeString` (how enums are written): a variable-length length, then UTF-8.
    fn text(&mut self) -> Result<String, TokenError> {
        let len = usize::try_from(self.vlong()?).map_err(|_| malformed("text length"))?;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| malformed("text"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Made by Hadoop 3.4.1's `BlockTokenIdentifier` (user "balancer", REPLACE and COPY of
    /// blk_1073741825 on one DISK storage "DS-1", key 7) and signed with `HmacSHA1` under
    /// the key bytes "secret-key-bytes".
    const IDENTIFIER: &str = "8a01a3185c5000070000000862616c616e6365720000001042502d312d3132372e302e302e312d358c400000010204434f5059075245504c41434501044449534b010000000444532d31";
    const PASSWORD: &str = "ce40aa5f705220cbee9ada91694c9327adbd3f5b";

    #[test]
    fn a_token_hadoop_signed_is_read_and_its_signature_checked() {
        let id = hex(IDENTIFIER);
        let t = HadoopTokenId::decode(&id).unwrap();
        assert_eq!(
            t,
            HadoopTokenId {
                expiry_ms: 1_800_000_000_000,
                key_id: 7,
                user: "balancer".into(),
                pool: "BP-1-127.0.0.1-5".into(),
                block_id: 1_073_741_825,
                modes: Modes::COPY.with(Modes::REPLACE),
            }
        );
        assert!(hadoop_signature_matches(
            b"secret-key-bytes",
            &id,
            &hex(PASSWORD)
        ));
        assert!(!hadoop_signature_matches(
            b"another-key",
            &id,
            &hex(PASSWORD)
        ));
        let mut forged = id.clone();
        *forged.last_mut().unwrap() ^= 1;
        assert!(!hadoop_signature_matches(
            b"secret-key-bytes",
            &forged,
            &hex(PASSWORD)
        ));
    }

    #[test]
    fn a_datanode_takes_a_hadoop_token_for_its_block_and_modes_only() {
        use crate::keys::KeyRing;
        use ferrite_proto::common::TokenProto;
        use ferrite_proto::hdfs::{BlockKeyProto, ExportedBlockKeysProto};
        let key = BlockKeyProto {
            key_id: 7,
            expiry_date: 1_900_000_000_000,
            key_bytes: Some(b"secret-key-bytes".to_vec()),
        };
        let mut ring = KeyRing::default();
        let now = 1_700_000_000_000;
        ring.update(
            &ExportedBlockKeysProto {
                is_block_token_enabled: true,
                key_update_interval: 600_000,
                token_lifetime: 600_000,
                current_key: key.clone(),
                all_keys: vec![key],
            },
            now,
        );
        let token = TokenProto {
            identifier: hex(IDENTIFIER).into(),
            password: hex(PASSWORD).into(),
            kind: crate::KIND.into(),
            service: String::new(),
        };
        let (pool, blk) = ("BP-1-127.0.0.1-5", 1_073_741_825);
        let check = |now, pool, blk, want| ring.check(Some(&token), now, pool, blk, want);
        assert_eq!(check(now, pool, blk, Modes::REPLACE), Ok(()));
        assert_eq!(check(now, pool, blk, Modes::COPY), Ok(()));
        assert!(matches!(
            check(now, pool, blk, Modes::READ),
            Err(TokenError::WrongMode { .. })
        ));
        assert!(matches!(
            check(now, pool, blk + 1, Modes::COPY),
            Err(TokenError::NotCovered(_))
        ));
        assert!(matches!(
            check(now, "BP-2", blk, Modes::COPY),
            Err(TokenError::NotCovered(_))
        ));
        assert!(matches!(
            check(1_850_000_000_000, pool, blk, Modes::COPY),
            Err(TokenError::Expired { .. })
        ));
        let mut forged = token.clone();
        forged.password = hex(&PASSWORD.replace("ce40", "ce41")).into();
        assert!(matches!(
            ring.check(Some(&forged), now, pool, blk, Modes::COPY),
            Err(TokenError::BadSignature(7))
        ));
    }

    /// Key ids are u32 on the wire (BlockKeyProto) and a Java int in the identifier, so one
    /// of 2^31 or more is written negative.
    #[test]
    fn a_key_id_past_the_java_int_range_reads_back_as_exported() {
        // Key id 0x9000_0000 as Java's int -1879048192, WritableUtils-encoded.
        let id = IDENTIFIER.replacen("5000070000", "5000846fffffff0000", 1);
        let t = HadoopTokenId::decode(&hex(&id)).unwrap();
        assert_eq!(t.key_id, 0x9000_0000);
        assert_eq!(t.user, "balancer");
    }

    #[test]
    fn a_cut_or_garbled_identifier_is_malformed() {
        let id = hex(IDENTIFIER);
        for n in [0, 1, 5, 10, 30] {
            assert!(HadoopTokenId::decode(&id[..n]).is_err(), "{n} bytes");
        }
        assert!(HadoopTokenId::decode(&[0xff; 40]).is_err());
    }

    #[test]
    fn variable_length_longs_read_as_hadoop_writes_them() {
        // (bytes, value) pairs from WritableUtils.writeVLong.
        let cases: [(&[u8], i64); 5] = [
            (&[0x00], 0),
            (&[0x7f], 127),
            (&[0x90], -112),
            (&[0x8f, 0x80], 128),
            (&[0x87, 0x70], -113),
        ];
        for (bytes, want) in cases {
            assert_eq!(Reader(bytes).vlong().unwrap(), want, "{bytes:?}");
        }
    }
}
