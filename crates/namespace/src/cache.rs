//! Centralized cache management's bookkeeping, as HDFS's `CacheManager` keeps it: pools
//! (owner, group, mode, byte limit, longest expiry, default replication) and the
//! directives in them (a path to keep cached, at a replication, until an expiry). Ferrite's
//! DataNodes cache nothing, which is HDFS with `dfs.namenode.caching.enabled=false`: pools
//! and directives are kept, journaled and listed exactly, and every cached figure is 0.
//! Pure: records in, state out.

use std::collections::BTreeMap;

use super::perm::{Caller, READ, WRITE};
use super::Op;
use crate::error::FsError;

/// HDFS's "no limit" for a pool's bytes (`CachePoolInfo.LIMIT_UNLIMITED`).
pub const LIMIT_UNLIMITED: i64 = i64::MAX;
/// HDFS's longest relative expiry (`Expiration.MAX_RELATIVE_EXPIRY_MS`).
pub const MAX_RELATIVE_EXPIRY_MS: i64 = i64::MAX / 4;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    pub name: String,
    pub owner: String,
    pub group: String,
    pub mode: u16,
    pub limit: i64,
    pub max_relative_expiry_ms: i64,
    pub default_replication: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    pub id: u64,
    pub path: String,
    pub replication: u16,
    pub pool: String,
    /// Absolute, in ms since the epoch.
    pub expiry_ms: i64,
}

/// What a request gives of a pool (unset fields keep their value, or take the default).
#[derive(Clone, Debug, Default)]
pub struct PoolChange {
    pub name: String,
    pub owner: Option<String>,
    pub group: Option<String>,
    pub mode: Option<u16>,
    pub limit: Option<i64>,
    pub max_relative_expiry_ms: Option<i64>,
    pub default_replication: Option<u16>,
}

/// What a request gives of a directive.
#[derive(Clone, Debug, Default)]
pub struct DirectiveChange {
    pub id: Option<u64>,
    pub path: Option<String>,
    pub replication: Option<u16>,
    pub pool: Option<String>,
    /// (millis, relative)
    pub expiry: Option<(i64, bool)>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheState {
    pub pools: BTreeMap<String, Pool>,
    pub directives: BTreeMap<u64, Directive>,
    pub next_id: u64,
}

fn invalid(m: String) -> FsError {
    FsError::InvalidRequest(m)
}

impl Pool {
    fn allows(&self, caller: &Caller, access: u16) -> bool {
        if caller.bypass() {
            return true;
        }
        let shift = if caller.user == self.owner {
            6
        } else if caller.groups.contains(&self.group) {
            3
        } else {
            0
        };
        (self.mode >> shift) & access == access
    }

    fn check(&self, caller: &Caller, access: u16) -> Result<(), FsError> {
        if self.allows(caller, access) {
            return Ok(());
        }
        let word = if access == WRITE { "WRITE" } else { "READ" };
        Err(FsError::AccessDenied(format!(
            "Permission denied while accessing pool {}: user {} does not have {word} permissions.",
            self.name, caller.user
        )))
    }

    /// What a caller without READ on the pool sees of it: its name alone.
    pub fn visible_to(&self, caller: &Caller) -> bool {
        self.allows(caller, READ)
    }
}

impl CacheState {
    fn pool(&self, name: &str) -> Result<&Pool, FsError> {
        self.pools
            .get(name)
            .ok_or_else(|| invalid(format!("Cache pool {name} does not exist.")))
    }

    fn directive(&self, id: u64) -> Result<&Directive, FsError> {
        self.directives
            .get(&id)
            .ok_or_else(|| invalid(format!("No directive with ID {id} found.")))
    }

    pub fn plan_add_pool(&self, caller: &Caller, c: PoolChange) -> Result<Op, FsError> {
        if c.name.is_empty() {
            return Err(invalid("invalid empty cache pool name".into()));
        }
        if self.pools.contains_key(&c.name) {
            return Err(invalid(format!("Cache pool {} already exists.", c.name)));
        }
        let group = caller
            .groups
            .first()
            .cloned()
            .unwrap_or_else(|| caller.user.clone());
        Ok(pool_record(&Pool {
            name: c.name,
            owner: c.owner.unwrap_or_else(|| caller.user.clone()),
            group: c.group.unwrap_or(group),
            mode: c.mode.unwrap_or(0o755),
            limit: c.limit.unwrap_or(LIMIT_UNLIMITED),
            max_relative_expiry_ms: c.max_relative_expiry_ms.unwrap_or(MAX_RELATIVE_EXPIRY_MS),
            default_replication: c.default_replication.unwrap_or(1),
        }))
    }

    pub fn plan_modify_pool(&self, c: PoolChange) -> Result<Op, FsError> {
        if c.name.is_empty() {
            return Err(invalid("invalid empty cache pool name".into()));
        }
        let p = self.pool(&c.name)?.clone();
        Ok(pool_record(&Pool {
            owner: c.owner.unwrap_or(p.owner),
            group: c.group.unwrap_or(p.group),
            mode: c.mode.unwrap_or(p.mode),
            limit: c.limit.unwrap_or(p.limit),
            max_relative_expiry_ms: c.max_relative_expiry_ms.unwrap_or(p.max_relative_expiry_ms),
            default_replication: c.default_replication.unwrap_or(p.default_replication),
            ..p
        }))
    }

    pub fn plan_remove_pool(&self, name: &str) -> Result<Op, FsError> {
        if name.is_empty() {
            return Err(invalid("invalid empty cache pool name".into()));
        }
        if !self.pools.contains_key(name) {
            return Err(invalid(format!(
                "Cannot remove non-existent cache pool {name}"
            )));
        }
        Ok(Op::RemoveCachePool { name: name.into() })
    }

    fn expiry(&self, pool: &Pool, e: Option<(i64, bool)>, now: i64) -> Result<i64, FsError> {
        let (ms, relative) = e.unwrap_or((pool.max_relative_expiry_ms, true));
        let relative_ms = if relative { ms } else { ms - now };
        if relative && ms < 0 {
            return Err(invalid(format!("Cannot set a negative expiration: {ms}")));
        }
        if relative_ms > pool.max_relative_expiry_ms {
            return Err(invalid(format!(
                "Expiration {relative_ms} exceeds the max relative expiration set by pool {} of {} ms.",
                pool.name, pool.max_relative_expiry_ms
            )));
        }
        Ok(if relative { now.saturating_add(ms) } else { ms })
    }

    pub fn plan_add_directive(
        &self,
        caller: &Caller,
        c: DirectiveChange,
        now: i64,
    ) -> Result<(u64, Op), FsError> {
        let path = c.path.ok_or_else(|| invalid("No path specified.".into()))?;
        if !path.starts_with('/') {
            return Err(invalid(format!("Invalid path '{path}'.")));
        }
        let pool_name = c.pool.ok_or_else(|| invalid("No pool specified.".into()))?;
        let pool = self.pool(&pool_name)?;
        pool.check(caller, WRITE)?;
        let replication = c.replication.unwrap_or(pool.default_replication);
        if replication == 0 {
            return Err(invalid("Invalid replication factor 0 <= 0".into()));
        }
        let expiry_ms = self.expiry(pool, c.expiry, now)?;
        let id = self.next_id.max(1);
        Ok((
            id,
            directive_record(&Directive {
                id,
                path,
                replication,
                pool: pool_name,
                expiry_ms,
            }),
        ))
    }

    pub fn plan_modify_directive(
        &self,
        caller: &Caller,
        c: DirectiveChange,
        now: i64,
    ) -> Result<Op, FsError> {
        let id = c.id.ok_or_else(|| invalid("Must supply an ID.".into()))?;
        let d = self.directive(id)?.clone();
        self.pool(&d.pool)?.check(caller, WRITE)?;
        let pool_name = c.pool.unwrap_or_else(|| d.pool.clone());
        let pool = self.pool(&pool_name)?;
        if pool_name != d.pool {
            pool.check(caller, WRITE)?;
        }
        let replication = c.replication.unwrap_or(d.replication);
        if replication == 0 {
            return Err(invalid("Invalid replication factor 0 <= 0".into()));
        }
        let expiry_ms = match c.expiry {
            Some(e) => self.expiry(pool, Some(e), now)?,
            None => d.expiry_ms,
        };
        Ok(directive_record(&Directive {
            id,
            path: c.path.unwrap_or(d.path),
            replication,
            pool: pool_name,
            expiry_ms,
        }))
    }

    pub fn plan_remove_directive(&self, caller: &Caller, id: u64) -> Result<Op, FsError> {
        let d = self.directive(id)?;
        self.pool(&d.pool)?.check(caller, WRITE)?;
        Ok(Op::RemoveCacheDirective { id })
    }

    /// Directives after `prev_id` the caller may read (their pool's READ), matching the
    /// filter's pool and path.
    pub fn list_directives<'a>(
        &'a self,
        caller: &'a Caller,
        prev_id: u64,
        pool: Option<&'a str>,
        path: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Directive> + 'a {
        self.directives
            .range(prev_id.saturating_add(1)..)
            .map(|(_, d)| d)
            .filter(move |d| pool.is_none_or(|p| p == d.pool))
            .filter(move |d| path.is_none_or(|p| p == d.path))
            .filter(move |d| {
                self.pools
                    .get(&d.pool)
                    .is_some_and(|p| p.visible_to(caller))
            })
    }

    pub fn apply(&mut self, op: &Op) -> bool {
        match op {
            Op::SetCachePool {
                name,
                owner,
                group,
                mode,
                limit,
                max_relative_expiry_ms,
                default_replication,
            } => {
                self.pools.insert(
                    name.clone(),
                    Pool {
                        name: name.clone(),
                        owner: owner.clone(),
                        group: group.clone(),
                        mode: *mode,
                        limit: *limit,
                        max_relative_expiry_ms: *max_relative_expiry_ms,
                        default_replication: *default_replication,
                    },
                );
            }
            Op::RemoveCachePool { name } => {
                self.pools.remove(name);
                self.directives.retain(|_, d| d.pool != *name);
            }
            Op::SetCacheDirective {
                id,
                path,
                replication,
                pool,
                expiry_ms,
            } => {
                self.next_id = self.next_id.max(id + 1);
                self.directives.insert(
                    *id,
                    Directive {
                        id: *id,
                        path: path.clone(),
                        replication: *replication,
                        pool: pool.clone(),
                        expiry_ms: *expiry_ms,
                    },
                );
            }
            Op::RemoveCacheDirective { id } => {
                self.directives.remove(id);
            }
            _ => return false,
        }
        true
    }
}

impl CacheState {
    /// Each pool, then each directive, as the record that sets it (what an image keeps).
    pub fn records(&self) -> impl Iterator<Item = Op> + '_ {
        self.pools
            .values()
            .map(pool_record)
            .chain(self.directives.values().map(directive_record))
    }
}

fn pool_record(p: &Pool) -> Op {
    Op::SetCachePool {
        name: p.name.clone(),
        owner: p.owner.clone(),
        group: p.group.clone(),
        mode: p.mode,
        limit: p.limit,
        max_relative_expiry_ms: p.max_relative_expiry_ms,
        default_replication: p.default_replication,
    }
}

fn directive_record(d: &Directive) -> Op {
    Op::SetCacheDirective {
        id: d.id,
        path: d.path.clone(),
        replication: d.replication,
        pool: d.pool.clone(),
        expiry_ms: d.expiry_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Caller {
        Caller {
            user: "alice".into(),
            groups: vec!["eng".to_string()].into(),
            superuser: false,
            checks_enabled: true,
        }
    }

    #[test]
    fn pools_and_directives_follow_hdfs_rules() {
        let su = Caller::superuser("hdfs");
        let mut c = CacheState::default();
        let add = |name: &str| PoolChange {
            name: name.into(),
            ..Default::default()
        };
        let op = c.plan_add_pool(&su, add("p")).unwrap();
        assert!(c.apply(&op));
        assert!(c
            .plan_add_pool(&su, add("p"))
            .unwrap_err()
            .to_string()
            .contains("already exists"));
        let d = DirectiveChange {
            path: Some("/f".into()),
            pool: Some("p".into()),
            ..Default::default()
        };
        // 0755, owned by the superuser: alice may not write to it.
        let e = c.plan_add_directive(&alice(), d.clone(), 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Permission denied while accessing pool p: user alice does not have WRITE permissions."
        );
        let (id, op) = c.plan_add_directive(&su, d, 100).unwrap();
        assert_eq!(id, 1);
        c.apply(&op);
        let dir = &c.directives[&1];
        assert_eq!(
            (dir.replication, dir.expiry_ms),
            (1, 100 + MAX_RELATIVE_EXPIRY_MS)
        );
        assert_eq!(
            c.list_directives(&alice(), 0, None, None).count(),
            1,
            "alice may read"
        );
        c.apply(&c.plan_remove_pool("p").unwrap());
        assert!(c.directives.is_empty(), "a pool's directives go with it");
        assert!(c
            .plan_remove_pool("p")
            .unwrap_err()
            .to_string()
            .contains("non-existent cache pool p"));
    }
}
