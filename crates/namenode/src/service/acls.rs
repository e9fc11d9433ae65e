//! ACLs through the service: the five changes journaled as any mutation, getAclStatus
//! under the read lock. The rules are the namespace's (`namespace/acl.rs`,
//! `namespace/acl_ops.rs`); `dfs.namenode.acls.enabled` comes from the configuration.

use super::{Admitted, NameNodeService, Operation};
use crate::error::FsError;
use crate::namespace::acl_ops::{AclChange, AclStatus};

impl NameNodeService {
    pub async fn change_acl(
        &self,
        who: &Admitted,
        src: &str,
        change: AclChange,
    ) -> Result<(), FsError> {
        let user = who.user();
        let caller = self.caller(user);
        let enabled = self.cfg.acls_enabled;
        self.commit(|ns| {
            let src = ns.resolve_reserved(src)?;
            Ok(((), ns.plan_acl_change(&caller, &src, change, enabled)?))
        })
        .await
    }

    pub fn acl_status(&self, who: &Admitted, src: &str) -> Result<AclStatus, FsError> {
        let user = who.user_for(Operation::GetAclStatus);
        let caller = self.caller(user);
        let ns = self.ns.read();
        ns.acl_status(&caller, &ns.resolve_reserved(src)?, self.cfg.acls_enabled)
    }
}
