//! Admission control for connections that have not authenticated yet.
//!
//! Every accepted TCP connection and every QUIC connection attempt holds resources (a file
//! descriptor, handshake state) before its peer has proved anything. Without limits, 1,000
//! connections that send half a ClientHello and wait exhaust a router's file descriptors and
//! lock legitimate peers out. A router therefore bounds, until a connection's Hello is
//! verified:
//!
//! - its time: [`AdmissionLimits::handshake_timeout`] from accept to an authenticated Hello;
//! - their number per source address ([`AdmissionLimits::per_source`]; an IPv6 source is its
//!   /64, what one host usually gets);
//! - their total number ([`AdmissionLimits::total`]). When the total is reached, a newcomer
//!   from a source holding at least two fewer pending connections than the busiest source
//!   takes the place of that source's oldest attempt (fair share): a flood from a few
//!   addresses cannot lock out a peer from another address. Otherwise the newcomer is refused.
//!
//! [`Admission`] is the pure core, fed the time and addresses; [`gate`] is the async shell the
//! accept loops use, and logs what it refuses through [`crate::ratelog`].

pub mod gate;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::link::LinkConfig;

/// Limits on connections that have not authenticated yet (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionLimits {
    /// Longest time from accepting a connection to its verified Hello.
    pub handshake_timeout: Duration,
    /// Most unauthenticated connections at once, over all sources and transports.
    pub total: usize,
    /// Most unauthenticated connections at once from one source address.
    pub per_source: usize,
}

impl AdmissionLimits {
    /// What a router's admission control enforces, from its links' configuration.
    pub fn of(link: &LinkConfig) -> Self {
        Self {
            handshake_timeout: link.handshake_timeout,
            total: link.max_unauthenticated,
            per_source: link.max_unauthenticated_per_source,
        }
    }
}

impl Default for AdmissionLimits {
    fn default() -> Self {
        Self::of(&LinkConfig::default())
    }
}

/// Where connections come from, for the per-source limit: an IPv4 address, or the /64 of an
/// IPv6 one (IPv4-mapped IPv6 addresses count as IPv4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Source(IpAddr);

impl From<IpAddr> for Source {
    fn from(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Source(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Source(IpAddr::V4(v4)),
                None => {
                    let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                    Source(IpAddr::V6(prefix.into()))
                }
            },
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V4(a) => write!(f, "{a}"),
            IpAddr::V6(a) => write!(f, "{a}/64"),
        }
    }
}

/// Identifies one admitted connection; tickets are issued in increasing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(u64);

/// Why a connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// Its source already holds [`AdmissionLimits::per_source`] unauthenticated connections.
    PerSource,
    /// [`AdmissionLimits::total`] are pending and no source holds more than its fair share.
    Total,
}

/// How an admitted connection left the unauthenticated state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Its Hello was verified: it is a link now.
    Authenticated,
    /// Its handshake failed (bad TLS, refused certificate, bad Hello, connection closed).
    Failed,
    /// It was still unauthenticated at its deadline.
    TimedOut,
}

/// An admitted connection: its ticket, its deadline, and the attempt it displaced, if any
/// (already removed; close it).
#[derive(Debug)]
pub struct Admitted<T> {
    pub ticket: Ticket,
    pub deadline: Instant,
    pub evicted: Option<(Ticket, T)>,
}

/// Counters of the admission core (a router's status report shows them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdmissionStats {
    /// Connections unauthenticated now.
    pub pending: usize,
    pub admitted: u64,
    pub authenticated: u64,
    pub failed: u64,
    pub timed_out: u64,
    /// Attempts closed to make room for a newcomer from a less busy source.
    pub evicted: u64,
    pub refused_per_source: u64,
    pub refused_total: u64,
    /// QUIC attempts asked to prove their address first (stateless Retry).
    pub retried: u64,
}

#[derive(Debug)]
struct Entry<T> {
    source: Source,
    deadline: Instant,
    value: T,
}

/// The admission core: who is pending, since when, from where. `T` is what the shell keeps
/// per connection (the means to close it); the core hands it back when the connection must go.
#[derive(Debug)]
pub struct Admission<T> {
    limits: AdmissionLimits,
    /// By ticket, which is admission order, which is deadline order (one fixed timeout).
    pending: BTreeMap<Ticket, Entry<T>>,
    per_source: HashMap<Source, usize>,
    next: u64,
    stats: AdmissionStats,
}

impl<T> Admission<T> {
    pub fn new(limits: AdmissionLimits) -> Self {
        Self {
            limits,
            pending: BTreeMap::new(),
            per_source: HashMap::new(),
            next: 0,
            stats: AdmissionStats::default(),
        }
    }

    pub fn limits(&self) -> AdmissionLimits {
        self.limits
    }

    /// Decides on a connection from `ip` at `now`. Call [`Self::expire`] first, so attempts
    /// past their deadline do not count against the newcomer.
    pub fn admit(&mut self, now: Instant, ip: IpAddr, value: T) -> Result<Admitted<T>, Refusal> {
        let source = Source::from(ip);
        let mine = self.pending_from_source(source);
        if mine >= self.limits.per_source {
            self.stats.refused_per_source += 1;
            return Err(Refusal::PerSource);
        }
        let mut evicted = None;
        if self.pending.len() >= self.limits.total {
            match self.busiest() {
                Some((busiest, n)) if n >= mine + 2 => {
                    evicted = self.take_oldest_of(busiest);
                    self.stats.evicted += 1;
                }
                _ => {
                    self.stats.refused_total += 1;
                    return Err(Refusal::Total);
                }
            }
        }
        let ticket = Ticket(self.next);
        self.next += 1;
        let deadline = now + self.limits.handshake_timeout;
        self.pending.insert(
            ticket,
            Entry {
                source,
                deadline,
                value,
            },
        );
        *self.per_source.entry(source).or_insert(0) += 1;
        self.stats.admitted += 1;
        Ok(Admitted {
            ticket,
            deadline,
            evicted,
        })
    }

    /// A connection left the unauthenticated state. `None` if the core had already let it
    /// go (evicted, expired, or finished before): each connection is counted once.
    pub fn finish(&mut self, ticket: Ticket, outcome: Outcome) -> Option<T> {
        let value = self.remove(ticket)?;
        match outcome {
            Outcome::Authenticated => self.stats.authenticated += 1,
            Outcome::Failed => self.stats.failed += 1,
            Outcome::TimedOut => self.stats.timed_out += 1,
        }
        Some(value)
    }

    /// Removes and returns the connections whose deadline is at or before `now`.
    pub fn expire(&mut self, now: Instant) -> Vec<(Ticket, T)> {
        let due: Vec<Ticket> = self
            .pending
            .iter()
            .take_while(|(_, e)| e.deadline <= now)
            .map(|(t, _)| *t)
            .collect();
        due.into_iter()
            .filter_map(|t| {
                let v = self.finish(t, Outcome::TimedOut)?;
                Some((t, v))
            })
            .collect()
    }

    /// When the next pending connection times out.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.pending.values().next().map(|e| e.deadline)
    }

    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    pub fn pending_from(&self, ip: IpAddr) -> usize {
        self.pending_from_source(Source::from(ip))
    }

    /// Counts the stateless QUIC Retries the shell sent instead of admitting.
    pub fn count_retry(&mut self) {
        self.stats.retried += 1;
    }

    pub fn stats(&self) -> AdmissionStats {
        AdmissionStats {
            pending: self.pending.len(),
            ..self.stats
        }
    }

    fn pending_from_source(&self, source: Source) -> usize {
        self.per_source.get(&source).copied().unwrap_or(0)
    }

    /// The source with the most pending connections (the smallest address on a tie, so the
    /// choice does not depend on hash order).
    fn busiest(&self) -> Option<(Source, usize)> {
        self.per_source
            .iter()
            .map(|(s, n)| (*s, *n))
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
    }

    fn take_oldest_of(&mut self, source: Source) -> Option<(Ticket, T)> {
        let ticket = self
            .pending
            .iter()
            .find(|(_, e)| e.source == source)
            .map(|(t, _)| *t)?;
        let value = self.remove(ticket)?;
        Some((ticket, value))
    }

    fn remove(&mut self, ticket: Ticket) -> Option<T> {
        let entry = self.pending.remove(&ticket)?;
        if let Some(n) = self.per_source.get_mut(&entry.source) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_source.remove(&entry.source);
            }
        }
        Some(entry.value)
    }
}
