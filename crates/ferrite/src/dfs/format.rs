//! How `hdfs dfs` prints things: permissions, times, sizes, `-stat` formats. Pure.

use ferrite_client::FileStatus;

/// `drwxr-xr-x`, with `t`/`T` for the sticky bit.
pub(crate) fn perm_string(is_dir: bool, perm: u16) -> String {
    let mut s = String::with_capacity(10);
    s.push(if is_dir { 'd' } else { '-' });
    for shift in [6, 3, 0] {
        let bits = (perm >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        let x = bits & 1 != 0;
        if shift == 0 && perm & 0o1000 != 0 {
            s.push(if x { 't' } else { 'T' });
        } else {
            s.push(if x { 'x' } else { '-' });
        }
    }
    s
}

/// Civil date and time (UTC) of a millisecond timestamp: (y, m, d, H, M, S).
pub(crate) fn civil(ms: u64) -> (i64, u32, u32, u32, u32, u32) {
    let secs = (ms / 1000) as i64;
    let rem = secs.rem_euclid(86_400) as u32;
    let (y, m, d) = ferrite_namenode::trash::civil_from_days(secs.div_euclid(86_400));
    (y, m, d, rem / 3600, rem / 60 % 60, rem % 60)
}

/// `yyyy-MM-dd HH:mm`, as `-ls` prints.
pub(crate) fn ls_time(ms: u64) -> String {
    let (y, mo, d, h, mi, _) = civil(ms);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}")
}

/// `yyyy-MM-dd HH:mm:ss`, as `-stat %y` prints.
pub(crate) fn stat_time(ms: u64) -> String {
    let (y, mo, d, h, mi, s) = civil(ms);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
}

/// `-h` sizes: 1.5 K, 23.4 M (Hadoop's `StringUtils.TraditionalBinaryPrefix`).
pub(crate) fn human(n: u64) -> String {
    const UNITS: [&str; 6] = ["K", "M", "G", "T", "P", "E"];
    if n < 1024 {
        return n.to_string();
    }
    let mut v = n as f64;
    let mut u = 0;
    v /= 1024.0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// `-stat FORMAT` for one status. `name` is the final path component.
pub(crate) fn stat(fmt: &str, st: &FileStatus, name: &str) -> String {
    let mut out = String::new();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('b') => out.push_str(&st.len.to_string()),
            Some('F') => out.push_str(if st.is_dir {
                "directory"
            } else if st.len == 0 {
                "regular empty file"
            } else {
                "regular file"
            }),
            Some('g') => out.push_str(&st.group),
            Some('u') => out.push_str(&st.owner),
            Some('n') => out.push_str(name),
            Some('o') => out.push_str(&st.block_size.to_string()),
            Some('r') => out.push_str(&st.replication.to_string()),
            Some('y') => out.push_str(&stat_time(st.mtime)),
            Some('Y') => out.push_str(&st.mtime.to_string()),
            Some('x') => out.push_str(&stat_time(st.atime)),
            Some('X') => out.push_str(&st.atime.to_string()),
            Some('a') => out.push_str(&format!("{:o}", st.perm & 0o1777)),
            Some('A') => out.push_str(&perm_string(st.is_dir, st.perm)[1..]),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Applies a chmod mode (octal, or symbolic like `u+x,go-w`) to `perm`.
pub(crate) fn chmod(mode: &str, perm: u16, is_dir: bool) -> Result<u16, String> {
    if mode.chars().all(|c| c.is_ascii_digit()) {
        return u16::from_str_radix(mode, 8)
            .ok()
            .filter(|v| *v <= 0o1777)
            .ok_or_else(|| format!("chmod : mode '{mode}' does not match the expected pattern."));
    }
    let mut p = perm;
    for clause in mode.split(',') {
        let op_at = clause
            .find(['+', '-', '='])
            .ok_or_else(|| format!("chmod : mode '{mode}' does not match the expected pattern."))?;
        let (who, rest) = clause.split_at(op_at);
        let op = rest.as_bytes()[0];
        let mut who_mask = 0u16;
        for w in who.chars() {
            who_mask |= match w {
                'u' => 0o700,
                'g' => 0o070,
                'o' => 0o007,
                'a' => 0o777,
                _ => {
                    return Err(format!(
                        "chmod : mode '{mode}' does not match the expected pattern."
                    ))
                }
            };
        }
        if who_mask == 0 {
            who_mask = 0o777;
        }
        let mut bits = 0u16;
        let mut sticky = false;
        for c in rest[1..].chars() {
            match c {
                'r' => bits |= 0o444,
                'w' => bits |= 0o222,
                'x' => bits |= 0o111,
                'X' if is_dir || p & 0o111 != 0 => bits |= 0o111,
                'X' => {}
                't' => sticky = true,
                _ => {
                    return Err(format!(
                        "chmod : mode '{mode}' does not match the expected pattern."
                    ))
                }
            }
        }
        let bits = bits & who_mask;
        match op {
            b'+' => p |= bits,
            b'-' => p &= !bits,
            _ => p = (p & !who_mask) | bits,
        }
        if sticky {
            match op {
                b'-' => p &= !0o1000,
                _ => p |= 0o1000,
            }
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_times_sizes_modes() {
        assert_eq!(perm_string(true, 0o755), "drwxr-xr-x");
        assert_eq!(perm_string(true, 0o1777), "drwxrwxrwt");
        assert_eq!(perm_string(false, 0o1644), "-rw-r--r-T");
        assert_eq!(ls_time(0), "1970-01-01 00:00");
        assert_eq!(stat_time(1_795_327_653_406), "2026-11-22 06:07:33");
        assert_eq!(human(1023), "1023");
        assert_eq!(human(1536), "1.5 K");
        assert_eq!(human(100 << 20), "100.0 M");
        assert_eq!(chmod("640", 0, false).unwrap(), 0o640);
        assert_eq!(chmod("u+x,go-r", 0o644, false).unwrap(), 0o700);
        assert_eq!(chmod("g+w", 0o644, false).unwrap(), 0o664);
        assert_eq!(chmod("a=r", 0o777, false).unwrap(), 0o444);
        assert_eq!(chmod("+t", 0o777, true).unwrap(), 0o1777);
        assert!(chmod("q+x", 0, false).is_err());
        assert!(chmod("9", 0, false).is_err());
    }
}
