//! Quotas through the service: setQuota journaled as any mutation, the quota view under
//! the read lock. The rules and the usage are the namespace's (`namespace/quota.rs`).

use super::NameNodeService;
use crate::error::FsError;
use crate::namespace::quota::QuotaView;

impl NameNodeService {
    pub async fn set_quota(
        &self,
        user: &str,
        src: &str,
        ns: i64,
        space: i64,
        storage_type: Option<u8>,
    ) -> Result<(), FsError> {
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

    pub fn quota_view(&self, user: &str, src: &str) -> Result<QuotaView, FsError> {
        let caller = self.caller(user);
        let ns = self.ns.read();
        ns.quota_view(&caller, &ns.resolve_reserved(src)?)
    }
}
