//! Reads CBOR input into a [`Captured`] tree for the type-driven encoder. Typed arrays
//! (RFC 8746, tags 64-87) become little-endian bytes, whatever their tagged byte order.

use minicbor::data::Type;
use minicbor::Decoder;

use crate::error::{EncodeError, EncodeErrorKind as K};
use crate::input::captured::Captured;

/// Deeper input than this is refused (the type-driven side never needs more than the type's
/// own nesting, itself bounded by [`crate::MAX_TYPE_DEPTH`]).
pub const MAX_CBOR_DEPTH: usize = 128;

fn syntax(e: minicbor::decode::Error) -> EncodeError {
    EncodeError::new(K::Syntax(e.to_string()))
}

/// Reads exactly one CBOR item from `input`.
pub(crate) fn read_item(input: &[u8]) -> Result<Captured, EncodeError> {
    let mut d = Decoder::new(input);
    let v = read(&mut d, 0)?;
    if d.position() != input.len() {
        return Err(EncodeError::new(K::Syntax(format!(
            "{} bytes after the CBOR item",
            input.len() - d.position()
        ))));
    }
    Ok(v)
}

fn read(d: &mut Decoder<'_>, depth: usize) -> Result<Captured, EncodeError> {
    if depth > MAX_CBOR_DEPTH {
        return Err(EncodeError::new(K::TooDeep(MAX_CBOR_DEPTH)));
    }
    Ok(match d.datatype().map_err(syntax)? {
        Type::Bool => Captured::Bool(d.bool().map_err(syntax)?),
        Type::Null | Type::Undefined => {
            d.skip().map_err(syntax)?;
            Captured::Null
        }
        Type::U8 | Type::U16 | Type::U32 | Type::U64 => Captured::U64(d.u64().map_err(syntax)?),
        Type::I8 | Type::I16 | Type::I32 | Type::I64 => Captured::I64(d.i64().map_err(syntax)?),
        Type::Int => {
            let v = i128::from(d.int().map_err(syntax)?);
            return Err(EncodeError::new(K::OutOfRange {
                value: v.to_string(),
                ty: "any ROS integer",
            }));
        }
        Type::F16 | Type::F32 | Type::F64 => Captured::F64(d.f64().map_err(syntax)?),
        Type::Bytes => Captured::Bytes(d.bytes().map_err(syntax)?.to_vec()),
        Type::BytesIndef => {
            let mut out = Vec::new();
            for chunk in d.bytes_iter().map_err(syntax)? {
                out.extend_from_slice(chunk.map_err(syntax)?);
            }
            Captured::Bytes(out)
        }
        Type::String => Captured::Str(d.str().map_err(syntax)?.to_string()),
        Type::StringIndef => {
            let mut out = String::new();
            for chunk in d.str_iter().map_err(syntax)? {
                out.push_str(chunk.map_err(syntax)?);
            }
            Captured::Str(out)
        }
        Type::Array | Type::ArrayIndef => {
            let len = d.array().map_err(syntax)?;
            let mut items = Vec::new();
            each(d, len, |d| {
                items.push(read(d, depth + 1)?);
                Ok(())
            })?;
            Captured::Seq(items)
        }
        Type::Map | Type::MapIndef => {
            let len = d.map().map_err(syntax)?;
            let mut entries = Vec::new();
            each(d, len, |d| {
                let k = read(d, depth + 1)?;
                let v = read(d, depth + 1)?;
                entries.push((k, v));
                Ok(())
            })?;
            Captured::Map(entries)
        }
        Type::Tag => {
            let tag = d.tag().map_err(syntax)?.as_u64();
            match typed_array(tag) {
                Some((size, little)) => {
                    let raw = match read(d, depth + 1)? {
                        Captured::Bytes(b) => b,
                        _ => {
                            return Err(EncodeError::mismatch(
                                "a byte string inside a typed-array tag",
                                "something else",
                            ))
                        }
                    };
                    Captured::Bytes(to_little(raw, size, little)?)
                }
                // Other tags (dates, big numbers...) say nothing a ROS type needs: read what
                // they tag.
                None => read(d, depth + 1)?,
            }
        }
        other => {
            return Err(EncodeError::new(K::Syntax(format!(
                "unexpected CBOR {other}"
            ))))
        }
    })
}

/// Calls `f` for each element of a definite (`Some(n)`) or indefinite array or map.
fn each(
    d: &mut Decoder<'_>,
    len: Option<u64>,
    mut f: impl FnMut(&mut Decoder<'_>) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    match len {
        Some(n) => {
            for _ in 0..n {
                f(d)?;
            }
        }
        None => {
            while d.datatype().map_err(syntax)? != Type::Break {
                f(d)?;
            }
            d.skip().map_err(syntax)?;
        }
    }
    Ok(())
}

/// RFC 8746 typed-array tags: (element size, little endian). The clamped uint8 (68) counts as
/// uint8; float16 and float128 arrays have no ROS counterpart.
fn typed_array(tag: u64) -> Option<(usize, bool)> {
    Some(match tag {
        64 | 68 | 72 => (1, true),
        65 | 73 => (2, false),
        66 | 74 | 81 => (4, false),
        67 | 75 | 82 => (8, false),
        69 | 77 => (2, true),
        70 | 78 | 85 => (4, true),
        71 | 79 | 86 => (8, true),
        _ => return None,
    })
}

fn to_little(mut raw: Vec<u8>, size: usize, little: bool) -> Result<Vec<u8>, EncodeError> {
    if !raw.len().is_multiple_of(size) {
        return Err(EncodeError::mismatch(
            format!("a typed array of {size}-byte elements"),
            format!("{} bytes", raw.len()),
        ));
    }
    if !little {
        for chunk in raw.chunks_exact_mut(size) {
            chunk.reverse();
        }
    }
    Ok(raw)
}
