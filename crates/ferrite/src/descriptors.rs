//! The open-file limit a server needs.
//!
//! Every connection a server holds is a descriptor, and many shells and containers start
//! processes with a soft limit of 1,024 under a much higher hard limit. A NameNode at that
//! soft limit stops accepting at about a thousand idle WebHDFS or IPC connections while its
//! hard limit would allow ten times as many. HDFS never meets this: the JVM raises its own
//! soft limit to the hard one at start-up (HotSpot's `MaxFDLimit`, on by default), so a
//! Ferrite server does the same.

use tracing::{info, warn};

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit.
pub(crate) fn raise_soft_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read or write the struct passed to them.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        warn!(error = %std::io::Error::last_os_error(), "cannot read the open-file limit");
        return;
    }
    let Some(raised) = raised(limit.rlim_cur, limit.rlim_max) else {
        return;
    };
    let before = limit.rlim_cur;
    limit.rlim_cur = raised;
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        warn!(error = %std::io::Error::last_os_error(), soft = before, "cannot raise the open-file limit");
    } else {
        info!(
            from = before,
            to = raised,
            "raised the open-file limit to its hard limit"
        );
    }
}

/// The soft limit to set, if the present one is below the hard one.
fn raised(soft: libc::rlim_t, hard: libc::rlim_t) -> Option<libc::rlim_t> {
    (soft < hard).then_some(hard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_soft_limit_below_the_hard_one_is_raised() {
        assert_eq!(raised(1024, 524_288), Some(524_288));
        assert_eq!(raised(1024, libc::RLIM_INFINITY), Some(libc::RLIM_INFINITY));
        assert_eq!(raised(20_000, 20_000), None);
    }
}
