//! Values in numbered slots, kept in fixed-size chunks with a free list for reuse: the
//! namespace's inodes and the summary's directories.
//!
//! Chunks never move, so growing never copies the values already in (a doubling `Vec` of
//! millions of inodes copied them all, under the namespace lock), and a slot number is a
//! 4-byte handle that stays valid until the slot is freed.

const CHUNK_BITS: u32 = 13;
const CHUNK: usize = 1 << CHUNK_BITS;

pub struct Chunked<T> {
    chunks: Vec<Vec<Option<T>>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }
}

impl<T> Chunked<T> {
    /// Puts `value` in a free slot (a freed one first) and returns its number.
    pub fn insert(&mut self, value: T) -> u32 {
        self.live += 1;
        if let Some(slot) = self.free.pop() {
            *self.entry_mut(slot) = Some(value);
            return slot;
        }
        if self.chunks.last().is_none_or(|c| c.len() == CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        let n = self.chunks.len() - 1;
        let last = &mut self.chunks[n];
        last.push(Some(value));
        u32::try_from((n << CHUNK_BITS) + last.len() - 1).expect("fewer than 2^32 slots")
    }

    pub fn remove(&mut self, slot: u32) -> T {
        let value = self.entry_mut(slot).take().expect("removing a live slot");
        self.free.push(slot);
        self.live -= 1;
        value
    }

    pub fn get(&self, slot: u32) -> &T {
        self.chunks[(slot >> CHUNK_BITS) as usize][slot as usize & (CHUNK - 1)]
            .as_ref()
            .expect("slot refers to a live value")
    }

    pub fn get_mut(&mut self, slot: u32) -> &mut T {
        self.entry_mut(slot)
            .as_mut()
            .expect("slot refers to a live value")
    }

    /// Whether `slot` holds a live value.
    pub fn contains(&self, slot: u32) -> bool {
        self.chunks
            .get((slot >> CHUNK_BITS) as usize)
            .and_then(|c| c.get(slot as usize & (CHUNK - 1)))
            .is_some_and(Option::is_some)
    }

    /// The value at `slot`, if the slot is live.
    pub fn try_get_mut(&mut self, slot: u32) -> Option<&mut T> {
        self.chunks
            .get_mut((slot >> CHUNK_BITS) as usize)?
            .get_mut(slot as usize & (CHUNK - 1))?
            .as_mut()
    }

    fn entry_mut(&mut self, slot: u32) -> &mut Option<T> {
        &mut self.chunks[(slot >> CHUNK_BITS) as usize][slot as usize & (CHUNK - 1)]
    }

    /// Live slots.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// One past the highest slot handed out so far.
    pub fn end(&self) -> u32 {
        self.chunks
            .last()
            .map_or(0, |c| ((self.chunks.len() - 1) * CHUNK + c.len()) as u32)
    }

    /// Every live slot, in slot order.
    pub fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.chunks.iter().enumerate().flat_map(|(ci, c)| {
            c.iter()
                .enumerate()
                .filter(|(_, e)| e.is_some())
                .map(move |(i, _)| ((ci << CHUNK_BITS) + i) as u32)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_and_span_chunks() {
        let mut c: Chunked<u64> = Chunked::default();
        let n = CHUNK as u64 + 10;
        let slots: Vec<u32> = (0..n).map(|v| c.insert(v)).collect();
        assert_eq!(c.len(), n as usize);
        assert_eq!(c.end(), n as u32);
        assert_eq!(*c.get(slots[CHUNK]), CHUNK as u64);
        assert_eq!(c.remove(slots[3]), 3);
        assert!(c.try_get_mut(slots[3]).is_none());
        assert!(c.try_get_mut(c.end()).is_none());
        assert_eq!(c.insert(99), slots[3], "a freed slot is reused first");
        *c.get_mut(slots[3]) += 1;
        assert_eq!(*c.get(slots[3]), 100);
        assert_eq!(c.slots().count(), n as usize);
    }
}
