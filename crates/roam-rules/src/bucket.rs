//! The token bucket behind `Limit <rate>`.

use std::time::Instant;

/// Refills at `rate` tokens per second up to `capacity`; a message takes one token.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate: f64,
    capacity: f64,
    tokens: f64,
    last: Option<Instant>,
}

impl TokenBucket {
    /// A full bucket for `rate` messages per second holding half a second of them (at least
    /// one): steady traffic at the rate passes whole despite jitter, a burst passes at most
    /// half a second's worth above the rate.
    pub fn new(rate: f64) -> TokenBucket {
        let capacity = (rate / 2.0).max(1.0);
        TokenBucket {
            rate,
            capacity,
            tokens: capacity,
            last: None,
        }
    }

    fn refill(&mut self, now: Instant) {
        // A clock that went backwards adds nothing, and is not taken as the new reference.
        let last = self.last.map_or(now, |l| l.max(now));
        if let Some(prev) = self.last {
            let dt = now.saturating_duration_since(prev).as_secs_f64();
            self.tokens = (self.tokens + dt * self.rate).min(self.capacity);
        }
        self.last = Some(last);
    }

    /// Whether a message may pass now (without taking its token).
    pub fn ready(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.tokens >= 1.0
    }

    /// Takes a token that [`Self::ready`] said is there.
    pub fn take(&mut self) {
        self.tokens = (self.tokens - 1.0).max(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_100_hz_stream_through_a_10_per_second_bucket_keeps_10_per_second() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(10.0);
        let mut passed = 0;
        for i in 0..1000u64 {
            let now = t0 + Duration::from_millis(10 * i);
            if b.ready(now) {
                b.take();
                passed += 1;
            }
        }
        // 10 s at 10/s, plus the initial half second of burst.
        assert!((100..=106).contains(&passed), "{passed}");
    }

    #[test]
    fn a_clock_going_backwards_adds_no_tokens() {
        let t0 = Instant::now() + Duration::from_secs(10);
        let mut b = TokenBucket::new(1.0);
        assert!(b.ready(t0));
        b.take();
        assert!(!b.ready(t0 - Duration::from_secs(5)));
        assert!(!b.ready(t0));
    }
}
