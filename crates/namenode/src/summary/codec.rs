//! The summary checkpoint: the tree's shape and per-entry figures with the txid they
//! reflect, under one CRC32C. Totals are not stored: loading recounts them bottom-up,
//! which costs less than reading them would and cannot disagree with the entries.
//!
//! Layout (little-endian): `FSUM` v1, txid u64, clock i64, then the root directory:
//! a directory is perm u16, updated i64, child count u32, then per child its name
//! (u32 length + UTF-8) and kind: 0 file (len u64, repl u16, open u8 [, block count u32,
//! lengths u64…]) or 1 directory (recursively). Last, CRC32C of everything before it.

use std::io::{self, Write};
use std::path::Path;

use super::arena::{DirId, ROOT};
use super::tree::{File, NodeRef, Tree, MAX_NAME};
use super::Summary;
use crate::journal::codec::{DecodeError, Reader};

const MAGIC: &[u8; 4] = b"FSUM";
const VERSION: u8 = 1;
/// The checkpoint's file name in the summary directory.
pub const FILE_NAME: &str = "summary.ckpt";

/// The checkpoint in memory (tests; the summary task streams it with [`write()`]).
pub fn encode(s: &Summary) -> Vec<u8> {
    let mut out = Vec::new();
    write(s, &mut out).expect("writing to memory cannot fail");
    out
}

/// Streams the checkpoint into `w` in chunks of about `CHUNK` bytes; returns its size.
pub fn write(s: &Summary, w: &mut impl Write) -> io::Result<u64> {
    let tree = s.tree();
    let mut out = Out {
        w,
        buf: Vec::with_capacity(CHUNK + 4096),
        crc: 0,
        total: 0,
    };
    out.buf.extend_from_slice(MAGIC);
    out.buf.push(VERSION);
    out.buf.extend_from_slice(&s.txid().to_le_bytes());
    out.buf.extend_from_slice(&tree.clock.to_le_bytes());
    encode_dir(tree, ROOT, &mut out)?;
    out.spill()?;
    out.w.write_all(&out.crc.to_le_bytes())?;
    Ok(out.total + 4)
}

/// Bytes gathered before they are written out.
const CHUNK: usize = 1 << 20;

/// The checkpoint's bytes on their way out, with the running CRC of what has gone.
struct Out<'w, W: Write> {
    w: &'w mut W,
    buf: Vec<u8>,
    crc: u32,
    total: u64,
}

impl<W: Write> Out<'_, W> {
    fn spill(&mut self) -> io::Result<()> {
        self.crc = crc32c::crc32c_append(self.crc, &self.buf);
        self.total += self.buf.len() as u64;
        self.w.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }
}

fn encode_dir<W: Write>(tree: &Tree, id: DirId, o: &mut Out<W>) -> io::Result<()> {
    let d = tree.dir(id);
    o.buf.extend_from_slice(&d.perm.to_le_bytes());
    o.buf.extend_from_slice(&d.updated.to_le_bytes());
    o.buf
        .extend_from_slice(&(d.children.len() as u32).to_le_bytes());
    for (name, node) in d.children.iter() {
        let out = &mut o.buf;
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        match node {
            NodeRef::File(f) => {
                out.push(0);
                out.extend_from_slice(&f.len.to_le_bytes());
                out.extend_from_slice(&f.repl.to_le_bytes());
                match f.open {
                    None => out.push(0),
                    Some(blocks) => {
                        out.push(1);
                        out.extend_from_slice(&(blocks.len() as u32).to_le_bytes());
                        for b in blocks.iter() {
                            out.extend_from_slice(&b.to_le_bytes());
                        }
                    }
                }
            }
            NodeRef::Dir(c) => {
                out.push(1);
                encode_dir(tree, c, o)?;
            }
        }
        if o.buf.len() >= CHUNK {
            o.spill()?;
        }
    }
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("{path}: not a summary checkpoint (bad magic or version)")]
    NotACheckpoint { path: String },
    #[error("{path}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Checksum {
        path: String,
        stored: u32,
        computed: u32,
    },
    #[error("{path}: malformed at byte {offset}: {why}")]
    Malformed {
        path: String,
        offset: usize,
        why: DecodeError,
    },
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

pub fn decode(bytes: &[u8], path: &str) -> Result<Summary, CheckpointError> {
    if bytes.len() < 4 + 1 + 16 + 4 || &bytes[..4] != MAGIC || bytes[4] != VERSION {
        return Err(CheckpointError::NotACheckpoint { path: path.into() });
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
    let computed = crc32c::crc32c(body);
    if stored != computed {
        return Err(CheckpointError::Checksum {
            path: path.into(),
            stored,
            computed,
        });
    }
    let mut r = Reader::new(&body[5..]);
    let malformed = |r: &Reader, why| CheckpointError::Malformed {
        path: path.into(),
        offset: body.len() - r.remaining(),
        why,
    };
    let head = (|| Ok::<_, DecodeError>((r.u64()?, r.i64()?)))();
    let (txid, clock) = head.map_err(|e| malformed(&r, e))?;
    let root = (|| Ok::<_, DecodeError>((r.u16()?, r.i64()?)))();
    let (perm, updated) = root.map_err(|e| malformed(&r, e))?;
    let mut tree = Tree::new(perm, updated);
    tree.clock = clock;
    decode_dir(&mut r, &mut tree, ROOT).map_err(|e| malformed(&r, e))?;
    if r.remaining() != 0 {
        return Err(malformed(&r, DecodeError::Trailing(r.remaining())));
    }
    Ok(Summary::from_parts(tree, txid))
}

/// Reads directory `id`'s children (its perm and time were read with its entry).
fn decode_dir(r: &mut Reader, tree: &mut Tree, id: DirId) -> Result<(), DecodeError> {
    let n = r.u32()? as usize;
    // Every child takes at least 6 bytes: a lying count cannot make us reserve much.
    tree.dir_mut(id).children.reserve(n.min(r.remaining() / 6));
    for _ in 0..n {
        let name = r.str()?;
        if name.len() > MAX_NAME {
            return Err(DecodeError::BadLength(name.len()));
        }
        match r.u8()? {
            0 => {
                let len = r.u64()?;
                let repl = r.u16()?;
                let open = match r.u8()? {
                    0 => None,
                    _ => {
                        let k = r.u32()? as usize;
                        if k > r.remaining() / 8 {
                            return Err(DecodeError::BadLength(k));
                        }
                        Some((0..k).map(|_| r.u64()).collect::<Result<_, _>>()?)
                    }
                };
                tree.add_file(id, &name, File { len, repl, open });
            }
            1 => {
                let (perm, updated) = (r.u16()?, r.i64()?);
                let d = tree.add_dir(id, &name, perm, updated);
                decode_dir(r, tree, d)?;
            }
            k => return Err(DecodeError::BadTag(k)),
        }
    }
    tree.recount(id);
    Ok(())
}

/// The checkpoint in `dir`, `Ok(None)` if there is none.
pub fn load(dir: &Path) -> Result<Option<Summary>, CheckpointError> {
    let path = dir.join(FILE_NAME);
    match crate::atomic_file::map_committed(&path) {
        Ok(bytes) => decode(&bytes, &path.display().to_string()).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CheckpointError::Read {
            path: path.display().to_string(),
            source,
        }),
    }
}
