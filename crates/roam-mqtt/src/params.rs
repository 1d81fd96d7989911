//! mqtt_client's parameter schema: `broker`, `client` and `bridge.ros2mqtt` /
//! `bridge.mqtt2ros`, read from a YAML tree the way mqtt_client 2.x reads its ROS parameters.
//!
//! A user's existing parameter file works as it is: the ROS 2 wrapping (`/**/*:` or a node
//! name, then `ros__parameters:`) is unwrapped, defaults are mqtt_client's, and its rules are
//! kept (JSON needs `ros_type`; no timestamp in primitive or JSON payloads; `primitive` wins
//! over `json`). What differs is said on the field and in docs/mqtt.md: relative paths are
//! resolved against the file's directory (mqtt_client: `ROS_HOME`), `latched` is honoured
//! (mqtt_client 2.x ignores it on ROS 2), `client.buffer` is kept in memory, and two
//! roam keys exist: `client.mqtt_version` and a per-entry `realm`.
//!
//! The walk is by hand rather than serde derive: topic names are keys, and every error names
//! the field it is about ([`ParamsError::path`]) so that a caller can point at its line.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_yaml_ng::{Mapping, Value};

/// One step into the parameter tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSeg {
    Key(String),
    Index(usize),
}

/// A field that is wrong, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", show_path(path))]
pub struct ParamsError {
    /// Where, from the root of what was given (inside `ros__parameters` if it was wrapped).
    pub path: Vec<PathSeg>,
    pub message: String,
}

/// `bridge.ros2mqtt./ping.mqtt_topic`, `bridge.ros2mqtt.ros_topics[1]`.
pub fn show_path(path: &[PathSeg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            PathSeg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            PathSeg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    if s.is_empty() {
        s.push_str("(top level)");
    }
    s
}

/// MQTT quality of service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MqttQos {
    #[default]
    AtMostOnce,
    AtLeastOnce,
    ExactlyOnce,
}

impl MqttQos {
    pub fn level(self) -> u8 {
        match self {
            MqttQos::AtMostOnce => 0,
            MqttQos::AtLeastOnce => 1,
            MqttQos::ExactlyOnce => 2,
        }
    }
}

/// The MQTT protocol version the client speaks (roam's key `client.mqtt_version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MqttVersion {
    /// MQTT 3.1.1, what mqtt_client (paho) uses.
    #[default]
    V311,
    V5,
}

/// `advanced.ros.qos.reliability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reliability {
    /// Take the publisher's (ros2mqtt only).
    Auto,
    SystemDefault,
    Reliable,
    BestEffort,
}

/// `advanced.ros.qos.durability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Take the publisher's (ros2mqtt only).
    Auto,
    SystemDefault,
    Volatile,
    TransientLocal,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Broker {
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub pass: String,
    pub tls: Option<BrokerTls>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BrokerTls {
    /// CA certificates (PEM) the broker's certificate must chain to.
    pub ca_certificate: PathBuf,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LastWill {
    pub topic: String,
    pub message: String,
    pub qos: MqttQos,
    pub retained: bool,
}

/// `client.tls`: a client certificate for brokers that ask for one.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientTls {
    pub certificate: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// `false`: the broker's certificate is not verified (mqtt_client's `server_cert_auth`).
    pub server_cert_auth: bool,
    pub alpn_protos: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Client {
    /// Empty: the broker assigns one (then no session survives a reconnection).
    pub id: String,
    /// Messages kept while the broker is unreachable (0: none; needs an id, as in mqtt_client).
    pub buffer_size: usize,
    pub last_will: Option<LastWill>,
    pub clean_session: bool,
    pub keep_alive: Duration,
    pub max_inflight: u16,
    pub tls: ClientTls,
    pub mqtt_version: MqttVersion,
}

/// One `bridge.ros2mqtt` entry: a ROS topic sent to an MQTT topic.
#[derive(Debug, Clone, PartialEq)]
pub struct Ros2Mqtt {
    pub ros_topic: String,
    pub mqtt_topic: String,
    pub primitive: bool,
    pub json: bool,
    /// Fixed type (`pkg/msg/Type` or `pkg/Type`); else the publisher's.
    pub ros_type: Option<String>,
    pub inject_timestamp: bool,
    pub queue_size: u32,
    pub reliability: Reliability,
    pub durability: Durability,
    pub mqtt_qos: MqttQos,
    pub retained: bool,
    /// roam: the key of a realm the proxy joins; `ros_topic` is then that realm's topic.
    pub realm: Option<String>,
}

/// One `bridge.mqtt2ros` entry: an MQTT topic published on a ROS topic.
#[derive(Debug, Clone, PartialEq)]
pub struct Mqtt2Ros {
    pub mqtt_topic: String,
    pub ros_topic: String,
    pub primitive: bool,
    pub json: bool,
    pub ros_type: Option<String>,
    pub mqtt_qos: MqttQos,
    pub queue_size: u32,
    pub latched: bool,
    pub reliability: Reliability,
    pub durability: Durability,
    /// roam: the key of a realm the proxy joins; `ros_topic` is then published in that realm.
    pub realm: Option<String>,
}

/// Everything a bridge is configured with.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub broker: Broker,
    pub client: Client,
    pub ros2mqtt: Vec<Ros2Mqtt>,
    pub mqtt2ros: Vec<Mqtt2Ros>,
    /// What mqtt_client would have warned about (and roam does, at start).
    pub warnings: Vec<String>,
}

impl Params {
    /// Reads a parameter file's text. Relative paths in it are resolved against `base`.
    pub fn parse(text: &str, base: &Path) -> Result<Params, ParamsError> {
        let doc: Value = serde_yaml_ng::from_str(text).map_err(|e| ParamsError {
            path: Vec::new(),
            message: format!("not YAML: {e}"),
        })?;
        Self::from_value(&doc, base)
    }

    /// Reads a parsed tree: mqtt_client's parameters, bare or ROS 2-wrapped.
    pub fn from_value(doc: &Value, base: &Path) -> Result<Params, ParamsError> {
        let root = unwrap_ros(doc)?;
        let mut w = Walk::new(base);
        w.known(&root, &["broker", "client", "bridge", "use_sim_time"])?;
        let broker = w.broker(root.get("broker"))?;
        let client = w.client(root.get("client"), broker.tls.is_some())?;
        let bridge = root.get("bridge");
        w.path.push(PathSeg::Key("bridge".into()));
        if let Some(b) = bridge {
            let b = w.map(b)?;
            w.known(&b, &["ros2mqtt", "mqtt2ros"])?;
        }
        let ros2mqtt = w.ros2mqtt(bridge.and_then(|b| b.get("ros2mqtt")))?;
        let mqtt2ros = w.mqtt2ros(bridge.and_then(|b| b.get("mqtt2ros")))?;
        w.path.pop();
        if ros2mqtt.is_empty() && mqtt2ros.is_empty() {
            return Err(w.err(
                "bridge",
                "nothing to bridge: list topics under bridge.ros2mqtt.ros_topics or bridge.mqtt2ros.mqtt_topics",
            ));
        }
        Ok(Params {
            broker,
            client,
            ros2mqtt,
            mqtt2ros,
            warnings: w.warnings,
        })
    }
}

#[path = "params_read.rs"]
mod read;
use read::Walk;

/// The parameters under `<node>: ros__parameters:` if the file is ROS 2-wrapped (merged, in
/// order, if several node patterns carry some); else the document itself.
fn unwrap_ros(doc: &Value) -> Result<Mapping, ParamsError> {
    let Value::Mapping(top) = doc else {
        return Err(ParamsError {
            path: Vec::new(),
            message: "expected a mapping of parameters".into(),
        });
    };
    let mut merged = Mapping::new();
    let mut wrapped = false;
    for (_, v) in top {
        if let Some(Value::Mapping(p)) = v.get("ros__parameters") {
            wrapped = true;
            for (k, v) in p {
                merged.insert(k.clone(), v.clone());
            }
        }
    }
    Ok(if wrapped { merged } else { top.clone() })
}

#[cfg(test)]
#[path = "params_tests.rs"]
mod tests;
