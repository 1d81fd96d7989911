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

// Only rosbridge's three encodings so far; the Foxglove door will be `Foxglove`.
#[allow(clippy::enum_variant_names)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Door {
    /// rosbridge v2, `compression: none`: JSON text frames, binary fields in base64.
    RosbridgeJson,
    /// rosbridge v2, `compression: cbor`: the message as CBOR.
    RosbridgeCbor,
    /// rosbridge v2, `compression: cbor-raw`: the message's CDR bytes in a CBOR frame.
    RosbridgeCborRaw,
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
    pub const ROSBRIDGE: [Door; 3] = [
        Door::RosbridgeJson,
        Door::RosbridgeCbor,
        Door::RosbridgeCborRaw,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Door::RosbridgeJson => "rosbridge-json",
            Door::RosbridgeCbor => "rosbridge-cbor",
            Door::RosbridgeCborRaw => "rosbridge-cbor-raw",
        }
    }

    /// The URL a client opens on a gateway whose rosbridge door is at `port`.
    pub fn url(self, port: u16) -> String {
        format!("ws://127.0.0.1:{port}/")
    }

    /// The frames that subscribe to `topic` (rosbridge's default queue_length, as roslibpy and
    /// roslibjs leave it unless told).
    pub fn subscribe_ops(self, topic: &str, kind: Kind) -> Vec<Message> {
        let compression = match self {
            Door::RosbridgeJson => "none",
            Door::RosbridgeCbor => "cbor",
            Door::RosbridgeCborRaw => "cbor-raw",
        };
        let op = serde_json::json!({"op": "subscribe", "id": format!("bench-{topic}"),
            "topic": topic, "type": kind.type_name(), "compression": compression});
        vec![Message::Text(op.to_string().into())]
    }

    /// What `frame` holds, decoded as a client of this door decodes it.
    pub fn read(self, kind: Kind, frame: &Message) -> Result<Read, String> {
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
        // Garbage is an error, not a panic.
        assert!(Door::RosbridgeCbor
            .read(Kind::Text, &Message::Binary(vec![0xff, 0x00].into()))
            .is_err());
    }
}
