//! Counters shared between the relay's tasks, and their JSON form for `--stats-json`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::Serialize;

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
    /// Chunks held for an extra retransmission timeout (TCP only).
    pub stalled_chunks: AtomicU64,
    /// Sends that failed (for example ICMP port unreachable on UDP).
    pub send_errors: AtomicU64,
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
            stalled_chunks: self.stalled_chunks.load(Relaxed),
            send_errors: self.send_errors.load(Relaxed),
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
    pub stalled_chunks: u64,
    pub send_errors: u64,
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
