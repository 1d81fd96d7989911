//! What a Foxglove WebSocket client sends, parsed into typed [`Op`]s. Pure; never panics on
//! bytes from outside.
//!
//! Text frames are JSON objects with an `op`; binary frames start with an opcode byte, then
//! little-endian integers:
//! - `0x01` client message data: channel id (u32), the payload;
//! - `0x02` service call request: service id (u32), call id (u32), encoding length (u32), the
//!   encoding (UTF-8), the payload.

use serde::Deserialize;

/// A channel a client advertises (to publish on).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientChannel {
    pub id: u32,
    pub topic: String,
    pub encoding: String,
    #[serde(default)]
    pub schema_name: String,
    /// Ignored: the gateway encodes and checks with its own (or the realm's) definition.
    #[serde(default)]
    pub schema: Option<String>,
    #[serde(default)]
    pub schema_encoding: Option<String>,
}

/// One of a `subscribe`'s subscriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subscription {
    pub id: u32,
    pub channel_id: u64,
}

/// One operation from a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op<'a> {
    Subscribe(Vec<Subscription>),
    Unsubscribe(Vec<u32>),
    Advertise(Vec<ClientChannel>),
    Unadvertise(Vec<u32>),
    /// A message on a channel the client advertised.
    MessageData {
        channel: u32,
        payload: &'a [u8],
    },
    ServiceCall {
        service: u32,
        call: u32,
        encoding: &'a str,
        payload: &'a [u8],
    },
    /// An op of the protocol this server does not offer (parameters, connection graph,
    /// assets, playback): its capability is not announced, so a client sending it is told.
    Unsupported(String),
}

/// Why a frame is not an op.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpError {
    #[error("malformed JSON: {0}")]
    Json(String),
    #[error("op {op}: {why}")]
    Fields { op: String, why: String },
    #[error("unknown op {0:?}")]
    UnknownOp(String),
    #[error("an empty binary frame")]
    Empty,
    #[error("unknown binary opcode 0x{0:02x}")]
    UnknownOpcode(u8),
    #[error("a binary {what} of {len} bytes is too short")]
    Short { what: &'static str, len: usize },
    #[error("service call request: the encoding is not UTF-8")]
    Encoding,
}

#[derive(Deserialize)]
struct OpName<'a> {
    #[serde(borrow)]
    op: std::borrow::Cow<'a, str>,
}

#[derive(Deserialize)]
struct SubscribeFields {
    subscriptions: Vec<Subscription>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UnsubscribeFields {
    subscription_ids: Vec<u32>,
}

#[derive(Deserialize)]
struct AdvertiseFields {
    channels: Vec<ClientChannel>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UnadvertiseFields {
    channel_ids: Vec<u32>,
}

/// Ops of the protocol whose capability this server does not announce.
const UNSUPPORTED: &[&str] = &[
    "getParameters",
    "setParameters",
    "subscribeParameterUpdates",
    "unsubscribeParameterUpdates",
    "subscribeConnectionGraph",
    "unsubscribeConnectionGraph",
    "fetchAsset",
    "playbackControlRequest",
];

/// A text frame.
pub fn parse_json(text: &[u8]) -> Result<Op<'static>, OpError> {
    let name: OpName = serde_json::from_slice(text).map_err(|e| OpError::Json(e.to_string()))?;
    let fields = |e: serde_json::Error| OpError::Fields {
        op: name.op.to_string(),
        why: e.to_string(),
    };
    Ok(match name.op.as_ref() {
        "subscribe" => Op::Subscribe(
            serde_json::from_slice::<SubscribeFields>(text)
                .map_err(fields)?
                .subscriptions,
        ),
        "unsubscribe" => Op::Unsubscribe(
            serde_json::from_slice::<UnsubscribeFields>(text)
                .map_err(fields)?
                .subscription_ids,
        ),
        "advertise" => Op::Advertise(
            serde_json::from_slice::<AdvertiseFields>(text)
                .map_err(fields)?
                .channels,
        ),
        "unadvertise" => Op::Unadvertise(
            serde_json::from_slice::<UnadvertiseFields>(text)
                .map_err(fields)?
                .channel_ids,
        ),
        op if UNSUPPORTED.contains(&op) => Op::Unsupported(op.to_string()),
        op => return Err(OpError::UnknownOp(op.to_string())),
    })
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let bytes = b.get(at..at + 4)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// A binary frame.
pub fn parse_binary(b: &[u8]) -> Result<Op<'_>, OpError> {
    let (&opcode, _) = b.split_first().ok_or(OpError::Empty)?;
    match opcode {
        0x01 => {
            let short = OpError::Short {
                what: "message data",
                len: b.len(),
            };
            let channel = u32_at(b, 1).ok_or(short)?;
            Ok(Op::MessageData {
                channel,
                payload: &b[5..],
            })
        }
        0x02 => {
            let short = || OpError::Short {
                what: "service call request",
                len: b.len(),
            };
            let (service, call, len) = match (u32_at(b, 1), u32_at(b, 5), u32_at(b, 9)) {
                (Some(s), Some(c), Some(l)) => (s, c, l as usize),
                _ => return Err(short()),
            };
            let end = 13usize.checked_add(len).ok_or_else(short)?;
            let encoding = b.get(13..end).ok_or_else(short)?;
            let encoding = std::str::from_utf8(encoding).map_err(|_| OpError::Encoding)?;
            Ok(Op::ServiceCall {
                service,
                call,
                encoding,
                payload: &b[end..],
            })
        }
        other => Err(OpError::UnknownOpcode(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_ops_as_foxglove_clients_send_them() {
        // As @foxglove/ws-protocol's FoxgloveClient writes them.
        let op = parse_json(br#"{"op":"subscribe","subscriptions":[{"id":0,"channelId":3}]}"#);
        assert_eq!(
            op.unwrap(),
            Op::Subscribe(vec![Subscription {
                id: 0,
                channel_id: 3
            }])
        );
        let op = parse_json(br#"{"op":"unsubscribe","subscriptionIds":[0,1]}"#).unwrap();
        assert_eq!(op, Op::Unsubscribe(vec![0, 1]));
        let op = parse_json(
            br#"{"op":"advertise","channels":[{"id":1,"topic":"/cmd","encoding":"cdr","schemaName":"std_msgs/msg/String","schemaEncoding":"ros2msg","schema":"string data"}]}"#,
        )
        .unwrap();
        let Op::Advertise(ch) = op else {
            panic!("{op:?}")
        };
        assert_eq!(
            (ch[0].id, ch[0].topic.as_str(), ch[0].encoding.as_str()),
            (1, "/cmd", "cdr")
        );
        assert_eq!(ch[0].schema_name, "std_msgs/msg/String");
        let op = parse_json(br#"{"op":"unadvertise","channelIds":[1]}"#).unwrap();
        assert_eq!(op, Op::Unadvertise(vec![1]));
        let op = parse_json(br#"{"op":"getParameters","parameterNames":[]}"#).unwrap();
        assert_eq!(op, Op::Unsupported("getParameters".into()));
    }

    #[test]
    fn bad_json_ops_say_what_is_wrong() {
        assert!(matches!(parse_json(b"{nope"), Err(OpError::Json(_))));
        assert!(matches!(parse_json(b"[1]"), Err(OpError::Json(_))));
        assert_eq!(
            parse_json(br#"{"op":"launch"}"#).unwrap_err().to_string(),
            "unknown op \"launch\""
        );
        let e = parse_json(br#"{"op":"subscribe","subscriptions":[{"id":-1,"channelId":3}]}"#)
            .unwrap_err();
        assert!(e.to_string().starts_with("op subscribe: "), "{e}");
        let e = parse_json(br#"{"op":"unsubscribe"}"#).unwrap_err();
        assert!(e.to_string().contains("subscriptionIds"), "{e}");
    }

    #[test]
    fn binary_frames_are_bounds_checked() {
        let mut m = vec![1, 7, 0, 0, 0];
        m.extend_from_slice(b"cdr!");
        assert_eq!(
            parse_binary(&m).unwrap(),
            Op::MessageData {
                channel: 7,
                payload: b"cdr!"
            }
        );
        let mut c = vec![2, 1, 0, 0, 0, 9, 0, 0, 0, 3, 0, 0, 0];
        c.extend_from_slice(b"cdrPAYLOAD");
        assert_eq!(
            parse_binary(&c).unwrap(),
            Op::ServiceCall {
                service: 1,
                call: 9,
                encoding: "cdr",
                payload: b"PAYLOAD"
            }
        );
        assert_eq!(parse_binary(&[]).unwrap_err(), OpError::Empty);
        assert_eq!(parse_binary(&[9]).unwrap_err(), OpError::UnknownOpcode(9));
        // Every truncation of both frames is an error or a shorter payload, never a panic.
        for frame in [&m, &c] {
            for n in 0..frame.len() {
                let _ = parse_binary(&frame[..n]);
            }
        }
        assert!(parse_binary(&[1, 0, 0]).is_err());
        // An encoding length past the end (or one that would overflow) is refused.
        let huge = [2, 1, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, b'x'];
        assert!(matches!(parse_binary(&huge), Err(OpError::Short { .. })));
        let bad_utf8 = [2, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0xff];
        assert_eq!(parse_binary(&bad_utf8).unwrap_err(), OpError::Encoding);
    }
}
