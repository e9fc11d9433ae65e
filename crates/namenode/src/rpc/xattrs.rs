//! setXAttr, getXAttrs, listXAttrs and removeXAttr: protobuf in, the service's xattrs out.

use ferrite_ipc::{Router, CLIENT_PROTOCOL};
use ferrite_proto::hdfs::{
    x_attr_proto::XAttrNamespaceProto, GetXAttrsRequestProto, GetXAttrsResponseProto,
    ListXAttrsRequestProto, ListXAttrsResponseProto, RemoveXAttrRequestProto,
    RemoveXAttrResponseProto, SetXAttrRequestProto, SetXAttrResponseProto, XAttrProto,
};

use super::{Nn, Register, Res};
use crate::error::FsError;
use crate::namespace::xattr::{XAttr, XAttrNs};
use crate::service::NameNodeService;
use crate::service::{Admitted, Operation};

pub fn register(r: &mut Router<NameNodeService>) {
    let p = CLIENT_PROTOCOL;
    r.op(p, Operation::SetXAttr, set_xattr)
        .op(p, Operation::GetXAttrs, get_xattrs)
        .op(p, Operation::ListXAttrs, list_xattrs)
        .op(p, Operation::RemoveXAttr, remove_xattr);
}

fn from_proto(x: XAttrProto) -> Result<XAttr, FsError> {
    let ns = u8::try_from(x.namespace)
        .ok()
        .and_then(XAttrNs::from_u8)
        .ok_or_else(|| FsError::IllegalArgument(format!("no xattr namespace {}", x.namespace)))?;
    Ok(XAttr {
        ns,
        name: x.name,
        value: x.value,
    })
}

fn to_proto(x: XAttr) -> XAttrProto {
    XAttrProto {
        namespace: match x.ns {
            XAttrNs::User => XAttrNamespaceProto::User,
            XAttrNs::Trusted => XAttrNamespaceProto::Trusted,
            XAttrNs::Security => XAttrNamespaceProto::Security,
            XAttrNs::System => XAttrNamespaceProto::System,
            XAttrNs::Raw => XAttrNamespaceProto::Raw,
        } as i32,
        name: x.name,
        value: x.value,
    }
}

fn named(x: Option<XAttrProto>) -> Result<XAttr, FsError> {
    from_proto(x.ok_or_else(|| FsError::IllegalArgument("no xattr given".into()))?)
}

pub async fn set_xattr(
    nn: Nn,
    who: Admitted,
    req: SetXAttrRequestProto,
) -> Res<SetXAttrResponseProto> {
    let x = named(req.x_attr)?;
    nn.set_xattr(&who, &req.src, x, req.flag.unwrap_or(0))
        .await?;
    Ok(SetXAttrResponseProto {})
}

pub async fn remove_xattr(
    nn: Nn,
    who: Admitted,
    req: RemoveXAttrRequestProto,
) -> Res<RemoveXAttrResponseProto> {
    let x = named(req.x_attr)?;
    nn.remove_xattr(&who, &req.src, x).await?;
    Ok(RemoveXAttrResponseProto {})
}

pub async fn get_xattrs(
    nn: Nn,
    who: Admitted,
    req: GetXAttrsRequestProto,
) -> Res<GetXAttrsResponseProto> {
    let wanted = req
        .x_attrs
        .into_iter()
        .map(from_proto)
        .collect::<Result<Vec<_>, _>>()?;
    let got = nn.get_xattrs(&who, &req.src, &wanted)?;
    Ok(GetXAttrsResponseProto {
        x_attrs: got.into_iter().map(to_proto).collect(),
    })
}

pub async fn list_xattrs(
    nn: Nn,
    who: Admitted,
    req: ListXAttrsRequestProto,
) -> Res<ListXAttrsResponseProto> {
    let got = nn.list_xattrs(&who, &req.src)?;
    Ok(ListXAttrsResponseProto {
        x_attrs: got.into_iter().map(to_proto).collect(),
    })
}
