//! ClientProtocol calls for features Ferrite does not have, answered as HDFS 3.4.1 answers
//! them where the feature is off or unconfigured: symlinks (off in HDFS too), delegation
//! tokens without Kerberos (none issued), encryption zones without a KMS, and erasure coding
//! (every policy disabled: Ferrite writes only replicated files). Reads answer truthfully; changes are refused with HDFS's
//! exception for that state.

use ferrite_ipc::{Router, CLIENT_PROTOCOL};
use ferrite_proto::hdfs::*;

use super::{Nn, Register, Res};
use crate::error::FsError;
use crate::service::NameNodeService;
use crate::service::{Admitted, Operation};

pub fn register(r: &mut Router<NameNodeService>) {
    let p = CLIENT_PROTOCOL;
    r.op(p, Operation::CreateSymlink, create_symlink);
    r.op(p, Operation::GetLinkTarget, link_target);
    r.op(p, Operation::GetDelegationToken, get_token);
    r.op(p, Operation::RenewDelegationToken, renew_token);
    r.op(p, Operation::CancelDelegationToken, cancel_token);
    r.op(p, Operation::CreateEncryptionZone, create_zone);
    r.op(p, Operation::GetEZForPath, zone_for_path);
    r.op(p, Operation::ListEncryptionZones, list_zones);
    r.op(p, Operation::ListReencryptionStatus, list_reencryption);
    r.op(p, Operation::ReencryptEncryptionZone, reencrypt);
    r.op(p, Operation::GetErasureCodingPolicies, ec_policies);
    r.op(p, Operation::GetErasureCodingCodecs, ec_codecs);
    r.op(p, Operation::GetErasureCodingPolicy, ec_policy_of);
    r.op(p, Operation::SetErasureCodingPolicy, set_ec_policy);
    r.op(p, Operation::UnsetErasureCodingPolicy, unset_ec_policy);
    r.op(p, Operation::EnableErasureCodingPolicy, enable_ec_policy);
    r.op(p, Operation::DisableErasureCodingPolicy, disable_ec_policy);
    r.op(p, Operation::RemoveErasureCodingPolicy, remove_ec_policy);
    r.op(p, Operation::AddErasureCodingPolicies, add_ec_policies);
    r.op(p, Operation::GetECTopologyResultForPolicies, ec_topology);
}

fn io(message: String) -> FsError {
    FsError::Io(message)
}

/// HDFS's NameNode refuses symlinks unless `FileSystem.enableSymlinks()` was called in its
/// JVM, which nothing does.
pub async fn create_symlink(
    _: Nn,
    _: Admitted,
    _: CreateSymlinkRequestProto,
) -> Res<CreateSymlinkResponseProto> {
    Err(FsError::Unsupported("Symlinks not supported".into()).into())
}

/// No path is a symlink: a file or directory is "not a symbolic link".
pub async fn link_target(
    nn: Nn,
    who: Admitted,
    req: GetLinkTargetRequestProto,
) -> Res<GetLinkTargetResponseProto> {
    match nn.file_info(&who, &req.path)? {
        Some(_) => Err(io(format!("Path {} is not a symbolic link", req.path)).into()),
        None => Err(FsError::file_not_found(&req.path).into()),
    }
}

/// Without Kerberos HDFS runs no token secret manager and answers with no token.
pub async fn get_token(
    _: Nn,
    _: Admitted,
    _: GetDelegationTokenRequestProto,
) -> Res<GetDelegationTokenResponseProto> {
    Ok(GetDelegationTokenResponseProto { token: None })
}

/// No token was ever issued, so none can be renewed or cancelled. An empty identifier
/// fails to decode, as in HDFS.
fn unknown_token(t: &ferrite_proto::common::TokenProto) -> FsError {
    if t.identifier.is_empty() {
        return FsError::Eof("java.io.EOFException".into());
    }
    FsError::InvalidToken("token is not known: this NameNode issues no delegation tokens".into())
}

pub async fn renew_token(
    _: Nn,
    _: Admitted,
    req: RenewDelegationTokenRequestProto,
) -> Res<RenewDelegationTokenResponseProto> {
    Err(unknown_token(&req.token).into())
}

pub async fn cancel_token(
    _: Nn,
    _: Admitted,
    req: CancelDelegationTokenRequestProto,
) -> Res<CancelDelegationTokenResponseProto> {
    Err(unknown_token(&req.token).into())
}

pub async fn create_zone(
    _: Nn,
    _: Admitted,
    req: CreateEncryptionZoneRequestProto,
) -> Res<CreateEncryptionZoneResponseProto> {
    Err(io(format!(
        "Can't create an encryption zone for {} since no key provider is available.",
        req.src
    ))
    .into())
}

/// No zone holds anything (HDFS answers so for a missing path too).
pub async fn zone_for_path(
    _: Nn,
    _: Admitted,
    _: GetEzForPathRequestProto,
) -> Res<GetEzForPathResponseProto> {
    Ok(GetEzForPathResponseProto { zone: None })
}

pub async fn list_zones(
    _: Nn,
    _: Admitted,
    _: ListEncryptionZonesRequestProto,
) -> Res<ListEncryptionZonesResponseProto> {
    Ok(ListEncryptionZonesResponseProto {
        zones: Vec::new(),
        has_more: false,
    })
}

pub async fn list_reencryption(
    _: Nn,
    _: Admitted,
    _: ListReencryptionStatusRequestProto,
) -> Res<ListReencryptionStatusResponseProto> {
    Ok(ListReencryptionStatusResponseProto {
        statuses: Vec::new(),
        has_more: false,
    })
}

pub async fn reencrypt(
    _: Nn,
    _: Admitted,
    _: ReencryptEncryptionZoneRequestProto,
) -> Res<ReencryptEncryptionZoneResponseProto> {
    Err(io("No key provider configured, re-encryption operation is rejected".into()).into())
}

/// HDFS's system erasure coding policies: name, id, codec, data and parity units.
const EC_POLICIES: [(&str, u32, &str, u32, u32); 5] = [
    ("RS-10-4-1024k", 5, "rs", 10, 4),
    ("RS-3-2-1024k", 2, "rs", 3, 2),
    ("RS-6-3-1024k", 1, "rs", 6, 3),
    ("RS-LEGACY-6-3-1024k", 3, "rs-legacy", 6, 3),
    ("XOR-2-1-1024k", 4, "xor", 2, 1),
];

fn ec_policy(name: &str, id: u32, codec: &str, data: u32, parity: u32) -> ErasureCodingPolicyProto {
    ErasureCodingPolicyProto {
        name: Some(name.into()),
        schema: Some(EcSchemaProto {
            codec_name: codec.into(),
            data_units: data,
            parity_units: parity,
            options: Vec::new(),
        }),
        cell_size: Some(1024 * 1024),
        id,
        state: Some(ErasureCodingPolicyState::Disabled as i32),
    }
}

/// Every system policy, each disabled: Ferrite writes only replicated files.
pub async fn ec_policies(
    _: Nn,
    _: Admitted,
    _: GetErasureCodingPoliciesRequestProto,
) -> Res<GetErasureCodingPoliciesResponseProto> {
    Ok(GetErasureCodingPoliciesResponseProto {
        ec_policies: EC_POLICIES
            .iter()
            .map(|&(n, id, c, d, p)| ec_policy(n, id, c, d, p))
            .collect(),
    })
}

/// The codecs HDFS names (what a client would code with; none is used here).
pub async fn ec_codecs(
    _: Nn,
    _: Admitted,
    _: GetErasureCodingCodecsRequestProto,
) -> Res<GetErasureCodingCodecsResponseProto> {
    let codec = |c: &str, coders: &str| CodecProto {
        codec: c.into(),
        coders: coders.into(),
    };
    Ok(GetErasureCodingCodecsResponseProto {
        codec: vec![
            codec("rs", "rs_native, rs_java"),
            codec("rs-legacy", "rs-legacy_java"),
            codec("xor", "xor_native, xor_java"),
        ],
    })
}

/// Every file is replicated: no policy (after the path is found, as in HDFS).
pub async fn ec_policy_of(
    nn: Nn,
    who: Admitted,
    req: GetErasureCodingPolicyRequestProto,
) -> Res<GetErasureCodingPolicyResponseProto> {
    if nn.file_info(&who, &req.src)?.is_none() {
        return Err(FsError::NotFound(format!("Path not found: {}", req.src)).into());
    }
    Ok(GetErasureCodingPolicyResponseProto { ec_policy: None })
}

/// HDFS's refusal of a policy that is not enabled; none is.
pub async fn set_ec_policy(
    _: Nn,
    _: Admitted,
    req: SetErasureCodingPolicyRequestProto,
) -> Res<SetErasureCodingPolicyResponseProto> {
    let name = req.ec_policy_name.unwrap_or_else(|| "RS-6-3-1024k".into());
    Err(FsError::IllegalArgument(format!(
        "Policy '{name}' does not match any enabled erasure coding policies: []. An erasure \
         coding policy can be enabled by enableErasureCodingPolicy API."
    ))
    .into())
}

/// No directory has a policy to unset.
pub async fn unset_ec_policy(
    nn: Nn,
    who: Admitted,
    req: UnsetErasureCodingPolicyRequestProto,
) -> Res<UnsetErasureCodingPolicyResponseProto> {
    if nn.file_info(&who, &req.src)?.is_none() {
        return Err(FsError::NotFound(format!("Path not found: {}", req.src)).into());
    }
    Ok(UnsetErasureCodingPolicyResponseProto {})
}

fn known_policy(name: &str) -> Result<(), FsError> {
    if EC_POLICIES.iter().any(|p| p.0 == name) {
        return Ok(());
    }
    Err(FsError::IllegalArgument(format!(
        "The policy name {name} does not exist"
    )))
}

/// Refused: Ferrite cannot write erasure-coded files, so no policy can be enabled.
pub async fn enable_ec_policy(
    _: Nn,
    _: Admitted,
    req: EnableErasureCodingPolicyRequestProto,
) -> Res<EnableErasureCodingPolicyResponseProto> {
    known_policy(&req.ec_policy_name)?;
    Err(FsError::Unsupported(format!(
        "Erasure coding policy {} cannot be enabled: Ferrite stores replicated files only",
        req.ec_policy_name
    ))
    .into())
}

/// Every policy is disabled already.
pub async fn disable_ec_policy(
    _: Nn,
    _: Admitted,
    req: DisableErasureCodingPolicyRequestProto,
) -> Res<DisableErasureCodingPolicyResponseProto> {
    known_policy(&req.ec_policy_name)?;
    Ok(DisableErasureCodingPolicyResponseProto {})
}

pub async fn remove_ec_policy(
    _: Nn,
    _: Admitted,
    req: RemoveErasureCodingPolicyRequestProto,
) -> Res<RemoveErasureCodingPolicyResponseProto> {
    known_policy(&req.ec_policy_name)?;
    Err(FsError::IllegalArgument(format!(
        "System erasure coding policy {} cannot be removed",
        req.ec_policy_name
    ))
    .into())
}

/// Nothing to add is fine; a policy to add is refused (it could never be used).
pub async fn add_ec_policies(
    _: Nn,
    _: Admitted,
    req: AddErasureCodingPoliciesRequestProto,
) -> Res<AddErasureCodingPoliciesResponseProto> {
    if req.ec_policies.is_empty() {
        return Ok(AddErasureCodingPoliciesResponseProto::default());
    }
    Err(FsError::Unsupported("Ferrite stores replicated files only".into()).into())
}

pub async fn ec_topology(
    _: Nn,
    _: Admitted,
    _: GetEcTopologyResultForPoliciesRequestProto,
) -> Res<GetEcTopologyResultForPoliciesResponseProto> {
    Ok(GetEcTopologyResultForPoliciesResponseProto {
        response: EcTopologyVerifierResultProto {
            result_message:
                "No erasure coding policy is enabled: Ferrite stores replicated files only.".into(),
            is_supported: false,
        },
    })
}
