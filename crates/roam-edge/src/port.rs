//! Where an edge reaches the routing plane: its own in-process router (a proxy, a gateway
//! with a router of its own) or a client link to one (`roam pub`/`sub`, a gateway without).
//! Both hold any number of publishers and subscribers per name; every method here maps to
//! one call on either, with no task or copy in between.

use std::sync::Arc;

use bytes::Bytes;
use roam_net::client::{Client, SendError};
use roam_net::runtime::RouterHandle;
use roam_proto::Name;
use tokio::sync::watch;

/// The routing plane as an edge sees it.
#[derive(Clone)]
pub enum Port {
    Router(RouterHandle),
    Client(Arc<Client>),
}

/// One publisher of a name on a port: its id there, and whether anyone wants the name.
pub(crate) struct PortPublication {
    pub id: u64,
    pub demand: watch::Receiver<bool>,
}

/// One subscriber of a name on a port: its id there, and its envelopes.
pub(crate) struct PortSubscription {
    pub id: u64,
    pub rx: roam_net::envelope_queue::QueueReceiver,
}

impl Port {
    pub(crate) async fn publish(&self, name: Name) -> PortPublication {
        match self {
            Port::Router(r) => {
                let p = r.publish(name).await;
                PortPublication {
                    id: p.id,
                    demand: p.demand,
                }
            }
            Port::Client(c) => {
                let p = c.publish(name).await;
                PortPublication {
                    id: p.id,
                    demand: p.demand,
                }
            }
        }
    }

    /// Withdraws one publisher, from a `Drop` (no await).
    pub(crate) fn release_publication(&self, name: Name, id: u64) {
        match self {
            Port::Router(r) => r.release_publication(name, id),
            Port::Client(c) => c.release_publication(name, id),
        }
    }

    /// A subscription whose queue holds at most `depth` envelopes and (beyond its first)
    /// `max_bytes` bytes.
    pub(crate) async fn subscribe(
        &self,
        name: Name,
        depth: usize,
        max_bytes: usize,
    ) -> PortSubscription {
        match self {
            Port::Router(r) => {
                let s = r.subscribe_bounded(name, depth, max_bytes).await;
                PortSubscription { id: s.id, rx: s.rx }
            }
            Port::Client(c) => {
                let s = c.subscribe_bounded(name, depth, max_bytes).await;
                PortSubscription { id: s.id, rx: s.rx }
            }
        }
    }

    pub(crate) async fn unsubscribe(&self, name: Name, id: u64) {
        match self {
            Port::Router(r) => r.unsubscribe(name, id).await,
            Port::Client(c) => c.unsubscribe(name, id).await,
        }
    }

    /// Withdraws one subscriber, from a `Drop` (no await).
    pub(crate) fn release_subscription(&self, name: Name, id: u64) {
        match self {
            Port::Router(r) => r.release_subscription(name, id),
            Port::Client(c) => c.release_subscription(name, id),
        }
    }

    /// Sends a sealed envelope; waits while its reliable topic is pushed back on.
    pub(crate) async fn send(&self, name: Name, envelope: Bytes) -> Result<(), SendError> {
        match self {
            Port::Router(r) => {
                self.check_len(&envelope)?;
                r.send(name, envelope).await;
                Ok(())
            }
            Port::Client(c) => c.send(envelope).await,
        }
    }

    /// Whether sending on `name` now would wait: its topic is pushed back on (an in-process
    /// router's pause; a client link's own sender blocks only when its queue is full).
    pub(crate) fn would_wait(&self, name: &Name) -> bool {
        match self {
            Port::Router(r) => r.is_paused(name),
            Port::Client(_) => false,
        }
    }

    /// Resolves once sending on `name` would not wait for back-pressure (an in-process
    /// router's pause; a client link's sender has none).
    pub(crate) async fn wait_unpaused(&self, name: &Name) {
        match self {
            Port::Router(r) => r.wait_unpaused(name).await,
            Port::Client(_) => {}
        }
    }

    /// Like [`Self::send`], for threads outside the async runtime (DDS listener callbacks).
    /// An in-process router's pause is not waited for (the caller looked at
    /// [`Self::would_wait`] and keeps paused samples itself); a client link's sender blocks
    /// while its queue is full.
    pub(crate) fn send_blocking(&self, name: Name, envelope: Bytes) -> Result<(), SendError> {
        match self {
            Port::Router(r) => {
                self.check_len(&envelope)?;
                r.send_blocking(name, envelope);
                Ok(())
            }
            Port::Client(c) => c.send_blocking(envelope),
        }
    }

    /// The largest envelope this port carries.
    pub fn max_envelope_len(&self) -> usize {
        match self {
            // An in-process router forwards what its links carry; they check per link.
            Port::Router(_) => u32::MAX as usize,
            Port::Client(c) => c.max_envelope_len(),
        }
    }

    fn check_len(&self, envelope: &Bytes) -> Result<(), SendError> {
        let limit = self.max_envelope_len();
        if envelope.len() > limit {
            return Err(SendError::TooLarge {
                len: envelope.len(),
                limit,
            });
        }
        Ok(())
    }
}
