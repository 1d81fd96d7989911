//! Exporting one local topic into its realm: the async shell around [`ExportPlan`].
//!
//! The task is fed the topic's local publications as DDS discovery reports them. For every
//! stream the plan wants it keeps a sealer (its own session); for every reader class, a DDS
//! reader while someone in the realm subscribes to the data; and it announces the streams,
//! sealed, on the topic's metadata name: at once when they change, and every
//! [`META_PERIOD`] while anyone listens.
//!
//! Samples are sealed on the DDS thread that delivers them (no hand-off on the hot path) and
//! routed by their writer; a sample whose writer discovery has not told us about yet waits in a
//! small queue until it has (a new latched publisher's history can arrive before its
//! discovery event is processed).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use roam_dds::{
    DdsError, Endpoint, Guid, Participant, Reader, Sample, SampleKind, TopicInfo, TypeDescriptor,
};
use roam_net::latency::now_us;
use roam_net::runtime::RouterHandle;
use roam_proto::meta::{StreamAnnouncement, StreamQos, TopicAnnouncement, XTypes};
use roam_proto::{Name, PayloadKind, Sealer};
use tokio::sync::{mpsc, watch};
use tracing::{info, warn};

use super::export_plan::{ExportPlan, ReaderClass, Route, Routes, StreamKey};
use super::meta::{data_descriptor, meta_descriptor};
use crate::realm_file::Realm;
use crate::stats::TopicStats;

/// How often an exporter re-announces a topic's streams while anyone listens for them.
pub const META_PERIOD: Duration = Duration::from_secs(2);

/// How long a keyed type's resolution through DDS type lookup may take.
const TYPE_LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// Samples held while their writer is not yet known, per reader: bounded, oldest dropped.
const MAX_PENDING: usize = 1024;
/// How long such a sample waits before it is dropped (and counted).
const PENDING_WAIT: Duration = Duration::from_secs(2);

/// A change of the local publications on the exported topic.
#[derive(Debug)]
pub enum PublicationEvent {
    Up(Endpoint),
    Down(Guid),
}

/// What one export forwards: a local DDS topic, and its name and realm on the other side.
pub struct ExportLeg {
    pub dds_topic: String,
    pub remote: String,
    pub realm: Arc<Realm>,
    /// false: payloads in clear text (still authenticated).
    pub encrypt: bool,
    /// This proxy's name in announcements (a restarted proxy replaces its announcement).
    pub exporter: String,
    pub stats: Arc<TopicStats>,
}

/// One stream's sending side: its realm name and its sealer (its own session).
struct StreamOut {
    name: Name,
    sealer: Mutex<Sealer>,
    announcement: StreamAnnouncement,
}

/// What a reader's callback looks up for every sample.
#[derive(Default)]
struct RouteTable {
    routes: Routes,
    streams: HashMap<StreamKey, Arc<StreamOut>>,
    /// Samples whose writer is not known yet, with when they arrived.
    pending: VecDeque<(Instant, Sample)>,
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
}

enum Internal {
    Demand(String, bool),
    ReaderMade(ReaderClass, Result<Reader, DdsError>),
    Resolved(String, Result<Arc<TypeDescriptor>, DdsError>),
}

struct Exporter {
    leg: ExportLeg,
    router: RouterHandle,
    participant: Participant,
    plan: ExportPlan,
    endpoints: HashMap<Guid, Endpoint>,
    types: HashMap<String, TypeState>,
    /// Data name and demand per DDS type.
    data: HashMap<String, (Name, bool)>,
    streams: HashMap<StreamKey, Arc<StreamOut>>,
    readers: HashMap<ReaderClass, ReaderSlot>,
    meta_name: Name,
    meta_sealer: Sealer,
    internal: mpsc::UnboundedSender<Internal>,
}

/// Runs the export of one topic until the proxy stops (the event channel closes).
pub async fn export(
    router: RouterHandle,
    participant: Participant,
    leg: ExportLeg,
    mut events: mpsc::UnboundedReceiver<PublicationEvent>,
) {
    let meta_name = meta_descriptor(&leg.remote).name(&leg.realm.secret);
    let meta_sealer = match Sealer::new(&leg.realm.secret, meta_name, false, None) {
        Ok(s) => s,
        Err(e) => {
            warn!(topic = %leg.dds_topic, "cannot export: {e}");
            return;
        }
    };
    let mut meta_demand = router.publish(meta_name).await;
    let (internal, mut internal_rx) = mpsc::unbounded_channel();
    let mut x = Exporter {
        leg,
        router,
        participant,
        plan: ExportPlan::default(),
        endpoints: HashMap::new(),
        types: HashMap::new(),
        data: HashMap::new(),
        streams: HashMap::new(),
        readers: HashMap::new(),
        meta_name,
        meta_sealer,
        internal,
    };
    let mut tick = tokio::time::interval(META_PERIOD);
    loop {
        let timeout = x.poll_timeout();
        tokio::select! {
            ev = events.recv() => {
                let Some(ev) = ev else { break };
                x.handle_event(ev);
                let wanted = *meta_demand.borrow();
                x.reconcile(wanted).await;
            }
            Some(msg) = internal_rx.recv() => {
                x.handle_internal(msg);
                let wanted = *meta_demand.borrow();
                x.reconcile(wanted).await;
            }
            r = meta_demand.changed() => {
                if r.is_err() { break; }
                if *meta_demand.borrow() { x.announce().await; }
            }
            _ = tick.tick() => {
                if *meta_demand.borrow() { x.announce().await; }
            }
            _ = sleep_until(timeout) => {
                x.plan.handle_timeout(Instant::now());
                let wanted = *meta_demand.borrow();
                x.reconcile(wanted).await;
            }
        }
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
                self.endpoints.insert(ep.guid, ep);
            }
            PublicationEvent::Down(guid) => {
                self.plan.publication_down(Instant::now(), &guid);
                self.endpoints.remove(&guid);
            }
        }
    }

    fn handle_internal(&mut self, msg: Internal) {
        match msg {
            Internal::Demand(ty, wanted) => {
                if let Some(d) = self.data.get_mut(&ty) {
                    d.1 = wanted;
                }
            }
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

    /// Brings streams, data names, announcements and readers in line with the plan.
    async fn reconcile(&mut self, meta_wanted: bool) {
        let mut changed = false;
        for class in self.plan.readers() {
            self.resolve_keyed(&class);
        }
        // Streams, for the types we know how to read.
        let wanted: HashMap<StreamKey, StreamQos> = self
            .plan
            .streams()
            .into_iter()
            .filter(|(k, _)| self.type_ready(&k.class))
            .collect();
        let before = self.streams.len();
        self.streams.retain(|k, _| wanted.contains_key(k));
        changed |= self.streams.len() != before;
        for (key, qos) in &wanted {
            let stale = self
                .streams
                .get(key)
                .is_some_and(|s| s.announcement.qos != *qos);
            if stale || !self.streams.contains_key(key) {
                if let Some(s) = self.new_stream(key, *qos) {
                    self.streams.insert(key.clone(), Arc::new(s));
                    changed = true;
                }
            }
        }
        // One data name per DDS type.
        let types: std::collections::HashSet<String> = self
            .streams
            .keys()
            .map(|k| k.class.dds_type.clone())
            .collect();
        for gone in self
            .data
            .keys()
            .filter(|t| !types.contains(*t))
            .cloned()
            .collect::<Vec<_>>()
        {
            if let Some((name, _)) = self.data.remove(&gone) {
                self.router.unpublish(name).await;
            }
        }
        for ty in types {
            if !self.data.contains_key(&ty) {
                let name = data_descriptor(&self.leg.remote, &ty).name(&self.leg.realm.secret);
                let demand = self.router.publish(name).await;
                self.data.insert(ty.clone(), (name, *demand.borrow()));
                tokio::spawn(forward_demand(ty, demand, self.internal.clone()));
            }
        }
        // Announce before reading, so importers know a stream before its first sample.
        if changed && meta_wanted {
            self.announce().await;
        }
        self.reconcile_readers();
        self.retry_pending().await;
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
                    let _ = tx.send(Internal::Resolved(ty, r.map(Arc::new)));
                });
            }
            None => {
                let _ = tx.send(Internal::Resolved(
                    ty,
                    Err(DdsError::InvalidArgument(
                        "the publisher announces no XTypes type information".into(),
                    )),
                ));
            }
        }
    }

    fn new_stream(&mut self, key: &StreamKey, qos: StreamQos) -> Option<StreamOut> {
        let class = &key.class;
        let name = data_descriptor(&self.leg.remote, &class.dds_type).name(&self.leg.realm.secret);
        let sealer = match Sealer::new(&self.leg.realm.secret, name, !class.reliable, None) {
            Ok(s) => s.clear_text(!self.leg.encrypt),
            Err(e) => {
                warn!(topic = %self.leg.dds_topic, "cannot seal: {e}");
                return None;
            }
        };
        let xtypes = match self.types.get(&class.dds_type) {
            Some(TypeState::Described(d)) if class.keyed => Some(XTypes {
                type_information: d.type_information().to_vec(),
                type_mapping: d.type_mapping().to_vec(),
            }),
            _ => None,
        };
        info!(topic = %self.leg.dds_topic, "as" = %self.leg.remote, realm = %self.leg.realm.label, ty = %class.dds_type, reliable = qos.reliable, transient_local = qos.transient_local, depth = qos.depth, "exporting");
        Some(StreamOut {
            name,
            announcement: StreamAnnouncement {
                id: key.id(),
                session: sealer.session(),
                dds_type: class.dds_type.clone(),
                keyed: class.keyed,
                qos,
                xtypes,
            },
            sealer: Mutex::new(sealer),
        })
    }

    /// Seals and sends the current announcement.
    async fn announce(&mut self) {
        let mut streams: Vec<StreamAnnouncement> = self
            .streams
            .values()
            .map(|s| s.announcement.clone())
            .collect();
        streams.sort_by_key(|s| s.id);
        let a = TopicAnnouncement {
            exporter: self.leg.exporter.clone(),
            streams,
        };
        let mut buf = Vec::new();
        if self
            .meta_sealer
            .seal(&a.encode(), now_us(), &mut buf)
            .is_ok()
        {
            self.router.send(self.meta_name, Bytes::from(buf)).await;
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
            let wanted = self.data.get(&class.dds_type).is_some_and(|d| d.1);
            let slot = self
                .readers
                .entry(class.clone())
                .or_insert_with(|| ReaderSlot {
                    table: Arc::new(RwLock::new(RouteTable::default())),
                    reader: None,
                    creating: false,
                });
            {
                let mut t = slot.table.write().unwrap_or_else(|p| p.into_inner());
                t.routes = self.plan.routes(&class);
                t.streams = self.streams.clone();
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
                let on_sample = sample_handler(
                    slot.table.clone(),
                    self.router.clone(),
                    self.leg.stats.clone(),
                );
                let (p, q, tx) = (
                    self.participant.clone(),
                    class.reader_qos(),
                    self.internal.clone(),
                );
                // The constructor may deliver a transient-local writer's history on this
                // thread, and the callback may block on back-pressure: off the async runtime.
                tokio::task::spawn_blocking(move || {
                    let made = Reader::new(&p, &topic, &q, on_sample);
                    let _ = tx.send(Internal::ReaderMade(class, made));
                });
            } else if !wanted && slot.reader.take().is_some() {
                info!(topic = %self.leg.dds_topic, "no remote subscriber left: reader closed");
            }
        }
    }

    /// Routes samples that waited for their writer to be known; drops (and counts) those
    /// that waited too long.
    async fn retry_pending(&mut self) {
        let now = Instant::now();
        for slot in self.readers.values() {
            let ready: Vec<(Arc<StreamOut>, Sample)> = {
                let mut t = slot.table.write().unwrap_or_else(|p| p.into_inner());
                let mut ready = Vec::new();
                let mut keep = VecDeque::new();
                while let Some((at, s)) = t.pending.pop_front() {
                    match lookup(&t, &s.writer_guid) {
                        Lookup::Send(st) => ready.push((st, s)),
                        Lookup::Skip => {}
                        Lookup::Wait if now < at + PENDING_WAIT => keep.push_back((at, s)),
                        Lookup::Wait => TopicStats::count(&self.leg.stats.unattributed),
                    }
                }
                t.pending = keep;
                ready
            };
            for (st, s) in ready {
                if let Some(env) = seal(&st, &s, &self.leg.stats) {
                    self.router.send(st.name, env).await;
                }
            }
        }
    }
}

/// Relays a data name's demand changes to the export task.
async fn forward_demand(
    ty: String,
    mut demand: watch::Receiver<bool>,
    tx: mpsc::UnboundedSender<Internal>,
) {
    while demand.changed().await.is_ok() {
        let wanted = *demand.borrow();
        if tx.send(Internal::Demand(ty.clone(), wanted)).is_err() {
            return;
        }
    }
}

fn read_table(t: &RwLock<RouteTable>) -> std::sync::RwLockReadGuard<'_, RouteTable> {
    t.read().unwrap_or_else(|p| p.into_inner())
}

enum Lookup {
    Send(Arc<StreamOut>),
    /// Another reader forwards it.
    Skip,
    /// Not known yet.
    Wait,
}

fn lookup(t: &RouteTable, writer: &Guid) -> Lookup {
    match t.routes.route(writer) {
        Route::Stream(k) => match t.streams.get(&k) {
            Some(s) => Lookup::Send(s.clone()),
            None => Lookup::Wait,
        },
        Route::Elsewhere => Lookup::Skip,
        Route::Unknown => Lookup::Wait,
    }
}

/// The reader callback: routes each sample to its stream, seals it and hands it to the
/// router (on the DDS thread).
fn sample_handler(
    table: Arc<RwLock<RouteTable>>,
    router: RouterHandle,
    stats: Arc<TopicStats>,
) -> impl Fn(Sample) + Send + Sync + 'static {
    move |s: Sample| {
        let found = lookup(&read_table(&table), &s.writer_guid);
        match found {
            Lookup::Send(st) => {
                if let Some(env) = seal(&st, &s, &stats) {
                    router.send_blocking(st.name, env);
                }
            }
            Lookup::Skip => {}
            Lookup::Wait => {
                let mut t = table.write().unwrap_or_else(|p| p.into_inner());
                if t.pending.len() >= MAX_PENDING {
                    t.pending.pop_front();
                    TopicStats::count(&stats.unattributed);
                }
                t.pending.push_back((Instant::now(), s));
            }
        }
    }
}

/// Seals a sample into its stream's next envelope; counts it.
fn seal(st: &StreamOut, s: &Sample, stats: &TopicStats) -> Option<Bytes> {
    let kind = match s.kind {
        SampleKind::Data => PayloadKind::Data,
        SampleKind::Disposed => PayloadKind::Dispose,
        SampleKind::Unregistered => PayloadKind::Unregister,
    };
    let mut out = Vec::new();
    let now = now_us();
    let sealed = st
        .sealer
        .lock()
        .map(|mut sl| sl.seal_kind(kind, &s.cdr, now, &mut out));
    if matches!(sealed, Ok(Ok(()))) {
        // How long DDS took from the publisher's write to this hop.
        if s.source_timestamp_ns > 0 {
            stats
                .age_in
                .record(now.saturating_sub(s.source_timestamp_ns as u64 / 1000));
        }
        TopicStats::count(&stats.samples);
        Some(Bytes::from(out))
    } else {
        TopicStats::count(&stats.failed);
        None
    }
}
