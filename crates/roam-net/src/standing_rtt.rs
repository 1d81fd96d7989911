//! The round trip a path stands at now, for telling a queue from noise.
//!
//! The congestion controller's queue rule ([`crate::congestion`]) compares the path's round
//! trip with its minimum. Neither of quinn's figures is right for it alone:
//!
//! - the latest sample includes the time the peer held its acknowledgement, up to its
//!   max_ack_delay (25 ms) for the last packet of a burst, and a busy receiver's scheduling
//!   spikes: one late sample is no queue;
//! - the smoothed round trip is net of the reported acknowledgement delay, but it starts at
//!   the handshake's sample and moves an eighth per sample, so in a link's first round trips,
//!   when a slow-start loss decides the window for seconds, it can stand 10 ms above a path
//!   that has no queue (E6 over 35 ms with 3% loss: one such cut kept a link's window near
//!   300 KB for a whole run, where links without it reached 9 MB).
//!
//! A queue raises every sample while it lasts. So the standing round trip is the least sample
//! of the last half to whole smoothed round trip (Copa's "standing RTT"), and the queue rule
//! uses the smaller of it and the smoothed one: a queue shows in both.

use std::time::{Duration, Instant};

/// The least round-trip sample over the last half to whole smoothed round trip.
#[derive(Debug, Clone, Default)]
pub struct StandingRtt {
    /// When the current span began, and its least sample.
    start: Option<Instant>,
    current: Duration,
    /// The least sample of the span before, if it ended less than a span ago.
    previous: Option<Duration>,
}

impl StandingRtt {
    pub fn new() -> Self {
        Self::default()
    }

    /// A round-trip sample taken at `now` (acknowledgement time less send time), with the
    /// path's smoothed round trip then.
    pub fn on_sample(&mut self, now: Instant, sample: Duration, smoothed: Duration) {
        let span = smoothed / 2;
        let Some(start) = self.start else {
            self.restart(now, sample, None);
            return;
        };
        let age = now.saturating_duration_since(start);
        if age < span {
            self.current = self.current.min(sample);
        } else if age < span * 2 {
            self.restart(now, sample, Some(self.current));
        } else {
            // After a pause the span before says nothing about the path now.
            self.restart(now, sample, None);
        }
    }

    fn restart(&mut self, now: Instant, sample: Duration, previous: Option<Duration>) {
        self.start = Some(now);
        self.current = sample;
        self.previous = previous;
    }

    /// The standing round trip, once there is a sample.
    pub fn get(&self) -> Option<Duration> {
        self.start?;
        Some(self.previous.map_or(self.current, |p| p.min(self.current)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn one_late_sample_does_not_raise_it() {
        let t0 = Instant::now();
        let mut s = StandingRtt::new();
        assert_eq!(s.get(), None);
        // A burst acknowledged every millisecond over a 70 ms path, then its last packet's
        // acknowledgement held 25 ms by the peer.
        for i in 0..50u32 {
            s.on_sample(t0 + MS * i, MS * 70, MS * 70);
        }
        s.on_sample(t0 + MS * 75, MS * 95, MS * 73);
        assert_eq!(s.get(), Some(MS * 70));
    }

    #[test]
    fn a_queue_raises_it_within_a_round_trip() {
        let t0 = Instant::now();
        let mut s = StandingRtt::new();
        for i in 0..70u32 {
            s.on_sample(t0 + MS * i, MS * 70, MS * 70);
        }
        // Every sample from 70 ms on stands 20 ms higher: a queue.
        for i in 70..140u32 {
            s.on_sample(t0 + MS * i, MS * 90, MS * 80);
        }
        assert_eq!(s.get(), Some(MS * 90));
    }

    #[test]
    fn after_a_pause_only_new_samples_count() {
        let t0 = Instant::now();
        let mut s = StandingRtt::new();
        for i in 0..10u32 {
            s.on_sample(t0 + MS * i, MS * 70, MS * 70);
        }
        s.on_sample(t0 + MS * 1000, MS * 90, MS * 70);
        assert_eq!(s.get(), Some(MS * 90));
    }
}
