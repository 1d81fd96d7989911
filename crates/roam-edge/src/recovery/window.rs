//! A publisher's retransmission window: the envelopes of one session it sent last, as sealed,
//! bounded by age, bytes and count, and what it answers a request with. Pure: fed envelopes,
//! requests and the time, no I/O.
//!
//! An envelope is kept as the bytes that went out (a reference-counted buffer, no copy), so a
//! resent message is bit for bit the original: subscribers that already have it drop it by
//! its sequence (the replay window), the ones that missed it take it.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::request::Request;
use super::seq_ranges::SeqRanges;

/// How much a window keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowLimits {
    /// Envelopes older than this are let go.
    pub max_age: Duration,
    /// Envelope bytes kept at most (the oldest go first).
    pub max_bytes: usize,
    /// Envelopes kept at most. Beyond the subscribers' replay window (4,096 positions) a
    /// resend would be refused as a replay, so more is never useful.
    pub max_messages: usize,
}

impl Default for WindowLimits {
    /// Ten seconds of any topic a robot sends, within 8 MiB and 4,096 messages per stream
    /// (four seconds of a 1 kHz topic): a router's death and the time its neighbours take to
    /// notice it are a second or two.
    fn default() -> Self {
        Self {
            max_age: Duration::from_secs(10),
            max_bytes: 8 << 20,
            max_messages: roam_proto::replay::ReplayWindow::SIZE as usize,
        }
    }
}

/// A message asked for again within this time of being resent is not resent once more: the
/// first resend reaches every subscriber (it travels on the data name), so the requests of
/// several subscribers that lost the same messages cost one resend.
pub const RESEND_HOLDOFF: Duration = Duration::from_millis(50);
/// Requesters a window remembers for its loss report (the least recent are forgotten).
const MAX_REQUESTERS: usize = 256;

struct Kept {
    seq: u64,
    at: Instant,
    envelope: Bytes,
    resent_at: Option<Instant>,
}

/// What a request is answered with.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// The envelopes to send again, in sequence order.
    pub resend: Vec<Bytes>,
    /// Sequences asked for that the window no longer holds.
    pub gone: u64,
}

/// What a window let down, since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LossReport {
    /// Envelopes sent again.
    pub resent: u64,
    /// Distinct messages some subscriber asked for after the window had let them go.
    pub lost: u64,
    /// Distinct subscribers that asked for such messages.
    pub subscribers: u64,
}

/// One session's retransmission window.
pub struct Window {
    limits: WindowLimits,
    kept: VecDeque<Kept>,
    bytes: usize,
    /// The last sequence pushed (0: none yet).
    last_seq: u64,
    report: LossReport,
    /// Messages reported lost (so asking again does not count them twice).
    lost: SeqRanges,
    /// Requesters that lost messages, and when each last asked.
    losers: HashMap<u64, Instant>,
}

impl Window {
    pub fn new(limits: WindowLimits) -> Self {
        Self {
            limits,
            kept: VecDeque::new(),
            bytes: 0,
            last_seq: 0,
            report: LossReport::default(),
            lost: SeqRanges::default(),
            losers: HashMap::new(),
        }
    }

    /// Keeps the envelope just sent as `seq` (sequences come in increasing order).
    pub fn push(&mut self, seq: u64, envelope: Bytes, now: Instant) {
        if seq <= self.last_seq {
            return;
        }
        self.last_seq = seq;
        self.bytes += envelope.len();
        self.kept.push_back(Kept {
            seq,
            at: now,
            envelope,
            resent_at: None,
        });
        self.trim(now);
    }

    /// Lets go of what is too old, and of the oldest beyond the byte and count limits.
    pub fn trim(&mut self, now: Instant) {
        while let Some(front) = self.kept.front() {
            let old = now.saturating_duration_since(front.at) > self.limits.max_age;
            if !(old
                || self.bytes > self.limits.max_bytes
                || self.kept.len() > self.limits.max_messages)
            {
                break;
            }
            self.bytes -= front.envelope.len();
            self.kept.pop_front();
        }
    }

    /// Messages and bytes held now.
    pub fn held(&self) -> (usize, usize) {
        (self.kept.len(), self.bytes)
    }

    pub fn report(&self) -> LossReport {
        self.report
    }

    /// What to send for `req` (already checked to be for this window's session). Sequences
    /// beyond the last one sent are ignored: nobody can have missed them.
    pub fn answer(&mut self, req: &Request, now: Instant) -> Answer {
        self.trim(now);
        let mut answer = Answer::default();
        let first_kept = self.kept.front().map(|k| k.seq);
        for &(first, last) in &req.ranges {
            // Below the window: let go (all that was sent, when nothing is held any more).
            let gone_end = match first_kept {
                Some(f) => last.min(f.saturating_sub(1)),
                None => last.min(self.last_seq),
            };
            if first <= gone_end {
                let new = self.lost.insert(first, gone_end);
                self.report.lost += new;
                answer.gone += gone_end - first + 1;
            }
            let Some(f) = first_kept else { continue };
            let from = self.kept.partition_point(|k| k.seq < first.max(f));
            for k in self.kept.range_mut(from..) {
                if k.seq > last {
                    break;
                }
                if k.resent_at
                    .is_some_and(|t| now.saturating_duration_since(t) < RESEND_HOLDOFF)
                {
                    continue;
                }
                k.resent_at = Some(now);
                answer.resend.push(k.envelope.clone());
            }
        }
        self.report.resent += answer.resend.len() as u64;
        if answer.gone > 0 {
            self.note_loser(req.requester, now);
        }
        answer
    }

    fn note_loser(&mut self, requester: u64, now: Instant) {
        if self.losers.insert(requester, now).is_none() {
            self.report.subscribers += 1;
        }
        if self.losers.len() > MAX_REQUESTERS {
            if let Some(oldest) = self.losers.iter().min_by_key(|(_, t)| **t).map(|(r, _)| *r) {
                self.losers.remove(&oldest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(seq: u64, len: usize) -> Bytes {
        let mut v = vec![0u8; len];
        v[..8].copy_from_slice(&seq.to_be_bytes());
        Bytes::from(v)
    }

    fn seqs(a: &Answer) -> Vec<u64> {
        a.resend
            .iter()
            .map(|b| u64::from_be_bytes(b[..8].try_into().unwrap()))
            .collect()
    }

    fn req(requester: u64, ranges: &[(u64, u64)]) -> Request {
        Request {
            session: 1,
            requester,
            ranges: ranges.to_vec(),
        }
    }

    #[test]
    fn what_is_held_is_resent_and_what_was_let_go_is_counted() {
        let t0 = Instant::now();
        let limits = WindowLimits {
            max_messages: 5,
            ..WindowLimits::default()
        };
        let mut w = Window::new(limits);
        for s in 1..=10 {
            w.push(s, env(s, 100), t0);
        }
        assert_eq!(w.held(), (5, 500));
        let a = w.answer(&req(1, &[(3, 7), (9, 9), (11, 20)]), t0);
        assert_eq!(seqs(&a), vec![6, 7, 9]);
        assert_eq!(a.gone, 3);
        // A second subscriber asking for the same at once is served by the first resend.
        let b = w.answer(&req(2, &[(3, 7)]), t0 + Duration::from_millis(10));
        assert!(b.resend.is_empty());
        assert_eq!(b.gone, 3);
        // Asked again later (the resend was lost too): resent again.
        let c = w.answer(&req(1, &[(6, 6)]), t0 + RESEND_HOLDOFF * 2);
        assert_eq!(seqs(&c), vec![6]);
        assert_eq!(
            w.report(),
            LossReport {
                resent: 4,
                lost: 3,
                subscribers: 2
            }
        );
    }

    #[test]
    fn age_and_bytes_bound_the_window() {
        let t0 = Instant::now();
        let limits = WindowLimits {
            max_age: Duration::from_secs(1),
            max_bytes: 1000,
            max_messages: 1000,
        };
        let mut w = Window::new(limits);
        for s in 1..=20 {
            w.push(s, env(s, 100), t0);
        }
        assert_eq!(w.held(), (10, 1000));
        w.push(21, env(21, 100), t0 + Duration::from_secs(2));
        assert_eq!(w.held(), (1, 100));
        let a = w.answer(&req(1, &[(1, 21)]), t0 + Duration::from_secs(2));
        assert_eq!((seqs(&a), a.gone), (vec![21], 20));
    }

    #[test]
    fn repeated_requests_count_each_lost_message_once() {
        let t0 = Instant::now();
        let mut w = Window::new(WindowLimits {
            max_messages: 2,
            ..WindowLimits::default()
        });
        for s in 1..=10 {
            w.push(s, env(s, 10), t0);
        }
        for _ in 0..3 {
            w.answer(&req(5, &[(1, 4)]), t0);
        }
        w.answer(&req(6, &[(3, 6)]), t0);
        assert_eq!(w.report().lost, 6);
        assert_eq!(w.report().subscribers, 2);
    }
}
