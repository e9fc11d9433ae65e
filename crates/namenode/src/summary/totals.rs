//! What a directory's summary adds up: counts, bytes, and a file-size histogram, with the
//! arithmetic to move one file or a whole subtree in or out of it.

/// Power-of-two size buckets as Recon keeps them: bucket 0 holds files under 1 KiB,
/// bucket `i` files in [2^(9+i), 2^(10+i)), and the last everything from 512 TiB up
/// (the 1 PiB bound).
pub const BUCKETS: usize = 41;

/// The histogram bucket of a file of `len` bytes.
pub fn bucket(len: u64) -> usize {
    if len < 1024 {
        0
    } else {
        ((63 - len.leading_zeros()) as usize - 9).min(BUCKETS - 1)
    }
}

/// The exclusive upper bound of bucket `i` in bytes (`u64::MAX` for the last).
pub fn bucket_limit(i: usize) -> u64 {
    if i + 1 >= BUCKETS {
        u64::MAX
    } else {
        1024u64 << i
    }
}

/// Directories whose mode does not grant r-x to owner, group and others alike. While a
/// subtree has none, every caller who may reach its top may also read all of it, and an
/// answer from the summary is the answer HDFS's permission-checked walk would give.
pub fn restricts(perm: u16) -> bool {
    perm & 0o555 != 0o555
}

/// A subtree's totals, the directory itself included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Totals {
    pub files: u64,
    pub dirs: u64,
    /// Logical bytes.
    pub bytes: u64,
    /// Bytes times each file's replication.
    pub raw: u64,
    /// Directories that [`restricts`].
    pub restricted: u64,
    pub hist: [u64; BUCKETS],
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            files: 0,
            dirs: 0,
            bytes: 0,
            raw: 0,
            restricted: 0,
            hist: [0; BUCKETS],
        }
    }
}

impl Totals {
    pub fn add(&mut self, o: &Totals) {
        self.files += o.files;
        self.dirs += o.dirs;
        self.bytes += o.bytes;
        self.raw += o.raw;
        self.restricted += o.restricted;
        for (a, b) in self.hist.iter_mut().zip(&o.hist) {
            *a += b;
        }
    }

    pub fn sub(&mut self, o: &Totals) {
        self.files -= o.files;
        self.dirs -= o.dirs;
        self.bytes -= o.bytes;
        self.raw -= o.raw;
        self.restricted -= o.restricted;
        for (a, b) in self.hist.iter_mut().zip(&o.hist) {
            *a -= b;
        }
    }

    /// The totals of one file.
    pub fn of_file(len: u64, repl: u16) -> Totals {
        let mut t = Totals {
            files: 1,
            bytes: len,
            raw: len * u64::from(repl),
            ..Default::default()
        };
        t.hist[bucket(len)] = 1;
        t
    }

    /// The totals of one empty directory with mode `perm`.
    pub fn of_dir(perm: u16) -> Totals {
        Totals {
            dirs: 1,
            restricted: u64::from(restricts(perm)),
            ..Default::default()
        }
    }
}

/// One side of a [`Patch`]: nothing, one file, or any totals.
#[derive(Clone, Debug, Default)]
pub enum Part {
    #[default]
    Nothing,
    File {
        len: u64,
        repl: u16,
    },
    Tree(Box<Totals>),
}

/// A change to a subtree's totals, applied to every directory above where it happened:
/// `sub` leaves, `add` arrives. File-sized changes are kept unboxed, so the common events
/// (a file created, grown, closed or deleted) cost no allocation.
#[derive(Clone, Debug, Default)]
pub struct Patch {
    pub sub: Part,
    pub add: Part,
}

impl Patch {
    pub fn apply(&self, t: &mut Totals) {
        match &self.sub {
            Part::Nothing => {}
            Part::File { len, repl } => {
                t.files -= 1;
                t.bytes -= len;
                t.raw -= len * u64::from(*repl);
                t.hist[bucket(*len)] -= 1;
            }
            Part::Tree(o) => t.sub(o),
        }
        match &self.add {
            Part::Nothing => {}
            Part::File { len, repl } => {
                t.files += 1;
                t.bytes += len;
                t.raw += len * u64::from(*repl);
                t.hist[bucket(*len)] += 1;
            }
            Part::Tree(o) => t.add(o),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_powers_of_two_from_one_kib() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1023), 0);
        assert_eq!(bucket(1024), 1);
        assert_eq!(bucket(2047), 1);
        assert_eq!(bucket(2048), 2);
        assert_eq!(bucket(1 << 20), 11);
        assert_eq!(bucket(1 << 49), 40);
        assert_eq!(bucket(u64::MAX), 40);
        for i in 0..BUCKETS - 1 {
            assert_eq!(bucket(bucket_limit(i) - 1), i);
            assert_eq!(bucket(bucket_limit(i)), i + 1);
        }
    }

    #[test]
    fn a_patch_moves_a_file_between_buckets() {
        let mut t = Totals::default();
        let grow = Patch {
            sub: Part::Nothing,
            add: Part::File { len: 10, repl: 3 },
        };
        grow.apply(&mut t);
        Patch {
            sub: Part::File { len: 10, repl: 3 },
            add: Part::File { len: 5000, repl: 2 },
        }
        .apply(&mut t);
        assert_eq!((t.files, t.bytes, t.raw), (1, 5000, 10_000));
        assert_eq!(t.hist[bucket(5000)], 1);
        assert_eq!(t.hist.iter().sum::<u64>(), 1);
    }
}
