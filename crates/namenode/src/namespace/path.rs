//! Path validation and splitting, with HDFS's rules (`DFSUtil.isValidName`).

use smallvec::SmallVec;

use crate::error::FsError;

/// A path's components, on the stack for paths up to 16 deep: every namespace call splits
/// its path, most more than once, and the heap allocation showed in the per-call profile.
pub type Components<'a> = SmallVec<[&'a str; 16]>;

/// Longest accepted path component in bytes (`dfs.namenode.fs-limits.max-component-length`).
pub const MAX_COMPONENT_LEN: usize = 255;

/// Splits an absolute path into its components. Empty components (`//`) are skipped as HDFS
/// does; `.`, `..` and components containing `:` are invalid.
pub fn components(path: &str) -> Result<Components<'_>, FsError> {
    if !path.starts_with('/') {
        return Err(FsError::InvalidPath(format!(
            "Invalid path name {path}: not an absolute path"
        )));
    }
    let mut out = Components::new();
    for c in path.split('/').filter(|c| !c.is_empty()) {
        if c == "." || c == ".." || c.contains(':') {
            return Err(FsError::InvalidPath(format!("Invalid path name {path}")));
        }
        if c.len() > MAX_COMPONENT_LEN {
            return Err(FsError::ComponentTooLong(format!(
                "The maximum path component name limit of {c} in directory {} is exceeded: limit={MAX_COMPONENT_LEN} length={}",
                join(&out),
                c.len()
            )));
        }
        out.push(c);
    }
    Ok(out)
}

/// The normalized path of `comps` (`/` for the root).
pub fn join(comps: &[&str]) -> String {
    if comps.is_empty() {
        return "/".to_string();
    }
    let mut s = String::new();
    for c in comps {
        s.push('/');
        s.push_str(c);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_validates() {
        assert!(components("/").unwrap().is_empty());
        assert_eq!(components("/a//b/").unwrap().as_slice(), ["a", "b"]);
        assert!(matches!(components("a/b"), Err(FsError::InvalidPath(_))));
        assert!(matches!(
            components("/a/../b"),
            Err(FsError::InvalidPath(_))
        ));
        assert!(matches!(components("/a/./b"), Err(FsError::InvalidPath(_))));
        assert!(matches!(components("/a:b"), Err(FsError::InvalidPath(_))));
        assert!(components(&format!("/{}", "x".repeat(256))).is_err());
        assert_eq!(join(&["a", "b"]), "/a/b");
        assert_eq!(join(&[]), "/");
    }
}
