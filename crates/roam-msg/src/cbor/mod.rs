//! CDR <-> CBOR as rosbridge's `compression: cbor` produces it. Input may be any CBOR a client
//! writes: definite or indefinite lengths, typed arrays in either byte order, plain arrays.

mod read;
pub(crate) mod sink;

use minicbor::Encoder;
use serde::de::DeserializeSeed;

use crate::cdr::read::{read_struct, Cursor};
use crate::error::{DecodeError, EncodeError};
use crate::layout::MessageType;
use crate::EncodeOptions;
pub use read::MAX_CBOR_DEPTH;
use sink::CborSink;

/// Appends the CBOR encoding of a CDR message to `out`. On error `out` is left as it was.
pub fn cdr_to_cbor(ty: &MessageType, cdr: &[u8], out: &mut Vec<u8>) -> Result<(), DecodeError> {
    let start = out.len();
    let r = Cursor::new(cdr).and_then(|mut c| {
        read_struct(
            &mut c,
            &ty.0,
            &mut CborSink {
                enc: Encoder::new(&mut *out),
            },
        )?;
        c.finish()
    });
    if r.is_err() {
        out.truncate(start);
    }
    r
}

/// Appends the CDR encoding (header included) of a CBOR message to `out`, with the same rules
/// as [`crate::json::json_to_cdr`]. On error `out` is left as it was.
pub fn cbor_to_cdr(
    ty: &MessageType,
    cbor: &[u8],
    opts: &EncodeOptions,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let value = read::read_item(cbor)?;
    crate::encode_with(ty, opts, out, |seed| seed.deserialize(value))
}
