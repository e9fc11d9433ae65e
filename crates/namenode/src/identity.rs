//! The cluster identity a NameNode keeps in its `VERSION` file: cluster id, namespace id,
//! block pool id and creation time. Created on first start and read back afterwards, so
//! DataNodes and clients see the same ids across restarts. Written atomically (temp file,
//! fsync, rename, fsync the directory).

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use crate::atomic_file::write_atomic;

/// Hadoop 3.4's NameNode layout version (a negative Java int).
pub const LAYOUT_VERSION: i32 = -66;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub cluster_id: String,
    pub namespace_id: u32,
    pub block_pool_id: String,
    pub ctime_ms: i64,
}

/// Why a VERSION file is refused.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    #[error("VERSION lacks {0}")]
    Missing(&'static str),
    #[error("{key}: {source}")]
    NotANumber {
        key: &'static str,
        #[source]
        source: std::num::ParseIntError,
    },
}

impl Identity {
    /// A fresh identity. `seed` supplies the randomness (kept outside so tests are exact).
    pub fn generate(seed: u64, now_ms: i64) -> Self {
        let namespace_id = (seed as u32).max(1);
        Identity {
            cluster_id: format!("CID-{:016x}", seed.rotate_left(17) ^ now_ms as u64),
            namespace_id,
            block_pool_id: format!("BP-{namespace_id}-127.0.0.1-{now_ms}"),
            ctime_ms: now_ms,
        }
    }

    pub fn render(&self) -> String {
        format!(
            "#Ferrite NameNode storage\nnamespaceID={}\nclusterID={}\ncTime={}\nstorageType=NAME_NODE\nblockpoolID={}\nlayoutVersion={}\n",
            self.namespace_id, self.cluster_id, self.ctime_ms, self.block_pool_id, LAYOUT_VERSION
        )
    }

    pub fn parse(text: &str) -> Result<Self, VersionError> {
        let kv: HashMap<&str, &str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim(), v.trim()))
            .collect();
        let get = |k: &'static str| kv.get(k).copied().ok_or(VersionError::Missing(k));
        fn number<T: std::str::FromStr<Err = std::num::ParseIntError>>(
            key: &'static str,
            text: &str,
        ) -> Result<T, VersionError> {
            text.parse()
                .map_err(|source| VersionError::NotANumber { key, source })
        }
        Ok(Identity {
            cluster_id: get("clusterID")?.to_string(),
            namespace_id: number("namespaceID", get("namespaceID")?)?,
            block_pool_id: get("blockpoolID")?.to_string(),
            ctime_ms: number("cTime", get("cTime")?)?,
        })
    }

    /// Reads `dir/VERSION`, or creates it with a new identity.
    pub fn load_or_create(dir: &Path, now_ms: i64) -> std::io::Result<Self> {
        let path = dir.join("VERSION");
        match fs::read_to_string(&path) {
            Ok(text) => Identity::parse(&text).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{}: {e}", path.display()),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let seed = random_seed();
                let id = Identity::generate(seed, now_ms);
                write_atomic(dir, "VERSION", id.render().as_bytes())?;
                Ok(id)
            }
            Err(e) => Err(e),
        }
    }
}

fn random_seed() -> u64 {
    // std's RandomState is seeded from the OS; enough for an id that only has to be unique.
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_persistence() {
        let id = Identity::generate(42, 1_000);
        assert_eq!(Identity::parse(&id.render()).unwrap(), id);
        let dir = tempfile::tempdir().unwrap();
        let a = Identity::load_or_create(dir.path(), 5).unwrap();
        let b = Identity::load_or_create(dir.path(), 9).unwrap();
        assert_eq!(a, b, "the second start reads the first start's identity");
        assert!(Identity::parse("clusterID=x\n").is_err());
    }
}
