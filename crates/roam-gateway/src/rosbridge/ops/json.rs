//! Op fields from a JSON text frame.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Body, Fields, Op, OpError, Refusal};

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
