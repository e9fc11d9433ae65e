//! Centralized cache management: pools and directives, protobuf in and out. Nothing is
//! cached (see `namespace/cache.rs`), so every figure of bytes or files cached is 0.

use ferrite_ipc::{Router, CLIENT_PROTOCOL};
use ferrite_proto::hdfs::*;

use super::{Nn, Register, Res};
use crate::namespace::cache::{Directive, DirectiveChange, Pool, PoolChange};
use crate::service::NameNodeService;
use crate::service::{Admitted, Operation};

pub fn register(r: &mut Router<NameNodeService>) {
    let p = CLIENT_PROTOCOL;
    r.op(p, Operation::AddCachePool, add_pool);
    r.op(p, Operation::ModifyCachePool, modify_pool);
    r.op(p, Operation::RemoveCachePool, remove_pool);
    r.op(p, Operation::ListCachePools, list_pools);
    r.op(p, Operation::AddCacheDirective, add_directive);
    r.op(p, Operation::ModifyCacheDirective, modify_directive);
    r.op(p, Operation::RemoveCacheDirective, remove_directive);
    r.op(p, Operation::ListCacheDirectives, list_directives);
}

fn pool_change(i: CachePoolInfoProto) -> PoolChange {
    PoolChange {
        name: i.pool_name.unwrap_or_default(),
        owner: i.owner_name,
        group: i.group_name,
        mode: i.mode.map(|m| (m & 0o7777) as u16),
        limit: i.limit,
        max_relative_expiry_ms: i.max_relative_expiry,
        default_replication: i
            .default_replication
            .map(|r| r.min(u32::from(u16::MAX)) as u16),
    }
}

fn pool_info(p: &Pool, visible: bool) -> CachePoolInfoProto {
    if !visible {
        return CachePoolInfoProto {
            pool_name: Some(p.name.clone()),
            ..Default::default()
        };
    }
    CachePoolInfoProto {
        pool_name: Some(p.name.clone()),
        owner_name: Some(p.owner.clone()),
        group_name: Some(p.group.clone()),
        mode: Some(i32::from(p.mode)),
        limit: Some(p.limit),
        max_relative_expiry: Some(p.max_relative_expiry_ms),
        default_replication: Some(u32::from(p.default_replication)),
    }
}

fn directive_change(i: CacheDirectiveInfoProto) -> DirectiveChange {
    DirectiveChange {
        id: i.id.map(|id| id.max(0) as u64),
        path: i.path,
        replication: i.replication.map(|r| r.min(u32::from(u16::MAX)) as u16),
        pool: i.pool,
        expiry: i.expiration.map(|e| (e.millis, e.is_relative)),
    }
}

fn directive_info(d: &Directive) -> CacheDirectiveInfoProto {
    CacheDirectiveInfoProto {
        id: Some(d.id as i64),
        path: Some(d.path.clone()),
        replication: Some(u32::from(d.replication)),
        pool: Some(d.pool.clone()),
        expiration: Some(CacheDirectiveInfoExpirationProto {
            millis: d.expiry_ms,
            is_relative: false,
        }),
    }
}

pub async fn add_pool(
    nn: Nn,
    who: Admitted,
    req: AddCachePoolRequestProto,
) -> Res<AddCachePoolResponseProto> {
    nn.add_cache_pool(&who, pool_change(req.info)).await?;
    Ok(AddCachePoolResponseProto {})
}

pub async fn modify_pool(
    nn: Nn,
    who: Admitted,
    req: ModifyCachePoolRequestProto,
) -> Res<ModifyCachePoolResponseProto> {
    nn.modify_cache_pool(&who, pool_change(req.info)).await?;
    Ok(ModifyCachePoolResponseProto {})
}

pub async fn remove_pool(
    nn: Nn,
    who: Admitted,
    req: RemoveCachePoolRequestProto,
) -> Res<RemoveCachePoolResponseProto> {
    nn.remove_cache_pool(&who, &req.pool_name).await?;
    Ok(RemoveCachePoolResponseProto {})
}

pub async fn list_pools(
    nn: Nn,
    who: Admitted,
    req: ListCachePoolsRequestProto,
) -> Res<ListCachePoolsResponseProto> {
    let (pools, has_more) = nn.list_cache_pools(&who, &req.prev_pool_name);
    Ok(ListCachePoolsResponseProto {
        entries: pools
            .iter()
            .map(|(p, visible)| CachePoolEntryProto {
                info: pool_info(p, *visible),
                stats: CachePoolStatsProto::default(),
            })
            .collect(),
        has_more,
    })
}

pub async fn add_directive(
    nn: Nn,
    who: Admitted,
    req: AddCacheDirectiveRequestProto,
) -> Res<AddCacheDirectiveResponseProto> {
    let id = nn
        .add_cache_directive(&who, directive_change(req.info))
        .await?;
    Ok(AddCacheDirectiveResponseProto { id: id as i64 })
}

pub async fn modify_directive(
    nn: Nn,
    who: Admitted,
    req: ModifyCacheDirectiveRequestProto,
) -> Res<ModifyCacheDirectiveResponseProto> {
    nn.modify_cache_directive(&who, directive_change(req.info))
        .await?;
    Ok(ModifyCacheDirectiveResponseProto {})
}

pub async fn remove_directive(
    nn: Nn,
    who: Admitted,
    req: RemoveCacheDirectiveRequestProto,
) -> Res<RemoveCacheDirectiveResponseProto> {
    nn.remove_cache_directive(&who, req.id.max(0) as u64)
        .await?;
    Ok(RemoveCacheDirectiveResponseProto {})
}

pub async fn list_directives(
    nn: Nn,
    who: Admitted,
    req: ListCacheDirectivesRequestProto,
) -> Res<ListCacheDirectivesResponseProto> {
    let f = req.filter;
    let (found, has_more) = nn.list_cache_directives(
        &who,
        req.prev_id.max(0) as u64,
        f.pool.as_deref(),
        f.path.as_deref(),
    )?;
    let now = crate::clock::now_ms();
    Ok(ListCacheDirectivesResponseProto {
        elements: found
            .iter()
            .map(|d| CacheDirectiveEntryProto {
                info: directive_info(d),
                stats: CacheDirectiveStatsProto {
                    has_expired: d.expiry_ms < now,
                    ..Default::default()
                },
            })
            .collect(),
        has_more,
    })
}
