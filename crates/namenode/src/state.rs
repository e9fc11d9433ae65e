//! The NameNode's shared state and its single mutation path.
//!
//! Every namespace change goes through [`NnState::commit`]: plan under the write lock, apply
//! each record, keep leases in step. The journal (next issue) appends the records here,
//! under the lock, and the caller waits for durability after the lock is released.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use ferrite_ipc::{CallCtx, MethodKind, RpcError, Service};
use parking_lot::{Mutex, RwLock};
use tracing::error;

use crate::config::Config;
use crate::error::FsError;
use crate::groups::GroupMapping;
use crate::identity::Identity;
use crate::leases::Leases;
use crate::namespace::{Caller, Namespace, Op};

/// Wall-clock milliseconds: the only clock the namespace ever sees, read at the edge.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

pub struct NnState {
    pub ns: RwLock<Namespace>,
    pub leases: Mutex<Leases>,
    pub cfg: Config,
    /// The user that started the NameNode.
    pub superuser: String,
    pub groups: GroupMapping,
    pub identity: Identity,
    safe_mode: AtomicBool,
}

impl NnState {
    pub fn new(cfg: Config, superuser: String, groups: GroupMapping, identity: Identity) -> Self {
        let ns = Namespace::new(&superuser, &cfg.superuser_group, now_ms());
        NnState {
            ns: RwLock::new(ns),
            leases: Mutex::new(Leases::default()),
            cfg,
            superuser,
            groups,
            identity,
            safe_mode: AtomicBool::new(false),
        }
    }

    pub fn is_superuser(&self, user: &str, groups: &[String]) -> bool {
        user == self.superuser || groups.contains(&self.cfg.superuser_group)
    }

    /// Resolves who a call runs as.
    pub fn caller(&self, user: &str) -> Caller {
        let groups = self.groups.groups(user);
        Caller {
            superuser: self.is_superuser(user, &groups),
            user: user.to_string(),
            groups,
            checks_enabled: self.cfg.permissions_enabled,
        }
    }

    pub fn in_safe_mode(&self) -> bool {
        self.safe_mode.load(Ordering::SeqCst)
    }

    pub fn set_safe_mode(&self, on: bool) {
        self.safe_mode.store(on, Ordering::SeqCst);
    }

    /// Plans a mutation under the write lock and applies the records it returns.
    pub fn commit<T>(
        &self,
        plan: impl FnOnce(&Namespace) -> Result<(T, Vec<Op>), FsError>,
    ) -> Result<T, FsError> {
        let now = now_ms();
        let mut ns = self.ns.write();
        let (out, ops) = plan(&ns)?;
        for op in &ops {
            let fx = ns.apply(op).map_err(|e| {
                // A planned record that does not apply is a bug; refuse loudly, keep serving.
                error!(?op, error = %e, "planned operation failed to apply");
                FsError::Io(format!("internal error applying {op:?}: {e}"))
            })?;
            self.leases.lock().on_op(op, &fx.closed_files, now);
        }
        Ok(out)
    }
}

impl Service for NnState {
    fn admit(&self, ctx: &CallCtx, method: &'static str, kind: MethodKind) -> Result<(), RpcError> {
        if kind.superuser {
            let groups = self.groups.groups(&ctx.user);
            if !self.is_superuser(&ctx.user, &groups) {
                return Err(FsError::AccessDenied(format!(
                    "Access denied for user {}. Superuser privilege is required",
                    ctx.user
                ))
                .into());
            }
        }
        if kind.mutating && self.in_safe_mode() {
            return Err(FsError::SafeMode(format!(
                "Cannot {method}. Name node is in safe mode.\nIt was turned on manually. \
                 Use \"hdfs dfsadmin -safemode leave\" to turn safe mode off."
            ))
            .into());
        }
        Ok(())
    }
}
