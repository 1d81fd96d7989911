//! The ways a WebSocket client reads a topic through the gateway, one report row each. Pure:
//! what to send to subscribe, and what a received frame holds.
//!
//! Another door (the Foxglove WebSocket protocol) joins as a variant: its subprotocol, the
//! exchange that subscribes (`Door::subscribe_ops`, or a step in `clients::subscriber` if it
//! must first read the server's channel advertisements) and its frame reader (`Door::read`,
//! reusing `Kind::read_cdr` for its raw CDR).

use minicbor::Decoder;
use serde::Serialize;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

use super::messages::{for_map, Kind, Sample};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Door {
    /// rosbridge v2, `compression: none`: JSON text frames, binary fields in base64.
    RosbridgeJson,
    /// rosbridge v2, `compression: cbor`: the message as CBOR.
    RosbridgeCbor,
    /// rosbridge v2, `compression: cbor-raw`: the message's CDR bytes in a CBOR frame.
    RosbridgeCborRaw,
    /// The Foxglove WebSocket protocol: a `messageData` binary frame carrying the raw CDR.
    Foxglove,
}

/// What a frame from the gateway was.
#[derive(Debug, PartialEq)]
pub enum Read {
    Sample(Sample),
    /// A `status` op (e.g. the gateway saying this client lost messages).
    Status(String),
    /// Anything else (pings, other ops).
    Other,
}

impl Door {
    /// Every door, one row each.
    pub const ALL: [Door; 4] = [
        Door::RosbridgeJson,
        Door::RosbridgeCbor,
        Door::RosbridgeCborRaw,
        Door::Foxglove,
    ];

    /// The WebSocket subprotocol the door speaks, if it names one.
    pub fn subprotocol(self) -> Option<&'static str> {
        (self == Door::Foxglove).then_some("foxglove.websocket.v1")
    }

    pub fn label(self) -> &'static str {
        match self {
            Door::RosbridgeJson => "rosbridge-json",
            Door::RosbridgeCbor => "rosbridge-cbor",
            Door::RosbridgeCborRaw => "rosbridge-cbor-raw",
            Door::Foxglove => "foxglove",
        }
    }

    /// The URL a client opens on a gateway whose rosbridge door is at `port`.
    pub fn url(self, port: u16) -> String {
        format!("ws://127.0.0.1:{port}/")
    }

    /// The frames that subscribe to `topic` (rosbridge's default queue_length, as roslibpy and
    /// roslibjs leave it unless told).
    /// (The Foxglove door subscribes to a channel once the server advertises it: see
    /// [`Door::foxglove_subscribe`].)
    pub fn subscribe_ops(self, topic: &str, kind: Kind) -> Vec<Message> {
        let compression = match self {
            Door::RosbridgeJson => "none",
            Door::RosbridgeCbor => "cbor",
            Door::RosbridgeCborRaw => "cbor-raw",
            Door::Foxglove => return Vec::new(),
        };
        let op = serde_json::json!({"op": "subscribe", "id": format!("bench-{topic}"),
            "topic": topic, "type": kind.type_name(), "compression": compression});
        vec![Message::Text(op.to_string().into())]
    }

    /// The Foxglove `subscribe` for `topic`'s channel when `frame` is an `advertise` that
    /// lists it (subscription id 1).
    pub fn foxglove_subscribe(frame: &Message, topic: &str) -> Option<Message> {
        let Message::Text(t) = frame else { return None };
        let v: Value = serde_json::from_str(t).ok()?;
        if v["op"] != "advertise" {
            return None;
        }
        let id = v["channels"]
            .as_array()?
            .iter()
            .find(|c| c["topic"] == topic)?["id"]
            .as_u64()?;
        let op = serde_json::json!({"op": "subscribe",
            "subscriptions": [{"id": 1, "channelId": id}]});
        Some(Message::Text(op.to_string().into()))
    }

    /// What `frame` holds, decoded as a client of this door decodes it.
    pub fn read(self, kind: Kind, frame: &Message) -> Result<Read, String> {
        if self == Door::Foxglove {
            return match frame {
                // messageData: opcode 1, subscription id u32, receive time u64, the CDR.
                Message::Binary(b) if b.first() == Some(&1) && b.len() >= 13 => {
                    Ok(Read::Sample(kind.read_cdr(&b[13..])?))
                }
                Message::Binary(_) => Err("a binary frame that is not messageData".into()),
                Message::Text(t) => {
                    let v: Value = serde_json::from_str(t).map_err(|e| format!("JSON: {e}"))?;
                    match v["op"].as_str() {
                        Some("status") => Ok(Read::Status(
                            v["message"].as_str().unwrap_or_default().to_string(),
                        )),
                        _ => Ok(Read::Other),
                    }
                }
                _ => Ok(Read::Other),
            };
        }
        match frame {
            Message::Text(t) => {
                let v: Value = serde_json::from_str(t).map_err(|e| format!("JSON: {e}"))?;
                match v["op"].as_str() {
                    Some("publish") => Ok(Read::Sample(kind.read_json(&v["msg"])?)),
                    Some("status") => Ok(Read::Status(
                        v["msg"].as_str().unwrap_or_default().to_string(),
                    )),
                    _ => Ok(Read::Other),
                }
            }
            Message::Binary(b) => self.read_binary(kind, b),
            _ => Ok(Read::Other),
        }
    }

    fn read_binary(self, kind: Kind, frame: &[u8]) -> Result<Read, String> {
        let mut d = Decoder::new(frame);
        let (mut op, mut sample) = (None, None);
        for_map(&mut d, |key, d| {
            let e = |e: minicbor::decode::Error| e.to_string();
            match key {
                "op" => op = Some(d.str().map_err(e)?.to_string()),
                "msg" if self == Door::RosbridgeCborRaw => {
                    let mut bytes = None;
                    for_map(d, |key, d| {
                        match key {
                            "bytes" => bytes = Some(d.bytes().map_err(e)?),
                            _ => d.skip().map_err(e)?,
                        }
                        Ok(())
                    })?;
                    sample = Some(kind.read_cdr(bytes.ok_or("cbor-raw without bytes")?)?);
                }
                "msg" => sample = Some(kind.read_cbor(d)?),
                _ => d.skip().map_err(e)?,
            }
            Ok(())
        })?;
        match (op.as_deref(), sample) {
            (Some("publish"), Some(s)) => Ok(Read::Sample(s)),
            (Some("publish"), None) => Err("a publish op without msg".into()),
            _ => Ok(Read::Other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minicbor::Encoder;

    #[test]
    fn each_door_reads_its_frames() {
        // cbor: the bench's own publish frame is what the gateway sends, op for op.
        let frame = super::super::messages::Frames::new(Kind::Text, "/t").frame(3, 1, 2);
        let got = Door::RosbridgeCbor
            .read(Kind::Text, &Message::Binary(frame.into()))
            .unwrap();
        assert_eq!(
            got,
            Read::Sample(Sample {
                seq: 3,
                stamp_ns: 1_000_000_002
            })
        );
        // cbor-raw: msg {secs, nsecs, bytes}.
        let text = b"4 1 2 x\0";
        let mut cdr = vec![0, 1, 0, 0];
        cdr.extend((text.len() as u32).to_le_bytes());
        cdr.extend(text);
        let mut raw = Vec::new();
        Encoder::new(&mut raw)
            .map(3)
            .unwrap()
            .str("op")
            .unwrap()
            .str("publish")
            .unwrap()
            .str("topic")
            .unwrap()
            .str("/t")
            .unwrap()
            .str("msg")
            .unwrap()
            .map(3)
            .unwrap()
            .str("secs")
            .unwrap()
            .u64(9)
            .unwrap()
            .str("nsecs")
            .unwrap()
            .u32(0)
            .unwrap()
            .str("bytes")
            .unwrap()
            .bytes(&cdr)
            .unwrap();
        let got = Door::RosbridgeCborRaw
            .read(Kind::Text, &Message::Binary(raw.into()))
            .unwrap();
        assert_eq!(
            got,
            Read::Sample(Sample {
                seq: 4,
                stamp_ns: 1_000_000_002
            })
        );
        // JSON, and a status.
        let pubop = r#"{"op":"publish","topic":"/t","msg":{"data":"5 1 2 x"}}"#;
        let got = Door::RosbridgeJson
            .read(Kind::Text, &Message::Text(pubop.into()))
            .unwrap();
        assert_eq!(
            got,
            Read::Sample(Sample {
                seq: 5,
                stamp_ns: 1_000_000_002
            })
        );
        let status = r#"{"op":"status","level":"warning","msg":"dropped 3"}"#;
        assert_eq!(
            Door::RosbridgeJson.read(Kind::Text, &Message::Text(status.into())),
            Ok(Read::Status("dropped 3".into()))
        );
        // Foxglove: subscribe once the channel is advertised, then messageData frames.
        let adv = r#"{"op":"advertise","channels":[{"id":7,"topic":"/t","encoding":"cdr"}]}"#;
        let sub = Door::foxglove_subscribe(&Message::Text(adv.into()), "/t").unwrap();
        assert_eq!(
            sub,
            Message::Text(r#"{"op":"subscribe","subscriptions":[{"channelId":7,"id":1}]}"#.into())
        );
        assert!(Door::foxglove_subscribe(&Message::Text(adv.into()), "/u").is_none());
        let mut md = vec![1u8];
        md.extend(1u32.to_le_bytes());
        md.extend(0u64.to_le_bytes());
        md.extend(&cdr);
        assert_eq!(
            Door::Foxglove.read(Kind::Text, &Message::Binary(md.into())),
            Ok(Read::Sample(Sample {
                seq: 4,
                stamp_ns: 1_000_000_002
            }))
        );
        assert!(Door::Foxglove
            .read(Kind::Text, &Message::Binary(vec![1, 0].into()))
            .is_err());
        // Garbage is an error, not a panic.
        assert!(Door::RosbridgeCbor
            .read(Kind::Text, &Message::Binary(vec![0xff, 0x00].into()))
            .is_err());
    }
}
