//! A client session: a program that publishes or subscribes through one router
//! (`roam pub`, `roam sub`, gateways without a router of their own). It reconnects by itself
//! and re-declares what it publishes and subscribes, so the program never restarts when a
//! router does.
//!
//! Like a router's in-process endpoints ([`crate::runtime::RouterHandle`]), any number of
//! publishers and subscribers may share a name: each subscriber gets every envelope on its
//! own channel, each publisher sees the demand on its own watch, and each is released on its
//! own.

mod endpoints;
mod session;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use roam_proto::Name;
use tokio::sync::{mpsc, oneshot, watch};

use crate::link::LinkConfig;
use crate::runtime::PeerAddr;
use roam_pki::Identity;

#[derive(Clone)]
pub struct ClientConfig {
    pub identity: Arc<Identity>,
    pub router: PeerAddr,
    pub link: LinkConfig,
    pub max_backoff: Duration,
}

/// What the session reports about its connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientEvent {
    /// A connection attempt starts (at start, and after a lost link).
    Connecting {
        router: String,
    },
    /// An attempt failed: why, in plain words, and when the next one starts.
    Unreachable {
        reason: String,
        retry_in: Duration,
    },
    Connected {
        router: String,
    },
    Disconnected {
        reason: String,
    },
}

/// Identifies one publisher or subscriber of a client session.
pub type EndpointId = u64;

/// One publisher of a name: the watch says whether anyone in the network wants it (false
/// while no router link is up).
#[derive(Debug)]
pub struct ClientPublication {
    pub id: EndpointId,
    pub demand: watch::Receiver<bool>,
}

/// One subscriber of a name: its envelopes arrive on `rx`.
#[derive(Debug)]
pub struct ClientSubscription {
    pub id: EndpointId,
    pub rx: crate::envelope_queue::QueueReceiver,
}

enum Cmd {
    Publish {
        name: Name,
        id: EndpointId,
        demand: watch::Sender<bool>,
    },
    Unpublish {
        name: Name,
        id: EndpointId,
    },
    Subscribe {
        name: Name,
        id: EndpointId,
        tx: crate::envelope_queue::QueueSender,
    },
    Unsubscribe {
        name: Name,
        id: EndpointId,
    },
    Send(Bytes),
    /// Deliver everything queued to the router, then end the session.
    Finish(oneshot::Sender<()>),
}

/// Counters kept by the session.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClientStats {
    pub sent: u64,
    /// Envelopes dropped because no router link was up.
    pub dropped_offline: u64,
    /// Best-effort envelopes dropped from the link's queue to make room for newer ones.
    pub dropped_stale: u64,
    /// Best-effort envelopes a subscriber's full queue could not take.
    pub dropped_slow_subscriber: u64,
}

/// Why [`Client::send`] refused an envelope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// Larger than the link carries (`LinkConfig::max_frame`): the router would refuse the
    /// frame and close the link, so it is never sent.
    #[error("an envelope of {len} bytes is over the link's limit of {limit} bytes")]
    TooLarge { len: usize, limit: usize },
    #[error("the client session has ended")]
    Closed,
}

pub struct Client {
    cmd: mpsc::Sender<Cmd>,
    /// Connection events (connecting, connected, unreachable, disconnected), until taken.
    events: Option<mpsc::Receiver<ClientEvent>>,
    stats: Arc<std::sync::Mutex<ClientStats>>,
    max_envelope: usize,
    next_id: AtomicU64,
}

/// Bytes a `Data` frame adds to its envelope within the length a receiver checks (type, origin).
const DATA_FRAME_OVERHEAD: usize =
    roam_proto::frame::DATA_HEADER_LEN - roam_proto::frame::LEN_PREFIX;

/// The largest envelope a link with this configuration carries: its frame limit less the
/// frame's own bytes. Routers with the same `max_message_bytes` accept it.
pub fn max_envelope_len(link: &LinkConfig) -> usize {
    link.max_frame.saturating_sub(DATA_FRAME_OVERHEAD)
}

impl Client {
    pub fn start(cfg: ClientConfig) -> Result<Self, crate::link::LinkError> {
        let (cmd_tx, cmd_rx) = mpsc::channel(1024);
        let (ev_tx, ev_rx) = mpsc::channel(256);
        let stats = Arc::new(std::sync::Mutex::new(ClientStats::default()));
        let ep = crate::quic::endpoint(&cfg.identity, &cfg.link, None)?;
        let max_envelope = max_envelope_len(&cfg.link);
        tokio::spawn(session::run(cfg, ep, cmd_rx, ev_tx, stats.clone()));
        Ok(Self {
            cmd: cmd_tx,
            events: Some(ev_rx),
            stats,
            max_envelope,
            next_id: AtomicU64::new(1),
        })
    }

    /// The session's connection events (connecting, connected, unreachable, disconnected);
    /// `None` once taken. Whoever takes them must keep reading (a full queue of 256 events
    /// makes the session wait).
    pub fn take_events(&mut self) -> Option<mpsc::Receiver<ClientEvent>> {
        self.events.take()
    }

    fn next_id(&self) -> EndpointId {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The largest envelope [`Self::send`] accepts: the link's frame limit less the frame's
    /// own bytes. Routers with the same `max_message_bytes` accept it.
    pub fn max_envelope_len(&self) -> usize {
        self.max_envelope
    }

    /// Declares a publisher of `name`.
    pub async fn publish(&self, name: Name) -> ClientPublication {
        let (tx, demand) = watch::channel(false);
        let id = self.next_id();
        let _ = self
            .cmd
            .send(Cmd::Publish {
                name,
                id,
                demand: tx,
            })
            .await;
        ClientPublication { id, demand }
    }

    pub async fn unpublish(&self, name: Name, id: EndpointId) {
        let _ = self.cmd.send(Cmd::Unpublish { name, id }).await;
    }

    /// Like [`Self::unpublish`], from a `Drop` (no await).
    pub fn release_publication(&self, name: Name, id: EndpointId) {
        self.release(Cmd::Unpublish { name, id });
    }

    /// Subscribes to `name`; a queue of `depth` envelopes and
    /// [`DEFAULT_MAX_BYTES`](crate::envelope_queue::DEFAULT_MAX_BYTES). A reliable envelope
    /// waits for room (the session, and through flow control the router link, waits with it);
    /// a best-effort one is dropped when the queue is full (counted).
    pub async fn subscribe(&self, name: Name, depth: usize) -> ClientSubscription {
        self.subscribe_bounded(name, depth, crate::envelope_queue::DEFAULT_MAX_BYTES)
            .await
    }

    /// Like [`Self::subscribe`], with the queue's byte bound given.
    pub async fn subscribe_bounded(
        &self,
        name: Name,
        depth: usize,
        max_bytes: usize,
    ) -> ClientSubscription {
        let (tx, rx) = crate::envelope_queue::channel(depth, max_bytes);
        let id = self.next_id();
        let _ = self.cmd.send(Cmd::Subscribe { name, id, tx }).await;
        ClientSubscription { id, rx }
    }

    pub async fn unsubscribe(&self, name: Name, id: EndpointId) {
        let _ = self.cmd.send(Cmd::Unsubscribe { name, id }).await;
    }

    /// Like [`Self::unsubscribe`], from a `Drop` (no await).
    pub fn release_subscription(&self, name: Name, id: EndpointId) {
        self.release(Cmd::Unsubscribe { name, id });
    }

    fn release(&self, c: Cmd) {
        if let Err(mpsc::error::TrySendError::Full(c)) = self.cmd.try_send(c) {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let cmd = self.cmd.clone();
                rt.spawn(async move {
                    let _ = cmd.send(c).await;
                });
            }
        }
    }

    /// Queues an envelope; waits while the link's reliable lane is full (push back). An
    /// envelope over [`Self::max_envelope_len`] is refused here, before anything is sent.
    pub async fn send(&self, envelope: Bytes) -> Result<(), SendError> {
        self.check_len(&envelope)?;
        self.cmd
            .send(Cmd::Send(envelope))
            .await
            .map_err(|_| SendError::Closed)
    }

    /// Like [`Self::send`], for threads outside the async runtime.
    pub fn send_blocking(&self, envelope: Bytes) -> Result<(), SendError> {
        self.check_len(&envelope)?;
        self.cmd
            .blocking_send(Cmd::Send(envelope))
            .map_err(|_| SendError::Closed)
    }

    fn check_len(&self, envelope: &Bytes) -> Result<(), SendError> {
        if envelope.len() > self.max_envelope {
            return Err(SendError::TooLarge {
                len: envelope.len(),
                limit: self.max_envelope,
            });
        }
        Ok(())
    }

    /// Waits until everything sent so far has reached the router, then disconnects.
    pub async fn finish(&self) {
        let (tx, rx) = oneshot::channel();
        if self.cmd.send(Cmd::Finish(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }

    pub fn stats(&self) -> ClientStats {
        self.stats.lock().map(|s| *s).unwrap_or_default()
    }
}
