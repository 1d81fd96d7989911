//! A publisher's backlog: payloads published from a thread outside the async runtime (a DDS
//! listener) that wait for a task of their own to seal and send them, in order: those of a
//! topic that is pushed back on, and large ones.
//!
//! CycloneDDS calls a reader's listener on the participant's one receive thread. If that
//! thread waited while one topic is pushed back on (a 13 MB image stream filling its link),
//! every other topic the participant reads would wait with it: the lab's E12 measured small
//! topics' p99 going from 0.34 ms to 20 ms next to an image stream on loopback. With a
//! backlog the thread only waits once a topic has [`BACKLOG_BYTES`] waiting of its own (a
//! keep-all topic its link cannot carry at all); until then a paused topic's payloads queue
//! here and the others flow.
//!
//! Large payloads ([`SEAL_ELSEWHERE`] and up) always queue, even while their topic flows:
//! sealing a 13 MB image takes milliseconds, and on the receive thread every other topic's
//! samples would wait for it (E12 on loopback: the small topics' p99 'into proxy A' went from
//! 70 µs alone to 6.5 ms next to the images). The payloads wait unsealed, so the one task
//! that drains them seals in order and the stream's sequence numbers stay in sending order.
//!
//! What a full backlog does depends on the topic's history ([`WhenFull`]). A keep-all topic
//! makes the thread wait: nothing may be lost, so the DDS writers are pushed back on (with
//! every other topic of the receive thread). A keep-last topic without keys (the ROS 2 default
//! QoS, sensor data) drops its oldest waiting samples instead, as its own DDS history would
//! under the same back-pressure, and the thread goes on. Such a backlog is also shorter: at
//! most its history's depth of samples and [`KEEP_LAST_BYTES`], because what waits here
//! makes every later sample older when it arrives. Over a lossy path that carried 16 of the
//! 26 MB/s of a 13 MB image stream, a 32 MiB backlog kept two images waiting and those that
//! arrived were about 4 s old (lab E12).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use bytes::Bytes;
use roam_proto::PayloadKind;

/// Most bytes one publisher keeps waiting (always room for one payload, whatever its size).
pub const BACKLOG_BYTES: usize = 32 << 20;
/// The same for a keep-last topic, which drops its oldest samples rather than wait.
pub const KEEP_LAST_BYTES: usize = 8 << 20;
/// Payloads this large or larger are sealed by the drainer, never on the publishing thread.
/// At the sealing speed measured here (about 2 GB/s), 256 KiB is some 130 µs: about what a
/// small topic's sample spends getting into the proxy on its own.
pub const SEAL_ELSEWHERE: usize = 256 << 10;

/// A payload waiting to be sealed and sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub kind: PayloadKind,
    pub payload: Bytes,
    /// The publisher's own time of it (a DDS sample's source timestamp, nanoseconds since
    /// the Unix epoch), sealed with it when known.
    pub source_time_ns: Option<u64>,
}

impl Pending {
    pub fn new(kind: PayloadKind, payload: Bytes, source_time_ns: Option<u64>) -> Self {
        Self {
            kind,
            payload,
            source_time_ns,
        }
    }
}

#[derive(Default)]
struct State {
    queue: VecDeque<Pending>,
    bytes: usize,
    /// How many of the queued payloads are data (the rest are lifecycle changes).
    data: usize,
    /// A drainer task is handing envelopes over: new ones must queue behind it, or they
    /// could overtake the one it is sending.
    draining: bool,
}

/// What [`Backlog::offer`] decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Offer {
    /// Nothing waits, the topic flows and the payload is small: seal and send it now, directly.
    SendNow(Pending),
    /// Queued; start a drainer (none runs).
    StartDrainer,
    /// Queued behind a running drainer.
    Queued,
}

/// What a full backlog does with the next payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WhenFull {
    /// The caller waits for room (keep-all, and keyed topics, whose history is per instance).
    #[default]
    Wait,
    /// The oldest waiting data payloads are dropped to make room, and to keep no more than
    /// `depth` of them (keep-last topics without keys, and best-effort ones); lifecycle
    /// payloads are never dropped.
    DropOldest { depth: usize },
}

impl WhenFull {
    /// Most bytes waiting (beyond one payload).
    fn max_bytes(self) -> usize {
        match self {
            WhenFull::Wait => BACKLOG_BYTES,
            WhenFull::DropOldest { .. } => KEEP_LAST_BYTES,
        }
    }
}

/// The backlog of one publisher. The owner seals and sends directly while it may
/// ([`Offer::SendNow`]) and otherwise runs one drainer at a time that calls [`Backlog::next`]
/// until it says done, sealing each payload it gets.
#[derive(Default)]
pub struct Backlog {
    state: Mutex<State>,
    room: Condvar,
    when_full: WhenFull,
}

impl Backlog {
    pub fn new(when_full: WhenFull) -> Self {
        Self {
            when_full,
            ..Self::default()
        }
    }

    /// Offers a payload. `paused` says whether sending it now would wait (its topic is
    /// pushed back on). While the backlog is full, blocks the calling thread ([`WhenFull::Wait`])
    /// or drops the oldest waiting data payloads, each counted in `dropped`.
    pub fn offer(&self, payload: Pending, paused: bool, dropped: &AtomicU64) -> Offer {
        let mut s = match self.state.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        if !s.draining && s.queue.is_empty() && !paused && payload.payload.len() < SEAL_ELSEWHERE {
            return Offer::SendNow(payload);
        }
        let len = payload.payload.len();
        let max_bytes = self.when_full.max_bytes();
        while !s.queue.is_empty() {
            let over_bytes = s.bytes + len > max_bytes;
            let over_depth = match self.when_full {
                WhenFull::DropOldest { depth } => s.data >= depth.max(1),
                WhenFull::Wait => false,
            };
            if !over_bytes && !over_depth {
                break;
            }
            if let WhenFull::DropOldest { .. } = self.when_full {
                let oldest = s.queue.iter().position(|p| p.kind == PayloadKind::Data);
                if let Some(old) = oldest.and_then(|i| s.queue.remove(i)) {
                    s.bytes -= old.payload.len();
                    s.data -= 1;
                    dropped.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                // Only lifecycle changes wait: the depth counts samples.
                if !over_bytes {
                    break;
                }
            }
            // Bounded waits: a drainer that died with the runtime must not hang the caller
            // forever; it looks again and, if still full, waits again.
            s = match self.room.wait_timeout(s, Duration::from_millis(100)) {
                Ok((s, _)) => s,
                Err(p) => p.into_inner().0,
            };
        }
        s.bytes += len;
        s.data += usize::from(payload.kind == PayloadKind::Data);
        s.queue.push_back(payload);
        if s.draining {
            Offer::Queued
        } else {
            s.draining = true;
            Offer::StartDrainer
        }
    }

    /// The drainer's next payload, or `None`: the backlog is empty and the drainer is done
    /// (a later offer starts another).
    pub fn next(&self) -> Option<Pending> {
        let mut s = match self.state.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        match s.queue.pop_front() {
            Some(p) => {
                s.bytes -= p.payload.len();
                s.data -= usize::from(p.kind == PayloadKind::Data);
                drop(s);
                self.room.notify_all();
                Some(p)
            }
            None => {
                s.draining = false;
                None
            }
        }
    }

    /// Whether a newer payload may replace a waiting one ([`WhenFull::DropOldest`]).
    pub fn replaces(&self) -> bool {
        matches!(self.when_full, WhenFull::DropOldest { .. })
    }

    /// Payloads and bytes waiting now.
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

    fn env(n: usize, tag: u8) -> Pending {
        Pending::new(PayloadKind::Data, Bytes::from(vec![tag; n]), None)
    }

    /// Everything the backlog holds, in the order it hands it out: each entry's kind and
    /// first byte (its tag).
    fn drained(b: &Backlog) -> Vec<(PayloadKind, u8)> {
        std::iter::from_fn(|| b.next())
            .map(|p| (p.kind, p.payload.first().copied().unwrap_or(0)))
            .collect()
    }

    impl Backlog {
        /// `offer` where no drop may happen.
        fn offer_counted(&self, p: Pending, paused: bool) -> Offer {
            let dropped = AtomicU64::new(0);
            let offer = self.offer(p, paused, &dropped);
            assert_eq!(dropped.load(Ordering::Relaxed), 0);
            offer
        }
    }

    #[test]
    fn a_flowing_topic_sends_directly() {
        let b = Backlog::default();
        assert_eq!(
            b.offer_counted(env(10, 1), false),
            Offer::SendNow(env(10, 1))
        );
        assert_eq!(b.depth(), (0, 0));
    }

    #[test]
    fn a_paused_topic_queues_and_later_envelopes_stay_behind_the_drainer() {
        let b = Backlog::default();
        assert_eq!(b.offer_counted(env(10, 1), true), Offer::StartDrainer);
        // Flowing again, but the drainer still holds one: queue behind it, in order.
        assert_eq!(b.offer_counted(env(10, 2), false), Offer::Queued);
        assert_eq!(b.next(), Some(env(10, 1)));
        // Empty, but the drainer is still sending the last one it took.
        assert_eq!(b.offer_counted(env(10, 3), false), Offer::Queued);
        assert_eq!(b.next(), Some(env(10, 2)));
        assert_eq!(b.next(), Some(env(10, 3)));
        assert_eq!(b.next(), None);
        // The drainer is done: direct sends again.
        assert_eq!(
            b.offer_counted(env(10, 4), false),
            Offer::SendNow(env(10, 4))
        );
    }

    #[test]
    fn a_large_payload_waits_for_the_drainer_even_while_its_topic_flows() {
        let b = Backlog::default();
        assert_eq!(
            b.offer_counted(env(SEAL_ELSEWHERE, 1), false),
            Offer::StartDrainer
        );
        // A small one behind it waits too, so the drainer seals both in order.
        assert_eq!(b.offer_counted(env(10, 2), false), Offer::Queued);
        assert_eq!(b.next(), Some(env(SEAL_ELSEWHERE, 1)));
        assert_eq!(b.next(), Some(env(10, 2)));
        assert_eq!(b.next(), None);
        assert_eq!(
            b.offer_counted(env(SEAL_ELSEWHERE - 1, 3), false),
            Offer::SendNow(env(SEAL_ELSEWHERE - 1, 3))
        );
    }

    #[test]
    fn one_payload_of_any_size_is_taken_and_a_full_backlog_blocks_until_room() {
        let b = Arc::new(Backlog::default());
        assert_eq!(
            b.offer_counted(env(BACKLOG_BYTES + 1, 1), true),
            Offer::StartDrainer
        );
        let offering = {
            let b = b.clone();
            std::thread::spawn(move || b.offer_counted(env(1, 2), true))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !offering.is_finished(),
            "a full backlog makes the caller wait"
        );
        assert_eq!(b.next().map(|e| e.payload.len()), Some(BACKLOG_BYTES + 1));
        assert_eq!(offering.join().unwrap(), Offer::Queued);
        assert_eq!(b.depth(), (1, 1));
    }

    #[test]
    fn a_full_keep_last_backlog_drops_its_oldest_data_and_never_waits() {
        let b = Backlog::new(WhenFull::DropOldest { depth: 10 });
        let dropped = AtomicU64::new(0);
        let third = KEEP_LAST_BYTES / 3 - 16;
        assert_eq!(b.offer(env(third, 1), true, &dropped), Offer::StartDrainer);
        // A lifecycle change is never dropped, even when it is the oldest.
        let dispose = Pending::new(PayloadKind::Dispose, Bytes::from_static(b"key"), None);
        assert_eq!(b.offer(dispose, true, &dropped), Offer::Queued);
        assert_eq!(b.offer(env(third, 2), true, &dropped), Offer::Queued);
        assert_eq!(b.offer(env(third, 3), true, &dropped), Offer::Queued);
        assert_eq!(dropped.load(Ordering::Relaxed), 0);
        // Full: the next one pushes the oldest data out, on this thread, at once.
        assert_eq!(b.offer(env(third, 4), true, &dropped), Offer::Queued);
        assert_eq!(dropped.load(Ordering::Relaxed), 1);
        assert_eq!(
            drained(&b),
            [
                (PayloadKind::Dispose, b'k'),
                (PayloadKind::Data, 2),
                (PayloadKind::Data, 3),
                (PayloadKind::Data, 4)
            ]
        );
    }

    #[test]
    fn a_keep_last_backlog_keeps_at_most_its_depth_of_samples() {
        let b = Backlog::new(WhenFull::DropOldest { depth: 2 });
        let dropped = AtomicU64::new(0);
        assert_eq!(b.offer(env(10, 1), true, &dropped), Offer::StartDrainer);
        let dispose = Pending::new(PayloadKind::Dispose, Bytes::from_static(b"key"), None);
        assert_eq!(b.offer(dispose, true, &dropped), Offer::Queued);
        // The lifecycle change does not count: two samples wait.
        assert_eq!(b.offer(env(10, 2), true, &dropped), Offer::Queued);
        assert_eq!(dropped.load(Ordering::Relaxed), 0);
        assert_eq!(b.offer(env(10, 3), true, &dropped), Offer::Queued);
        assert_eq!(b.offer(env(10, 4), true, &dropped), Offer::Queued);
        assert_eq!(dropped.load(Ordering::Relaxed), 2);
        assert_eq!(
            drained(&b),
            [
                (PayloadKind::Dispose, b'k'),
                (PayloadKind::Data, 3),
                (PayloadKind::Data, 4)
            ]
        );
    }

    #[test]
    fn a_keep_last_backlog_takes_one_sample_larger_than_its_bytes() {
        let b = Backlog::new(WhenFull::DropOldest { depth: 10 });
        let dropped = AtomicU64::new(0);
        let image = KEEP_LAST_BYTES + 1;
        assert_eq!(b.offer(env(image, 1), true, &dropped), Offer::StartDrainer);
        assert_eq!(b.offer(env(image, 2), true, &dropped), Offer::Queued);
        assert_eq!(dropped.load(Ordering::Relaxed), 1);
        assert_eq!(b.depth(), (1, image));
        assert_eq!(b.next().map(|p| p.payload[0]), Some(2));
    }
}
