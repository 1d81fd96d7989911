//! The rosbridge v2 operations a client sends, parsed from a JSON text frame or a CBOR binary
//! frame into typed [`Op`]s. Pure. A message body (`msg`, `args`, `values`) is kept as the
//! client wrote it (JSON text or CBOR bytes) until the type's codec turns it into CDR.

use serde::Deserialize;
use serde_json::value::RawValue;

/// A message body as the client sent it.
#[derive(Debug, Clone)]
pub enum Body {
    Json(Box<RawValue>),
    Cbor(Vec<u8>),
}

/// How a subscription's messages are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// JSON text frames.
    #[default]
    None,
    /// The whole `publish` op as CBOR (binary frames).
    Cbor,
    /// CBOR with the raw CDR: `msg: {secs, nsecs, bytes}`.
    CborRaw,
}

#[derive(Debug, Clone)]
pub struct Subscribe {
    pub id: Option<String>,
    pub topic: String,
    pub type_name: Option<String>,
    /// Least milliseconds between two messages.
    pub throttle_rate: u64,
    /// Messages kept for a slow client (0: the gateway's default).
    pub queue_length: usize,
    pub fragment_size: Option<usize>,
    pub compression: Compression,
}

/// One operation from a client.
#[derive(Debug, Clone)]
pub enum Op {
    Auth {
        token: String,
    },
    Advertise {
        id: Option<String>,
        topic: String,
        type_name: String,
    },
    Unadvertise {
        id: Option<String>,
        topic: String,
    },
    Publish {
        id: Option<String>,
        topic: String,
        msg: Body,
    },
    Subscribe(Subscribe),
    Unsubscribe {
        id: Option<String>,
        topic: String,
    },
    CallService {
        id: Option<String>,
        service: String,
        type_name: Option<String>,
        args: Option<Body>,
        /// Seconds.
        timeout: Option<f64>,
    },
    AdvertiseService {
        id: Option<String>,
        service: String,
        type_name: String,
    },
    UnadvertiseService {
        id: Option<String>,
        service: String,
    },
    ServiceResponse {
        id: Option<String>,
        service: String,
        values: Option<Body>,
        result: bool,
    },
    Fragment {
        id: String,
        data: String,
        num: usize,
        total: usize,
    },
    SetLevel {
        id: Option<String>,
        level: String,
    },
    SendActionGoal {
        id: Option<String>,
        action: String,
        action_type: Option<String>,
        args: Option<Body>,
        /// Whether the client wants `action_feedback` ops.
        feedback: bool,
    },
    CancelActionGoal {
        /// The `send_action_goal`'s id.
        id: Option<String>,
        action: String,
    },
    AdvertiseAction {
        id: Option<String>,
        action: String,
        type_name: String,
    },
    UnadvertiseAction {
        id: Option<String>,
        action: String,
    },
    ActionFeedback {
        id: Option<String>,
        action: String,
        values: Option<Body>,
    },
    ActionResult {
        id: Option<String>,
        action: String,
        values: Option<Body>,
        /// A GoalStatus code (4 succeeded, 5 canceled, 6 aborted).
        status: Option<i8>,
        result: bool,
    },
}

/// Why a frame is not an operation.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    #[error("malformed JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("malformed CBOR: {0}")]
    Cbor(String),
    #[error("an operation is an object with an \"op\" field")]
    NoOp,
    #[error("unknown op {0:?}")]
    UnknownOp(String),
    #[error("op {op}: missing field {field:?}")]
    Missing { op: String, field: &'static str },
    #[error("op {op}: field {field:?}: {why}")]
    Invalid {
        op: String,
        field: &'static str,
        why: String,
    },
}

/// A frame that is not an operation: the error, and the op's name and id when they were read
/// (the `status` reply carries the id).
#[derive(Debug)]
pub struct Refusal {
    pub op: Option<String>,
    pub id: Option<String>,
    pub error: OpError,
}

/// The fields of any op, before checking which the op needs.
#[derive(Debug, Default)]
struct Fields {
    op: Option<String>,
    id: Option<String>,
    topic: Option<String>,
    type_name: Option<String>,
    service: Option<String>,
    msg: Option<Body>,
    args: Option<Body>,
    values: Option<Body>,
    throttle_rate: Option<f64>,
    queue_length: Option<f64>,
    fragment_size: Option<f64>,
    compression: Option<String>,
    timeout: Option<f64>,
    result: Option<bool>,
    data: Option<String>,
    num: Option<f64>,
    total: Option<f64>,
    token: Option<String>,
    mac: Option<String>,
    level: Option<String>,
    action: Option<String>,
    action_type: Option<String>,
    feedback: Option<bool>,
    status: Option<f64>,
}

/// An id as clients write it: a string, or a number (kept as its text).
#[derive(Deserialize)]
#[serde(untagged)]
enum JsonId {
    Text(String),
    Number(serde_json::Number),
}

#[derive(Deserialize)]
struct JsonFields {
    op: Option<String>,
    id: Option<JsonId>,
    topic: Option<String>,
    #[serde(rename = "type")]
    type_name: Option<String>,
    service: Option<String>,
    msg: Option<Box<RawValue>>,
    args: Option<Box<RawValue>>,
    values: Option<Box<RawValue>>,
    throttle_rate: Option<f64>,
    queue_length: Option<f64>,
    fragment_size: Option<f64>,
    compression: Option<String>,
    timeout: Option<f64>,
    result: Option<bool>,
    data: Option<String>,
    num: Option<f64>,
    total: Option<f64>,
    token: Option<String>,
    mac: Option<String>,
    level: Option<String>,
    action: Option<String>,
    action_type: Option<String>,
    feedback: Option<bool>,
    status: Option<f64>,
}

/// Parses a JSON text frame.
pub fn parse_json(text: &[u8]) -> Result<Op, Refusal> {
    let refuse = |error| Refusal {
        op: None,
        id: None,
        error,
    };
    let v: JsonFields = serde_json::from_slice(text).map_err(|e| {
        // A valid JSON value that is not an object says so plainly.
        if e.classify() == serde_json::error::Category::Data
            && serde_json::from_slice::<serde_json::Value>(text).is_ok_and(|v| !v.is_object())
        {
            refuse(OpError::NoOp)
        } else {
            refuse(OpError::Json(e))
        }
    })?;
    let body = |b: Option<Box<RawValue>>| b.map(Body::Json);
    let f = Fields {
        op: v.op,
        id: v.id.map(|i| match i {
            JsonId::Text(s) => s,
            JsonId::Number(n) => n.to_string(),
        }),
        topic: v.topic,
        type_name: v.type_name,
        service: v.service,
        msg: body(v.msg),
        args: body(v.args),
        values: body(v.values),
        throttle_rate: v.throttle_rate,
        queue_length: v.queue_length,
        fragment_size: v.fragment_size,
        compression: v.compression,
        timeout: v.timeout,
        result: v.result,
        data: v.data,
        num: v.num,
        total: v.total,
        token: v.token,
        mac: v.mac,
        level: v.level,
        action: v.action,
        action_type: v.action_type,
        feedback: v.feedback,
        status: v.status,
    };
    f.into_op()
}

/// Parses a CBOR binary frame (a map with the same keys as the JSON form).
pub fn parse_cbor(bytes: &[u8]) -> Result<Op, Refusal> {
    read_cbor(bytes)
        .map_err(|e| Refusal {
            op: None,
            id: None,
            error: OpError::Cbor(e),
        })?
        .into_op()
}

fn read_cbor(bytes: &[u8]) -> Result<Fields, String> {
    use minicbor::data::Type;
    let mut d = minicbor::Decoder::new(bytes);
    let e = |e: minicbor::decode::Error| e.to_string();
    let len = match d.datatype().map_err(e)? {
        Type::Map | Type::MapIndef => d.map().map_err(e)?,
        other => return Err(format!("an operation is a map, not {other}")),
    };
    let mut f = Fields::default();
    let mut seen = 0u64;
    loop {
        match len {
            Some(n) if seen >= n => break,
            None if d.datatype().map_err(e)? == Type::Break => {
                d.skip().map_err(e)?;
                break;
            }
            _ => {}
        }
        seen += 1;
        let key = match d.datatype().map_err(e)? {
            Type::String => d.str().map_err(e)?.to_string(),
            _ => {
                d.skip().map_err(e)?;
                d.skip().map_err(e)?;
                continue;
            }
        };
        let text = |d: &mut minicbor::Decoder| -> Result<String, String> {
            match d.datatype().map_err(e)? {
                Type::String => Ok(d.str().map_err(e)?.to_string()),
                Type::U8 | Type::U16 | Type::U32 | Type::U64 => Ok(d.u64().map_err(e)?.to_string()),
                Type::I8 | Type::I16 | Type::I32 | Type::I64 => Ok(d.i64().map_err(e)?.to_string()),
                t => Err(format!("field {key:?}: expected a string, found {t}")),
            }
        };
        let number = |d: &mut minicbor::Decoder| -> Result<f64, String> {
            match d.datatype().map_err(e)? {
                Type::U8 | Type::U16 | Type::U32 | Type::U64 => Ok(d.u64().map_err(e)? as f64),
                Type::I8 | Type::I16 | Type::I32 | Type::I64 => Ok(d.i64().map_err(e)? as f64),
                Type::F16 | Type::F32 => Ok(d.f32().map_err(e)? as f64),
                Type::F64 => d.f64().map_err(e),
                Type::Null => {
                    d.skip().map_err(e)?;
                    Ok(0.0)
                }
                t => Err(format!("field {key:?}: expected a number, found {t}")),
            }
        };
        let start = d.position();
        match key.as_str() {
            "op" => match d.datatype().map_err(e)? {
                Type::String => f.op = Some(d.str().map_err(e)?.to_string()),
                t => return Err(format!("field \"op\": expected a string, found {t}")),
            },
            "id" => f.id = Some(text(&mut d)?),
            "topic" => f.topic = Some(text(&mut d)?),
            "type" => f.type_name = Some(text(&mut d)?),
            "service" => f.service = Some(text(&mut d)?),
            "compression" => f.compression = Some(text(&mut d)?),
            "data" => f.data = Some(text(&mut d)?),
            "token" => f.token = Some(text(&mut d)?),
            "mac" => f.mac = Some(text(&mut d)?),
            "level" => f.level = Some(text(&mut d)?),
            "action" => f.action = Some(text(&mut d)?),
            "action_type" => f.action_type = Some(text(&mut d)?),
            "feedback" => f.feedback = Some(d.bool().map_err(e)?),
            "status" => f.status = Some(number(&mut d)?),
            "throttle_rate" => f.throttle_rate = Some(number(&mut d)?),
            "queue_length" => f.queue_length = Some(number(&mut d)?),
            "fragment_size" => f.fragment_size = Some(number(&mut d)?),
            "timeout" => f.timeout = Some(number(&mut d)?),
            "num" => f.num = Some(number(&mut d)?),
            "total" => f.total = Some(number(&mut d)?),
            "result" => f.result = Some(d.bool().map_err(e)?),
            "msg" | "args" | "values" => {
                d.skip().map_err(e)?;
                let body = Some(Body::Cbor(bytes[start..d.position()].to_vec()));
                match key.as_str() {
                    "msg" => f.msg = body,
                    "args" => f.args = body,
                    _ => f.values = body,
                }
            }
            _ => d.skip().map_err(e)?,
        }
    }
    if d.position() != bytes.len() {
        return Err(format!(
            "{} bytes after the operation's map",
            bytes.len() - d.position()
        ));
    }
    Ok(f)
}

impl Fields {
    fn into_op(mut self) -> Result<Op, Refusal> {
        let Some(op) = self.op.take() else {
            return Err(Refusal {
                op: None,
                id: self.id,
                error: OpError::NoOp,
            });
        };
        let id = self.id.clone();
        self.check(&op).map_err(|error| Refusal {
            op: Some(op.clone()),
            id,
            error,
        })
    }

    fn check(self, op: &str) -> Result<Op, OpError> {
        let missing = |field| OpError::Missing {
            op: op.to_string(),
            field,
        };
        let invalid = |field, why: String| OpError::Invalid {
            op: op.to_string(),
            field,
            why,
        };
        let count = |field, v: Option<f64>| -> Result<Option<u64>, OpError> {
            match v {
                None => Ok(None),
                Some(x) if x.is_finite() && x >= 0.0 && x <= u32::MAX as f64 => Ok(Some(x as u64)),
                Some(x) => Err(invalid(
                    field,
                    format!("{x} is not a count from 0 to {}", u32::MAX),
                )),
            }
        };
        let id = self.id;
        Ok(match op {
            "auth" => Op::Auth {
                token: self.token.or(self.mac).ok_or_else(|| missing("token"))?,
            },
            "advertise" => Op::Advertise {
                id,
                topic: self.topic.ok_or_else(|| missing("topic"))?,
                type_name: self.type_name.ok_or_else(|| missing("type"))?,
            },
            "unadvertise" => Op::Unadvertise {
                id,
                topic: self.topic.ok_or_else(|| missing("topic"))?,
            },
            "publish" => Op::Publish {
                id,
                topic: self.topic.ok_or_else(|| missing("topic"))?,
                msg: self.msg.ok_or_else(|| missing("msg"))?,
            },
            "subscribe" => {
                let compression = match self.compression.as_deref() {
                    None | Some("none") | Some("") => Compression::None,
                    Some("cbor") => Compression::Cbor,
                    Some("cbor-raw") => Compression::CborRaw,
                    Some(other) => {
                        return Err(invalid(
                            "compression",
                            format!(
                                "{other:?} is not one of none, cbor, cbor-raw (png is not offered)"
                            ),
                        ))
                    }
                };
                Op::Subscribe(Subscribe {
                    id,
                    topic: self.topic.ok_or_else(|| missing("topic"))?,
                    type_name: self.type_name.filter(|t| !t.is_empty()),
                    throttle_rate: count("throttle_rate", self.throttle_rate)?.unwrap_or(0),
                    queue_length: count("queue_length", self.queue_length)?.unwrap_or(0) as usize,
                    fragment_size: count("fragment_size", self.fragment_size)?
                        .filter(|n| *n > 0)
                        .map(|n| n as usize),
                    compression,
                })
            }
            "unsubscribe" => Op::Unsubscribe {
                id,
                topic: self.topic.ok_or_else(|| missing("topic"))?,
            },
            "call_service" => Op::CallService {
                id,
                service: self.service.ok_or_else(|| missing("service"))?,
                type_name: self.type_name.filter(|t| !t.is_empty()),
                args: self.args,
                timeout: match self.timeout {
                    Some(t) if !(t.is_finite() && t >= 0.0) => {
                        return Err(invalid(
                            "timeout",
                            format!("{t} is not a number of seconds"),
                        ))
                    }
                    t => t.filter(|t| *t > 0.0),
                },
            },
            "advertise_service" => Op::AdvertiseService {
                id,
                service: self.service.ok_or_else(|| missing("service"))?,
                type_name: self.type_name.ok_or_else(|| missing("type"))?,
            },
            "unadvertise_service" => Op::UnadvertiseService {
                id,
                service: self.service.ok_or_else(|| missing("service"))?,
            },
            "service_response" => Op::ServiceResponse {
                id,
                service: self.service.ok_or_else(|| missing("service"))?,
                values: self.values,
                result: self.result.unwrap_or(true),
            },
            "fragment" => Op::Fragment {
                id: id.ok_or_else(|| missing("id"))?,
                data: self.data.ok_or_else(|| missing("data"))?,
                num: count("num", self.num)?.ok_or_else(|| missing("num"))? as usize,
                total: count("total", self.total)?.ok_or_else(|| missing("total"))? as usize,
            },
            "set_level" => Op::SetLevel {
                id,
                level: self.level.unwrap_or_else(|| "error".into()),
            },
            "send_action_goal" => Op::SendActionGoal {
                id,
                action: self.action.ok_or_else(|| missing("action"))?,
                action_type: self
                    .action_type
                    .or(self.type_name)
                    .filter(|t| !t.is_empty()),
                args: self.args,
                feedback: self.feedback.unwrap_or(false),
            },
            "cancel_action_goal" => Op::CancelActionGoal {
                id,
                action: self.action.ok_or_else(|| missing("action"))?,
            },
            "advertise_action" => Op::AdvertiseAction {
                id,
                action: self.action.ok_or_else(|| missing("action"))?,
                type_name: self
                    .type_name
                    .or(self.action_type)
                    .ok_or_else(|| missing("type"))?,
            },
            "unadvertise_action" => Op::UnadvertiseAction {
                id,
                action: self.action.ok_or_else(|| missing("action"))?,
            },
            "action_feedback" => Op::ActionFeedback {
                id,
                action: self.action.ok_or_else(|| missing("action"))?,
                values: self.values,
            },
            "action_result" => Op::ActionResult {
                id,
                action: self.action.ok_or_else(|| missing("action"))?,
                values: self.values,
                status: match self.status {
                    None => None,
                    Some(x) if x.fract() == 0.0 && (0.0..=6.0).contains(&x) => Some(x as i8),
                    Some(x) => {
                        return Err(invalid(
                            "status",
                            format!(
                                "{x} is not a goal status (4 succeeded, 5 canceled, 6 aborted)"
                            ),
                        ))
                    }
                },
                result: self.result.unwrap_or(true),
            },
            other => return Err(OpError::UnknownOp(other.to_string())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(s: &str) -> Op {
        parse_json(s.as_bytes()).unwrap_or_else(|r| panic!("{s}: {}", r.error))
    }

    fn refused(s: &[u8]) -> Refusal {
        match parse_json(s) {
            Ok(op) => panic!("accepted {op:?}"),
            Err(r) => r,
        }
    }

    #[test]
    fn roslibpy_ops_parse_into_typed_ops() {
        match json(
            r#"{"op":"subscribe","id":"subscribe:/chatter:1","type":"std_msgs/String","topic":"/chatter","compression":"none","throttle_rate":0,"queue_length":0}"#,
        ) {
            Op::Subscribe(s) => {
                assert_eq!(s.id.as_deref(), Some("subscribe:/chatter:1"));
                assert_eq!(s.topic, "/chatter");
                assert_eq!(s.type_name.as_deref(), Some("std_msgs/String"));
                assert_eq!(
                    (s.throttle_rate, s.queue_length, s.compression),
                    (0, 0, Compression::None)
                );
                assert_eq!(s.fragment_size, None);
            }
            op => panic!("{op:?}"),
        }
        match json(
            r#"{"op":"publish","id":"publish:/chatter:2","topic":"/chatter","msg":{"data":"hi"},"latch":false}"#,
        ) {
            Op::Publish {
                msg: Body::Json(m), ..
            } => assert_eq!(m.get(), r#"{"data":"hi"}"#),
            op => panic!("{op:?}"),
        }
        match json(r#"{"op":"call_service","id":7,"service":"/add","args":[1,2],"timeout":2.5}"#) {
            Op::CallService {
                id,
                args: Some(Body::Json(a)),
                timeout,
                ..
            } => {
                assert_eq!(id.as_deref(), Some("7"));
                assert_eq!(a.get(), "[1,2]");
                assert_eq!(timeout, Some(2.5));
            }
            op => panic!("{op:?}"),
        }
        match json(
            r#"{"op":"auth","mac":"tok","client":"","dest":"","rand":"","t":0,"level":"user","end":0}"#,
        ) {
            Op::Auth { token } => assert_eq!(token, "tok"),
            op => panic!("{op:?}"),
        }
        assert!(matches!(
            json(r#"{"op":"set_level","level":"warning"}"#),
            Op::SetLevel { .. }
        ));
    }

    #[test]
    fn bad_frames_are_refused_with_what_is_wrong_and_the_op_id() {
        let r = refused(b"{\"op\":\"publish\",");
        assert!(
            r.error.to_string().starts_with("malformed JSON: EOF"),
            "{}",
            r.error
        );
        assert!(matches!(refused(b"[1,2]").error, OpError::NoOp));
        assert!(matches!(refused(b"{\"id\":\"x\"}").error, OpError::NoOp));
        let r = refused(br#"{"op":"launch_missiles","id":"a1"}"#);
        assert_eq!(r.id.as_deref(), Some("a1"));
        assert_eq!(r.error.to_string(), "unknown op \"launch_missiles\"");
        let r = refused(br#"{"op":"publish","id":"p","topic":"/x"}"#);
        assert_eq!(r.error.to_string(), "op publish: missing field \"msg\"");
        assert_eq!(r.id.as_deref(), Some("p"));
        let r = refused(br#"{"op":"subscribe","topic":"/x","compression":"png"}"#);
        assert!(
            r.error.to_string().contains("png is not offered"),
            "{}",
            r.error
        );
        let r = refused(br#"{"op":"subscribe","topic":"/x","queue_length":-1}"#);
        assert!(r.error.to_string().contains("queue_length"), "{}", r.error);
        let r = refused(br#"{"op":"subscribe","topic":7}"#);
        assert!(r.error.to_string().contains("invalid type"), "{}", r.error);
        assert!(matches!(
            refused(br#"{"op":"send_action_goal","id":"g"}"#).error,
            OpError::Missing {
                field: "action",
                ..
            }
        ));
        assert!(matches!(
            refused(br#"{"op":"action_result","action":"/f","status":9}"#).error,
            OpError::Invalid {
                field: "status",
                ..
            }
        ));
    }

    fn cbor(build: impl FnOnce(&mut minicbor::Encoder<&mut Vec<u8>>)) -> Vec<u8> {
        let mut v = Vec::new();
        build(&mut minicbor::Encoder::new(&mut v));
        v
    }

    #[test]
    fn cbor_frames_parse_like_json_and_keep_the_body_bytes() {
        let msg = cbor(|e| {
            e.map(1).unwrap().str("data").unwrap().str("hi").unwrap();
        });
        let frame = cbor(|e| {
            e.map(4).unwrap();
            e.str("op").unwrap().str("publish").unwrap();
            e.str("id").unwrap().u32(9).unwrap();
            e.str("topic").unwrap().str("/chatter").unwrap();
            e.str("msg").unwrap();
        });
        let frame = [frame, msg.clone()].concat();
        match parse_cbor(&frame).unwrap() {
            Op::Publish {
                id,
                topic,
                msg: Body::Cbor(m),
            } => {
                assert_eq!(id.as_deref(), Some("9"));
                assert_eq!(topic, "/chatter");
                assert_eq!(m, msg);
            }
            op => panic!("{op:?}"),
        }
        // Indefinite-length maps too.
        let frame = cbor(|e| {
            e.begin_map().unwrap();
            e.str("op").unwrap().str("subscribe").unwrap();
            e.str("topic").unwrap().str("/a").unwrap();
            e.str("throttle_rate").unwrap().f64(100.0).unwrap();
            e.end().unwrap();
        });
        assert!(matches!(parse_cbor(&frame).unwrap(), Op::Subscribe(s) if s.throttle_rate == 100));
        for bad in [&[0xa1u8, 0x62, b'o'][..], &[0x82, 1, 2], &[0xff], &[]] {
            let r = parse_cbor(bad).unwrap_err();
            assert!(
                r.error.to_string().starts_with("malformed CBOR"),
                "{:?}: {}",
                bad,
                r.error
            );
        }
        let r = parse_cbor(&cbor(|e| {
            e.map(1).unwrap().str("op").unwrap().u8(3).unwrap();
        }))
        .unwrap_err();
        assert!(
            r.error.to_string().contains("expected a string"),
            "{}",
            r.error
        );
    }
}
