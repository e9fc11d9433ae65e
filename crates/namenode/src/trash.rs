//! The trash emptier's decisions, as Hadoop's `TrashPolicyDefault` makes them: each run, in
//! every `/user/<name>/.Trash`, delete checkpoints older than the trash interval, then turn
//! `Current` into a new checkpoint named `yyMMddHHmmss`. Checkpoint names use UTC.
//! Pure: the caller supplies the time and carries the actions out as the superuser.

use crate::namespace::inode::ROOT_SLOT;
use crate::namespace::Namespace;

pub const CURRENT: &str = "Current";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrashAction {
    Delete { path: String },
    Checkpoint { from: String, to: String },
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `yyMMddHHmmss` of a time in milliseconds since the epoch (UTC).
pub fn checkpoint_name(now_ms: i64) -> String {
    let secs = now_ms.div_euclid(1000);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{:02}{:02}{:02}{:02}{:02}{:02}",
        y % 100,
        m,
        d,
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// The time a checkpoint name stands for (a `-N` suffix, added on collisions, is ignored).
pub fn parse_checkpoint(name: &str) -> Option<i64> {
    let stem = name.split('-').next()?;
    if stem.len() != 12 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = |i: usize| stem[i..i + 2].parse::<u32>().ok();
    let (y, mo, d, h, mi, s) = (n(0)?, n(2)?, n(4)?, n(6)?, n(8)?, n(10)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let days = days_from_civil(2000 + y as i64, mo, d);
    Some((days * 86_400 + (h * 3600 + mi * 60 + s) as i64) * 1000)
}

/// What one emptier run does at `now_ms` with the given trash interval.
pub fn plan(ns: &Namespace, now_ms: i64, interval_ms: i64) -> Vec<TrashAction> {
    let mut out = Vec::new();
    let Some(user_dir) = ns.child(ROOT_SLOT, b"user") else {
        return out;
    };
    for (user, home) in ns.children_names(user_dir) {
        let Some(trash) = ns.child(home, b".Trash") else {
            continue;
        };
        if !ns.inode(trash).is_dir() {
            continue;
        }
        let root = format!("/user/{user}/.Trash");
        let entries = ns.children_names(trash);
        for (name, _) in &entries {
            if let Some(t) = parse_checkpoint(name) {
                if now_ms - interval_ms > t {
                    out.push(TrashAction::Delete {
                        path: format!("{root}/{name}"),
                    });
                }
            }
        }
        if entries.iter().any(|(n, _)| n == CURRENT) {
            let base = checkpoint_name(now_ms);
            let taken = |n: &str| entries.iter().any(|(e, _)| e == n);
            let mut to = base.clone();
            let mut i = 1;
            while taken(&to) {
                to = format!("{base}-{i}");
                i += 1;
            }
            out.push(TrashAction::Checkpoint {
                from: format!("{root}/{CURRENT}"),
                to: format!("{root}/{to}"),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::namespace::Caller;

    #[test]
    fn names_round_trip() {
        // 2026-11-22 03:12:43 UTC
        let t = 1_795_317_163_000;
        assert_eq!(checkpoint_name(t), "261122031243");
        assert_eq!(parse_checkpoint("261122031243"), Some(t));
        assert_eq!(parse_checkpoint("261122031243-2"), Some(t));
        assert_eq!(parse_checkpoint("Current"), None);
        assert_eq!(parse_checkpoint("269922031243"), None);
    }

    #[test]
    fn plans_deletes_and_checkpoint() {
        let su = Caller::superuser("hdfs");
        let mut ns = Namespace::new("hdfs", "supergroup", 0);
        let now = 1_795_317_163_000;
        let old = checkpoint_name(now - 2 * 3_600_000);
        let fresh = checkpoint_name(now - 60_000);
        for p in [
            "/user/alice/.Trash/Current/x".to_string(),
            format!("/user/alice/.Trash/{old}"),
            format!("/user/alice/.Trash/{fresh}"),
        ] {
            for op in ns.plan_mkdirs(&su, &p, 0o700, true, 0).unwrap().ops {
                ns.apply(&op).unwrap();
            }
        }
        let actions = plan(&ns, now, 3_600_000);
        assert_eq!(
            actions,
            vec![
                TrashAction::Delete {
                    path: format!("/user/alice/.Trash/{old}")
                },
                TrashAction::Checkpoint {
                    from: "/user/alice/.Trash/Current".into(),
                    to: format!("/user/alice/.Trash/{}", checkpoint_name(now))
                },
            ]
        );
    }
}
