//! One Foxglove client: its ops carried out on its [`Session`], the realm's catalog kept in
//! step with what it was told, every failure said back as a `status` (or, for a service call,
//! a `serviceCallFailure`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Semaphore;

use super::catalog::{Snapshot, View};
use super::encode::{self, Frame, Level};
use super::ops::{self, ClientChannel, Op, OpError, Subscription};
use crate::auth::Action;
use crate::session::{Input, Outgoing, Session, SessionError, SubId, SubscribeRequest};
use crate::{Gateway, Stats};

/// The client's subscription id and topic of each of its outbox subscriptions (for the
/// writer: message data carries the client's id; drop reports name the topic).
#[derive(Default)]
pub struct ConnShared {
    subs: Mutex<HashMap<SubId, (u32, String)>>,
}

impl ConnShared {
    pub fn subscription(&self, id: SubId) -> Option<(u32, String)> {
        self.lock().get(&id).cloned()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<SubId, (u32, String)>> {
        self.subs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What a client without a token is told (the protocol has no login op: the token comes with
/// the upgrade request).
const UNAUTHENTICATED: &str = "not authenticated: this gateway requires a token (`Authorization: Bearer TOKEN` or `?token=TOKEN` on the WebSocket URL); nothing is offered until then";

/// Queues a status for the client.
pub fn send_status(out: &Outgoing<Frame>, level: Level, msg: &str, id: Option<&str>) {
    let f = encode::status(level, msg, id);
    out.control(f.len(), f);
}

struct Subscribed {
    channel: u64,
    topic: String,
}

/// A channel the client publishes on.
struct Published {
    topic: String,
    json: bool,
}

pub struct Conn {
    session: Session<Frame>,
    out: Arc<Outgoing<Frame>>,
    shared: Arc<ConnShared>,
    view: View,
    subs: HashMap<u32, Subscribed>,
    channels: HashMap<u32, Published>,
    calls: Arc<Semaphore>,
}

/// The encodings a client may publish and call services in.
fn is_json(encoding: &str) -> Option<bool> {
    match encoding {
        encode::CDR => Some(false),
        "json" => Some(true),
        _ => None,
    }
}

impl Conn {
    pub fn new(gw: Arc<Gateway>, out: Arc<Outgoing<Frame>>, shared: Arc<ConnShared>) -> Conn {
        let calls = Arc::new(Semaphore::new(gw.limits.max_calls_per_client));
        Conn {
            session: Session::new(gw, out.clone()),
            out,
            shared,
            view: View::default(),
            subs: HashMap::new(),
            channels: HashMap::new(),
            calls,
        }
    }

    pub fn session(&mut self) -> &mut Session<Frame> {
        &mut self.session
    }

    fn gw(&self) -> &Arc<Gateway> {
        self.session.gateway()
    }

    fn status(&self, level: Level, msg: &str) {
        send_status(&self.out, level, msg, None);
    }

    fn send(&self, f: Frame) {
        self.out.control(f.len(), f);
    }

    /// The first messages: what the server offers, why the client reaches nothing when it
    /// did not authenticate, and the channels and services it may use (an `advertise`
    /// always, even an empty one, as the protocol says). `counted`: a credential the client
    /// gave was already refused (and counted).
    pub fn greet(&mut self, server_info: Frame, snap: &Snapshot, counted: bool) {
        self.send(server_info);
        if !self.session.authenticated() {
            if !counted {
                Stats::count(&self.gw().stats.refused);
            }
            self.status(Level::Error, UNAUTHENTICATED);
        }
        self.catalog(snap, true);
    }

    /// Tells the client what changed in the realm's catalog (what it may see of it); ends its
    /// subscriptions of channels that went away.
    pub fn catalog(&mut self, snap: &Snapshot, first: bool) {
        let now = crate::unix_now();
        let identity = self.session.identity().cloned();
        let may = |a: Action| {
            let id = identity.clone();
            move |name: &str| id.as_ref().is_some_and(|i| i.check(a, name, now).is_ok())
        };
        let ch = self
            .view
            .update(snap, may(Action::Subscribe), may(Action::Call));
        if !ch.unadvertise.is_empty() {
            let gone: Vec<u32> = self
                .subs
                .iter()
                .filter(|(_, s)| ch.unadvertise.contains(&s.channel))
                .map(|(id, _)| *id)
                .collect();
            self.unsubscribe(gone);
            self.send(encode::unadvertise(&ch.unadvertise));
        }
        if first || !ch.advertise.is_empty() {
            self.send(encode::advertise(ch.advertise.iter().map(|c| &**c)));
        }
        if !ch.unadvertise_services.is_empty() {
            self.send(encode::unadvertise_services(&ch.unadvertise_services));
        }
        if !ch.advertise_services.is_empty() {
            self.send(encode::advertise_services(
                ch.advertise_services.iter().map(|s| &**s),
            ));
        }
    }

    /// Handles a text (JSON) or binary frame.
    pub async fn frame(&mut self, text: bool, bytes: &[u8]) {
        if text {
            match ops::parse_json(bytes) {
                Ok(op) => self.op(op).await,
                Err(e) => self.refusal(e),
            }
        } else {
            match ops::parse_binary(bytes) {
                Ok(op) => self.op(op).await,
                Err(e) => self.refusal(e),
            }
        }
    }

    fn refusal(&self, e: OpError) {
        Stats::count(&self.gw().stats.bad_frames);
        tracing::debug!("foxglove: refused a frame: {e}");
        self.status(Level::Error, &format!("refused a frame: {e}"));
    }

    async fn op(&mut self, op: Op<'_>) {
        if !self.session.authenticated() {
            Stats::count(&self.gw().stats.refused);
            if let Op::ServiceCall { service, call, .. } = op {
                return self.send(encode::service_call_failure(service, call, UNAUTHENTICATED));
            }
            return self.status(Level::Error, UNAUTHENTICATED);
        }
        match op {
            Op::Subscribe(s) => self.subscribe(s).await,
            Op::Unsubscribe(ids) => self.unsubscribe(ids),
            Op::Advertise(c) => self.advertise(c).await,
            Op::Unadvertise(ids) => self.unadvertise(ids),
            Op::MessageData { channel, payload } => self.publish(channel, payload).await,
            Op::ServiceCall {
                service,
                call,
                encoding,
                payload,
            } => self.call(service, call, encoding, payload),
            Op::Unsupported(op) => self.status(
                Level::Error,
                &format!(
                    "op {op} is not supported: this server offers subscriptions, clientPublish and services"
                ),
            ),
        }
    }

    async fn subscribe(&mut self, subs: Vec<Subscription>) {
        for s in subs {
            if let Err(why) = self.subscribe_one(s).await {
                self.status(
                    Level::Error,
                    &format!("subscribe {} (channel {}): {why}", s.id, s.channel_id),
                );
            }
        }
    }

    async fn subscribe_one(&mut self, s: Subscription) -> Result<(), String> {
        if self.subs.contains_key(&s.id) {
            return Err("this subscription id is in use".into());
        }
        let Some(c) = self.view.channel(s.channel_id).cloned() else {
            return Err("no such channel was advertised to this client".into());
        };
        if let Some((id, _)) = self.subs.iter().find(|(_, x)| x.channel == c.id) {
            return Err(format!("the channel already has subscription {id}"));
        }
        let sub = self
            .session
            .subscribe(SubscribeRequest {
                topic: &c.topic,
                ros_type: Some(&c.ros_type),
                client_id: None,
                queue_length: 0,
                throttle: Duration::ZERO,
            })
            .await
            .map_err(|e| e.to_string())?;
        self.shared.lock().insert(sub, (s.id, c.topic.clone()));
        self.subs.insert(
            s.id,
            Subscribed {
                channel: c.id,
                topic: c.topic.clone(),
            },
        );
        Ok(())
    }

    fn unsubscribe(&mut self, ids: Vec<u32>) {
        for id in ids {
            let Some(s) = self.subs.remove(&id) else {
                self.status(
                    Level::Warning,
                    &format!("unsubscribe: no subscription {id}"),
                );
                continue;
            };
            if let Some(sub) = self.session.unsubscribe(&s.topic, None) {
                self.shared.lock().remove(&sub);
            }
        }
    }

    async fn advertise(&mut self, channels: Vec<ClientChannel>) {
        for c in channels {
            if let Err(why) = self.advertise_one(&c).await {
                self.status(
                    Level::Error,
                    &format!("advertise channel {} ({}): {why}", c.id, c.topic),
                );
            }
        }
    }

    async fn advertise_one(&mut self, c: &ClientChannel) -> Result<(), String> {
        let json = is_json(&c.encoding).ok_or_else(|| {
            format!(
                "encoding {:?} is not one of this server's (cdr, json)",
                c.encoding
            )
        })?;
        if self.channels.contains_key(&c.id) {
            return Err("this channel id is in use".into());
        }
        if c.schema_name.is_empty() {
            return Err(
                "schemaName: the ROS 2 type of the channel is needed (pkg/msg/Type)".into(),
            );
        }
        let limit = self.gw().limits.max_topics_per_client;
        if self.channels.len() >= limit {
            return Err(SessionError::TooMany {
                what: "advertised channels",
                limit,
            }
            .to_string());
        }
        self.session
            .advertise(&c.topic, &c.schema_name)
            .await
            .map_err(|e| e.to_string())?;
        let topic = roam_edge::ros_names::full_name(&c.topic)
            .map_err(|e| e.to_string())?
            .name;
        self.channels.insert(c.id, Published { topic, json });
        Ok(())
    }

    fn unadvertise(&mut self, ids: Vec<u32>) {
        for id in ids {
            let Some(p) = self.channels.remove(&id) else {
                self.status(
                    Level::Warning,
                    &format!("unadvertise: no channel {id} was advertised by this client"),
                );
                continue;
            };
            // Two channels of the client may share a topic: its publisher stays for the other.
            if !self.channels.values().any(|o| o.topic == p.topic) {
                self.session.unadvertise(&p.topic);
            }
        }
    }

    async fn publish(&mut self, channel: u32, payload: &[u8]) {
        let Some(p) = self.channels.get(&channel) else {
            return self.status(
                Level::Error,
                &format!("message data: channel {channel} is not advertised by this client"),
            );
        };
        let input = if p.json {
            Input::Json(payload)
        } else {
            Input::Cdr(payload)
        };
        let topic = p.topic.clone();
        if let Err(e) = self.session.publish(&topic, input).await {
            tracing::debug!("foxglove: publish refused: {e}");
            self.status(Level::Error, &e.to_string());
        }
    }

    /// A service call, made by a task of its own; its reply (or failure) is queued when it
    /// comes, in the request's encoding.
    fn call(&mut self, service: u32, call: u32, encoding: &str, payload: &[u8]) {
        let fail = |why: &str| encode::service_call_failure(service, call, why);
        let Some(json) = is_json(encoding) else {
            return self.send(fail(&format!(
                "encoding {encoding:?} is not one of this server's (cdr, json)"
            )));
        };
        let Some(s) = self.view.service(service).cloned() else {
            return self.send(fail("no such service was advertised to this client"));
        };
        if let Err(e) = self.session.check(Action::Call, &s.name) {
            return self.send(fail(&e.to_string()));
        }
        let Ok(permit) = self.calls.clone().try_acquire_owned() else {
            let e = SessionError::TooMany {
                what: "service calls waiting for replies",
                limit: self.gw().limits.max_calls_per_client,
            };
            return self.send(fail(&e.to_string()));
        };
        let targets = self.session.service_targets();
        let out = self.out.clone();
        let timeout = self.gw().limits.call_timeout;
        let payload = payload.to_vec();
        let encoding = encoding.to_string();
        tokio::spawn(async move {
            let _permit = permit;
            let reply = async {
                let target = targets.get(&s.name, Some(&s.srv_type)).await?;
                if json {
                    target.call(Some(Input::Json(&payload)), timeout).await
                } else {
                    target.call_cdr(Some(Input::Cdr(&payload)), timeout).await
                }
            }
            .await;
            let f = match reply {
                Ok(r) => encode::service_call_response(service, call, &encoding, &r),
                Err(e) => encode::service_call_failure(service, call, &e.to_string()),
            };
            out.control(f.len(), f);
        });
    }
}
