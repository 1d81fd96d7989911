//! The default congestion controller of QUIC links: Cubic that tells a radio's random loss
//! from congestion.
//!
//! A loss-based controller reads every lost packet as a full queue and cuts its window. Over a
//! robot's radio link packets are also lost at random, with no queue anywhere, and one lost
//! packet in a hundred keeps Cubic's window at a few packets: the lab (E6) measured 13 s for a
//! 1 MB point cloud over a 35 ms path with 1% loss, against 0.2 s without the loss. quinn's
//! BBR ignores loss, but it also ignores a full queue: next to a Cubic flow it took 98% of a
//! shared uplink and sent 2.5 times its rate (E11). So roam keeps Cubic and filters what it
//! hears, as TCP Veno does: a loss counts as congestion when the path shows a queue (the round
//! trip it stands at, [`crate::standing_rtt`], well above its minimum), when losses are
//! frequent (a policer drops without queueing), or when quinn declares persistent congestion;
//! otherwise it is repaired (QUIC retransmits it) without a window cut. Where a queue builds,
//! as at any bottleneck shared with other flows, this is Cubic exactly.
//!
//! [`LossJudge`] is the decision, pure and tested on its own; [`Tolerant`] applies it in front
//! of quinn's Cubic, and lets a link that sends in bursts grow its window as long as the
//! bursts fill an eighth of it ([`crate::flight`]).

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::congestion::{Controller, ControllerFactory, ControllerMetrics, CubicConfig};
use quinn_proto::RttEstimator;

use crate::flight::Flight;
use crate::standing_rtt::StandingRtt;

/// A round trip this far above the path's minimum means a queue: a fraction of the minimum
/// (1/8: a queue of an eighth of the path's delay), and never less than [`MIN_QUEUE_DELAY`].
const QUEUE_FRACTION: u32 = 8;
/// Below this, a longer round trip is scheduling noise (a busy host, a LAN), not a queue.
const MIN_QUEUE_DELAY: Duration = Duration::from_millis(1);
/// Losses above this share of the recent traffic are congestion even with no queue: a
/// policer (a token bucket that drops without queueing) must still be obeyed. Random loss on
/// usable radio links stays well below it.
const MAX_RANDOM_LOSS: f64 = 0.10;
/// The share is trusted from this much traffic (about 40 packets) on: below it one loss is
/// a large share of nothing.
const MIN_SAMPLE_BYTES: u64 = 48 * 1024;

/// What a loss event tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A queue overflowed (or a policer dropped): the window must shrink, for this reason.
    Congestion(Cause),
    /// A random loss on a path with no queue: repaired without a window cut.
    Random,
}

/// Why a loss event was judged congestion: the first rule of the module docs that held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// quinn declared persistent congestion (every packet of a long stretch lost).
    Persistent,
    /// An ECN mark (a loss event with no lost bytes): a router said so.
    Ecn,
    /// No round trip measured yet: nothing to tell a queue by.
    NoRtt,
    /// The round trip stood above its minimum by more than the path's queue threshold.
    Queue,
    /// More than [`MAX_RANDOM_LOSS`] of the recent traffic was lost.
    LossShare,
}

/// Loss events by verdict, as a link reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Judged random: repaired without a window cut.
    pub random: u64,
    /// Judged congestion, by cause: each one cut the window.
    pub queue: u64,
    pub loss_share: u64,
    /// Persistent congestion, ECN marks and losses before the first round trip.
    pub other: u64,
}

impl Counts {
    /// Loss events that cut the window.
    pub fn cuts(&self) -> u64 {
        self.queue + self.loss_share + self.other
    }
}

/// The round trips of a path as the connection measures them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rtt {
    /// The round trip the path stands at: the smaller of the smoothed round trip and the
    /// least recent sample ([`StandingRtt`]). Not the latest sample: a peer holds the
    /// acknowledgement of a burst's last packet up to its max_ack_delay (25 ms), and that
    /// sample reads as a queue where there is none (on a 35 ms path with 3% loss it took 4-6
    /// random losses per 20 point clouds for congestion).
    pub now: Duration,
    /// The least seen on the path.
    pub min: Duration,
}

impl Rtt {
    /// The path as the judge reads it: where it stands (never above the smoothed round trip,
    /// which is net of the peer's acknowledgement delay), and its minimum.
    pub fn standing(standing: &StandingRtt, smoothed: Duration, min: Duration) -> Self {
        Rtt {
            now: standing.get().map_or(smoothed, |s| s.min(smoothed)),
            min,
        }
    }

    fn queue_delay(self) -> Duration {
        self.now.saturating_sub(self.min)
    }

    fn queue_threshold(self) -> Duration {
        (self.min / QUEUE_FRACTION).max(MIN_QUEUE_DELAY)
    }
}

/// Bytes acknowledged and lost over one period.
#[derive(Debug, Clone, Copy, Default)]
struct Period {
    acked: u64,
    lost: u64,
}

/// Decides, loss event by loss event, whether a loss is congestion (see the module docs).
/// Fed what the connection sees: acknowledged bytes, loss events and round trips, with the
/// time; no clock or I/O of its own.
#[derive(Debug, Clone)]
pub struct LossJudge {
    rtt: Rtt,
    /// The loss share is taken over this period and the one before: about four round trips
    /// each, so it follows the path within a second or so.
    current: Period,
    previous: Period,
    period_start: Option<Instant>,
    counts: Counts,
}

impl Default for LossJudge {
    fn default() -> Self {
        Self::new()
    }
}

impl LossJudge {
    pub fn new() -> Self {
        Self {
            rtt: Rtt::default(),
            current: Period::default(),
            previous: Period::default(),
            period_start: None,
            counts: Counts::default(),
        }
    }

    /// Bytes newly acknowledged at `now`, with the path's round trips then.
    pub fn on_ack(&mut self, now: Instant, bytes: u64, rtt: Rtt) {
        self.rtt = rtt;
        self.rotate(now);
        self.current.acked += bytes;
    }

    /// A loss event: `lost_bytes` declared lost at `now` (0 for an ECN mark), persistent
    /// congestion or not. Returns whether to cut the window.
    pub fn on_loss(&mut self, now: Instant, lost_bytes: u64, persistent: bool) -> Verdict {
        self.rotate(now);
        self.current.lost += lost_bytes;
        let verdict = match self.cause(lost_bytes, persistent) {
            Some(cause) => Verdict::Congestion(cause),
            None => Verdict::Random,
        };
        let c = &mut self.counts;
        *match verdict {
            Verdict::Random => &mut c.random,
            Verdict::Congestion(Cause::Queue) => &mut c.queue,
            Verdict::Congestion(Cause::LossShare) => &mut c.loss_share,
            Verdict::Congestion(_) => &mut c.other,
        } += 1;
        verdict
    }

    fn cause(&self, lost_bytes: u64, persistent: bool) -> Option<Cause> {
        if persistent {
            Some(Cause::Persistent)
        } else if lost_bytes == 0 {
            Some(Cause::Ecn)
        } else if self.rtt.min.is_zero() {
            Some(Cause::NoRtt)
        } else if self.rtt.queue_delay() > self.rtt.queue_threshold() {
            Some(Cause::Queue)
        } else if self.loss_share().is_some_and(|s| s > MAX_RANDOM_LOSS) {
            Some(Cause::LossShare)
        } else {
            None
        }
    }

    /// The round trips the last acknowledgement brought.
    pub fn rtt(&self) -> Rtt {
        self.rtt
    }

    /// The share of recent traffic lost, once there is enough of it to tell.
    pub fn loss_share(&self) -> Option<f64> {
        let acked = self.current.acked + self.previous.acked;
        let lost = self.current.lost + self.previous.lost;
        let total = acked + lost;
        (total >= MIN_SAMPLE_BYTES).then(|| lost as f64 / total as f64)
    }

    /// Loss events so far, by verdict.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    fn rotate(&mut self, now: Instant) {
        let period = (self.rtt.now * 4).max(Duration::from_millis(50));
        match self.period_start {
            None => self.period_start = Some(now),
            Some(start) if now.saturating_duration_since(start) >= period => {
                self.previous = self.current;
                self.current = Period::default();
                self.period_start = Some(now);
            }
            Some(_) => {}
        }
    }
}

/// quinn's Cubic behind a [`LossJudge`]: loss events judged random never reach it. Bursts
/// that fill an eighth of the window count as using it ([`Flight`]).
pub struct Tolerant {
    cubic: Box<dyn Controller>,
    judge: LossJudge,
    flight: Flight,
    standing: StandingRtt,
}

impl Tolerant {
    /// Loss events so far, by verdict.
    pub fn counts(&self) -> Counts {
        self.judge.counts()
    }

    /// Whether Cubic hears acknowledgements the connection marks `app_limited` as such: not
    /// when the recent burst filled its share of the window ([`Flight::app_limited`]).
    fn app_limited(&self, app_limited: bool) -> bool {
        self.flight.app_limited(app_limited, self.cubic.window())
    }
}

impl Controller for Tolerant {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.flight.on_sent(now, bytes);
        self.cubic.on_sent(now, bytes, last_packet_number);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        self.standing
            .on_sample(now, now.saturating_duration_since(sent), rtt.get());
        let path = Rtt::standing(&self.standing, rtt.get(), rtt.min());
        self.judge.on_ack(now, bytes, path);
        self.flight.on_rtt(rtt.get());
        let app_limited = self.app_limited(app_limited);
        self.cubic.on_ack(now, sent, bytes, app_limited, rtt);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        let app_limited = self.app_limited(app_limited);
        self.flight.on_end_acks(now, in_flight);
        self.cubic
            .on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        let verdict = self
            .judge
            .on_loss(now, lost_bytes, is_persistent_congestion);
        // Which rule cut a window is what tells a lossy radio from a full queue: an operator
        // turns this on for one link's module (`roam_net::congestion=debug`).
        tracing::debug!(
            ?verdict,
            lost_bytes,
            rtt_us = self.judge.rtt().now.as_micros() as u64,
            min_rtt_us = self.judge.rtt().min.as_micros() as u64,
            loss_share = self.judge.loss_share().unwrap_or(0.0),
            window = self.cubic.window(),
            "loss event"
        );
        if let Verdict::Congestion(_) = verdict {
            self.cubic
                .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
        }
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.cubic.on_mtu_update(new_mtu);
    }

    fn window(&self) -> u64 {
        self.cubic.window()
    }

    fn metrics(&self) -> ControllerMetrics {
        self.cubic.metrics()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(Tolerant {
            cubic: self.cubic.clone_box(),
            judge: self.judge.clone(),
            flight: self.flight.clone(),
            standing: self.standing.clone(),
        })
    }

    fn initial_window(&self) -> u64 {
        self.cubic.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// Builds a [`Tolerant`] controller per connection.
#[derive(Debug, Default)]
pub struct TolerantConfig {
    cubic: Arc<CubicConfig>,
}

impl TolerantConfig {
    /// Over a Cubic configured as `cubic` (its initial window, for one).
    pub fn new(cubic: CubicConfig) -> Self {
        Self {
            cubic: Arc::new(cubic),
        }
    }
}

impl ControllerFactory for TolerantConfig {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Tolerant {
            cubic: self.cubic.clone().build(now, current_mtu),
            judge: LossJudge::new(),
            flight: Flight::new(),
            standing: StandingRtt::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn path(now_ms: u64, min_ms: u64) -> Rtt {
        Rtt {
            now: MS * now_ms as u32,
            min: MS * min_ms as u32,
        }
    }

    /// A judge that has seen `acked` bytes over a 70 ms path at round trip `rtt_ms`.
    fn judge(t0: Instant, acked: u64, rtt_ms: u64) -> LossJudge {
        let mut j = LossJudge::new();
        for i in 0..acked / 1200 {
            j.on_ack(t0 + MS * i as u32 / 10, 1200, path(rtt_ms, 70));
        }
        j
    }

    #[test]
    fn a_loss_with_no_queue_is_random() {
        let t0 = Instant::now();
        let mut j = judge(t0, 200 * 1200, 71);
        assert_eq!(j.on_loss(t0 + MS * 30, 1200, false), Verdict::Random);
        assert_eq!(
            j.counts(),
            Counts {
                random: 1,
                ..Counts::default()
            }
        );
    }

    #[test]
    fn a_loss_behind_a_queue_is_congestion() {
        let t0 = Instant::now();
        // 70 ms path, 12 ms of queue: above 70/8 = 8.75 ms.
        let mut j = judge(t0, 200 * 1200, 82);
        assert_eq!(
            j.on_loss(t0 + MS * 30, 1200, false),
            Verdict::Congestion(Cause::Queue)
        );
        assert_eq!((j.counts().queue, j.counts().cuts()), (1, 1));
        // 8 ms of queue: still taken for jitter.
        let mut j = judge(t0, 200 * 1200, 78);
        assert_eq!(j.on_loss(t0 + MS * 30, 1200, false), Verdict::Random);
    }

    #[test]
    fn a_held_acknowledgement_or_a_settling_average_is_no_queue() {
        let t0 = Instant::now();
        let mut standing = StandingRtt::new();
        let mut j = LossJudge::new();
        // A link's first burst over a 70 ms path: prompt acknowledgements at 71-72 ms while
        // the smoothed round trip still carries the handshake's 100 ms sample; then the
        // burst's last acknowledgement, held 25 ms by the peer.
        for i in 0..60u32 {
            let smoothed = MS * (100 - i / 2);
            let sample = MS * (71 + i % 2);
            standing.on_sample(t0 + MS * i, sample, smoothed);
            j.on_ack(
                t0 + MS * i,
                1200,
                Rtt::standing(&standing, smoothed, MS * 71),
            );
            if i == 20 {
                // The average still 19 ms up: a loss now must not end slow start.
                assert_eq!(j.on_loss(t0 + MS * i, 1200, false), Verdict::Random);
            }
        }
        standing.on_sample(t0 + MS * 85, MS * 97, MS * 70);
        j.on_ack(
            t0 + MS * 85,
            1200,
            Rtt::standing(&standing, MS * 70, MS * 71),
        );
        assert_eq!(j.on_loss(t0 + MS * 86, 1200, false), Verdict::Random);
        // A queue: every sample 20 ms up for a round trip, and the average following.
        for i in 0..80u32 {
            let t = t0 + MS * 100 + MS * i;
            standing.on_sample(t, MS * 91, MS * 85);
            j.on_ack(t, 1200, Rtt::standing(&standing, MS * 85, MS * 71));
        }
        assert_eq!(
            j.on_loss(t0 + MS * 181, 1200, false),
            Verdict::Congestion(Cause::Queue)
        );
    }

    #[test]
    fn short_paths_need_a_millisecond_of_queue() {
        let t0 = Instant::now();
        let mut j = LossJudge::new();
        j.on_ack(
            t0,
            100_000,
            Rtt {
                now: Duration::from_micros(900),
                min: Duration::from_micros(100),
            },
        );
        assert_eq!(j.on_loss(t0, 1200, false), Verdict::Random);
        j.on_ack(
            t0,
            1200,
            Rtt {
                now: Duration::from_micros(1300),
                min: Duration::from_micros(100),
            },
        );
        assert_eq!(
            j.on_loss(t0, 1200, false),
            Verdict::Congestion(Cause::Queue)
        );
    }

    #[test]
    fn persistent_congestion_ecn_and_no_rtt_yet_always_cut() {
        let t0 = Instant::now();
        let mut j = judge(t0, 200 * 1200, 70);
        assert_eq!(
            j.on_loss(t0, 1200, true),
            Verdict::Congestion(Cause::Persistent)
        );
        assert_eq!(j.on_loss(t0, 0, false), Verdict::Congestion(Cause::Ecn));
        assert_eq!(
            LossJudge::new().on_loss(t0, 1200, false),
            Verdict::Congestion(Cause::NoRtt)
        );
        assert_eq!((j.counts().other, j.counts().cuts()), (2, 2));
    }

    #[test]
    fn frequent_loss_is_congestion_even_without_a_queue() {
        let t0 = Instant::now();
        let mut j = judge(t0, 100 * 1200, 70);
        // 5 of 105 packets lost: tolerated; 15 of 115: a policer.
        let verdicts: Vec<Verdict> = (0..15)
            .map(|i| j.on_loss(t0 + MS * 10 + MS * i, 1200, false))
            .collect();
        assert!(
            verdicts[..5].iter().all(|v| *v == Verdict::Random),
            "{verdicts:?}"
        );
        assert_eq!(verdicts[14], Verdict::Congestion(Cause::LossShare));
        assert!(j.loss_share().is_some_and(|s| s > MAX_RANDOM_LOSS));
    }

    #[test]
    fn the_loss_share_forgets_old_periods() {
        let t0 = Instant::now();
        let mut j = judge(t0, 10 * 1200, 70);
        for i in 0..40 {
            j.on_loss(t0 + MS * i / 2, 1200, false);
        }
        assert!(j.loss_share().is_some_and(|s| s > 0.5));
        // Two periods (4 round trips each) of clean traffic later, the burst is forgotten.
        for i in 0..400u32 {
            j.on_ack(t0 + MS * 300 + MS * i * 2, 1200, path(70, 70));
        }
        assert!(
            j.loss_share().is_some_and(|s| s < 0.01),
            "{:?}",
            j.loss_share()
        );
        assert_eq!(j.on_loss(t0 + MS * 1100, 1200, false), Verdict::Random);
    }

    /// A tolerant controller over Cubic starting with a 2 MB window, as a link builds it.
    fn tolerant(now: Instant) -> Tolerant {
        let mut cubic = CubicConfig::default();
        cubic.initial_window(2_000_000);
        let built = Arc::new(TolerantConfig::new(cubic)).build(now, 1200);
        *built.into_any().downcast::<Tolerant>().expect("a Tolerant")
    }

    #[test]
    fn a_burst_filling_its_share_of_the_window_may_grow_it() {
        let t0 = Instant::now();
        let mut c = tolerant(t0);
        assert_eq!(c.window(), 2_000_000);
        c.on_end_acks(t0, 0, false, None);
        for i in 0..1000u64 {
            c.on_sent(t0 + MS * (i as u32 / 50), 1200, i);
        }
        // 1.2 MB went out and nothing is left to send when its acknowledgements return.
        assert!(!c.app_limited(true));
        assert!(!c.app_limited(false));
        let mut c = tolerant(t0);
        c.on_end_acks(t0, 0, false, None);
        for i in 0..150u64 {
            c.on_sent(t0 + MS * (i as u32 / 50), 1200, i);
        }
        // 180 KB of a 2 MB window: application limited, as the connection says.
        assert!(c.app_limited(true));
    }

    #[test]
    fn one_loss_in_little_traffic_is_not_a_loss_rate() {
        let t0 = Instant::now();
        let mut j = judge(t0, 3 * 1200, 70);
        assert_eq!(j.loss_share(), None);
        assert_eq!(j.on_loss(t0 + MS, 1200, false), Verdict::Random);
    }
}
