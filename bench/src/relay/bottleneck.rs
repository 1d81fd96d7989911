//! The pure core of the relay's shared bottleneck: one direction of a link of fixed rate with
//! a drop-tail FIFO in front of it, crossed by every UDP flow of every listener (so two paths
//! through one relay compete for it, like two flows on a robot's uplink).
//!
//! A FIFO served at a constant rate knows, when a packet arrives, when that packet will have
//! been sent: when the packets ahead of it are sent, plus its own transmission time. So the
//! core holds no packets, only their finish times and sizes: [`Bottleneck::offer`] admits a
//! packet and returns its departure (the shell then hands the packet to its flow's delay line
//! as if it arrived there at that instant), or drops it at the tail when the queue is full.
//! It performs no I/O and never reads a clock: every call takes `now`, so a test drives it
//! with made-up instants.
//!
//! The model (see `docs/wan-relay.md`):
//! - rate: a packet of `n` bytes occupies the link for `ceil(n * 8 / rate)`; the bytes are
//!   the UDP payload (no IP/UDP headers);
//! - queue: a packet is held from its arrival until its last bit is sent (the one being sent
//!   counts, as in a router's buffer); an arrival that would take the held packets over
//!   `max_packets` or the held bytes over `max_bytes` is dropped (drop-tail: never one already
//!   queued);
//! - no priorities, no per-flow fairness: first come, first served, as on a plain uplink.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Width of a bucket of the queueing-delay histogram.
pub const WAIT_BUCKET_US: u64 = 500;
/// Buckets up to this many microseconds; longer waits land in the last bucket.
const WAIT_RANGE_US: u64 = 10_000_000;

/// Parameters of one direction of the bottleneck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BottleneckConfig {
    /// Service rate in bits per second of UDP payload; at least 1.
    pub rate_bps: u64,
    /// Most packets held (waiting or being sent); `None`: no bound in packets.
    pub max_packets: Option<usize>,
    /// Most bytes held (waiting or being sent); `None`: no bound in bytes.
    pub max_bytes: Option<usize>,
}

/// What happened to an offered packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Queued: its last bit leaves at `departure`, after `waited` behind the packets ahead.
    Sent {
        departure: Instant,
        waited: Duration,
    },
    /// Dropped at the tail: the queue was full.
    Dropped,
}

/// Counters of one direction, cumulative since the start. Percentiles come from `waits`, the
/// histogram of queueing delays (the time a packet waited before its own transmission began).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BottleneckStats {
    pub offered_packets: u64,
    pub offered_bytes: u64,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    /// The most packets and bytes ever held at once (each maximum on its own).
    pub max_backlog_packets: usize,
    pub max_backlog_bytes: usize,
    pub wait_sum_us: u64,
    pub wait_max_us: u64,
    /// `waits[i]`: packets that waited in `[i, i + 1) x WAIT_BUCKET_US` microseconds; the last
    /// bucket also holds everything longer.
    pub waits: Vec<u64>,
}

impl Default for BottleneckStats {
    fn default() -> Self {
        Self {
            offered_packets: 0,
            offered_bytes: 0,
            sent_packets: 0,
            sent_bytes: 0,
            dropped_packets: 0,
            dropped_bytes: 0,
            max_backlog_packets: 0,
            max_backlog_bytes: 0,
            wait_sum_us: 0,
            wait_max_us: 0,
            waits: vec![0; (WAIT_RANGE_US / WAIT_BUCKET_US) as usize + 1],
        }
    }
}

impl BottleneckStats {
    /// The smallest bucket bound (microseconds) under which at least `q` of the packets sent
    /// waited; `None` before any was sent.
    pub fn wait_quantile_us(&self, q: f64) -> Option<u64> {
        let total: u64 = self.waits.iter().sum();
        if total == 0 {
            return None;
        }
        let want = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, n) in self.waits.iter().enumerate() {
            seen += n;
            if seen >= want {
                return Some((i as u64 + 1) * WAIT_BUCKET_US);
            }
        }
        None
    }
}

/// One direction of the shared bottleneck. See the module documentation.
pub struct Bottleneck {
    cfg: BottleneckConfig,
    /// Finish time and size of every packet not yet completely sent, oldest first.
    held: VecDeque<(Instant, usize)>,
    held_bytes: usize,
    /// When the link finishes sending everything admitted so far.
    busy_until: Option<Instant>,
    stats: BottleneckStats,
}

impl Bottleneck {
    pub fn new(cfg: BottleneckConfig) -> Self {
        Self {
            cfg: BottleneckConfig {
                rate_bps: cfg.rate_bps.max(1),
                ..cfg
            },
            held: VecDeque::new(),
            held_bytes: 0,
            busy_until: None,
            stats: BottleneckStats::default(),
        }
    }

    /// Admits or drops a packet of `len` bytes that arrived at `now`.
    pub fn offer(&mut self, now: Instant, len: usize) -> Admission {
        self.release(now);
        self.stats.offered_packets += 1;
        self.stats.offered_bytes += len as u64;
        let too_many = self
            .cfg
            .max_packets
            .is_some_and(|m| self.held.len() + 1 > m);
        let too_big = self
            .cfg
            .max_bytes
            .is_some_and(|m| self.held_bytes.saturating_add(len) > m);
        if too_many || too_big {
            self.stats.dropped_packets += 1;
            self.stats.dropped_bytes += len as u64;
            return Admission::Dropped;
        }
        // An arrival stamped before the last one (two tasks racing) still queues behind it.
        let start = self.busy_until.map_or(now, |b| b.max(now));
        let departure = start + self.transmission(len);
        self.busy_until = Some(departure);
        self.held.push_back((departure, len));
        self.held_bytes += len;
        let waited = start.saturating_duration_since(now);
        let s = &mut self.stats;
        s.sent_packets += 1;
        s.sent_bytes += len as u64;
        s.max_backlog_packets = s.max_backlog_packets.max(self.held.len());
        s.max_backlog_bytes = s.max_backlog_bytes.max(self.held_bytes);
        let us = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        s.wait_sum_us = s.wait_sum_us.saturating_add(us);
        s.wait_max_us = s.wait_max_us.max(us);
        let last = s.waits.len() - 1;
        s.waits[((us / WAIT_BUCKET_US) as usize).min(last)] += 1;
        Admission::Sent { departure, waited }
    }

    /// Forgets the packets completely sent by `now`.
    fn release(&mut self, now: Instant) {
        while let Some(&(finish, len)) = self.held.front() {
            if finish > now {
                break;
            }
            self.held.pop_front();
            self.held_bytes -= len;
        }
    }

    /// How long the link takes to send `len` bytes (rounded up to the nanosecond, so the
    /// rate is never exceeded).
    fn transmission(&self, len: usize) -> Duration {
        let bits = len as u128 * 8 * 1_000_000_000;
        let ns = bits.div_ceil(self.cfg.rate_bps as u128);
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// Packets and bytes held at `now` (waiting or being sent).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn backlog(&mut self, now: Instant) -> (usize, usize) {
        self.release(now);
        (self.held.len(), self.held_bytes)
    }

    pub fn stats(&self) -> &BottleneckStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// 8 Mbit/s: a 1000-byte packet takes exactly 1 ms.
    fn cfg(max_packets: Option<usize>, max_bytes: Option<usize>) -> BottleneckConfig {
        BottleneckConfig {
            rate_bps: 8_000_000,
            max_packets,
            max_bytes,
        }
    }

    fn departure(a: Admission) -> Instant {
        match a {
            Admission::Sent { departure, .. } => departure,
            Admission::Dropped => panic!("dropped"),
        }
    }

    #[test]
    fn an_idle_link_only_adds_the_transmission_time() {
        let t0 = Instant::now();
        let mut b = Bottleneck::new(cfg(None, None));
        for i in 0..10u32 {
            // One packet every 2 ms: the link is idle at each arrival.
            let now = t0 + 2 * MS * i;
            let a = b.offer(now, 1000);
            assert_eq!(
                a,
                Admission::Sent {
                    departure: now + MS,
                    waited: Duration::ZERO
                }
            );
        }
        assert_eq!(b.stats().wait_max_us, 0);
        assert_eq!(b.stats().wait_quantile_us(0.99), Some(WAIT_BUCKET_US));
    }

    #[test]
    fn a_burst_leaves_at_the_rate_in_order() {
        let t0 = Instant::now();
        let mut b = Bottleneck::new(cfg(None, None));
        let deps: Vec<Instant> = (0..100).map(|_| departure(b.offer(t0, 1000))).collect();
        for (i, d) in deps.iter().enumerate() {
            assert_eq!(*d, t0 + MS * (i as u32 + 1), "packet {i}");
        }
        // 100 kB in 100 ms is 8 Mbit/s.
        assert_eq!(b.stats().sent_bytes, 100_000);
        assert_eq!(b.stats().wait_max_us, 99_000);
    }

    #[test]
    fn the_rate_holds_for_mixed_sizes_and_is_never_exceeded() {
        let t0 = Instant::now();
        let mut b = Bottleneck::new(BottleneckConfig {
            rate_bps: 20_000_000,
            max_packets: None,
            max_bytes: None,
        });
        let mut bytes = 0u64;
        let mut last = t0;
        // Arrivals faster than the rate, sizes 1..=1452: the link stays busy throughout.
        for i in 0..5000u32 {
            let len = 1 + (i as usize * 7919) % 1452;
            bytes += len as u64;
            last = departure(b.offer(t0 + Duration::from_micros(i as u64 * 50), len));
        }
        let secs = (last - t0).as_secs_f64();
        let rate = bytes as f64 * 8.0 / secs;
        assert!(rate <= 20_000_000.0, "{rate}");
        assert!(rate > 20_000_000.0 * 0.9999, "{rate}");
    }

    #[test]
    fn the_packet_bound_drops_at_the_tail_and_frees_as_packets_leave() {
        let t0 = Instant::now();
        let mut b = Bottleneck::new(cfg(Some(5), None));
        for _ in 0..5 {
            departure(b.offer(t0, 1000));
        }
        assert_eq!(b.offer(t0, 1000), Admission::Dropped);
        assert_eq!(b.offer(t0, 1), Admission::Dropped, "small ones too");
        assert_eq!(b.backlog(t0), (5, 5000));
        // The first packet is completely sent at 1 ms: one slot opens, behind the other four.
        let d = departure(b.offer(t0 + MS, 1000));
        assert_eq!(d, t0 + 6 * MS, "queued behind what was already there");
        assert_eq!(b.offer(t0 + MS, 1000), Admission::Dropped);
        let s = b.stats();
        assert_eq!((s.dropped_packets, s.dropped_bytes), (3, 2001));
        assert_eq!((s.sent_packets, s.offered_packets), (6, 9));
        assert_eq!(s.max_backlog_packets, 5);
        assert_eq!(b.backlog(t0 + 6 * MS), (0, 0), "all sent by 6 ms");
    }

    #[test]
    fn the_byte_bound_holds_and_a_small_packet_may_still_fit() {
        let t0 = Instant::now();
        let mut b = Bottleneck::new(cfg(None, Some(3500)));
        for _ in 0..3 {
            departure(b.offer(t0, 1000));
        }
        assert_eq!(b.offer(t0, 1000), Admission::Dropped);
        departure(b.offer(t0, 500));
        assert_eq!(b.offer(t0, 1), Admission::Dropped);
        assert_eq!(b.backlog(t0), (4, 3500));
        assert_eq!(b.stats().max_backlog_bytes, 3500);
    }

    #[test]
    fn flows_share_one_queue_first_come_first_served() {
        // Flow a bursts ten packets; flow b's one packet, right behind, waits for all of them
        // (one queue, not one per flow), and with room for ten b's next one is dropped.
        let t0 = Instant::now();
        let mut b = Bottleneck::new(cfg(Some(11), None));
        for _ in 0..10 {
            departure(b.offer(t0, 1000));
        }
        match b.offer(t0 + Duration::from_micros(10), 1000) {
            Admission::Sent { departure, waited } => {
                assert_eq!(departure, t0 + 11 * MS);
                assert_eq!(waited, 10 * MS - Duration::from_micros(10));
            }
            Admission::Dropped => panic!("there was room for one more"),
        }
        assert_eq!(
            b.offer(t0 + Duration::from_micros(20), 1000),
            Admission::Dropped
        );
    }

    #[test]
    fn two_flows_at_the_full_rate_each_get_the_rate_between_them() {
        // Each flow alone at one packet per ms fits the link exactly: no drop, no wait.
        let t0 = Instant::now();
        let mut alone = Bottleneck::new(cfg(Some(10), None));
        for i in 0..1000u32 {
            departure(alone.offer(t0 + MS * i, 1000));
        }
        assert_eq!(alone.stats().dropped_packets, 0);
        assert_eq!(alone.stats().wait_max_us, 0);
        // Together (b half a millisecond after a) they offer twice the rate: the link still
        // sends one packet per ms, the queue stays full and about half the packets are dropped.
        let mut shared = Bottleneck::new(cfg(Some(10), None));
        let mut last = t0;
        for i in 0..1000u32 {
            for at in [t0 + MS * i, t0 + MS * i + MS / 2] {
                if let Admission::Sent { departure, .. } = shared.offer(at, 1000) {
                    assert!(departure > last, "one packet at a time, in arrival order");
                    last = departure;
                }
            }
        }
        let s = shared.stats();
        assert_eq!(s.offered_packets, 2000);
        assert!(
            (1000..=1010).contains(&s.sent_packets),
            "{}",
            s.sent_packets
        );
        assert_eq!(s.sent_packets + s.dropped_packets, 2000);
        assert_eq!(s.max_backlog_packets, 10);
        assert!(
            s.wait_quantile_us(0.5).unwrap() >= 8_000,
            "a full queue ahead"
        );
    }

    #[test]
    fn out_of_order_stamps_still_queue_behind() {
        let t0 = Instant::now();
        let mut b = Bottleneck::new(cfg(None, None));
        let d1 = departure(b.offer(t0 + 5 * MS, 1000));
        let d2 = departure(b.offer(t0 + 4 * MS, 1000));
        assert_eq!((d1, d2), (t0 + 6 * MS, t0 + 7 * MS));
    }

    #[test]
    fn wait_quantiles_come_from_the_histogram() {
        let t0 = Instant::now();
        let mut b = Bottleneck::new(cfg(None, None));
        // 10 packets at once: waits of 0, 1, ..., 9 ms.
        for _ in 0..10 {
            b.offer(t0, 1000);
        }
        let s = b.stats();
        assert_eq!(s.wait_sum_us, 45_000);
        assert_eq!(s.wait_max_us, 9_000);
        assert_eq!(s.wait_quantile_us(0.5), Some(4_500), "5th wait is 4 ms");
        assert_eq!(s.wait_quantile_us(1.0), Some(9_500));
        assert_eq!(BottleneckStats::default().wait_quantile_us(0.5), None);
    }
}
