//! The pure core of the WAN relay: one direction of one emulated path.
//!
//! A [`DelayLine`] is told when each packet (UDP datagram) or chunk (TCP read) arrived and
//! decides, with its own seeded RNG, whether it is lost and when it departs. It holds what is
//! in flight until the shell asks for it. It performs no I/O and never reads a clock: every
//! call takes `now`, so a test drives it with made-up instants and a fixed seed.
//!
//! Shell loop, per direction:
//! 1. on arrival: [`DelayLine::offer`] (the verdict says scheduled, lost or queue full);
//! 2. sleep until [`DelayLine::next_departure`];
//! 3. [`DelayLine::pop_due`] until `None`, sending each item.
//!
//! The model (see `docs/wan-relay.md`):
//! - departure = arrival + delay + jitter sample, clamped so it is never before arrival;
//! - jitter: uniform in `[-jitter, +jitter]`, or normal with standard deviation `jitter`
//!   (truncated at 3 sigma), like netem's `delay D J [distribution normal]`;
//! - [`Order::Reorder`]: items leave in departure order, so jitter larger than the gap between
//!   packets reorders them (as netem does); [`Order::Keep`]: a departure is never earlier than
//!   the previous one, so items leave in arrival order (jitter then only adds delay);
//! - [`LossMode::Drop`]: lost with probability `loss` (UDP); [`LossMode::Stall`]: a "lost"
//!   chunk is delivered anyway but an extra `rto` later, and with [`Order::Keep`] everything
//!   behind it waits too: the head-of-line stall a retransmitted TCP segment causes;
//! - bounded: an item that would take the queued bytes over `max_queued_bytes` is refused.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Shape of the per-packet jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JitterDist {
    /// Uniform in `[-jitter, +jitter]` (netem's default without a distribution table).
    Uniform,
    /// Normal with standard deviation `jitter`, truncated at +-3 sigma.
    Normal,
}

/// Whether jitter may reorder items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Items leave in departure-time order; jitter reorders, like netem.
    Reorder,
    /// Items leave in arrival order: a departure is never before the previous one.
    Keep,
}

/// What a loss does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossMode {
    /// The item is discarded (datagrams).
    Drop,
    /// The item is delivered `rto` later than it would have been (byte streams).
    Stall { rto: Duration },
}

/// Parameters of one direction of an emulated path.
#[derive(Debug, Clone, Copy)]
pub struct LineConfig {
    /// One-way base delay.
    pub delay: Duration,
    /// Jitter amplitude (uniform half-width or normal sigma).
    pub jitter: Duration,
    pub dist: JitterDist,
    /// Probability in `[0, 1]` that an item is lost.
    pub loss: f64,
    pub order: Order,
    pub loss_mode: LossMode,
    /// Cap on the bytes held in flight; an item that would exceed it is refused.
    pub max_queued_bytes: usize,
}

/// Something with a size in bytes.
pub trait Payload {
    fn byte_len(&self) -> usize;
}

impl Payload for bytes::Bytes {
    fn byte_len(&self) -> usize {
        self.len()
    }
}

impl Payload for Vec<u8> {
    fn byte_len(&self) -> usize {
        self.len()
    }
}

/// The decision for one offered item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Queued; it departs at `departure`. `stalled` when a loss was modelled as a stall.
    Scheduled { departure: Instant, stalled: bool },
    /// Discarded by the loss model.
    Lost,
    /// Discarded: the line already holds too many bytes.
    QueueFull,
}

struct Entry<T> {
    departure: Instant,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.departure == other.departure && self.seq == other.seq
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.departure, self.seq).cmp(&(other.departure, other.seq))
    }
}

/// One direction of an emulated path. See the module documentation.
pub struct DelayLine<T> {
    cfg: LineConfig,
    rng: StdRng,
    heap: BinaryHeap<Reverse<Entry<T>>>,
    seq: u64,
    last_departure: Option<Instant>,
    queued_bytes: usize,
}

impl<T: Payload> DelayLine<T> {
    /// A line with its own RNG seeded from `seed`: equal seeds and inputs give equal outputs.
    pub fn new(cfg: LineConfig, seed: u64) -> Self {
        Self {
            cfg,
            rng: StdRng::seed_from_u64(seed),
            heap: BinaryHeap::new(),
            seq: 0,
            last_departure: None,
            queued_bytes: 0,
        }
    }

    /// Decides the fate of `item`, which arrived at `now`, and queues it unless discarded.
    pub fn offer(&mut self, now: Instant, item: T) -> Verdict {
        let len = item.byte_len();
        if self.queued_bytes.saturating_add(len) > self.cfg.max_queued_bytes {
            return Verdict::QueueFull;
        }
        let lost = self.cfg.loss > 0.0 && self.rng.gen_bool(self.cfg.loss.min(1.0));
        let mut stalled = false;
        if lost {
            match self.cfg.loss_mode {
                LossMode::Drop => return Verdict::Lost,
                LossMode::Stall { .. } => stalled = true,
            }
        }
        let mut departure = now + self.sample_delay();
        if let (true, LossMode::Stall { rto }) = (stalled, self.cfg.loss_mode) {
            departure += rto;
        }
        if self.cfg.order == Order::Keep {
            if let Some(last) = self.last_departure {
                departure = departure.max(last);
            }
        }
        self.last_departure = Some(self.last_departure.map_or(departure, |l| l.max(departure)));
        self.seq += 1;
        self.queued_bytes += len;
        self.heap.push(Reverse(Entry {
            departure,
            seq: self.seq,
            item,
        }));
        Verdict::Scheduled { departure, stalled }
    }

    /// The base delay plus one jitter sample, never negative.
    fn sample_delay(&mut self) -> Duration {
        let base = self.cfg.delay.as_secs_f64();
        let j = self.cfg.jitter.as_secs_f64();
        let offset = if j <= 0.0 {
            0.0
        } else {
            match self.cfg.dist {
                JitterDist::Uniform => self.rng.gen_range(-j..=j),
                JitterDist::Normal => (self.standard_normal() * j).clamp(-3.0 * j, 3.0 * j),
            }
        };
        Duration::from_secs_f64((base + offset).max(0.0))
    }

    /// Box-Muller: one standard normal sample.
    fn standard_normal(&mut self) -> f64 {
        // gen::<f64>() is in [0, 1); 1 - u is in (0, 1], so ln() is finite.
        let u1: f64 = 1.0 - self.rng.gen::<f64>();
        let u2: f64 = self.rng.gen();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// When the earliest queued item is due, if any.
    pub fn next_departure(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(e)| e.departure)
    }

    /// The next item due at or before `now`, in departure order (ties in arrival order).
    pub fn pop_due(&mut self, now: Instant) -> Option<T> {
        if self.next_departure()? > now {
            return None;
        }
        let Reverse(e) = self.heap.pop()?;
        self.queued_bytes -= e.item.byte_len();
        Some(e.item)
    }

    /// Bytes held in flight.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn queued_bytes(&self) -> usize {
        self.queued_bytes
    }

    /// Bytes that can still be offered before the line refuses items.
    pub fn room(&self) -> usize {
        self.cfg.max_queued_bytes.saturating_sub(self.queued_bytes)
    }

    /// Items held in flight.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// A seed for one line, derived from the run's seed and the line's identity (listener, flow or
/// connection number, direction) so that lines are independent but reproducible (splitmix64).
pub fn derive_seed(base: u64, listener: u64, flow: u64, direction: u64) -> u64 {
    let mut z = base
        ^ listener.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ flow.wrapping_mul(0xBF58_476D_1CE4_E5B9)
        ^ direction.wrapping_mul(0x94D0_49BB_1331_11EB);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn cfg() -> LineConfig {
        LineConfig {
            delay: 20 * MS,
            jitter: Duration::ZERO,
            dist: JitterDist::Uniform,
            loss: 0.0,
            order: Order::Reorder,
            loss_mode: LossMode::Drop,
            max_queued_bytes: usize::MAX,
        }
    }

    /// Offers `n` 100-byte packets, one every `gap`, and drains the line after each arrival
    /// and at the end. Returns (arrival index, arrival, departure) in delivery order, plus the
    /// count of losses.
    fn run(
        cfg: LineConfig,
        seed: u64,
        n: usize,
        gap: Duration,
    ) -> (Vec<(usize, Instant, Instant)>, usize) {
        let t0 = Instant::now();
        let mut line: DelayLine<(usize, Instant, Vec<u8>)> = DelayLine::new(cfg, seed);
        let mut out = Vec::new();
        let mut lost = 0;
        let drain = |line: &mut DelayLine<_>, now: Instant, out: &mut Vec<_>| {
            while let Some(next) = line.next_departure() {
                if next > now {
                    break;
                }
                let (i, at, _) = line.pop_due(next).unwrap();
                out.push((i, at, next));
            }
        };
        for i in 0..n {
            let now = t0 + gap * i as u32;
            drain(&mut line, now, &mut out);
            match line.offer(now, (i, now, vec![0; 100])) {
                Verdict::Lost => lost += 1,
                Verdict::QueueFull => panic!("unbounded line refused"),
                Verdict::Scheduled { departure, .. } => assert!(departure >= now),
            }
        }
        drain(&mut line, t0 + Duration::from_secs(3600), &mut out);
        assert!(line.is_empty());
        assert_eq!(line.queued_bytes(), 0);
        (out, lost)
    }

    impl Payload for (usize, Instant, Vec<u8>) {
        fn byte_len(&self) -> usize {
            self.2.len()
        }
    }

    fn mean_delay_ms(out: &[(usize, Instant, Instant)]) -> f64 {
        out.iter()
            .map(|(_, a, d)| (*d - *a).as_secs_f64() * 1e3)
            .sum::<f64>()
            / out.len() as f64
    }

    fn reordered(out: &[(usize, Instant, Instant)]) -> usize {
        out.windows(2).filter(|w| w[1].0 < w[0].0).count()
    }

    #[test]
    fn fixed_delay_is_exact_and_in_order() {
        let (out, lost) = run(cfg(), 1, 1000, MS);
        assert_eq!(lost, 0);
        assert_eq!(out.len(), 1000);
        assert!(out.iter().all(|(_, a, d)| *d - *a == 20 * MS));
        assert_eq!(reordered(&out), 0);
    }

    #[test]
    fn uniform_jitter_keeps_mean_and_bounds_and_reorders() {
        let c = LineConfig {
            jitter: 10 * MS,
            ..cfg()
        };
        let (out, _) = run(c, 7, 20_000, MS);
        let mean = mean_delay_ms(&out);
        assert!((mean - 20.0).abs() < 0.3, "mean {mean}");
        for (_, a, d) in &out {
            let ms = (*d - *a).as_secs_f64() * 1e3;
            assert!((10.0 - 1e-6..=30.0 + 1e-6).contains(&ms), "{ms}");
        }
        assert!(
            reordered(&out) > 1000,
            "jitter of 10 ms over 1 ms gaps reorders"
        );
    }

    #[test]
    fn normal_jitter_has_the_right_spread() {
        let c = LineConfig {
            jitter: 4 * MS,
            dist: JitterDist::Normal,
            ..cfg()
        };
        let (out, _) = run(c, 3, 20_000, MS);
        let ms: Vec<f64> = out
            .iter()
            .map(|(_, a, d)| (*d - *a).as_secs_f64() * 1e3)
            .collect();
        let mean = ms.iter().sum::<f64>() / ms.len() as f64;
        let sd = (ms.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / ms.len() as f64).sqrt();
        assert!((mean - 20.0).abs() < 0.2, "mean {mean}");
        assert!((sd - 4.0).abs() < 0.3, "sd {sd}");
        assert!(ms.iter().all(|x| (8.0 - 1e-6..=32.0 + 1e-6).contains(x)));
    }

    #[test]
    fn jitter_larger_than_delay_clamps_at_zero() {
        let c = LineConfig {
            delay: 2 * MS,
            jitter: 10 * MS,
            ..cfg()
        };
        let (out, _) = run(c, 11, 5000, MS);
        assert!(out.iter().all(|(_, a, d)| d >= a));
        assert!(
            out.iter().any(|(_, a, d)| d == a),
            "some samples clamp to zero delay"
        );
    }

    #[test]
    fn keep_order_never_reorders() {
        let c = LineConfig {
            jitter: 10 * MS,
            order: Order::Keep,
            ..cfg()
        };
        let (out, _) = run(c, 7, 20_000, MS);
        assert_eq!(reordered(&out), 0);
        assert!(out.windows(2).all(|w| w[1].2 >= w[0].2));
        assert!(out.iter().all(|(_, a, d)| *d - *a >= 10 * MS));
    }

    #[test]
    fn loss_fraction_matches() {
        let c = LineConfig { loss: 0.2, ..cfg() };
        let (out, lost) = run(c, 42, 50_000, MS);
        let frac = lost as f64 / 50_000.0;
        assert!((frac - 0.2).abs() < 0.01, "loss {frac}");
        assert_eq!(out.len() + lost, 50_000);
        let c = LineConfig { loss: 1.0, ..cfg() };
        assert_eq!(run(c, 1, 100, MS).1, 100);
    }

    #[test]
    fn same_seed_same_schedule_other_seed_differs() {
        let c = LineConfig {
            jitter: 5 * MS,
            loss: 0.1,
            ..cfg()
        };
        let a = run(c, 5, 2000, MS);
        let b = run(c, 5, 2000, MS);
        let d = run(c, 6, 2000, MS);
        let delays = |r: &(Vec<(usize, Instant, Instant)>, usize)| -> Vec<(usize, Duration)> {
            r.0.iter().map(|(i, a, d)| (*i, *d - *a)).collect()
        };
        assert_eq!(delays(&a), delays(&b));
        assert_eq!(a.1, b.1);
        assert_ne!(delays(&a), delays(&d));
    }

    #[test]
    fn queue_is_bounded_and_drains() {
        let t0 = Instant::now();
        let c = LineConfig {
            max_queued_bytes: 1000,
            ..cfg()
        };
        let mut line = DelayLine::new(c, 1);
        for _ in 0..10 {
            assert!(matches!(
                line.offer(t0, vec![0u8; 100]),
                Verdict::Scheduled { .. }
            ));
        }
        assert_eq!(line.room(), 0);
        assert_eq!(line.offer(t0, vec![0u8; 1]), Verdict::QueueFull);
        assert_eq!(line.len(), 10);
        assert_eq!(
            line.pop_due(t0 + 19 * MS),
            None,
            "nothing leaves before the delay"
        );
        assert_eq!(line.next_departure(), Some(t0 + 20 * MS));
        assert!(line.pop_due(t0 + 20 * MS).is_some());
        assert_eq!(line.room(), 100);
        assert!(matches!(
            line.offer(t0 + 20 * MS, vec![0u8; 100]),
            Verdict::Scheduled { .. }
        ));
        assert_eq!(line.offer(t0 + 20 * MS, vec![0u8; 1]), Verdict::QueueFull);
    }

    #[test]
    fn stream_loss_stalls_the_chunk_and_everything_behind_it() {
        let t0 = Instant::now();
        let rto = 200 * MS;
        let c = LineConfig {
            loss: 0.25,
            order: Order::Keep,
            loss_mode: LossMode::Stall { rto },
            ..cfg()
        };
        let mut line = DelayLine::new(c, 9);
        let mut stalls = 0;
        let mut departures = Vec::new();
        for i in 0..2000u32 {
            let now = t0 + MS * i;
            match line.offer(now, vec![0u8; 10]) {
                Verdict::Scheduled { departure, stalled } => {
                    if stalled {
                        stalls += 1;
                        assert!(departure - now >= 20 * MS + rto);
                    }
                    departures.push(departure);
                }
                v => panic!("stream lines never discard: {v:?}"),
            }
        }
        assert!(
            (stalls as f64 / 2000.0 - 0.25).abs() < 0.04,
            "stalls {stalls}"
        );
        assert!(departures.windows(2).all(|w| w[1] >= w[0]), "order kept");
        let mut n = 0;
        while line.pop_due(t0 + Duration::from_secs(3600)).is_some() {
            n += 1;
        }
        assert_eq!(n, 2000, "every byte is delivered");
    }

    #[test]
    fn ties_leave_in_arrival_order() {
        let t0 = Instant::now();
        let mut line = DelayLine::new(cfg(), 1);
        for i in 0..50u8 {
            line.offer(t0, vec![i]);
        }
        let got: Vec<u8> = std::iter::from_fn(|| line.pop_due(t0 + 20 * MS))
            .map(|v| v[0])
            .collect();
        assert_eq!(got, (0..50).collect::<Vec<_>>());
    }
}
