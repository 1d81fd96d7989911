//! The arithmetic of `roam-loadgen --topics N`, apart from DDS so it can be tested: which
//! topic and sequence number each write carries and when it is due, how a warm-up message
//! names its topic, and the sink's per-topic and aggregate figures.

use std::time::{Duration, Instant};

use roam_bench::delivery::{Counts, Summary, Tracker};
use roam_bench::ros_msgs::Kind;
use serde::Serialize;

use super::WARMUP;

/// The most topics one load generator handles: enough for the lab's 1,000, and well below
/// the 2^29 a warm-up sequence number can name.
pub const MAX_TOPICS: usize = 10_000;

/// Sequence numbers with this bit (and not [`WARMUP`]'s) are sent while the path settles
/// (`--settle-ms`): the sink ignores them.
pub const SETTLE: u64 = 1 << 61;

/// Warm-up message `k` of topic `topic`: the warm-up bit, the topic in bits 32-60, `k` in the
/// low 32 bits, so the one echo topic tells the source which topic's path is up.
pub fn warmup_seq(topic: usize, k: u64) -> u64 {
    WARMUP | ((topic as u64 & 0x1fff_ffff) << 32) | (k & 0xffff_ffff)
}

/// The topic a warm-up sequence number names (`None`: not a warm-up message).
pub fn warmup_topic(seq: u64) -> Option<usize> {
    (seq & WARMUP != 0 && seq != u64::MAX).then_some(((seq >> 32) & 0x1fff_ffff) as usize)
}

/// What a sink does with a sample by its sequence number.
#[derive(Debug, PartialEq, Eq)]
pub enum Seq {
    /// Reflect it on the echo topic.
    Warmup,
    /// Ignore it.
    Settle,
    Measured(u64),
}

pub fn classify(seq: u64) -> Seq {
    if seq & WARMUP != 0 {
        Seq::Warmup
    } else if seq & SETTLE != 0 {
        Seq::Settle
    } else {
        Seq::Measured(seq)
    }
}

/// Writes of the settling part: every topic's messages of `settle` at `rate` (at least one
/// round when asked for any).
pub fn settle_writes(settle: Duration, rate: f64, topics: usize) -> u64 {
    if settle.is_zero() || rate <= 0.0 {
        return 0;
    }
    (settle.as_secs_f64() * rate).ceil().max(1.0) as u64 * topics as u64
}

/// How long the source waits between warm-up rounds: 100 ms as the one-topic mode, longer
/// with many topics (1 ms a topic), so that a thousand topics' warm-up is not a burst of
/// 10,000 messages a second while 2,000 endpoints are still being discovered.
pub fn warmup_period(topics: usize) -> Duration {
    Duration::from_millis(100).max(Duration::from_millis(topics as u64))
}

/// Write `j` of the measured part (0-based over all topics): its topic and that topic's
/// sequence number. Topics take turns, so each gets its `count` messages in order.
pub fn slot(j: u64, topics: usize) -> (usize, u64) {
    let n = topics.max(1) as u64;
    ((j % n) as usize, j / n)
}

/// When write `j` is due: `rate` is per topic, and the writes of one period are spread
/// evenly over it (not a burst of every topic at once, which no set of independent nodes
/// would send). `None`: unpaced.
pub fn due(t0: Instant, rate: f64, topics: usize, j: u64) -> Option<Instant> {
    if rate <= 0.0 {
        return None;
    }
    let total_rate = rate * topics.max(1) as f64;
    Some(t0 + Duration::from_secs_f64(j as f64 / total_rate))
}

/// One topic's figures in the sink's report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopicFigures {
    pub received: u64,
    pub lost: u64,
    pub duplicates: u64,
    pub reordered: u64,
    pub median_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

/// The sink's report with `--topics`.
#[derive(Debug, Serialize)]
pub struct SinkReport {
    pub role: &'static str,
    pub kind: Kind,
    pub topics: usize,
    /// Summed over the topics.
    pub counts: Counts,
    /// One-way latency of every message of every topic.
    pub one_way: Summary,
    /// Messages per second (all topics) between the first and the last arrival.
    pub rate: f64,
    pub mbit_s: f64,
    pub seconds: f64,
    /// Topics that delivered every message, and topics that delivered none.
    pub topics_complete: usize,
    pub topics_silent: usize,
    /// The topics' own p99s: how evenly the latency falls on them.
    pub topic_p99_us: Summary,
    /// Samples this sink could not keep (its queue was full): loss on the sink's side, not
    /// the system's.
    pub dropped_in_sink: u64,
    pub per_topic: Vec<TopicFigures>,
}

/// Adds `b` into `a`.
fn add(a: &mut Counts, b: &Counts) {
    a.expected += b.expected;
    a.received += b.received;
    a.lost += b.lost;
    a.duplicates += b.duplicates;
    a.reordered += b.reordered;
    a.foreign += b.foreign;
}

/// What the sink accumulated while it ran.
pub struct Received {
    pub kind: Kind,
    pub trackers: Vec<Tracker>,
    /// Every new message's one-way latency (µs), all topics.
    pub latencies_us: Vec<f64>,
    pub bytes: u64,
    /// Arrival (Unix ns) of the first and the last new message.
    pub first_ns: Option<u64>,
    pub last_ns: u64,
    pub dropped_in_sink: u64,
}

impl Received {
    pub fn report(self) -> SinkReport {
        let topics = self.trackers.len();
        let mut counts = Counts::default();
        let mut per_topic = Vec::with_capacity(topics);
        for t in self.trackers {
            let (c, s) = t.finish();
            add(&mut counts, &c);
            per_topic.push(TopicFigures {
                received: c.received,
                lost: c.lost,
                duplicates: c.duplicates,
                reordered: c.reordered,
                median_us: s.median_us,
                p99_us: s.p99_us,
                max_us: s.max_us,
            });
        }
        let seconds = self
            .first_ns
            .map_or(0.0, |f| self.last_ns.saturating_sub(f) as f64 / 1e9);
        let per_s = |v: f64| if seconds > 0.0 { v / seconds } else { 0.0 };
        let mut topic_p99_us = Summary::of(
            per_topic
                .iter()
                .filter(|t| t.received > 0)
                .map(|t| t.p99_us)
                .collect(),
        );
        topic_p99_us.ecdf.clear();
        SinkReport {
            role: "sink",
            kind: self.kind,
            topics,
            rate: per_s(counts.received.saturating_sub(1) as f64),
            mbit_s: per_s(self.bytes as f64 * 8.0 / 1e6),
            seconds,
            topics_complete: per_topic
                .iter()
                .filter(|t| t.lost == 0 && t.received > 0)
                .count(),
            topics_silent: per_topic.iter().filter(|t| t.received == 0).count(),
            counts,
            one_way: Summary::of(self.latencies_us),
            topic_p99_us,
            dropped_in_sink: self.dropped_in_sink,
            per_topic,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_names_its_topic() {
        for (topic, k) in [(0, 0), (7, 3), (MAX_TOPICS - 1, u32::MAX as u64)] {
            let seq = warmup_seq(topic, k);
            assert_eq!(warmup_topic(seq), Some(topic));
        }
        assert_eq!(warmup_topic(12), None);
        // The value a sample without a stamp is given.
        assert_eq!(warmup_topic(u64::MAX), None);
        // A large k never spills into the topic.
        assert_eq!(warmup_topic(warmup_seq(5, u64::MAX >> 1)), Some(5));
    }

    #[test]
    fn sequence_numbers_say_what_a_sample_is() {
        assert_eq!(classify(warmup_seq(MAX_TOPICS - 1, 9)), Seq::Warmup);
        assert_eq!(classify(SETTLE | 12), Seq::Settle);
        assert_eq!(classify(12), Seq::Measured(12));
        assert_eq!(settle_writes(Duration::from_secs(2), 100.0, 50), 10_000);
        assert_eq!(settle_writes(Duration::from_millis(1), 10.0, 3), 3);
        assert_eq!(settle_writes(Duration::ZERO, 100.0, 50), 0);
        assert_eq!(settle_writes(Duration::from_secs(1), 0.0, 50), 0);
    }

    #[test]
    fn topics_take_turns_and_spread_over_the_period() {
        assert_eq!(slot(0, 3), (0, 0));
        assert_eq!(slot(4, 3), (1, 1));
        assert_eq!(slot(5, 1), (0, 5));
        let t0 = Instant::now();
        // 1,000 topics at 10 Hz: one write every 100 µs.
        let d = due(t0, 10.0, 1000, 3).map(|t| t - t0);
        assert_eq!(d, Some(Duration::from_micros(300)));
        // One topic: the one-topic mode's schedule.
        assert_eq!(
            due(t0, 2.0, 1, 4).map(|t| t - t0),
            Some(Duration::from_secs(2))
        );
        assert_eq!(due(t0, 0.0, 10, 4), None);
    }

    #[test]
    fn warmup_rounds_slow_down_with_many_topics() {
        assert_eq!(warmup_period(1), Duration::from_millis(100));
        assert_eq!(warmup_period(1000), Duration::from_secs(1));
    }

    #[test]
    fn sink_report_sums_topics() {
        let mut a = Tracker::new(3);
        let mut b = Tracker::new(3);
        let c = Tracker::new(3);
        for seq in 0..3 {
            a.record(seq, Some(100.0));
        }
        b.record(0, Some(300.0));
        b.record(0, Some(300.0));
        let r = Received {
            kind: Kind::String,
            trackers: vec![a, b, c],
            latencies_us: vec![100.0, 100.0, 100.0, 300.0],
            bytes: 1000,
            first_ns: Some(1_000_000_000),
            last_ns: 3_000_000_000,
            dropped_in_sink: 2,
        }
        .report();
        assert_eq!(r.topics, 3);
        assert_eq!(r.counts.expected, 9);
        assert_eq!(r.counts.received, 4);
        assert_eq!(r.counts.lost, 5);
        assert_eq!(r.counts.duplicates, 1);
        assert_eq!(r.topics_complete, 1);
        assert_eq!(r.topics_silent, 1);
        assert_eq!(r.one_way.count, 4);
        assert_eq!(r.one_way.max_us, 300.0);
        assert_eq!(r.topic_p99_us.count, 2);
        assert_eq!(r.per_topic[1].lost, 2);
        assert!((r.rate - 1.5).abs() < 1e-9);
        assert!((r.mbit_s - 0.004).abs() < 1e-9);
        assert_eq!(r.dropped_in_sink, 2);
    }

    #[test]
    fn empty_sink_report() {
        let r = Received {
            kind: Kind::Image,
            trackers: vec![Tracker::new(2)],
            latencies_us: Vec::new(),
            bytes: 0,
            first_ns: None,
            last_ns: 0,
            dropped_in_sink: 0,
        }
        .report();
        assert_eq!(r.counts.lost, 2);
        assert_eq!((r.rate, r.seconds), (0.0, 0.0));
        assert_eq!(r.topics_silent, 1);
    }
}
