//! Where a link's reader tasks hand what they read: a channel of the link's owner, or a
//! router's core that routes it on the reader's own task ([`RouteHere`], implemented by the
//! router runtime); and the owner's paused topics ([`crate::pause`]). The link layer knows
//! the router only through this trait.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use roam_proto::Frame;
use tokio::sync::mpsc::{self, error::SendError, error::TrySendError};

use crate::link::{LinkId, LinkInput};
use crate::pause::Pauses;

/// A router's core, to which a link's reader brings its input.
pub trait RouteHere: Send + Sync {
    /// A link's frame, or its end, taken in by the core on this thread if it may.
    fn input(&self, link: LinkId, input: LinkInput) -> Routed<LinkInput>;
}

/// What became of a message brought to the core.
pub enum Routed<T> {
    /// Routed on this thread.
    Done,
    /// Something sent to the loop earlier waits there still: queue this behind it.
    Queue(T),
    /// The router has stopped.
    Stopped,
}

/// A sender to a router's loop that counts what it queued, so that a caller that finds the
/// count above zero queues behind it instead of routing itself (`runtime::direct`).
pub struct Queue<T> {
    tx: mpsc::Sender<T>,
    queued: Arc<AtomicUsize>,
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Self {
            tx: self.tx.clone(),
            queued: self.queued.clone(),
        }
    }
}

impl<T> Queue<T> {
    pub fn new(tx: mpsc::Sender<T>, queued: Arc<AtomicUsize>) -> Self {
        Self { tx, queued }
    }

    pub async fn send(&self, v: T) -> Result<(), SendError<T>> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        let r = self.tx.send(v).await;
        self.unless_sent(r.is_ok());
        r
    }

    pub fn blocking_send(&self, v: T) -> Result<(), SendError<T>> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        let r = self.tx.blocking_send(v);
        self.unless_sent(r.is_ok());
        r
    }

    pub fn try_send(&self, v: T) -> Result<(), TrySendError<T>> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        let r = self.tx.try_send(v);
        self.unless_sent(r.is_ok());
        r
    }

    fn unless_sent(&self, sent: bool) {
        if !sent {
            self.queued.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Where a link's reader tasks deliver: the owner's channel, tagged with the link id, or a
/// router's core, which they route on themselves ([`RouteHere`]); and the
/// owner's paused topics (see [`crate::pause`]).
#[derive(Clone)]
pub struct Inbound {
    owner: Owner,
    pauses: Arc<Pauses>,
    /// A router's quotas per client identity; links of other owners get one of their own.
    quotas: Option<Arc<crate::quota::ClientQuotas>>,
}

#[derive(Clone)]
enum Owner {
    Channel(mpsc::Sender<(LinkId, LinkInput)>),
    Router(Arc<dyn RouteHere>, Queue<(LinkId, LinkInput)>),
}

impl Inbound {
    pub fn new(tx: mpsc::Sender<(LinkId, LinkInput)>, pauses: Arc<Pauses>) -> Self {
        Self {
            owner: Owner::Channel(tx),
            pauses,
            quotas: None,
        }
    }

    /// For a router: readers route on their own task, or queue behind what the router's loop
    /// has yet to carry out.
    pub fn routed(
        direct: Arc<dyn RouteHere>,
        queue: Queue<(LinkId, LinkInput)>,
        pauses: Arc<Pauses>,
    ) -> Self {
        Self {
            owner: Owner::Router(direct, queue),
            pauses,
            quotas: None,
        }
    }

    /// Client links of this owner share a quota per identity (a router's).
    pub fn with_client_quotas(mut self, quotas: Arc<crate::quota::ClientQuotas>) -> Self {
        self.quotas = Some(quotas);
        self
    }

    /// The quota of a link to `peer`: its identity's shared one where the owner keeps them,
    /// otherwise one of its own from `limits` (none for routers).
    pub fn quota_for(
        &self,
        peer: &crate::link::PeerInfo,
        limits: crate::quota::QuotaLimits,
    ) -> Option<Arc<crate::quota::LinkQuota>> {
        match &self.quotas {
            Some(q) => q.for_peer(peer.role, &peer.name),
            None => crate::quota::for_peer(peer.role, limits),
        }
    }

    /// For owners that never pause (clients).
    pub fn unpaused(tx: mpsc::Sender<(LinkId, LinkInput)>) -> Self {
        Self::new(tx, Arc::new(Pauses::default()))
    }

    /// Hands a frame to the owner, first waiting while its topic is paused. False when the
    /// owner is gone.
    pub async fn frame(&self, link: LinkId, frame: Frame) -> bool {
        if let Frame::Data { envelope, .. } = &frame {
            if let Some(name) = roam_proto::envelope::peek_name(envelope) {
                self.pauses.wait(&name).await;
            }
        }
        self.input(link, LinkInput::Frame(frame)).await
    }

    pub async fn closed(&self, link: LinkId, reason: String) {
        let _ = self.input(link, LinkInput::Closed(reason)).await;
    }

    async fn input(&self, link: LinkId, input: LinkInput) -> bool {
        match &self.owner {
            Owner::Channel(tx) => tx.send((link, input)).await.is_ok(),
            Owner::Router(direct, queue) => match direct.input(link, input) {
                Routed::Done => true,
                Routed::Queue(input) => queue.send((link, input)).await.is_ok(),
                Routed::Stopped => false,
            },
        }
    }
}
