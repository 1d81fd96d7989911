//! A publisher's backlog: envelopes sealed on a thread outside the async runtime (a DDS
//! listener) while its topic is pushed back on, handed over in order by a task of its own.
//!
//! CycloneDDS calls a reader's listener on the participant's one receive thread. If that
//! thread waited while one topic is pushed back on (a 13 MB image stream filling its link),
//! every other topic the participant reads would wait with it: the lab's E12 measured small
//! topics' p99 going from 0.34 ms to 20 ms next to an image stream on loopback. With a
//! backlog the thread only waits once a topic has [`BACKLOG_BYTES`] waiting of its own (a
//! keep-all topic its link cannot carry at all); until then a paused topic's envelopes queue
//! here and the others flow.
//!
//! A caller that can stop reading instead of waiting (a DDS reader that leaves samples in its
//! history: the proxy pauses its DDS reader) offers with [`Backlog::offer_nowait`],
//! which never blocks and says when the backlog is full, and asks [`Backlog::when_room`] to be
//! told once it has drained to half: then no topic ever holds up the shared thread.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use bytes::Bytes;

/// Most bytes one publisher keeps waiting (always room for one envelope, whatever its size).
pub const BACKLOG_BYTES: usize = 32 << 20;
/// A full backlog has room again once it is down to this (hysteresis: a reader that paused
/// takes a burst, not one sample per drained envelope).
pub const ROOM_BYTES: usize = BACKLOG_BYTES / 2;

/// Called once the backlog has room.
pub type RoomWaker = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct State {
    queue: VecDeque<Bytes>,
    bytes: usize,
    /// A drainer task is handing envelopes over: new ones must queue behind it, or they
    /// could overtake the one it is sending.
    draining: bool,
    /// Who wants to know when there is room ([`Backlog::when_room`]).
    wakers: Vec<RoomWaker>,
}

impl State {
    fn push(&mut self, envelope: Bytes) -> Offer {
        self.bytes += envelope.len();
        self.queue.push_back(envelope);
        if self.draining {
            Offer::Queued
        } else {
            self.draining = true;
            Offer::StartDrainer
        }
    }

    /// The wakers to call now, if there is room.
    fn due_wakers(&mut self) -> Vec<RoomWaker> {
        if self.bytes <= ROOM_BYTES {
            std::mem::take(&mut self.wakers)
        } else {
            Vec::new()
        }
    }
}

/// What [`Backlog::offer`] decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Offer {
    /// Nothing waits and the topic flows: send this envelope now, directly.
    SendNow(Bytes),
    /// Queued; start a drainer (none runs).
    StartDrainer,
    /// Queued behind a running drainer.
    Queued,
}

/// The backlog of one publisher. The owner sends directly while it may ([`Offer::SendNow`])
/// and otherwise runs one drainer at a time that calls [`Backlog::next`] until it says done.
#[derive(Default)]
pub struct Backlog {
    state: Mutex<State>,
    room: Condvar,
}

impl Backlog {
    /// Offers an envelope. `paused` says whether sending it now would wait (its topic is
    /// pushed back on). Blocks the calling thread only while the backlog is full.
    pub fn offer(&self, envelope: Bytes, paused: bool) -> Offer {
        let mut s = match self.state.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        if !s.draining && s.queue.is_empty() && !paused {
            return Offer::SendNow(envelope);
        }
        while !s.queue.is_empty() && s.bytes + envelope.len() > BACKLOG_BYTES {
            // Bounded waits: a drainer that died with the runtime must not hang the caller
            // forever; it looks again and, if still full, waits again.
            s = match self.room.wait_timeout(s, Duration::from_millis(100)) {
                Ok((s, _)) => s,
                Err(p) => p.into_inner().0,
            };
        }
        s.push(envelope)
    }

    /// Like [`Self::offer`], but never waits: the envelope is always taken, and the flag says
    /// whether the backlog is full now (the caller should stop offering until
    /// [`Self::when_room`] calls it back).
    pub fn offer_nowait(&self, envelope: Bytes, paused: bool) -> (Offer, bool) {
        let mut s = self.lock();
        if !s.draining && s.queue.is_empty() && !paused {
            return (Offer::SendNow(envelope), false);
        }
        let offer = s.push(envelope);
        (offer, s.bytes >= BACKLOG_BYTES)
    }

    /// Calls `waker` once the backlog is down to [`ROOM_BYTES`]: now, on this thread, if it
    /// is already; else on the drainer's, when it gets there (so `waker` must be quick, e.g.
    /// hand work to another thread).
    pub fn when_room(&self, waker: RoomWaker) {
        let due = {
            let mut s = self.lock();
            s.wakers.push(waker);
            s.due_wakers()
        };
        due.into_iter().for_each(|w| w());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        }
    }

    /// The drainer's next envelope, or `None`: the backlog is empty and the drainer is done
    /// (a later offer starts another).
    pub fn next(&self) -> Option<Bytes> {
        let mut s = match self.state.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        let (next, due) = match s.queue.pop_front() {
            Some(env) => {
                s.bytes -= env.len();
                (Some(env), s.due_wakers())
            }
            None => {
                s.draining = false;
                (None, s.due_wakers())
            }
        };
        drop(s);
        if next.is_some() {
            self.room.notify_all();
        }
        due.into_iter().for_each(|w| w());
        next
    }

    /// Envelopes and bytes waiting now.
    pub fn depth(&self) -> (usize, usize) {
        match self.state.lock() {
            Ok(s) => (s.queue.len(), s.bytes),
            Err(p) => {
                let s = p.into_inner();
                (s.queue.len(), s.bytes)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn env(n: usize, tag: u8) -> Bytes {
        Bytes::from(vec![tag; n])
    }

    #[test]
    fn a_flowing_topic_sends_directly() {
        let b = Backlog::default();
        assert_eq!(b.offer(env(10, 1), false), Offer::SendNow(env(10, 1)));
        assert_eq!(b.depth(), (0, 0));
    }

    #[test]
    fn a_paused_topic_queues_and_later_envelopes_stay_behind_the_drainer() {
        let b = Backlog::default();
        assert_eq!(b.offer(env(10, 1), true), Offer::StartDrainer);
        // Flowing again, but the drainer still holds one: queue behind it, in order.
        assert_eq!(b.offer(env(10, 2), false), Offer::Queued);
        assert_eq!(b.next(), Some(env(10, 1)));
        // Empty, but the drainer is still sending the last one it took.
        assert_eq!(b.offer(env(10, 3), false), Offer::Queued);
        assert_eq!(b.next(), Some(env(10, 2)));
        assert_eq!(b.next(), Some(env(10, 3)));
        assert_eq!(b.next(), None);
        // The drainer is done: direct sends again.
        assert_eq!(b.offer(env(10, 4), false), Offer::SendNow(env(10, 4)));
    }

    #[test]
    fn one_envelope_of_any_size_is_taken_and_a_full_backlog_blocks_until_room() {
        let b = Arc::new(Backlog::default());
        assert_eq!(b.offer(env(BACKLOG_BYTES + 1, 1), true), Offer::StartDrainer);
        let offering = {
            let b = b.clone();
            std::thread::spawn(move || b.offer(env(1, 2), true))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!offering.is_finished(), "a full backlog makes the caller wait");
        assert_eq!(b.next().map(|e| e.len()), Some(BACKLOG_BYTES + 1));
        assert_eq!(offering.join().unwrap(), Offer::Queued);
        assert_eq!(b.depth(), (1, 1));
    }

    #[test]
    fn offering_without_waiting_says_full_and_room_comes_back_at_half() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let b = Backlog::default();
        let chunk = BACKLOG_BYTES / 4;
        assert_eq!(b.offer_nowait(env(chunk, 1), true), (Offer::StartDrainer, false));
        assert_eq!(b.offer_nowait(env(chunk, 2), true), (Offer::Queued, false));
        assert_eq!(b.offer_nowait(env(chunk, 3), true), (Offer::Queued, false));
        // Never waits, even past the bound: the caller stops on "full".
        assert_eq!(b.offer_nowait(env(chunk, 4), true), (Offer::Queued, true));
        assert_eq!(b.offer_nowait(env(chunk, 5), true), (Offer::Queued, true));
        let woken = Arc::new(AtomicUsize::new(0));
        let w = woken.clone();
        b.when_room(Box::new(move || {
            w.fetch_add(1, Ordering::SeqCst);
        }));
        assert_eq!(woken.load(Ordering::SeqCst), 0, "no room yet");
        assert!(b.next().is_some()); // 4 chunks left
        assert!(b.next().is_some()); // 3 left: above half
        assert_eq!(woken.load(Ordering::SeqCst), 0);
        assert!(b.next().is_some()); // 2 left: half
        assert_eq!(woken.load(Ordering::SeqCst), 1);
        assert!(b.next().is_some());
        assert_eq!(woken.load(Ordering::SeqCst), 1, "called once");
        // With room already, the waker runs at once.
        let w = woken.clone();
        b.when_room(Box::new(move || {
            w.fetch_add(1, Ordering::SeqCst);
        }));
        assert_eq!(woken.load(Ordering::SeqCst), 2);
    }
}
