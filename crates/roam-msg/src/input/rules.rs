//! The checks and writes both input readers share (the JSON text reader in [`super::json`] and
//! the serde seeds CBOR goes through), so JSON and CBOR follow one set of rules: integer
//! ranges, float32 overflow, string and array bounds, base64, `secs`/`nsecs`, defaults.

use crate::cdr::write::Writer;
use crate::error::{EncodeError, EncodeErrorKind as K};
use crate::layout::{FieldLayout, StructLayout};
use crate::schema::{Multiplicity, Primitive};

/// The index of the field a key names; `builtin_interfaces` `Time` and `Duration` also take
/// ROS 1's `secs`/`nsecs`.
pub(crate) fn field_index(l: &StructLayout, key: &str) -> Option<usize> {
    let name = match key {
        "secs" if l.time_like => "sec",
        "nsecs" if l.time_like => "nanosec",
        other => other,
    };
    l.fields.iter().position(|f| f.name == name)
}

/// An integer into a primitive field: written if it fits, as a float for float fields.
pub(crate) fn put_int(w: &mut Writer<'_>, p: Primitive, v: i128) -> Result<(), EncodeError> {
    if p.is_float() {
        w.float(p, v as f64);
        return Ok(());
    }
    match p.int_range() {
        Some((lo, hi)) if v >= lo && v <= hi => {
            w.int(p, v);
            Ok(())
        }
        Some(_) => Err(EncodeError::new(K::OutOfRange {
            value: v.to_string(),
            ty: p.msg_name(),
        })),
        None => Err(EncodeError::mismatch(p.msg_name(), "a number")),
    }
}

/// A float into a primitive field: only float fields take one (as rosbridge: an integer is
/// accepted for a float, not a float for an integer).
pub(crate) fn put_float(w: &mut Writer<'_>, p: Primitive, v: f64) -> Result<(), EncodeError> {
    if p == Primitive::Float32 {
        check_float32(v)?;
    }
    if p.is_float() {
        w.float(p, v);
        return Ok(());
    }
    Err(EncodeError::mismatch(
        p.msg_name(),
        format!("the float {v}"),
    ))
}

/// A finite value beyond float32's range would silently become infinity.
#[inline]
pub(crate) fn check_float32(v: f64) -> Result<(), EncodeError> {
    if v.is_finite() && v.abs() > f32::MAX as f64 {
        return Err(EncodeError::new(K::OutOfRange {
            value: v.to_string(),
            ty: "float32",
        }));
    }
    Ok(())
}

/// A `string` or `wstring`, its bound counted in characters.
pub(crate) fn put_str(
    w: &mut Writer<'_>,
    s: &str,
    bound: Option<u32>,
    wide: bool,
) -> Result<(), EncodeError> {
    if let Some(bound) = bound {
        let found = s.chars().count();
        if found > bound as usize {
            return Err(EncodeError::new(K::StringTooLong { bound, found }));
        }
    }
    if wide {
        w.wstring(s)
    } else {
        w.string(s)
    }
}

/// Decodes base64 text straight into the output; returns the number of bytes written.
pub(crate) fn put_base64(w: &mut Writer<'_>, text: &[u8]) -> Result<usize, EncodeError> {
    let start = w.out.len();
    // Standard alphabet, padded (what every client sends) straight into the output; else the
    // forgiving form (no padding, ASCII whitespace), as lenient as Python's b64decode about
    // those.
    if base64_simd::STANDARD.decode_append(text, w.out).is_err() {
        w.out.truncate(start);
        match base64_simd::forgiving_decode_to_vec(text) {
            Ok(bytes) => w.out.extend_from_slice(&bytes),
            Err(e) => return Err(EncodeError::new(K::Base64(e.to_string()))),
        }
    }
    Ok(w.out.len() - start)
}

/// The most elements worth reading before the count is already wrong: a reader stops at the
/// first element past it instead of reading the rest.
pub(crate) fn element_limit(m: Multiplicity) -> usize {
    match m {
        Multiplicity::Fixed(n) | Multiplicity::Bounded(n) => n as usize,
        _ => usize::MAX,
    }
}

/// Checks an array's element count against its type and patches a sequence's length.
pub(crate) fn finish_array(
    w: &mut Writer<'_>,
    m: Multiplicity,
    len_at: Option<usize>,
    count: usize,
) -> Result<(), EncodeError> {
    match m {
        Multiplicity::Fixed(n) if count != n as usize => Err(EncodeError::new(K::WrongLength {
            expected: n,
            found: count,
        })),
        Multiplicity::Bounded(bound) if count > bound as usize => {
            Err(EncodeError::new(K::BoundExceeded {
                bound,
                found: count,
            }))
        }
        _ => match len_at {
            Some(at) => w.patch_len(at, count),
            None => Ok(()),
        },
    }
}

/// Writes `(sec, nanosec)` for a `Time` given as `"now"`, if allowed; false if not.
pub(crate) fn put_now(
    w: &mut Writer<'_>,
    l: &StructLayout,
    s: &str,
    now: Option<(i32, u32)>,
) -> bool {
    match now {
        Some((sec, nanosec)) if s == "now" && l.time_like && l.name.name == "Time" => {
            w.int(Primitive::Int32, sec as i128);
            w.int(Primitive::UInt32, nanosec as i128);
            true
        }
        _ => false,
    }
}

/// Writes a field the input left out: its default, except that (as rosbridge does with its
/// clock) a `std_msgs/Header` without a stamp is stamped now when a clock is given.
pub(crate) fn put_missing(
    w: &mut Writer<'_>,
    l: &StructLayout,
    f: &FieldLayout,
    now: Option<(i32, u32)>,
) -> Result<(), EncodeError> {
    match now {
        Some((sec, nanosec))
            if f.name == "stamp" && l.name.package == "std_msgs" && l.name.name == "Header" =>
        {
            w.int(Primitive::Int32, sec as i128);
            w.int(Primitive::UInt32, nanosec as i128);
            Ok(())
        }
        _ => w.default_field(f),
    }
}
