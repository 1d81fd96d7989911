//! A set of sequence numbers kept as merged inclusive ranges, bounded: what a window reports
//! lost is counted once however often it is asked for.

use std::collections::BTreeMap;

/// Ranges kept at most; beyond, the lowest are forgotten (a loss asked for again after that
/// would be counted twice, which needs more than this many separate losses).
const MAX_RANGES: usize = 1024;

#[derive(Debug, Default, Clone)]
pub struct SeqRanges {
    /// first -> last, disjoint and not adjacent.
    ranges: BTreeMap<u64, u64>,
}

impl SeqRanges {
    /// Adds `first..=last`; returns how many of its sequences were not in the set yet.
    pub fn insert(&mut self, first: u64, last: u64) -> u64 {
        if last < first {
            return 0;
        }
        let (mut lo, mut hi) = (first, last);
        let mut covered = 0u64;
        // Every range that overlaps or touches lo..=hi is merged into it.
        let touching: Vec<(u64, u64)> = self
            .ranges
            .range(..=hi.saturating_add(1))
            .rev()
            .take_while(|(_, &e)| e.saturating_add(1) >= lo)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            self.ranges.remove(&s);
            let (os, oe) = (s.max(first), e.min(last));
            if os <= oe {
                covered += oe - os + 1;
            }
            lo = lo.min(s);
            hi = hi.max(e);
        }
        self.ranges.insert(lo, hi);
        while self.ranges.len() > MAX_RANGES {
            self.ranges.pop_first();
        }
        (last - first + 1) - covered
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.ranges.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_and_touching_ranges_merge_and_count_once() {
        let mut r = SeqRanges::default();
        assert_eq!(r.insert(10, 20), 11);
        assert_eq!(r.insert(15, 25), 5);
        assert_eq!(r.insert(1, 5), 5);
        assert_eq!(r.len(), 2);
        assert_eq!(r.insert(6, 9), 4);
        assert_eq!(r.len(), 1);
        assert_eq!(r.insert(1, 25), 0);
        assert_eq!(r.insert(30, 30), 1);
        assert_eq!(r.insert(0, 40), 41 - 26);
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn the_set_stays_bounded() {
        let mut r = SeqRanges::default();
        for i in 0..(MAX_RANGES as u64 + 10) {
            r.insert(i * 3, i * 3);
        }
        assert_eq!(r.len(), MAX_RANGES);
    }
}
