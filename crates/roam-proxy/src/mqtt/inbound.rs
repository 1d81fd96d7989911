//! Every `mqtt2ros` entry: MQTT messages to ROS publications, one task for all entries.
//!
//! Each entry's state (its type, from configuration or from mqtt_client's type messages)
//! is roam-mqtt's [`Inbound`]; this task carries out what it decides: make or re-make the
//! DDS writer when the type is (re)announced, write, publish the latency of stamped
//! messages on `~/latencies/<ros topic>`. A message that cannot be converted is dropped,
//! counted, and said once per topic. A new ROS publisher's first messages wait for a reader
//! to match it ([`super::hold`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use std::time::{SystemTime, UNIX_EPOCH};

use super::convert::{InAction, Inbound};
use roam_dds::{History, Participant, Qos, TopicInfo, Writer};
use roam_edge::{Edge, Publisher, Realm, StreamQos, StreamSpec, TopicRef};
use roam_mqtt::hops::HopStats;
use roam_mqtt::params::{Durability, Mqtt2Ros, Reliability};
use roam_mqtt::wire::{self, data_topic_of};
use roam_mqtt::{MqttClient, Received};
use roam_msg::TypeName;
use tokio::sync::mpsc;
use tracing::{info, warn};

use super::hold::FirstSamples;

/// How often held samples look for a matched reader.
const MATCH_POLL: Duration = Duration::from_millis(10);

/// An entry's figures: MQTT arrival to the DDS write call, and the write call itself
/// (CycloneDDS sends the data within it).
pub type EntryHops = (Arc<HopStats>, Arc<HopStats>);

struct Entry {
    state: Inbound,
    hops: EntryHops,
    /// Where its messages go: the local DDS domain, or a realm topic (`realm:`).
    sink: Sink,
    latency: Option<Writer>,
    failures: u64,
    /// A new DDS writer's first samples, until it matched a reader.
    first: FirstSamples<bytes::Bytes>,
}

enum Sink {
    Dds(Option<Writer>),
    Realm {
        topic: TopicRef,
        edge: Edge,
        publisher: Option<Publisher>,
    },
}

impl Sink {
    /// A publisher of `ros_type` in place of the one before.
    async fn retype(&mut self, participant: &Participant, e: &Mqtt2Ros, ros_type: &str) {
        match self {
            Sink::Dds(w) => {
                drop(w.take());
                *w = make_writer(participant, e, ros_type);
            }
            Sink::Realm {
                topic,
                edge,
                publisher,
            } => {
                drop(publisher.take());
                let Ok(t) = TypeName::parse(ros_type) else {
                    return;
                };
                let mut spec = StreamSpec::new(t.dds());
                spec.qos = StreamQos {
                    reliable: e.reliability != Reliability::BestEffort,
                    transient_local: e.latched || e.durability == Durability::TransientLocal,
                    depth: e.queue_size,
                };
                match edge.publisher(topic, spec).await {
                    Ok(p) => {
                        info!(target: "roam::mqtt", mqtt = %e.mqtt_topic, topic = %e.ros_topic, realm = %topic.realm.label, ty = %ros_type, "bridging MQTT -> realm");
                        *publisher = Some(p);
                    }
                    Err(err) => {
                        warn!(target: "roam::mqtt", topic = %e.ros_topic, "cannot publish in the realm: {err}")
                    }
                }
            }
        }
    }

    fn ready(&self) -> bool {
        match self {
            Sink::Dds(w) => w.is_some(),
            Sink::Realm { publisher, .. } => publisher.is_some(),
        }
    }

    /// Whether a DDS writer has matched a reader (a realm publisher needs none).
    fn matched(&self) -> bool {
        match self {
            Sink::Dds(Some(w)) => w.matched_readers().map(|n| n > 0).unwrap_or(true),
            _ => true,
        }
    }

    async fn publish(&self, e: &Mqtt2Ros, cdr: &[u8]) {
        let r = match self {
            Sink::Dds(Some(w)) => w.write_cdr(cdr).map_err(|e| e.to_string()),
            Sink::Realm {
                publisher: Some(p), ..
            } => p.publish(cdr).await.map_err(|e| e.to_string()),
            _ => Ok(()),
        };
        if let Err(err) = r {
            warn!(target: "roam::mqtt", topic = %e.ros_topic, "publishing failed: {err}");
        }
    }
}

/// Where `realm:` entries publish: the proxy's edge and its realms.
pub type Realms = Option<(Edge, std::collections::BTreeMap<String, Arc<Realm>>)>;

pub async fn run(
    entries: Vec<(Inbound, EntryHops)>,
    mut inbox: mpsc::Receiver<Received>,
    client: MqttClient,
    participant: Participant,
    node: String,
    realms: Realms,
) {
    let mut by_topic: HashMap<String, usize> = HashMap::new();
    let mut all: Vec<Entry> = Vec::new();
    for (state, hops) in entries {
        let sink = match (&state.entry.realm, &realms) {
            (Some(key), Some((edge, realms))) => match realms.get(key) {
                Some(r) => Sink::Realm {
                    topic: TopicRef::new(r.clone(), state.entry.ros_topic.clone()),
                    edge: edge.clone(),
                    publisher: None,
                },
                None => continue,
            },
            _ => Sink::Dds(None),
        };
        let mut entry = Entry {
            state,
            hops,
            sink,
            latency: None,
            failures: 0,
            first: FirstSamples::default(),
        };
        // A configured type publishes from the start (the ROS graph shows the topic).
        if let Some(t) = entry.state.ros_type().map(str::to_string) {
            entry
                .sink
                .retype(&participant, &entry.state.entry, &t)
                .await;
            entry.first.start(Instant::now());
        }
        by_topic.insert(entry.state.entry.mqtt_topic.clone(), all.len());
        all.push(entry);
    }
    loop {
        let m = if all.iter().any(|e| e.first.holding()) {
            tokio::select! {
                m = inbox.recv() => m,
                _ = tokio::time::sleep(MATCH_POLL) => {
                    release_held(&mut all).await;
                    continue;
                }
            }
        } else {
            inbox.recv().await
        };
        let Some(m) = m else { break };
        let key = data_topic_of(&m.topic).unwrap_or(&m.topic);
        let Some(&i) = by_topic.get(key) else {
            continue;
        };
        let e = &mut all[i];
        let now_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        let actions = match e.state.on_message(&m.topic, &m.payload, now_ns) {
            Ok(a) => a,
            Err(err) => {
                if e.failures == 0 {
                    warn!(target: "roam::mqtt", mqtt = %m.topic, ros = %e.state.entry.ros_topic, "dropping a message from MQTT: {err} (said once for this topic; counted)");
                }
                e.failures += 1;
                continue;
            }
        };
        for a in actions {
            match a {
                InAction::Subscribe(t) => client.subscribe(&t, e.state.entry.mqtt_qos),
                InAction::Retype(t) => {
                    if e.sink.ready() {
                        info!(target: "roam::mqtt", topic = %e.state.entry.ros_topic, to = %t, "the MQTT topic's type changed: new ROS publisher");
                    }
                    e.sink.retype(&participant, &e.state.entry, &t).await;
                    e.first.start(Instant::now());
                }
                InAction::Publish(cdr) => {
                    let write = Instant::now();
                    e.hops.0.record(write - m.at);
                    for s in e.first.offer(cdr, write, e.sink.matched()) {
                        e.sink.publish(&e.state.entry, &s).await;
                    }
                    e.hops.1.record(write.elapsed());
                }
                InAction::Latency(s) => {
                    if e.latency.is_none() {
                        e.latency = latency_writer(&participant, &node, &e.state.entry.ros_topic);
                    }
                    if let Some(w) = &e.latency {
                        let _ = w.write_cdr(&wire::encode_float64(s));
                    }
                }
            }
        }
        // Other entries' holds end on time even while this one's messages keep coming.
        if all.iter().any(|e| e.first.holding()) {
            release_held(&mut all).await;
        }
    }
}

/// Writes what entries held for their new writers, where a reader matched or the hold is over.
async fn release_held(all: &mut [Entry]) {
    let now = Instant::now();
    for e in all.iter_mut().filter(|e| e.first.holding()) {
        for s in e.first.poll(now, e.sink.matched()) {
            e.sink.publish(&e.state.entry, &s).await;
        }
    }
}

/// The ROS publisher of an entry, for `ros_type` (`pkg/msg/Type`).
fn make_writer(participant: &Participant, e: &Mqtt2Ros, ros_type: &str) -> Option<Writer> {
    let dds_type = match TypeName::parse(ros_type) {
        Ok(t) => t.dds(),
        Err(err) => {
            warn!(target: "roam::mqtt", topic = %e.ros_topic, "{ros_type}: {err}");
            return None;
        }
    };
    let qos = Qos {
        reliable: e.reliability != Reliability::BestEffort,
        transient_local: e.latched || e.durability == Durability::TransientLocal,
        history: History::KeepLast(e.queue_size),
    };
    let topic = TopicInfo::keyless(roam_edge::ros_names::topic_to_dds(&e.ros_topic), dds_type);
    match Writer::new(participant, &topic, &qos) {
        Ok(w) => {
            info!(target: "roam::mqtt", mqtt = %e.mqtt_topic, topic = %e.ros_topic, ty = %ros_type, "bridging MQTT -> ROS");
            Some(w)
        }
        Err(err) => {
            warn!(target: "roam::mqtt", topic = %e.ros_topic, "cannot publish the ROS topic: {err}");
            None
        }
    }
}

/// `std_msgs/msg/Float64` on `<node>/latencies/<ros topic>`, keep last 1 as mqtt_client.
fn latency_writer(participant: &Participant, node: &str, ros_topic: &str) -> Option<Writer> {
    let name = wire::latency_topic(node, ros_topic);
    let topic = TopicInfo::keyless(
        roam_edge::ros_names::topic_to_dds(&name),
        "std_msgs::msg::dds_::Float64_",
    );
    Writer::new(
        participant,
        &topic,
        &Qos {
            history: History::KeepLast(1),
            ..Qos::default()
        },
    )
    .map_err(|err| warn!(target: "roam::mqtt", topic = %name, "cannot publish latencies: {err}"))
    .ok()
}
