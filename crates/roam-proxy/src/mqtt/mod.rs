//! The MQTT bridge: mqtt_client's behaviour on a DDS domain, in `roam proxy` (section
//! `mqtt:`) and standalone (`roam mqtt`). docs/mqtt.md is the user's view.
//!
//! One broker connection ([`roam_mqtt::MqttClient`]) per bridge; one task per `ros2mqtt`
//! entry ([`outbound`]) fed by a DDS reader made when the topic's publisher is discovered
//! (its type, and its QoS for `auto`); one task for every `mqtt2ros` entry ([`inbound`]),
//! which owns their DDS writers. What a message becomes is decided in roam-mqtt's pure code.

pub mod convert;
pub mod hold;
mod inbound;
mod outbound;

use std::collections::HashMap;
use std::sync::Arc;

use roam_dds::{Discovery, DiscoveryEvent, Participant};
use roam_edge::definitions::DefinitionSource;
use roam_mqtt::hops::HopStats;
use roam_mqtt::MqttClient;
use roam_msg::MessageType;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use crate::error::BridgeError;

pub use roam_config::mqtt::MqttSection;

/// How many received MQTT messages wait for the ROS side before the connection slows down.
const INBOX: usize = 1024;

/// What a bridge runs on.
pub struct Context {
    pub participant: Participant,
    /// Where `json: true` entries find their type's definition.
    pub definitions: Arc<DefinitionSource>,
    /// The edge and realms `realm:` entries use (a proxy's); `None` standalone.
    pub realms: inbound::Realms,
}

/// A running bridge; [`Bridge::stop`] ends it.
pub struct Bridge {
    client: MqttClient,
    /// Time inside the bridge per entry: (direction, topic, figures).
    hops: Vec<(&'static str, String, Arc<HopStats>)>,
    tasks: Vec<JoinHandle<()>>,
    _discovery: Option<Discovery>,
}

impl Bridge {
    /// Connects to the broker (in the background: a broker that is down is retried) and
    /// starts every entry. Fails only on what the configuration names and cannot be had: a
    /// TLS file, or the definition of a JSON entry's type.
    pub async fn start(section: MqttSection, ctx: Context) -> Result<Bridge, BridgeError> {
        let MqttSection { params, node } = section;
        for w in &params.warnings {
            warn!(target: "roam::mqtt", "{w}");
        }
        let realm_of = |key: &Option<String>,
                        at: &str|
         -> Result<Option<Arc<roam_edge::Realm>>, BridgeError> {
            let Some(key) = key else { return Ok(None) };
            let (at, key) = (at.to_owned(), key.clone());
            match &ctx.realms {
                Some((_, realms)) => realms
                    .get(&key)
                    .cloned()
                    .map(Some)
                    .ok_or(BridgeError::UnknownRealm { at, key }),
                None => Err(BridgeError::RealmStandalone { at, key }),
            }
        };
        for e in &params.ros2mqtt {
            realm_of(&e.realm, &format!("bridge.ros2mqtt.{}", e.ros_topic))?;
        }
        for e in &params.mqtt2ros {
            realm_of(&e.realm, &format!("bridge.mqtt2ros.{}", e.mqtt_topic))?;
        }
        let default_id = format!(
            "roam_{}_{}",
            node.trim_start_matches('/'),
            std::process::id()
        );
        let (client, inbox) = MqttClient::start(&params, &default_id, INBOX)?;
        info!(
            target: "roam::mqtt",
            broker = %format!("{}:{}", params.broker.host, params.broker.port),
            tls = params.broker.tls.is_some(),
            ros2mqtt = params.ros2mqtt.len(),
            mqtt2ros = params.mqtt2ros.len(),
            "MQTT bridge starting"
        );
        let mut tasks = Vec::new();
        let mut hops = Vec::new();

        let mut entries = Vec::new();
        for e in &params.mqtt2ros {
            let json = json_type(&ctx, e.json, e.ros_type.as_deref()).await?;
            let inb =
                convert::Inbound::new(e.clone(), json).map_err(|source| BridgeError::Entry {
                    topic: e.mqtt_topic.clone(),
                    source,
                })?;
            for t in inb.subscriptions() {
                client.subscribe(&t, e.mqtt_qos);
            }
            let (h, w) = (Arc::default(), Arc::default());
            hops.push(("mqtt2ros", e.mqtt_topic.clone(), Arc::clone(&h)));
            hops.push(("dds_write", e.mqtt_topic.clone(), Arc::clone(&w)));
            entries.push((inb, (h, w)));
        }
        if !entries.is_empty() {
            tasks.push(tokio::spawn(inbound::run(
                entries,
                inbox,
                client.clone(),
                ctx.participant.clone(),
                node.clone(),
                ctx.realms.clone(),
            )));
        }

        // Discovery tells each ros2mqtt entry about its topic's publishers.
        let mut by_topic: HashMap<String, mpsc::UnboundedSender<roam_dds::Endpoint>> =
            HashMap::new();
        for e in &params.ros2mqtt {
            let json = json_type(&ctx, e.json, e.ros_type.as_deref()).await?;
            let h = Arc::new(HopStats::default());
            hops.push(("ros2mqtt", e.ros_topic.clone(), h.clone()));
            if let (Some(realm), Some((edge, _))) = (realm_of(&e.realm, &e.ros_topic)?, &ctx.realms)
            {
                tasks.push(tokio::spawn(outbound::run_realm(
                    e.clone(),
                    json,
                    client.clone(),
                    edge.clone(),
                    realm,
                    h,
                )));
                continue;
            }
            let (tx, rx) = mpsc::unbounded_channel();
            by_topic.insert(roam_edge::ros_names::topic_to_dds(&e.ros_topic), tx);
            tasks.push(tokio::spawn(outbound::run(
                e.clone(),
                json,
                rx,
                client.clone(),
                ctx.participant.clone(),
                h,
            )));
        }
        let discovery = if by_topic.is_empty() {
            None
        } else {
            let me = ctx.participant.clone();
            Some(
                Discovery::new(&ctx.participant, move |ev| {
                    let DiscoveryEvent::Publication(ep) = ev else {
                        return;
                    };
                    if me.owns(&ep) {
                        return;
                    }
                    if let Some(tx) = by_topic.get(&ep.topic_name) {
                        let _ = tx.send(ep);
                    }
                })
                .map_err(BridgeError::Discovery)?,
            )
        };
        Ok(Bridge {
            client,
            hops,
            tasks,
            _discovery: discovery,
        })
    }

    /// The time messages spent inside the bridge, per entry, as JSON:
    /// `{"ros2mqtt": {topic: figures}, "mqtt2ros": {..}, "dds_write": {..}}` (microseconds;
    /// mqtt2ros ends where the DDS write begins, dds_write is the write call itself).
    pub fn hop_figures(&self) -> serde_json::Value {
        let mut out = serde_json::json!({"ros2mqtt": {}, "mqtt2ros": {}, "dds_write": {}});
        for (dir, topic, h) in &self.hops {
            out[*dir][topic] = serde_json::to_value(h.summary()).unwrap_or_default();
        }
        out
    }

    /// The broker connection's counters.
    pub fn stats(&self) -> &Arc<roam_mqtt::ClientStats> {
        self.client.stats()
    }

    /// Disconnects from the broker and ends every entry.
    pub async fn stop(self) {
        for t in &self.tasks {
            t.abort();
        }
        self.client.stop().await;
        let s = self.client.stats();
        use std::sync::atomic::Ordering::Relaxed;
        info!(
            target: "roam::mqtt",
            published = s.published.load(Relaxed),
            received = s.received.load(Relaxed),
            dropped_offline = s.dropped_offline.load(Relaxed),
            dropped_busy = s.dropped_busy.load(Relaxed),
            resent = s.resent.load(Relaxed),
            connects = s.connects.load(Relaxed),
            "MQTT bridge stopped"
        );
    }
}

/// The resolved definition a `json: true` entry converts with.
async fn json_type(
    ctx: &Context,
    json: bool,
    ros_type: Option<&str>,
) -> Result<Option<Arc<MessageType>>, BridgeError> {
    let (true, Some(ty)) = (json, ros_type) else {
        return Ok(None);
    };
    let source = ctx.definitions.clone();
    let name = ty.to_string();
    let found = tokio::task::spawn_blocking(move || source.lookup(&name)).await?;
    match found {
        Ok(d) => Ok(Some(Arc::new(d.schema().clone()))),
        Err(source) => Err(BridgeError::Definition {
            ty: ty.to_owned(),
            source,
        }),
    }
}
