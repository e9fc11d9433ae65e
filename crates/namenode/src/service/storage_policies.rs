//! Storage policies through the service: set and unset journaled as any mutation, the
//! policy in force read under the read lock. The rules are the namespace's
//! (`namespace/storage_policy.rs`).

use super::{Admitted, NameNodeService, Operation};
use crate::error::FsError;
use crate::namespace::storage_policy::Policy;

impl NameNodeService {
    /// `setStoragePolicy` (`Some(name)`) or `unsetStoragePolicy` (`None`).
    pub async fn set_storage_policy(
        &self,
        who: &Admitted,
        src: &str,
        name: Option<&str>,
    ) -> Result<(), FsError> {
        let user = who.user_for(Operation::SetStoragePolicy);
        let caller = self.caller(user);
        let enabled = self.cfg.storage_policy_enabled;
        self.commit(|ns| {
            let src = ns.resolve_reserved(src)?;
            Ok((
                (),
                ns.plan_set_storage_policy(&caller, &src, name, enabled)?,
            ))
        })
        .await
    }

    pub fn storage_policy(&self, who: &Admitted, src: &str) -> Result<&'static Policy, FsError> {
        let user = who.user_for(Operation::GetStoragePolicy);
        let caller = self.caller(user);
        let ns = self.ns.read();
        ns.get_storage_policy(&caller, &ns.resolve_reserved(src)?)
    }
}
