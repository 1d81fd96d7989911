//! An in-process subscriber's queue of envelopes, bounded by count *and* by bytes.
//!
//! A count alone does not bound memory: 4096 envelopes of 140-byte joystick messages are
//! half a megabyte, 4096 of 13 MB images are 53 GB. So a queue is full when it holds its
//! `depth` envelopes or when the next envelope would take it past `max_bytes`; an empty
//! queue always takes one envelope, whatever its size (else a message larger than the bound
//! could never be delivered). What a full queue means is the sender's choice, as before: a
//! reliable envelope waits for room (pushing back on its topic), a best-effort one is dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::sync::mpsc::error::{SendError, TrySendError};
use tokio::sync::{mpsc, Notify};

/// The byte bound a subscription gets when its owner does not choose one.
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

struct Gauge {
    queued: AtomicUsize,
    max: usize,
    /// Signalled when the receiver takes an envelope (one waiting sender at a time).
    room: Notify,
}

impl Gauge {
    fn admits(&self, len: usize) -> bool {
        let queued = self.queued.load(Ordering::Acquire);
        queued == 0 || queued.saturating_add(len) <= self.max
    }
}

/// A queue of at most `depth` envelopes and (beyond its first) `max_bytes` bytes.
pub fn channel(depth: usize, max_bytes: usize) -> (QueueSender, QueueReceiver) {
    let (tx, rx) = mpsc::channel(depth.max(1));
    let gauge = Arc::new(Gauge {
        queued: AtomicUsize::new(0),
        max: max_bytes,
        room: Notify::new(),
    });
    (
        QueueSender {
            tx,
            gauge: gauge.clone(),
        },
        QueueReceiver { rx, gauge },
    )
}

/// The sending side; cheap to clone.
#[derive(Clone)]
pub struct QueueSender {
    tx: mpsc::Sender<Bytes>,
    gauge: Arc<Gauge>,
}

impl std::fmt::Debug for QueueSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueSender")
            .field("queued_bytes", &self.queued_bytes())
            .finish()
    }
}

impl QueueSender {
    /// Queues the envelope if there is room for it now.
    pub fn try_send(&self, env: Bytes) -> Result<(), TrySendError<Bytes>> {
        if self.tx.is_closed() {
            return Err(TrySendError::Closed(env));
        }
        if !self.gauge.admits(env.len()) {
            return Err(TrySendError::Full(env));
        }
        let len = env.len();
        // Counted before it is visible to the receiver, which subtracts it on taking.
        self.gauge.queued.fetch_add(len, Ordering::AcqRel);
        self.tx.try_send(env).inspect_err(|_| {
            self.gauge.queued.fetch_sub(len, Ordering::AcqRel);
        })
    }

    /// Queues the envelope, waiting for room (bytes, then a slot).
    pub async fn send(&self, env: Bytes) -> Result<(), SendError<Bytes>> {
        if self.wait_room(env.len()).await.is_err() {
            return Err(SendError(env));
        }
        let len = env.len();
        self.gauge.queued.fetch_add(len, Ordering::AcqRel);
        self.tx.send(env).await.inspect_err(|_| {
            self.gauge.queued.fetch_sub(len, Ordering::AcqRel);
        })
    }

    /// Waits until an envelope of `len` bytes would be taken: a free slot and room for its
    /// bytes. Room seen here stays only while nobody else sends: for a queue with one sender.
    /// `Err` once the receiver is gone.
    pub async fn wait_room(&self, len: usize) -> Result<(), ()> {
        loop {
            // Registered before looking, so a take between the look and the wait wakes it.
            let taken = self.gauge.room.notified();
            if self.tx.is_closed() {
                return Err(());
            }
            if self.gauge.admits(len) {
                break;
            }
            tokio::select! {
                _ = taken => {}
                _ = self.tx.closed() => return Err(()),
            }
        }
        // A slot: reserve one and give it back (the sender is the only one filling slots).
        self.tx.reserve().await.map(drop).map_err(drop)
    }

    /// Bytes waiting in the queue now.
    pub fn queued_bytes(&self) -> usize {
        self.gauge.queued.load(Ordering::Acquire)
    }
}

/// The receiving side. Dropping it closes the queue.
pub struct QueueReceiver {
    rx: mpsc::Receiver<Bytes>,
    gauge: Arc<Gauge>,
}

impl std::fmt::Debug for QueueReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueReceiver")
            .field("queued_bytes", &self.gauge.queued.load(Ordering::Acquire))
            .finish()
    }
}

impl QueueReceiver {
    /// The next envelope; `None` once every sender is gone and the queue is empty.
    pub async fn recv(&mut self) -> Option<Bytes> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let polled = self.rx.poll_recv(cx);
        if let Poll::Ready(Some(env)) = &polled {
            self.took(env.len());
        }
        polled
    }

    /// The next envelope if one is queued.
    pub fn try_recv(&mut self) -> Result<Bytes, mpsc::error::TryRecvError> {
        let env = self.rx.try_recv()?;
        self.took(env.len());
        Ok(env)
    }

    /// Bytes waiting in the queue now.
    pub fn queued_bytes(&self) -> usize {
        self.gauge.queued.load(Ordering::Acquire)
    }

    fn took(&self, len: usize) {
        self.gauge.queued.fetch_sub(len, Ordering::AcqRel);
        self.gauge.room.notify_one();
    }
}

impl Drop for QueueReceiver {
    fn drop(&mut self) {
        // A sender waiting for bytes of room must see the queue close.
        self.rx.close();
        self.gauge.room.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn env(n: usize) -> Bytes {
        Bytes::from(vec![7u8; n])
    }

    #[tokio::test]
    async fn full_by_bytes_before_full_by_count_and_an_empty_queue_takes_anything() {
        let (tx, mut rx) = channel(100, 1000);
        // Larger than the bound, but the queue is empty: taken.
        tx.try_send(env(5000)).unwrap();
        assert!(matches!(tx.try_send(env(1)), Err(TrySendError::Full(_))));
        assert_eq!(rx.recv().await.unwrap().len(), 5000);
        tx.try_send(env(600)).unwrap();
        tx.try_send(env(400)).unwrap();
        assert!(matches!(tx.try_send(env(1)), Err(TrySendError::Full(_))));
        assert_eq!(tx.queued_bytes(), 1000);
        assert_eq!(rx.try_recv().unwrap().len(), 600);
        tx.try_send(env(600)).unwrap();
        assert_eq!(tx.queued_bytes(), 1000);
    }

    #[tokio::test]
    async fn full_by_count_with_few_bytes() {
        let (tx, _rx) = channel(2, 1 << 20);
        tx.try_send(env(1)).unwrap();
        tx.try_send(env(1)).unwrap();
        assert!(matches!(tx.try_send(env(1)), Err(TrySendError::Full(_))));
    }

    #[tokio::test]
    async fn a_waiting_sender_goes_on_when_the_receiver_takes_and_fails_when_it_is_gone() {
        let (tx, mut rx) = channel(100, 1000);
        tx.try_send(env(900)).unwrap();
        let sender = tx.clone();
        let waiting = tokio::spawn(async move { sender.send(env(900)).await.is_ok() });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        assert_eq!(rx.recv().await.unwrap().len(), 900);
        assert!(tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap());
        assert_eq!(rx.recv().await.unwrap().len(), 900);

        tx.try_send(env(900)).unwrap();
        let sender = tx.clone();
        let waiting = tokio::spawn(async move { sender.wait_room(900).await });
        drop(rx);
        let r = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(r, Err(()));
        assert!(matches!(tx.try_send(env(1)), Err(TrySendError::Closed(_))));
    }
}
