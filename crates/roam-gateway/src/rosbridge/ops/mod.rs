//! The rosbridge v2 operations a client sends, parsed from a JSON text frame or a CBOR binary
//! frame into typed [`Op`]s. Pure. A message body (`msg`, `args`, `values`) is kept as the
//! client wrote it (JSON text or CBOR bytes) until the type's codec turns it into CDR.

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

mod cbor;
mod json;

pub use cbor::parse_cbor;
pub use json::parse_json;

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
mod tests;
