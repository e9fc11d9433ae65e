//! Keys: the NameNode's rolling [`KeyManager`], which signs, and each DataNode's
//! [`KeyRing`], which checks.
//!
//! As in HDFS, the NameNode holds a current key (signs now), a next key (already shipped,
//! so DataNodes know it before it signs anything) and retired keys (kept until every token
//! they signed has expired). Keys roll every update interval and are shipped to DataNodes
//! at registration and in heartbeat answers.

use std::collections::HashMap;
use std::ops::Range;

use bytes::Bytes;
use ferrite_proto::common::TokenProto;
use ferrite_proto::hdfs::{BlockKeyProto, ExportedBlockKeysProto};

use crate::hadoop::{hadoop_signature_matches, HadoopTokenId};
use crate::identifier::{signature_matches, BlockTokenId, Token};
use crate::runs::{groups, runs_of, MAX_RUNS};
use crate::{Modes, TokenError};

/// Bytes of secret per key, as HDFS's HmacSHA1 key generator makes.
pub const SECRET_LEN: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockKey {
    pub id: u32,
    pub expiry_ms: u64,
    pub secret: Bytes,
}

impl BlockKey {
    fn to_proto(&self) -> BlockKeyProto {
        BlockKeyProto {
            key_id: self.id,
            expiry_date: self.expiry_ms,
            key_bytes: Some(self.secret.to_vec()),
        }
    }

    fn from_proto(p: &BlockKeyProto) -> BlockKey {
        BlockKey {
            id: p.key_id,
            expiry_ms: p.expiry_date,
            secret: Bytes::from(p.key_bytes.clone().unwrap_or_default()),
        }
    }
}

/// What a NameNode with tokens off exports (and a DataNode sends before it has keys):
/// the required fields, empty.
pub fn tokens_off() -> ExportedBlockKeysProto {
    ExportedBlockKeysProto {
        is_block_token_enabled: false,
        key_update_interval: 0,
        token_lifetime: 0,
        current_key: BlockKeyProto {
            key_id: 0,
            expiry_date: 0,
            key_bytes: Some(Vec::new()),
        },
        all_keys: Vec::new(),
    }
}

/// `dfs.block.access.key.update.interval` and `dfs.block.access.token.lifetime`, in ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyTimes {
    pub update_interval_ms: u64,
    pub lifetime_ms: u64,
}

impl Default for KeyTimes {
    /// HDFS's defaults: 600 minutes each.
    fn default() -> Self {
        KeyTimes {
            update_interval_ms: 600 * 60_000,
            lifetime_ms: 600 * 60_000,
        }
    }
}

/// Who a token is for and what it allows.
#[derive(Clone, Copy, Debug)]
pub struct Grant<'a> {
    pub user: &'a str,
    pub pool: &'a str,
    pub modes: Modes,
}

/// The NameNode's keys. `fill` supplies random bytes (the caller's entropy source).
pub struct KeyManager {
    times: KeyTimes,
    current: BlockKey,
    next: BlockKey,
    retired: Vec<BlockKey>,
    next_id: u32,
    rolled_at_ms: u64,
    generation: u64,
}

impl KeyManager {
    /// Fresh keys. `first_id` should be random, so that a restarted NameNode's key ids do
    /// not collide with those DataNodes still hold from before (they would be replaced,
    /// and tokens signed before the restart refused; clients then fetch fresh ones).
    pub fn new(
        times: KeyTimes,
        now_ms: u64,
        first_id: u32,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> Self {
        let current = fresh(
            first_id,
            now_ms + 2 * times.update_interval_ms + times.lifetime_ms,
            fill,
        );
        let next = fresh(
            first_id.wrapping_add(1),
            now_ms + 3 * times.update_interval_ms + times.lifetime_ms,
            fill,
        );
        KeyManager {
            times,
            current,
            next,
            retired: Vec::new(),
            next_id: first_id.wrapping_add(2),
            rolled_at_ms: now_ms,
            generation: 1,
        }
    }

    pub fn times(&self) -> KeyTimes {
        self.times
    }

    /// Bumped at every roll: a DataNode that has seen an older generation needs the keys.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Rolls the keys once an update interval has passed. Returns whether it did.
    pub fn roll_if_due(&mut self, now_ms: u64, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        if now_ms < self.rolled_at_ms + self.times.update_interval_ms {
            return false;
        }
        let t = self.times;
        let mut old = std::mem::replace(
            &mut self.current,
            std::mem::replace(
                &mut self.next,
                fresh(
                    self.next_id,
                    now_ms + 3 * t.update_interval_ms + t.lifetime_ms,
                    fill,
                ),
            ),
        );
        // Tokens it signed live at most `lifetime` more; keep it a little longer than that.
        old.expiry_ms = now_ms + t.update_interval_ms + t.lifetime_ms;
        self.retired.push(old);
        self.retired.retain(|k| k.expiry_ms > now_ms);
        self.next_id = self.next_id.wrapping_add(1);
        self.rolled_at_ms = now_ms;
        self.generation += 1;
        true
    }

    /// The keys as DataNodes receive them.
    pub fn export(&self) -> ExportedBlockKeysProto {
        let all = [&self.current, &self.next]
            .into_iter()
            .chain(&self.retired)
            .map(BlockKey::to_proto)
            .collect();
        ExportedBlockKeysProto {
            is_block_token_enabled: true,
            key_update_interval: self.times.update_interval_ms,
            token_lifetime: self.times.lifetime_ms,
            current_key: self.current.to_proto(),
            all_keys: all,
        }
    }

    /// Tokens for the blocks of one reply, in `ids` order: one token for the whole reply
    /// unless its ids are too scattered (see [`crate::runs`]), each signed once.
    pub fn issue(&self, now_ms: u64, grant: Grant<'_>, ids: &[u64]) -> Vec<(Range<usize>, Token)> {
        let expiry = now_ms + self.times.lifetime_ms;
        groups(ids, MAX_RUNS)
            .into_iter()
            .map(|(range, runs)| {
                let id = BlockTokenId::new(expiry, self.current.id, grant.user, grant.modes, &runs);
                (
                    range,
                    Token::sign(id.encode(), grant.pool, &self.current.secret),
                )
            })
            .collect()
    }

    /// One token for one block (addBlock, pipeline recovery).
    pub fn issue_one(&self, now_ms: u64, grant: Grant<'_>, block_id: u64) -> Token {
        let mut v = self.issue(now_ms, grant, &[block_id]);
        v.pop().expect("one id makes one group").1
    }
}

fn fresh(id: u32, expiry_ms: u64, fill: &mut dyn FnMut(&mut [u8])) -> BlockKey {
    let mut secret = vec![0u8; SECRET_LEN];
    fill(&mut secret);
    BlockKey {
        id,
        expiry_ms,
        secret: secret.into(),
    }
}

/// A DataNode's keys, as the NameNode last shipped them, and the token checks.
///
/// Until the NameNode has said anything, tokens are taken to be on and every token is
/// refused (no key is known): a DataNode never serves unchecked by accident. The NameNode
/// decides whether tokens are on; the DataNode follows.
#[derive(Debug)]
pub struct KeyRing {
    enabled: bool,
    keys: HashMap<u32, BlockKey>,
    current: Option<u32>,
    lifetime_ms: u64,
}

impl Default for KeyRing {
    fn default() -> Self {
        KeyRing {
            enabled: true,
            keys: HashMap::new(),
            current: None,
            lifetime_ms: KeyTimes::default().lifetime_ms,
        }
    }
}

impl KeyRing {
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// Takes in the NameNode's keys. Keys are merged, not replaced, so tokens signed with
    /// a key the NameNode has since dropped stay good until that key expires.
    pub fn update(&mut self, exported: &ExportedBlockKeysProto, now_ms: u64) {
        self.enabled = exported.is_block_token_enabled;
        if !self.enabled {
            self.keys.clear();
            self.current = None;
            return;
        }
        for k in exported.all_keys.iter().chain([&exported.current_key]) {
            self.keys.insert(k.key_id, BlockKey::from_proto(k));
        }
        self.keys.retain(|_, k| k.expiry_ms > now_ms);
        self.current = Some(exported.current_key.key_id);
        self.lifetime_ms = exported.token_lifetime;
    }

    /// Checks a token for an operation on `block_id` of pool `pool` needing `want`.
    /// The signature is checked before anything the identifier claims is believed.
    pub fn check(
        &self,
        token: Option<&TokenProto>,
        now_ms: u64,
        pool: &str,
        block_id: u64,
        want: Modes,
    ) -> Result<(), TokenError> {
        if !self.enabled {
            return Ok(());
        }
        let token = token
            .filter(|t| !t.identifier.is_empty())
            .ok_or(TokenError::Missing)?;
        let id = match BlockTokenId::decode(&token.identifier) {
            Ok(id) => id,
            // Not Ferrite's: perhaps one a Hadoop tool signed with the exported keys.
            Err(e) => {
                return match HadoopTokenId::decode(&token.identifier) {
                    Ok(h) => self.check_hadoop(&h, token, now_ms, pool, block_id, want),
                    Err(_) => Err(e),
                }
            }
        };
        let key = self
            .keys
            .get(&id.key_id)
            .ok_or(TokenError::UnknownKey(id.key_id))?;
        // The pool is part of what was signed: a token for another pool fails here.
        if !signature_matches(&key.secret, &token.identifier, pool, &token.password) {
            return Err(TokenError::BadSignature(id.key_id));
        }
        if !id.covers(block_id) {
            return Err(TokenError::NotCovered(block_id));
        }
        granted(id.expiry_ms, id.modes, now_ms, want)
    }

    /// [`KeyRing::check`] for a token in Hadoop's format: signed over its identifier
    /// alone, which names its pool and its one block.
    fn check_hadoop(
        &self,
        id: &HadoopTokenId,
        token: &TokenProto,
        now_ms: u64,
        pool: &str,
        block_id: u64,
        want: Modes,
    ) -> Result<(), TokenError> {
        let key = self
            .keys
            .get(&id.key_id)
            .ok_or(TokenError::UnknownKey(id.key_id))?;
        if !hadoop_signature_matches(&key.secret, &token.identifier, &token.password) {
            return Err(TokenError::BadSignature(id.key_id));
        }
        if id.pool != pool || id.block_id != block_id {
            return Err(TokenError::NotCovered(block_id));
        }
        granted(id.expiry_ms, id.modes, now_ms, want)
    }

    /// A token this DataNode signs itself, for the copies it starts (replication, a
    /// pipeline's new node). Empty when tokens are off.
    pub fn issue(
        &self,
        now_ms: u64,
        grant: Grant<'_>,
        block_id: u64,
    ) -> Result<TokenProto, TokenError> {
        if !self.enabled {
            return Ok(TokenProto::default());
        }
        let key = self
            .current
            .and_then(|id| self.keys.get(&id))
            .ok_or(TokenError::NoKey)?;
        let id = BlockTokenId::new(
            now_ms + self.lifetime_ms,
            key.id,
            grant.user,
            grant.modes,
            &runs_of([block_id]),
        );
        Ok(Token::sign(id.encode(), grant.pool, &key.secret).to_proto())
    }
}

/// The checks every signed token passes last: not expired, and allowing `want`.
fn granted(expiry_ms: u64, modes: Modes, now_ms: u64, want: Modes) -> Result<(), TokenError> {
    if expiry_ms <= now_ms {
        return Err(TokenError::Expired { expiry_ms, now_ms });
    }
    if !modes.contains(want) {
        return Err(TokenError::WrongMode { have: modes, want });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const POOL: &str = "BP-1-127.0.0.1-1";
    const MIN: u64 = 60_000;

    fn counter() -> impl FnMut(&mut [u8]) {
        let mut n = 0u8;
        move |b: &mut [u8]| {
            n = n.wrapping_add(1);
            b.fill(n);
        }
    }

    fn read(user: &str) -> Grant<'_> {
        Grant {
            user,
            pool: POOL,
            modes: Modes::READ,
        }
    }

    fn setup(now: u64) -> (KeyManager, KeyRing) {
        let times = KeyTimes {
            update_interval_ms: 10 * MIN,
            lifetime_ms: 10 * MIN,
        };
        let mgr = KeyManager::new(times, now, 7, &mut counter());
        let mut ring = KeyRing::default();
        ring.update(&mgr.export(), now);
        (mgr, ring)
    }

    fn proto(t: &Token) -> TokenProto {
        t.to_proto()
    }

    #[test]
    fn one_token_covers_a_whole_reply() {
        let (mgr, ring) = setup(0);
        let ids: Vec<u64> = (1000..2000).collect();
        let tokens = mgr.issue(0, read("u"), &ids);
        assert_eq!(tokens.len(), 1);
        assert_eq!(tokens[0].0, 0..1000);
        let t = proto(&tokens[0].1);
        assert!(
            t.identifier.len() < 80,
            "identifier is {} bytes",
            t.identifier.len()
        );
        for id in ids {
            ring.check(Some(&t), 1, POOL, id, Modes::READ).unwrap();
        }
    }

    #[test]
    fn refusals() {
        let (mgr, ring) = setup(0);
        let t = proto(&mgr.issue_one(0, read("u"), 5));
        let ok = |t: &TokenProto| ring.check(Some(t), 1, POOL, 5, Modes::READ);
        ok(&t).unwrap();

        assert_eq!(
            ring.check(None, 1, POOL, 5, Modes::READ),
            Err(TokenError::Missing)
        );
        assert_eq!(ok(&TokenProto::default()), Err(TokenError::Missing));

        let mut forged = t.clone();
        let mut pw = forged.password.to_vec();
        pw[0] ^= 1;
        forged.password = pw.into();
        assert_eq!(ok(&forged), Err(TokenError::BadSignature(7)));

        // Claims more than was signed: the signature no longer matches.
        let mut id = BlockTokenId::decode(&t.identifier).unwrap();
        id.runs = vec![0, 1, 1000];
        let widened = TokenProto {
            identifier: id.encode(),
            ..t.clone()
        };
        assert_eq!(ok(&widened), Err(TokenError::BadSignature(7)));

        let mut id = BlockTokenId::decode(&t.identifier).unwrap();
        id.key_id = 999;
        let unknown = TokenProto {
            identifier: id.encode(),
            ..t.clone()
        };
        assert_eq!(ok(&unknown), Err(TokenError::UnknownKey(999)));

        let garbage = TokenProto {
            identifier: vec![0xff; 4].into(),
            ..t.clone()
        };
        assert!(matches!(ok(&garbage), Err(TokenError::Malformed(_))));

        assert!(matches!(
            ring.check(Some(&t), 10 * MIN, POOL, 5, Modes::READ),
            Err(TokenError::Expired { .. })
        ));
        assert_eq!(
            ring.check(Some(&t), 1, POOL, 6, Modes::READ),
            Err(TokenError::NotCovered(6))
        );
        assert!(matches!(
            ring.check(Some(&t), 1, POOL, 5, Modes::WRITE),
            Err(TokenError::WrongMode { .. })
        ));
        assert!(matches!(
            ring.check(Some(&t), 1, "BP-other", 5, Modes::READ),
            Err(TokenError::BadSignature(_))
        ));
    }

    #[test]
    fn a_ring_refuses_everything_until_told() {
        let (mgr, _) = setup(0);
        let t = proto(&mgr.issue_one(0, read("u"), 5));
        let ring = KeyRing::default();
        assert_eq!(
            ring.check(Some(&t), 1, POOL, 5, Modes::READ),
            Err(TokenError::UnknownKey(7))
        );
    }

    #[test]
    fn tokens_off_checks_nothing_and_issues_empty_tokens() {
        let mut ring = KeyRing::default();
        ring.update(&tokens_off(), 0);
        assert!(ring.check(None, 0, POOL, 5, Modes::WRITE).is_ok());
        let t = ring.issue(0, read("u"), 5).unwrap();
        assert!(t.identifier.is_empty());
    }

    #[test]
    fn rolling_keeps_old_tokens_good_until_they_expire() {
        let (mut mgr, mut ring) = setup(0);
        let old = proto(&mgr.issue_one(0, read("u"), 5));
        assert!(!mgr.roll_if_due(5 * MIN, &mut counter()));
        let g = mgr.generation();
        assert!(mgr.roll_if_due(10 * MIN, &mut counter()));
        assert_eq!(mgr.generation(), g + 1);
        ring.update(&mgr.export(), 10 * MIN);
        let new = proto(&mgr.issue_one(10 * MIN, read("u"), 5));
        assert_ne!(
            BlockTokenId::decode(&old.identifier).unwrap().key_id,
            BlockTokenId::decode(&new.identifier).unwrap().key_id
        );
        // The old key still vouches for its tokens until they expire.
        ring.check(Some(&old), 10 * MIN - 1, POOL, 5, Modes::READ)
            .unwrap();
        assert!(matches!(
            ring.check(Some(&old), 10 * MIN, POOL, 5, Modes::READ),
            Err(TokenError::Expired { .. })
        ));
        ring.check(Some(&new), 11 * MIN, POOL, 5, Modes::READ)
            .unwrap();
        // Many rolls later the first key is gone from the manager and the ring.
        for i in 2..6 {
            mgr.roll_if_due(i * 10 * MIN, &mut counter());
        }
        ring.update(&mgr.export(), 50 * MIN);
        assert!(mgr.export().all_keys.len() <= 5);
        assert_eq!(
            ring.check(Some(&old), 50 * MIN, POOL, 5, Modes::READ),
            Err(TokenError::UnknownKey(7))
        );
    }

    #[test]
    fn the_next_key_is_known_before_it_signs() {
        let (mut mgr, ring) = setup(0);
        mgr.roll_if_due(10 * MIN, &mut counter());
        // The ring has not heard of the roll, yet knows the key that now signs.
        let t = proto(&mgr.issue_one(10 * MIN, read("u"), 5));
        ring.check(Some(&t), 10 * MIN, POOL, 5, Modes::READ)
            .unwrap();
    }

    #[test]
    fn a_datanode_signs_its_own_copies() {
        let (_, ring) = setup(0);
        let grant = Grant {
            user: "dn",
            pool: POOL,
            modes: Modes::WRITE,
        };
        let t = ring.issue(0, grant, 9).unwrap();
        ring.check(Some(&t), 1, POOL, 9, Modes::WRITE).unwrap();
        assert!(KeyRing::default().issue(0, grant, 9).is_err());
    }
}
