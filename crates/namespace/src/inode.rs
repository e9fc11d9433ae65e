//! The inode record and the chunked arena that holds them.
//!
//! Inodes are addressed by a 32-bit slot; directories keep their children's slots sorted by
//! name bytes, so lookups are binary searches and paged listings are slices. The arena grows
//! in fixed chunks, so a huge namespace never pays a doubling reallocation (or its 2x peak).

use super::children::Children;
pub use super::children::Slot;
use super::names::NameRef;

/// Java reserves inode ids below 16385; the root is 16385.
pub const ROOT_INODE_ID: u64 = 16385;
pub const ROOT_SLOT: Slot = 0;

/// Permission bits Hadoop keeps (rwx for user, group, other, plus sticky).
pub const PERM_MASK: u16 = 0o1777;
pub const STICKY: u16 = 0o1000;

pub struct Inode {
    pub id: u64,
    pub mtime: i64,
    pub atime: i64,
    pub body: Body,
    pub name: NameRef,
    pub parent: Slot,
    pub owner: u32,
    pub group: u32,
    pub perm: u16,
    /// A file's replication factor (0 for directories). Kept here rather than in
    /// [`FileData`], whose 16 bytes let [`Body`] keep its tag in the directory variant's
    /// spare values: the body is 24 bytes and the inode 72.
    pub replication: u16,
}

pub enum Body {
    /// Children slots, sorted by name bytes.
    Dir(Children),
    File(FileData),
}

pub struct FileData {
    pub block_size: u64,
    /// Length, blocks and the writer's lease, boxed together: an empty closed file (length
    /// 0, no blocks) pays 8 bytes for all three.
    extra: Option<Box<FileExtra>>,
}

/// One block of a file as the namespace records it. Where its replicas live is volatile
/// state (learned from DataNode reports) and is kept by the block manager, not here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub id: u64,
    /// Generation stamp: bumped whenever the block is (re)allocated, so that stale
    /// replicas of an older incarnation can be told apart.
    pub gs: u64,
    /// Bytes in the block: 0 while it is being written, fixed when the next block is
    /// allocated or the file is closed.
    pub len: u64,
}

pub struct FileExtra {
    len: u64,
    /// Blocks in file order.
    pub blocks: Vec<Block>,
    /// Present while the file is open for write. Boxed: every file with blocks has a
    /// `FileExtra`, and few are open.
    pub uc: Option<Box<UnderConstruction>>,
}

impl FileData {
    pub fn new(
        len: u64,
        block_size: u64,
        blocks: Vec<Block>,
        uc: Option<UnderConstruction>,
    ) -> Self {
        let uc = uc.map(Box::new);
        let extra = (len > 0 || !blocks.is_empty() || uc.is_some())
            .then(|| Box::new(FileExtra { len, blocks, uc }));
        FileData { block_size, extra }
    }

    /// Bytes in the file (while it is open, those of its completed blocks).
    pub fn len(&self) -> u64 {
        self.extra.as_ref().map_or(0, |e| e.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets the length. A file without a box has length 0; a non-zero length on a file
    /// with no blocks (the planner never makes one, but a journal could say so) gets a box,
    /// so that replay keeps exactly what the record says.
    pub fn set_len(&mut self, len: u64) {
        match &mut self.extra {
            Some(e) => e.len = len,
            None if len == 0 => {}
            None => {
                self.extra = Some(Box::new(FileExtra {
                    len,
                    blocks: Vec::new(),
                    uc: None,
                }))
            }
        }
    }

    pub fn uc(&self) -> Option<&UnderConstruction> {
        self.extra.as_deref()?.uc.as_deref()
    }

    pub fn uc_mut(&mut self) -> Option<&mut UnderConstruction> {
        self.extra.as_deref_mut()?.uc.as_deref_mut()
    }

    pub fn blocks(&self) -> &[Block] {
        self.extra
            .as_ref()
            .map(|e| e.blocks.as_slice())
            .unwrap_or(&[])
    }

    /// The block list, created on first use (an open file always has `extra`).
    pub fn blocks_mut(&mut self) -> &mut Vec<Block> {
        &mut self
            .extra
            .get_or_insert_with(|| {
                Box::new(FileExtra {
                    len: 0,
                    blocks: Vec::new(),
                    uc: None,
                })
            })
            .blocks
    }

    /// Opens a closed file for write again (append).
    pub fn reopen(&mut self, uc: UnderConstruction) {
        let len = self.len();
        self.blocks_mut();
        if let Some(e) = self.extra.as_mut() {
            e.uc = Some(Box::new(uc));
            e.len = len;
        }
    }

    /// Ends the write. Returns who was writing, if the file was open.
    pub fn close(&mut self) -> Option<UnderConstruction> {
        let extra = self.extra.as_mut()?;
        let was = extra.uc.take().map(|uc| *uc);
        if extra.blocks.is_empty() && extra.len == 0 {
            self.extra = None;
        }
        was
    }
}

pub struct UnderConstruction {
    pub client_name: String,
    pub client_machine: String,
    /// Set while a truncate that ends inside a block waits for block recovery.
    pub cut: Option<Cut>,
}

/// A truncate inside the last block, waiting for block recovery to carry it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The bytes the last block keeps.
    pub keep: u64,
    /// Copy-on-truncate: the block as it was, which a snapshot keeps whole. Recovery copies
    /// its first `keep` bytes into the file's new last block instead of cutting it.
    pub copy_of: Option<Block>,
}

impl Inode {
    pub fn is_dir(&self) -> bool {
        matches!(self.body, Body::Dir(_))
    }

    pub fn children(&self) -> Option<&Children> {
        match &self.body {
            Body::Dir(c) => Some(c),
            Body::File(_) => None,
        }
    }

    pub fn file(&self) -> Option<&FileData> {
        match &self.body {
            Body::File(f) => Some(f),
            Body::Dir(_) => None,
        }
    }
}

/// The namespace's inodes, each in a slot.
pub type Arena = crate::chunked::Chunked<Inode>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inode_stays_compact() {
        // The per-file budget is well under 150 bytes including the name and the parent's
        // child slot; the record itself must not creep up unnoticed.
        assert!(
            std::mem::size_of::<Option<Inode>>() <= 72,
            "{}",
            std::mem::size_of::<Option<Inode>>()
        );
    }
}
