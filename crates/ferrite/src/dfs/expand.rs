//! Expanding the globs in a command's remote path arguments against the namespace, as
//! Hadoop's shell does before a command runs (the matching itself is `glob.rs`).

use super::glob::{has_glob, Pattern};
use super::{Failed, Shell};

/// Which arguments of `cmd` name local files (not expanded here): the sources of an
/// upload, the destination of a download.
fn local_args(cmd: &str, n: usize) -> std::ops::Range<usize> {
    match cmd {
        "-put" | "-copyFromLocal" | "-appendToFile" | "-moveFromLocal" => 0..n.saturating_sub(1),
        "-get" | "-copyToLocal" => n.saturating_sub(1)..n,
        _ => 0..0,
    }
}

impl Shell {
    /// `args` with every remote glob replaced by the paths it matches, sorted; a glob that
    /// matches nothing is an error naming it.
    pub(crate) async fn expand_args(
        &self,
        cmd: &str,
        args: &[String],
    ) -> Result<Vec<String>, Failed> {
        let local = local_args(cmd, args.len());
        let mut out = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            if local.contains(&i) || a.starts_with('-') || !has_glob(a) {
                out.push(a.clone());
                continue;
            }
            let found = self.glob(a).await?;
            if found.is_empty() {
                return Err(Failed(format!(
                    "{}: `{a}': No such file or directory",
                    cmd.trim_start_matches('-')
                )));
            }
            out.extend(found);
        }
        Ok(out)
    }

    /// The paths `pattern` matches, in the form it was given (relative stays relative).
    async fn glob(&self, pattern: &str) -> Result<Vec<String>, Failed> {
        let abs = self.abs(pattern);
        let bad = |e: String| Failed(format!("{}: {e}", self.cmd));
        let mut found = vec![String::new()];
        for comp in abs.split('/').filter(|c| !c.is_empty()) {
            let mut next = Vec::new();
            if has_glob(comp) {
                let pat = Pattern::compile(comp).map_err(bad)?;
                for dir in &found {
                    let listed = match self.fs.list(if dir.is_empty() { "/" } else { dir }).await {
                        Ok(l) => l,
                        Err(_) => continue, // not a directory, or gone: it matches nothing
                    };
                    next.extend(
                        listed
                            .into_iter()
                            .filter(|st| pat.matches(&st.path))
                            .map(|st| format!("{dir}/{}", st.path)),
                    );
                }
            } else {
                next = found.iter().map(|d| format!("{d}/{comp}")).collect();
            }
            found = next;
        }
        let mut kept = Vec::new();
        for p in found {
            let p = if p.is_empty() { "/".to_string() } else { p };
            if self.exists(&p).await? {
                kept.push(p);
            }
        }
        kept.sort();
        if pattern.starts_with('/') || pattern.starts_with("hdfs://") {
            return Ok(kept);
        }
        let home = format!("{}/", self.home);
        Ok(kept
            .into_iter()
            .map(|p| p.strip_prefix(&home).map(str::to_string).unwrap_or(p))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::local_args;

    #[test]
    fn uploads_and_downloads_keep_their_local_paths() {
        assert_eq!(local_args("-put", 3), 0..2);
        assert_eq!(local_args("-appendToFile", 2), 0..1);
        assert_eq!(local_args("-get", 3), 2..3);
        assert!(local_args("-ls", 3).is_empty());
    }
}
