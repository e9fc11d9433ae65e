//! setStoragePolicy, unsetStoragePolicy, getStoragePolicy and getStoragePolicies.

use ferrite_ipc::{CallCtx, Router, CLIENT_PROTOCOL};
use ferrite_proto::hdfs::{
    BlockStoragePolicyProto, GetStoragePoliciesRequestProto, GetStoragePoliciesResponseProto,
    GetStoragePolicyRequestProto, GetStoragePolicyResponseProto, SatisfyStoragePolicyRequestProto,
    SatisfyStoragePolicyResponseProto, SetStoragePolicyRequestProto, SetStoragePolicyResponseProto,
    StorageTypesProto, UnsetStoragePolicyRequestProto, UnsetStoragePolicyResponseProto,
};

use super::{kind, Nn, Res};
use crate::namespace::storage_policy::{Policy, StorageType, POLICIES};
use crate::service::NameNodeService;

pub fn register(r: &mut Router<NameNodeService>) {
    let p = CLIENT_PROTOCOL;
    r.method(
        p,
        "setStoragePolicy",
        kind("setStoragePolicy"),
        set_storage_policy,
    )
    .method(
        p,
        "unsetStoragePolicy",
        kind("unsetStoragePolicy"),
        unset_storage_policy,
    )
    .method(
        p,
        "getStoragePolicy",
        kind("getStoragePolicy"),
        get_storage_policy,
    )
    .method(
        p,
        "getStoragePolicies",
        kind("getStoragePolicies"),
        get_storage_policies,
    )
    .method(
        p,
        "satisfyStoragePolicy",
        kind("satisfyStoragePolicy"),
        satisfy_storage_policy,
    );
}

fn types(t: &[StorageType]) -> StorageTypesProto {
    StorageTypesProto {
        storage_types: t.iter().map(|&t| t as i32).collect(),
    }
}

pub fn policy_proto(p: &Policy) -> BlockStoragePolicyProto {
    BlockStoragePolicyProto {
        policy_id: u32::from(p.id),
        name: p.name.into(),
        creation_policy: types(p.types),
        creation_fallback_policy: Some(types(p.creation_fallbacks)),
        replication_fallback_policy: Some(types(p.replication_fallbacks)),
    }
}

pub async fn set_storage_policy(
    nn: Nn,
    ctx: CallCtx,
    req: SetStoragePolicyRequestProto,
) -> Res<SetStoragePolicyResponseProto> {
    nn.set_storage_policy(&ctx.user, &req.src, Some(&req.policy_name))
        .await?;
    Ok(SetStoragePolicyResponseProto {})
}

pub async fn satisfy_storage_policy(
    nn: Nn,
    ctx: CallCtx,
    req: SatisfyStoragePolicyRequestProto,
) -> Res<SatisfyStoragePolicyResponseProto> {
    nn.satisfy_storage_policy(&ctx.user, &req.src).await?;
    Ok(SatisfyStoragePolicyResponseProto {})
}

pub async fn unset_storage_policy(
    nn: Nn,
    ctx: CallCtx,
    req: UnsetStoragePolicyRequestProto,
) -> Res<UnsetStoragePolicyResponseProto> {
    nn.set_storage_policy(&ctx.user, &req.src, None).await?;
    Ok(UnsetStoragePolicyResponseProto {})
}

pub async fn get_storage_policy(
    nn: Nn,
    ctx: CallCtx,
    req: GetStoragePolicyRequestProto,
) -> Res<GetStoragePolicyResponseProto> {
    let p = nn.storage_policy(&ctx.user, &req.path)?;
    Ok(GetStoragePolicyResponseProto {
        storage_policy: policy_proto(p),
    })
}

pub async fn get_storage_policies(
    _: Nn,
    _: CallCtx,
    _: GetStoragePoliciesRequestProto,
) -> Res<GetStoragePoliciesResponseProto> {
    Ok(GetStoragePoliciesResponseProto {
        policies: POLICIES.iter().map(policy_proto).collect(),
    })
}
