//! The first samples of a new ROS publisher, held until a reader has matched it.
//!
//! A DDS writer made when an MQTT topic's type arrives has no matched reader for the few
//! milliseconds discovery takes, and a volatile writer drops what it writes in that time: the
//! first message of every `mqtt2ros` topic was lost (mqtt_client's own issue #24 is the same
//! race). A new writer's samples are therefore held, in order and bounded, until it has
//! matched a reader or [`HOLD`] has passed (then they are written anyway: a topic nobody reads
//! yet must not wait for ever), and written before anything newer. Pure: the caller says what
//! time it is and how many readers matched.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long a new writer's samples wait for a reader at most.
pub const HOLD: Duration = Duration::from_secs(1);
/// Samples held at most; older ones give way (as a full KEEP_LAST history would).
pub const MAX_HELD: usize = 100;

/// One writer's hold.
#[derive(Debug, Default)]
pub struct FirstSamples<T> {
    until: Option<Instant>,
    held: VecDeque<T>,
    dropped: u64,
}

impl<T> FirstSamples<T> {
    /// A new writer: hold what comes until `now + HOLD` or a match. Samples still held for
    /// the writer it replaces (of the type before) are dropped and counted.
    pub fn start(&mut self, now: Instant) {
        self.dropped += self.held.len() as u64;
        self.held.clear();
        self.until = Some(now + HOLD);
    }

    /// A sample to write: what to write now, in order (held ones first); nothing while the
    /// writer still waits for a reader.
    pub fn offer(&mut self, sample: T, now: Instant, matched: bool) -> Vec<T> {
        if self.waiting(now, matched) {
            if self.held.len() == MAX_HELD {
                self.held.pop_front();
                self.dropped += 1;
            }
            self.held.push_back(sample);
            return Vec::new();
        }
        let mut out = self.release();
        out.push(sample);
        out
    }

    /// What to write now without a new sample: the held ones once a reader matched or the
    /// hold is over.
    pub fn poll(&mut self, now: Instant, matched: bool) -> Vec<T> {
        if self.until.is_none() || self.waiting(now, matched) {
            return Vec::new();
        }
        self.release()
    }

    /// When [`Self::poll`] must be called at the latest (None: nothing held).
    pub fn deadline(&self) -> Option<Instant> {
        self.until.filter(|_| !self.held.is_empty())
    }

    /// Whether samples are held (the caller then polls, to see a reader match).
    pub fn holding(&self) -> bool {
        !self.held.is_empty()
    }

    /// Samples that gave way to newer ones while held.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    fn waiting(&self, now: Instant, matched: bool) -> bool {
        !matched && self.until.is_some_and(|u| now < u)
    }

    fn release(&mut self) -> Vec<T> {
        self.until = None;
        self.held.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_wait_for_a_reader_then_go_first_in_order() {
        let t0 = Instant::now();
        let mut h = FirstSamples::default();
        h.start(t0);
        assert!(h.offer(1, t0, false).is_empty());
        assert!(h.offer(2, t0 + Duration::from_millis(5), false).is_empty());
        assert_eq!(h.deadline(), Some(t0 + HOLD));
        assert!(h.poll(t0 + Duration::from_millis(6), false).is_empty());
        // A reader matched: the held samples, in order.
        assert_eq!(h.poll(t0 + Duration::from_millis(7), true), vec![1, 2]);
        assert!(!h.holding());
        // From then on, straight through (even if the reader goes away).
        assert_eq!(h.offer(3, t0 + Duration::from_millis(8), false), vec![3]);
        assert_eq!(h.deadline(), None);
    }

    #[test]
    fn a_sample_after_the_match_follows_the_held_ones() {
        let t0 = Instant::now();
        let mut h = FirstSamples::default();
        h.start(t0);
        assert!(h.offer("a", t0, false).is_empty());
        assert_eq!(h.offer("b", t0, true), vec!["a", "b"]);
    }

    #[test]
    fn without_a_reader_the_hold_ends_and_the_samples_are_written() {
        let t0 = Instant::now();
        let mut h = FirstSamples::default();
        h.start(t0);
        assert!(h.offer(1, t0, false).is_empty());
        assert!(h
            .poll(t0 + HOLD - Duration::from_millis(1), false)
            .is_empty());
        assert_eq!(h.poll(t0 + HOLD, false), vec![1]);
        assert_eq!(h.offer(2, t0 + HOLD, false), vec![2]);
    }

    #[test]
    fn the_hold_is_bounded_and_counts_what_gave_way() {
        let t0 = Instant::now();
        let mut h = FirstSamples::default();
        h.start(t0);
        for i in 0..MAX_HELD + 5 {
            assert!(h.offer(i, t0, false).is_empty());
        }
        assert_eq!(h.dropped(), 5);
        let out = h.poll(t0, true);
        assert_eq!(out.len(), MAX_HELD);
        assert_eq!(out[0], 5);
    }

    #[test]
    fn a_writer_that_never_started_a_hold_writes_at_once() {
        let mut h = FirstSamples::default();
        assert_eq!(h.offer(1, Instant::now(), false), vec![1]);
        assert!(h.poll(Instant::now(), false).is_empty());
    }
}
