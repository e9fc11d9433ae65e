//! The NameNode's block-token service: owns the rolling keys, signs one token per reply,
//! and hands keys to DataNodes. Keys are not persisted: a restarted NameNode starts a new
//! key series at a random id, and DataNodes merge the new keys with those they hold.

use std::ops::Range;

use ferrite_blocktoken::keys::{self, Grant};
use ferrite_blocktoken::{KeyManager, KeyTimes, Modes, Token};
use ferrite_proto::hdfs::ExportedBlockKeysProto;
use parking_lot::RwLock;
use tracing::info;

use crate::clock::now_ms;

pub(crate) struct BlockTokens {
    keys: Option<RwLock<KeyManager>>,
}

fn random(buf: &mut [u8]) {
    // Without entropy there can be no secret keys: nothing sensible to carry on with.
    getrandom::fill(buf).expect("the OS random source failed");
}

fn random_u32() -> u32 {
    let mut b = [0u8; 4];
    random(&mut b);
    u32::from_le_bytes(b)
}

impl BlockTokens {
    pub(crate) fn new(enabled: bool, times: KeyTimes) -> Self {
        let keys = enabled.then(|| {
            let now = now_ms().max(0) as u64;
            RwLock::new(KeyManager::new(times, now, random_u32(), &mut random))
        });
        BlockTokens { keys }
    }

    /// Rolls the keys when due (called from a periodic task).
    pub(crate) fn roll_if_due(&self) {
        if let Some(k) = &self.keys {
            let now = now_ms().max(0) as u64;
            if k.write().roll_if_due(now, &mut random) {
                info!("block keys rolled");
            }
        }
    }

    /// The key generation DataNodes should have seen (0 when tokens are off).
    pub(crate) fn generation(&self) -> u64 {
        self.keys.as_ref().map_or(0, |k| k.read().generation())
    }

    /// The keys as a DataNode receives them at registration and in key updates.
    pub(crate) fn export(&self) -> ExportedBlockKeysProto {
        match &self.keys {
            Some(k) => k.read().export(),
            None => keys::tokens_off(),
        }
    }

    /// The tokens of a reply over `ids`: consecutive index ranges, each sharing one signed
    /// token (a single range unless the ids are scattered). One range without a token when
    /// tokens are off (HDFS then sends an empty one).
    pub(crate) fn for_reply(
        &self,
        user: &str,
        pool: &str,
        modes: Modes,
        ids: &[u64],
    ) -> Vec<(Range<usize>, Option<Token>)> {
        let Some(k) = &self.keys else {
            return vec![(0..ids.len(), None)];
        };
        let grant = Grant { user, pool, modes };
        let groups = k.read().issue(now_ms().max(0) as u64, grant, ids);
        groups
            .into_iter()
            .map(|(range, token)| (range, Some(token)))
            .collect()
    }

    /// The token for one block (addBlock, pipeline recovery); `None` when tokens are off.
    pub(crate) fn for_block(&self, user: &str, pool: &str, modes: Modes, id: u64) -> Option<Token> {
        let k = self.keys.as_ref()?;
        let grant = Grant { user, pool, modes };
        Some(k.read().issue_one(now_ms().max(0) as u64, grant, id))
    }
}
