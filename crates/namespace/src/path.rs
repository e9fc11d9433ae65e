//! Path validation and splitting, with HDFS's rules (`DFSUtil.isValidName`).

use smallvec::SmallVec;

use crate::error::FsError;

/// A path's components, on the stack for paths up to 16 deep: every namespace call splits
/// its path, most more than once, and the heap allocation showed in the per-call profile.
pub type Components<'a> = SmallVec<[&'a str; 16]>;

/// Longest name any entry may have, in bytes: HDFS's default for
/// `dfs.namenode.fs-limits.max-component-length`, and the most Ferrite allows it to be, as
/// the summary keeps name lengths in a byte.
pub const MAX_COMPONENT_LEN: usize = 255;

/// Splits an absolute path into its components. Empty components (`//`) are skipped as HDFS
/// does; `.`, `..` and components containing `:` are invalid. Length is not checked here:
/// as in HDFS, only a name being added is refused for it (see [`check_new_name`]), and a
/// lookup of an over-long one simply finds nothing.
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
        out.push(c);
    }
    Ok(out)
}

/// The name under a snapshottable directory through which its snapshots are read.
pub const DOT_SNAPSHOT: &str = ".snapshot";

/// Refuses `name`, to be added under `parent`, if it is HDFS's reserved `.snapshot`, or
/// if it is longer than `limit` bytes (HDFS's
/// `PathComponentTooLongException`, with its message).
pub fn check_new_name(name: &str, parent: &[&str], limit: usize) -> Result<(), FsError> {
    if name == DOT_SNAPSHOT {
        return Err(FsError::IllegalArgument(format!(
            "\"{DOT_SNAPSHOT}\" is a reserved name."
        )));
    }
    if name.len() <= limit {
        return Ok(());
    }
    Err(FsError::ComponentTooLong {
        name: name.to_string(),
        dir: join(parent),
        limit,
    })
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

/// The path of entry `name` in directory `dir`.
pub fn child_of(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
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
        let long = "x".repeat(256);
        assert_eq!(components(&format!("/a/{long}")).unwrap().len(), 2);
        assert!(check_new_name(&long[1..], &["a"], MAX_COMPONENT_LEN).is_ok());
        let Err(e @ FsError::ComponentTooLong { .. }) =
            check_new_name(&long, &["a"], MAX_COMPONENT_LEN)
        else {
            panic!("a 256-byte name is refused")
        };
        let m = e.to_string();
        assert!(
            m.ends_with("in directory /a is exceeded: limit=255 length=256"),
            "{m}"
        );
        assert_eq!(join(&["a", "b"]), "/a/b");
        assert_eq!(join(&[]), "/");
    }
}
