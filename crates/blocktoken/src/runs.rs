//! The block-id set inside a token identifier: runs of `(first, stride, count)`.
//!
//! A file's blocks get ids one after another while it is written alone, so a whole file is
//! usually one run of stride 1 (three numbers), whatever its length. Two writers taking
//! turns give stride 2, still one run. Ids with no pattern cost a run each; to keep every
//! block's copy of the token small (and a reply's size linear in its blocks, not
//! quadratic as in the seed's patch), a reply is split into groups of at most
//! [`MAX_RUNS`] runs, one token per group.

/// Most runs one identifier holds: 16 runs are at most ~300 bytes of varints.
pub(crate) const MAX_RUNS: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub first: u64,
    pub stride: u64,
    pub count: u64,
}

impl Run {
    fn single(id: u64) -> Run {
        Run {
            first: id,
            stride: 0,
            count: 1,
        }
    }

    /// The id this run would take next, if it can grow.
    fn next(&self) -> Option<u64> {
        self.stride
            .checked_mul(self.count)
            .and_then(|d| self.first.checked_add(d))
    }

    /// Adds `id` if it continues the run; a single id takes any larger id as its stride.
    /// The run's own last id again (a reply's last block listed twice) is already in.
    fn extend(&mut self, id: u64) -> bool {
        if self.stride * (self.count - 1) + self.first == id {
            return true;
        }
        if self.count == 1 && id > self.first {
            self.stride = id - self.first;
            self.count = 2;
            return true;
        }
        if self.count >= 2 && self.next() == Some(id) {
            self.count += 1;
            return true;
        }
        false
    }

    pub fn contains(&self, id: u64) -> bool {
        if id < self.first {
            return false;
        }
        let d = id - self.first;
        match self.stride {
            0 => d == 0,
            s => d % s == 0 && d / s < self.count,
        }
    }
}

/// Runs for `ids` in the order given (a reply's order), greedily.
pub(crate) fn runs_of(ids: impl IntoIterator<Item = u64>) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for id in ids {
        if !runs.last_mut().is_some_and(|r| r.extend(id)) {
            runs.push(Run::single(id));
        }
    }
    runs
}

/// Splits `ids` into consecutive groups of at most `max_runs` runs each, returned as
/// index ranges into `ids` with their runs. A file written alone is one group.
pub(crate) fn groups(ids: &[u64], max_runs: usize) -> Vec<(std::ops::Range<usize>, Vec<Run>)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut runs: Vec<Run> = Vec::new();
    for (i, &id) in ids.iter().enumerate() {
        if let Some(r) = runs.last_mut() {
            if r.extend(id) {
                continue;
            }
        }
        if runs.len() == max_runs.max(1) {
            out.push((start..i, std::mem::take(&mut runs)));
            start = i;
        }
        runs.push(Run::single(id));
    }
    if !runs.is_empty() {
        out.push((start..ids.len(), runs));
    }
    out
}

/// The flat form an identifier carries: three numbers per run.
pub(crate) fn flatten(runs: &[Run]) -> Vec<u64> {
    runs.iter()
        .flat_map(|r| [r.first, r.stride, r.count])
        .collect()
}

/// Whether a flat run list covers `id`. A list whose length is not a multiple of three
/// covers nothing (only a forged identifier could have one, and those fail the HMAC first).
pub(crate) fn covers(flat: &[u64], id: u64) -> bool {
    flat.len() % 3 == 0
        && flat.chunks_exact(3).any(|c| {
            Run {
                first: c[0],
                stride: c[1],
                count: c[2],
            }
            .contains(id)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covered(ids: &[u64]) -> Vec<u64> {
        flatten(&runs_of(ids.iter().copied()))
    }

    #[test]
    fn consecutive_ids_are_one_run() {
        let ids: Vec<u64> = (1_073_741_825..1_073_742_825).collect();
        let runs = runs_of(ids.iter().copied());
        assert_eq!(runs.len(), 1);
        let flat = flatten(&runs);
        assert!(ids.iter().all(|&id| covers(&flat, id)));
        assert!(!covers(&flat, 1_073_741_824));
        assert!(!covers(&flat, 1_073_742_825));
    }

    #[test]
    fn interleaved_writers_make_a_strided_run() {
        let ids = [100, 102, 104, 106];
        let flat = covered(&ids);
        assert_eq!(flat, vec![100, 2, 4]);
        assert!(!covers(&flat, 101) && !covers(&flat, 108) && covers(&flat, 106));
    }

    #[test]
    fn scattered_ids_are_exact() {
        let ids = [50, 7, 9, 1000, 3];
        let flat = covered(&ids);
        for id in ids {
            assert!(covers(&flat, id), "{id}");
        }
        for id in [0, 1, 2, 4, 5, 6, 8, 10, 11, 49, 51, 999, 1001] {
            assert!(!covers(&flat, id), "{id}");
        }
    }

    #[test]
    fn single_block_and_huge_ids() {
        let flat = covered(&[u64::MAX]);
        assert!(covers(&flat, u64::MAX) && !covers(&flat, u64::MAX - 1));
        let flat = covered(&[u64::MAX - 1, u64::MAX]);
        assert!(covers(&flat, u64::MAX) && covers(&flat, u64::MAX - 1));
    }

    #[test]
    fn a_repeated_last_id_adds_no_run() {
        assert_eq!(covered(&[7, 8, 9, 9]), vec![7, 1, 3]);
        assert_eq!(covered(&[7, 7]), vec![7, 0, 1]);
    }

    #[test]
    fn malformed_lists_cover_nothing() {
        assert!(!covers(&[5, 1], 5));
        assert!(!covers(&[], 5));
    }

    #[test]
    fn groups_bound_runs_and_keep_order() {
        // Every id its own run (descending ids never extend a run).
        let ids: Vec<u64> = (0..40).rev().map(|i| i * 10).collect();
        let gs = groups(&ids, 16);
        assert_eq!(gs.len(), 3);
        let mut next = 0;
        for (range, runs) in &gs {
            assert_eq!(range.start, next);
            assert!(runs.len() <= 16);
            let flat = flatten(runs);
            for &id in &ids[range.clone()] {
                assert!(covers(&flat, id));
            }
            next = range.end;
        }
        assert_eq!(next, ids.len());
        // A file written alone: one group.
        let ids: Vec<u64> = (1..=1000).collect();
        assert_eq!(groups(&ids, 16).len(), 1);
        assert!(groups(&[], 16).is_empty());
    }
}
