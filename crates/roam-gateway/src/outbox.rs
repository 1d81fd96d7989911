//! What waits to be sent to one client: a bounded queue per subscription and one for replies
//! and statuses, under one byte budget for the whole client. Pure: fed samples and the current
//! time, asked what to send next.
//!
//! The policy, as rosbridge users expect it and without its unbounded buffers:
//! - a subscription keeps at most its `queue_length` samples; a new one pushes the oldest
//!   out (a slow client sees the newest data, never a growing backlog); every drop is counted;
//! - `throttle_rate` spaces a subscription's samples at least that far apart;
//! - the client's samples and replies together stay under a byte budget: over it, the oldest
//!   sample of the fullest subscription goes first;
//! - drops are reported to the client (a `status` warning), at most once per
//!   [`REPORT_EVERY`] per subscription, so the report itself never floods a slow client;
//! - subscriptions take turns, so a busy topic never starves a quiet one.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

/// How often a subscription's drops are reported to its client at most.
pub const REPORT_EVERY: Duration = Duration::from_secs(1);

/// The bounds of one client's outbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutboxLimits {
    /// Bytes of samples and replies held for the client at most.
    pub max_bytes: usize,
    /// Replies and statuses held at most (beyond it the oldest is dropped, counted).
    pub max_control: usize,
}

impl Default for OutboxLimits {
    fn default() -> Self {
        Self {
            max_bytes: 64 << 20,
            max_control: 1024,
        }
    }
}

/// How one subscription is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// Samples kept at most (at least 1).
    pub queue_length: usize,
    /// Least time between two samples sent (zero: none).
    pub throttle: Duration,
}

struct SubQueue<S> {
    pacing: Pacing,
    items: VecDeque<(usize, S)>,
    bytes: usize,
    last_sent: Option<Instant>,
    dropped: u64,
    unreported: u64,
    last_report: Option<Instant>,
}

/// What to do next.
#[derive(Debug, PartialEq, Eq)]
pub enum Next<K, S, C> {
    /// Send this reply or status.
    Control(C),
    /// Send this sample of subscription `K`.
    Sample(K, S),
    /// Tell the client that `K` lost `dropped` samples since the last report.
    Dropped { key: K, dropped: u64, total: u64 },
    /// Nothing is due now; something is at the given time (None: wait for a push).
    Wait(Option<Instant>),
}

/// Counters of an outbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutboxStats {
    pub bytes: usize,
    pub samples_dropped: u64,
    pub control_dropped: u64,
}

/// One client's outbox: subscriptions keyed by `K`, samples `S`, control messages `C`.
pub struct Outbox<K, S, C> {
    limits: OutboxLimits,
    subs: BTreeMap<K, SubQueue<S>>,
    control: VecDeque<(usize, C)>,
    bytes: usize,
    /// Round-robin position: the key after which the next sample is looked for.
    cursor: Option<K>,
    samples_dropped: u64,
    control_dropped: u64,
}

impl<K: Ord + Clone, S, C> Outbox<K, S, C> {
    pub fn new(limits: OutboxLimits) -> Self {
        Self {
            limits,
            subs: BTreeMap::new(),
            control: VecDeque::new(),
            bytes: 0,
            cursor: None,
            samples_dropped: 0,
            control_dropped: 0,
        }
    }

    /// Adds a subscription, or changes its pacing (keeping what waits, trimmed to fit).
    pub fn subscribe(&mut self, key: K, pacing: Pacing) {
        let pacing = Pacing {
            queue_length: pacing.queue_length.max(1),
            ..pacing
        };
        let q = self.subs.entry(key).or_insert_with(|| SubQueue {
            pacing,
            items: VecDeque::new(),
            bytes: 0,
            last_sent: None,
            dropped: 0,
            unreported: 0,
            last_report: None,
        });
        q.pacing = pacing;
        while q.items.len() > q.pacing.queue_length {
            Self::drop_front(q, &mut self.bytes, &mut self.samples_dropped);
        }
    }

    /// Removes a subscription and what waits for it.
    pub fn unsubscribe(&mut self, key: &K) {
        if let Some(q) = self.subs.remove(key) {
            self.bytes -= q.bytes;
        }
    }

    /// Queues a sample of `size` bytes; the oldest are dropped to stay within bounds. Returns
    /// false (and drops the sample) when `key` is not subscribed.
    pub fn push_sample(&mut self, key: &K, size: usize, sample: S) -> bool {
        let Some(q) = self.subs.get_mut(key) else {
            return false;
        };
        if q.items.len() >= q.pacing.queue_length {
            Self::drop_front(q, &mut self.bytes, &mut self.samples_dropped);
        }
        q.items.push_back((size, sample));
        q.bytes += size;
        self.bytes += size;
        self.trim_to_budget(key);
        true
    }

    /// Queues a reply or status of `size` bytes (the oldest goes when over bounds).
    pub fn push_control(&mut self, size: usize, message: C) {
        if self.control.len() >= self.limits.max_control {
            self.drop_control();
        }
        self.control.push_back((size, message));
        self.bytes += size;
        while self.bytes > self.limits.max_bytes && self.drop_largest_sample(None) {}
        // Replies alone over the budget: the oldest replies go too (never the newest).
        while self.bytes > self.limits.max_bytes && self.control.len() > 1 {
            self.drop_control();
        }
    }

    /// What to send now, or when to ask again.
    pub fn next(&mut self, now: Instant) -> Next<K, S, C> {
        if let Some((size, c)) = self.control.pop_front() {
            self.bytes -= size;
            return Next::Control(c);
        }
        // Drop reports before samples: the client learns it is behind as early as possible.
        for (key, q) in self.subs.iter_mut() {
            let due = q
                .last_report
                .is_none_or(|t| now.saturating_duration_since(t) >= REPORT_EVERY);
            if q.unreported > 0 && due {
                let dropped = std::mem::take(&mut q.unreported);
                q.last_report = Some(now);
                return Next::Dropped {
                    key: key.clone(),
                    dropped,
                    total: q.dropped,
                };
            }
        }
        let mut earliest: Option<Instant> = None;
        // Round robin: the keys after the cursor first, then from the start.
        let order: Vec<K> = match &self.cursor {
            Some(c) => {
                let after = self
                    .subs
                    .range((
                        std::ops::Bound::Excluded(c.clone()),
                        std::ops::Bound::Unbounded,
                    ))
                    .map(|(k, _)| k.clone());
                let before = self.subs.range(..=c.clone()).map(|(k, _)| k.clone());
                after.chain(before).collect()
            }
            None => self.subs.keys().cloned().collect(),
        };
        for key in order {
            let Some(q) = self.subs.get_mut(&key) else {
                continue;
            };
            if q.items.is_empty() {
                continue;
            }
            let ready_at = q.last_sent.map(|t| t + q.pacing.throttle);
            match ready_at {
                Some(at) if !q.pacing.throttle.is_zero() && at > now => {
                    earliest = Some(earliest.map_or(at, |e| e.min(at)));
                }
                _ => {
                    let Some((size, s)) = q.items.pop_front() else {
                        continue;
                    };
                    q.bytes -= size;
                    self.bytes -= size;
                    q.last_sent = Some(now);
                    self.cursor = Some(key.clone());
                    return Next::Sample(key, s);
                }
            }
        }
        // A report held back by REPORT_EVERY is due later.
        for q in self.subs.values() {
            if q.unreported > 0 {
                if let Some(t) = q.last_report {
                    let at = t + REPORT_EVERY;
                    earliest = Some(earliest.map_or(at, |e| e.min(at)));
                }
            }
        }
        Next::Wait(earliest)
    }

    /// Samples `key` lost so far.
    pub fn dropped(&self, key: &K) -> Option<u64> {
        self.subs.get(key).map(|q| q.dropped)
    }

    pub fn stats(&self) -> OutboxStats {
        OutboxStats {
            bytes: self.bytes,
            samples_dropped: self.samples_dropped,
            control_dropped: self.control_dropped,
        }
    }

    fn drop_front(q: &mut SubQueue<S>, bytes: &mut usize, dropped: &mut u64) {
        if let Some((size, _)) = q.items.pop_front() {
            q.bytes -= size;
            *bytes -= size;
            q.dropped += 1;
            q.unreported += 1;
            *dropped += 1;
        }
    }

    fn drop_control(&mut self) {
        if let Some((size, _)) = self.control.pop_front() {
            self.bytes -= size;
            self.control_dropped += 1;
        }
    }

    /// Over the budget: the pushing subscription's oldest first (keeping its newest), then
    /// the oldest of the fullest other queue.
    fn trim_to_budget(&mut self, pushed: &K) {
        while self.bytes > self.limits.max_bytes {
            if let Some(q) = self.subs.get_mut(pushed) {
                if q.items.len() > 1 {
                    Self::drop_front(q, &mut self.bytes, &mut self.samples_dropped);
                    continue;
                }
            }
            if !self.drop_largest_sample(Some(pushed)) {
                break;
            }
        }
    }

    /// Drops the oldest sample of the queue holding the most bytes (never `except`'s last
    /// one); whether anything was dropped.
    fn drop_largest_sample(&mut self, except: Option<&K>) -> bool {
        let victim = self
            .subs
            .iter()
            .filter(|(k, q)| !q.items.is_empty() && Some(*k) != except)
            .max_by_key(|(_, q)| q.bytes)
            .map(|(k, _)| k.clone());
        match victim.and_then(|k| self.subs.get_mut(&k)) {
            Some(q) => {
                Self::drop_front(q, &mut self.bytes, &mut self.samples_dropped);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Box3 = Outbox<u32, u64, &'static str>;

    fn pacing(queue_length: usize, throttle_ms: u64) -> Pacing {
        Pacing {
            queue_length,
            throttle: Duration::from_millis(throttle_ms),
        }
    }

    fn drain(o: &mut Box3, now: Instant) -> Vec<Next<u32, u64, &'static str>> {
        let mut out = Vec::new();
        loop {
            match o.next(now) {
                Next::Wait(w) => {
                    out.push(Next::Wait(w));
                    return out;
                }
                n => out.push(n),
            }
        }
    }

    #[test]
    fn a_slow_client_keeps_the_newest_samples_and_learns_how_many_it_lost() {
        let mut o = Box3::new(OutboxLimits::default());
        o.subscribe(1, pacing(3, 0));
        for i in 0..10 {
            assert!(o.push_sample(&1, 10, i));
        }
        assert_eq!(o.dropped(&1), Some(7));
        assert_eq!(o.stats().bytes, 30);
        let now = Instant::now();
        assert_eq!(
            drain(&mut o, now),
            vec![
                Next::Dropped {
                    key: 1,
                    dropped: 7,
                    total: 7
                },
                Next::Sample(1, 7),
                Next::Sample(1, 8),
                Next::Sample(1, 9),
                Next::Wait(None)
            ]
        );
        assert_eq!(o.stats().bytes, 0);
        // The next report waits a period, however many are lost meanwhile.
        for i in 0..5 {
            o.push_sample(&1, 10, i);
        }
        let n = drain(&mut o, now + Duration::from_millis(10));
        assert!(
            !n.iter().any(|x| matches!(x, Next::Dropped { .. })),
            "{n:?}"
        );
        assert_eq!(n.last(), Some(&Next::Wait(Some(now + REPORT_EVERY))));
        assert_eq!(
            o.next(now + REPORT_EVERY),
            Next::Dropped {
                key: 1,
                dropped: 2,
                total: 9
            }
        );
    }

    #[test]
    fn throttle_spaces_samples_and_says_when_the_next_is_due() {
        let mut o = Box3::new(OutboxLimits::default());
        o.subscribe(1, pacing(1, 100));
        let t0 = Instant::now();
        o.push_sample(&1, 1, 1);
        assert_eq!(o.next(t0), Next::Sample(1, 1));
        o.push_sample(&1, 1, 2);
        o.push_sample(&1, 1, 3);
        assert_eq!(
            o.next(t0 + Duration::from_millis(50)),
            Next::Dropped {
                key: 1,
                dropped: 1,
                total: 1
            }
        );
        assert_eq!(
            o.next(t0 + Duration::from_millis(50)),
            Next::Wait(Some(t0 + Duration::from_millis(100)))
        );
        assert_eq!(o.next(t0 + Duration::from_millis(100)), Next::Sample(1, 3));
    }

    #[test]
    fn subscriptions_take_turns_and_replies_go_first() {
        let mut o = Box3::new(OutboxLimits::default());
        o.subscribe(1, pacing(100, 0));
        o.subscribe(2, pacing(100, 0));
        for i in 0..3 {
            o.push_sample(&1, 1, 10 + i);
        }
        o.push_sample(&2, 1, 20);
        o.push_control(1, "reply");
        let now = Instant::now();
        assert_eq!(
            drain(&mut o, now),
            vec![
                Next::Control("reply"),
                Next::Sample(1, 10),
                Next::Sample(2, 20),
                Next::Sample(1, 11),
                Next::Sample(1, 12),
                Next::Wait(None)
            ]
        );
    }

    #[test]
    fn the_byte_budget_drops_the_fullest_queue_first_and_keeps_every_newest_sample() {
        let mut o = Box3::new(OutboxLimits {
            max_bytes: 100,
            max_control: 2,
        });
        o.subscribe(1, pacing(100, 0));
        o.subscribe(2, pacing(100, 0));
        for i in 0..8 {
            o.push_sample(&1, 10, i);
        }
        // 80 + 30 > 100: the pushing queue's oldest go first.
        for i in 0..3 {
            o.push_sample(&2, 10, 100 + i);
        }
        assert!(o.stats().bytes <= 100);
        assert_eq!(o.dropped(&1), Some(0));
        assert_eq!(o.dropped(&2), Some(1));
        // One sample bigger than everything else: the others make room.
        o.push_sample(&2, 90, 999);
        assert!(o.stats().bytes <= 100, "{:?}", o.stats());
        let all = drain(&mut o, Instant::now());
        assert!(all.contains(&Next::Sample(2, 999)), "{all:?}");
        // Replies are bounded in number too.
        for m in ["a", "b", "c"] {
            o.push_control(1, m);
        }
        assert_eq!(o.stats().control_dropped, 1);
        assert_eq!(o.next(Instant::now()), Next::Control("b"));
    }

    #[test]
    fn unsubscribing_frees_what_waited_and_refuses_later_samples() {
        let mut o = Box3::new(OutboxLimits::default());
        o.subscribe(7, pacing(0, 0));
        o.push_sample(&7, 5, 1);
        o.push_sample(&7, 5, 2);
        // queue_length 0 is taken as 1.
        assert_eq!(o.dropped(&7), Some(1));
        o.unsubscribe(&7);
        assert_eq!(o.stats().bytes, 0);
        assert!(!o.push_sample(&7, 5, 3));
        assert_eq!(o.next(Instant::now()), Next::Wait(None));
    }
}
