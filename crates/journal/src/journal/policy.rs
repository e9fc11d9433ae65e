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

/// Why the journal cannot go on (or start) with the directories it has.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("required journal directory {} is out of service (dfs.namenode.edits.dir.required)", .0.display())]
    RequiredOut(PathBuf),
    #[error("every journal directory has failed")]
    AllFailed,
    #[error(
        "{live} of the {of} journal directories that are not required are in service, fewer \
         than dfs.namenode.edits.dir.minimum ({min})"
    )]
    TooFew { live: usize, of: usize, min: usize },
    #[error(
        "dfs.namenode.edits.dir.required lists {}, which is not one of the journal directories \
         {dirs:?} (dfs.namenode.edits.dir, or the name directories when that is unset, plus \
         --journal-dir)",
        dir.display()
    )]
    RequiredNotJournal { dir: PathBuf, dirs: Vec<PathBuf> },
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
    ) -> Result<(), PolicyError> {
        let (mut redundant, mut redundant_live, mut live) = (0, 0, 0);
        for (dir, in_service) in dirs {
            live += usize::from(in_service);
            if self.required.iter().any(|r| r == dir) {
                if !in_service {
                    return Err(PolicyError::RequiredOut(dir.to_path_buf()));
                }
            } else {
                redundant += 1;
                redundant_live += usize::from(in_service);
            }
        }
        if live == 0 {
            return Err(PolicyError::AllFailed);
        }
        if redundant > 0 && redundant_live < self.min_redundant {
            return Err(PolicyError::TooFew {
                live: redundant_live,
                of: redundant,
                min: self.min_redundant,
            });
        }
        Ok(())
    }

    /// Every required directory must be one of the journal's `dirs`.
    pub fn validate(&self, dirs: &[PathBuf]) -> Result<(), PolicyError> {
        match self.required.iter().find(|r| !dirs.contains(r)) {
            Some(r) => Err(PolicyError::RequiredNotJournal {
                dir: r.clone(),
                dirs: dirs.to_vec(),
            }),
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
        assert_eq!(none, PolicyError::AllFailed);
        let required = DirPolicy {
            required: vec![r.to_path_buf()],
            min_redundant: 1,
        };
        assert_eq!(required.check([(a, true), (r, true)]), Ok(()));
        let lost = required.check([(a, true), (r, false)]).unwrap_err();
        assert_eq!(lost, PolicyError::RequiredOut(r.to_path_buf()));
        assert!(lost
            .to_string()
            .starts_with("required journal directory /r is out"));
        // Only required directories: no redundant minimum to meet.
        assert_eq!(required.check([(r, true)]), Ok(()));
        let two = DirPolicy {
            required: vec![],
            min_redundant: 2,
        };
        assert_eq!(two.check([(a, true), (b, true), (r, false)]), Ok(()));
        let short = two.check([(a, true), (b, false), (r, false)]).unwrap_err();
        assert_eq!(
            short,
            PolicyError::TooFew {
                live: 1,
                of: 3,
                min: 2
            }
        );
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
        assert!(stray.to_string().contains("lists /r"), "{stray}");
    }
}
