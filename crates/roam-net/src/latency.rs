//! How old messages are when they reach a hop: a fixed-size histogram of microseconds that
//! many threads record into without a lock, so every hop on the data path can be measured
//! ("every hop is measured") at the cost of a few relaxed atomic additions per message.
//!
//! Ages come from the envelope's send time (the publisher's clock) and this host's clock:
//! exact within one host, and across hosts only as good as their clock synchronisation
//! (NTP: about a millisecond; PTP: microseconds). A time in the future counts as age 0; a
//! forged one cannot do more than skew this histogram (the buckets are bounded).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// Values below this are counted exactly (1 µs buckets).
const LINEAR: u64 = 64;
/// Sub-buckets per power of two above [`LINEAR`]: about 6% relative resolution.
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;
/// Powers of two covered above `LINEAR` (2^6 .. 2^38 µs, about 76 hours); anything older is
/// counted in the last bucket.
const OCTAVES: u64 = 32;
const BUCKETS: usize = (LINEAR + OCTAVES * SUB) as usize;

/// Microseconds since the Unix epoch on this host's clock.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

fn bucket_of(us: u64) -> usize {
    if us < LINEAR {
        return us as usize;
    }
    let octave = 63 - u64::from(us.leading_zeros()); // >= 6
    let sub = (us >> (octave - u64::from(SUB_BITS))) & (SUB - 1);
    let i = LINEAR + (octave - 6) * SUB + sub;
    (i as usize).min(BUCKETS - 1)
}

/// The smallest value a bucket holds and the first value of the next one.
fn bucket_range(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < LINEAR {
        return (i, i + 1);
    }
    let octave = (i - LINEAR) / SUB + 6;
    let sub = (i - LINEAR) % SUB;
    let width = 1u64 << (octave - u64::from(SUB_BITS));
    let low = (1u64 << octave) + sub * width;
    (low, low + width)
}

/// Ages in microseconds, recorded concurrently. 4.6 KB once it has counted anything,
/// whatever it counts; nothing before (a proxy keeps two per topic it carries, and an
/// exported topic never records into one of them).
pub struct LatencyHistogram {
    buckets: OnceLock<Box<[AtomicU64]>>,
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self {
            buckets: OnceLock::new(),
            sum: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
        }
    }
}

impl std::fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LatencyHistogram")
            .field(&self.summary())
            .finish()
    }
}

impl LatencyHistogram {
    pub fn record(&self, us: u64) {
        let buckets = self
            .buckets
            .get_or_init(|| (0..BUCKETS).map(|_| AtomicU64::new(0)).collect());
        buckets[bucket_of(us)].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(us, Ordering::Relaxed);
        self.min.fetch_min(us, Ordering::Relaxed);
        self.max.fetch_max(us, Ordering::Relaxed);
    }

    /// Records the age of something sent at `sent_us` (microseconds since the epoch).
    pub fn record_since(&self, sent_us: u64) {
        self.record(now_us().saturating_sub(sent_us));
    }

    /// Records the age of an envelope from its header's send time (ignored if it has none).
    pub fn record_envelope(&self, envelope: &[u8]) {
        if let Some(t) = roam_proto::envelope::peek_send_time(envelope) {
            self.record_since(t);
        }
    }

    /// [`Self::record_envelope`] at a time the caller read already (one clock read for a
    /// batch of envelopes).
    pub fn record_envelope_at(&self, envelope: &[u8], now_us: u64) {
        if let Some(t) = roam_proto::envelope::peek_send_time(envelope) {
            self.record(now_us.saturating_sub(t));
        }
    }

    /// A plain copy of the counts: the non-empty buckets, the total and the extremes. Cheap
    /// (one relaxed load per bucket), so a status report can take it at any time.
    pub fn snapshot(&self) -> LatencySnapshot {
        let Some(counts) = self.buckets.get() else {
            return LatencySnapshot::default();
        };
        let buckets: Vec<Bucket> = counts
            .iter()
            .enumerate()
            .filter_map(|(i, b)| {
                let count = b.load(Ordering::Relaxed);
                (count > 0).then(|| Bucket {
                    le_us: bucket_le(i),
                    count,
                })
            })
            .collect();
        let count = buckets.iter().map(|b| b.count).sum();
        if count == 0 {
            return LatencySnapshot::default();
        }
        let (mut min_us, mut max_us) = (
            self.min.load(Ordering::Relaxed),
            self.max.load(Ordering::Relaxed),
        );
        if min_us > max_us {
            // A first age is being recorded right now: its bucket counts, its extremes do
            // not yet. The buckets' bounds stand in.
            min_us = buckets
                .first()
                .map_or(0, |b| bucket_range(bucket_of(b.le_us)).0);
            max_us = buckets.last().map_or(0, |b| b.le_us);
        }
        LatencySnapshot {
            buckets,
            count,
            sum_us: self.sum.load(Ordering::Relaxed),
            min_us,
            max_us,
        }
    }

    /// Count, mean, extremes and quantiles of what was recorded so far (see
    /// [`LatencySnapshot::summary`]).
    pub fn summary(&self) -> LatencySummary {
        self.snapshot().summary()
    }
}

/// The largest age (µs, inclusive) bucket `i` holds; `u64::MAX` for the last one, which also
/// takes everything older than the histogram covers.
fn bucket_le(i: usize) -> u64 {
    if i + 1 >= BUCKETS {
        u64::MAX
    } else {
        bucket_range(i).1 - 1
    }
}

/// The upper bound (µs, inclusive) of every bucket a [`LatencyHistogram`] has, in order; the
/// last is `u64::MAX`. Coarser buckets for an export format (Prometheus `le`, say) lose
/// nothing when their bounds are taken from this list: e.g. `2^k - 1` for every `k >= 6`.
pub fn bucket_bounds_us() -> impl Iterator<Item = u64> {
    (0..BUCKETS).map(bucket_le)
}

/// One bucket of a [`LatencySnapshot`]: `count` ages at most `le_us` and above the previous
/// bucket's bound (see [`bucket_bounds_us`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    pub le_us: u64,
    pub count: u64,
}

/// What a [`LatencyHistogram`] held at one moment, as plain data: its non-empty buckets in
/// order, how many ages it counted, their sum, and the extremes (all 0 when empty).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatencySnapshot {
    pub buckets: Vec<Bucket>,
    pub count: u64,
    /// Wraps around on absurd ages (a forged send time decades old), like any counter.
    pub sum_us: u64,
    pub min_us: u64,
    pub max_us: u64,
}

impl LatencySnapshot {
    /// Count, mean, extremes and quantiles (quantiles and the standard deviation to the
    /// buckets' resolution, about 6%).
    pub fn summary(&self) -> LatencySummary {
        let n = self.count;
        if n == 0 {
            return LatencySummary::default();
        }
        let mean = self.sum_us as f64 / n as f64;
        let (min, max) = (self.min_us as f64, self.max_us as f64);
        // A bucket's values are taken at its middle, clamped to what was seen.
        let mid = |b: &Bucket| {
            let (lo, hi) = bucket_range(bucket_of(b.le_us));
            // max/min rather than clamp: no panic even if the extremes were inconsistent.
            ((lo + hi - 1) as f64 / 2.0).max(min).min(max)
        };
        let quantile = |q: f64| {
            let rank = ((n as f64 * q).ceil() as u64).clamp(1, n);
            let mut seen = 0;
            for b in &self.buckets {
                seen += b.count;
                if seen >= rank {
                    return mid(b);
                }
            }
            max
        };
        let var = self
            .buckets
            .iter()
            .map(|b| b.count as f64 * (mid(b) - mean).powi(2))
            .sum::<f64>()
            / n as f64;
        LatencySummary {
            count: n,
            mean_us: mean,
            std_us: var.sqrt(),
            min_us: min,
            p50_us: quantile(0.5),
            p90_us: quantile(0.9),
            p99_us: quantile(0.99),
            max_us: max,
        }
    }
}

/// What a [`LatencyHistogram`] holds, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_us: f64,
    pub std_us: f64,
    pub min_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for us in (0..100_000u64).chain([1 << 30, 1 << 40, u64::MAX]) {
            let b = bucket_of(us);
            assert!(b >= last, "bucket order at {us}");
            last = b;
            let (lo, hi) = bucket_range(b);
            if b < BUCKETS - 1 {
                assert!(lo <= us && us < hi, "{us} outside bucket {b} [{lo}, {hi})");
                // Relative resolution: a bucket is at most 1/16 of its values wide.
                assert!((hi - lo) * SUB <= lo.max(LINEAR), "bucket {b} too wide");
            }
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn a_histogram_takes_its_buckets_only_when_it_first_counts() {
        let h = LatencyHistogram::default();
        assert_eq!(h.snapshot(), LatencySnapshot::default());
        assert!(h.buckets.get().is_none());
        h.record(250);
        assert_eq!(h.buckets.get().map(|b| b.len()), Some(BUCKETS));
        let s = h.snapshot();
        assert_eq!((s.count, s.min_us, s.max_us), (1, 250, 250));
    }

    #[test]
    fn summary_matches_the_values() {
        let h = LatencyHistogram::default();
        assert_eq!(h.summary(), LatencySummary::default());
        for us in 1..=10_000u64 {
            h.record(us);
        }
        let s = h.summary();
        assert_eq!(s.count, 10_000);
        assert_eq!((s.min_us, s.max_us), (1.0, 10_000.0));
        assert!((s.mean_us - 5000.5).abs() < 1e-9);
        for (got, want) in [(s.p50_us, 5000.0), (s.p90_us, 9000.0), (s.p99_us, 9900.0)] {
            assert!((got - want).abs() / want < 0.07, "quantile {got} vs {want}");
        }
        // Uniform on 1..=10000: standard deviation 2886.8.
        assert!(
            (s.std_us - 2886.8).abs() / 2886.8 < 0.05,
            "std {}",
            s.std_us
        );
    }

    #[test]
    fn a_snapshot_holds_every_count_in_its_bucket() {
        let h = LatencyHistogram::default();
        assert_eq!(h.snapshot(), LatencySnapshot::default());
        for us in [0, 5, 5, 63, 64, 65, 1000, 1_000_000, u64::MAX] {
            h.record(us);
        }
        let s = h.snapshot();
        assert_eq!(s.count, 9);
        assert_eq!((s.min_us, s.max_us), (0, u64::MAX));
        assert_eq!(s.buckets.iter().map(|b| b.count).sum::<u64>(), 9);
        assert_eq!(s.buckets[1], Bucket { le_us: 5, count: 2 });
        // Bounds are inclusive upper ones, strictly increasing, and each age sits in the
        // first bucket whose bound reaches it.
        let bounds: Vec<u64> = bucket_bounds_us().collect();
        assert_eq!(bounds.len(), BUCKETS);
        assert!(bounds.windows(2).all(|w| w[0] < w[1]));
        for (us, b) in [(63, 63), (64, 67), (65, 67), (1000, 1023)] {
            let at = s.buckets.iter().find(|x| x.le_us >= us).unwrap();
            assert_eq!(at.le_us, b, "age {us}");
        }
        assert_eq!(s.buckets.last().unwrap().le_us, u64::MAX);
        assert!(s.buckets.iter().all(|b| bounds.contains(&b.le_us)));
        // Powers of two minus one are bounds: per-octave buckets lose nothing.
        for k in 6..38 {
            assert!(bounds.contains(&((1u64 << k) - 1)), "2^{k} - 1");
        }
        assert_eq!(s.summary(), h.summary());
    }

    #[test]
    fn absurd_ages_stay_bounded() {
        let h = LatencyHistogram::default();
        h.record(u64::MAX);
        h.record_since(now_us() + 1_000_000); // from the future: age 0
        h.record_envelope(&[1, 2, 3]); // not an envelope: ignored
        let s = h.summary();
        assert_eq!(s.count, 2);
        assert_eq!(s.min_us, 0.0);
        assert_eq!(s.max_us, u64::MAX as f64);
    }

    #[test]
    fn an_envelope_age_at_a_given_time() {
        use roam_proto::envelope::{MIN_LEN, VERSION};
        let mut env = vec![0u8; MIN_LEN];
        env[0] = VERSION;
        env[52..60].copy_from_slice(&1_000u64.to_be_bytes());
        let h = LatencyHistogram::default();
        h.record_envelope_at(&env, 1_250);
        h.record_envelope_at(&env, 10); // sent "later" than now: age 0
        h.record_envelope_at(&env[..10], 5_000); // not an envelope: ignored
        let s = h.summary();
        assert_eq!((s.count, s.min_us, s.max_us), (2, 0.0, 250.0));
    }

    #[test]
    fn threads_record_without_losing_counts() {
        let h = std::sync::Arc::new(LatencyHistogram::default());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let h = h.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000u64 {
                        h.record(i * (t + 1));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(h.summary().count, 40_000);
    }
}
