//! Counters shared between the relay's tasks, and their JSON form for `--stats-json`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::Serialize;

use crate::bottleneck::{BottleneckStats, WAIT_BUCKET_US};

/// Counters of one direction of one listener (summed over its flows or connections).
#[derive(Default)]
pub struct DirCounters {
    /// Packets (UDP) or chunks (TCP) handed to the far side.
    pub forwarded_packets: AtomicU64,
    pub forwarded_bytes: AtomicU64,
    /// Discarded by the loss model (UDP only).
    pub lost_packets: AtomicU64,
    pub lost_bytes: AtomicU64,
    /// Discarded because the direction's queue was full, or (UDP, client to target) because
    /// the flow table was full.
    pub overflow_packets: AtomicU64,
    pub overflow_bytes: AtomicU64,
    /// Discarded at the tail of the shared bottleneck's full queue (UDP with --rate-mbit),
    /// apart from the random loss above.
    pub bottleneck_dropped_packets: AtomicU64,
    pub bottleneck_dropped_bytes: AtomicU64,
    /// Chunks held for an extra retransmission timeout (TCP only).
    pub stalled_chunks: AtomicU64,
    /// Sends that failed (for example ICMP port unreachable on UDP).
    pub send_errors: AtomicU64,
    /// UDP datagrams larger than the path's MTU (--mtu), dropped.
    pub too_big_packets: AtomicU64,
}

impl DirCounters {
    pub fn add(c: &AtomicU64, n: usize) {
        c.fetch_add(n as u64, Relaxed);
    }

    pub fn snapshot(&self) -> DirStats {
        DirStats {
            forwarded_packets: self.forwarded_packets.load(Relaxed),
            forwarded_bytes: self.forwarded_bytes.load(Relaxed),
            lost_packets: self.lost_packets.load(Relaxed),
            lost_bytes: self.lost_bytes.load(Relaxed),
            overflow_packets: self.overflow_packets.load(Relaxed),
            overflow_bytes: self.overflow_bytes.load(Relaxed),
            bottleneck_dropped_packets: self.bottleneck_dropped_packets.load(Relaxed),
            bottleneck_dropped_bytes: self.bottleneck_dropped_bytes.load(Relaxed),
            stalled_chunks: self.stalled_chunks.load(Relaxed),
            send_errors: self.send_errors.load(Relaxed),
            too_big_packets: self.too_big_packets.load(Relaxed),
        }
    }
}

#[derive(Serialize)]
pub struct DirStats {
    pub forwarded_packets: u64,
    pub forwarded_bytes: u64,
    pub lost_packets: u64,
    pub lost_bytes: u64,
    pub overflow_packets: u64,
    pub overflow_bytes: u64,
    pub bottleneck_dropped_packets: u64,
    pub bottleneck_dropped_bytes: u64,
    pub stalled_chunks: u64,
    pub send_errors: u64,
    pub too_big_packets: u64,
}

/// Counters of one `--udp` or `--tcp` listener.
#[derive(Default)]
pub struct ListenerCounters {
    pub client_to_target: DirCounters,
    pub target_to_client: DirCounters,
    /// UDP flows or TCP connections opened, refused at the cap, closed.
    pub opened: AtomicU64,
    pub refused: AtomicU64,
    pub closed: AtomicU64,
    /// TCP connections whose connect to the target failed; UDP flows whose upstream socket
    /// could not be opened.
    pub upstream_failures: AtomicU64,
}

#[derive(Serialize)]
pub struct ListenerStats {
    pub proto: &'static str,
    pub listen: String,
    pub target: String,
    pub opened: u64,
    pub refused: u64,
    pub closed: u64,
    pub upstream_failures: u64,
    pub client_to_target: DirStats,
    pub target_to_client: DirStats,
}

impl ListenerCounters {
    pub fn snapshot(&self, proto: &'static str, listen: String, target: String) -> ListenerStats {
        ListenerStats {
            proto,
            listen,
            target,
            opened: self.opened.load(Relaxed),
            refused: self.refused.load(Relaxed),
            closed: self.closed.load(Relaxed),
            upstream_failures: self.upstream_failures.load(Relaxed),
            client_to_target: self.client_to_target.snapshot(),
            target_to_client: self.target_to_client.snapshot(),
        }
    }
}

/// One direction of the shared bottleneck in the stats file: cumulative counters and the
/// queueing delays (time waited before transmission began), with the histogram so that a
/// reader can subtract two snapshots of a periodically written file.
#[derive(Serialize)]
pub struct BottleneckDirStats {
    pub offered_packets: u64,
    pub offered_bytes: u64,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    pub max_backlog_packets: usize,
    pub max_backlog_bytes: usize,
    pub wait_mean_us: Option<f64>,
    pub wait_sum_us: u64,
    pub wait_p50_us: Option<u64>,
    pub wait_p99_us: Option<u64>,
    pub wait_max_us: u64,
    /// Non-empty buckets as `[upper bound in µs, packets]`: packets that waited less than the
    /// bound and at least the bound minus `wait_bucket_us`.
    pub wait_bucket_us: u64,
    pub wait_buckets: Vec<(u64, u64)>,
}

impl From<&BottleneckStats> for BottleneckDirStats {
    fn from(s: &BottleneckStats) -> Self {
        BottleneckDirStats {
            offered_packets: s.offered_packets,
            offered_bytes: s.offered_bytes,
            sent_packets: s.sent_packets,
            sent_bytes: s.sent_bytes,
            dropped_packets: s.dropped_packets,
            dropped_bytes: s.dropped_bytes,
            max_backlog_packets: s.max_backlog_packets,
            max_backlog_bytes: s.max_backlog_bytes,
            wait_mean_us: (s.sent_packets > 0)
                .then(|| s.wait_sum_us as f64 / s.sent_packets as f64),
            wait_sum_us: s.wait_sum_us,
            wait_p50_us: s.wait_quantile_us(0.5),
            wait_p99_us: s.wait_quantile_us(0.99),
            wait_max_us: s.wait_max_us,
            wait_bucket_us: WAIT_BUCKET_US,
            wait_buckets: s
                .waits
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(i, n)| ((i as u64 + 1) * WAIT_BUCKET_US, *n))
                .collect(),
        }
    }
}
