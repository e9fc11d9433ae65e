//! Cache pools and directives through the service: changes journaled as any mutation,
//! listings under the read lock. The rules are `namespace/cache.rs`'s.

use super::{Admitted, NameNodeService, Operation};
use crate::clock::now_ms;
use crate::error::FsError;
use crate::namespace::cache::{Directive, DirectiveChange, Pool, PoolChange};

/// Entries per listing answer (HDFS's `dfs.namenode.list.cache.pools.num.responses` and
/// `…directives.num.responses`).
pub(super) const LIST_LIMIT: usize = 100;

impl NameNodeService {
    pub async fn add_cache_pool(&self, who: &Admitted, c: PoolChange) -> Result<(), FsError> {
        let user = who.user_for(Operation::AddCachePool);
        let caller = self.caller(user);
        self.commit(|ns| Ok(((), vec![ns.cache.plan_add_pool(&caller, c)?])))
            .await
    }

    pub async fn modify_cache_pool(&self, who: &Admitted, c: PoolChange) -> Result<(), FsError> {
        who.check(Operation::ModifyCachePool);
        self.commit(|ns| Ok(((), vec![ns.cache.plan_modify_pool(c)?])))
            .await
    }

    pub async fn remove_cache_pool(&self, who: &Admitted, name: &str) -> Result<(), FsError> {
        who.check(Operation::RemoveCachePool);
        self.commit(|ns| Ok(((), vec![ns.cache.plan_remove_pool(name)?])))
            .await
    }

    /// Pools after `prev` by name, each with whether the caller may read its details.
    pub fn list_cache_pools(&self, who: &Admitted, prev: &str) -> (Vec<(Pool, bool)>, bool) {
        let user = who.user_for(Operation::ListCachePools);
        let caller = self.caller(user);
        let ns = self.ns.read();
        let mut after = ns
            .cache
            .pools
            .range::<str, _>((std::ops::Bound::Excluded(prev), std::ops::Bound::Unbounded))
            .map(|(_, p)| (p.clone(), p.visible_to(&caller)));
        let page: Vec<_> = after.by_ref().take(LIST_LIMIT).collect();
        (page, after.next().is_some())
    }

    pub async fn add_cache_directive(
        &self,
        who: &Admitted,
        c: DirectiveChange,
    ) -> Result<u64, FsError> {
        let user = who.user_for(Operation::AddCacheDirective);
        let caller = self.caller(user);
        let now = now_ms();
        self.commit(|ns| {
            let (id, op) = ns.cache.plan_add_directive(&caller, c, now)?;
            Ok((id, vec![op]))
        })
        .await
    }

    pub async fn modify_cache_directive(
        &self,
        who: &Admitted,
        c: DirectiveChange,
    ) -> Result<(), FsError> {
        let user = who.user_for(Operation::ModifyCacheDirective);
        let caller = self.caller(user);
        let now = now_ms();
        self.commit(|ns| Ok(((), vec![ns.cache.plan_modify_directive(&caller, c, now)?])))
            .await
    }

    pub async fn remove_cache_directive(&self, who: &Admitted, id: u64) -> Result<(), FsError> {
        let user = who.user_for(Operation::RemoveCacheDirective);
        let caller = self.caller(user);
        self.commit(|ns| Ok(((), vec![ns.cache.plan_remove_directive(&caller, id)?])))
            .await
    }

    pub fn list_cache_directives(
        &self,
        who: &Admitted,
        prev_id: u64,
        pool: Option<&str>,
        path: Option<&str>,
    ) -> Result<(Vec<Directive>, bool), FsError> {
        let user = who.user_for(Operation::ListCacheDirectives);
        let caller = self.caller(user);
        let ns = self.ns.read();
        if let Some(p) = pool {
            if !ns.cache.pools.contains_key(p) {
                return Err(FsError::InvalidRequest(format!(
                    "Cache pool {p} does not exist."
                )));
            }
        }
        let mut it = ns.cache.list_directives(&caller, prev_id, pool, path);
        let page: Vec<Directive> = it.by_ref().take(LIST_LIMIT).cloned().collect();
        Ok((page, it.next().is_some()))
    }
}
