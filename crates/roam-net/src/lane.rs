//! A lane: the bounded queue in front of one writer (one QUIC stream, or the TCP writer).
//!
//! Drop policy (stated in docs/operations.md):
//! - reliable lanes refuse a message when over their message or byte bound; the router drops
//!   it for that link only and counts it, so one slow subscriber never stalls the others nor
//!   grows memory without bound;
//! - best-effort lanes drop their oldest message to make room: fresh data beats stale data.
//!
//! A lane always admits one message when empty, whatever its size, so a single large message
//! (tens of MB) is never refused by the byte bound.
//!
//! A sender may write a message itself instead of queueing it ([`Lane::push_or_write`]) while
//! the lane is empty and its writer idle, so that nothing overtakes anything sent before.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::sync::Notify;

/// How long [`Lane::wait_space`] waits, once a full lane has room, for it to drain to half:
/// at a fast link's rate that is hundreds of messages moved per refill; a slow link's waiting
/// topic resumes after this much anyway (it is tiny next to the stall timeout).
pub const REFILL_PATIENCE: std::time::Duration = std::time::Duration::from_millis(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Reliable,
    BestEffort,
}

/// Bounds of one lane.
#[derive(Debug, Clone, Copy)]
pub struct LaneLimits {
    pub max_messages: usize,
    pub max_bytes: usize,
}

/// What happened to a pushed message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    Queued,
    /// Best effort: queued after dropping this many older messages.
    DroppedOldest(usize),
    /// Reliable and full: the message was not queued.
    Refused,
    /// The lane's writer is gone.
    Closed,
}

/// How much waits in one or more lanes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Depth {
    pub messages: usize,
    pub bytes: usize,
}

impl std::ops::Add for Depth {
    type Output = Depth;
    fn add(self, o: Depth) -> Depth {
        Depth {
            messages: self.messages + o.messages,
            bytes: self.bytes + o.bytes,
        }
    }
}

/// Anything with a size that can sit in a lane.
pub trait Weighted {
    fn size(&self) -> usize;
}

struct State<T> {
    queue: VecDeque<T>,
    bytes: usize,
    closed: bool,
    /// The writer holds messages it took and has not finished writing.
    busy: bool,
}

pub struct Lane<T> {
    state: Mutex<State<T>>,
    notify: Notify,
    /// Signalled whenever a message leaves the lane.
    space: Notify,
    policy: Policy,
    limits: LaneLimits,
}

impl<T: Weighted> Lane<T> {
    pub fn new(policy: Policy, limits: LaneLimits) -> Self {
        Self {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                bytes: 0,
                closed: false,
                busy: false,
            }),
            notify: Notify::new(),
            space: Notify::new(),
            policy,
            limits,
        }
    }

    pub fn push(&self, item: T) -> Pushed {
        self.push_or_write(item, Some)
    }

    /// Pushes `item`, unless the lane is empty and its writer idle: then `write` is offered
    /// it first, with the lane held so that nothing pushed meanwhile overtakes it, and
    /// writes it on the caller's thread; what it gives back (the item, or the part of it it
    /// could not write) is queued as usual.
    pub fn push_or_write(&self, item: T, write: impl FnOnce(T) -> Option<T>) -> Pushed {
        let mut s = match self.state.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        if s.closed {
            return Pushed::Closed;
        }
        let item = match s.queue.is_empty() && !s.busy {
            true => match write(item) {
                Some(rest) => rest,
                None => return Pushed::Queued,
            },
            false => item,
        };
        let size = item.size();
        let over = |s: &State<T>| {
            !s.queue.is_empty()
                && (s.queue.len() >= self.limits.max_messages
                    || s.bytes + size > self.limits.max_bytes)
        };
        let mut dropped = 0;
        while over(&s) {
            match self.policy {
                Policy::Reliable => return Pushed::Refused,
                Policy::BestEffort => {
                    if let Some(old) = s.queue.pop_front() {
                        s.bytes -= old.size();
                        dropped += 1;
                    }
                }
            }
        }
        s.bytes += size;
        s.queue.push_back(item);
        drop(s);
        self.notify.notify_one();
        if dropped > 0 {
            Pushed::DroppedOldest(dropped)
        } else {
            Pushed::Queued
        }
    }

    /// Waits for the next message; `None` once closed and drained.
    pub async fn pop(&self) -> Option<T> {
        loop {
            {
                let mut s = match self.state.lock() {
                    Ok(s) => s,
                    Err(p) => p.into_inner(),
                };
                if let Some(item) = s.queue.pop_front() {
                    s.bytes -= item.size();
                    s.busy = true;
                    drop(s);
                    self.space.notify_waiters();
                    return Some(item);
                }
                if s.closed {
                    return None;
                }
            }
            self.notify.notified().await;
        }
    }

    /// Takes whatever is queued without waiting (for batching writes).
    pub fn try_pop(&self) -> Option<T> {
        let mut s = match self.state.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        let item = s.queue.pop_front()?;
        s.bytes -= item.size();
        s.busy = true;
        drop(s);
        self.space.notify_waiters();
        Some(item)
    }

    /// Resolves once the lane has room for another message (or is closed), and then has
    /// drained to half its bounds or [`REFILL_PATIENCE`] has passed. Whoever refills a full
    /// lane after this moves a batch: resolving at the first free slot made a topic that
    /// outruns its link pause, wake, move a message or a writer's batch, and pause again,
    /// with a task, a command and a publisher wake-up each time.
    pub async fn wait_space(&self) {
        self.wait_until(|s| self.has_room(s)).await;
        let half = |s: &State<T>| {
            s.closed
                || (s.queue.len() <= self.limits.max_messages / 2
                    && s.bytes <= self.limits.max_bytes / 2)
        };
        let _ = tokio::time::timeout(REFILL_PATIENCE, self.wait_until(half)).await;
    }

    async fn wait_until(&self, ready: impl Fn(&State<T>) -> bool) {
        loop {
            let space = self.space.notified();
            tokio::pin!(space);
            space.as_mut().enable();
            let now_ready = match self.state.lock() {
                Ok(s) => ready(&s),
                Err(p) => ready(&p.into_inner()),
            };
            if now_ready {
                return;
            }
            space.await;
        }
    }

    fn has_room(&self, s: &State<T>) -> bool {
        s.closed || (s.queue.len() < self.limits.max_messages && s.bytes < self.limits.max_bytes)
    }

    /// Whether the lane has room for another message (or is closed: nothing waits on it).
    pub fn has_space(&self) -> bool {
        match self.state.lock() {
            Ok(s) => self.has_room(&s),
            Err(p) => self.has_room(&p.into_inner()),
        }
    }

    /// The writer has written all it took ([`Lane::push_or_write`] may write again).
    pub fn written(&self) {
        match self.state.lock() {
            Ok(mut s) => s.busy = false,
            Err(p) => p.into_inner().busy = false,
        }
    }

    pub fn close(&self) {
        match self.state.lock() {
            Ok(mut s) => s.closed = true,
            Err(p) => p.into_inner().closed = true,
        }
        self.notify.notify_one();
        self.space.notify_waiters();
    }

    pub fn queued_bytes(&self) -> usize {
        self.state.lock().map(|s| s.bytes).unwrap_or(0)
    }

    /// What waits in the lane now: messages and their bytes.
    pub fn depth(&self) -> Depth {
        match self.state.lock() {
            Ok(s) => Depth {
                messages: s.queue.len(),
                bytes: s.bytes,
            },
            Err(p) => {
                let s = p.into_inner();
                Depth {
                    messages: s.queue.len(),
                    bytes: s.bytes,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Weighted for Vec<u8> {
        fn size(&self) -> usize {
            self.len()
        }
    }

    const LIMITS: LaneLimits = LaneLimits {
        max_messages: 3,
        max_bytes: 100,
    };

    #[tokio::test]
    async fn reliable_refuses_when_full() {
        let l = Lane::new(Policy::Reliable, LIMITS);
        assert_eq!(l.push(vec![0; 10]), Pushed::Queued);
        assert_eq!(l.push(vec![1; 10]), Pushed::Queued);
        assert_eq!(l.push(vec![2; 10]), Pushed::Queued);
        assert_eq!(l.push(vec![3; 10]), Pushed::Refused);
        assert_eq!(l.pop().await.unwrap()[0], 0);
        assert_eq!(l.push(vec![3; 90]), Pushed::Refused); // byte bound
        assert_eq!(l.push(vec![3; 10]), Pushed::Queued);
    }

    #[tokio::test]
    async fn best_effort_drops_oldest() {
        let l = Lane::new(Policy::BestEffort, LIMITS);
        for i in 0..5u8 {
            l.push(vec![i; 10]);
        }
        assert_eq!(l.pop().await.unwrap()[0], 2);
        assert_eq!(l.push(vec![9; 95]), Pushed::DroppedOldest(2));
        assert_eq!(l.pop().await.unwrap()[0], 9);
    }

    /// A full lane of 8 one-byte messages (room up to 8, half is 4).
    fn full_lane() -> std::sync::Arc<Lane<Vec<u8>>> {
        let l = std::sync::Arc::new(Lane::new(
            Policy::Reliable,
            LaneLimits {
                max_messages: 8,
                max_bytes: 1000,
            },
        ));
        for i in 0..8u8 {
            assert_eq!(l.push(vec![i]), Pushed::Queued);
        }
        l
    }

    /// A task waiting for space in `l`, already parked on it.
    async fn waiting_for_space(l: &std::sync::Arc<Lane<Vec<u8>>>) -> tokio::task::JoinHandle<()> {
        let l = l.clone();
        let waiter = tokio::spawn(async move { l.wait_space().await });
        tokio::task::yield_now().await;
        waiter
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_lane_is_refilled_once_half_drained_not_at_the_first_free_slot() {
        let l = full_lane();
        let waiter = waiting_for_space(&l).await;
        // One slot frees: room, but not yet half drained.
        l.try_pop().unwrap();
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        // Half drained: resolves at once, well before the patience runs out.
        let t0 = tokio::time::Instant::now();
        for _ in 0..3 {
            l.try_pop().unwrap();
        }
        waiter.await.unwrap();
        assert!(t0.elapsed() < REFILL_PATIENCE);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slowly_draining_lane_is_refilled_after_the_patience() {
        let l = full_lane();
        let t0 = tokio::time::Instant::now();
        let waiter = waiting_for_space(&l).await;
        l.try_pop().unwrap();
        waiter.await.unwrap();
        assert_eq!(t0.elapsed(), REFILL_PATIENCE);
        assert!(l.has_space());
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_space_ends_when_the_lane_closes() {
        let l = full_lane();
        let waiter = waiting_for_space(&l).await;
        l.close();
        waiter.await.unwrap();
    }

    #[tokio::test]
    async fn a_sender_writes_itself_only_while_nothing_is_queued_or_being_written() {
        let l = Lane::new(Policy::Reliable, LIMITS);
        let wrote = std::cell::RefCell::new(Vec::new());
        let write = |item: Vec<u8>| {
            wrote.borrow_mut().push(item[0]);
            None
        };
        // Empty and idle: the sender writes.
        assert_eq!(l.push_or_write(vec![0], write), Pushed::Queued);
        // Queued behind another message: never written ahead of it.
        assert_eq!(l.push(vec![1]), Pushed::Queued);
        assert_eq!(l.push_or_write(vec![2], |_| unreachable!()), Pushed::Queued);
        // The writer took both and has not finished: still queued, in order.
        assert_eq!(l.pop().await.unwrap()[0], 1);
        assert_eq!(l.try_pop().unwrap()[0], 2);
        assert_eq!(l.push_or_write(vec![3], |_| unreachable!()), Pushed::Queued);
        assert_eq!(l.try_pop().unwrap()[0], 3);
        // Written and idle again: the sender writes, and what it could not write is queued.
        l.written();
        assert_eq!(l.push_or_write(vec![4], |_| Some(vec![44])), Pushed::Queued);
        assert_eq!(l.depth().messages, 1);
        assert_eq!(l.push_or_write(vec![5], |_| unreachable!()), Pushed::Queued);
        assert_eq!(l.pop().await.unwrap()[0], 44);
        assert_eq!(l.pop().await.unwrap()[0], 5);
        l.written();
        assert_eq!(l.push_or_write(vec![6], write), Pushed::Queued);
        assert_eq!(*wrote.borrow(), vec![0, 6]);
        // Closed: nothing is written.
        l.close();
        assert_eq!(l.push_or_write(vec![7], |_| unreachable!()), Pushed::Closed);
    }

    #[tokio::test]
    async fn empty_lane_admits_one_huge_message() {
        let l = Lane::new(Policy::Reliable, LIMITS);
        assert_eq!(l.push(vec![0; 1000]), Pushed::Queued);
        l.close();
        assert_eq!(l.pop().await.unwrap().len(), 1000);
        assert!(l.pop().await.is_none());
        assert_eq!(l.push(vec![0; 1]), Pushed::Closed);
    }
}
