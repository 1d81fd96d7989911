//! The async shell of admission control. An accept loop asks the [`Gate`] for a [`Pass`]
//! before it spends anything on a connection; the pass runs the handshake under its deadline
//! and ends it early when the core evicts or expires it. Refusals, timeouts and failed
//! handshakes are logged through a [`RateLimitedLog`], one line per cause per interval.

use std::fmt;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, Notify};

use super::{Admission, AdmissionLimits, AdmissionStats, Outcome, Refusal, Ticket};
use crate::link::{Established, LinkError};
use crate::ratelog::RateLimitedLog;

/// How often a cause may log a line; the events in between are counted.
pub const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Which listener a connection came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Listener {
    Tcp,
    Quic,
}

impl fmt::Display for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Listener::Tcp => "TCP",
            Listener::Quic => "QUIC",
        })
    }
}

/// Why the gate ended a handshake before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    TimedOut,
    Evicted,
}

/// What a failed handshake failed on, so a flood of one kind (garbage bytes) does not hide
/// the first line of another (a peer with an expired certificate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Failure {
    Handshake,
    Certificate,
    Hello,
    Io,
}

impl Failure {
    fn of(e: &LinkError) -> Self {
        match e {
            LinkError::Certificate(_) => Failure::Certificate,
            LinkError::Hello(_) => Failure::Hello,
            LinkError::Io(_) => Failure::Io,
            _ => Failure::Handshake,
        }
    }
}

/// A kind of event the gate logs; displays as a plural ("TCP connections refused: ...").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    Refused(Listener, Refusal),
    Evicted(Listener),
    TimedOut(Listener),
    Failed(Listener, Failure),
    AcceptFailed,
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Refused(l, Refusal::PerSource) => write!(
                f,
                "{l} connections refused: their address had too many unauthenticated connections"
            ),
            Cause::Refused(l, Refusal::Total) => write!(
                f,
                "{l} connections refused: too many unauthenticated connections in total"
            ),
            Cause::Evicted(l) => write!(
                f,
                "{l} handshakes closed to make room for a connection from a less busy address"
            ),
            Cause::TimedOut(l) => write!(
                f,
                "{l} connections closed: not authenticated within the handshake timeout"
            ),
            Cause::Failed(l, kind) => {
                let what = match kind {
                    Failure::Handshake => "TLS/QUIC handshake failed",
                    Failure::Certificate => "certificate refused",
                    Failure::Hello => "bad Hello",
                    Failure::Io => "I/O error",
                };
                write!(f, "{l} connections refused: {what}")
            }
            Cause::AcceptFailed => f.write_str("TCP accept failures"),
        }
    }
}

/// Admission control shared by a router's listeners (see [`super`]).
#[derive(Debug)]
pub struct Gate {
    /// Per pending connection, the core keeps the means to end its handshake.
    core: Mutex<Admission<oneshot::Sender<Cut>>>,
    log: RateLimitedLog<Cause>,
    /// Handshakes the core has let go (expired, evicted) whose tasks have not yet dropped
    /// their connection. The core's count no longer holds them, but their sockets are still
    /// open until their tasks run: an accept loop waits for these before it accepts more,
    /// or a one-thread runtime could accept a burst before closing what it replaces.
    closing: AtomicUsize,
    all_closed: Notify,
}

impl Gate {
    pub fn new(limits: AdmissionLimits) -> Arc<Self> {
        Arc::new(Self {
            core: Mutex::new(Admission::new(limits)),
            log: RateLimitedLog::new(LOG_INTERVAL),
            closing: AtomicUsize::new(0),
            all_closed: Notify::new(),
        })
    }

    fn core(&self) -> MutexGuard<'_, Admission<oneshot::Sender<Cut>>> {
        // The core's methods do not panic halfway; a poisoned lock still holds a sound state.
        self.core.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a connection from `remote`, or logs (rate-limited) why not. A refused
    /// connection should be closed at once: that frees its file descriptor.
    pub fn admit(self: &Arc<Self>, remote: SocketAddr, listener: Listener) -> Option<Pass> {
        let (tx, rx) = oneshot::channel();
        let now = Instant::now();
        let (expired, verdict, limits) = {
            let mut core = self.core();
            let expired = core.expire(now);
            let verdict = core.admit(now, remote.ip(), tx);
            (expired, verdict, core.limits())
        };
        for (_, cut) in expired {
            self.cut(cut, Cut::TimedOut);
        }
        match verdict {
            Ok(a) => {
                if let Some((_, cut)) = a.evicted {
                    self.cut(cut, Cut::Evicted);
                }
                Some(Pass {
                    gate: self.clone(),
                    ticket: a.ticket,
                    deadline: a.deadline,
                    cut: rx,
                    remote,
                    listener,
                    finished: false,
                    was_cut: false,
                })
            }
            Err(refusal) => {
                self.log.warn(Cause::Refused(listener, refusal), || {
                    let why = match refusal {
                        Refusal::PerSource => format!(
                            "{} already has {} connections in their handshake \
                             (link.max_unauthenticated_per_source)",
                            super::Source::from(remote.ip()),
                            limits.per_source
                        ),
                        Refusal::Total => format!(
                            "{} connections are in their handshake (link.max_unauthenticated)",
                            limits.total
                        ),
                    };
                    format!("refused {listener} connection from {remote}: {why}")
                });
                None
            }
        }
    }

    /// Tells a pending handshake's task to end it, and counts its connection as closing
    /// until the task has dropped it (see [`Pass`]'s `Drop`).
    fn cut(&self, to: oneshot::Sender<Cut>, why: Cut) {
        self.closing.fetch_add(1, Ordering::AcqRel);
        if to.send(why).is_err() {
            // Its pass is already gone, and with it the connection.
            self.closed_one();
        }
    }

    fn closed_one(&self) {
        if self.closing.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.all_closed.notify_waiters();
        }
    }

    /// Returns once every handshake the gate has cut has dropped its connection. An accept
    /// loop awaits this before each accept, so the descriptors it holds stay within the
    /// limits even when one thread runs both the loop and the handshakes it cuts.
    pub async fn settled(&self) {
        loop {
            // Registered before the check, so a notification in between is not missed.
            let notified = self.all_closed.notified();
            if self.closing.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Whether a QUIC attempt from `ip` whose address is not validated yet should prove it
    /// first (a stateless Retry, one round trip): when handshakes are piling up, or when its
    /// address already has one pending. Then forged source addresses cost the router nothing
    /// and cannot use up a real peer's per-source allowance.
    pub fn wants_address_validation(&self, ip: IpAddr) -> bool {
        let core = self.core();
        core.pending() >= core.limits().per_source || core.pending_from(ip) > 0
    }

    pub fn count_retry(&self) {
        self.core().count_retry();
    }

    /// Logs a failed `accept()` (rate-limited), with what to do when it is the file limit.
    pub fn accept_failed(&self, e: &std::io::Error) {
        self.log.warn(Cause::AcceptFailed, || {
            if e.raw_os_error() == Some(24) {
                format!(
                    "TCP accept failed: {e}; the process is out of file descriptors: raise its \
                     limit (ulimit -n, LimitNOFILE=) or lower link.max_unauthenticated"
                )
            } else {
                format!("TCP accept failed: {e}")
            }
        });
    }

    /// Logs the counts held back by the rate limit whose interval is over. Call about once
    /// a second.
    pub fn flush_log(&self) {
        self.log.flush();
    }

    /// Logs every count held back, however recent (the router is stopping).
    pub fn flush_all_log(&self) {
        self.log.flush_all();
    }

    pub fn stats(&self) -> AdmissionStats {
        self.core().stats()
    }

    pub fn limits(&self) -> AdmissionLimits {
        self.core().limits()
    }

    fn finish(&self, ticket: Ticket, outcome: Outcome) {
        self.core().finish(ticket, outcome);
    }
}

/// One admitted connection's right to finish its handshake. Dropping it releases its place.
#[derive(Debug)]
pub struct Pass {
    gate: Arc<Gate>,
    ticket: Ticket,
    deadline: Instant,
    cut: oneshot::Receiver<Cut>,
    remote: SocketAddr,
    listener: Listener,
    finished: bool,
    /// The gate cut this handshake and the pass took the news (see [`Gate::cut`]).
    was_cut: bool,
}

impl Pass {
    /// Runs `handshake` until it ends, its deadline passes, or the gate evicts it; logs
    /// (rate-limited) why it did not become a link. Dropping `handshake` early closes the
    /// connection it owns.
    pub async fn run<F>(mut self, handshake: F) -> Option<Established>
    where
        F: Future<Output = Result<Established, LinkError>>,
    {
        let deadline = tokio::time::Instant::from_std(self.deadline);
        let ended = tokio::select! {
            r = handshake => Ok(r),
            _ = tokio::time::sleep_until(deadline) => Err(Cut::TimedOut),
            // The core drops the sender only after sending (evicted or expired).
            c = &mut self.cut => {
                self.was_cut = c.is_ok();
                Err(c.unwrap_or(Cut::TimedOut))
            }
        };
        // `handshake`, and the connection it owns, is dropped by now.
        let (listener, remote) = (self.listener, self.remote);
        match ended {
            Ok(Ok(est)) => {
                self.finish(Outcome::Authenticated);
                Some(est)
            }
            Ok(Err(e)) => {
                self.finish(Outcome::Failed);
                let cause = Cause::Failed(listener, Failure::of(&e));
                self.gate.log.warn(cause, || {
                    format!("refused {listener} connection from {remote}: {e}")
                });
                None
            }
            Err(Cut::TimedOut) => {
                self.finish(Outcome::TimedOut);
                let timeout = self.gate.limits().handshake_timeout;
                self.gate.log.warn(Cause::TimedOut(listener), || {
                    format!(
                        "closed {listener} connection from {remote}: not authenticated within \
                         {timeout:?} (link.handshake_timeout_ms)"
                    )
                });
                None
            }
            Err(Cut::Evicted) => {
                // The core already let it go and counted it.
                self.finished = true;
                self.gate.log.warn(Cause::Evicted(listener), || {
                    format!(
                        "closed {listener} connection from {remote} before its handshake \
                         finished: its address holds more unauthenticated connections than \
                         the one that took its place"
                    )
                });
                None
            }
        }
    }

    fn finish(&mut self, outcome: Outcome) {
        if !self.finished {
            self.finished = true;
            self.gate.finish(self.ticket, outcome);
        }
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        self.finish(Outcome::Failed);
        // Whoever owns this pass owns the connection too and drops it with or before the
        // pass: a cut, taken in `run` or still waiting here, is closed now.
        if self.was_cut || self.cut.try_recv().is_ok() {
            self.gate.closed_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::pending;

    use super::*;

    fn addr(last: u8) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, last], 4000))
    }

    fn gate(total: usize, per_source: usize, timeout_ms: u64) -> Arc<Gate> {
        Gate::new(AdmissionLimits {
            handshake_timeout: Duration::from_millis(timeout_ms),
            total,
            per_source,
        })
    }

    #[tokio::test]
    async fn a_handshake_that_never_ends_is_cut_at_its_deadline_and_frees_its_place() {
        let g = gate(4, 1, 50);
        let pass = g.admit(addr(1), Listener::Tcp).expect("admitted");
        assert!(
            g.admit(addr(1), Listener::Tcp).is_none(),
            "per-source limit"
        );
        let ended = pass.run(pending()).await;
        assert!(ended.is_none());
        let s = g.stats();
        assert_eq!((s.timed_out, s.pending, s.refused_per_source), (1, 0, 1));
        assert!(
            g.admit(addr(1), Listener::Tcp).is_some(),
            "its place is free"
        );
    }

    #[tokio::test]
    async fn a_newcomer_from_a_quiet_address_ends_the_busiest_addresses_oldest_handshake() {
        let g = gate(2, 2, 60_000);
        let oldest = g.admit(addr(1), Listener::Tcp).expect("admitted");
        let _second = g.admit(addr(1), Listener::Tcp).expect("admitted");
        let running = tokio::spawn(oldest.run(pending()));
        let _newcomer = g
            .admit(addr(2), Listener::Quic)
            .expect("admitted by eviction");
        let ended = tokio::time::timeout(Duration::from_secs(10), running)
            .await
            .expect("the evicted handshake ends at once")
            .unwrap();
        assert!(ended.is_none());
        let s = g.stats();
        assert_eq!((s.evicted, s.pending, s.failed), (1, 2, 0));
    }

    /// Stands for a connection: records when its handshake future drops it.
    struct Socket(Arc<std::sync::atomic::AtomicBool>);

    impl Drop for Socket {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// A handshake that never ends, owning a "socket" that says when it is closed.
    fn stalled() -> (
        impl Future<Output = Result<Established, LinkError>>,
        Arc<std::sync::atomic::AtomicBool>,
    ) {
        let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let socket = Socket(closed.clone());
        let handshake = async move {
            let _socket = socket;
            pending().await
        };
        (handshake, closed)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_accept_loop_waits_until_what_the_gate_cut_is_closed() {
        // One thread, as a router runs by default: the cut handshakes' tasks only run when
        // the accept loop lets them.
        let g = gate(2, 2, 60_000);
        let mut closed = Vec::new();
        for _ in 0..2 {
            let (handshake, c) = stalled();
            let pass = g.admit(addr(1), Listener::Tcp).expect("admitted");
            tokio::spawn(pass.run(handshake));
            closed.push(c);
        }
        tokio::task::yield_now().await;
        g.settled().await; // nothing cut yet: returns at once
        let _newcomer = g
            .admit(addr(2), Listener::Tcp)
            .expect("admitted by eviction");
        assert!(
            !closed[0].load(Ordering::SeqCst),
            "its task has not run yet"
        );
        g.settled().await;
        assert!(
            closed[0].load(Ordering::SeqCst),
            "the evicted connection is closed"
        );
        assert!(!closed[1].load(Ordering::SeqCst));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn expired_handshakes_count_as_closing_until_their_tasks_drop_them() {
        let g = gate(8, 8, 20);
        let (handshake, closed) = stalled();
        let pass = g.admit(addr(1), Listener::Tcp).expect("admitted");
        // The pass is still waiting to be run when the gate expires it: it owns its cut.
        tokio::time::sleep(Duration::from_millis(40)).await;
        drop(g.admit(addr(2), Listener::Tcp).expect("admitted"));
        assert_eq!(g.closing.load(Ordering::SeqCst), 1);
        tokio::spawn(pass.run(handshake));
        g.settled().await;
        assert!(closed.load(Ordering::SeqCst));
        // A cut whose pass is dropped without running is closed with it.
        let unrun = g.admit(addr(3), Listener::Tcp).expect("admitted");
        tokio::time::sleep(Duration::from_millis(40)).await;
        drop(g.admit(addr(4), Listener::Tcp));
        assert_eq!(g.closing.load(Ordering::SeqCst), 1);
        drop(unrun);
        assert_eq!(g.closing.load(Ordering::SeqCst), 0);
        g.settled().await;
    }

    #[tokio::test]
    async fn a_dropped_pass_releases_its_place_as_a_failure() {
        let g = gate(1, 1, 60_000);
        drop(g.admit(addr(1), Listener::Tcp));
        let s = g.stats();
        assert_eq!((s.failed, s.pending), (1, 0));
        assert!(g.admit(addr(1), Listener::Tcp).is_some());
    }

    #[test]
    fn a_quic_attempt_proves_its_address_when_handshakes_pile_up_or_its_address_has_one() {
        let g = gate(256, 2, 60_000);
        let ip = addr(1).ip();
        assert!(!g.wants_address_validation(ip));
        let _p = g.admit(addr(1), Listener::Quic);
        assert!(
            g.wants_address_validation(ip),
            "its address has one pending"
        );
        assert!(!g.wants_address_validation(addr(2).ip()));
        let _q = g.admit(addr(3), Listener::Quic);
        assert!(
            g.wants_address_validation(addr(2).ip()),
            "two pending in all"
        );
    }
}
