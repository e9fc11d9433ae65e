//! setStoragePolicy, unsetStoragePolicy, getStoragePolicy and getStoragePolicies.

use ferrite_ipc::{Router, CLIENT_PROTOCOL};
use ferrite_proto::hdfs::{
    BlockStoragePolicyProto, GetStoragePoliciesRequestProto, GetStoragePoliciesResponseProto,
    GetStoragePolicyRequestProto, GetStoragePolicyResponseProto, SatisfyStoragePolicyRequestProto,
    SatisfyStoragePolicyResponseProto, SetStoragePolicyRequestProto, SetStoragePolicyResponseProto,
    StorageTypesProto, UnsetStoragePolicyRequestProto, UnsetStoragePolicyResponseProto,
};

use super::{Nn, Register, Res};
use crate::namespace::storage_policy::{Policy, StorageType, POLICIES};
use crate::service::NameNodeService;
use crate::service::{Admitted, Operation};

pub fn register(r: &mut Router<NameNodeService>) {
    let p = CLIENT_PROTOCOL;
    r.op(p, Operation::SetStoragePolicy, set_storage_policy)
        .op(p, Operation::UnsetStoragePolicy, unset_storage_policy)
        .op(p, Operation::GetStoragePolicy, get_storage_policy)
        .op(p, Operation::GetStoragePolicies, get_storage_policies)
        .op(p, Operation::SatisfyStoragePolicy, satisfy_storage_policy);
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
    who: Admitted,
    req: SetStoragePolicyRequestProto,
) -> Res<SetStoragePolicyResponseProto> {
    nn.set_storage_policy(&who, &req.src, Some(&req.policy_name))
        .await?;
    Ok(SetStoragePolicyResponseProto {})
}

pub async fn satisfy_storage_policy(
    nn: Nn,
    who: Admitted,
    req: SatisfyStoragePolicyRequestProto,
) -> Res<SatisfyStoragePolicyResponseProto> {
    nn.satisfy_storage_policy(&who, &req.src).await?;
    Ok(SatisfyStoragePolicyResponseProto {})
}

pub async fn unset_storage_policy(
    nn: Nn,
    who: Admitted,
    req: UnsetStoragePolicyRequestProto,
) -> Res<UnsetStoragePolicyResponseProto> {
    nn.set_storage_policy(&who, &req.src, None).await?;
    Ok(UnsetStoragePolicyResponseProto {})
}

pub async fn get_storage_policy(
    nn: Nn,
    who: Admitted,
    req: GetStoragePolicyRequestProto,
) -> Res<GetStoragePolicyResponseProto> {
    let p = nn.storage_policy(&who, &req.path)?;
    Ok(GetStoragePolicyResponseProto {
        storage_policy: policy_proto(p),
    })
}

pub async fn get_storage_policies(
    _: Nn,
    _: Admitted,
    _: GetStoragePoliciesRequestProto,
) -> Res<GetStoragePoliciesResponseProto> {
    Ok(GetStoragePoliciesResponseProto {
        policies: POLICIES.iter().map(policy_proto).collect(),
    })
}
