//! A subscriber's side of end-to-end recovery, on its reading task: recoverable sessions
//! pass through the [`Reorder`](crate::recovery::Reorder), which holds what came after a gap
//! and says when to ask for it ([`crate::recovery`]).

use std::time::Instant;

use super::{Event, Received, Subscriber};
use crate::recovery::Arrival;
use crate::stats::TopicStats;

impl Subscriber {
    /// Puts a recoverable session's message in order: delivered now if it is next, else
    /// held behind the gap that is asked for ([`crate::recovery`]).
    pub(super) fn sequence(&mut self, received: Received, payload: &mut Vec<u8>) -> Option<Event> {
        let h = received.header;
        let now = Instant::now();
        if !self.reorder.knows(h.session) {
            self.asker.prepare(h.name);
        }
        // The payload stays in the caller's buffer unless it has to be held.
        let plain = match self.reorder.would_deliver(h.session, h.seq) {
            true => Vec::new(),
            false => std::mem::take(payload),
        };
        let len = plain.len();
        let arrival = self
            .reorder
            .arrive(h.name, h.session, h.seq, (received, plain), len, now);
        self.sync_recovery_stats();
        match arrival {
            Arrival::Deliver((received, _)) => self.deliver(received, payload),
            Arrival::Held | Arrival::Late => None,
        }
    }

    /// A message that a filled (or given-up) gap released, in order.
    pub(super) fn release_ready(&mut self, payload: &mut Vec<u8>) -> Option<Event> {
        while let Some((received, plain)) = self.reorder.pop_ready() {
            *payload = plain;
            if let Some(ev) = self.deliver(received, payload) {
                return Some(ev);
            }
        }
        None
    }

    /// Sends the requests due, and gives up the gaps nothing came of.
    pub(super) fn poll_recovery(&mut self) {
        let due = self.reorder.poll(Instant::now());
        for ask in due.asks {
            self.asker.ask(ask);
        }
        self.sync_recovery_stats();
    }

    fn sync_recovery_stats(&mut self) {
        let (lost, recovered) = self.reorder.counts();
        TopicStats::add(&self.stats.lost, lost - self.counted.0);
        TopicStats::add(&self.stats.recovered, recovered - self.counted.1);
        self.counted = (lost, recovered);
    }
}
