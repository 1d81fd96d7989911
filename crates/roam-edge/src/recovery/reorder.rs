//! A subscriber's side of recovery: per publisher session, the next sequence it owes its
//! reader, the messages that came after a gap (held, so the reader still gets them in order),
//! when to ask for the gap again and when to give it up. Pure: fed arrivals and the time, no
//! I/O; the caller sends the requests [`Reorder::poll`] returns.
//!
//! A gap is asked for shortly after it shows (another path may still be delivering it), then
//! again every [`AskPolicy::every`] while nothing of it arrives; after
//! [`AskPolicy::attempts`] requests without progress the missing messages are counted lost
//! and what was held behind them is delivered. So a gap that cannot be filled (the publisher
//! let the messages go, or left) delays the topic by about `attempts × every`, once.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use roam_proto::Name;

use super::request::{MAX_RANGES, MAX_SPAN};

/// When and how often a subscriber asks, and what it holds meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AskPolicy {
    /// A gap is asked for this long after it shows.
    pub first_after: Duration,
    /// Then again this often while nothing of it arrives.
    pub every: Duration,
    /// Requests without progress before the gap is given up.
    pub attempts: u32,
    /// Messages held behind gaps, per session, at most (beyond, the oldest gap is given up).
    pub max_held: usize,
    /// Payload bytes held behind gaps, per session, at most.
    pub max_held_bytes: usize,
}

impl Default for AskPolicy {
    fn default() -> Self {
        Self {
            first_after: Duration::from_millis(20),
            every: Duration::from_millis(200),
            attempts: 8,
            max_held: 4096,
            max_held_bytes: 16 << 20,
        }
    }
}

/// Sessions followed at most (the least recently heard from are forgotten).
const MAX_SESSIONS: usize = 4096;
/// A session without gaps and silent for this long is forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(60);

/// What became of an arrival.
#[derive(Debug, PartialEq, Eq)]
pub enum Arrival<H> {
    /// Next in order: deliver it now, then whatever [`Reorder::pop_ready`] gives.
    Deliver(H),
    /// After a gap: held until the gap is filled or given up.
    Held,
    /// Older than what was already delivered (a resend of what arrived, or of a gap given
    /// up), or [`NEVER_SEALED`]: dropped.
    Late,
}

/// The one sequence no sealer sends (it stops short of it, `SealError::Exhausted`): nothing
/// can follow it in order, so a member's envelope that carries it is dropped.
pub const NEVER_SEALED: u64 = u64::MAX;

/// A request to send: the missing ranges of one session of one data name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    pub name: Name,
    pub session: u64,
    pub ranges: Vec<(u64, u64)>,
}

/// What [`Reorder::poll`] found due.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Due {
    pub asks: Vec<Ask>,
    /// Messages given up on (counted lost) since the last poll.
    pub lost: u64,
}

struct Session<H> {
    name: Name,
    /// The sequence the reader gets next.
    next: u64,
    held: BTreeMap<u64, (H, usize)>,
    held_bytes: usize,
    /// Requests sent since the gap last made progress.
    asked: u32,
    /// Whether the gaps held now were asked for (what fills them then counts as recovered).
    asked_for: bool,
    next_ask: Option<Instant>,
    last_heard: Instant,
}

/// Every recoverable session of one subscriber.
pub struct Reorder<H> {
    policy: AskPolicy,
    sessions: HashMap<u64, Session<H>>,
    ready: VecDeque<H>,
    /// Saturating: a member's sequences may jump by nearly 2^64, and two such gaps given up
    /// would overflow a sum.
    lost: u64,
    recovered: u64,
}

impl<H> Reorder<H> {
    pub fn new(policy: AskPolicy) -> Self {
        Self {
            policy,
            sessions: HashMap::new(),
            ready: VecDeque::new(),
            lost: 0,
            recovered: 0,
        }
    }

    /// Takes message `seq` of `session` (on data name `name`), authenticated and fresh.
    pub fn arrive(
        &mut self,
        name: Name,
        session: u64,
        seq: u64,
        item: H,
        bytes: usize,
        now: Instant,
    ) -> Arrival<H> {
        if seq == NEVER_SEALED {
            return Arrival::Late;
        }
        if !self.sessions.contains_key(&session) && self.sessions.len() >= MAX_SESSIONS {
            self.forget_one();
        }
        let s = self.sessions.entry(session).or_insert_with(|| Session {
            name,
            next: seq,
            held: BTreeMap::new(),
            held_bytes: 0,
            asked: 0,
            asked_for: false,
            next_ask: None,
            last_heard: now,
        });
        s.last_heard = now;
        if seq < s.next {
            return Arrival::Late;
        }
        if s.held.contains_key(&seq) {
            return Arrival::Late;
        }
        // Below the last held message: it fills (part of) a gap, which is progress.
        if s.held.last_key_value().is_some_and(|(k, _)| seq < *k) {
            if s.asked_for {
                self.recovered += 1;
            }
            s.asked = 0;
        }
        if seq == s.next {
            s.next += 1;
            Self::release(s, &mut self.ready);
            return Arrival::Deliver(item);
        }
        if s.held.is_empty() {
            s.next_ask = Some(now + self.policy.first_after);
        }
        s.held.insert(seq, (item, bytes));
        s.held_bytes += bytes;
        while s.held.len() > self.policy.max_held || s.held_bytes > self.policy.max_held_bytes {
            let lost = Self::give_up_first_gap(s, &mut self.ready);
            self.lost = self.lost.saturating_add(lost);
        }
        Arrival::Held
    }

    /// Whether `session` is followed (it arrived before and was not forgotten).
    pub fn knows(&self, session: u64) -> bool {
        self.sessions.contains_key(&session)
    }

    /// Whether message `seq` of `session` would be delivered at once (not held): lets the
    /// caller keep the payload where it is for the common case.
    pub fn would_deliver(&self, session: u64, seq: u64) -> bool {
        seq != NEVER_SEALED && self.sessions.get(&session).is_none_or(|s| seq == s.next)
    }

    /// A message released in order behind a filled or given-up gap.
    pub fn pop_ready(&mut self) -> Option<H> {
        self.ready.pop_front()
    }

    /// The next time [`Self::poll`] has something to do.
    pub fn deadline(&self) -> Option<Instant> {
        self.sessions.values().filter_map(|s| s.next_ask).min()
    }

    /// Requests due now, and gaps given up (their messages counted lost, what was held
    /// behind them made ready).
    pub fn poll(&mut self, now: Instant) -> Due {
        let mut due = Due::default();
        let policy = self.policy;
        for (&session, s) in self.sessions.iter_mut() {
            let Some(at) = s.next_ask else { continue };
            if now < at {
                continue;
            }
            if s.asked >= policy.attempts {
                // Nothing came of the last requests: every gap of the session is given up.
                while !s.held.is_empty() {
                    let lost = Self::give_up_first_gap(s, &mut self.ready);
                    due.lost = due.lost.saturating_add(lost);
                }
                continue;
            }
            s.asked += 1;
            s.asked_for = true;
            s.next_ask = Some(now + policy.every);
            due.asks.push(Ask {
                name: s.name,
                session,
                ranges: Self::holes(s),
            });
        }
        self.sessions
            .retain(|_, s| !s.held.is_empty() || now.duration_since(s.last_heard) < FORGET_AFTER);
        self.lost = self.lost.saturating_add(due.lost);
        due
    }

    /// Messages given up on, and messages that arrived only after they were asked for.
    pub fn counts(&self) -> (u64, u64) {
        (self.lost, self.recovered)
    }

    /// The missing ranges from `next` up to the last held message, within a request's limits.
    fn holes(s: &Session<H>) -> Vec<(u64, u64)> {
        let mut ranges = Vec::new();
        let mut from = s.next;
        let mut span = 0u64;
        for &k in s.held.keys() {
            if k > from {
                // Saturating: a session may start anywhere below NEVER_SEALED.
                let last = (k - 1).min(from.saturating_add(MAX_SPAN - span - 1));
                span += last - from + 1;
                ranges.push((from, last));
                if ranges.len() == MAX_RANGES || span >= MAX_SPAN {
                    break;
                }
            }
            from = k + 1;
        }
        ranges
    }

    /// Counts the messages before the first held one lost and releases what follows in
    /// order; returns how many were lost.
    fn give_up_first_gap(s: &mut Session<H>, ready: &mut VecDeque<H>) -> u64 {
        let Some(&first) = s.held.keys().next() else {
            s.next_ask = None;
            return 0;
        };
        let lost = first - s.next;
        s.next = first;
        s.asked = 0;
        Self::release(s, ready);
        lost
    }

    /// Moves the held messages that are now next in order to `ready`, and schedules the
    /// remaining gap, if any.
    fn release(s: &mut Session<H>, ready: &mut VecDeque<H>) {
        while let Some(entry) = s.held.first_entry() {
            if *entry.key() != s.next {
                break;
            }
            let (item, bytes) = entry.remove();
            s.held_bytes -= bytes;
            s.next += 1;
            ready.push_back(item);
        }
        if s.held.is_empty() {
            s.next_ask = None;
            s.asked = 0;
            s.asked_for = false;
        } else if s.next_ask.is_none() {
            s.next_ask = Some(s.last_heard);
        }
    }

    fn forget_one(&mut self) {
        let oldest = self
            .sessions
            .iter()
            .min_by_key(|(_, s)| (!s.held.is_empty(), s.last_heard))
            .map(|(k, _)| *k);
        if let Some(k) = oldest {
            if let Some(s) = self.sessions.remove(&k) {
                self.ready.extend(s.held.into_values().map(|(h, _)| h));
            }
        }
    }
}

#[cfg(test)]
#[path = "reorder_tests.rs"]
mod tests;
