//! The NameNode's disk-space check, as HDFS's resource checker does it: when no journal
//! directory in service has `dfs.namenode.resource.du.reserved` bytes free, the NameNode
//! enters safe mode. Mutations are then refused with a SafeModeException that says why,
//! reads go on, and nothing acknowledged is at risk: the journal never reaches a full
//! disk mid-record, the failure that would otherwise take every directory out of service
//! and stop the NameNode.
//!
//! The decision is pure ([`has_room`]); reading free space is the edge ([`available`]).

use std::path::Path;

/// One directory's free space, or why it could not be read (counted as no room: a
/// directory whose file system cannot be asked is in no state to take records).
pub type Space = Result<u64, String>;

/// Whether the journal can go on: at least one directory has `reserved` bytes free. Every
/// record goes to every directory in service, and one that fills is taken out, so one
/// with room is enough (HDFS's default of one redundant volume).
pub fn has_room<'a>(spaces: impl IntoIterator<Item = &'a Space>, reserved: u64) -> bool {
    spaces
        .into_iter()
        .any(|s| matches!(s, Ok(free) if *free >= reserved))
}

/// Bytes an unprivileged writer can still use on the file system holding `dir`.
pub fn available(dir: &Path) -> Space {
    let st = rustix::fs::statvfs(dir).map_err(|e| format!("statvfs {}: {e}", dir.display()))?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_directory_with_room_is_enough_and_unreadable_ones_have_none() {
        let mb = 1 << 20;
        assert!(has_room(&[Ok(200 * mb)], 100 * mb));
        assert!(
            has_room(&[Ok(100 * mb)], 100 * mb),
            "exactly the reserve is enough"
        );
        assert!(!has_room(&[Ok(100 * mb - 1)], 100 * mb));
        assert!(has_room(
            &[Ok(0), Err("gone".into()), Ok(101 * mb)],
            100 * mb
        ));
        assert!(!has_room(&[Ok(5 * mb), Err("gone".into())], 100 * mb));
        assert!(!has_room(&[], 0), "no directory in service has no room");
    }

    #[test]
    fn a_real_directory_reports_its_space_and_a_missing_one_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(available(dir.path()).is_ok());
        let gone = dir.path().join("missing");
        let err = available(&gone).unwrap_err();
        assert!(err.contains("missing"), "{err}");
    }
}
