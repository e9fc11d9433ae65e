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

/// File counts per size bucket, kept for the span of buckets that have held a file: most
/// directories' files are of a size or two (a tree of empty files uses bucket 0 alone), so
/// a full 41-bucket array (328 bytes) in every directory with files was mostly zeros.
/// Directories with no file below (a leaf made by mkdirs, say) hold nothing; the span is
/// dropped again when the last file below goes.
///
/// The box holds the first bucket of the span, then one count per bucket from there.
#[derive(Clone, Debug, Default)]
pub struct Hist(Option<Box<[u64]>>);

static NO_FILES: u64 = 0;

impl Hist {
    /// The buckets held: (first, counts).
    fn span(&self) -> (usize, &[u64]) {
        match &self.0 {
            Some(b) => (b[0] as usize, &b[1..]),
            None => (0, &[]),
        }
    }

    fn get(&self, i: usize) -> &u64 {
        let (lo, counts) = self.span();
        i.checked_sub(lo)
            .and_then(|k| counts.get(k))
            .unwrap_or(&NO_FILES)
    }

    /// Widens the span to hold buckets `lo..=hi`.
    fn cover(&mut self, lo: usize, hi: usize) {
        let (old_lo, counts) = self.span();
        let old_hi = old_lo + counts.len();
        if !counts.is_empty() && lo >= old_lo && hi < old_hi {
            return;
        }
        let (new_lo, new_hi) = if counts.is_empty() {
            (lo, hi + 1)
        } else {
            (lo.min(old_lo), (hi + 1).max(old_hi))
        };
        let mut b = vec![0u64; 1 + new_hi - new_lo];
        b[0] = new_lo as u64;
        b[1 + old_lo.max(new_lo) - new_lo..][..counts.len()].copy_from_slice(counts);
        self.0 = Some(b.into_boxed_slice());
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (0..BUCKETS).map(|i| self[i])
    }

    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }

    fn add(&mut self, o: &Hist) {
        let (lo, counts) = o.span();
        if counts.is_empty() {
            return;
        }
        self.cover(lo, lo + counts.len() - 1);
        for (k, c) in counts.iter().enumerate() {
            self[lo + k] += c;
        }
    }

    fn sub(&mut self, o: &Hist) {
        let (lo, counts) = o.span();
        for (k, c) in counts.iter().enumerate().filter(|(_, c)| **c != 0) {
            self[lo + k] -= c;
        }
    }

    fn clear(&mut self) {
        self.0 = None;
    }
}

impl std::ops::Index<usize> for Hist {
    type Output = u64;
    fn index(&self, i: usize) -> &u64 {
        self.get(i)
    }
}

impl std::ops::IndexMut<usize> for Hist {
    fn index_mut(&mut self, i: usize) -> &mut u64 {
        assert!(i < BUCKETS, "bucket {i} of {BUCKETS}");
        self.cover(i, i);
        let lo = self.span().0;
        match &mut self.0 {
            Some(b) => &mut b[1 + i - lo],
            None => unreachable!("covered above"),
        }
    }
}

impl PartialEq for Hist {
    fn eq(&self, o: &Hist) -> bool {
        self.iter().eq(o.iter())
    }
}

impl Eq for Hist {}

/// A subtree's totals, the directory itself included.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub files: u64,
    pub dirs: u64,
    /// Logical bytes.
    pub bytes: u64,
    /// Bytes times each file's replication.
    pub raw: u64,
    /// Directories that [`restricts`].
    pub restricted: u64,
    pub hist: Hist,
}

impl Totals {
    /// Byte sums are kept modulo 2^64: adding and later taking away the same part always
    /// cancels exactly, and a checkpoint or record claiming exabyte files cannot stop the
    /// summary with an overflow (no real namespace comes near).
    pub fn add(&mut self, o: &Totals) {
        self.files += o.files;
        self.dirs += o.dirs;
        self.bytes = self.bytes.wrapping_add(o.bytes);
        self.raw = self.raw.wrapping_add(o.raw);
        self.restricted += o.restricted;
        self.hist.add(&o.hist);
    }

    pub fn sub(&mut self, o: &Totals) {
        self.files -= o.files;
        self.dirs -= o.dirs;
        self.bytes = self.bytes.wrapping_sub(o.bytes);
        self.raw = self.raw.wrapping_sub(o.raw);
        self.restricted -= o.restricted;
        self.hist.sub(&o.hist);
    }

    /// No file below, so every bucket is zero: give the histogram's memory back.
    fn drop_empty_hist(&mut self) {
        if self.files == 0 {
            self.hist.clear();
        }
    }

    /// The totals of one file.
    pub fn of_file(len: u64, repl: u16) -> Totals {
        let mut t = Totals {
            files: 1,
            bytes: len,
            raw: len.wrapping_mul(u64::from(repl)),
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
    /// Takes `part` out of the totals, adding nothing.
    pub fn removing(part: Part) -> Patch {
        Patch {
            sub: part,
            add: Part::Nothing,
        }
    }

    pub fn apply(&self, t: &mut Totals) {
        match &self.sub {
            Part::Nothing => {}
            Part::File { len, repl } => {
                t.files -= 1;
                t.bytes = t.bytes.wrapping_sub(*len);
                t.raw = t.raw.wrapping_sub(len.wrapping_mul(u64::from(*repl)));
                t.hist[bucket(*len)] -= 1;
            }
            Part::Tree(o) => t.sub(o),
        }
        match &self.add {
            Part::Nothing => {}
            Part::File { len, repl } => {
                t.files += 1;
                t.bytes = t.bytes.wrapping_add(*len);
                t.raw = t.raw.wrapping_add(len.wrapping_mul(u64::from(*repl)));
                t.hist[bucket(*len)] += 1;
            }
            Part::Tree(o) => t.add(o),
        }
        t.drop_empty_hist();
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
    fn histograms_add_and_subtract_as_full_arrays_do() {
        // Spans that start, end and overlap at different buckets, against plain arrays.
        let spans = [(3, 5), (0, 0), (7, 12), (4, 40), (40, 40), (1, 2)];
        let mut sum = Hist::default();
        let mut dense = [0u64; BUCKETS];
        let mut parts = Vec::new();
        for (n, &(lo, hi)) in spans.iter().enumerate() {
            let mut h = Hist::default();
            for i in (lo..=hi).rev() {
                h[i] += (n * 100 + i) as u64;
                dense[i] += (n * 100 + i) as u64;
            }
            sum.add(&h);
            parts.push(h);
            assert_eq!(sum.to_vec(), dense.to_vec());
        }
        for h in &parts {
            sum.sub(h);
            for (i, d) in dense.iter_mut().enumerate() {
                *d -= h[i];
            }
            assert_eq!(sum.to_vec(), dense.to_vec());
        }
        assert_eq!(sum, Hist::default());
        assert_eq!(sum[BUCKETS - 1], 0);
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

    #[test]
    fn a_histogram_exists_only_while_files_do() {
        let mut t = Totals::of_dir(0o755);
        assert!(t.hist.0.is_none(), "an empty directory holds no histogram");
        let one = Patch {
            sub: Part::Nothing,
            add: Part::File { len: 1, repl: 1 },
        };
        one.apply(&mut t);
        assert_eq!(t.hist[0], 1);
        Patch {
            sub: Part::File { len: 1, repl: 1 },
            add: Part::Nothing,
        }
        .apply(&mut t);
        assert!(t.hist.0.is_none(), "dropped with the last file");
        assert_eq!(t, Totals::of_dir(0o755));
    }
}
