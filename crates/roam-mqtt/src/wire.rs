//! mqtt_client 2.x's wire format, byte for byte.
//!
//! - A ROS message travels as its serialized CDR (encapsulation header included) on the entry's
//!   MQTT topic, optionally prefixed with the sender's clock as a serialized
//!   `builtin_interfaces/msg/Time` ([`STAMP_LEN`] bytes, its own header included):
//!   `[S, R]`.
//! - Its type travels retained on `mqtt_client/ros_msg_type/<mqtt topic>` as a serialized
//!   `mqtt_client_interfaces/msg/RosMsgType {string md5, string name, string definition,
//!   bool stamped}`, sent before every message. mqtt_client on ROS 2 fills `name`
//!   (`pkg/msg/Type`) and `stamped` only.
//! - A receiver that finds `stamped` publishes `now - S` in seconds as `std_msgs/msg/Float64`
//!   on `~/latencies/<ros topic>`.

use crate::cdr::{Reader, Writer};

/// Where a data topic's type message is published: this prefix, then the data topic.
pub const TYPE_TOPIC_PREFIX: &str = "mqtt_client/ros_msg_type/";

/// A serialized `builtin_interfaces/msg/Time`: header, int32 sec, uint32 nanosec.
pub const STAMP_LEN: usize = 12;

/// `mqtt_client_interfaces/msg/RosMsgType`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RosMsgType {
    pub md5: String,
    /// `pkg/msg/Type`.
    pub name: String,
    pub definition: String,
    /// Whether the data messages start with a [`STAMP_LEN`]-byte timestamp.
    pub stamped: bool,
}

/// Why bytes from MQTT are not what they should be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("{what}: {len} bytes, shorter than {need}")]
    Short {
        what: &'static str,
        len: usize,
        need: usize,
    },
    #[error("{what}: unknown CDR encapsulation {0:#06x}", .kind)]
    Encapsulation { what: &'static str, kind: u16 },
    #[error("{what}: a string is not UTF-8 or lacks its NUL")]
    BadString { what: &'static str },
    #[error("{what}: a bool byte is {value}")]
    BadBool { what: &'static str, value: u8 },
    #[error("{what}: {0}", .detail)]
    Invalid { what: &'static str, detail: String },
}

impl RosMsgType {
    /// The CDR mqtt_client writes (little endian).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.string(&self.md5);
        w.string(&self.name);
        w.string(&self.definition);
        w.u8(self.stamped as u8);
        w.finish()
    }

    /// Reads one from MQTT; either byte order.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        const WHAT: &str = "RosMsgType";
        let mut r = Reader::new(bytes, WHAT)?;
        let md5 = r.string()?;
        let name = r.string()?;
        let definition = r.string()?;
        let stamped = match r.u8()? {
            0 => false,
            1 => true,
            value => return Err(WireError::BadBool { what: WHAT, value }),
        };
        Ok(Self {
            md5,
            name,
            definition,
            stamped,
        })
    }
}

/// A serialized `builtin_interfaces/msg/Time` for a time since the Unix epoch.
pub fn encode_stamp(since_epoch: std::time::Duration) -> [u8; STAMP_LEN] {
    let mut w = Writer::new();
    w.i32(since_epoch.as_secs() as i32);
    w.u32(since_epoch.subsec_nanos());
    let v = w.finish();
    let mut out = [0u8; STAMP_LEN];
    out.copy_from_slice(&v);
    out
}

/// The time a stamp carries, in nanoseconds since the epoch (negative before it).
pub fn decode_stamp(bytes: &[u8]) -> Result<i64, WireError> {
    let mut r = Reader::new(bytes, "timestamp")?;
    let sec = r.i32()? as i64;
    let nanosec = r.u32()? as i64;
    Ok(sec * 1_000_000_000 + nanosec)
}

/// `[S, R]` into the stamp's time (ns) and `R`.
pub fn split_stamped(payload: &[u8]) -> Result<(i64, &[u8]), WireError> {
    if payload.len() < STAMP_LEN {
        return Err(WireError::Short {
            what: "stamped message",
            len: payload.len(),
            need: STAMP_LEN,
        });
    }
    let (s, r) = payload.split_at(STAMP_LEN);
    Ok((decode_stamp(s)?, r))
}

/// `[S, R]`.
pub fn join_stamped(since_epoch: std::time::Duration, cdr: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(STAMP_LEN + cdr.len());
    out.extend_from_slice(&encode_stamp(since_epoch));
    out.extend_from_slice(cdr);
    out
}

/// A serialized `std_msgs/msg/Float64`.
pub fn encode_float64(v: f64) -> Vec<u8> {
    let mut w = Writer::new();
    w.f64(v);
    w.finish()
}

/// The ROS topic mqtt_client publishes a bridge's latencies on: `~/latencies/<ros topic>`
/// under the node `node` (`/ns/name`), with the doubled slash collapsed as mqtt_client does.
pub fn latency_topic(node: &str, ros_topic: &str) -> String {
    let t = format!("{}/latencies/{}", node.trim_end_matches('/'), ros_topic);
    t.replacen("//", "/", 1)
}

/// The data topic of a type topic, if it is one.
pub fn data_topic_of(type_topic: &str) -> Option<&str> {
    type_topic.strip_prefix(TYPE_TOPIC_PREFIX)
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
