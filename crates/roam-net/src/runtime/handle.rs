//! [`RouterHandle`]: what in-process endpoints (a proxy's exports and imports, a gateway's
//! clients) hold on a running router.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use roam_proto::{Name, RouterId};
use tokio::sync::{mpsc, oneshot, watch};

use super::direct::{Direct, Queue, Routed};
use super::{Command, LocalId, RouterReport};
use crate::envelope_queue::{self, QueueReceiver, DEFAULT_MAX_BYTES};
use crate::pause::Pauses;

/// A handle on a running router: addresses, status, and in-process endpoints. Any number of
/// publishers and subscribers may share a name; each is released on its own.
#[derive(Clone)]
pub struct RouterHandle {
    cmd: Queue<Command>,
    /// In-process publishers route their envelopes themselves ([`super::direct`]).
    direct: Arc<Direct>,
    /// Topics paused by back-pressure: in-process publishers wait as link readers do.
    pauses: Arc<Pauses>,
    next_id: Arc<AtomicU64>,
    pub id: RouterId,
    pub quic_addr: Option<SocketAddr>,
    pub tcp_addr: Option<SocketAddr>,
}

/// One in-process publisher of a name: the watch says whether anyone in the network wants it.
#[derive(Debug)]
pub struct LocalPublication {
    pub id: LocalId,
    pub demand: watch::Receiver<bool>,
}

/// One in-process subscriber of a name: its envelopes arrive on `rx`.
#[derive(Debug)]
pub struct LocalSubscription {
    pub id: LocalId,
    pub rx: QueueReceiver,
}

impl RouterHandle {
    pub(super) fn new(
        cmd: Queue<Command>,
        direct: Arc<Direct>,
        pauses: Arc<Pauses>,
        id: RouterId,
        quic_addr: Option<SocketAddr>,
        tcp_addr: Option<SocketAddr>,
    ) -> Self {
        Self {
            cmd,
            direct,
            pauses,
            next_id: Arc::new(AtomicU64::new(1)),
            id,
            quic_addr,
            tcp_addr,
        }
    }

    fn next_id(&self) -> LocalId {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Declares an in-process publisher of `name`; its watch says whether anyone listens
    /// (false until the router has taken the publication in, then what it knows).
    pub async fn publish(&self, name: Name) -> LocalPublication {
        let (tx, demand) = watch::channel(false);
        let id = self.next_id();
        let _ = self
            .cmd
            .send(Command::Publish {
                name,
                id,
                demand: tx,
            })
            .await;
        LocalPublication { id, demand }
    }

    /// Withdraws one publisher; the name stays published while others remain.
    pub async fn unpublish(&self, name: Name, id: LocalId) {
        let _ = self.cmd.send(Command::Unpublish { name, id }).await;
    }

    /// Like [`Self::unpublish`], from a `Drop` (no await): queued without waiting.
    pub fn release_publication(&self, name: Name, id: LocalId) {
        self.release(Command::Unpublish { name, id });
    }

    /// Sends a sealed envelope from an in-process publisher, routed on this thread unless the
    /// router has earlier work queued (then queued behind it: waits if the router is busy).
    pub async fn send(&self, name: Name, envelope: Bytes) {
        if !crate::link::is_best_effort(&envelope) {
            self.pauses.wait(&name).await;
        }
        if let Routed::Queue(envelope) = self.route(name, envelope) {
            let _ = self.cmd.send(Command::Send { name, envelope }).await;
        }
    }

    fn route(&self, name: Name, envelope: Bytes) -> Routed<Bytes> {
        self.direct.route(envelope, |rt, envelope, now| {
            rt.core.send_local(now, name, envelope)
        })
    }

    /// Resolves once `name` is not paused by back-pressure.
    pub async fn wait_unpaused(&self, name: &Name) {
        self.pauses.wait(name).await;
    }

    /// Whether `name` is paused by back-pressure now (a send would wait).
    pub fn is_paused(&self, name: &Name) -> bool {
        self.pauses.is_paused(name)
    }

    /// Like [`Self::send`], for threads outside the async runtime (DDS listener callbacks),
    /// without waiting for a pause: the caller looks at [`Self::is_paused`] first and keeps
    /// what comes while its topic is paused (the edge's backlog). A pause that begins between
    /// that look and this send lets this one envelope through to the router, which holds it
    /// in the topic's stall queue like any envelope already on its way; waiting here instead
    /// would hold the calling thread, and every topic it serves, until the topic resumes.
    /// Routed on the calling thread, unless the router has earlier work queued; then queued,
    /// blocking only while the router's command queue is full.
    pub fn send_blocking(&self, name: Name, envelope: Bytes) {
        if let Routed::Queue(envelope) = self.route(name, envelope) {
            let _ = self.cmd.blocking_send(Command::Send { name, envelope });
        }
    }

    /// Subscribes an in-process endpoint; envelopes arrive on its queue (bounded: when a
    /// reader falls `depth` envelopes or [`DEFAULT_MAX_BYTES`] behind, reliable envelopes
    /// wait and their topic pauses upstream, up to the stall timeout; best-effort ones are
    /// dropped, counted in the report). Every subscriber of a name gets every envelope.
    pub async fn subscribe(&self, name: Name, depth: usize) -> LocalSubscription {
        self.subscribe_bounded(name, depth, DEFAULT_MAX_BYTES).await
    }

    /// Like [`Self::subscribe`], with the queue's byte bound given ([`crate::envelope_queue`]).
    pub async fn subscribe_bounded(
        &self,
        name: Name,
        depth: usize,
        max_bytes: usize,
    ) -> LocalSubscription {
        let (tx, rx) = envelope_queue::channel(depth, max_bytes);
        let id = self.next_id();
        let _ = self.cmd.send(Command::Subscribe { name, id, tx }).await;
        LocalSubscription { id, rx }
    }

    /// Withdraws one subscriber; the name stays subscribed while others remain.
    pub async fn unsubscribe(&self, name: Name, id: LocalId) {
        let _ = self.cmd.send(Command::Unsubscribe { name, id }).await;
    }

    /// Like [`Self::unsubscribe`], from a `Drop` (no await): queued without waiting.
    pub fn release_subscription(&self, name: Name, id: LocalId) {
        self.release(Command::Unsubscribe { name, id });
    }

    fn release(&self, c: Command) {
        if let Err(mpsc::error::TrySendError::Full(c)) = self.cmd.try_send(c) {
            // The router is busy: deliver it later, in order with what follows from here.
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let cmd = self.cmd.clone();
                rt.spawn(async move {
                    let _ = cmd.send(c).await;
                });
            }
        }
    }

    pub async fn report(&self) -> Option<RouterReport> {
        let (tx, rx) = oneshot::channel();
        self.cmd.send(Command::Report(tx)).await.ok()?;
        rx.await.ok()
    }

    pub async fn shutdown(&self) {
        let _ = self.cmd.send(Command::Shutdown).await;
    }
}
