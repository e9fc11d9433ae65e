//! Extended attributes through the service: setXAttr and removeXAttr journaled as any
//! mutation, getXAttrs and listXAttrs under the read lock. The rules are the namespace's
//! (`namespace/xattr.rs`); the limits come from the configuration.

use super::{Admitted, NameNodeService, Operation};
use crate::error::FsError;
use crate::namespace::xattr::XAttr;

impl NameNodeService {
    pub async fn set_xattr(
        &self,
        who: &Admitted,
        src: &str,
        x: XAttr,
        flags: u32,
    ) -> Result<(), FsError> {
        let user = who.user_for(Operation::SetXAttr);
        let caller = self.caller(user);
        let limits = self.cfg.xattrs;
        self.commit(|ns| {
            let src = ns.resolve_reserved(src)?;
            Ok(((), ns.plan_set_xattr(&caller, &src, x, flags, limits)?))
        })
        .await
    }

    pub async fn remove_xattr(&self, who: &Admitted, src: &str, x: XAttr) -> Result<(), FsError> {
        let user = who.user_for(Operation::RemoveXAttr);
        let caller = self.caller(user);
        let limits = self.cfg.xattrs;
        self.commit(|ns| {
            let src = ns.resolve_reserved(src)?;
            Ok(((), ns.plan_remove_xattr(&caller, &src, x, limits)?))
        })
        .await
    }

    pub fn get_xattrs(
        &self,
        who: &Admitted,
        src: &str,
        wanted: &[XAttr],
    ) -> Result<Vec<XAttr>, FsError> {
        let user = who.user_for(Operation::GetXAttrs);
        let caller = self.caller(user);
        let ns = self.ns.read();
        ns.get_xattrs(&caller, &ns.resolve_reserved(src)?, wanted, self.cfg.xattrs)
    }

    pub fn list_xattrs(&self, who: &Admitted, src: &str) -> Result<Vec<XAttr>, FsError> {
        let user = who.user_for(Operation::ListXAttrs);
        let caller = self.caller(user);
        let ns = self.ns.read();
        ns.list_xattrs(&caller, &ns.resolve_reserved(src)?, self.cfg.xattrs)
    }
}
