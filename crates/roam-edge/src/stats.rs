//! Per-topic counters of the endpoints of one process, by direction and topic: what the
//! metrics snapshot and the status lines report.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use roam_net::latency::LatencyHistogram;

/// Which way a topic goes through this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// Out of this process into the realm (a publisher, a proxy's export).
    Export,
    /// From the realm into this process (a subscriber, a proxy's import).
    Import,
}

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
    pub refused: AtomicU64,
    pub failed: AtomicU64,
    pub unattributed: AtomicU64,
    pub unannounced: AtomicU64,
    pub age_in: LatencyHistogram,
    pub age_out: LatencyHistogram,
}

impl TopicStats {
    pub fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
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
