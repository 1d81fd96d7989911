//! [`ServiceServer`]: takes a service's requests and answers them.

use tracing::warn;

use super::wire::{self, RequestId};
use super::{ServiceError, ServiceRef};
use crate::edge::{Edge, EdgeError};
use crate::publisher::{Publisher, StreamSpec};
use crate::stats::TopicStats;
use crate::subscriber::{Event, Subscriber, SubscriberOptions};

/// One request taken by a server; its body is in the buffer given to
/// [`ServiceServer::recv_request`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// What the reply must carry for the caller to take it.
    pub id: RequestId,
    /// The realm member that signed the request, in signed mode.
    pub signer: Option<String>,
}

/// A server of one service: subscribes to its requests, publishes its replies, and announces
/// the reply stream (so clients know a server is there). Any number per service and process.
/// Dropping it releases both.
pub struct ServiceServer {
    service: ServiceRef,
    requests: Subscriber,
    replier: Replier,
    sample: Vec<u8>,
    warned: bool,
}

/// What answers a server's requests, cloneable so another task can reply (e.g. when the
/// answer comes from a WebSocket client). Keeps the reply stream while any clone lives.
#[derive(Clone)]
pub struct Replier {
    replies: Publisher,
}

impl Edge {
    /// Starts serving `service`.
    pub async fn service_server(&self, service: &ServiceRef) -> Result<ServiceServer, EdgeError> {
        let mut spec = StreamSpec::new(service.reply_type());
        spec.definition = service.reply_definition.clone();
        let replies = self.publisher(&service.reply_topic(), spec).await?;
        // Subscribed to the request type at once: a client's first call need not wait for
        // its announcement to travel.
        let options = SubscriberOptions {
            dds_type: Some(service.request_type()),
            ..SubscriberOptions::default()
        };
        let requests = self.subscriber(&service.request_topic(), options).await;
        Ok(ServiceServer {
            service: service.clone(),
            requests,
            replier: Replier { replies },
            sample: Vec::new(),
            warned: false,
        })
    }
}

impl ServiceServer {
    /// The next request; its body (a CDR message of the request type, encapsulation header
    /// included) goes into `body`. Malformed requests are dropped (counted as failed on the
    /// request topic). `None` once the edge is gone. Like [`Subscriber::recv`], keep calling
    /// it: the server follows the clients' announcements only while it reads.
    pub async fn recv_request(&mut self, body: &mut Vec<u8>) -> Option<Request> {
        loop {
            match self.requests.recv(&mut self.sample).await? {
                Event::Message(r) => match wire::body(&self.sample, body) {
                    Ok(h) => {
                        return Some(Request {
                            id: h.id,
                            signer: r.signer,
                        })
                    }
                    Err(e) => {
                        TopicStats::count(&self.requests.stats().failed);
                        if !std::mem::replace(&mut self.warned, true) {
                            warn!(service = %self.service.service, "dropped a malformed request: {e} (more are counted, not logged)");
                        }
                    }
                },
                Event::Streams | Event::Definitions => {}
            }
        }
    }

    /// Answers the request `id` with `body` (a CDR message of the reply type, encapsulation
    /// header included).
    pub async fn reply(&self, id: RequestId, body: &[u8]) -> Result<(), ServiceError> {
        self.replier.reply(id, body).await
    }

    /// A handle that answers this server's requests from anywhere.
    pub fn replier(&self) -> Replier {
        self.replier.clone()
    }

    pub fn service(&self) -> &ServiceRef {
        &self.service
    }

    /// The request type's definition, if a client announced it.
    pub fn request_definition(&self) -> Option<&str> {
        self.requests.definition(&self.service.request_type())
    }
}

impl Replier {
    /// Answers the request `id` with `body` (a CDR message of the reply type, encapsulation
    /// header included). The reply goes to every client of the service; the caller keeps it.
    pub async fn reply(&self, id: RequestId, body: &[u8]) -> Result<(), ServiceError> {
        let mut sample = Vec::new();
        wire::join(id, body, &mut sample)?;
        self.replies.publish(&sample).await?;
        Ok(())
    }

    /// Fails the request `id` with `reason`: an edge client's call ends at once with
    /// [`ServiceError::Failed`]; a DDS client, which ROS 2 gives no failed reply, gets
    /// nothing and times out as it would have.
    pub async fn fail(&self, id: RequestId, reason: &str) -> Result<(), ServiceError> {
        let mut sample = Vec::new();
        wire::join_failure(id, reason, &mut sample);
        self.replies.publish(&sample).await?;
        Ok(())
    }
}
