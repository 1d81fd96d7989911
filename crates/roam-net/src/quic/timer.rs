//! quinn's timers on tokio, woken up to a millisecond early so that pacing keeps its rate.
//!
//! quinn paces a connection with a token bucket that holds 2 ms of sending at 1.25 x the
//! congestion window per round trip; once it is empty, quinn asks to be woken when the bucket
//! is full again, about 1.6 ms later. tokio's timer rounds every deadline up to its next
//! millisecond tick, so the wake-up comes 2-3 ms after the bucket emptied, and tokens beyond
//! a full bucket are thrown away: a 1 MB message over a 35 ms path left at about 0.75 of the
//! rate the pacer means to allow (docs/operations.md, "The initial window and
//! acknowledgements"; bench/results/lab-e6-pacing.md).
//!
//! [`EarlyTimer`] asks tokio for the tick before the deadline instead, when that tick is
//! still ahead: the pacer then finds most of a bucket and sends it, and asks again. quinn
//! checks its clock before acting on any timer, so a timer woken early for anything else
//! (loss detection, idle, acknowledgement delay) does nothing and is re-armed for the same
//! deadline, which this timer then waits for exactly as tokio would. Never sooner than a
//! millisecond ahead, and at most once per deadline, so it cannot spin.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use quinn::{AsyncTimer, AsyncUdpSocket, Runtime, TokioRuntime};

/// How much earlier than its deadline a timer may wake: tokio's tick.
const EARLY: Duration = Duration::from_millis(1);

/// When to wake for `deadline` at `now`: a tick early, unless that moment has passed or this
/// deadline already woke early once (`woke_early_for`). The second value says whether the
/// wake-up is the early one.
fn wake_at(deadline: Instant, now: Instant, woke_early_for: Option<Instant>) -> (Instant, bool) {
    if woke_early_for == Some(deadline) {
        return (deadline, false);
    }
    match deadline.checked_sub(EARLY) {
        Some(early) if early > now => (early, true),
        _ => (deadline, false),
    }
}

/// quinn's tokio runtime with [`EarlyTimer`]s and [`LinkSocket`](super::link_socket::LinkSocket)s.
/// `max_udp_payload`: the endpoint's largest datagram, which sizes its sockets' receives.
#[derive(Debug)]
pub struct EarlyTimerRuntime {
    tokio: TokioRuntime,
    max_udp_payload: u16,
}

impl EarlyTimerRuntime {
    pub fn new(max_udp_payload: u16) -> Arc<Self> {
        Arc::new(Self {
            tokio: TokioRuntime,
            max_udp_payload,
        })
    }
}

impl Runtime for EarlyTimerRuntime {
    fn new_timer(&self, deadline: Instant) -> Pin<Box<dyn AsyncTimer>> {
        Box::pin(EarlyTimer::new(deadline, Instant::now()))
    }

    fn spawn(&self, future: Pin<Box<dyn Future<Output = ()> + Send>>) {
        self.tokio.spawn(future)
    }

    fn wrap_udp_socket(&self, socket: std::net::UdpSocket) -> io::Result<Arc<dyn AsyncUdpSocket>> {
        Ok(Arc::new(super::link_socket::LinkSocket::new(
            socket,
            self.max_udp_payload,
        )?))
    }
}

/// A tokio sleep armed by [`wake_at`].
pub struct EarlyTimer {
    sleep: Pin<Box<tokio::time::Sleep>>,
    deadline: Instant,
    early: bool,
    woke_early_for: Option<Instant>,
}

impl EarlyTimer {
    fn new(deadline: Instant, now: Instant) -> Self {
        let (at, early) = wake_at(deadline, now, None);
        Self {
            sleep: Box::pin(tokio::time::sleep_until(at.into())),
            deadline,
            early,
            woke_early_for: None,
        }
    }
}

impl fmt::Debug for EarlyTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EarlyTimer")
            .field("deadline", &self.deadline)
            .field("early", &self.early)
            .finish()
    }
}

impl AsyncTimer for EarlyTimer {
    fn reset(mut self: Pin<&mut Self>, deadline: Instant) {
        let (at, early) = wake_at(deadline, Instant::now(), self.woke_early_for);
        self.deadline = deadline;
        self.early = early;
        tokio::time::Sleep::reset(self.sleep.as_mut(), at.into());
    }

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context) -> Poll<()> {
        let fired = Future::poll(self.sleep.as_mut(), cx);
        if fired.is_ready() && self.early {
            self.woke_early_for = Some(self.deadline);
        }
        fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_deadline_more_than_a_tick_ahead_wakes_a_tick_early() {
        let now = Instant::now();
        let pacing = now + Duration::from_micros(1600);
        assert_eq!(wake_at(pacing, now, None), (pacing - EARLY, true));
        assert_eq!(wake_at(now + ms(30), now, None), (now + ms(29), true));
    }

    #[test]
    fn a_deadline_within_a_tick_is_waited_for_exactly() {
        let now = Instant::now();
        let soon = now + Duration::from_micros(900);
        assert_eq!(wake_at(soon, now, None), (soon, false));
        assert_eq!(wake_at(now + EARLY, now, None), (now + EARLY, false));
        assert_eq!(wake_at(now, now, None), (now, false));
    }

    #[test]
    fn a_deadline_that_woke_early_once_is_then_waited_for_exactly() {
        // quinn re-arms the same deadline after an early wake-up that found nothing due.
        let now = Instant::now();
        let loss = now + ms(30);
        assert_eq!(wake_at(loss, now, Some(loss)), (loss, false));
        // A new deadline may wake early again.
        assert_eq!(wake_at(loss + ms(5), now, Some(loss)), (loss + ms(4), true));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_timer_wakes_early_once_then_at_its_deadline() {
        let start = Instant::now();
        let deadline = start + ms(10);
        let mut timer = Box::pin(EarlyTimer::new(deadline, start));
        assert!(timer.early, "armed for the tick before the deadline");
        std::future::poll_fn(|cx| timer.as_mut().poll(cx)).await;
        assert_eq!(timer.woke_early_for, Some(deadline));
        // quinn found nothing due and re-arms the same deadline: now waited for exactly.
        timer.as_mut().reset(deadline);
        assert!(!timer.early);
        std::future::poll_fn(|cx| timer.as_mut().poll(cx)).await;
        assert!(
            Instant::now() >= deadline,
            "never fires before a deadline woken early"
        );
    }
}
