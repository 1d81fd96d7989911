//! The `roam.gateway.v1.Gateway` service: each call authenticated with its token and carried
//! out on a [`Session`] of its own (publications, subscriptions) or on the door's shared
//! service and action clients (calls, goals), which check the caller's permission first.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use roam_edge::ros_names::{full_name, full_type, type_to_dds};
use roam_edge::TopicRef;
use roam_proto::directory::ItemKind;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status, Streaming};

use super::goals::ActionTargets;
use super::pb::gateway_server::Gateway as GatewayService;
use super::pb::{self, Encoding};
use super::server::ClientCert;
use super::status;
use super::subscribe::Subscription;
use crate::auth::{Action, Identity, Refused};
use crate::rosbridge::rosapi;
use crate::session::{Input, Outgoing, ServiceTargets, Session, SubscribeRequest};
use crate::{Gateway, Stats};

/// A session that sends nothing through an outbox of its own but subscriptions' samples.
pub type CallSession = Session<Infallible>;

/// The gRPC service of one gateway.
pub struct Door {
    gw: Arc<Gateway>,
    /// Service clients shared by every call (built once per service, bounded).
    services: ServiceTargets,
    actions: Arc<ActionTargets>,
}

type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// `stream` until the token of `id` expires, then an UNAUTHENTICATED status that says so
/// (the call ends: what the identity held through it is released).
fn until_expiry<T: Send + 'static>(
    stream: EventStream<T>,
    id: Option<&Identity>,
) -> EventStream<T> {
    let Some(at) = crate::expiry::expiry(id) else {
        return stream;
    };
    let why = crate::expiry::expired(id);
    Box::pin(futures_util::stream::unfold(
        Some((stream, why)),
        move |state| async move {
            let (mut s, why) = state?;
            tokio::select! {
                item = s.next() => item.map(|i| (i, Some((s, why)))),
                _ = tokio::time::sleep_until(at) => Some((Err(Status::unauthenticated(why)), None)),
            }
        },
    ))
}

/// A message body in the encoding a call chose.
pub fn input(encoding: Encoding, payload: &[u8]) -> Input<'_> {
    match encoding {
        Encoding::Json => Input::Json(payload),
        Encoding::Cdr => Input::Cdr(payload),
    }
}

/// An `Encoding` field's value; an unknown number is refused (a client newer than the door).
pub fn encoding(value: i32) -> Result<Encoding, Status> {
    Encoding::try_from(value).map_err(|_| {
        Status::invalid_argument(format!("encoding {value} is not JSON (0) or CDR (1)"))
    })
}

fn name_of(field: &str, value: &str) -> Result<String, Status> {
    if value.is_empty() {
        return Err(Status::invalid_argument(format!("{field}: missing")));
    }
    full_name(value)
        .map(|n| n.name)
        .map_err(|e| Status::invalid_argument(format!("{field}: {e}")))
}

/// `None` for an empty optional string field.
fn given(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

impl Door {
    pub fn new(gw: Arc<Gateway>) -> Door {
        Door {
            services: ServiceTargets::for_gateway(gw.clone()),
            actions: Arc::new(ActionTargets::new(gw.clone())),
            gw,
        }
    }

    /// A session for one call, authenticated with the call's token when the gateway has
    /// tokens (a refusal is counted in the gateway's stats).
    pub fn session<T>(&self, request: &tonic::Request<T>) -> Result<CallSession, Status> {
        self.session_with(request).map(|(s, _)| s)
    }

    /// [`Self::session`] and its outbox (what a subscription's samples wait in).
    pub fn session_with<T>(
        &self,
        request: &tonic::Request<T>,
    ) -> Result<(CallSession, Arc<Outgoing<Infallible>>), Status> {
        let out = Arc::new(Outgoing::new(self.gw.limits.outbox));
        let mut session = Session::new(self.gw.clone(), out.clone());
        // A verified client certificate of the connection authenticates first; a token can
        // still name another identity.
        let conn = request.extensions().get::<ClientCert>();
        if let Some(name) = conn.and_then(|c| c.name.as_deref()) {
            session
                .authenticate_certificate(name)
                .map_err(|r| status::refused(&r))?;
        }
        let metadata: &MetadataMap = request.metadata();
        let header = metadata.get("authorization").and_then(|v| v.to_str().ok());
        match status::bearer(header) {
            Some(token) => {
                session
                    .authenticate(token)
                    .map_err(|r| status::refused(&r))?;
            }
            None if !session.authenticated() => {
                Stats::count(&self.gw.stats.refused);
                return Err(status::refused(&Refused::Unauthenticated));
            }
            None => {}
        }
        // The first call that proves an identity admits its connection.
        if let Some(slot) = conn.and_then(|c| c.slot.as_ref()) {
            slot.admit()
                .map_err(|cause| Status::unavailable(cause.reason()))?;
        }
        Ok((session, out))
    }

    fn check(&self, session: &CallSession, action: Action, name: &str) -> Result<(), Status> {
        session.check(action, name).map_err(|r| status::refused(&r))
    }

    fn timeout(&self, seconds: f64) -> Result<Duration, Status> {
        if seconds == 0.0 {
            return Ok(self.gw.limits.call_timeout);
        }
        Duration::try_from_secs_f64(seconds)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                Status::invalid_argument(format!("timeout_s: {seconds} is not a number of seconds"))
            })
    }
}

#[tonic::async_trait]
impl GatewayService for Door {
    async fn publish(
        &self,
        request: Request<Streaming<pb::PublishRequest>>,
    ) -> Result<Response<pb::PublishSummary>, Status> {
        let mut session = self.session(&request)?;
        let mut messages = request.into_inner();
        let Some(first) = messages.message().await? else {
            return Ok(Response::new(pb::PublishSummary { published: 0 }));
        };
        let topic = name_of("topic", &first.topic)?;
        self.check(&session, Action::Publish, &topic)?;
        if let Some(ty) = given(&first.r#type) {
            session
                .advertise(&topic, ty)
                .await
                .map_err(|e| status::session(&e))?;
        }
        let encoding = encoding(first.encoding)?;
        let mut published = 0u64;
        let mut next = Some(first);
        while let Some(m) = next {
            if !m.topic.is_empty() && name_of("topic", &m.topic)? != topic {
                return Err(Status::invalid_argument(format!(
                    "topic: one Publish stream publishes on one topic ({topic}), not {}",
                    m.topic
                )));
            }
            if !m.payload.is_empty() {
                if let Err(e) = session.publish(&topic, input(encoding, &m.payload)).await {
                    let s = status::session(&e);
                    return Err(Status::new(
                        s.code(),
                        format!(
                            "message {} refused ({published} published): {}",
                            published + 1,
                            s.message()
                        ),
                    ));
                }
                published += 1;
            }
            next = messages.message().await?;
        }
        Ok(Response::new(pb::PublishSummary { published }))
    }

    type SubscribeStream = EventStream<pb::SubscribeResponse>;

    async fn subscribe(
        &self,
        request: Request<pb::SubscribeRequest>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        let (mut session, out) = self.session_with(&request)?;
        let r = request.into_inner();
        let topic = name_of("topic", &r.topic)?;
        let encoding = encoding(r.encoding)?;
        let id = session
            .subscribe(SubscribeRequest {
                topic: &topic,
                ros_type: given(&r.r#type),
                client_id: None,
                queue_length: r.queue_length as usize,
                throttle: Duration::from_millis(u64::from(r.throttle_ms)),
            })
            .await
            .map_err(|e| status::session(&e))?;
        let who = session.identity().cloned();
        let sub = Subscription::new(session, out, id, encoding);
        Ok(Response::new(until_expiry(
            Box::pin(sub.into_stream()),
            who.as_deref(),
        )))
    }

    async fn call_service(
        &self,
        request: Request<pb::CallServiceRequest>,
    ) -> Result<Response<pb::CallServiceResponse>, Status> {
        let session = self.session(&request)?;
        let r = request.into_inner();
        let encoding = encoding(r.encoding)?;
        if rosapi::is_rosapi(&r.service) {
            // Answered here as on rosbridge, from the listing this identity may see.
            if encoding != Encoding::Json {
                return Err(Status::invalid_argument(
                    "rosapi answers in JSON: use ENCODING_JSON",
                ));
            }
            let args =
                (!r.request.is_empty()).then(|| String::from_utf8_lossy(&r.request).into_owned());
            let q = rosapi::parse(&r.service, args.as_deref())
                .map_err(|e| Status::invalid_argument(e.to_string()))?;
            let reply = session.rosapi(&q).to_string().into_bytes();
            return Ok(Response::new(pb::CallServiceResponse { reply }));
        }
        let service = name_of("service", &r.service)?;
        self.check(&session, Action::Call, &service)?;
        let timeout = self.timeout(r.timeout_s)?;
        let target = self
            .services
            .get(&service, given(&r.r#type))
            .await
            .map_err(|e| status::session(&e))?;
        let args = (!r.request.is_empty()).then(|| input(encoding, &r.request));
        let reply = match encoding {
            Encoding::Json => target.call(args, timeout).await,
            Encoding::Cdr => target.call_cdr(args, timeout).await,
        }
        .map_err(|e| status::session(&e))?;
        Ok(Response::new(pb::CallServiceResponse { reply }))
    }

    type SendGoalStream = EventStream<pb::GoalEvent>;

    async fn send_goal(
        &self,
        request: Request<pb::SendGoalRequest>,
    ) -> Result<Response<Self::SendGoalStream>, Status> {
        let session = self.session(&request)?;
        let r = request.into_inner();
        let action = name_of("action", &r.action)?;
        self.check(&session, Action::Call, &action)?;
        let encoding = encoding(r.encoding)?;
        let target = self.actions.get(&action, given(&r.r#type)).await?;
        let events = target.send_goal(encoding, &r.goal, self.gw.limits.call_timeout)?;
        Ok(Response::new(until_expiry(
            Box::pin(events),
            session.identity().map(|i| &**i),
        )))
    }

    async fn cancel_goal(
        &self,
        request: Request<pb::CancelGoalRequest>,
    ) -> Result<Response<pb::CancelGoalResponse>, Status> {
        let session = self.session(&request)?;
        let r = request.into_inner();
        let action = name_of("action", &r.action)?;
        self.check(&session, Action::Call, &action)?;
        let id = status::parse_goal_id(&r.goal_id).ok_or_else(|| {
            Status::invalid_argument(format!(
                "goal_id: {:?} is not a goal id (a UUID as GoalAccepted gave it)",
                r.goal_id
            ))
        })?;
        let target = self.actions.get(&action, given(&r.r#type)).await?;
        let answer = target.cancel(id, self.gw.limits.call_timeout).await?;
        Ok(Response::new(answer))
    }

    async fn list_topics(
        &self,
        request: Request<pb::ListTopicsRequest>,
    ) -> Result<Response<pb::ListTopicsResponse>, Status> {
        let session = self.session(&request)?;
        let listing = self.gw.realm_listing();
        let visible =
            |kind: ItemKind, list: Vec<roam_edge::directory::Listed>| -> Vec<pb::Listed> {
                list.into_iter()
                    .filter(|l| session.may_list(kind, &l.name))
                    .map(|l| pb::Listed {
                        name: l.name,
                        types: l.types,
                        offered_by: l.offered_by.into_iter().map(|p| p.member).collect(),
                        imported_by: l.imported_by.into_iter().map(|p| p.member).collect(),
                    })
                    .collect()
            };
        Ok(Response::new(pb::ListTopicsResponse {
            topics: visible(ItemKind::Topic, listing.topics),
            services: visible(ItemKind::Service, listing.services),
            actions: visible(ItemKind::Action, listing.actions),
        }))
    }

    async fn get_definition(
        &self,
        request: Request<pb::GetDefinitionRequest>,
    ) -> Result<Response<pb::GetDefinitionResponse>, Status> {
        let session = self.session(&request)?;
        let asked = request.into_inner().r#type;
        let ros_type =
            full_type(&asked, false).map_err(|e| Status::invalid_argument(format!("type: {e}")))?;
        if !session.may_read_definition(&self.gw.realm_listing(), &ros_type) {
            Stats::count(&self.gw.stats.refused);
            return Err(Status::permission_denied(format!(
                "{ros_type}: no topic, service or action this identity may use has that type"
            )));
        }
        let dds_type = type_to_dds(&ros_type);
        let text = match self.gw.codecs.local(&dds_type).await {
            Some((_, text)) => Some(text),
            None => self.announced(&ros_type, &dds_type).await,
        };
        let Some(text) = text else {
            return Err(Status::not_found(format!(
                "no definition of {ros_type}: none on the gateway's machine (msg_paths, AMENT_PREFIX_PATH) and none announced in the realm with a topic of that type"
            )));
        };
        Ok(Response::new(pb::GetDefinitionResponse {
            r#type: ros_type,
            definition: text.to_string(),
            encodings: vec![Encoding::Json as i32, Encoding::Cdr as i32],
        }))
    }
}

impl Door {
    /// A definition learned from the realm: already by some client, else announced with a
    /// topic of that type the realm's directory lists (awaited up to
    /// limits.definition_wait).
    async fn announced(&self, ros_type: &str, dds_type: &str) -> Option<Arc<str>> {
        if let Some((_, text)) = self.gw.codecs.known(dds_type) {
            return Some(text);
        }
        let topic = self
            .gw
            .realm_listing()
            .topics
            .into_iter()
            .find(|t| t.types.iter().any(|t| t == ros_type))?;
        let tref = TopicRef::new(self.gw.realm.clone(), topic.name);
        self.services.codec(&tref, dds_type).await.ok()?;
        self.gw.codecs.known(dds_type).map(|(_, text)| text)
    }
}
