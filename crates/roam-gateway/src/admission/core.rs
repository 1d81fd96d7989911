//! Who gets a connection slot, without I/O: the bookkeeping of every door's connections
//! together, fed the source address and the current time.
//!
//! Two pools, kept apart so that nobody without credentials can lock out somebody with them:
//! - **pending**: a connection that has not authenticated yet (TLS and WebSocket handshakes
//!   under way, or a rosbridge client that has not sent its `auth` op). At most
//!   `max_pending` of them, at most `max_pending_per_source` from one address, each for at
//!   most `auth_deadline`. When the pool is full a new connection takes the place of the
//!   oldest pending one of the busiest source: an attacker must then open connections faster
//!   than a genuine client completes its handshake, instead of opening them once and holding
//!   them.
//! - **admitted**: a connection whose client proved an identity (or any connection of a
//!   gateway without authentication, once its handshake is done). At most `max_clients`.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// The bounds of a gateway's connections, all doors together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionLimits {
    /// Connections with a proven identity at most.
    pub max_clients: usize,
    /// Connections that have not authenticated yet, at most.
    pub max_pending: usize,
    /// Of those, from one source address at most.
    pub max_pending_per_source: usize,
    /// How long a connection may take to authenticate (handshakes included).
    pub auth_deadline: Duration,
}

impl Default for AdmissionLimits {
    fn default() -> Self {
        Self {
            max_clients: 256,
            max_pending: 64,
            max_pending_per_source: 16,
            auth_deadline: Duration::from_secs(10),
        }
    }
}

/// A connection's number in the pools.
pub type SlotId = u64;

/// Why a connection was refused or closed, one counter each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    /// `max_clients` connections had an identity already.
    Full,
    /// The source had `max_pending_per_source` connections authenticating already.
    SourceBusy,
    /// A newer connection took this pending one's place in the full pool.
    Displaced,
    /// The connection did not authenticate within `auth_deadline`.
    Deadline,
}

impl Cause {
    pub const ALL: [Cause; 4] = [
        Cause::Full,
        Cause::SourceBusy,
        Cause::Displaced,
        Cause::Deadline,
    ];

    /// The label of the counter (metrics, the shutdown summary).
    pub fn label(self) -> &'static str {
        match self {
            Cause::Full => "full",
            Cause::SourceBusy => "source_busy",
            Cause::Displaced => "displaced",
            Cause::Deadline => "auth_deadline",
        }
    }

    /// What the client (or the log) is told.
    pub fn reason(self) -> &'static str {
        match self {
            Cause::Full => "too many clients; try again later",
            Cause::SourceBusy => "too many connections from this address are authenticating",
            Cause::Displaced => "too many connections are authenticating; this one waited longest",
            Cause::Deadline => "did not authenticate in time",
        }
    }
}

/// A new connection's place.
#[derive(Debug, PartialEq, Eq)]
pub struct Admitted {
    pub id: SlotId,
    /// A pending connection that must close now to make room (counted as displaced).
    pub displaced: Option<SlotId>,
}

struct Pending {
    source: IpAddr,
    since: Instant,
}

/// The pools of one gateway.
pub struct AdmissionCore {
    limits: AdmissionLimits,
    next: SlotId,
    pending: BTreeMap<SlotId, Pending>,
    per_source: HashMap<IpAddr, usize>,
    admitted: usize,
    refused: BTreeMap<Cause, u64>,
}

impl AdmissionCore {
    pub fn new(limits: AdmissionLimits) -> Self {
        Self {
            limits: AdmissionLimits {
                max_clients: limits.max_clients.max(1),
                max_pending: limits.max_pending.max(1),
                max_pending_per_source: limits.max_pending_per_source.max(1),
                auth_deadline: limits.auth_deadline,
            },
            next: 1,
            pending: BTreeMap::new(),
            per_source: HashMap::new(),
            admitted: 0,
            refused: BTreeMap::new(),
        }
    }

    pub fn limits(&self) -> &AdmissionLimits {
        &self.limits
    }

    /// A new connection from `source`, pending until [`admit`](Self::admit).
    pub fn arrive(&mut self, source: IpAddr, now: Instant) -> Result<Admitted, Cause> {
        if self.per_source.get(&source).copied().unwrap_or(0) >= self.limits.max_pending_per_source
        {
            return Err(self.refuse(Cause::SourceBusy));
        }
        let displaced = if self.pending.len() >= self.limits.max_pending {
            let victim = self.oldest_of_busiest_source();
            if let Some(v) = victim {
                self.leave(v, false);
                self.count(Cause::Displaced);
            }
            victim
        } else {
            None
        };
        let id = self.next;
        self.next += 1;
        self.pending.insert(id, Pending { source, since: now });
        *self.per_source.entry(source).or_insert(0) += 1;
        Ok(Admitted { id, displaced })
    }

    /// The pending connection `id` proved an identity: it moves to the admitted pool, or is
    /// refused when that is full (then it has left both pools). Admitting an admitted
    /// connection again changes nothing.
    pub fn admit(&mut self, id: SlotId) -> Result<(), Cause> {
        let Some(p) = self.pending.remove(&id) else {
            return Ok(());
        };
        self.forget_source(p.source);
        if self.admitted >= self.limits.max_clients {
            return Err(self.refuse(Cause::Full));
        }
        self.admitted += 1;
        Ok(())
    }

    /// The connection closed. `admitted`: whether it was in the admitted pool.
    pub fn leave(&mut self, id: SlotId, admitted: bool) {
        if let Some(p) = self.pending.remove(&id) {
            self.forget_source(p.source);
        } else if admitted {
            self.admitted = self.admitted.saturating_sub(1);
        }
    }

    /// Pending connections past their deadline at `now`; each has left the pool and is
    /// counted.
    pub fn expire(&mut self, now: Instant) -> Vec<SlotId> {
        let deadline = self.limits.auth_deadline;
        let late: Vec<SlotId> = self
            .pending
            .iter()
            .filter(|(_, p)| now.saturating_duration_since(p.since) >= deadline)
            .map(|(id, _)| *id)
            .collect();
        for id in &late {
            self.leave(*id, false);
            self.count(Cause::Deadline);
        }
        late
    }

    /// When the pending connection `id` must have authenticated.
    pub fn deadline(&self, id: SlotId) -> Option<Instant> {
        self.pending
            .get(&id)
            .map(|p| p.since + self.limits.auth_deadline)
    }

    pub fn admitted(&self) -> usize {
        self.admitted
    }

    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Refusals and closes so far, per cause.
    pub fn refused(&self, cause: Cause) -> u64 {
        self.refused.get(&cause).copied().unwrap_or(0)
    }

    fn refuse(&mut self, cause: Cause) -> Cause {
        self.count(cause);
        cause
    }

    fn count(&mut self, cause: Cause) {
        *self.refused.entry(cause).or_insert(0) += 1;
    }

    fn forget_source(&mut self, source: IpAddr) {
        if let Some(n) = self.per_source.get_mut(&source) {
            *n -= 1;
            if *n == 0 {
                self.per_source.remove(&source);
            }
        }
    }

    /// The oldest pending connection of the source with the most pending ones (ids grow with
    /// arrival, so the first one found is the oldest).
    fn oldest_of_busiest_source(&self) -> Option<SlotId> {
        let busiest = self
            .per_source
            .iter()
            .max_by_key(|(addr, n)| (**n, std::cmp::Reverse(**addr)))
            .map(|(addr, _)| *addr)?;
        self.pending
            .iter()
            .find(|(_, p)| p.source == busiest)
            .map(|(id, _)| *id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    fn core(max_clients: usize, max_pending: usize, per_source: usize) -> AdmissionCore {
        AdmissionCore::new(AdmissionLimits {
            max_clients,
            max_pending,
            max_pending_per_source: per_source,
            auth_deadline: Duration::from_secs(10),
        })
    }

    #[test]
    fn admitted_connections_never_exceed_max_clients() {
        let mut c = core(2, 10, 10);
        let t = Instant::now();
        let ids: Vec<SlotId> = (0..5).map(|_| c.arrive(ip(1), t).unwrap().id).collect();
        assert_eq!(c.admit(ids[0]), Ok(()));
        assert_eq!(c.admit(ids[1]), Ok(()));
        assert_eq!(c.admit(ids[2]), Err(Cause::Full));
        assert_eq!(c.admit(ids[3]), Err(Cause::Full));
        assert_eq!(c.admitted(), 2);
        assert_eq!(c.pending(), 1);
        assert_eq!(c.refused(Cause::Full), 2);
        // A refused connection has left; its close changes nothing.
        c.leave(ids[2], false);
        c.leave(ids[0], true);
        assert_eq!(c.admitted(), 1);
        assert_eq!(c.admit(ids[4]), Ok(()));
        assert_eq!(c.admitted(), 2);
        // Admitting twice counts once.
        assert_eq!(c.admit(ids[4]), Ok(()));
        assert_eq!(c.admitted(), 2);
    }

    #[test]
    fn one_source_holds_only_its_share_of_the_pending_pool() {
        let mut c = core(10, 10, 3);
        let t = Instant::now();
        for _ in 0..3 {
            c.arrive(ip(1), t).unwrap();
        }
        assert_eq!(c.arrive(ip(1), t), Err(Cause::SourceBusy));
        assert!(c.arrive(ip(2), t).is_ok());
        assert_eq!(c.refused(Cause::SourceBusy), 1);
    }

    #[test]
    fn a_full_pending_pool_displaces_the_oldest_of_the_busiest_source() {
        let mut c = core(10, 4, 3);
        let t = Instant::now();
        let a1 = c.arrive(ip(1), t).unwrap().id;
        let b1 = c.arrive(ip(2), t).unwrap().id;
        let a2 = c.arrive(ip(1), t).unwrap().id;
        let a3 = c.arrive(ip(1), t).unwrap().id;
        // The genuine client from a third address gets in; the attacker's oldest goes.
        let g = c.arrive(ip(3), t).unwrap();
        assert_eq!(g.displaced, Some(a1));
        assert_eq!(c.pending(), 4);
        assert_eq!(c.refused(Cause::Displaced), 1);
        assert_eq!(c.admit(g.id), Ok(()));
        // The displaced one is gone: admitting it is a no-op.
        assert_eq!(c.admit(a1), Ok(()));
        assert_eq!(c.admitted(), 1);
        let _ = (b1, a2, a3);
    }

    #[test]
    fn pending_connections_expire_at_their_deadline() {
        let mut c = core(10, 10, 10);
        let t = Instant::now();
        let a = c.arrive(ip(1), t).unwrap().id;
        let b = c.arrive(ip(1), t + Duration::from_secs(5)).unwrap().id;
        assert_eq!(c.deadline(a), Some(t + Duration::from_secs(10)));
        assert!(c.expire(t + Duration::from_secs(9)).is_empty());
        assert_eq!(c.expire(t + Duration::from_secs(10)), vec![a]);
        assert_eq!(c.refused(Cause::Deadline), 1);
        assert_eq!(c.admit(b), Ok(()));
        assert_eq!(c.deadline(b), None);
        assert!(c.expire(t + Duration::from_secs(60)).is_empty());
        // The source's count went back to zero.
        assert!(c.per_source.is_empty());
    }
}
