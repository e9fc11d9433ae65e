//! Compact storage for inode names and for owner/group strings.

use std::collections::HashMap;

/// Where a name lives in the [`NameArena`]: 8 bytes instead of a 16-byte boxed slice plus a
/// separate heap allocation per inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct NameRef {
    off: u32,
    len: u32,
}

impl NameRef {
    pub fn len(self) -> usize {
        self.len as usize
    }
    pub fn is_empty(self) -> bool {
        self.len == 0
    }
}

/// All inode names, back to back in one buffer. Names freed by delete or rename become
/// garbage, reclaimed by [`NameArena::compact`] when it outgrows the live bytes.
#[derive(Default)]
pub struct NameArena {
    bytes: Vec<u8>,
    garbage: usize,
}

impl NameArena {
    pub fn add(&mut self, name: &[u8]) -> NameRef {
        let off = self.bytes.len();
        assert!(
            off + name.len() <= u32::MAX as usize,
            "name arena exceeds 4 GiB"
        );
        self.bytes.extend_from_slice(name);
        NameRef {
            off: off as u32,
            len: name.len() as u32,
        }
    }

    pub fn get(&self, r: NameRef) -> &[u8] {
        &self.bytes[r.off as usize..(r.off + r.len) as usize]
    }

    pub fn free(&mut self, r: NameRef) {
        self.garbage += r.len as usize;
    }

    /// True when more than half the buffer is garbage (and it is big enough to matter).
    pub fn wants_compaction(&self) -> bool {
        self.bytes.len() > (1 << 20) && self.garbage * 2 > self.bytes.len()
    }

    /// Copies every live name (as listed by `live`) into a fresh buffer and returns the new
    /// references in the same order.
    pub fn compact(&mut self, live: &[NameRef]) -> Vec<NameRef> {
        let total: usize = live.iter().map(|r| r.len as usize).sum();
        let mut fresh = NameArena {
            bytes: Vec::with_capacity(total),
            garbage: 0,
        };
        let out = live.iter().map(|&r| fresh.add(self.get(r))).collect();
        *self = fresh;
        out
    }

    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
    }
}

/// Owner and group names, each stored once and referred to by a small id.
#[derive(Default)]
pub struct Interner {
    names: Vec<String>,
    /// Looked up for the owner and group of every create: a fast hash.
    ids: HashMap<String, u32, foldhash::fast::RandomState>,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(s.to_string());
        self.ids.insert(s.to_string(), id);
        id
    }

    pub fn lookup(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }

    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// Every string, in id order.
    pub fn all(&self) -> &[String] {
        &self.names
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arena_round_trip_and_compaction() {
        let mut a = NameArena::default();
        let x = a.add(b"alpha");
        let y = a.add(b"beta");
        a.free(x);
        let fresh = a.compact(&[y]);
        assert_eq!(a.get(fresh[0]), b"beta");
        assert_eq!(a.heap_bytes(), 4);
    }

    #[test]
    fn interner_dedups() {
        let mut i = Interner::default();
        assert_eq!(i.intern("hdfs"), i.intern("hdfs"));
        assert_ne!(i.intern("a"), i.intern("b"));
        assert_eq!(i.name(i.lookup("a").unwrap()), "a");
    }
}
