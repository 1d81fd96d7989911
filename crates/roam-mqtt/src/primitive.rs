//! mqtt_client's primitive mode: std_msgs scalars, strings and `UInt8MultiArray` as plain text
//! on MQTT, for devices that are not ROS.
//!
//! Out: the value as C++'s `std::to_string` prints it (`true`/`false`, integers, floats with
//! six decimals), strings and byte arrays as they are. In, with no fixed type: probed as bool
//! (`true`/`false`, any case) -> `Int32` -> `Float32` -> `String`, as mqtt_client does; with a
//! fixed type: parsed as that type (bools also `1`/`0`), refused if it does not fit.

use crate::cdr::{Reader, Writer};
use crate::wire::WireError;

/// The std_msgs types primitive mode knows (short names).
pub const TYPES: &[&str] = &[
    "String",
    "Bool",
    "Char",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Float32",
    "Float64",
    "UInt8MultiArray",
];

/// `std_msgs/msg/X` or `std_msgs/X` to `X` if it is a primitive type.
pub fn short_name(ros_type: &str) -> Option<&'static str> {
    let rest = ros_type.strip_prefix("std_msgs/")?;
    let name = rest.strip_prefix("msg/").unwrap_or(rest);
    TYPES.iter().copied().find(|t| *t == name)
}

/// The text a primitive message becomes, or `None` if the type is not primitive.
pub fn to_text(ros_type: &str, cdr: &[u8]) -> Option<Result<Vec<u8>, WireError>> {
    let name = short_name(ros_type)?;
    Some(read_text(name, cdr))
}

fn read_text(name: &str, cdr: &[u8]) -> Result<Vec<u8>, WireError> {
    let mut r = Reader::new(cdr, "primitive message")?;
    let text = match name {
        "String" => return Ok(r.string()?.into_bytes()),
        "Bool" => match r.u8()? {
            0 => "false".to_string(),
            _ => "true".to_string(),
        },
        "Char" | "UInt8" => r.u8()?.to_string(),
        "Int8" => (r.u8()? as i8).to_string(),
        "UInt16" => r.u16()?.to_string(),
        "Int16" => (r.u16()? as i16).to_string(),
        "UInt32" => r.u32()?.to_string(),
        "Int32" => r.i32()?.to_string(),
        "UInt64" => r.u64()?.to_string(),
        "Int64" => (r.u64()? as i64).to_string(),
        "Float32" => c_float(r.f32()? as f64),
        "Float64" => c_float(r.f64()?),
        _ => {
            // UInt8MultiArray: layout (dimensions, data_offset), then the bytes.
            let dims = r.u32()?;
            if dims as usize > cdr.len() {
                return Err(WireError::Invalid {
                    what: "UInt8MultiArray",
                    detail: format!("{dims} dimensions in {} bytes", cdr.len()),
                });
            }
            for _ in 0..dims {
                r.string()?;
                r.u32()?;
                r.u32()?;
            }
            r.u32()?;
            return Ok(r.bytes()?.to_vec());
        }
    };
    Ok(text.into_bytes())
}

/// `std::to_string(double)`: `%f`.
fn c_float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{v:.6}")
    }
}

/// A text from MQTT with no fixed type: its type (`std_msgs/msg/...`) and CDR.
pub fn probe(text: &[u8]) -> (&'static str, Vec<u8>) {
    let s = String::from_utf8_lossy(text);
    let lower = s.to_ascii_lowercase();
    let mut w = Writer::new();
    if lower == "true" || lower == "false" {
        w.u8((lower == "true") as u8);
        return ("std_msgs/msg/Bool", w.finish());
    }
    if let Some(i) = c_int::<i32>(&s) {
        w.i32(i);
        return ("std_msgs/msg/Int32", w.finish());
    }
    if let Some(f) = c_float32_parse(&s) {
        w.f32(f);
        return ("std_msgs/msg/Float32", w.finish());
    }
    w.string(&s);
    ("std_msgs/msg/String", w.finish())
}

/// A text from MQTT as the fixed primitive type `ros_type`.
pub fn parse_fixed(ros_type: &str, text: &[u8]) -> Result<Vec<u8>, WireError> {
    let name = short_name(ros_type).ok_or_else(|| WireError::Invalid {
        what: "primitive",
        detail: format!("{ros_type} is not a primitive type"),
    })?;
    let s = String::from_utf8_lossy(text);
    let bad = || WireError::Invalid {
        what: "primitive",
        detail: format!(
            "`{}` is not a {name}",
            s.chars().take(40).collect::<String>()
        ),
    };
    let mut w = Writer::new();
    match name {
        "String" => w.string(&s),
        "Bool" => match s.to_ascii_lowercase().as_str() {
            "true" | "1" => w.u8(1),
            "false" | "0" => w.u8(0),
            _ => return Err(bad()),
        },
        "Char" | "Int8" => w.u8(c_int::<i8>(&s).ok_or_else(bad)? as u8),
        "UInt8" => w.u8(c_int::<u8>(&s).ok_or_else(bad)?),
        "UInt16" => w.u16(c_int::<u16>(&s).ok_or_else(bad)?),
        "Int16" => w.u16(c_int::<i16>(&s).ok_or_else(bad)? as u16),
        "UInt32" => w.u32(c_int::<u32>(&s).ok_or_else(bad)?),
        "Int32" => w.i32(c_int::<i32>(&s).ok_or_else(bad)?),
        "UInt64" => w.u64(c_int::<u64>(&s).ok_or_else(bad)?),
        "Int64" => w.u64(c_int::<i64>(&s).ok_or_else(bad)? as u64),
        "Float32" => w.f32(c_float32_parse(&s).ok_or_else(bad)?),
        "Float64" => w.f64(c_float_parse(&s).ok_or_else(bad)?),
        _ => {
            // UInt8MultiArray: no dimensions, offset 0, the bytes as they came.
            w.u32(0);
            w.u32(0);
            w.bytes(text);
        }
    }
    Ok(w.finish())
}

/// `std::stoi`-like: leading whitespace, a sign, digits, and nothing after them.
fn c_int<T: std::str::FromStr>(s: &str) -> Option<T> {
    let t = s.trim_start();
    if t.is_empty() || t.ends_with(char::is_whitespace) {
        return None;
    }
    t.parse().ok()
}

/// `std::stof`-like: a decimal float, `inf` or `nan`, and nothing after it; a finite text
/// that overflows is no float (stof throws out_of_range).
fn c_float_parse(s: &str) -> Option<f64> {
    let t = s.trim_start();
    if t.is_empty() || t.ends_with(char::is_whitespace) {
        return None;
    }
    let v: f64 = t.parse().ok()?;
    let named = t.trim_start_matches(['+', '-']).to_ascii_lowercase();
    let explicit_inf = named.starts_with("inf");
    if v.is_infinite() && !explicit_inf {
        return None;
    }
    Some(v)
}

/// As [`c_float_parse`], for a `float32`: a finite text beyond its range is no float; `nan`
/// is a NaN, as `std::stof` reads it.
fn c_float32_parse(s: &str) -> Option<f32> {
    let v = c_float_parse(s)?;
    let f = v as f32;
    (f.is_finite() || v.is_infinite() || v.is_nan()).then_some(f)
}

#[cfg(test)]
#[path = "primitive_tests.rs"]
mod tests;
