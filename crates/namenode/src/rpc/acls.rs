//! modifyAclEntries, removeAclEntries, removeDefaultAcl, removeAcl, setAcl and
//! getAclStatus: protobuf in, the service's ACL calls out.

use ferrite_ipc::{Router, CLIENT_PROTOCOL};
use ferrite_proto::hdfs::{
    acl_entry_proto::{AclEntryScopeProto, AclEntryTypeProto, FsActionProto},
    AclEntryProto, AclStatusProto, FsPermissionProto, GetAclStatusRequestProto,
    GetAclStatusResponseProto, ModifyAclEntriesRequestProto, ModifyAclEntriesResponseProto,
    RemoveAclEntriesRequestProto, RemoveAclEntriesResponseProto, RemoveAclRequestProto,
    RemoveAclResponseProto, RemoveDefaultAclRequestProto, RemoveDefaultAclResponseProto,
    SetAclRequestProto, SetAclResponseProto,
};

use super::{Nn, Register, Res};
use crate::error::FsError;
use crate::namespace::acl::{AclEntry, Kind, Scope};
use crate::namespace::acl_ops::AclChange;
use crate::service::NameNodeService;
use crate::service::{Admitted, Operation};

pub fn register(r: &mut Router<NameNodeService>) {
    let p = CLIENT_PROTOCOL;
    r.op(p, Operation::ModifyAclEntries, modify)
        .op(p, Operation::RemoveAclEntries, remove_entries)
        .op(p, Operation::RemoveDefaultAcl, remove_default)
        .op(p, Operation::RemoveAcl, remove)
        .op(p, Operation::SetAcl, set)
        .op(p, Operation::GetAclStatus, status);
}

fn from_proto(e: &AclEntryProto) -> Result<AclEntry, FsError> {
    let bad = |what: &str, v: i32| FsError::IllegalArgument(format!("no ACL entry {what} {v}"));
    let scope = match AclEntryScopeProto::try_from(e.scope) {
        Ok(AclEntryScopeProto::Access) => Scope::Access,
        Ok(AclEntryScopeProto::Default) => Scope::Default,
        Err(_) => return Err(bad("scope", e.scope)),
    };
    let kind = u8::try_from(e.r#type)
        .ok()
        .and_then(Kind::from_u8)
        .ok_or_else(|| bad("type", e.r#type))?;
    let perm =
        FsActionProto::try_from(e.permissions).map_err(|_| bad("permission", e.permissions))? as u8;
    Ok(AclEntry::new(scope, kind, e.name.as_deref(), perm))
}

fn to_proto(e: &AclEntry) -> AclEntryProto {
    AclEntryProto {
        r#type: match e.kind {
            Kind::User => AclEntryTypeProto::User,
            Kind::Group => AclEntryTypeProto::Group,
            Kind::Mask => AclEntryTypeProto::Mask,
            Kind::Other => AclEntryTypeProto::Other,
        } as i32,
        scope: match e.scope {
            Scope::Access => AclEntryScopeProto::Access,
            Scope::Default => AclEntryScopeProto::Default,
        } as i32,
        permissions: i32::from(e.perm),
        name: e.name.clone(),
    }
}

fn spec(entries: &[AclEntryProto]) -> Result<Vec<AclEntry>, FsError> {
    entries.iter().map(from_proto).collect()
}

pub async fn modify(
    nn: Nn,
    who: Admitted,
    req: ModifyAclEntriesRequestProto,
) -> Res<ModifyAclEntriesResponseProto> {
    let change = AclChange::Modify(spec(&req.acl_spec)?);
    nn.change_acl(&who, &req.src, change).await?;
    Ok(ModifyAclEntriesResponseProto {})
}

pub async fn remove_entries(
    nn: Nn,
    who: Admitted,
    req: RemoveAclEntriesRequestProto,
) -> Res<RemoveAclEntriesResponseProto> {
    let change = AclChange::RemoveEntries(spec(&req.acl_spec)?);
    nn.change_acl(&who, &req.src, change).await?;
    Ok(RemoveAclEntriesResponseProto {})
}

pub async fn remove_default(
    nn: Nn,
    who: Admitted,
    req: RemoveDefaultAclRequestProto,
) -> Res<RemoveDefaultAclResponseProto> {
    nn.change_acl(&who, &req.src, AclChange::RemoveDefault)
        .await?;
    Ok(RemoveDefaultAclResponseProto {})
}

pub async fn remove(
    nn: Nn,
    who: Admitted,
    req: RemoveAclRequestProto,
) -> Res<RemoveAclResponseProto> {
    nn.change_acl(&who, &req.src, AclChange::Remove).await?;
    Ok(RemoveAclResponseProto {})
}

pub async fn set(nn: Nn, who: Admitted, req: SetAclRequestProto) -> Res<SetAclResponseProto> {
    let change = AclChange::Set(spec(&req.acl_spec)?);
    nn.change_acl(&who, &req.src, change).await?;
    Ok(SetAclResponseProto {})
}

pub async fn status(
    nn: Nn,
    who: Admitted,
    req: GetAclStatusRequestProto,
) -> Res<GetAclStatusResponseProto> {
    let st = nn.acl_status(&who, &req.src)?;
    Ok(GetAclStatusResponseProto {
        result: AclStatusProto {
            owner: st.owner,
            group: st.group,
            sticky: st.sticky,
            entries: st.entries.iter().map(to_proto).collect(),
            permission: Some(FsPermissionProto {
                perm: u32::from(st.perm),
            }),
        },
    })
}
