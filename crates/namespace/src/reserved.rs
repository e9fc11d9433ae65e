//! HDFS's reserved paths: `/.reserved/.inodes/<inode id>[/rest]` names a file or directory
//! by its inode id wherever it has moved. Hadoop's client opens a PathHandle that allows
//! the file to move (`HandleOpt.content()`, `reference()`) through such a path.

use std::borrow::Cow;

use super::Namespace;
use crate::error::FsError;

const INODES: &str = "/.reserved/.inodes/";

impl Namespace {
    /// `src` with a leading `/.reserved/.inodes/<id>` replaced by that inode's path; other
    /// paths as they are.
    pub fn resolve_reserved<'a>(&self, src: &'a str) -> Result<Cow<'a, str>, FsError> {
        let Some(rest) = src.strip_prefix(INODES) else {
            return Ok(Cow::Borrowed(src));
        };
        let (id, tail) = rest.split_once('/').map_or((rest, ""), |(i, t)| (i, t));
        let id: u64 = id.parse().map_err(|_| FsError::file_not_found(src))?;
        let slot = self
            .slot_of_id(id)
            .ok_or_else(|| FsError::file_not_found(src))?;
        let base = self.path_of(slot);
        Ok(Cow::Owned(match tail {
            "" => base,
            t if base == "/" => format!("/{t}"),
            t => format!("{base}/{t}"),
        }))
    }

    /// The slot of inode `id`. Files open for write are indexed; anything else is found by
    /// a scan of the inodes. A scan is what a lookup by id costs here: these paths are
    /// rare (a PathHandle open), and an index of every inode would cost each file more
    /// memory than the scan costs these calls (see ARCHITECTURE.md).
    pub fn slot_of_id(&self, id: u64) -> Option<super::inode::Slot> {
        if let Some(s) = self.open_file_slot(id) {
            return Some(s);
        }
        self.arena.slots().find(|&s| self.arena.get(s).id == id)
    }
}

#[cfg(test)]
mod tests {
    use crate::ops::mkdir_record;
    use crate::Namespace;

    #[test]
    fn inode_paths_resolve_to_where_the_inode_is_now() {
        let mut ns = Namespace::new("hdfs", "supergroup", 0);
        ns.apply(&mkdir_record("/a", 16386, 1)).unwrap();
        ns.apply(&mkdir_record("/a/b", 16387, 1)).unwrap();
        assert_eq!(ns.resolve_reserved("/x/y").unwrap(), "/x/y");
        assert_eq!(
            ns.resolve_reserved("/.reserved/.inodes/16387").unwrap(),
            "/a/b"
        );
        assert_eq!(
            ns.resolve_reserved("/.reserved/.inodes/16386/b/c").unwrap(),
            "/a/b/c"
        );
        assert_eq!(
            ns.resolve_reserved("/.reserved/.inodes/16385/a").unwrap(),
            "/a"
        );
        assert!(ns.resolve_reserved("/.reserved/.inodes/99999").is_err());
        assert!(ns.resolve_reserved("/.reserved/.inodes/x").is_err());
    }
}
