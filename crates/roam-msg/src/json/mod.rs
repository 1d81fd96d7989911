//! CDR <-> JSON with rosbridge v2's conventions (see `docs/messages.md`).

mod floats;
pub(crate) mod sink;

use crate::cdr::read::{read_struct, Cursor};
use crate::error::{DecodeError, EncodeError};
pub use crate::input::json_lex::MAX_JSON_DEPTH;
use crate::layout::MessageType;
use crate::EncodeOptions;
use sink::JsonSink;

/// Appends the JSON text of a CDR message (with its 4-byte encapsulation header) to `out`.
/// On error `out` is left as it was.
pub fn cdr_to_json(ty: &MessageType, cdr: &[u8], out: &mut Vec<u8>) -> Result<(), DecodeError> {
    let start = out.len();
    let r = Cursor::new(cdr).and_then(|mut c| {
        read_struct(&mut c, &ty.0, &mut JsonSink { out: &mut *out })?;
        c.finish()
    });
    if r.is_err() {
        out.truncate(start);
    }
    r
}

/// Appends the CDR encoding (header included) of a JSON message to `out`. Missing fields take
/// their defaults; unknown fields are refused. On error `out` is left as it was.
pub fn json_to_cdr(
    ty: &MessageType,
    json: &[u8],
    opts: &EncodeOptions,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    crate::input::json::json_to_cdr(&ty.0, json, opts, out)
}

/// Decodes CDR into a `serde_json::Value`, for callers that want a tree rather than text.
pub fn cdr_to_value(ty: &MessageType, cdr: &[u8]) -> Result<serde_json::Value, DecodeError> {
    let mut out = Vec::new();
    cdr_to_json(ty, cdr, &mut out)?;
    // The text was written by us and is valid JSON.
    Ok(serde_json::from_slice(&out).unwrap_or(serde_json::Value::Null))
}
