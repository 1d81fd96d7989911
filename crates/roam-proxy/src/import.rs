//! Importing one realm topic into the local DDS domain, over the edge layer.
//!
//! An edge [`Subscriber`] follows the topic's announcements; every announced stream gets a
//! local DDS writer with the stream's type and QoS, and every message is written with the
//! writer of its stream (data, or an instance's disposal or unregistration). The subscriber
//! holds a new stream's first messages until its announcement arrives, so none is written
//! with the wrong QoS. The proxy's rules ([`super::rules`]) judge every data message before
//! it is written (PEER: the member that signed it, in signed mode; else the member that
//! announced its stream), and a Copy rule writes it also to another local topic, with a
//! writer of the same type and QoS made when first needed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use roam_dds::{History, Participant, Qos, TopicInfo, TypeDescriptor, Writer, WriterOptions};
use roam_edge::definitions::DefinitionSource;
use roam_edge::stats::TopicStats;
use roam_edge::{
    Description, Edge, Event, PayloadKind, Realm, Received, StreamId, StreamInfo, Subscriber,
    SubscriberOptions, TopicRef,
};
use roam_msg::{MessageType, TypeRegistry};
use roam_net::latency::now_us;
use tracing::{info, warn};

use super::rules::{ros_type, ProxyRules};
use super::user_data::import_writer;
use super::write::{write_import, IMPORT_BATCH};

/// What one import brings in: a realm topic, and its local DDS topic.
pub struct ImportLeg {
    pub dds_topic: String,
    pub remote: String,
    pub realm: Arc<Realm>,
    /// Where the proxy finds interface definitions: those it has for the topic's types are
    /// announced too (for members without them).
    pub definitions: Arc<DefinitionSource>,
    /// The proxy's rules.
    pub rules: Arc<ProxyRules>,
    /// Which data messages this leg writes (all when `None`): a service's requests only while
    /// a server in rmw_cyclonedds's convention is here, its replies only for clients that
    /// are not served by [`super::fast_services`].
    pub admit: Option<Admit>,
    /// Whether this network's nodes expect type hashes in USER_DATA (every distribution
    /// since Iron; not Humble): the writers then carry the exporter's, or one computed from
    /// the announced definition for a topic whose publishers had none.
    pub type_hashes: bool,
}

/// Whether an import writes a data message (its payload).
pub type Admit = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// What the rules see of the topic: its local ROS name, and per DDS type the ROS type name
/// and the resolved definition (this machine's, else the announced one).
/// A type's definition: resolved, and its ros2msg text.
type Known = (Arc<MessageType>, Arc<str>);

struct Judge {
    topic: String,
    /// Per DDS type: its ROS name, and its definition (resolved, and its ros2msg text).
    types: HashMap<String, (String, Option<Known>)>,
}

/// Runs the import of one topic until the edge goes.
pub async fn import(edge: Edge, participant: Participant, leg: ImportLeg) {
    let topic = TopicRef::new(leg.realm.clone(), leg.remote.clone());
    let options = SubscriberOptions {
        hold_unannounced: true,
        ..SubscriberOptions::default()
    };
    let mut sub = edge.subscriber(&topic, options).await;
    let mut writers: HashMap<StreamId, (StreamInfo, Arc<Writer>)> = HashMap::new();
    let mut copies = Copies::default();
    let mut plain = Vec::new();
    let mut dirty: HashSet<StreamId> = HashSet::new();
    let mut described: HashMap<String, Option<Description>> = HashMap::new();
    let mut judge = Judge {
        topic: roam_edge::ros_names::ros_endpoint(&leg.dds_topic)
            .map(|e| match e {
                roam_edge::ros_names::RosEndpoint::Topic(n)
                | roam_edge::ros_names::RosEndpoint::ServiceRequest(n)
                | roam_edge::ros_names::RosEndpoint::ServiceReply(n) => n,
            })
            .unwrap_or_else(|| leg.dds_topic.clone()),
        types: HashMap::new(),
    };
    while let Some(ev) = sub.recv(&mut plain).await {
        match ev {
            Event::Streams => {
                reconcile(&sub, &participant, &leg, &mut writers);
                copies.retain(&writers);
                describe(&edge, &topic, &sub, &leg, &mut described).await;
                judge.learn(&sub, &leg).await;
            }
            Event::Definitions => judge.learn(&sub, &leg).await,
            Event::Message(first) => {
                // What else arrived with it goes out as one batch (samples share packets),
                // flushed before waiting again, so a lone message is never held back.
                let mut next = Some(first);
                let mut written = 0;
                while let Some(r) = next.take() {
                    let admitted = r.kind != PayloadKind::Data
                        || leg.admit.as_ref().is_none_or(|admit| admit(&plain));
                    let verdict = match admitted {
                        true => judge.verdict(&sub, &leg, &writers, &r, &plain),
                        false => None,
                    };
                    if let Some(targets) = verdict {
                        plain = write(&sub, &writers, &r, plain, &leg.dds_topic, &mut dirty).await;
                        for target in targets {
                            plain = copies
                                .write(&participant, &writers, &r, &target, plain)
                                .await;
                        }
                    }
                    written += 1;
                    if written < IMPORT_BATCH {
                        next = sub.try_recv(&mut plain);
                    }
                }
                for id in dirty.drain() {
                    if let Some((_, w)) = writers.get(&id) {
                        if let Err(e) = w.flush() {
                            warn!(topic = %leg.dds_topic, "DDS flush failed: {e}");
                        }
                    }
                }
            }
        }
    }
}

impl Judge {
    /// Resolves the definitions of the topic's types for FIELD and MESSAGE (once each that
    /// resolves): this machine's, else the one announced with the topic.
    async fn learn(&mut self, sub: &Subscriber, leg: &ImportLeg) {
        let types: Vec<String> = sub.streams().into_values().map(|s| s.dds_type).collect();
        for ty in types {
            if matches!(self.types.get(&ty), Some((_, Some(_)))) {
                continue;
            }
            let source = leg.definitions.clone();
            let name = ty.clone();
            let local = tokio::task::spawn_blocking(move || source.lookup(&name)).await;
            let schema = match local {
                Ok(Ok(d)) => Some((Arc::new(d.schema().clone()), Arc::from(d.ros2msg()))),
                _ => sub.definition(&ty).and_then(|text| {
                    let root = ros_type(&ty);
                    let mut reg = TypeRegistry::new();
                    reg.add_ros2msg(&root, text).ok()?;
                    let resolved = reg.resolve(&root).ok().map(Arc::new)?;
                    Some((resolved, Arc::from(text)))
                }),
            };
            self.types.insert(ty.clone(), (ros_type(&ty), schema));
        }
    }

    /// Whether the rules let a received message through (lifecycle changes always pass),
    /// with the local topics a Copy rule also writes it to; a drop is counted on the topic.
    fn verdict(
        &self,
        sub: &Subscriber,
        leg: &ImportLeg,
        writers: &HashMap<StreamId, (StreamInfo, Arc<Writer>)>,
        r: &Received,
        cdr: &[u8],
    ) -> Option<Vec<String>> {
        if r.kind != PayloadKind::Data || !leg.rules.is_active() {
            return Some(Vec::new());
        }
        let Some((info, _)) = r.stream.and_then(|id| writers.get(&id)) else {
            return Some(Vec::new());
        };
        let (ty, schema, text) = match self.types.get(&info.dds_type) {
            Some((ty, Some((s, t)))) => (ty.as_str(), Some(&**s), Some(&**t)),
            Some((ty, None)) => (ty.as_str(), None, None),
            None => (info.dds_type.as_str(), None, None),
        };
        let m = roam_rules::Message {
            topic: &self.topic,
            type_name: ty,
            node: None,
            realm: &leg.realm.label,
            // In signed mode, the member whose key signed this envelope: verified, where
            // the announcer's name is only what the member announcing the stream says.
            peer: Some(r.signer.as_deref().unwrap_or(&info.announcer)),
            size: cdr.len(),
        };
        let v = leg.rules.evaluate(&m, schema, text, cdr, r.source_time_ns);
        if !v.passes() {
            TopicStats::count(&sub.stats().ruled);
            return None;
        }
        Some(v.copies)
    }
}

/// The local writers of Copy rules' targets: per target topic and stream, one with the
/// stream's type and QoS, made when a message first needs it.
#[derive(Default)]
struct Copies {
    writers: HashMap<(String, StreamId), Option<Arc<Writer>>>,
}

impl Copies {
    /// Forgets the writers of streams that are gone (or changed).
    fn retain(&mut self, streams: &HashMap<StreamId, (StreamInfo, Arc<Writer>)>) {
        self.writers.retain(|(_, id), _| streams.contains_key(id));
    }

    /// Writes `plain` (a message of `r`'s stream) to the local topic `target` (a ROS name);
    /// hands the buffer back for reuse. A writer that cannot be made is said once.
    async fn write(
        &mut self,
        participant: &Participant,
        streams: &HashMap<StreamId, (StreamInfo, Arc<Writer>)>,
        r: &Received,
        target: &str,
        plain: Vec<u8>,
    ) -> Vec<u8> {
        let Some((id, (info, _))) = r.stream.and_then(|id| streams.get(&id).map(|s| (id, s)))
        else {
            return plain;
        };
        let dds_topic = roam_edge::ros_names::topic_to_dds(target);
        let user_data = import_writer(info.type_hash.as_deref());
        let w = self
            .writers
            .entry((target.to_string(), id))
            .or_insert_with(|| match new_writer(participant, &dds_topic, info, &user_data) {
                Ok(w) => {
                    info!(topic = %dds_topic, ty = %info.dds_type, "copying an import here (a Copy rule)");
                    Some(Arc::new(w))
                }
                Err(e) => {
                    warn!(topic = %dds_topic, "cannot copy an import here: {e}");
                    None
                }
            });
        match w {
            Some(w) => {
                let (plain, _) = write_import(w, plain, r.source_time_ns, &dds_topic).await;
                if let Err(e) = w.flush() {
                    warn!(topic = %dds_topic, "DDS flush failed: {e}");
                }
                plain
            }
            None => plain,
        }
    }
}

/// Announces the definitions this machine has for the topic's announced types (once each).
async fn describe(
    edge: &Edge,
    topic: &TopicRef,
    sub: &Subscriber,
    leg: &ImportLeg,
    described: &mut HashMap<String, Option<Description>>,
) {
    let types: Vec<String> = sub.streams().into_values().map(|s| s.dds_type).collect();
    for ty in types {
        if described.contains_key(&ty) {
            continue;
        }
        let source = leg.definitions.clone();
        let name = ty.clone();
        let found = tokio::task::spawn_blocking(move || source.lookup(&name)).await;
        let d = match found {
            Ok(Ok(def)) => Some(edge.describe(topic, &ty, def.ros2msg().to_string())),
            _ => None,
        };
        described.insert(ty, d);
    }
}

/// One writer per announced stream: new streams get theirs, gone ones lose theirs.
fn reconcile(
    sub: &Subscriber,
    participant: &Participant,
    leg: &ImportLeg,
    writers: &mut HashMap<StreamId, (StreamInfo, Arc<Writer>)>,
) {
    let streams: BTreeMap<StreamId, StreamInfo> = sub.streams();
    writers.retain(|id, (info, _)| streams.get(id) == Some(info));
    for (id, info) in streams {
        if writers.contains_key(&id) {
            continue;
        }
        let hash = leg
            .type_hashes
            .then(|| type_hash(sub, leg, &info))
            .flatten();
        match new_writer(
            participant,
            &leg.dds_topic,
            &info,
            &import_writer(hash.as_deref()),
        ) {
            Ok(w) => {
                info!(topic = %leg.dds_topic, ty = %info.dds_type, reliable = info.qos.reliable, transient_local = info.qos.transient_local, depth = info.qos.depth, from = %info.announcer, "remote topic announced: writing locally");
                writers.insert(id, (info, Arc::new(w)));
            }
            Err(e) => warn!(topic = %leg.dds_topic, "cannot create a DDS writer: {e}"),
        }
    }
}

/// The type hash an import's writer carries: its publishers' (announced), else, for a topic
/// (a service's endpoints carry the service's hash, not their message's), the hash of the
/// definition announced with it.
fn type_hash(sub: &Subscriber, leg: &ImportLeg, info: &StreamInfo) -> Option<String> {
    if info.type_hash.is_some() || !leg.dds_topic.starts_with("rt/") {
        return info.type_hash.clone();
    }
    let text = sub.definition(&info.dds_type)?;
    let root = ros_type(&info.dds_type);
    let mut reg = TypeRegistry::new();
    reg.add_ros2msg(&root, text).ok()?;
    roam_msg::type_hash::rihs01(&reg, &root).ok()
}

fn new_writer(
    participant: &Participant,
    dds_topic: &str,
    info: &StreamInfo,
    user_data: &[u8],
) -> Result<Writer, roam_dds::DdsError> {
    let topic = match (&info.xtypes, info.keyed) {
        (Some(x), true) => match TypeDescriptor::from_xtypes(
            participant,
            &info.dds_type,
            &x.type_information,
            &x.type_mapping,
        ) {
            Ok(d) => TopicInfo::described(dds_topic, Arc::new(d)),
            Err(e) => {
                warn!(topic = %dds_topic, "the announced keyed type is unusable ({e}): writing it as a blob, history is not kept per instance");
                TopicInfo::keyed_blob(dds_topic, &info.dds_type)
            }
        },
        (None, true) => TopicInfo::keyed_blob(dds_topic, &info.dds_type),
        (_, false) => TopicInfo::keyless(dds_topic, &info.dds_type),
    };
    let qos = Qos {
        reliable: info.qos.reliable,
        transient_local: info.qos.transient_local,
        history: match info.qos.depth {
            0 => History::KeepAll,
            n => History::KeepLast(n),
        },
    };
    let options = WriterOptions {
        user_data,
        batching: true,
        non_blocking: true,
        // The publisher's own disposals arrive as such; an unregister stays one.
        explicit_dispose: true,
        on_readers: Some(say_readers),
    };
    Writer::with_options(participant, &topic, &qos, options)
}

/// Says how many local readers an import's writer reaches, each time that changes: a
/// volatile topic's messages go only to readers matched when they are written, so this is
/// where an operator (or a test) sees that a subscriber here will get what arrives.
fn say_readers(dds_topic: &str, readers: u32) {
    info!(topic = %dds_topic, "local readers of an import: {readers}");
}

/// Writes one message with its stream's writer; hands the buffer back for reuse.
async fn write(
    sub: &Subscriber,
    writers: &HashMap<StreamId, (StreamInfo, Arc<Writer>)>,
    r: &Received,
    plain: Vec<u8>,
    local: &str,
    dirty: &mut HashSet<StreamId>,
) -> Vec<u8> {
    let stats = sub.stats();
    let Some((id, (_, w))) = r.stream.and_then(|id| writers.get(&id).map(|w| (id, w))) else {
        // A stream whose writer could not be made (said when it failed).
        TopicStats::count(&stats.failed);
        return plain;
    };
    let (plain, ok) = match r.kind {
        PayloadKind::Data => write_import(w, plain, r.source_time_ns, local).await,
        PayloadKind::Dispose | PayloadKind::Unregister => {
            let done = if r.kind == PayloadKind::Dispose {
                w.dispose_cdr_at(&plain, r.source_time_ns)
            } else {
                w.unregister_cdr_at(&plain, r.source_time_ns)
            };
            if let Err(e) = &done {
                warn!(topic = %local, "DDS instance lifecycle write failed: {e}");
            }
            (plain, done.is_ok())
        }
    };
    if ok {
        stats
            .age_out
            .record(now_us().saturating_sub(r.header.send_time_us));
        stats.carried(plain.len());
        dirty.insert(id);
    } else {
        TopicStats::count(&stats.failed);
    }
    plain
}
