//! Services a rosbridge client serves (`advertise_service`): each is an edge
//! [`ServiceServer`] in the realm; a request from the realm goes to the client as a
//! `call_service` op with an id, and the client's `service_response` with that id goes back as
//! the reply. Requests waiting for the client are bounded.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use roam_edge::service::{Replier, RequestId};
use roam_edge::{ServiceRef, ServiceServer};
use roam_msg::MessageType;
use roam_proto::directory::{ItemKind, Role};
use tokio::task::JoinHandle;

use super::client::{send_status, ConnShared};
use super::encode::{self, Frame, Level};
use crate::listing::Listed;
use crate::session::{Input, Outgoing, ServiceTargets, SessionError};
use crate::Gateway;

/// Requests waiting for the client's answer, at most (beyond it the oldest is forgotten: its
/// caller times out).
pub const MAX_WAITING: usize = 1024;

struct Waiting {
    id: RequestId,
    replier: Replier,
    reply: MessageType,
}

#[derive(Default)]
struct Pending {
    by_id: HashMap<String, Waiting>,
    order: VecDeque<String>,
}

pub struct Served {
    gw: Arc<Gateway>,
    out: Arc<Outgoing<Frame>>,
    shared: Arc<ConnShared>,
    tasks: HashMap<String, (JoinHandle<()>, Listed)>,
    pending: Arc<Mutex<Pending>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        for (t, _) in self.tasks.values() {
            t.abort();
        }
    }
}

fn lock(p: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    p.lock().unwrap_or_else(|p| p.into_inner())
}

impl Served {
    pub fn new(gw: Arc<Gateway>, out: Arc<Outgoing<Frame>>, shared: Arc<ConnShared>) -> Self {
        Self {
            gw,
            out,
            shared,
            tasks: HashMap::new(),
            pending: Default::default(),
        }
    }

    /// Serves `service` (a full ROS name) of type `srv_type` in the realm.
    pub async fn advertise(&mut self, service: &str, srv_type: &str) -> Result<(), SessionError> {
        if self.tasks.contains_key(service) {
            return Ok(());
        }
        if self.tasks.len() >= self.gw.limits.max_topics_per_client {
            return Err(SessionError::TooMany {
                what: "advertised services",
                limit: self.gw.limits.max_topics_per_client,
            });
        }
        let mut sref = ServiceRef::new(self.gw.realm.clone(), service, srv_type)?;
        let targets = ServiceTargets::for_gateway(self.gw.clone());
        let request = targets
            .codec(&sref.request_topic(), &sref.request_type())
            .await?;
        let reply = targets
            .codec(&sref.reply_topic(), &sref.reply_type())
            .await?;
        sref.request_definition = request.1;
        sref.reply_definition = reply.1;
        let server =
            self.gw
                .edge
                .service_server(&sref)
                .await
                .map_err(|source| SessionError::Edge {
                    topic: service.to_string(),
                    source,
                })?;
        let task = tokio::spawn(serve(
            server,
            request.0,
            reply.0,
            self.out.clone(),
            self.shared.clone(),
            self.pending.clone(),
        ));
        let listed = self.gw.listing.add(
            ItemKind::Service,
            Role::Offers,
            &sref.service,
            &sref.srv_type,
        );
        self.tasks.insert(service.to_string(), (task, listed));
        Ok(())
    }

    pub fn unadvertise(&mut self, service: &str) {
        if let Some((t, _)) = self.tasks.remove(service) {
            t.abort();
        }
    }

    /// The client's answer to request `id`.
    pub async fn respond(
        &self,
        id: Option<&str>,
        values: Option<Input<'_>>,
        result: bool,
    ) -> Result<(), SessionError> {
        let Some(id) = id else {
            return Err(SessionError::Response(
                "service_response without the id of the request it answers".into(),
            ));
        };
        let waiting = {
            let mut p = lock(&self.pending);
            let w = p.by_id.remove(id);
            p.order.retain(|k| k != id);
            w
        };
        let Some(w) = waiting else {
            return Err(SessionError::Response(format!(
                "no request {id:?} waits for an answer (answered already, or forgotten)"
            )));
        };
        if !result {
            // The caller learns at once, as rosbridge's callers do: an edge client (another
            // gateway client, gRPC, MQTT) fails the call with this reason; a DDS client,
            // which ROS 2 gives no failed reply, times out as it would have.
            w.replier.fail(w.id, &failure_reason(values)).await?;
            return Ok(());
        }
        let mut cdr = Vec::new();
        values
            .unwrap_or(Input::Json(b"{}"))
            .to_cdr(&w.reply, &mut cdr)
            .map_err(|source| SessionError::Encode {
                topic: id.to_string(),
                type_name: w.reply.name().full(),
                source,
            })?;
        w.replier.reply(w.id, &cdr).await?;
        Ok(())
    }
}

/// What a `service_response` with `result: false` says: its `values` when they are a string
/// (rosbridge's convention for an error), else their JSON text.
fn failure_reason(values: Option<Input<'_>>) -> String {
    const NONE: &str = "the serving client answered result: false";
    match values {
        Some(Input::Json(j)) => match serde_json::from_slice::<serde_json::Value>(j) {
            Ok(serde_json::Value::String(s)) => s,
            Ok(serde_json::Value::Null) | Err(_) => NONE.into(),
            Ok(v) => format!("{NONE} ({v})"),
        },
        _ => NONE.into(),
    }
}

/// Passes the realm's requests to the client until aborted.
async fn serve(
    mut server: ServiceServer,
    request: MessageType,
    reply: MessageType,
    out: Arc<Outgoing<Frame>>,
    shared: Arc<ConnShared>,
    pending: Arc<Mutex<Pending>>,
) {
    let service = server.service().service.clone();
    let replier = server.replier();
    let mut body = Vec::new();
    let mut n = 0u64;
    while let Some(req) = server.recv_request(&mut body).await {
        let mut json = Vec::new();
        if let Err(e) = request.cdr_to_json(&body, &mut json) {
            send_status(
                &out,
                &shared,
                Level::Warning,
                &format!(
                    "{service}: a request does not decode as {}: {e}",
                    request.name().full()
                ),
                None,
            );
            continue;
        }
        n += 1;
        let id = format!("service_request:{service}:{n}");
        {
            let mut p = lock(&pending);
            if p.order.len() >= MAX_WAITING {
                if let Some(old) = p.order.pop_front() {
                    p.by_id.remove(&old);
                }
            }
            p.order.push_back(id.clone());
            p.by_id.insert(
                id.clone(),
                Waiting {
                    id: req.id,
                    replier: replier.clone(),
                    reply: reply.clone(),
                },
            );
        }
        let frame = encode::call_service(&service, &id, &json);
        out.control(frame.len(), Frame::Text(frame));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_response_gives_its_string_or_says_what_it_held() {
        assert_eq!(
            failure_reason(Some(Input::Json(br#""too far""#))),
            "too far"
        );
        assert_eq!(
            failure_reason(Some(Input::Json(br#"{"sum": 1}"#))),
            r#"the serving client answered result: false ({"sum":1})"#
        );
        assert_eq!(
            failure_reason(None),
            "the serving client answered result: false"
        );
        assert_eq!(
            failure_reason(Some(Input::Json(b"null"))),
            "the serving client answered result: false"
        );
    }
}
