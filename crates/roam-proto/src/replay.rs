//! A sliding anti-replay window over sequence numbers (the IPsec/WireGuard construction).
//!
//! Accepts each sequence number at most once, tolerates reordering of up to
//! [`ReplayWindow::SIZE`] positions (best-effort datagrams may arrive out of order, and a
//! reliable stream's messages sent again after a loss arrive behind newer ones: 4,096
//! positions are four seconds of a 1 kHz topic), and rejects anything older. Memory is fixed:
//! 512 bytes per window.

const WORDS: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayWindow {
    /// Highest sequence number accepted so far (0: none yet; real sequences start at 1).
    top: u64,
    /// Bit `i` of the ring set means `seq` with `seq % SIZE == i` inside the window was seen.
    bits: [u64; WORDS],
}

impl Default for ReplayWindow {
    fn default() -> Self {
        Self {
            top: 0,
            bits: [0; WORDS],
        }
    }
}

/// Why a sequence number was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayVerdict {
    Fresh,
    Duplicate,
    TooOld,
}

impl ReplayWindow {
    pub const SIZE: u64 = (WORDS * 64) as u64;

    /// Tells whether `seq` would be accepted, without recording it. Call [`Self::record`]
    /// only after the envelope has been authenticated, so forgeries cannot move the window.
    pub fn check(&self, seq: u64) -> ReplayVerdict {
        if seq == 0 {
            return ReplayVerdict::TooOld;
        }
        if seq > self.top {
            return ReplayVerdict::Fresh;
        }
        if self.top - seq >= Self::SIZE {
            return ReplayVerdict::TooOld;
        }
        if self.bit(seq) {
            ReplayVerdict::Duplicate
        } else {
            ReplayVerdict::Fresh
        }
    }

    /// Records an authenticated sequence number that [`Self::check`] found fresh.
    pub fn record(&mut self, seq: u64) {
        if seq > self.top {
            let advance = seq - self.top;
            if advance >= Self::SIZE {
                self.bits = [0; WORDS];
            } else {
                // Clear the slots that now fall out of the window, one per position advanced.
                for s in self.top + 1..=seq {
                    self.clear(s);
                }
            }
            self.top = seq;
        }
        self.set(seq);
    }

    pub fn top(&self) -> u64 {
        self.top
    }

    fn slot(seq: u64) -> (usize, u64) {
        let i = seq % Self::SIZE;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    fn bit(&self, seq: u64) -> bool {
        let (w, m) = Self::slot(seq);
        self.bits[w] & m != 0
    }

    fn set(&mut self, seq: u64) {
        let (w, m) = Self::slot(seq);
        self.bits[w] |= m;
    }

    fn clear(&mut self, seq: u64) {
        let (w, m) = Self::slot(seq);
        self.bits[w] &= !m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(w: &mut ReplayWindow, seq: u64) -> ReplayVerdict {
        let v = w.check(seq);
        if v == ReplayVerdict::Fresh {
            w.record(seq);
        }
        v
    }

    #[test]
    fn in_order_and_duplicates() {
        let mut w = ReplayWindow::default();
        assert_eq!(accept(&mut w, 0), ReplayVerdict::TooOld);
        for s in 1..5000 {
            assert_eq!(accept(&mut w, s), ReplayVerdict::Fresh);
            assert_eq!(accept(&mut w, s), ReplayVerdict::Duplicate);
        }
    }

    #[test]
    fn reordering_inside_window() {
        let mut w = ReplayWindow::default();
        assert_eq!(accept(&mut w, 100), ReplayVerdict::Fresh);
        assert_eq!(accept(&mut w, 50), ReplayVerdict::Fresh);
        assert_eq!(accept(&mut w, 50), ReplayVerdict::Duplicate);
        assert_eq!(
            accept(&mut w, 100 + ReplayWindow::SIZE),
            ReplayVerdict::Fresh
        );
        assert_eq!(accept(&mut w, 100), ReplayVerdict::TooOld);
        assert_eq!(accept(&mut w, 101), ReplayVerdict::Fresh);
        assert_eq!(accept(&mut w, 101), ReplayVerdict::Duplicate);
        // A big jump clears everything.
        assert_eq!(accept(&mut w, 1_000_000), ReplayVerdict::Fresh);
        assert_eq!(accept(&mut w, 999_999), ReplayVerdict::Fresh);
        assert_eq!(accept(&mut w, 999_999), ReplayVerdict::Duplicate);
    }

    #[test]
    fn matches_a_set_model() {
        // Compare with an exact model on a pseudo-random sequence of arrivals.
        let mut w = ReplayWindow::default();
        let mut seen = std::collections::HashSet::new();
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let top = w.top();
            let seq = (top + (x % 200)).saturating_sub(x % 1500).max(1);
            let expect = if top >= ReplayWindow::SIZE && seq <= top - ReplayWindow::SIZE {
                ReplayVerdict::TooOld
            } else if seen.contains(&seq) {
                ReplayVerdict::Duplicate
            } else {
                ReplayVerdict::Fresh
            };
            assert_eq!(accept(&mut w, seq), expect, "seq {seq} top {top}");
            if expect == ReplayVerdict::Fresh {
                seen.insert(seq);
            }
        }
    }
}
