//! Quotas through the service: setQuota journaled as any mutation, the quota view under
//! the read lock. The rules and the usage are the namespace's (`namespace/quota.rs`).

use super::{Admitted, NameNodeService, Operation};
use crate::error::FsError;
use crate::namespace::quota::QuotaView;

impl NameNodeService {
    pub async fn set_quota(
        &self,
        who: &Admitted,
        src: &str,
        ns: i64,
        space: i64,
        storage_type: Option<u8>,
    ) -> Result<(), FsError> {
        let user = who.user_for(Operation::SetQuota);
        let caller = self.caller(user);
        self.commit(|ns_| {
            let src = ns_.resolve_reserved(src)?;
            Ok((
                (),
                ns_.plan_set_quota(&caller, &src, ns, space, storage_type)?,
            ))
        })
        .await
    }

    pub fn quota_view(&self, who: &Admitted, src: &str) -> Result<QuotaView, FsError> {
        let user = who.user_for(Operation::GetQuotaUsage);
        let caller = self.caller(user);
        let ns = self.ns.read();
        ns.quota_view(&caller, &ns.resolve_reserved(src)?)
    }
}
