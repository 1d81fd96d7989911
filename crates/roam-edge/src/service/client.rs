//! [`ServiceClient`]: calls a service; any number of calls in flight.
//!
//! One task per client reads the reply topic: it keeps the replies that carry this client's
//! id, hands each to the call waiting for its sequence number, and drops the rest (other
//! clients' replies, a second server's answer, the late reply of a call that gave up). It
//! also follows the reply topic's announcements, which say whether a server is there.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::warn;

use super::wire::{self, RequestId};
use super::{ServiceError, ServiceRef};
use crate::edge::{Edge, EdgeError};
use crate::publisher::{Publisher, StreamSpec};
use crate::stats::TopicStats;
use crate::subscriber::{Event, Subscriber, SubscriberOptions};

/// What a call gets: the reply's body, or the reason its server failed it.
type Answer = Result<Vec<u8>, String>;

/// Calls one client may have waiting for replies by default.
pub const MAX_PENDING: usize = 1024;

/// How a client calls.
#[derive(Debug, Clone)]
pub struct ServiceClientOptions {
    /// How long a call waits for a server to be there before it fails with
    /// [`ServiceError::NoServer`] (never longer than the call's own timeout).
    pub server_wait: Duration,
    /// Calls waiting for replies at once; more fail with [`ServiceError::TooManyPending`].
    pub max_pending: usize,
}

impl Default for ServiceClientOptions {
    fn default() -> Self {
        Self {
            server_wait: Duration::from_secs(5),
            max_pending: MAX_PENDING,
        }
    }
}

/// A client of one service. Calls take `&self`: share it (e.g. in an `Arc`) to call from
/// several tasks at once. Dropping it releases its topics; calls still waiting then fail.
pub struct ServiceClient {
    service: ServiceRef,
    options: ServiceClientOptions,
    requests: Publisher,
    shared: Arc<Shared>,
    servers: watch::Receiver<bool>,
    demux: JoinHandle<()>,
}

struct Shared {
    client: u64,
    next_seq: AtomicI64,
    /// The calls waiting for replies, by sequence number; `None` once the edge is gone.
    pending: Mutex<Option<HashMap<i64, oneshot::Sender<Answer>>>>,
}

impl Shared {
    fn pending(&self) -> std::sync::MutexGuard<'_, Option<HashMap<i64, oneshot::Sender<Answer>>>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Removes a call's entry however the call ends (answered, timed out, or abandoned by its
/// caller), so a late reply finds nobody and the map never grows.
struct PendingCall<'a> {
    shared: &'a Shared,
    seq: i64,
}

impl Drop for PendingCall<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.shared.pending().as_mut() {
            p.remove(&self.seq);
        }
    }
}

impl Edge {
    /// Starts a client of `service`.
    pub async fn service_client(
        &self,
        service: &ServiceRef,
        options: ServiceClientOptions,
    ) -> Result<ServiceClient, EdgeError> {
        // Subscribed to the reply type at once, before any call, so no reply can be missed.
        let sub_options = SubscriberOptions {
            dds_type: Some(service.reply_type()),
            ..SubscriberOptions::default()
        };
        let replies = self.subscriber(&service.reply_topic(), sub_options).await;
        let mut spec = StreamSpec::new(service.request_type());
        spec.definition = service.request_definition.clone();
        let requests = self.publisher(&service.request_topic(), spec).await?;
        let shared = Arc::new(Shared {
            client: rand::random(),
            next_seq: AtomicI64::new(1),
            pending: Mutex::new(Some(HashMap::new())),
        });
        let (servers_tx, servers) = watch::channel(false);
        let demux = tokio::spawn(demux(
            replies,
            shared.clone(),
            servers_tx,
            service.service.clone(),
        ));
        Ok(ServiceClient {
            service: service.clone(),
            options,
            requests,
            shared,
            servers,
            demux,
        })
    }
}

impl ServiceClient {
    /// Calls the service with `request` (a CDR message of the request type, encapsulation
    /// header included) and returns the reply (a CDR message of the reply type). Waits up to
    /// `timeout` in all, of which at most [`ServiceClientOptions::server_wait`] for a server.
    pub async fn call(&self, request: &[u8], timeout: Duration) -> Result<Vec<u8>, ServiceError> {
        let deadline = Instant::now() + timeout;
        let mut sample = Vec::new();
        // Refuse a malformed request before waiting for anything.
        wire::join(RequestId { client: 0, seq: 0 }, request, &mut sample)?;
        let server_wait = self.options.server_wait.min(timeout);
        if !self.wait_for_server(server_wait).await {
            return Err(self.no_server(server_wait));
        }
        let (call, reply) = self.register()?;
        let id = RequestId {
            client: self.shared.client,
            seq: call.seq,
        };
        wire::join(id, request, &mut sample)?;
        let timed_out = || ServiceError::Timeout {
            service: self.service.service.clone(),
            timeout,
        };
        // A reliable topic pushed back on makes the send wait: within the call's time too.
        tokio::time::timeout_at(deadline, self.requests.publish(&sample))
            .await
            .map_err(|_| timed_out())??;
        let answer = tokio::time::timeout_at(deadline, reply).await;
        drop(call);
        match answer {
            Ok(Ok(Ok(body))) => Ok(body),
            Ok(Ok(Err(reason))) => Err(ServiceError::Failed {
                service: self.service.service.clone(),
                reason,
            }),
            Ok(Err(_)) => Err(self.closed()),
            Err(_) => Err(timed_out()),
        }
    }

    /// Waits up to `timeout` for a server: someone subscribes to the requests and someone
    /// announces replies (as `rmw_service_server_is_available` asks for matched endpoints on
    /// both topics). False if none came, or the edge is gone.
    pub async fn wait_for_server(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut demand = self.requests.demand();
        let mut servers = self.servers.clone();
        loop {
            if *demand.borrow_and_update() && *servers.borrow_and_update() {
                return true;
            }
            tokio::select! {
                r = demand.changed() => if r.is_err() { return false },
                r = servers.changed() => if r.is_err() { return false },
                _ = tokio::time::sleep_until(deadline) => return false,
            }
        }
    }

    /// This client's id: what its requests carry and its replies must carry.
    pub fn client_id(&self) -> u64 {
        self.shared.client
    }

    pub fn service(&self) -> &ServiceRef {
        &self.service
    }

    /// Calls waiting for replies now.
    pub fn pending(&self) -> usize {
        self.shared.pending().as_ref().map_or(0, HashMap::len)
    }

    fn register(&self) -> Result<(PendingCall<'_>, oneshot::Receiver<Answer>), ServiceError> {
        let mut guard = self.shared.pending();
        let Some(pending) = guard.as_mut() else {
            return Err(self.closed());
        };
        if pending.len() >= self.options.max_pending {
            return Err(ServiceError::TooManyPending {
                service: self.service.service.clone(),
                limit: self.options.max_pending,
            });
        }
        let seq = self.shared.next_seq.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        pending.insert(seq, tx);
        Ok((
            PendingCall {
                shared: &self.shared,
                seq,
            },
            rx,
        ))
    }

    fn no_server(&self, waited: Duration) -> ServiceError {
        if self.shared.pending().is_none() {
            return self.closed();
        }
        ServiceError::NoServer {
            service: self.service.service.clone(),
            waited,
        }
    }

    fn closed(&self) -> ServiceError {
        ServiceError::Closed {
            service: self.service.service.clone(),
        }
    }
}

impl Drop for ServiceClient {
    fn drop(&mut self) {
        self.demux.abort();
    }
}

/// Reads the reply topic until the edge goes: this client's replies to their calls, whether a
/// server announces replies to the watchers.
async fn demux(
    mut replies: Subscriber,
    shared: Arc<Shared>,
    servers: watch::Sender<bool>,
    service: String,
) {
    let mut sample = Vec::new();
    let mut warned = false;
    while let Some(ev) = replies.recv(&mut sample).await {
        match ev {
            Event::Streams => {
                servers.send_replace(!replies.streams().is_empty());
            }
            Event::Definitions => {}
            Event::Message(_) => match wire::split(&sample) {
                Ok(h) if h.id.client == shared.client && h.id.seq < 0 => {
                    // A failed call (wire::join_failure): its sequence number negated.
                    if let Some((id, reason)) = wire::failure(&sample) {
                        let waiting = shared.pending().as_mut().and_then(|p| p.remove(&id.seq));
                        if let Some(tx) = waiting {
                            let _ = tx.send(Err(reason));
                        }
                    }
                }
                Ok(h) if h.id.client == shared.client => {
                    let waiting = shared.pending().as_mut().and_then(|p| p.remove(&h.id.seq));
                    // None: a call that gave up, or a second server's answer.
                    if let Some(tx) = waiting {
                        let mut body = Vec::new();
                        if wire::body(&sample, &mut body).is_ok() {
                            let _ = tx.send(Ok(body));
                        }
                    }
                }
                // Another client's reply.
                Ok(_) => {}
                Err(e) => {
                    TopicStats::count(&replies.stats().failed);
                    if !std::mem::replace(&mut warned, true) {
                        warn!(%service, "dropped a malformed reply: {e} (more are counted, not logged)");
                    }
                }
            },
        }
    }
    // The edge is gone: the calls waiting fail at once (their senders drop) and new ones too.
    shared.pending().take();
    servers.send_replace(false);
}
