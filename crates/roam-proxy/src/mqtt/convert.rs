//! What one bridge entry does to one message, without I/O: ROS CDR to the MQTT payload an
//! mqtt_client peer expects ([`outbound`]), and an MQTT message to what to publish in ROS
//! ([`Inbound`], which follows the retained type messages and their changes).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use roam_msg::{EncodeOptions, MessageType, TypeName};

use roam_mqtt::params::{Mqtt2Ros, Ros2Mqtt};
use roam_mqtt::primitive;
use roam_mqtt::wire::{self, RosMsgType, WireError, TYPE_TOPIC_PREFIX};

/// Why a message could not be converted (it is dropped and counted; logged once per topic).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConvertError {
    #[error("{0}")]
    Wire(#[from] WireError),
    #[error("`{0}` is not a primitive type (primitive: true takes std_msgs scalars, String, UInt8MultiArray)")]
    NotPrimitive(String),
    #[error("JSON: {0}")]
    Json(String),
    #[error("`{0}` is not a ROS type name")]
    TypeName(String),
    #[error("no type yet: mqtt_client's type message on {0} has not arrived")]
    NoType(String),
}

/// `pkg/msg/Type` for a name given either way (`pkg/Type`, `pkg/msg/Type`, or DDS's).
pub fn full_type_name(name: &str) -> Result<String, ConvertError> {
    TypeName::parse(name)
        .or_else(|_| TypeName::from_dds(name))
        .map(|t| t.full())
        .map_err(|_| ConvertError::TypeName(name.to_string()))
}

/// The payload a ROS message becomes on the entry's MQTT topic. `json` is the type's
/// resolved definition (needed with `json: true`); `now` is the time since the epoch.
pub fn outbound(
    e: &Ros2Mqtt,
    ros_type: &str,
    cdr: Vec<u8>,
    json: Option<&MessageType>,
    now: Duration,
) -> Result<Bytes, ConvertError> {
    if e.primitive {
        return match primitive::to_text(ros_type, &cdr) {
            Some(text) => Ok(Bytes::from(text?)),
            None => Err(ConvertError::NotPrimitive(ros_type.to_string())),
        };
    }
    if e.json {
        let ty = json.ok_or_else(|| ConvertError::Json(format!("no definition of {ros_type}")))?;
        let mut out = Vec::with_capacity(cdr.len() * 2);
        ty.cdr_to_json(&cdr, &mut out)
            .map_err(|err| ConvertError::Json(err.to_string()))?;
        return Ok(Bytes::from(out));
    }
    Ok(match e.inject_timestamp {
        true => Bytes::from(wire::join_stamped(now, &cdr)),
        // The sample's own buffer becomes the payload: no copy.
        false => Bytes::from(cdr),
    })
}

/// The retained type message that goes with a CDR-mode entry: its topic and payload; `None`
/// in primitive and JSON modes (mqtt_client sends none there).
pub fn type_message(e: &Ros2Mqtt, ros_type: &str) -> Option<(String, Bytes)> {
    if e.primitive || e.json {
        return None;
    }
    let t = RosMsgType {
        name: ros_type.to_string(),
        stamped: e.inject_timestamp,
        ..RosMsgType::default()
    };
    Some((
        format!("{TYPE_TOPIC_PREFIX}{}", e.mqtt_topic),
        Bytes::from(t.encode()),
    ))
}

/// What an MQTT message asks of the ROS side.
#[derive(Debug, Clone, PartialEq)]
pub enum InAction {
    /// Subscribe this MQTT topic (the data topic, once its type is known).
    Subscribe(String),
    /// The topic's type is now this (`pkg/msg/Type`): (re)create the ROS publisher.
    Retype(String),
    /// Publish this CDR on the entry's ROS topic.
    Publish(Bytes),
    /// Publish this latency (seconds) on the entry's latency topic.
    Latency(f64),
}

/// One `mqtt2ros` entry's state: the type it publishes, from its configuration or from the
/// type messages mqtt_client peers retain.
#[derive(Debug, Clone)]
pub struct Inbound {
    pub entry: Mqtt2Ros,
    /// `pkg/msg/Type` now published, if known.
    ros_type: Option<String>,
    stamped: bool,
    json: Option<Arc<MessageType>>,
    /// Primitive mode without a fixed type: the type the last message probed as.
    probed: Option<&'static str>,
}

impl Inbound {
    /// `json`: the resolved definition of the fixed type, for `json: true`.
    pub fn new(entry: Mqtt2Ros, json: Option<Arc<MessageType>>) -> Result<Self, ConvertError> {
        let ros_type = entry.ros_type.as_deref().map(full_type_name).transpose()?;
        Ok(Self {
            entry,
            ros_type,
            stamped: false,
            json,
            probed: None,
        })
    }

    /// The type it publishes now.
    pub fn ros_type(&self) -> Option<&str> {
        self.ros_type.as_deref().or(self.probed)
    }

    /// The MQTT topics to subscribe at start, as mqtt_client does: the data topic when the
    /// type needs no type message (primitive, JSON, fixed type), else the type topic first.
    pub fn subscriptions(&self) -> Vec<String> {
        let e = &self.entry;
        let mut s = Vec::new();
        if !e.primitive && !e.json {
            s.push(format!("{TYPE_TOPIC_PREFIX}{}", e.mqtt_topic));
        }
        if e.primitive || e.json || self.ros_type.is_some() {
            s.push(e.mqtt_topic.clone());
        }
        s
    }

    /// One message from MQTT (on the entry's data topic or its type topic); `now_ns` is the
    /// arrival time since the epoch.
    pub fn on_message(
        &mut self,
        topic: &str,
        payload: &Bytes,
        now_ns: i64,
    ) -> Result<Vec<InAction>, ConvertError> {
        if topic != self.entry.mqtt_topic {
            return self.on_type(payload);
        }
        let e = &self.entry;
        if e.primitive {
            return Ok(match &self.ros_type {
                Some(fixed) => vec![InAction::Publish(
                    primitive::parse_fixed(fixed, payload)?.into(),
                )],
                None => {
                    let (ty, cdr) = primitive::probe(payload);
                    let mut a = Vec::new();
                    if self.probed != Some(ty) {
                        self.probed = Some(ty);
                        a.push(InAction::Retype(ty.to_string()));
                    }
                    a.push(InAction::Publish(cdr.into()));
                    a
                }
            });
        }
        if e.json {
            let ty = self.json.as_ref().ok_or_else(|| {
                ConvertError::Json("no definition of the configured ros_type".into())
            })?;
            let mut cdr = Vec::new();
            ty.json_to_cdr(payload, &EncodeOptions::default(), &mut cdr)
                .map_err(|err| ConvertError::Json(err.to_string()))?;
            return Ok(vec![InAction::Publish(cdr.into())]);
        }
        if self.ros_type.is_none() {
            return Err(ConvertError::NoType(format!(
                "{TYPE_TOPIC_PREFIX}{}",
                e.mqtt_topic
            )));
        }
        let mut a = Vec::new();
        let cdr = if self.stamped {
            let (sent_ns, _) = wire::split_stamped(payload)?;
            a.push(InAction::Latency((now_ns - sent_ns) as f64 / 1e9));
            payload.slice(wire::STAMP_LEN..)
        } else {
            payload.clone()
        };
        // Refuse what is not CDR at all before it reaches a ROS publisher.
        if cdr.len() < 4 || !matches!(cdr[..2], [0, 0] | [0, 1]) {
            return Err(WireError::Invalid {
                what: "ROS message",
                detail: format!("{} bytes without a CDR header", cdr.len()),
            }
            .into());
        }
        a.push(InAction::Publish(cdr));
        Ok(a)
    }

    fn on_type(&mut self, payload: &[u8]) -> Result<Vec<InAction>, ConvertError> {
        let t = RosMsgType::decode(payload)?;
        let name = full_type_name(&t.name)?;
        let mut a = Vec::new();
        let fixed = self.entry.ros_type.is_some();
        if fixed {
            // A configured type wins; a different announced one is the peer's mistake.
            if self.ros_type.as_deref() != Some(name.as_str()) {
                return Err(ConvertError::TypeName(format!(
                    "{name} announced, {} configured",
                    self.ros_type.as_deref().unwrap_or("")
                )));
            }
            self.stamped = t.stamped;
            return Ok(a);
        }
        let first = self.ros_type.is_none();
        if self.ros_type.as_deref() != Some(name.as_str()) {
            self.ros_type = Some(name.clone());
            a.push(InAction::Retype(name));
        }
        self.stamped = t.stamped;
        if first {
            a.push(InAction::Subscribe(self.entry.mqtt_topic.clone()));
        }
        Ok(a)
    }
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
