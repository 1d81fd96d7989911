//! What the gateway sends to a rosbridge client, encoded. Pure. Message bodies arrive already
//! converted by the type's codec (JSON text or CBOR bytes) and are pasted in, not re-parsed.

use minicbor::Encoder;

/// A frame for the WebSocket: text (JSON) or binary (CBOR).
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

/// Status levels, as rosbridge names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Info,
    Warning,
    Error,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "info" | "debug" => Some(Level::Info),
            "warning" | "warn" => Some(Level::Warning),
            "error" | "none" => Some(Level::Error),
            _ => None,
        }
    }
}

fn quoted(s: &str) -> String {
    // Serializing a &str cannot fail.
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// `{"op":"status","level":..,"msg":..,"id":..}`.
pub fn status(level: Level, msg: &str, id: Option<&str>) -> String {
    let mut out = format!(
        r#"{{"op":"status","level":"{}","msg":{}"#,
        level.name(),
        quoted(msg)
    );
    if let Some(id) = id {
        out += &format!(r#","id":{}"#, quoted(id));
    }
    out.push('}');
    out
}

/// A message of a subscription as JSON: `{"op":"publish","topic":..,"msg":MSG}`.
pub fn publish_json(topic: &str, msg_json: &[u8]) -> String {
    let mut out = String::with_capacity(msg_json.len() + topic.len() + 40);
    out += r#"{"op":"publish","topic":"#;
    out += &quoted(topic);
    out += r#","msg":"#;
    // The codec writes UTF-8 JSON.
    out += &String::from_utf8_lossy(msg_json);
    out.push('}');
    out
}

fn publish_head(out: &mut Vec<u8>, topic: &str) {
    let mut e = Encoder::new(out);
    // Writing to a Vec cannot fail.
    let _ = e
        .map(3)
        .and_then(|e| e.str("op"))
        .and_then(|e| e.str("publish"))
        .and_then(|e| e.str("topic"))
        .and_then(|e| e.str(topic))
        .and_then(|e| e.str("msg"));
}

/// A message as rosbridge's `compression: cbor`: the publish op as CBOR with the message's
/// CBOR (from the codec) as `msg`.
pub fn publish_cbor(topic: &str, msg_cbor: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(msg_cbor.len() + topic.len() + 24);
    publish_head(&mut out, topic);
    out.extend_from_slice(msg_cbor);
    out
}

/// A message as rosbridge's `compression: cbor-raw`: `msg: {secs, nsecs, bytes}`, the bytes
/// being the CDR with its encapsulation header, the time when the gateway received it.
pub fn publish_cbor_raw(topic: &str, secs: u64, nsecs: u32, cdr: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(cdr.len() + topic.len() + 48);
    publish_head(&mut out, topic);
    let mut e = Encoder::new(&mut out);
    let _ = e
        .map(3)
        .and_then(|e| e.str("secs"))
        .and_then(|e| e.u64(secs))
        .and_then(|e| e.str("nsecs"))
        .and_then(|e| e.u32(nsecs))
        .and_then(|e| e.str("bytes"))
        .and_then(|e| e.bytes(cdr));
    out
}

/// A service's answer: `values` is the reply as JSON on success, the reason as a string on
/// failure (`result: false`), as rosbridge does.
pub fn service_response(service: &str, id: Option<&str>, outcome: Result<&[u8], &str>) -> String {
    let mut out = format!(r#"{{"op":"service_response","service":{}"#, quoted(service));
    if let Some(id) = id {
        out += &format!(r#","id":{}"#, quoted(id));
    }
    match outcome {
        Ok(values) => {
            out += r#","values":"#;
            out += &String::from_utf8_lossy(values);
            out += r#","result":true}"#;
        }
        Err(why) => {
            out += &format!(r#","values":{},"result":false}}"#, quoted(why));
        }
    }
    out
}

/// A request for a service the client serves (`advertise_service`).
pub fn call_service(service: &str, id: &str, args_json: &[u8]) -> String {
    format!(
        r#"{{"op":"call_service","service":{},"id":{},"args":{}}}"#,
        quoted(service),
        quoted(id),
        String::from_utf8_lossy(args_json)
    )
}

/// Feedback of a goal a client sent.
pub fn action_feedback(action: &str, id: &str, values_json: &[u8]) -> String {
    format!(
        r#"{{"op":"action_feedback","action":{},"id":{},"values":{}}}"#,
        quoted(action),
        quoted(id),
        String::from_utf8_lossy(values_json)
    )
}

/// A goal's end: its result and status on success; the reason as `values` and `result:
/// false` when it could not be had.
pub fn action_result(action: &str, id: &str, outcome: Result<(&[u8], i8), &str>) -> String {
    match outcome {
        Ok((values, status)) => format!(
            r#"{{"op":"action_result","action":{},"id":{},"values":{},"status":{status},"result":true}}"#,
            quoted(action),
            quoted(id),
            String::from_utf8_lossy(values)
        ),
        Err(why) => format!(
            r#"{{"op":"action_result","action":{},"id":{},"values":{},"status":6,"result":false}}"#,
            quoted(action),
            quoted(id),
            quoted(why)
        ),
    }
}

/// A goal for an action the client serves (`advertise_action`).
pub fn send_action_goal(action: &str, action_type: &str, id: &str, args_json: &[u8]) -> String {
    format!(
        r#"{{"op":"send_action_goal","action":{},"action_type":{},"id":{},"args":{},"feedback":true}}"#,
        quoted(action),
        quoted(action_type),
        quoted(id),
        String::from_utf8_lossy(args_json)
    )
}

/// A cancel request for a goal the client serves.
pub fn cancel_action_goal(action: &str, id: &str) -> String {
    format!(
        r#"{{"op":"cancel_action_goal","action":{},"id":{}}}"#,
        quoted(action),
        quoted(id)
    )
}

/// A text split into `fragment` ops of at most `size` bytes of data each (cut at character
/// boundaries), as rosbridge's `fragment_size` does; the text itself when it fits.
pub fn fragments(id: &str, text: String, size: usize) -> Vec<String> {
    let size = size.max(4);
    if text.len() <= size {
        return vec![text];
    }
    let mut parts = Vec::new();
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let mut end = rest.len().min(size);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (a, b) = rest.split_at(end);
        parts.push(a);
        rest = b;
    }
    let total = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(num, data)| {
            format!(
                r#"{{"op":"fragment","id":{},"data":{},"num":{num},"total":{total}}}"#,
                quoted(id),
                quoted(data)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn v(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn json_ops_are_what_rosbridge_sends() {
        assert_eq!(
            v(&status(Level::Error, "no \"x\"", Some("a1"))),
            json!({"op":"status","level":"error","msg":"no \"x\"","id":"a1"})
        );
        assert_eq!(
            v(&publish_json("/chatter", br#"{"data":"hi"}"#)),
            json!({"op":"publish","topic":"/chatter","msg":{"data":"hi"}})
        );
        assert_eq!(
            v(&service_response("/add", Some("c1"), Ok(br#"{"sum":3}"#))),
            json!({"op":"service_response","service":"/add","id":"c1","values":{"sum":3},"result":true})
        );
        assert_eq!(
            v(&service_response("/add", None, Err("no server"))),
            json!({"op":"service_response","service":"/add","values":"no server","result":false})
        );
        assert_eq!(
            v(&call_service("/s", "r1", br#"{"a":1}"#)),
            json!({"op":"call_service","service":"/s","id":"r1","args":{"a":1}})
        );
    }

    #[test]
    fn action_ops_are_what_roslibpy_reads() {
        assert_eq!(
            v(&action_feedback("/fib", "g1", br#"{"sequence":[0,1]}"#)),
            json!({"op":"action_feedback","action":"/fib","id":"g1","values":{"sequence":[0,1]}})
        );
        assert_eq!(
            v(&action_result(
                "/fib",
                "g1",
                Ok((br#"{"sequence":[0,1,1]}"#, 4))
            )),
            json!({"op":"action_result","action":"/fib","id":"g1","values":{"sequence":[0,1,1]},"status":4,"result":true})
        );
        assert_eq!(
            v(&action_result("/fib", "g1", Err("no server"))),
            json!({"op":"action_result","action":"/fib","id":"g1","values":"no server","status":6,"result":false})
        );
        assert_eq!(
            v(&send_action_goal(
                "/fib",
                "example_interfaces/action/Fibonacci",
                "a1",
                br#"{"order":4}"#
            )),
            json!({"op":"send_action_goal","action":"/fib","action_type":"example_interfaces/action/Fibonacci","id":"a1","args":{"order":4},"feedback":true})
        );
        assert_eq!(
            v(&cancel_action_goal("/fib", "a1")),
            json!({"op":"cancel_action_goal","action":"/fib","id":"a1"})
        );
    }

    #[test]
    fn cbor_raw_carries_the_cdr_and_the_receipt_time() {
        let frame = publish_cbor_raw("/t", 5, 6, &[0, 1, 0, 0, 9]);
        let mut d = minicbor::Decoder::new(&frame);
        assert_eq!(d.map().unwrap(), Some(3));
        assert_eq!((d.str().unwrap(), d.str().unwrap()), ("op", "publish"));
        assert_eq!((d.str().unwrap(), d.str().unwrap()), ("topic", "/t"));
        assert_eq!(d.str().unwrap(), "msg");
        assert_eq!(d.map().unwrap(), Some(3));
        assert_eq!((d.str().unwrap(), d.u64().unwrap()), ("secs", 5));
        assert_eq!((d.str().unwrap(), d.u32().unwrap()), ("nsecs", 6));
        assert_eq!(
            (d.str().unwrap(), d.bytes().unwrap()),
            ("bytes", &[0, 1, 0, 0, 9][..])
        );
        assert_eq!(d.position(), frame.len());
    }

    #[test]
    fn fragments_reassemble_into_the_text_and_respect_characters() {
        let text = publish_json("/t", "{\"data\":\"héllo wörld ✓✓✓\"}".as_bytes());
        let parts = fragments("f", text.clone(), 7);
        assert!(parts.len() > 3);
        let mut whole = String::new();
        for (i, p) in parts.iter().enumerate() {
            let f = v(p);
            assert_eq!(f["num"], i);
            assert_eq!(f["total"], parts.len());
            assert!(f["data"].as_str().unwrap().len() <= 7);
            whole += f["data"].as_str().unwrap();
        }
        assert_eq!(whole, text);
        assert_eq!(fragments("f", "{}".into(), 100), vec!["{}".to_string()]);
    }
}
