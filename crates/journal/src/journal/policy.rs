//! Which journal directories the NameNode can lose and go on.

use std::path::{Path, PathBuf};

/// HDFS's rule for which journal directories may fail before the NameNode must stop
/// (`NameNodeResourcePolicy`): none of the required ones
/// (`dfs.namenode.edits.dir.required`), and of the others, when there are any, no more
/// than leaves `min_redundant` in service (`dfs.namenode.edits.dir.minimum`). Ferrite
/// adds one floor: at least one directory in service, whatever the minimum says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirPolicy {
    pub required: Vec<PathBuf>,
    pub min_redundant: usize,
}

impl Default for DirPolicy {
    fn default() -> Self {
        DirPolicy {
            required: Vec::new(),
            min_redundant: 1,
        }
    }
}

impl DirPolicy {
    /// Whether the journal may go on, given each directory and whether it is in service;
    /// if not, why not, naming the directories.
    pub fn check<'a>(
        &self,
        dirs: impl IntoIterator<Item = (&'a Path, bool)>,
    ) -> Result<(), String> {
        let (mut redundant, mut redundant_live, mut live) = (0, 0, 0);
        for (dir, in_service) in dirs {
            live += usize::from(in_service);
            if self.required.iter().any(|r| r == dir) {
                if !in_service {
                    return Err(format!(
                        "required journal directory {} is out of service \
                         (dfs.namenode.edits.dir.required)",
                        dir.display()
                    ));
                }
            } else {
                redundant += 1;
                redundant_live += usize::from(in_service);
            }
        }
        if live == 0 {
            return Err("every journal directory has failed".into());
        }
        if redundant > 0 && redundant_live < self.min_redundant {
            return Err(format!(
                "{redundant_live} of the {redundant} journal directories that are not required \
                 are in service, fewer than dfs.namenode.edits.dir.minimum ({})",
                self.min_redundant
            ));
        }
        Ok(())
    }

    /// Every required directory must be one of the journal's `dirs`.
    pub fn validate(&self, dirs: &[PathBuf]) -> Result<(), String> {
        match self.required.iter().find(|r| !dirs.contains(r)) {
            Some(r) => Err(format!(
                "dfs.namenode.edits.dir.required lists {}, which is not one of the journal \
                 directories {dirs:?} (dfs.namenode.edits.dir, or the name directories when \
                 that is unset, plus --journal-dir)",
                r.display()
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_policy_is_hdfs_rule_with_one_directory_as_a_floor() {
        let (a, b, r) = (Path::new("/a"), Path::new("/b"), Path::new("/r"));
        let default = DirPolicy::default();
        assert_eq!(default.check([(a, true), (b, false)]), Ok(()));
        let none = default.check([(a, false), (b, false)]).unwrap_err();
        assert!(none.contains("every journal directory"), "{none}");
        let required = DirPolicy {
            required: vec![r.to_path_buf()],
            min_redundant: 1,
        };
        assert_eq!(required.check([(a, true), (r, true)]), Ok(()));
        let lost = required.check([(a, true), (r, false)]).unwrap_err();
        assert!(lost.contains("required journal directory /r"), "{lost}");
        // Only required directories: no redundant minimum to meet.
        assert_eq!(required.check([(r, true)]), Ok(()));
        let two = DirPolicy {
            required: vec![],
            min_redundant: 2,
        };
        assert_eq!(two.check([(a, true), (b, true), (r, false)]), Ok(()));
        let short = two.check([(a, true), (b, false), (r, false)]).unwrap_err();
        assert!(short.contains("1 of the 3"), "{short}");
        // A minimum of 0 still needs one directory in service.
        let zero = DirPolicy {
            required: vec![],
            min_redundant: 0,
        };
        assert!(zero.check([(a, false)]).is_err());
        assert!(required
            .validate(&[a.to_path_buf(), r.to_path_buf()])
            .is_ok());
        let stray = required.validate(&[a.to_path_buf()]).unwrap_err();
        assert!(stray.contains("lists /r"), "{stray}");
    }
}
