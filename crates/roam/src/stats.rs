//! Status lines: what each link of a router and each topic of a proxy carried, and how old
//! its messages were at that hop, logged every status interval and once more at shutdown.
//! They use the tracing target `roam::stats`, so `RUST_LOG=warn,roam::stats=info` keeps just
//! these. Ages are microseconds since the publisher's proxy sealed the message (see
//! `roam_net::latency` for what that means across hosts).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use roam_net::latency::{LatencyHistogram, LatencySummary};
use roam_net::link::PathStats;
use roam_net::runtime::RouterReport;
use tracing::info;

/// A latency summary as one log field: `n 1000 mean 312 std 40 min 200 p50 300 p90 350 p99
/// 500 max 900` (microseconds).
pub fn summary_field(s: &LatencySummary) -> String {
    format!(
        "n {} mean {:.0} std {:.0} min {:.0} p50 {:.0} p90 {:.0} p99 {:.0} max {:.0}",
        s.count, s.mean_us, s.std_us, s.min_us, s.p50_us, s.p90_us, s.p99_us, s.max_us
    )
}

/// A QUIC link's path estimates as one log field: `rtt_us 70210 cwnd 1048576 sent_packets
/// 9000 lost_packets 12 congestion_events 3`; `-` for TCP links (the kernel keeps those).
pub fn path_field(p: Option<&PathStats>) -> String {
    match p {
        Some(p) => format!(
            "rtt_us {} cwnd {} sent_packets {} lost_packets {} congestion_events {}",
            p.rtt_us, p.cwnd, p.sent_packets, p.lost_packets, p.congestion_events
        ),
        None => "-".into(),
    }
}

/// Logs a router's counters and, per link, what it carried and the age of its data.
pub fn log_router(r: &RouterReport) {
    let s = &r.routing;
    info!(
        target: "roam::stats",
        names = s.names,
        routers = s.routers_known,
        data_in = s.data_in,
        forwarded = s.data_forwarded,
        no_route = s.data_no_route,
        rpf_drop = s.data_rpf_drop,
        "status"
    );
    let a = &r.admission;
    info!(
        target: "roam::stats",
        pending = a.pending,
        admitted = a.admitted,
        authenticated = a.authenticated,
        failed = a.failed,
        timed_out = a.timed_out,
        evicted = a.evicted,
        refused_per_source = a.refused_per_source,
        refused_total = a.refused_total,
        retried = a.retried,
        "unauthenticated connections"
    );
    for l in &r.links {
        info!(
            target: "roam::stats",
            peer = %l.peer.name,
            kind = l.kind,
            frames_in = l.frames_in,
            frames_out = l.frames_out,
            bytes_in = l.bytes_in,
            bytes_out = l.bytes_out,
            dropped_full = l.dropped_full,
            dropped_stale = l.dropped_stale,
            closed = l.closed,
            path = ?path_field(l.path.as_ref()),
            data_age_us = ?summary_field(&l.data_age.summary()),
            "link"
        );
    }
}

/// Which way a proxy topic goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Direction {
    Export,
    Import,
}

/// One topic of a proxy. Exports: `samples` sealed and handed to the edge router, `failed`
/// that could not be sealed, `unattributed` samples dropped because their publisher was never
/// reported by DDS discovery, `age_in` how old each sample was (its DDS source timestamp)
/// when sealed. Imports: `samples` written to DDS, `refused` envelopes that did not open
/// (forged, replayed, wrong realm), `unannounced` data of a stream no exporter announced,
/// `failed` DDS writes, `age_in` at opening, `age_out` once written to the local readers.
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

/// Every topic a proxy exported or imported since it started (bounded by its configuration:
/// one entry per exported or imported topic).
#[derive(Debug, Default)]
pub struct ProxyStats {
    topics: Mutex<BTreeMap<(Direction, String), Arc<TopicStats>>>,
}

impl ProxyStats {
    /// The statistics of `topic` (a DDS topic name) in direction `dir`, created on first use.
    pub fn topic(&self, dir: Direction, topic: &str) -> Arc<TopicStats> {
        let mut t = self.topics.lock().unwrap_or_else(|p| p.into_inner());
        t.entry((dir, topic.to_string())).or_default().clone()
    }

    pub fn log(&self) {
        let t = self.topics.lock().unwrap_or_else(|p| p.into_inner());
        for ((dir, topic), s) in t.iter() {
            let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
            match dir {
                Direction::Export => info!(
                    target: "roam::stats",
                    topic = %topic,
                    samples = n(&s.samples),
                    failed = n(&s.failed),
                    unattributed = n(&s.unattributed),
                    dds_age_us = ?summary_field(&s.age_in.summary()),
                    "export"
                ),
                Direction::Import => info!(
                    target: "roam::stats",
                    topic = %topic,
                    samples = n(&s.samples),
                    refused = n(&s.refused),
                    unannounced = n(&s.unannounced),
                    failed = n(&s.failed),
                    opened_age_us = ?summary_field(&s.age_in.summary()),
                    written_age_us = ?summary_field(&s.age_out.summary()),
                    "import"
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_field_names_each_figure_or_says_there_is_none() {
        let p = PathStats {
            rtt_us: 70_210,
            cwnd: 1_048_576,
            sent_packets: 9000,
            lost_packets: 12,
            congestion_events: 3,
        };
        assert_eq!(
            path_field(Some(&p)),
            "rtt_us 70210 cwnd 1048576 sent_packets 9000 lost_packets 12 congestion_events 3"
        );
        assert_eq!(path_field(None), "-");
    }
}
