//! One client of a gateway, whatever its door: who it is and what it may do, its
//! subscriptions (each an edge [`Subscriber`] read by a task that queues samples in the
//! client's [`Outbox`]), its advertisements (edge [`Publisher`]s with the type's codec) and
//! its service calls. Everything it holds is released when it is dropped.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use roam_edge::ros_names::{full_name, full_type, type_to_dds, RosNameError, RosTypeError};
use roam_edge::service::ServiceRefError;
use roam_edge::{
    EdgeError, Event, PayloadKind, Publisher, ServiceError, StreamQos, StreamSpec, Subscriber,
    SubscriberOptions, TopicRef,
};
use roam_msg::{EncodeError, EncodeOptions, MessageType};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use roam_proto::directory::{ItemKind, Role};

use crate::auth::{Action, Identity, Refused};
use crate::listing::Listed;
use crate::outbox::{Outbox, Pacing};
use crate::{Gateway, Stats};

mod service_targets;

use service_targets::TargetCache;
pub use service_targets::{ServiceTarget, ServiceTargets};

/// A subscription's key in its client's outbox.
pub type SubId = u64;

/// A message received for a client, waiting to be encoded for it.
#[derive(Debug)]
pub struct Sample {
    /// The CDR with its encapsulation header.
    pub cdr: Vec<u8>,
    pub received: SystemTime,
    /// The publisher's source timestamp (ns since the Unix epoch), when it sent one.
    pub source_time_ns: Option<u64>,
    /// The type's codec, when a definition is known.
    pub codec: Option<MessageType>,
}

/// What a client's writer takes from: the outbox (control messages of type `C`) and the
/// wake-up for new items.
pub struct Outgoing<C> {
    outbox: Mutex<Outbox<SubId, Sample, C>>,
    pub wake: Notify,
}

impl<C> Outgoing<C> {
    pub fn new(limits: crate::OutboxLimits) -> Self {
        Self {
            outbox: Mutex::new(Outbox::new(limits)),
            wake: Notify::new(),
        }
    }

    pub fn outbox(&self) -> MutexGuard<'_, Outbox<SubId, Sample, C>> {
        self.outbox.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a control message (reply, status) of `size` bytes and wakes the writer.
    pub fn control(&self, size: usize, c: C) {
        self.outbox().push_control(size, c);
        self.wake.notify_one();
    }
}

/// Why a client's request failed: said to the client as is.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Refused(#[from] Refused),
    #[error(transparent)]
    Name(#[from] RosNameError),
    #[error(transparent)]
    Type(#[from] RosTypeError),
    #[error(transparent)]
    ServiceName(#[from] ServiceRefError),
    #[error(
        "the type of {0} is unknown: give `type`, or wait until a member of the realm offers it"
    )]
    UnknownType(String),
    #[error("{topic} is advertised as {was}, not {now}")]
    TypeChanged {
        topic: String,
        was: String,
        now: String,
    },
    #[error("{topic}: the gateway's rules do not let this message through")]
    Ruled { topic: String },
    #[error("{0} is not advertised by this client: advertise it first (with its type)")]
    NotAdvertised(String),
    #[error("no definition of {0}: none on the gateway's machine (msg_paths) and none announced in the realm yet")]
    NoDefinition(String),
    #[error("{topic}: the message does not fit {type_name}: {source}")]
    Encode {
        topic: String,
        type_name: String,
        source: EncodeError,
    },
    #[error("{service}: the server's reply does not decode: {source}")]
    BadReply {
        service: String,
        source: roam_msg::DecodeError,
    },
    #[error("{topic}: {source}")]
    Edge { topic: String, source: EdgeError },
    #[error(transparent)]
    Service(#[from] ServiceError),
    #[error("args: {0}")]
    Args(String),
    #[error("{0}")]
    Response(String),
    #[error("at most {limit} {what} per client")]
    TooMany { what: &'static str, limit: usize },
}

/// A message body from a client, in the form its door received it.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    Json(&'a [u8]),
    Cbor(&'a [u8]),
    /// CDR with its encapsulation header, as a ROS 2 node writes it (the gRPC door's CDR
    /// encoding): checked against the type, then taken as is.
    Cdr(&'a [u8]),
}

impl Input<'_> {
    pub fn to_cdr(&self, ty: &MessageType, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let opts = EncodeOptions {
            now: Some(now_pair()),
            ..EncodeOptions::default()
        };
        match self {
            Input::Json(j) => ty.json_to_cdr(j, &opts, out),
            Input::Cbor(c) => ty.cbor_to_cdr(c, &opts, out),
            Input::Cdr(c) => {
                // Decoded once (into a scratch buffer) so malformed CDR never enters the
                // realm: ROS 2 nodes trust what their DDS reader hands them.
                ty.cdr_to_cbor(c, &mut Vec::new())
                    .map_err(|e| EncodeError {
                        path: e.path,
                        kind: roam_msg::EncodeErrorKind::Syntax(format!(
                            "malformed CDR: {}",
                            e.kind
                        )),
                    })?;
                out.extend_from_slice(c);
                Ok(())
            }
        }
    }
}

/// Now as builtin_interfaces/Time (sec, nanosec).
pub fn now_pair() -> (i32, u32) {
    let d = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() as i32, d.subsec_nanos())
}

struct SubEntry {
    id: SubId,
    /// The client's ids for this topic (rosbridge lets several share one subscription).
    client_ids: BTreeSet<Option<String>>,
    task: JoinHandle<()>,
    _listed: Listed,
}

impl Drop for SubEntry {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct PubEntry {
    publisher: Publisher,
    ros_type: String,
    codec: Arc<Mutex<Option<MessageType>>>,
    /// Follows the topic's announcements for its definition when this machine has none.
    learner: Option<JoinHandle<()>>,
    _listed: Listed,
}

impl Drop for PubEntry {
    fn drop(&mut self) {
        if let Some(t) = &self.learner {
            t.abort();
        }
    }
}

/// A client of a gateway.
pub struct Session<C> {
    gw: Arc<Gateway>,
    identity: Option<Arc<Identity>>,
    out: Arc<Outgoing<C>>,
    subs: HashMap<String, SubEntry>,
    pubs: HashMap<String, PubEntry>,
    services: TargetCache,
    next_sub: SubId,
}

/// A subscription as asked: topic, type (optional), pacing.
pub struct SubscribeRequest<'a> {
    pub topic: &'a str,
    pub ros_type: Option<&'a str>,
    pub client_id: Option<String>,
    pub queue_length: usize,
    pub throttle: Duration,
}

impl<C: Send + 'static> Session<C> {
    /// A session; without authentication on the gateway, its client is anonymous and may do
    /// everything.
    pub fn new(gw: Arc<Gateway>, out: Arc<Outgoing<C>>) -> Self {
        let identity = gw.tokens.is_none().then(|| Arc::new(Identity::anonymous()));
        Self {
            gw,
            identity,
            out,
            subs: HashMap::new(),
            pubs: HashMap::new(),
            services: Default::default(),
            next_sub: 1,
        }
    }

    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gw
    }

    pub fn identity(&self) -> Option<&Arc<Identity>> {
        self.identity.as_ref()
    }

    /// Authenticates with a bearer token (counted when refused).
    pub fn authenticate(&mut self, token: &str) -> Result<Arc<Identity>, Refused> {
        let Some(tokens) = &self.gw.tokens else {
            // No authentication configured: any token is accepted, as rosbridge without
            // rosauth does.
            return Ok(self
                .identity
                .clone()
                .unwrap_or_else(|| Arc::new(Identity::anonymous())));
        };
        match tokens.authenticate(token, crate::unix_now()) {
            Ok(id) => {
                self.identity = Some(id.clone());
                Ok(id)
            }
            Err(e) => {
                Stats::count(&self.gw.stats.refused);
                Err(e)
            }
        }
    }

    /// Authenticates with a client certificate the TLS handshake verified (counted when
    /// refused).
    pub fn authenticate_certificate(&mut self, name: &str) -> Result<Arc<Identity>, Refused> {
        let Some(tokens) = &self.gw.tokens else {
            return Ok(self
                .identity
                .clone()
                .unwrap_or_else(|| Arc::new(Identity::anonymous())));
        };
        match tokens.certificate(name) {
            Ok(id) => {
                self.identity = Some(id.clone());
                Ok(id)
            }
            Err(e) => {
                Stats::count(&self.gw.stats.refused);
                Err(e)
            }
        }
    }

    /// Whether the client may do `action` on `name` now (counted when refused).
    pub fn check(&self, action: Action, name: &str) -> Result<(), Refused> {
        let r = match &self.identity {
            None => Err(Refused::Unauthenticated),
            Some(id) => id.check(action, name, crate::unix_now()),
        };
        if r.is_err() {
            Stats::count(&self.gw.stats.refused);
        }
        r
    }

    /// Whether a listing shows the client this name: a topic it may subscribe to or publish
    /// on, a service or action it may call or serve (serving is publishing's right). A grant
    /// on one kind never shows names of another, so a broad subscribe pattern lists no
    /// services.
    pub fn may_list(&self, kind: ItemKind, name: &str) -> bool {
        let now = crate::unix_now();
        let actions: &[Action] = match kind {
            ItemKind::Topic => &[Action::Subscribe, Action::Publish],
            ItemKind::Service | ItemKind::Action => &[Action::Call, Action::Publish],
        };
        self.identity
            .as_ref()
            .is_some_and(|id| actions.iter().any(|a| id.check(*a, name, now).is_ok()))
    }

    /// Whether the client may read the definition of `ros_type` (`pkg/msg/T`): the type of a
    /// name its listing shows (a service's or action's parts included), or any type for an
    /// identity granted every name.
    pub fn may_read_definition(
        &self,
        listing: &roam_edge::directory::Listing,
        ros_type: &str,
    ) -> bool {
        if self
            .identity
            .as_ref()
            .is_some_and(|id| id.permissions.unrestricted())
        {
            return true;
        }
        let of = |kind: ItemKind, list: &[roam_edge::directory::Listed]| {
            list.iter().any(|l| {
                self.may_list(kind, &l.name)
                    && l.types.iter().any(|t| match kind {
                        ItemKind::Topic => t == ros_type,
                        // example_interfaces/srv/AddTwoInts: ..._Request, ..._Response;
                        // actions: ..._Goal, ..._Result, ..._Feedback and their services.
                        _ => ros_type
                            .strip_prefix(t.as_str())
                            .is_some_and(|rest| rest.starts_with('_')),
                    })
            })
        };
        of(ItemKind::Topic, &listing.topics)
            || of(ItemKind::Service, &listing.services)
            || of(ItemKind::Action, &listing.actions)
    }

    /// The answer to a rosapi question, from the realm's listing as this client may see it.
    pub fn rosapi(&self, q: &crate::rosbridge::rosapi::Query) -> serde_json::Value {
        use crate::rosbridge::rosapi;
        let listing = self.gw.realm_listing();
        let (sec, nanosec) = now_pair();
        rosapi::answer(
            q,
            &rosapi::Context {
                listing: &listing,
                visible: &|kind, n| self.may_list(kind, n),
                definition: &|t| {
                    if !self.may_read_definition(&listing, t) {
                        return None;
                    }
                    self.gw
                        .codecs
                        .known(&type_to_dds(t))
                        .map(|(_, text)| text.to_string())
                },
                now: (i64::from(sec), nanosec),
            },
        )
    }

    /// Whether the client is authenticated (always, without authentication configured).
    pub fn authenticated(&self) -> bool {
        self.identity.is_some()
    }

    /// The type of a topic as the realm's directory lists it.
    fn listed_type(&self, topic: &str) -> Option<String> {
        self.gw
            .realm_listing()
            .topics
            .into_iter()
            .find(|t| t.name == topic)
            .and_then(|t| t.types.into_iter().next())
    }

    /// Subscribes (or changes an existing subscription's pacing); the outbox key.
    pub async fn subscribe(&mut self, r: SubscribeRequest<'_>) -> Result<SubId, SessionError> {
        let topic = full_name(r.topic)?.name;
        self.check(Action::Subscribe, &topic)?;
        let limits = &self.gw.limits;
        let queue_length = match r.queue_length {
            0 if !r.throttle.is_zero() => 1,
            0 => limits.default_queue_length,
            n => n.min(limits.max_queue_length),
        };
        let pacing = Pacing {
            queue_length,
            throttle: r.throttle,
        };
        if let Some(e) = self.subs.get_mut(&topic) {
            e.client_ids.insert(r.client_id);
            let id = e.id;
            self.out.outbox().subscribe(id, pacing);
            return Ok(id);
        }
        if self.subs.len() >= limits.max_topics_per_client {
            return Err(SessionError::TooMany {
                what: "subscriptions",
                limit: limits.max_topics_per_client,
            });
        }
        let ros_type = match r.ros_type {
            Some(t) => full_type(t, false)?,
            None => self
                .listed_type(&topic)
                .ok_or_else(|| SessionError::UnknownType(topic.clone()))?,
        };
        let dds_type = type_to_dds(&ros_type);
        let codec = self.gw.codecs.local(&dds_type).await.map(|(t, _)| t);
        let options = SubscriberOptions {
            dds_type: Some(dds_type.clone()),
            ..SubscriberOptions::default()
        };
        let tref = TopicRef::new(self.gw.realm.clone(), topic.clone());
        let sub = self.gw.edge.subscriber(&tref, options).await;
        let id = self.next_sub;
        self.next_sub += 1;
        self.out.outbox().subscribe(id, pacing);
        let listed = self
            .gw
            .listing
            .add(ItemKind::Topic, Role::Imports, &topic, &ros_type);
        let task = tokio::spawn(read_subscription(
            sub,
            id,
            dds_type,
            codec,
            self.out.clone(),
            self.gw.clone(),
        ));
        self.subs.insert(
            topic,
            SubEntry {
                id,
                client_ids: BTreeSet::from([r.client_id]),
                task,
                _listed: listed,
            },
        );
        Ok(id)
    }

    /// Ends a subscription (all of it without `client_id`, else that id's share); the outbox
    /// key when the subscription is gone.
    pub fn unsubscribe(&mut self, topic: &str, client_id: Option<&str>) -> Option<SubId> {
        let topic = full_name(topic).ok()?.name;
        let e = self.subs.get_mut(&topic)?;
        if let Some(cid) = client_id {
            e.client_ids.remove(&Some(cid.to_string()));
            if !e.client_ids.is_empty() {
                return None;
            }
        }
        let e = self.subs.remove(&topic)?;
        self.out.outbox().unsubscribe(&e.id);
        Some(e.id)
    }

    /// Starts publishing a topic (again with the same type: nothing changes).
    pub async fn advertise(&mut self, topic: &str, ros_type: &str) -> Result<(), SessionError> {
        let topic = full_name(topic)?.name;
        self.check(Action::Publish, &topic)?;
        let ros_type = full_type(ros_type, false)?;
        if let Some(p) = self.pubs.get(&topic) {
            if p.ros_type == ros_type {
                return Ok(());
            }
            return Err(SessionError::TypeChanged {
                topic,
                was: p.ros_type.clone(),
                now: ros_type,
            });
        }
        if self.pubs.len() >= self.gw.limits.max_topics_per_client {
            return Err(SessionError::TooMany {
                what: "advertised topics",
                limit: self.gw.limits.max_topics_per_client,
            });
        }
        let dds_type = type_to_dds(&ros_type);
        let local = self.gw.codecs.local(&dds_type).await;
        let spec = StreamSpec {
            qos: StreamQos {
                reliable: true,
                transient_local: false,
                depth: 10,
            },
            definition: local.as_ref().map(|(_, text)| text.to_string()),
            ..StreamSpec::new(dds_type.clone())
        };
        let tref = TopicRef::new(self.gw.realm.clone(), topic.clone());
        let publisher = self
            .gw
            .edge
            .publisher(&tref, spec)
            .await
            .map_err(|source| SessionError::Edge {
                topic: topic.clone(),
                source,
            })?;
        let codec = Arc::new(Mutex::new(local.map(|(t, _)| t)));
        let learner = if lock(&codec).is_none() {
            Some(tokio::spawn(learn_definition(
                self.gw.clone(),
                tref,
                dds_type,
                codec.clone(),
            )))
        } else {
            None
        };
        let listed = self
            .gw
            .listing
            .add(ItemKind::Topic, Role::Offers, &topic, &ros_type);
        self.pubs.insert(
            topic,
            PubEntry {
                publisher,
                ros_type,
                codec,
                learner,
                _listed: listed,
            },
        );
        Ok(())
    }

    pub fn unadvertise(&mut self, topic: &str) -> bool {
        match full_name(topic) {
            Ok(t) => self.pubs.remove(&t.name).is_some(),
            Err(_) => false,
        }
    }

    /// Publishes one message (advertising the topic first when the realm lists its type).
    pub async fn publish(&mut self, topic: &str, msg: Input<'_>) -> Result<(), SessionError> {
        let topic = full_name(topic)?.name;
        self.check(Action::Publish, &topic)?;
        if !self.pubs.contains_key(&topic) {
            let ty = self
                .listed_type(&topic)
                .ok_or_else(|| SessionError::NotAdvertised(topic.clone()))?;
            self.advertise(&topic, &ty).await?;
        }
        let Some(p) = self.pubs.get(&topic) else {
            return Err(SessionError::NotAdvertised(topic));
        };
        let dds_type = p.publisher.dds_type().to_string();
        let codec = lock(&p.codec)
            .clone()
            .or_else(|| self.gw.codecs.known(&dds_type).map(|(t, _)| t))
            .ok_or_else(|| SessionError::NoDefinition(p.ros_type.clone()))?;
        let mut cdr = Vec::new();
        msg.to_cdr(&codec, &mut cdr)
            .map_err(|source| SessionError::Encode {
                topic: topic.clone(),
                type_name: p.ros_type.clone(),
                source,
            })?;
        let m = crate::rules::RuledMessage {
            topic: &topic,
            dds_type: &dds_type,
            realm: &self.gw.realm.label,
            peer: self.identity.as_ref().map(|i| i.name.as_str()),
        };
        if !self.gw.rules_pass(&m, Some(&codec), &cdr) {
            return Err(SessionError::Ruled { topic });
        }
        p.publisher
            .publish_kind(PayloadKind::Data, &cdr)
            .await
            .map_err(|source| SessionError::Edge { topic, source })
    }

    /// Everything needed to call a service of the realm; the call itself runs apart (see
    /// [`ServiceTarget::call`]) so one slow service never holds up the client's other ops.
    pub fn service_targets(&self) -> ServiceTargets {
        ServiceTargets::for_session(self.gw.clone(), self.services.clone())
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reads a subscription's messages into the client's outbox until aborted or the edge goes.
/// A definition announced later (when this machine has none) becomes the codec from then on.
async fn read_subscription<C>(
    mut sub: Subscriber,
    id: SubId,
    dds_type: String,
    mut codec: Option<MessageType>,
    out: Arc<Outgoing<C>>,
    gw: Arc<Gateway>,
) {
    let mut payload = Vec::new();
    loop {
        if codec.is_none() {
            // Definitions come with the stream announcements (whichever event reports them)
            // or from another client's subscription.
            codec = match sub.definition(&dds_type) {
                Some(text) => match crate::codec::from_text(&dds_type, text) {
                    Ok(t) => {
                        gw.codecs.learn(&dds_type, t.clone(), text);
                        Some(t)
                    }
                    Err(e) => {
                        tracing::warn!("{e}");
                        None
                    }
                },
                None => gw.codecs.known(&dds_type).map(|(t, _)| t),
            };
        }
        match sub.recv(&mut payload).await {
            None => return,
            Some(Event::Message(r)) => {
                if r.kind != PayloadKind::Data {
                    continue;
                }
                let cdr = std::mem::take(&mut payload);
                if gw.rules.get().is_some() {
                    // PEER: the member that announced the stream. What this gateway's own
                    // clients publish was judged when they published it.
                    let announcer = r
                        .stream
                        .and_then(|id| sub.streams().get(&id).map(|i| i.announcer.clone()));
                    let own = announcer.as_deref() == Some(gw.edge.name());
                    let m = crate::rules::RuledMessage {
                        topic: &sub.topic().topic,
                        dds_type: &dds_type,
                        realm: &gw.realm.label,
                        peer: announcer.as_deref(),
                    };
                    if !own && !gw.rules_pass(&m, codec.as_ref(), &cdr) {
                        continue;
                    }
                }
                let size = cdr.len();
                let sample = Sample {
                    cdr,
                    received: SystemTime::now(),
                    source_time_ns: r.source_time_ns,
                    codec: codec.clone(),
                };
                {
                    let mut ob = out.outbox();
                    let before = ob.dropped(&id).unwrap_or(0);
                    if !ob.push_sample(&id, size, sample) {
                        return;
                    }
                    let after = ob.dropped(&id).unwrap_or(0);
                    gw.stats
                        .dropped
                        .fetch_add(after - before, std::sync::atomic::Ordering::Relaxed);
                }
                out.wake.notify_one();
            }
            Some(_) => {}
        }
    }
}

/// Follows a published topic's announcements until a definition of its type arrives (a
/// member importing it announces the one it has).
async fn learn_definition(
    gw: Arc<Gateway>,
    topic: TopicRef,
    dds_type: String,
    codec: Arc<Mutex<Option<MessageType>>>,
) {
    let options = SubscriberOptions {
        announcements_only: true,
        ..SubscriberOptions::default()
    };
    let mut sub = gw.edge.subscriber(&topic, options).await;
    let mut buf = Vec::new();
    loop {
        if let Some(text) = sub.definition(&dds_type) {
            if let Ok(t) = crate::codec::from_text(&dds_type, text) {
                gw.codecs.learn(&dds_type, t.clone(), text);
                *lock(&codec) = Some(t);
                return;
            }
        }
        if sub.recv(&mut buf).await.is_none() {
            return;
        }
    }
}
