//! Noticing a dead peer within about a second on a link that carries traffic, instead of at
//! the idle timeout (3 s): a router that dies on the path stops traffic only that long
//! before its neighbours route around it.
//!
//! A live peer answers what we send: it acknowledges an ack-eliciting packet within its ack
//! delay, and one of ours is ack-eliciting at least every keepalive interval (a keepalive
//! when nothing else is sent). So once we have sent since the last datagram came, silence
//! longer than a keepalive plus a few round trips (and at least [`LinkConfig`]'s
//! `silence_timeout`) means the peer or the path is gone. [`Silence`] is the pure decision,
//! fed the connection's datagram counters; [`watch`] the task that feeds it.
//!
//! [`LinkConfig`]: crate::link::LinkConfig

use std::time::Duration;

/// How often the watch reads the counters: the detection's resolution.
pub const TICK: Duration = Duration::from_millis(100);

/// A look at the counters this much later than the one before means this process was not
/// running (a loaded machine, a debugger, a suspended VM): what the peer sent meanwhile may
/// not be counted yet, so the silence so far is not the peer's, and is not counted.
pub const LATE: Duration = Duration::from_millis(300);

/// What the watch knows of a peer's silence.
#[derive(Debug, Default)]
pub struct Silence {
    rx: u64,
    tx: u64,
    /// When we first found something sent since the last datagram came.
    unanswered_since: Option<Duration>,
    /// When the counters were last looked at.
    looked: Option<Duration>,
}

impl Silence {
    /// Takes the datagrams received and sent so far, at `now` (any monotonic origin); says
    /// how long what we sent has gone unanswered once that reaches `limit`.
    pub fn observe(
        &mut self,
        now: Duration,
        rx: u64,
        tx: u64,
        limit: Duration,
    ) -> Option<Duration> {
        let late = self
            .looked
            .replace(now)
            .is_some_and(|t| now.saturating_sub(t) > LATE);
        if rx != self.rx || late {
            *self = Silence {
                rx,
                tx,
                unanswered_since: None,
                looked: Some(now),
            };
            return None;
        }
        if tx != self.tx {
            self.tx = tx;
            self.unanswered_since.get_or_insert(now);
        }
        let silent = now.saturating_sub(self.unanswered_since?);
        (silent >= limit).then_some(silent)
    }
}

/// How long a peer may leave what we sent unanswered: our keepalive interval plus six round
/// trips, at least `floor`, and below the idle timeout (which ends the link anyway).
pub fn limit(floor: Duration, keepalive: Duration, rtt: Duration, idle: Duration) -> Duration {
    floor.max(keepalive + rtt * 6).min(idle)
}

/// Closes `conn` once its peer has been silent past [`limit`] (`floor` zero: never); ends
/// with the connection.
pub async fn watch(
    conn: quinn::Connection,
    floor: Duration,
    keepalive: Duration,
    idle: Duration,
    peer: String,
) {
    if floor.is_zero() {
        return;
    }
    let start = tokio::time::Instant::now();
    let mut silence = Silence::default();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = conn.closed() => return,
            _ = tick.tick() => {}
        }
        let s = conn.stats();
        let limit = limit(floor, keepalive, s.path.rtt, idle);
        let now = start.elapsed();
        if let Some(silent) = silence.observe(now, s.udp_rx.datagrams, s.udp_tx.datagrams, limit) {
            tracing::warn!(
                "link to {peer}: nothing heard for {silent:?} after sending (link.silence_timeout_ms); closing it as dead"
            );
            conn.close(SILENT_CODE.into(), b"peer silent");
            return;
        }
    }
}

/// The application close code of a link closed for its peer's silence.
pub const SILENT_CODE: u32 = 3;

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn silence_counts_from_the_first_unanswered_send() {
        let mut s = Silence::default();
        let limit = 1000 * MS;
        // Traffic both ways: never silent.
        for t in 0..50u32 {
            let n = u64::from(t);
            assert_eq!(s.observe(t * 100 * MS, n, n, limit), None);
        }
        // Nothing comes any more; we go on sending from 5.1 s.
        for t in 51..61u32 {
            assert_eq!(s.observe(t * 100 * MS, 49, u64::from(t), limit), None);
        }
        assert_eq!(s.observe(6100 * MS, 49, 61, limit), Some(1000 * MS));
        // A datagram at last: the count starts over.
        assert_eq!(s.observe(6200 * MS, 50, 61, limit), None);
        assert_eq!(s.observe(9000 * MS, 50, 61, limit), None);
    }

    #[test]
    fn a_stall_of_this_process_does_not_count_as_the_peer_s_silence() {
        let mut s = Silence::default();
        let limit = 1000 * MS;
        for t in 0..10u32 {
            let n = u64::from(t);
            s.observe(t * 100 * MS, n, n, limit);
        }
        // Sending, unanswered from 1.0 s; then this process stops for 2 s (the peer's
        // answers wait unread in the socket).
        assert_eq!(s.observe(1000 * MS, 9, 10, limit), None);
        assert_eq!(s.observe(1100 * MS, 9, 11, limit), None);
        assert_eq!(s.observe(3100 * MS, 9, 12, limit), None);
        // The count starts over from the late look: the peer is silent only 1 s after it.
        assert_eq!(s.observe(3200 * MS, 9, 13, limit), None);
        for t in 33..41u32 {
            assert_eq!(s.observe(t * 100 * MS, 9, u64::from(t), limit), None);
        }
        assert_eq!(s.observe(4200 * MS, 9, 41, limit), Some(1000 * MS));
    }

    #[test]
    fn a_quiet_link_that_sends_nothing_is_not_silent() {
        // Neither side sends (no keepalives): that is the idle timeout's business.
        let mut s = Silence::default();
        s.observe(Duration::ZERO, 10, 10, 1000 * MS);
        assert_eq!(s.observe(60_000 * MS, 10, 10, 1000 * MS), None);
    }

    #[test]
    fn the_limit_covers_a_keepalive_and_round_trips_within_the_idle_timeout() {
        let (ka, idle) = (500 * MS, 3000 * MS);
        assert_eq!(limit(1000 * MS, ka, MS / 10, idle), 1000 * MS);
        // A 200 ms path: 0.5 s + 1.2 s.
        assert_eq!(limit(1000 * MS, ka, 200 * MS, idle), 1700 * MS);
        // A satellite's 600 ms: up to the idle timeout, no further.
        assert_eq!(limit(1000 * MS, ka, 600 * MS, idle), idle);
    }
}
