//! The NameNode's disk-space check, as HDFS's resource checker does it: when the journal
//! directories in service with `dfs.namenode.resource.du.reserved` bytes free are not
//! enough by HDFS's policy (every required one, `dfs.namenode.edits.dir.required`, and
//! `dfs.namenode.resource.checked.volumes.minimum` of the others, at least one), the
//! NameNode enters safe mode. Mutations are then refused with a SafeModeException that says why,
//! reads go on, and nothing acknowledged is at risk: the journal never reaches a full
//! disk mid-record, the failure that would otherwise take every directory out of service
//! and stop the NameNode.
//!
//! The decision is pure ([`has_room`]); reading free space is the edge ([`available`]).

use std::path::Path;

use crate::journal::DirPolicy;

/// One directory's free space, or why it could not be read (counted as no room: a
/// directory whose file system cannot be asked is in no state to take records).
pub(crate) type Space = Result<u64, SpaceUnknown>;

/// `statvfs` failed on a directory.
#[derive(Debug, thiserror::Error)]
#[error("statvfs {}: {source}", dir.display())]
pub(crate) struct SpaceUnknown {
    pub dir: std::path::PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Whether the journal can go on: the directories with `reserved` bytes free satisfy
/// `policy`. Every record goes to every directory in service, and one that fills is taken
/// out, so by default one with room is enough (HDFS's one redundant volume); but a
/// required directory that fills would stop the NameNode, so it must have room itself.
pub(crate) fn has_room<'a>(
    spaces: impl IntoIterator<Item = (&'a Path, &'a Space)>,
    reserved: u64,
    policy: &DirPolicy,
) -> bool {
    let roomy = spaces
        .into_iter()
        .map(|(dir, s)| (dir, matches!(s, Ok(free) if *free >= reserved)));
    policy.check(roomy).is_ok()
}

/// Bytes an unprivileged writer can still use on the file system holding `dir`.
pub(crate) fn available(dir: &Path) -> Space {
    let st = rustix::fs::statvfs(dir).map_err(|e| SpaceUnknown {
        dir: dir.to_path_buf(),
        source: e.into(),
    })?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(spaces: &[Space], reserved: u64, policy: &DirPolicy) -> bool {
        let dirs: Vec<std::path::PathBuf> =
            (0..spaces.len()).map(|i| format!("/d{i}").into()).collect();
        has_room(
            dirs.iter().map(|d| d.as_path()).zip(spaces),
            reserved,
            policy,
        )
    }

    fn gone() -> Space {
        Err(SpaceUnknown {
            dir: "/gone".into(),
            source: std::io::Error::from_raw_os_error(libc::EIO),
        })
    }

    #[test]
    fn one_directory_with_room_is_enough_and_unreadable_ones_have_none() {
        let mb = 1 << 20;
        let one = DirPolicy::default();
        assert!(room(&[Ok(200 * mb)], 100 * mb, &one));
        assert!(
            room(&[Ok(100 * mb)], 100 * mb, &one),
            "exactly the reserve is enough"
        );
        assert!(!room(&[Ok(100 * mb - 1)], 100 * mb, &one));
        assert!(room(&[Ok(0), gone(), Ok(101 * mb)], 100 * mb, &one));
        assert!(!room(&[Ok(5 * mb), gone()], 100 * mb, &one));
        assert!(!room(&[], 0, &one), "no directory in service has no room");
    }

    #[test]
    fn a_required_directory_needs_room_of_its_own() {
        let mb = 1 << 20;
        let required = DirPolicy {
            required: vec!["/d1".into()],
            min_redundant: 1,
        };
        assert!(room(&[Ok(200 * mb), Ok(200 * mb)], 100 * mb, &required));
        assert!(
            !room(&[Ok(200 * mb), Ok(5 * mb)], 100 * mb, &required),
            "the other's room does not help a required directory that is short"
        );
        let two = DirPolicy {
            required: vec![],
            min_redundant: 2,
        };
        assert!(!room(&[Ok(200 * mb), Ok(5 * mb)], 100 * mb, &two));
    }

    #[test]
    fn a_real_directory_reports_its_space_and_a_missing_one_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(available(dir.path()).is_ok());
        let gone = dir.path().join("missing");
        let err = available(&gone).unwrap_err();
        assert_eq!(err.dir, gone);
        assert_eq!(err.source.kind(), std::io::ErrorKind::NotFound);
        assert!(err.to_string().contains("missing"), "{err}");
    }
}
