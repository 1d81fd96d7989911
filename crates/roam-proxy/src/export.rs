//! Exporting one local topic into its realm: the async shell around [`ExportPlan`], over the
//! edge layer.
//!
//! The task is fed the topic's local publications as DDS discovery reports them. Every stream
//! the plan wants is an edge [`Publisher`] (its own session, announced with its type and QoS);
//! every reader class has a DDS reader while someone in the realm subscribes to the data.
//!
//! Samples are sealed and sent on the DDS thread that delivers them (no hand-off on the hot
//! path), routed by their writer, once the proxy's rules ([`super::rules`]) let them pass;
//! a Copy rule's topics get publishers of their own beside the topic's; a sample whose writer discovery has not told us about yet
//! waits in a small queue until it has (a new latched publisher's history can arrive before
//! its discovery event is processed).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use roam_dds::{
    DdsError, Endpoint, Guid, Participant, Reader, Sample, SampleKind, TopicInfo, TypeDescriptor,
};
use roam_edge::definitions::{Definition, DefinitionSource};
use roam_edge::stats::{Direction, TopicStats};
use roam_edge::{
    Edge, PayloadKind, Pending, Publisher, Realm, StreamQos, StreamSpec, TopicRef, XTypes,
};
use tokio::sync::{mpsc, watch};
use tracing::{info, warn};

use super::export_plan::{ExportPlan, ReaderClass, Route, Routes, StreamKey};
use super::intake::Intake;
use super::nodes::NodeNames;
use super::rules::{ros_type, ProxyRules};

/// How long a keyed type's resolution through DDS type lookup may take.
const TYPE_LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// Samples held while their writer is not yet known, per reader: bounded, oldest dropped.
const MAX_PENDING: usize = 1024;
/// How long such a sample waits before it is dropped (and counted).
const PENDING_WAIT: Duration = Duration::from_secs(2);

/// A change of the local publications on the exported topic.
#[derive(Debug)]
pub enum PublicationEvent {
    /// Boxed: a channel's first block holds 32 events, and a proxy has a channel per topic.
    Up(Box<Endpoint>),
    Down(Guid),
}

/// What one export forwards: a local DDS topic, and its name and realm on the other side.
pub struct ExportLeg {
    pub dds_topic: String,
    pub remote: String,
    pub realm: Arc<Realm>,
    /// false: payloads in clear text (still authenticated).
    pub encrypt: bool,
    /// How long a reliable KEEP_ALL stream of the topic keeps sent messages for
    /// subscribers that missed them ([`super::resend_window`]).
    pub window: roam_edge::recovery::WindowLimits,
    /// Where the proxy finds interface definitions, to announce them with the topic.
    pub definitions: Arc<DefinitionSource>,
    /// The proxy's rules, and the nodes of local writers (NODE).
    pub rules: Arc<ProxyRules>,
    pub nodes: NodeNames,
    /// Writers whose samples this leg leaves alone (a service's clients or servers in
    /// rmw_fastrtps's convention, which [`super::fast_services`] serves).
    pub skip: Option<SkipWriter>,
}

/// Whether a writer's samples are another leg's.
pub type SkipWriter = Arc<dyn Fn(&Guid) -> bool + Send + Sync>;

/// What the rules need to judge a sample of this topic.
struct RuleCtx {
    rules: Arc<ProxyRules>,
    nodes: NodeNames,
    /// The local ROS name (`/chatter`), and the realm's label.
    topic: String,
    realm: String,
}

/// What a reader's callback looks up for every sample.
#[derive(Default)]
struct RouteTable {
    routes: Routes,
    streams: HashMap<StreamKey, Publisher>,
    /// Samples whose writer is not known yet, with when they arrived.
    pending: VecDeque<(Instant, Sample)>,
    rules: Option<Arc<RuleCtx>>,
    /// Per DDS type: its ROS name and, when found, its definition (for FIELD and MESSAGE).
    types: HashMap<String, (String, Option<Arc<Definition>>)>,
    /// Per stream: the publishers of its Copy targets, by target topic.
    copies: HashMap<StreamKey, Vec<(String, Publisher)>>,
    /// Writers another leg serves.
    skip: Option<SkipWriter>,
}

/// How a keyed type is read and written.
enum TypeState {
    /// Waiting for DDS type lookup.
    Resolving,
    Described(Arc<TypeDescriptor>),
    /// No type information: a blob topic (instances are not tracked; said once in the log).
    Blob,
}

/// One reader class: its routing table, and the reader while there is demand.
struct ReaderSlot {
    table: Arc<RwLock<RouteTable>>,
    reader: Option<Reader>,
    creating: bool,
    /// Since when nobody wants a recoverable class's data while its reader stays open.
    unwanted_since: Option<Instant>,
}

enum Internal {
    Demand,
    ReaderMade(ReaderClass, Result<Reader, DdsError>),
    Resolved(String, Result<Arc<TypeDescriptor>, DdsError>),
}

struct Exporter {
    leg: ExportLeg,
    topic: TopicRef,
    edge: Edge,
    participant: Participant,
    intake: Arc<Intake>,
    plan: ExportPlan,
    endpoints: HashMap<Guid, Endpoint>,
    types: HashMap<String, TypeState>,
    /// The definition of each type seen (None: not found on this machine).
    definitions: HashMap<String, Option<Arc<Definition>>>,
    streams: HashMap<StreamKey, Publisher>,
    /// Publishers of Copy rules' targets: (target topic, the stream copied).
    copies: HashMap<(String, StreamKey), Publisher>,
    rule_ctx: Arc<RuleCtx>,
    /// Whether anyone wants the data of each DDS type (its publishers share one name).
    demand: HashMap<String, watch::Receiver<bool>>,
    readers: HashMap<ReaderClass, ReaderSlot>,
    /// Boxed for the reason [`PublicationEvent::Up`] is.
    internal: mpsc::UnboundedSender<Box<Internal>>,
}

/// Runs the export of one topic until the proxy stops (the event channel closes).
pub async fn export(
    edge: Edge,
    participant: Participant,
    intake: Arc<Intake>,
    leg: ExportLeg,
    mut events: mpsc::UnboundedReceiver<PublicationEvent>,
) {
    let (internal, mut internal_rx) = mpsc::unbounded_channel();
    let mut rule_changes = leg.rules.changes();
    let rule_ctx = Arc::new(RuleCtx {
        rules: leg.rules.clone(),
        nodes: leg.nodes.clone(),
        topic: local_name(&leg.dds_topic),
        realm: leg.realm.label.clone(),
    });
    let mut x = Exporter {
        topic: TopicRef::new(leg.realm.clone(), leg.remote.clone()),
        leg,
        edge,
        participant,
        intake,
        plan: ExportPlan::default(),
        endpoints: HashMap::new(),
        types: HashMap::new(),
        definitions: HashMap::new(),
        streams: HashMap::new(),
        copies: HashMap::new(),
        rule_ctx,
        demand: HashMap::new(),
        readers: HashMap::new(),
        internal,
    };
    loop {
        let timeout = x.poll_timeout();
        tokio::select! {
            ev = events.recv() => {
                let Some(ev) = ev else { break };
                x.handle_event(ev);
            }
            Some(msg) = internal_rx.recv() => x.handle_internal(*msg),
            Ok(()) = rule_changes.changed() => {}
            _ = sleep_until(timeout) => {
                x.plan.handle_timeout(Instant::now());
            }
        }
        x.reconcile().await;
    }
}

/// The ROS name a DDS topic carries (`rt/chatter` -> `/chatter`; a service's name for its
/// request and reply topics); the DDS name for others.
fn local_name(dds_topic: &str) -> String {
    use roam_edge::ros_names::{ros_endpoint, RosEndpoint};
    match ros_endpoint(dds_topic) {
        Some(
            RosEndpoint::Topic(n) | RosEndpoint::ServiceRequest(n) | RosEndpoint::ServiceReply(n),
        ) => n,
        None => dds_topic.to_string(),
    }
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}

impl Exporter {
    fn handle_event(&mut self, ev: PublicationEvent) {
        match ev {
            PublicationEvent::Up(ep) => {
                self.plan
                    .publication_up(ep.guid, &ep.type_name, !ep.keyless(), ep.qos);
                self.endpoints.insert(ep.guid, *ep);
            }
            PublicationEvent::Down(guid) => {
                self.plan.publication_down(Instant::now(), &guid);
                self.endpoints.remove(&guid);
            }
        }
    }

    fn handle_internal(&mut self, msg: Internal) {
        match msg {
            Internal::Demand => {}
            Internal::ReaderMade(class, made) => {
                let Some(slot) = self.readers.get_mut(&class) else {
                    return;
                };
                slot.creating = false;
                match made {
                    Ok(r) => {
                        info!(topic = %self.leg.dds_topic, reliable = class.reliable, transient_local = class.transient_local, "a remote subscriber appeared: reading");
                        slot.reader = Some(r);
                    }
                    Err(e) => {
                        warn!(topic = %self.leg.dds_topic, "cannot create a DDS reader: {e}")
                    }
                }
            }
            Internal::Resolved(ty, result) => {
                let state = match result {
                    Ok(d) => {
                        info!(topic = %self.leg.dds_topic, ty = %ty, "keyed type resolved: instances kept apart");
                        TypeState::Described(d)
                    }
                    Err(e) => {
                        warn!(topic = %self.leg.dds_topic, ty = %ty, "keyed type not resolved ({e}): forwarding as a blob, history is not kept per instance");
                        TypeState::Blob
                    }
                };
                self.types.insert(ty, state);
            }
        }
    }

    /// When the plan or a queued sample needs attention.
    fn poll_timeout(&self) -> Option<Instant> {
        let pending = self
            .readers
            .values()
            .filter_map(|s| {
                read_table(&s.table)
                    .pending
                    .front()
                    .map(|(t, _)| *t + PENDING_WAIT)
            })
            .min();
        match (self.plan.poll_timeout(), pending) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Brings streams and readers in line with the plan.
    async fn reconcile(&mut self) {
        for class in self.plan.readers() {
            self.resolve_keyed(&class);
        }
        // Streams, for the types we know how to read. A new stream is announced (by its
        // publisher handle) before its reader reads anything.
        let wanted: HashMap<StreamKey, StreamQos> = self
            .plan
            .streams()
            .into_iter()
            .filter(|(k, _)| self.type_ready(&k.class))
            .collect();
        self.streams
            .retain(|k, p| wanted.get(k).is_some_and(|q| *q == p.qos()));
        for (key, qos) in wanted {
            if self.streams.contains_key(&key) {
                continue;
            }
            self.find_definition(&key.class.dds_type).await;
            match self.edge.publisher(&self.topic, self.spec(&key, qos)).await {
                Ok(p) => {
                    info!(topic = %self.leg.dds_topic, "as" = %self.leg.remote, realm = %self.leg.realm.label, ty = %key.class.dds_type, reliable = qos.reliable, transient_local = qos.transient_local, depth = qos.depth, "exporting");
                    self.watch_demand(&key.class.dds_type, &p);
                    self.streams.insert(key, p);
                }
                Err(e) => warn!(topic = %self.leg.dds_topic, "cannot export: {e}"),
            }
        }
        self.reconcile_copies().await;
        self.demand
            .retain(|ty, _| self.streams.keys().any(|k| k.class.dds_type == *ty));
        self.reconcile_readers();
        self.retry_pending().await;
    }

    fn spec(&self, key: &StreamKey, qos: StreamQos) -> StreamSpec {
        let class = &key.class;
        let xtypes = match self.types.get(&class.dds_type) {
            Some(TypeState::Described(d)) if class.keyed => Some(XTypes {
                type_information: d.type_information().to_vec(),
                type_mapping: d.type_mapping().to_vec(),
            }),
            _ => None,
        };
        StreamSpec {
            dds_type: class.dds_type.clone(),
            keyed: class.keyed,
            qos,
            id: Some(key.id()),
            xtypes,
            // The hash the type's publishers announce (Jazzy and later), for importers' writers.
            type_hash: self
                .endpoints
                .values()
                .filter(|e| e.type_name == class.dds_type)
                .find_map(|e| super::user_data::type_hash(&e.user_data)),
            definition: self
                .definitions
                .get(&class.dds_type)
                .cloned()
                .flatten()
                .map(|d| d.ros2msg().to_string()),
            clear_text: !self.leg.encrypt,
            window: self.leg.window,
        }
    }

    /// Looks up the definition of `ty` on this machine once (file reads: off the runtime).
    async fn find_definition(&mut self, ty: &str) {
        if self.definitions.contains_key(ty) {
            return;
        }
        let source = self.leg.definitions.clone();
        let name = ty.to_string();
        let found = tokio::task::spawn_blocking(move || source.lookup(&name)).await;
        let text = match found {
            Ok(Ok(d)) => Some(d),
            Ok(Err(e)) => {
                tracing::debug!(topic = %self.leg.dds_topic, ty, "no definition to announce: {e}");
                None
            }
            Err(_) => None,
        };
        self.definitions.insert(ty.to_string(), text);
    }

    /// A publisher per stream and Copy target of the rules that can apply to this topic
    /// (same type and QoS as the stream, in the same realm); gone targets lose theirs.
    async fn reconcile_copies(&mut self) {
        let targets = self.leg.rules.copy_targets(&self.rule_ctx.topic);
        let streams = &self.streams;
        self.copies
            .retain(|(t, k), _| targets.contains(t) && streams.contains_key(k));
        let wanted: Vec<(String, StreamKey, StreamQos)> = targets
            .iter()
            .flat_map(|t| {
                self.streams
                    .iter()
                    .map(move |(k, p)| (t.clone(), k.clone(), p.qos()))
            })
            .filter(|(t, k, _)| !self.copies.contains_key(&(t.clone(), k.clone())))
            .collect();
        for (target, key, qos) in wanted {
            let topic = TopicRef::new(self.leg.realm.clone(), target.clone());
            match self.edge.publisher(&topic, self.spec(&key, qos)).await {
                Ok(p) => {
                    info!(topic = %self.leg.dds_topic, copy = %target, "copying (a Copy rule)");
                    self.copies.insert((target, key), p);
                }
                Err(e) => warn!(topic = %self.leg.dds_topic, copy = %target, "cannot copy: {e}"),
            }
        }
    }

    /// Follows whether anyone wants the data of `ty` (all its streams share one name).
    fn watch_demand(&mut self, ty: &str, p: &Publisher) {
        if self.demand.contains_key(ty) {
            return;
        }
        let mut rx = p.demand();
        self.demand.insert(ty.to_string(), rx.clone());
        let tx = self.internal.clone();
        tokio::spawn(async move {
            while rx.changed().await.is_ok() {
                if tx.send(Box::new(Internal::Demand)).is_err() {
                    return;
                }
            }
        });
    }

    /// Whether a class's type can be read: keyless types, and keyed ones once resolved (or
    /// known to be unresolvable: then as a blob).
    fn type_ready(&self, class: &ReaderClass) -> bool {
        !class.keyed
            || matches!(
                self.types.get(&class.dds_type),
                Some(TypeState::Described(_) | TypeState::Blob)
            )
    }

    /// Starts resolving a keyed type through DDS type lookup the first time it is seen.
    fn resolve_keyed(&mut self, class: &ReaderClass) {
        if !class.keyed || self.types.contains_key(&class.dds_type) {
            return;
        }
        self.types
            .insert(class.dds_type.clone(), TypeState::Resolving);
        let info = self
            .endpoints
            .values()
            .filter(|e| e.type_name == class.dds_type)
            .find_map(|e| e.type_info.clone());
        let tx = self.internal.clone();
        let ty = class.dds_type.clone();
        match info {
            Some(info) => {
                let p = self.participant.clone();
                tokio::task::spawn_blocking(move || {
                    let r = TypeDescriptor::resolve(&p, &info, TYPE_LOOKUP_TIMEOUT);
                    let _ = tx.send(Box::new(Internal::Resolved(ty, r.map(Arc::new))));
                });
            }
            None => {
                let _ = tx.send(Box::new(Internal::Resolved(
                    ty,
                    Err(DdsError::InvalidArgument(
                        "the publisher announces no XTypes type information".into(),
                    )),
                )));
            }
        }
    }

    /// Readers exist for the classes whose data someone subscribes to; routing tables follow
    /// the plan.
    fn reconcile_readers(&mut self) {
        let classes = self.plan.readers();
        self.readers.retain(|c, _| classes.contains(c));
        for class in classes {
            if !self.type_ready(&class) {
                continue;
            }
            let wanted = self
                .demand
                .get(&class.dds_type)
                .is_some_and(|d| *d.borrow());
            let linger = self.reader_linger(&class);
            let slot = self
                .readers
                .entry(class.clone())
                .or_insert_with(|| ReaderSlot {
                    table: Arc::new(RwLock::new(RouteTable::default())),
                    reader: None,
                    creating: false,
                    unwanted_since: None,
                });
            {
                let mut t = slot.table.write().unwrap_or_else(|p| p.into_inner());
                t.routes = self.plan.routes(&class);
                t.streams = self.streams.clone();
                t.rules = Some(self.rule_ctx.clone());
                t.skip = self.leg.skip.clone();
                t.types = self
                    .definitions
                    .iter()
                    .map(|(ty, d)| (ty.clone(), (ros_type(ty), d.clone())))
                    .collect();
                t.copies.clear();
                for ((target, key), p) in &self.copies {
                    t.copies
                        .entry(key.clone())
                        .or_default()
                        .push((target.clone(), p.clone()));
                }
            }
            if wanted && slot.reader.is_none() && !slot.creating {
                slot.creating = true;
                let topic = match self.types.get(&class.dds_type) {
                    Some(TypeState::Described(d)) if class.keyed => {
                        TopicInfo::described(&self.leg.dds_topic, d.clone())
                    }
                    _ if class.keyed => TopicInfo::keyed_blob(&self.leg.dds_topic, &class.dds_type),
                    _ => TopicInfo::keyless(&self.leg.dds_topic, &class.dds_type),
                };
                let on_sample = sample_handler(slot.table.clone());
                let (intake, q, tx) = (
                    self.intake.clone(),
                    class.reader_qos(),
                    self.internal.clone(),
                );
                // The constructor may deliver a transient-local writer's history on this
                // thread, and the callback may block on back-pressure; the first bulk topic
                // creates a DDS domain instance: off the async runtime.
                tokio::task::spawn_blocking(move || {
                    let p = intake.participant_for(&class.dds_type);
                    let made = Reader::new(&p, &topic, &q, on_sample);
                    let _ = tx.send(Box::new(Internal::ReaderMade(class, made)));
                });
            } else if !wanted && slot.reader.is_some() {
                // A recoverable stream's reader outlives a short loss of demand (a router on
                // the path died): what the publishers write meanwhile goes into the resend
                // window instead of being lost before roam saw it.
                let first = slot.unwanted_since.is_none();
                let since = *slot.unwanted_since.get_or_insert_with(Instant::now);
                let left = linger.saturating_sub(since.elapsed());
                if left.is_zero() {
                    slot.reader = None;
                    slot.unwanted_since = None;
                    info!(topic = %self.leg.dds_topic, "no remote subscriber left: reader closed");
                } else if first {
                    let tx = self.internal.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(left).await;
                        let _ = tx.send(Box::new(Internal::Demand));
                    });
                }
            } else if wanted {
                slot.unwanted_since = None;
            }
        }
    }

    /// How long a class's reader stays open once nobody wants its data: its streams' resend
    /// window when they are recovered end to end (reliable, keeping every sample), else 0.
    fn reader_linger(&self, class: &ReaderClass) -> Duration {
        let recoverable = self
            .streams
            .iter()
            .any(|(k, p)| k.class == *class && p.losses().is_some());
        match recoverable {
            true => self.leg.window.max_age,
            false => Duration::ZERO,
        }
    }

    /// Routes samples that waited for their writer to be known; drops (and counts) those
    /// that waited too long.
    async fn retry_pending(&mut self) {
        let now = Instant::now();
        for slot in self.readers.values() {
            let (ready, expired) = {
                let mut t = slot.table.write().unwrap_or_else(|p| p.into_inner());
                let (mut ready, mut expired, mut keep) = (Vec::new(), 0u64, VecDeque::new());
                while let Some((at, s)) = t.pending.pop_front() {
                    match lookup(&t, &s) {
                        Lookup::Send(p, copies) => ready.push((p, copies, s)),
                        Lookup::Skip | Lookup::Ruled => {}
                        Lookup::Wait if now < at + PENDING_WAIT => keep.push_back((at, s)),
                        Lookup::Wait => expired += 1,
                    }
                }
                t.pending = keep;
                (ready, expired)
            };
            if expired > 0 {
                self.edge
                    .topics()
                    .topic(Direction::Export, &self.leg.remote)
                    .unattributed
                    .fetch_add(expired, std::sync::atomic::Ordering::Relaxed);
            }
            for (p, copies, s) in ready {
                record_dds_age(&p, &s);
                if let Err(e) = p.publish_kind(payload_kind(s.kind), &s.cdr).await {
                    warn!(topic = %self.leg.dds_topic, "cannot export a sample: {e}");
                }
                for c in copies {
                    let _ = c.publish_kind(payload_kind(s.kind), &s.cdr).await;
                }
            }
        }
    }
}

fn read_table(t: &RwLock<RouteTable>) -> std::sync::RwLockReadGuard<'_, RouteTable> {
    t.read().unwrap_or_else(|p| p.into_inner())
}

enum Lookup {
    /// Its stream's publisher, and those of the copies the rules asked for.
    Send(Publisher, Vec<Publisher>),
    /// Another reader forwards it.
    Skip,
    /// Not known yet.
    Wait,
    /// The rules dropped it (counted).
    Ruled,
}

fn lookup(t: &RouteTable, s: &Sample) -> Lookup {
    if t.skip.as_ref().is_some_and(|skip| skip(&s.writer_guid)) {
        return Lookup::Skip;
    }
    match t.routes.route(&s.writer_guid) {
        Route::Stream(k) => match t.streams.get(&k) {
            Some(p) => match judge(t, &k, p, s) {
                Some(copies) => Lookup::Send(p.clone(), copies),
                None => Lookup::Ruled,
            },
            None => Lookup::Wait,
        },
        Route::Elsewhere => Lookup::Skip,
        Route::Unknown => Lookup::Wait,
    }
}

/// The rules' verdict on a data sample of stream `k`: `None` to drop it (counted on the
/// topic), else the publishers of its copies. Instance lifecycle changes always pass.
fn judge(t: &RouteTable, k: &StreamKey, p: &Publisher, s: &Sample) -> Option<Vec<Publisher>> {
    let Some(ctx) = &t.rules else {
        return Some(Vec::new());
    };
    if s.kind != SampleKind::Data || !ctx.rules.is_active() {
        return Some(Vec::new());
    }
    // The writer's node, and its participant (its GUID prefix: the DDS peer it came from),
    // looked up only when a rule asks about senders.
    let (node, peer) = match ctx.rules.reads_sender() {
        true => (
            ctx.nodes.node_of(&s.writer_guid),
            Some(hex::encode(&s.writer_guid[..12])),
        ),
        false => (None, None),
    };
    let (ty, d) = match t.types.get(&k.class.dds_type) {
        Some((ty, d)) => (ty.as_str(), d.as_deref()),
        None => (k.class.dds_type.as_str(), None),
    };
    let m = roam_rules::Message {
        topic: &ctx.topic,
        type_name: ty,
        node: node.as_deref(),
        realm: &ctx.realm,
        peer: peer.as_deref(),
        size: s.cdr.len(),
    };
    let v = ctx.rules.evaluate(
        &m,
        d.map(|d| d.schema()),
        d.map(|d| d.ros2msg()),
        &s.cdr,
        source_time(s),
    );
    if !v.passes() {
        TopicStats::count(&p.stats().ruled);
        return None;
    }
    let copies = match t.copies.get(k) {
        Some(cs) if !v.copies.is_empty() => cs
            .iter()
            .filter(|(target, _)| v.copies.contains(target))
            .map(|(_, c)| c.clone())
            .collect(),
        _ => Vec::new(),
    };
    Some(copies)
}

fn payload_kind(k: SampleKind) -> PayloadKind {
    match k {
        SampleKind::Data => PayloadKind::Data,
        SampleKind::Disposed => PayloadKind::Dispose,
        SampleKind::Unregistered => PayloadKind::Unregister,
    }
}

/// The sample's source timestamp, when valid (DDS gives an invalid one as zero or less).
fn source_time(s: &Sample) -> Option<u64> {
    u64::try_from(s.source_timestamp_ns).ok().filter(|&t| t > 0)
}

/// How long DDS took from the publisher's write to this hop.
fn record_dds_age(p: &Publisher, s: &Sample) {
    if s.source_timestamp_ns > 0 {
        let now = roam_net::latency::now_us();
        p.stats()
            .age_in
            .record(now.saturating_sub(s.source_timestamp_ns as u64 / 1000));
    }
}

/// The reader callback: routes each sample to its stream's publisher, which seals and sends
/// it (small ones on the DDS thread; large ones, and those of a topic pushed back on, from
/// its backlog; blocking only while that backlog is full).
fn sample_handler(table: Arc<RwLock<RouteTable>>) -> impl Fn(Sample) + Send + Sync + 'static {
    move |s: Sample| {
        let found = lookup(&read_table(&table), &s);
        match found {
            Lookup::Send(p, copies) => {
                record_dds_age(&p, &s);
                let kind = payload_kind(s.kind);
                // The publisher's timestamp goes along, for importers to write the sample
                // with it.
                let source_time = source_time(&s);
                // The sample's bytes, still in CycloneDDS's buffer: copies share them, and
                // the seal reads them there.
                let cdr = s.cdr;
                // A failure is counted by the publisher.
                let _ = p.publish_blocking(Pending::new(kind, cdr.clone(), source_time));
                for c in copies {
                    let _ = c.publish_blocking(Pending::new(kind, cdr.clone(), source_time));
                }
            }
            Lookup::Skip | Lookup::Ruled => {}
            Lookup::Wait => {
                let mut t = table.write().unwrap_or_else(|p| p.into_inner());
                if t.pending.len() >= MAX_PENDING {
                    t.pending.pop_front();
                    if let Some(p) = t.streams.values().next() {
                        TopicStats::count(&p.stats().unattributed);
                    }
                }
                t.pending.push_back((Instant::now(), s));
            }
        }
    }
}
