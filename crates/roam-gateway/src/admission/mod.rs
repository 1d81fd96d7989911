//! Connection slots shared by every door of a gateway: [`core`] decides, this shell keeps the
//! decisions in one lock and wakes the connections it closes.
//!
//! A door takes a [`Slot`] when a TCP connection arrives (before TLS), calls
//! [`Slot::admit`] once the client has proved an identity, and waits on [`Slot::closed`]
//! beside its work: it fires when the slot's deadline to authenticate passes or a newer
//! connection displaced it from the pending pool. Dropping the slot gives it back.

pub mod core;

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::Notify;

use self::core::AdmissionCore;
pub use self::core::{AdmissionLimits, Cause, SlotId};
use crate::Stats;

/// Now, on the runtime's clock (the one the deadlines are slept to; paused in tests).
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// How a slot ended, told to its connection.
#[derive(Default)]
struct Signal {
    wake: Notify,
    ended: Mutex<Option<Cause>>,
}

impl Signal {
    fn end(&self, cause: Cause) {
        let mut e = self.ended.lock().unwrap_or_else(|p| p.into_inner());
        e.get_or_insert(cause);
        drop(e);
        self.wake.notify_one();
    }

    fn ended(&self) -> Option<Cause> {
        *self.ended.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct State {
    core: AdmissionCore,
    signals: HashMap<SlotId, Arc<Signal>>,
}

/// The slots of one gateway, all doors together.
pub struct Admission {
    state: Mutex<State>,
}

impl Admission {
    pub fn new(limits: AdmissionLimits) -> Admission {
        Admission {
            state: Mutex::new(State {
                core: AdmissionCore::new(limits),
                signals: HashMap::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn limits(&self) -> AdmissionLimits {
        *self.state().core.limits()
    }

    /// Refusals and closes so far, per cause.
    pub fn refused(&self) -> Vec<(Cause, u64)> {
        let s = self.state();
        Cause::ALL
            .iter()
            .map(|c| (*c, s.core.refused(*c)))
            .collect()
    }

    /// Connections authenticating now.
    pub fn pending(&self) -> usize {
        self.state().core.pending()
    }

    /// Every pending connection past its deadline is told so.
    fn expire(&self, now: Instant) {
        let mut s = self.state();
        for id in s.core.expire(now) {
            if let Some(sig) = s.signals.remove(&id) {
                sig.end(Cause::Deadline);
            }
        }
    }
}

/// A connection's place: pending until [`admit`](Slot::admit), given back on drop.
pub struct Slot {
    admission: Arc<Admission>,
    stats: Arc<Stats>,
    id: SlotId,
    admitted: AtomicBool,
    signal: Arc<Signal>,
}

impl Slot {
    /// A slot for a connection that just arrived from `source`, or why there is none; it
    /// keeps `stats.clients` (connections admitted now) up to date.
    pub fn arrive(
        admission: &Arc<Admission>,
        stats: &Arc<Stats>,
        source: IpAddr,
    ) -> Result<Arc<Slot>, Cause> {
        let signal = Arc::new(Signal::default());
        let mut s = admission.state();
        let a = s.core.arrive(source, now())?;
        if let Some(victim) = a.displaced.and_then(|v| s.signals.remove(&v)) {
            victim.end(Cause::Displaced);
        }
        s.signals.insert(a.id, signal.clone());
        Ok(Arc::new(Slot {
            admission: admission.clone(),
            stats: stats.clone(),
            id: a.id,
            admitted: AtomicBool::new(false),
            signal,
        }))
    }

    /// The client proved an identity: the slot leaves the pending pool for the admitted one,
    /// or the connection must close because `max_clients` are connected (the slot then holds
    /// no place). Idempotent.
    pub fn admit(&self) -> Result<(), Cause> {
        if self.admitted.load(Ordering::Acquire) {
            return Ok(());
        }
        if let Some(c) = self.signal.ended() {
            return Err(c);
        }
        let mut s = self.admission.state();
        s.signals.remove(&self.id);
        match s.core.admit(self.id) {
            Ok(()) => {
                self.admitted.store(true, Ordering::Release);
                self.stats.clients.fetch_add(1, Ordering::Relaxed);
                Stats::count(&self.stats.clients_total);
                Ok(())
            }
            // The door closes the connection itself, after saying why (an HTTP 503, a
            // status); the slot holds no place any more.
            Err(c) => Err(c),
        }
    }

    pub fn is_admitted(&self) -> bool {
        self.admitted.load(Ordering::Acquire)
    }

    /// Why the connection must close, once it must: its deadline to authenticate passed, or
    /// it was displaced. Never fires for an admitted slot, nor for one `admit` refused.
    pub async fn closed(&self) -> Cause {
        loop {
            if let Some(c) = self.signal.ended() {
                return c;
            }
            let deadline = self.admission.state().core.deadline(self.id);
            match deadline {
                Some(at) => {
                    tokio::select! {
                        _ = self.signal.wake.notified() => {}
                        _ = tokio::time::sleep_until(at.into()) => {
                            self.admission.expire(now());
                        }
                    }
                }
                // Admitted (or ended: the loop's check returns it).
                None if self.is_admitted() => std::future::pending::<()>().await,
                None => self.signal.wake.notified().await,
            }
        }
    }

    /// [`closed`](Slot::closed) as an owned future, for shells that poll it.
    pub fn closed_owned(self: &Arc<Self>) -> Pin<Box<dyn Future<Output = Cause> + Send>> {
        let me = self.clone();
        Box::pin(async move { me.closed().await })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let admitted = self.is_admitted();
        let mut s = self.admission.state();
        s.signals.remove(&self.id);
        s.core.leave(self.id, admitted);
        drop(s);
        if admitted {
            self.stats.clients.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn setup(limits: AdmissionLimits) -> (Arc<Admission>, Arc<Stats>) {
        (Arc::new(Admission::new(limits)), Arc::new(Stats::default()))
    }

    #[tokio::test(start_paused = true)]
    async fn a_slot_that_does_not_authenticate_in_time_is_closed() {
        let (a, st) = setup(AdmissionLimits {
            auth_deadline: Duration::from_secs(10),
            ..AdmissionLimits::default()
        });
        let src = IpAddr::from([127, 0, 0, 1]);
        let slow = Slot::arrive(&a, &st, src).unwrap();
        let quick = Slot::arrive(&a, &st, src).unwrap();
        quick.admit().unwrap();
        let started = tokio::time::Instant::now();
        assert_eq!(slow.closed().await, Cause::Deadline);
        assert!(started.elapsed() >= Duration::from_secs(10));
        assert_eq!(a.pending(), 0);
        // The admitted one never closes for the deadline.
        let r = tokio::time::timeout(Duration::from_secs(60), quick.closed()).await;
        assert!(r.is_err());
        assert_eq!(st.clients.load(Ordering::Relaxed), 1);
        drop(quick);
        assert_eq!(st.clients.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn a_displaced_slot_is_told_at_once_and_full_refuses_admission() {
        let (a, st) = setup(AdmissionLimits {
            max_clients: 1,
            max_pending: 2,
            max_pending_per_source: 2,
            auth_deadline: Duration::from_secs(10),
        });
        let attacker = IpAddr::from([127, 0, 0, 2]);
        let first = Slot::arrive(&a, &st, attacker).unwrap();
        let _second = Slot::arrive(&a, &st, attacker).unwrap();
        let genuine = Slot::arrive(&a, &st, IpAddr::from([127, 0, 0, 3])).unwrap();
        assert_eq!(first.closed().await, Cause::Displaced);
        assert_eq!(first.admit(), Err(Cause::Displaced));
        genuine.admit().unwrap();
        let late = Slot::arrive(&a, &st, IpAddr::from([127, 0, 0, 4])).unwrap();
        assert_eq!(late.admit(), Err(Cause::Full));
        assert_eq!(a.pending(), 1);
        let refused: HashMap<Cause, u64> = a.refused().into_iter().collect();
        assert_eq!(refused[&Cause::Displaced], 1);
        assert_eq!(refused[&Cause::Full], 1);
    }
}
