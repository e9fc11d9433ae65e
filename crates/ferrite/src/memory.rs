//! Giving freed memory back to the system once a burst of work is over.
//!
//! glibc's allocator keeps what a server frees in its arenas: after a million creates and
//! deletes, or a big listing, the NameNode's RSS stays near its peak although most of that
//! heap is free (heaptrack over the benchmark suite: ~100 MB retained beyond the live
//! heap). `malloc_trim` hands free pages back, but it walks every arena under its lock, so
//! it runs only when the process has gone quiet after real work, never mid-load. The
//! decision is [`IdleTrim`]'s, fed CPU times, so that it can be tested without a clock.

use std::time::Duration;

/// How often the process's CPU time is looked at.
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(2);

/// Decides when to trim: after at least `work` of CPU since the last trim, at the first
/// interval in which the process used less than `idle` of CPU.
#[derive(Debug)]
pub(crate) struct IdleTrim {
    work: Duration,
    idle: Duration,
    last_cpu: Duration,
    since_trim: Duration,
}

impl IdleTrim {
    pub(crate) fn new(work: Duration, idle: Duration, cpu_now: Duration) -> Self {
        IdleTrim {
            work,
            idle,
            last_cpu: cpu_now,
            since_trim: Duration::ZERO,
        }
    }

    /// Records the process's total CPU time at the end of an interval; true when the
    /// caller should trim now.
    pub(crate) fn observe(&mut self, cpu_now: Duration) -> bool {
        let used = cpu_now.saturating_sub(self.last_cpu);
        self.last_cpu = cpu_now;
        self.since_trim += used;
        if used < self.idle && self.since_trim >= self.work {
            self.since_trim = Duration::ZERO;
            return true;
        }
        false
    }
}

/// This process's user + system CPU time so far.
fn process_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// How many malloc arenas a server process may use: about one per thread that allocates on
/// a hot path, that is a runtime worker per core plus the NameNode's own threads (journal
/// syncer, summary, checkpoint and a few others): eight on two cores.
fn server_arenas() -> i32 {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    (cores + 6).min(64) as i32
}

/// Caps glibc's malloc arenas for a server process; call before any thread is started.
///
/// glibc gives a thread that meets contention an arena of its own, up to eight per core.
/// What the workers build over a long run (namespace, summary, retry cache) then lies
/// spread over many arenas, each keeping partly used pages that trimming cannot return.
/// Two arenas, one per core, saved 5% of idle RSS after the benchmark suite (340 against
/// 359 MiB then) but made threads queue on each other's arena locks: in-process creates ran
/// at a median 126k/s against 160k/s with eight, and NameNode CPU per remote create was
/// 28–31 µs against 26–27. With eight, idle RSS after our client's remote suite is 205 MiB
/// against 202, and a file still costs 129 bytes against 128.
pub(crate) fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only sets an allocator parameter; no allocation is in flight on
        // another thread yet.
        if unsafe { libc::mallopt(libc::M_ARENA_MAX, server_arenas()) } != 1 {
            tracing::warn!("could not cap malloc arenas");
        }
    }
}

/// Starts the trimming thread for a server process (one thread, asleep almost always).
pub(crate) fn start_idle_trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let mut policy = IdleTrim::new(
            Duration::from_secs(1),
            Duration::from_millis(20),
            process_cpu(),
        );
        let started = std::thread::Builder::new()
            .name("idle-trim".into())
            .spawn(move || loop {
                std::thread::sleep(CHECK_EVERY);
                if policy.observe(process_cpu()) {
                    let before = rss_kib();
                    // SAFETY: malloc_trim has no preconditions; 0 keeps no pad at the top.
                    unsafe { libc::malloc_trim(0) };
                    tracing::debug!(
                        before_kib = before,
                        after_kib = rss_kib(),
                        "idle: freed memory returned"
                    );
                }
            });
        if let Err(e) = started {
            tracing::warn!(error = %e, "could not start the idle memory trimmer");
        }
    }
}

/// A numeric field of `/proc/PID/status` (`VmRSS:` in KiB, `Threads:`, …).
pub(crate) fn proc_status(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn rss_kib() -> u64 {
    proc_status(std::process::id(), "VmRSS:").unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn trims_once_when_quiet_after_work() {
        let mut p = IdleTrim::new(ms(1000), ms(20), ms(0));
        assert!(!p.observe(ms(800)), "busy: never mid-load");
        assert!(!p.observe(ms(1600)), "still busy");
        assert!(p.observe(ms(1605)), "quiet after 1.6 s of work");
        assert!(!p.observe(ms(1610)), "nothing new to give back");
    }

    #[test]
    fn light_load_trims_only_after_enough_work() {
        let mut p = IdleTrim::new(ms(1000), ms(20), ms(0));
        let mut cpu = ms(0);
        for _ in 0..40 {
            cpu += ms(10);
            assert!(!p.observe(cpu), "too little work since the last trim");
        }
        for _ in 0..40 {
            cpu += ms(30);
            assert!(!p.observe(cpu), "never idle");
        }
        assert!(p.observe(cpu), "quiet after 1.6 s of work in all");
    }
}
