//! What the gateway sends to a Foxglove client, encoded. Pure.
//!
//! JSON: `serverInfo`, `status`, `advertise`, `unadvertise`, `advertiseServices`,
//! `unadvertiseServices`, `serviceCallFailure`. Binary (little-endian): `0x01` message data
//! (subscription id u32, receive time u64 ns, payload) and `0x03` service call response
//! (service id u32, call id u32, encoding length u32, encoding, payload).

use serde::Serialize;
use serde_json::json;

use super::catalog::{ChannelInfo, ServiceInfo};

/// The message encoding of every channel: ROS 2's CDR, as the realm carries it.
pub const CDR: &str = "cdr";
/// How schemas are written: the ROS 2 `.msg` text with its dependencies (`MSG:` sections).
pub const ROS2MSG: &str = "ros2msg";

/// A frame for the WebSocket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Text(String),
    Binary(Vec<u8>),
    /// Close the connection with this WebSocket close code and reason.
    Close {
        code: u16,
        reason: String,
    },
}

impl Frame {
    pub fn len(&self) -> usize {
        match self {
            Frame::Text(t) => t.len(),
            Frame::Binary(b) => b.len(),
            Frame::Close { reason, .. } => reason.len() + 2,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Status levels as the protocol numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Info = 0,
    Warning = 1,
    Error = 2,
}

fn text(v: &impl Serialize) -> Frame {
    // Serializing JSON values and plain structs of strings and numbers cannot fail.
    Frame::Text(serde_json::to_string(v).unwrap_or_default())
}

/// The first message of a connection: what this server offers.
pub fn server_info(name: &str, realm: &str, session_id: &str) -> Frame {
    text(&json!({
        "op": "serverInfo",
        "name": name,
        "capabilities": ["clientPublish", "services"],
        "supportedEncodings": [CDR, "json"],
        "metadata": {"realm": realm},
        "sessionId": session_id,
    }))
}

/// A status; `id` lets a later one replace it (e.g. the drops of one subscription).
pub fn status(level: Level, message: &str, id: Option<&str>) -> Frame {
    let mut v = json!({"op": "status", "level": level as u8, "message": message});
    if let Some(id) = id {
        v["id"] = json!(id);
    }
    text(&v)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Channel<'a> {
    id: u64,
    topic: &'a str,
    encoding: &'a str,
    schema_name: &'a str,
    schema_encoding: &'a str,
    schema: &'a str,
}

/// Channels the client may subscribe to.
pub fn advertise<'a>(channels: impl IntoIterator<Item = &'a ChannelInfo>) -> Frame {
    let channels: Vec<Channel> = channels
        .into_iter()
        .map(|c| Channel {
            id: c.id,
            topic: &c.topic,
            encoding: CDR,
            schema_name: &c.ros_type,
            schema_encoding: ROS2MSG,
            schema: &c.schema,
        })
        .collect();
    text(&json!({"op": "advertise", "channels": channels}))
}

pub fn unadvertise(ids: &[u64]) -> Frame {
    text(&json!({"op": "unadvertise", "channelIds": ids}))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageSchema<'a> {
    encoding: &'a str,
    schema_name: &'a str,
    schema_encoding: &'a str,
    schema: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Service<'a> {
    id: u32,
    name: &'a str,
    r#type: &'a str,
    request: MessageSchema<'a>,
    response: MessageSchema<'a>,
}

/// Services the client may call, with their request and response schemas.
pub fn advertise_services<'a>(services: impl IntoIterator<Item = &'a ServiceInfo>) -> Frame {
    let services: Vec<Service> = services
        .into_iter()
        .map(|s| Service {
            id: s.id,
            name: &s.name,
            r#type: &s.srv_type,
            request: MessageSchema {
                encoding: CDR,
                schema_name: &s.request_name,
                schema_encoding: ROS2MSG,
                schema: &s.request_schema,
            },
            response: MessageSchema {
                encoding: CDR,
                schema_name: &s.response_name,
                schema_encoding: ROS2MSG,
                schema: &s.response_schema,
            },
        })
        .collect();
    text(&json!({"op": "advertiseServices", "services": services}))
}

pub fn unadvertise_services(ids: &[u32]) -> Frame {
    text(&json!({"op": "unadvertiseServices", "serviceIds": ids}))
}

pub fn service_call_failure(service: u32, call: u32, message: &str) -> Frame {
    text(&json!({
        "op": "serviceCallFailure",
        "serviceId": service,
        "callId": call,
        "message": message,
    }))
}

/// Bytes before a message's payload in a message data frame.
pub const MESSAGE_DATA_HEADER: usize = 1 + 4 + 8;

/// A message of subscription `sub`, received at `received_ns` (Unix time), its payload (the
/// CDR with its encapsulation header) as is.
pub fn message_data(sub: u32, received_ns: u64, payload: &[u8]) -> Frame {
    let mut b = Vec::with_capacity(MESSAGE_DATA_HEADER + payload.len());
    b.push(0x01);
    b.extend_from_slice(&sub.to_le_bytes());
    b.extend_from_slice(&received_ns.to_le_bytes());
    b.extend_from_slice(payload);
    Frame::Binary(b)
}

/// The reply to call `call` of service `service`, in the request's encoding.
pub fn service_call_response(service: u32, call: u32, encoding: &str, payload: &[u8]) -> Frame {
    let mut b = Vec::with_capacity(13 + encoding.len() + payload.len());
    b.push(0x03);
    b.extend_from_slice(&service.to_le_bytes());
    b.extend_from_slice(&call.to_le_bytes());
    b.extend_from_slice(&(encoding.len() as u32).to_le_bytes());
    b.extend_from_slice(encoding.as_bytes());
    b.extend_from_slice(payload);
    Frame::Binary(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn json_of(f: Frame) -> Value {
        match f {
            Frame::Text(t) => serde_json::from_str(&t).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn json_messages_have_the_fields_of_the_spec() {
        let v = json_of(server_info("roam gateway", "test", "17"));
        assert_eq!(v["op"], "serverInfo");
        assert_eq!(v["capabilities"], json!(["clientPublish", "services"]));
        assert_eq!(v["supportedEncodings"], json!(["cdr", "json"]));
        assert_eq!(v["sessionId"], "17");
        let v = json_of(status(Level::Error, "no", None));
        assert_eq!(v, json!({"op": "status", "level": 2, "message": "no"}));
        let v = json_of(status(Level::Warning, "dropped", Some("drops:1")));
        assert_eq!(v["id"], "drops:1");
        let c = ChannelInfo {
            id: 4,
            topic: "/chatter".into(),
            ros_type: "std_msgs/msg/String".into(),
            schema: "string data\n".into(),
        };
        let v = json_of(advertise([&c]));
        assert_eq!(
            v,
            json!({"op": "advertise", "channels": [{"id": 4, "topic": "/chatter",
                "encoding": "cdr", "schemaName": "std_msgs/msg/String",
                "schemaEncoding": "ros2msg", "schema": "string data\n"}]})
        );
        assert_eq!(
            json_of(unadvertise(&[4])),
            json!({"op": "unadvertise", "channelIds": [4]})
        );
        let s = ServiceInfo {
            id: 2,
            name: "/add".into(),
            srv_type: "example_interfaces/srv/AddTwoInts".into(),
            request_name: "example_interfaces/srv/AddTwoInts_Request".into(),
            request_schema: "int64 a\nint64 b\n".into(),
            response_name: "example_interfaces/srv/AddTwoInts_Response".into(),
            response_schema: "int64 sum\n".into(),
        };
        let v = json_of(advertise_services([&s]));
        assert_eq!(
            v["services"][0]["type"],
            "example_interfaces/srv/AddTwoInts"
        );
        assert_eq!(v["services"][0]["request"]["schemaEncoding"], "ros2msg");
        assert_eq!(v["services"][0]["response"]["schema"], "int64 sum\n");
        assert_eq!(
            json_of(unadvertise_services(&[2])),
            json!({"op": "unadvertiseServices", "serviceIds": [2]})
        );
        let v = json_of(service_call_failure(2, 9, "no server"));
        assert_eq!(v["callId"], 9);
    }

    #[test]
    fn binary_messages_are_little_endian() {
        let Frame::Binary(b) = message_data(0x0102_0304, 0x1122_3344_5566_7788, b"\0\x01\0\0")
        else {
            panic!()
        };
        assert_eq!(
            b,
            [1, 4, 3, 2, 1, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0, 1, 0, 0]
        );
        let Frame::Binary(b) = service_call_response(1, 2, "cdr", b"P") else {
            panic!()
        };
        assert_eq!(
            b,
            [3, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, b'c', b'd', b'r', b'P']
        );
    }
}
