//! The rest of ClientProtocol's administration through the service: storage reports,
//! corrupt-block listing, metaSave, and the calls whose HDFS effect Ferrite has nothing to
//! apply to (refreshNodes without host files, finalizeUpgrade with no upgrade, the
//! balancer's bandwidth with no balancer).

use std::fmt::Write as _;

use super::{Admitted, NameNodeService, Operation};
use crate::error::FsError;
use crate::fsck::report::block_name;
use crate::namespace::Caller;

/// HDFS's `dfs.namenode.max-corrupt-file-blocks-returned`.
const MAX_CORRUPT_RETURNED: usize = 500;

impl NameNodeService {
    /// `listCorruptFileBlocks`: blocks under `path` no good replica is left of, with their
    /// files, `MAX_CORRUPT_RETURNED` at a time; `cookie` is how many were handed out
    /// before (HDFS's cookie is an index too).
    pub fn corrupt_file_blocks(
        &self,
        who: &Admitted,
        path: &str,
        cookie: Option<&str>,
    ) -> Result<(Vec<(String, String)>, String), FsError> {
        who.check(Operation::ListCorruptFileBlocks);
        let skip: usize = cookie.and_then(|c| c.parse().ok()).unwrap_or(0);
        let su = Caller::superuser(&self.superuser);
        let files = {
            let ns = self.ns.read();
            let Some(top) = ns.lookup(&su, path)? else {
                return Ok((Vec::new(), skip.to_string()));
            };
            let mut files = Vec::new();
            let mut stack = vec![(ns.path_of(top), top)];
            while let Some((p, s)) = stack.pop() {
                if ns.inode(s).is_dir() {
                    for (name, c) in ns.children_names(s) {
                        stack.push((crate::namespace::path::child_of(&p, &name), c));
                    }
                } else {
                    files.push(p);
                }
            }
            files.sort();
            files
        };
        let pool = &self.identity().block_pool_id;
        let mut found = Vec::new();
        for f in files {
            let Some(facts) = self.fsck_file(who, &f)? else {
                continue;
            };
            for b in facts.blocks.iter().filter(|b| b.live.is_empty()) {
                found.push((f.clone(), block_name(pool, b)));
            }
            if found.len() >= skip + MAX_CORRUPT_RETURNED {
                break;
            }
        }
        let page: Vec<_> = found
            .into_iter()
            .skip(skip)
            .take(MAX_CORRUPT_RETURNED)
            .collect();
        let next = (skip + page.len()).to_string();
        Ok((page, next))
    }

    /// `metaSave`: HDFS writes the block manager's state to a file of that name in its
    /// log directory; Ferrite writes it into the first name directory's `metasave/`.
    pub fn meta_save(&self, who: &Admitted, filename: &str) -> Result<(), FsError> {
        who.check(Operation::MetaSave);
        let name = std::path::Path::new(filename)
            .file_name()
            .ok_or_else(|| FsError::IllegalArgument(format!("bad file name {filename}")))?;
        let mut text = String::new();
        let stats = self.fs_stats();
        let nodes = self.datanode_report(super::NodeFilter::All);
        {
            let ns = self.ns.read();
            let (inodes, blocks) = (ns.file_count() + ns.dir_count(), ns.block_count());
            let _ = writeln!(text, "{inodes} files and directories, {blocks} blocks");
        }
        let _ = writeln!(text, "Live Datanodes: {}", nodes.len());
        let _ = writeln!(
            text,
            "Metasave: Blocks waiting for reconstruction: {}",
            stats.under_replicated
        );
        let _ = writeln!(text, "Corrupt blocks: {}", stats.corrupt_blocks);
        let _ = writeln!(text, "Missing blocks: {}", stats.missing_blocks);
        let _ = writeln!(
            text,
            "Metasave: Blocks being deleted: {}",
            stats.pending_deletion_blocks
        );
        for n in &nodes {
            let _ = writeln!(
                text,
                "{} cap={} used={} remaining={} blocks={}",
                n.id.xfer_addr(),
                n.capacity,
                n.dfs_used,
                n.remaining,
                n.blocks
            );
        }
        let dir = self
            .name_dirs
            .first()
            .map(|d| d.join("metasave"))
            .ok_or_else(|| FsError::Io("metaSave: no name directory".into()))?;
        std::fs::create_dir_all(&dir)
            .and_then(|_| std::fs::write(dir.join(name), text))
            .map_err(|e| FsError::internal("metaSave", e))
    }
}
