//! Whether a link that sends in bursts may grow its congestion window.
//!
//! A robot's large topics come in bursts: a 1 MB point cloud, then nothing until the next. QUIC
//! marks the acknowledgements of such a burst "application limited" (nothing was left to send
//! when they came back), and Cubic then keeps its window, as RFC 9002 asks. quinn paces every
//! burst at 1.25 x window per round trip, so the window settles where one burst takes about a
//! round trip to leave: over a 70 ms path a 1.05 MB message took 111 ms one way instead of the
//! path's 35 ms plus its transmission, and its echo 219 ms (lab E6's 220 ms median), with a
//! 1.4 MB window and nothing lost.
//!
//! RFC 7661 (congestion window validation) draws the line elsewhere: a window is in use, and
//! may grow, while the data in flight reaches at least half of it. [`Flight`] applies that
//! rule with a smaller share ([`USED_SHARE`]), because quinn paces where the RFC's sender
//! does not: acknowledgements count as application limited only when the recent peak in
//! flight stayed under an eighth of the window. A flow of bursts then grows its window to
//! about eight bursts and stops there, and each burst leaves within about a tenth of a round
//! trip; a steady flow is unaffected (its acknowledgements are not application limited
//! anyway); losses judged congestion cut the window as before.

use std::time::{Duration, Instant};

/// A window is in use while the recent peak in flight reaches this fraction of it (1 / N).
/// RFC 7661 says half, for a sender that bursts at line rate as TCP does; quinn paces each
/// burst at 1.25 x window per round trip, so with half a 1 MB burst settled at a 2 MB window
/// and took 0.4 of a round trip to leave (28 ms each way over a 70 ms path: lab E6's echo 146
/// ms, TCP links 87 ms). With an eighth it leaves in a tenth of a round trip (the echo 95 ms;
/// a quarter: 113 ms; bench/results/lab-e6-burst-share.md). Where the path is the bottleneck,
/// a burst queues at line rate however it is paced, and the losses of that queue cut the
/// window as before.
const USED_SHARE: u64 = 8;

/// The shortest period the peak is kept over, whatever the round trip (loopback's is
/// microseconds, and a burst takes longer than that to leave).
const MIN_PERIOD: Duration = Duration::from_millis(10);

/// Bytes in flight and their recent peak. Fed what the connection reports (bytes sent, bytes
/// in flight after each batch of acknowledgements, the round trip), with the time; no clock
/// of its own.
#[derive(Debug, Clone)]
pub struct Flight {
    in_flight: u64,
    /// Peak in flight in the current period and the one before: a burst's acknowledgements
    /// come back a round trip after it left, and a period is two round trips.
    peak: u64,
    previous_peak: u64,
    period_start: Option<Instant>,
    period: Duration,
}

impl Default for Flight {
    fn default() -> Self {
        Self::new()
    }
}

impl Flight {
    pub fn new() -> Self {
        Self {
            in_flight: 0,
            peak: 0,
            previous_peak: 0,
            period_start: None,
            period: MIN_PERIOD,
        }
    }

    /// `bytes` sent at `now`.
    pub fn on_sent(&mut self, now: Instant, bytes: u64) {
        self.rotate(now);
        self.in_flight += bytes;
        self.peak = self.peak.max(self.in_flight);
    }

    /// The path's smoothed round trip is now `rtt`.
    pub fn on_rtt(&mut self, rtt: Duration) {
        self.period = (rtt * 2).max(MIN_PERIOD);
    }

    /// A batch of acknowledgements (or losses) left `in_flight` bytes in flight.
    pub fn on_end_acks(&mut self, now: Instant, in_flight: u64) {
        self.in_flight = in_flight;
        self.rotate(now);
    }

    /// Whether acknowledgements the connection marks `app_limited` are, for a window of
    /// `window` bytes: only if the recent peak in flight stayed under [`USED_SHARE`] of it.
    pub fn app_limited(&self, app_limited: bool, window: u64) -> bool {
        app_limited && self.peak.max(self.previous_peak) < window / USED_SHARE
    }

    fn rotate(&mut self, now: Instant) {
        match self.period_start {
            Some(start) if now.saturating_duration_since(start) < self.period => {}
            Some(_) => {
                self.previous_peak = self.peak;
                self.peak = self.in_flight;
                self.period_start = Some(now);
            }
            None => self.period_start = Some(now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const RTT: Duration = Duration::from_millis(70);

    /// A burst of `bytes` sent in 1200-byte packets from `t`, over `ms` milliseconds.
    fn burst(f: &mut Flight, t: Instant, bytes: u64, ms: u32) {
        let packets = bytes / 1200;
        for i in 0..packets {
            f.on_sent(t + MS * ms * i as u32 / packets as u32, 1200);
        }
    }

    #[test]
    fn a_burst_filling_its_share_of_the_window_is_not_application_limited() {
        let t0 = Instant::now();
        let mut f = Flight::new();
        f.on_rtt(RTT);
        f.on_end_acks(t0, 0);
        burst(&mut f, t0, 1_200_000, 40);
        // Its acknowledgements, a round trip later, with nothing left to send.
        f.on_end_acks(t0 + RTT + MS * 20, 600_000);
        let used = 1_200_000 * USED_SHARE;
        assert!(!f.app_limited(true, used), "1.2 MB fills its share");
        assert!(!f.app_limited(true, 2_000_000), "1.2 MB of a 2 MB window");
        assert!(f.app_limited(true, used + 8), "1.2 MB is under the share");
        f.on_end_acks(t0 + RTT + MS * 40, 0);
        assert!(!f.app_limited(true, used));
    }

    #[test]
    fn what_the_connection_calls_sending_more_stays_so() {
        let f = Flight::new();
        assert!(!f.app_limited(false, 10_000_000));
    }

    #[test]
    fn a_trickle_after_a_burst_is_application_limited_again() {
        let t0 = Instant::now();
        let mut f = Flight::new();
        f.on_rtt(RTT);
        f.on_end_acks(t0, 0);
        burst(&mut f, t0, 1_200_000, 40);
        f.on_end_acks(t0 + RTT + MS * 40, 0);
        // Then 1 KB every 10 ms, never more than a few in flight: after two periods (four
        // round trips) the burst is forgotten.
        let mut t = t0 + RTT + MS * 50;
        for _ in 0..40 {
            f.on_sent(t, 1000);
            f.on_end_acks(t + MS * 5, 7000);
            t += MS * 10;
        }
        assert!(f.app_limited(true, 2_000_000));
    }

    #[test]
    fn loopback_keeps_the_peak_for_the_shortest_period() {
        let t0 = Instant::now();
        let mut f = Flight::new();
        let rtt = Duration::from_micros(100);
        f.on_rtt(rtt);
        f.on_end_acks(t0, 0);
        burst(&mut f, t0, 600_000, 4);
        f.on_end_acks(t0 + MS * 5, 0);
        assert!(!f.app_limited(true, 1_000_000));
        // Two 10 ms periods of single small messages later, the burst is forgotten.
        for ms in [20, 35] {
            f.on_sent(t0 + MS * ms, 1000);
            f.on_end_acks(t0 + MS * (ms + 1), 0);
        }
        assert!(f.app_limited(true, 1_000_000));
    }
}
