//! Per-topic counters of the endpoints of one process, by direction and topic: what the
//! metrics snapshot and the status lines report.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use roam_net::latency::LatencyHistogram;

pub use crate::metrics::Direction;
use crate::metrics::{Ages, Topic, TopicDrops, TopicSource};

/// One topic in one direction. Exports: `samples` sealed and handed to the router, `failed`
/// that could not be sealed or sent, `unattributed` samples dropped because their publisher
/// was never reported by DDS discovery, `age_in` how old each sample was (its DDS source
/// timestamp) when sealed. Imports: `samples` delivered (a proxy: written to DDS),
/// `refused` envelopes that did not open (forged, replayed, wrong realm), `unannounced` data
/// of a stream no announcer named in time, `failed` deliveries, `age_in` at opening,
/// `age_out` once delivered.
#[derive(Debug, Default)]
pub struct TopicStats {
    pub samples: AtomicU64,
    /// Payload bytes of the samples counted in `samples`.
    pub bytes: AtomicU64,
    /// The largest payload, and `u64::MAX` less the smallest (0 before the first: a
    /// `fetch_max` keeps both without a lock).
    pub max_size: AtomicU64,
    pub inv_min_size: AtomicU64,
    pub refused: AtomicU64,
    pub failed: AtomicU64,
    pub unattributed: AtomicU64,
    pub unannounced: AtomicU64,
    /// Messages the proxy's rules dropped (either direction).
    pub ruled: AtomicU64,
    /// Export: samples of a keep-last topic dropped from a full backlog for newer ones, as the
    /// topic's DDS history would (see `crate::backlog`).
    pub overwritten: AtomicU64,
    /// Messages of recoverable streams that never arrived ([`crate::recovery`]). Import:
    /// gaps given up; export: messages subscribers asked for after the window let them go.
    pub lost: AtomicU64,
    /// Import: messages that arrived only because they were asked for again; export:
    /// messages sent again on request.
    pub recovered: AtomicU64,
    pub age_in: LatencyHistogram,
    pub age_out: LatencyHistogram,
}

impl TopicStats {
    pub fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        if n > 0 {
            counter.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// One sample of `len` payload bytes carried: counted in `samples`, `bytes` and the sizes.
    pub fn carried(&self, len: usize) {
        let len = len as u64;
        self.samples.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(len, Ordering::Relaxed);
        self.max_size.fetch_max(len, Ordering::Relaxed);
        self.inv_min_size
            .fetch_max(u64::MAX - len, Ordering::Relaxed);
    }

    /// The snapshot's view of this topic (relaxed loads: each counter is exact, the set is
    /// as of about now).
    pub fn snapshot(&self, direction: Direction, name: &str) -> Topic {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Topic {
            name: name.to_string(),
            direction,
            samples: n(&self.samples),
            bytes: n(&self.bytes),
            max_size: (n(&self.inv_min_size) > 0).then(|| n(&self.max_size)),
            min_size: match n(&self.inv_min_size) {
                0 => None,
                inv => Some(u64::MAX - inv),
            },
            drops: TopicDrops {
                refused: n(&self.refused),
                failed: n(&self.failed),
                unattributed: n(&self.unattributed),
                unannounced: n(&self.unannounced),
                ruled: n(&self.ruled),
                overwritten: n(&self.overwritten),
                lost: n(&self.lost),
            },
            recovered: n(&self.recovered),
            age_in: Ages::from(&self.age_in),
            age_out: (direction == Direction::Import).then(|| Ages::from(&self.age_out)),
        }
    }
}

/// Every topic a process exported or imported since it started (bounded by what it was
/// configured or asked to carry: one entry per topic and direction).
#[derive(Debug, Default)]
pub struct TopicRegistry {
    topics: Mutex<BTreeMap<(Direction, String), Arc<TopicStats>>>,
}

impl TopicRegistry {
    /// The counters of `topic` in direction `dir`, created on first use and shared by every
    /// endpoint of that topic and direction in the process.
    pub fn topic(&self, dir: Direction, topic: &str) -> Arc<TopicStats> {
        let mut t = self.topics.lock().unwrap_or_else(|p| p.into_inner());
        t.entry((dir, topic.to_string())).or_default().clone()
    }

    /// Every topic's counters, in order.
    pub fn all(&self) -> Vec<(Direction, String, Arc<TopicStats>)> {
        let t = self.topics.lock().unwrap_or_else(|p| p.into_inner());
        t.iter()
            .map(|((d, n), s)| (*d, n.clone(), s.clone()))
            .collect()
    }
}

impl TopicSource for TopicRegistry {
    fn topics(&self) -> Vec<Topic> {
        self.all()
            .into_iter()
            .map(|(dir, name, s)| s.snapshot(dir, &name))
            .collect()
    }
}

#[cfg(test)]
mod carried_tests {
    use super::*;

    #[test]
    fn carried_samples_count_their_bytes_and_the_extreme_sizes() {
        let t = TopicStats::default();
        let s = t.snapshot(Direction::Export, "rt/a");
        assert_eq!(
            (s.samples, s.bytes, s.max_size, s.min_size),
            (0, 0, None, None)
        );
        for len in [10, 3, 0, 7] {
            t.carried(len);
        }
        let s = t.snapshot(Direction::Export, "rt/a");
        assert_eq!((s.samples, s.bytes), (4, 20));
        assert_eq!((s.max_size, s.min_size), (Some(10), Some(0)));
    }
}
