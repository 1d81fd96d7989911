//! What a receiver saw: latency samples, loss, duplicates and reordering, summarised the way
//! the seeds report them (mean, median, min, max, standard deviation, p99) plus an ECDF for
//! plots. Bounded: a tracker holds one bit per expected message and one latency per delivery,
//! both capped by the count the sender announced.

use serde::{Deserialize, Serialize};

/// Latency figures in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: usize,
    pub mean_us: f64,
    pub median_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    pub std_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    /// (latency_us, fraction <= it) at 101 evenly spaced fractions: the ECDF for plots.
    pub ecdf: Vec<(f64, f64)>,
}

/// Nearest-rank quantile of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

impl Summary {
    /// Summarises latencies given in microseconds.
    pub fn of(mut us: Vec<f64>) -> Summary {
        if us.is_empty() {
            return Summary::default();
        }
        us.sort_by(f64::total_cmp);
        let n = us.len() as f64;
        let mean = us.iter().sum::<f64>() / n;
        let var = us.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        Summary {
            count: us.len(),
            mean_us: mean,
            median_us: quantile(&us, 0.5),
            min_us: us[0],
            max_us: us[us.len() - 1],
            std_us: var.sqrt(),
            p90_us: quantile(&us, 0.9),
            p99_us: quantile(&us, 0.99),
            ecdf: (0..=100)
                .map(|i| {
                    let f = i as f64 / 100.0;
                    (quantile(&us, f.max(1.0 / n)), f)
                })
                .collect(),
        }
    }
}

/// Delivery counts for one stream of numbered messages.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Messages the sender sent (or was asked to).
    pub expected: u64,
    /// Distinct messages received.
    pub received: u64,
    pub lost: u64,
    /// Receptions of a message already received.
    pub duplicates: u64,
    /// Messages that arrived after a higher-numbered one.
    pub reordered: u64,
    /// Samples whose stamp could not be read (not ours, or damaged).
    pub foreign: u64,
}

/// Tracks a stream of messages numbered `0..expected`.
pub struct Tracker {
    seen: Vec<u64>,
    highest: Option<u64>,
    counts: Counts,
    latencies_us: Vec<f64>,
}

impl Tracker {
    pub fn new(expected: u64) -> Tracker {
        Tracker {
            seen: vec![0; expected.div_ceil(64) as usize],
            highest: None,
            counts: Counts {
                expected,
                ..Counts::default()
            },
            latencies_us: Vec::with_capacity(expected.min(1 << 20) as usize),
        }
    }

    /// Records message `seq` with its latency (None: do not count a latency, e.g. warm-up).
    /// Returns true when it was new.
    pub fn record(&mut self, seq: u64, latency_us: Option<f64>) -> bool {
        if seq >= self.counts.expected {
            self.counts.foreign += 1;
            return false;
        }
        let (w, b) = ((seq / 64) as usize, seq % 64);
        if self.seen[w] & (1 << b) != 0 {
            self.counts.duplicates += 1;
            return false;
        }
        self.seen[w] |= 1 << b;
        self.counts.received += 1;
        match self.highest {
            Some(h) if seq < h => self.counts.reordered += 1,
            _ => self.highest = Some(seq),
        }
        if let Some(l) = latency_us {
            self.latencies_us.push(l);
        }
        true
    }

    /// A sample that did not parse.
    pub fn foreign(&mut self) {
        self.counts.foreign += 1;
    }

    pub fn received(&self) -> u64 {
        self.counts.received
    }

    /// The counts (loss = expected - received) and the latency summary.
    pub fn finish(mut self) -> (Counts, Summary) {
        self.counts.lost = self.counts.expected - self.counts.received;
        (self.counts, Summary::of(self.latencies_us))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_one_to_hundred() {
        let s = Summary::of((1..=100).map(f64::from).collect());
        assert_eq!(s.count, 100);
        assert_eq!(s.min_us, 1.0);
        assert_eq!(s.max_us, 100.0);
        assert_eq!(s.median_us, 50.0);
        assert_eq!(s.p99_us, 99.0);
        assert!((s.mean_us - 50.5).abs() < 1e-9);
        assert!((s.std_us - 28.866).abs() < 1e-3);
        assert_eq!(s.ecdf.len(), 101);
        assert_eq!(s.ecdf[100], (100.0, 1.0));
    }

    #[test]
    fn tracker_counts_loss_duplicates_and_reordering() {
        let mut t = Tracker::new(10);
        for seq in [0, 1, 3, 2, 3, 5, 99] {
            t.record(seq, Some(1.0));
        }
        t.foreign();
        let (c, s) = t.finish();
        assert_eq!(c.received, 5);
        assert_eq!(c.lost, 5);
        assert_eq!(c.duplicates, 1);
        assert_eq!(c.reordered, 1);
        assert_eq!(c.foreign, 2);
        assert_eq!(s.count, 5);
    }

    #[test]
    fn empty_summary_is_zero() {
        assert_eq!(Summary::of(vec![]), Summary::default());
    }
}
