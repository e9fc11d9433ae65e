//! Compact storage for inode names and for owner/group strings.

use std::collections::HashMap;

/// Where a name lives in the [`NameArena`]: 8 bytes instead of a 16-byte boxed slice plus a
/// separate heap allocation per inode. The top bit of `len` says which of the arena's two
/// buffers holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct NameRef {
    off: u32,
    len: u32,
}

const BUF_BIT: u32 = 1 << 31;

impl NameRef {
    fn new(buf: usize, off: usize, len: usize) -> Self {
        NameRef {
            off: off as u32,
            len: len as u32 | if buf == 1 { BUF_BIT } else { 0 },
        }
    }
    fn buf(self) -> usize {
        usize::from(self.len & BUF_BIT != 0)
    }
    fn range(self) -> std::ops::Range<usize> {
        self.off as usize..self.off as usize + self.len()
    }
    pub fn len(self) -> usize {
        (self.len & !BUF_BIT) as usize
    }
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

/// All inode names, back to back in a buffer. Names freed by delete or rename become
/// garbage. Once it outgrows the live bytes, the live names move to the other buffer, a few
/// at a time as the namespace calls [`relocate`](Self::relocate) on them between
/// mutations. Moved in one pass under the namespace lock, 2 million names made one delete
/// take 91 ms, and every call wait for it; moved in steps, the slowest delete of the same
/// run took 3.0 ms (the one that freed the emptied buffer, which is now handed back to be
/// freed once the lock is released), the others at most 2 ms
/// (a release-build probe that, like a server, also made a 64 KiB allocation every 64
/// deletes: without any, glibc's first large allocation after a million small frees
/// merged them all, 37 ms, wherever it happened).
#[derive(Default)]
pub(crate) struct NameArena {
    bufs: [Vec<u8>; 2],
    /// The buffer new names go to.
    live: usize,
    /// Bytes freed in `bufs[live]`.
    garbage: usize,
    /// Whether the other buffer still holds names not yet relocated.
    moving: bool,
}

impl NameArena {
    pub(crate) fn add(&mut self, name: &[u8]) -> NameRef {
        append(&mut self.bufs[self.live], self.live, name)
    }

    pub(crate) fn get(&self, r: NameRef) -> &[u8] {
        &self.bufs[r.buf()][r.range()]
    }

    pub(crate) fn free(&mut self, r: NameRef) {
        // A name in the buffer being emptied goes with it.
        if r.buf() == self.live {
            self.garbage += r.len();
        }
    }

    /// True when more than half the buffer is garbage (and it is big enough to matter),
    /// and no move is under way.
    pub(crate) fn wants_compaction(&self) -> bool {
        let len = self.bufs[self.live].len();
        !self.moving && len > (1 << 20) && self.garbage * 2 > len
    }

    /// Starts moving the live names to the other buffer: from now on new names go there,
    /// and every live reference must be passed to [`relocate`](Self::relocate) before
    /// [`finish_move`](Self::finish_move).
    pub(crate) fn begin_move(&mut self) {
        let live_bytes = self.bufs[self.live].len() - self.garbage;
        self.live = 1 - self.live;
        self.bufs[self.live] = Vec::with_capacity(live_bytes + live_bytes / 8);
        self.garbage = 0;
        self.moving = true;
    }

    /// Where `r` lives once moved: a copy in the live buffer if it was in the other one.
    pub(crate) fn relocate(&mut self, r: NameRef) -> NameRef {
        if !self.moving || r.buf() == self.live {
            return r;
        }
        let [a, b] = &mut self.bufs;
        let (from, to) = if self.live == 0 { (b, a) } else { (a, b) };
        append(to, self.live, &from[r.range()])
    }

    /// Ends a move: every live reference has been relocated, so the other buffer goes. It
    /// is returned for the caller to free where no one waits on it: unmapping tens of
    /// megabytes of touched pages took 3 ms.
    #[must_use = "the emptied buffer is returned to be freed outside the namespace lock"]
    pub(crate) fn finish_move(&mut self) -> Vec<u8> {
        self.moving = false;
        std::mem::take(&mut self.bufs[1 - self.live])
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.bufs.iter().map(Vec::capacity).sum()
    }
}

/// Appends `name` to `to`, buffer number `buf`.
fn append(to: &mut Vec<u8>, buf: usize, name: &[u8]) -> NameRef {
    let off = to.len();
    assert!(
        off + name.len() <= u32::MAX as usize && name.len() < BUF_BIT as usize,
        "name arena exceeds 4 GiB"
    );
    to.extend_from_slice(name);
    NameRef::new(buf, off, name.len())
}

/// Owner and group names, each stored once and referred to by a small id.
#[derive(Default)]
pub(crate) struct Interner {
    names: Vec<String>,
    /// Looked up for the owner and group of every create: a fast hash.
    ids: HashMap<String, u32, foldhash::fast::RandomState>,
}

impl Interner {
    pub(crate) fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(s.to_string());
        self.ids.insert(s.to_string(), id);
        id
    }

    pub(crate) fn lookup(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// Every string, in id order.
    pub(crate) fn all(&self) -> &[String] {
        &self.names
    }

    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_survive_moves_made_a_few_at_a_time() {
        let mut a = NameArena::default();
        // Slots that never move (as inodes' do), each with its reference and the bytes it
        // must read back; freed slots are reused, as the inode arena reuses them.
        let mut slots: Vec<Option<(NameRef, Vec<u8>)>> = Vec::new();
        let mut free: Vec<usize> = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut cursor: Option<usize> = None;
        let mut moves = 0;
        for step in 0..600_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let pick = (x >> 8) as usize % slots.len().max(1);
            if x.is_multiple_of(2) && slots.get(pick).is_some_and(Option::is_some) {
                let (r, _) = slots[pick].take().unwrap();
                a.free(r);
                free.push(pick);
            } else {
                let name = format!("name-{step}-{}", x % 1000).into_bytes();
                let entry = Some((a.add(&name), name));
                match free.pop() {
                    Some(i) => slots[i] = entry,
                    None => slots.push(entry),
                }
            }
            // As the namespace does: a few slots visited after every change.
            match cursor {
                None if a.wants_compaction() => {
                    a.begin_move();
                    cursor = Some(0);
                    moves += 1;
                }
                None => {}
                Some(from) => {
                    let to = (from + 64).min(slots.len());
                    for (r, _) in slots[from..to].iter_mut().flatten() {
                        *r = a.relocate(*r);
                    }
                    if to == slots.len() {
                        let emptied = a.finish_move();
                        assert!(
                            emptied.capacity() > 1 << 20,
                            "the old buffer is handed back"
                        );
                        cursor = None;
                    } else {
                        cursor = Some(to);
                    }
                }
            }
            if step.is_multiple_of(997) {
                for (r, bytes) in slots.iter().flatten() {
                    assert_eq!(a.get(*r), &bytes[..], "step {step}");
                }
            }
        }
        assert!(moves >= 3, "{moves} moves");
        for (r, bytes) in slots.iter().flatten() {
            assert_eq!(a.get(*r), &bytes[..]);
            assert_eq!(r.len(), bytes.len());
        }
    }

    #[test]
    fn interner_dedups() {
        let mut i = Interner::default();
        assert_eq!(i.intern("hdfs"), i.intern("hdfs"));
        assert_ne!(i.intern("a"), i.intern("b"));
        assert_eq!(i.name(i.lookup("a").unwrap()), "a");
    }
}
