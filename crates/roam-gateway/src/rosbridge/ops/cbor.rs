//! Op fields from a CBOR binary frame.

use super::{Body, Fields, Op, OpError, Refusal};

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
