//! One `ros2mqtt` entry: a DDS reader on the ROS topic, each sample to the MQTT topic.
//!
//! The reader is made when a publisher of the topic is discovered: with the publisher's
//! type (unless `ros_type` fixes it) and, for `auto`, its reliability and durability, as
//! mqtt_client does. A publisher of another type re-makes it (the type changed at run time).
//! The retained type message goes out with the first message of every type and of every
//! broker session (mqtt_client sends it before every message; receivers need it once).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use roam_dds::{Endpoint, History, Participant, Qos, Reader, TopicInfo};
use std::collections::HashMap;

use super::convert::{self, full_type_name};
use roam_edge::{Edge, Event, PayloadKind, Realm, StreamId, SubscriberOptions, TopicRef};
use roam_mqtt::hops::HopStats;
use roam_mqtt::params::{Durability, Reliability, Ros2Mqtt};
use roam_mqtt::MqttClient;
use roam_msg::{MessageType, TypeName};
use tokio::sync::mpsc;
use tracing::{info, warn};

/// Samples waiting for the MQTT connection; beyond this, the newest are dropped (counted).
const BACKLOG: usize = 256;

struct Current {
    _reader: Reader,
    /// `pkg/msg/Type`.
    ros_type: String,
}

/// Sends one entry's messages: converts each, and publishes the type message when the type
/// or the broker session is new.
pub struct Sender {
    e: Ros2Mqtt,
    hops: Arc<HopStats>,
    json: Option<Arc<MessageType>>,
    client: MqttClient,
    /// The type last announced, and in which session.
    type_sent: Option<(String, u64)>,
    failures: u64,
}

impl Sender {
    pub fn new(
        e: Ros2Mqtt,
        json: Option<Arc<MessageType>>,
        client: MqttClient,
        hops: Arc<HopStats>,
    ) -> Self {
        Self {
            e,
            hops,
            json,
            client,
            type_sent: None,
            failures: 0,
        }
    }

    /// One ROS message of `ros_type` (`pkg/msg/Type`) that arrived at `at`.
    pub fn send(&mut self, ros_type: &str, cdr: Vec<u8>, at: Instant) {
        let e = &self.e;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        let payload = match convert::outbound(e, ros_type, cdr, self.json.as_deref(), now) {
            Ok(p) => p,
            Err(err) => {
                if self.failures == 0 {
                    warn!(target: "roam::mqtt", topic = %e.ros_topic, ty = %ros_type, "cannot send to MQTT: {err} (said once for this topic; counted)");
                }
                self.failures += 1;
                return;
            }
        };
        let session = self.client.stats().connects.load(Ordering::Relaxed);
        let announced = self
            .type_sent
            .as_ref()
            .is_some_and(|(t, s)| t == ros_type && *s == session);
        if !announced {
            if let Some((topic, msg)) = convert::type_message(e, ros_type) {
                self.client.publish(&topic, msg, e.mqtt_qos, true);
            }
            self.type_sent = Some((ros_type.to_string(), session));
        }
        self.client
            .publish(&e.mqtt_topic, payload, e.mqtt_qos, e.retained);
        self.hops.record(at.elapsed());
    }
}

/// An entry on the local DDS domain.
pub async fn run(
    e: Ros2Mqtt,
    json: Option<Arc<MessageType>>,
    mut publishers: mpsc::UnboundedReceiver<Endpoint>,
    client: MqttClient,
    participant: Participant,
    hops: Arc<HopStats>,
) {
    let dds_topic = roam_edge::ros_names::topic_to_dds(&e.ros_topic);
    let fixed = match e.ros_type.as_deref().map(full_type_name).transpose() {
        Ok(t) => t,
        Err(err) => {
            warn!(target: "roam::mqtt", topic = %e.ros_topic, "{err}");
            return;
        }
    };
    let (tx, mut samples) = mpsc::channel::<(Instant, Vec<u8>)>(BACKLOG);
    let dropped = Arc::new(AtomicU64::new(0));
    let mut current: Option<Current> = None;
    let mut out = Sender::new(e.clone(), json, client, hops);
    // A fixed type with fixed QoS needs no publisher to start reading.
    let auto = e.reliability == Reliability::Auto || e.durability == Durability::Auto;
    if let (Some(t), false) = (&fixed, auto) {
        current = make_reader(&e, &participant, &dds_topic, t, None, &tx, &dropped);
    }
    loop {
        tokio::select! {
            ep = publishers.recv() => {
                let Some(ep) = ep else { return };
                if !ep.alive {
                    continue;
                }
                let Ok(announced) = full_type_name(&ep.type_name) else { continue };
                let ros_type = fixed.clone().unwrap_or(announced);
                if current.as_ref().is_some_and(|c| c.ros_type == ros_type) {
                    continue;
                }
                if let Some(c) = &current {
                    info!(target: "roam::mqtt", topic = %e.ros_topic, from = %c.ros_type, to = %ros_type, "the ROS topic's type changed");
                }
                drop(current.take());
                current = make_reader(&e, &participant, &dds_topic, &ros_type, Some(&ep.qos), &tx, &dropped);
            }
            cdr = samples.recv() => {
                let Some((at, cdr)) = cdr else { return };
                if let Some(c) = &current {
                    out.send(&c.ros_type, cdr, at);
                }
            }
        }
    }
}

/// A reader of `ros_type` on the topic, with the entry's QoS (`auto`: the publisher's).
fn make_reader(
    e: &Ros2Mqtt,
    participant: &Participant,
    dds_topic: &str,
    ros_type: &str,
    publisher: Option<&Qos>,
    tx: &mpsc::Sender<(Instant, Vec<u8>)>,
    dropped: &Arc<AtomicU64>,
) -> Option<Current> {
    let dds_type = match TypeName::parse(ros_type) {
        Ok(t) => t.dds(),
        Err(err) => {
            warn!(target: "roam::mqtt", topic = %e.ros_topic, "{ros_type}: {err}");
            return None;
        }
    };
    let reliable = match e.reliability {
        Reliability::Auto => publisher.is_none_or(|q| q.reliable),
        Reliability::BestEffort => false,
        Reliability::Reliable | Reliability::SystemDefault => true,
    };
    let transient_local = match e.durability {
        Durability::Auto => publisher.is_some_and(|q| q.transient_local),
        Durability::TransientLocal => true,
        Durability::Volatile | Durability::SystemDefault => false,
    };
    let qos = Qos {
        reliable,
        transient_local,
        history: History::KeepLast(e.queue_size),
    };
    let topic = TopicInfo::keyless(dds_topic, &dds_type);
    let (tx, dropped2, name) = (tx.clone(), dropped.clone(), e.ros_topic.clone());
    let reader = Reader::new(participant, &topic, &qos, move |s| {
        if s.kind != roam_dds::SampleKind::Data {
            return;
        }
        if tx.try_send((Instant::now(), s.cdr.to_vec())).is_err()
            && dropped2.fetch_add(1, Ordering::Relaxed) == 0
        {
            warn!(target: "roam::mqtt", topic = %name, "the MQTT connection falls behind: dropping the newest samples (said once; counted)");
        }
    });
    match reader {
        Ok(r) => {
            info!(target: "roam::mqtt", topic = %e.ros_topic, ty = %ros_type, mqtt = %e.mqtt_topic, reliable, transient_local, "bridging ROS -> MQTT");
            Some(Current {
                _reader: r,
                ros_type: ros_type.to_string(),
            })
        }
        Err(err) => {
            warn!(target: "roam::mqtt", topic = %e.ros_topic, "cannot read the ROS topic: {err}");
            None
        }
    }
}

/// An entry naming a realm topic (`realm:`): its messages straight from the realm, no DDS.
pub async fn run_realm(
    e: Ros2Mqtt,
    json: Option<Arc<MessageType>>,
    client: MqttClient,
    edge: Edge,
    realm: Arc<Realm>,
    hops: Arc<HopStats>,
) {
    let fixed = e.ros_type.as_deref().and_then(|t| full_type_name(t).ok());
    let topic = TopicRef::new(realm, e.ros_topic.clone());
    let options = SubscriberOptions {
        hold_unannounced: true,
        ..SubscriberOptions::default()
    };
    let mut sub = edge.subscriber(&topic, options).await;
    info!(target: "roam::mqtt", topic = %e.ros_topic, realm = %topic.realm.label, mqtt = %e.mqtt_topic, "bridging realm -> MQTT");
    let mut out = Sender::new(e, json, client, hops);
    let mut cdr = Vec::new();
    // Each announced stream's type (`pkg/msg/Type`).
    let mut types: HashMap<StreamId, String> = HashMap::new();
    while let Some(ev) = sub.recv(&mut cdr).await {
        let r = match ev {
            Event::Message(r) => r,
            Event::Streams => {
                types = sub
                    .streams()
                    .into_iter()
                    .filter_map(|(id, s)| full_type_name(&s.dds_type).ok().map(|t| (id, t)))
                    .collect();
                continue;
            }
            Event::Definitions => continue,
        };
        if r.kind != PayloadKind::Data {
            continue;
        }
        let ty = fixed
            .as_ref()
            .or_else(|| r.stream.and_then(|id| types.get(&id)));
        if let Some(ty) = ty {
            out.send(ty, std::mem::take(&mut cdr), Instant::now());
        }
    }
}
