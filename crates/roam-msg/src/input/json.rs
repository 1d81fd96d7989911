//! JSON text -> CDR in one pass: the message type walks the tokenizer ([`super::json_lex`]) and
//! writes CDR as it goes, with no tree and no serde machinery in between. Number arrays (scans,
//! covariances) are read in a tight loop that parses each float straight into the output;
//! that loop is where large numeric messages spend their time.
//!
//! The rules are rosbridge's (see [`super`]) and the same as CBOR's ([`super::rules`]). A field
//! given before the one CDR needs next is skipped and its position kept; it is read when its
//! turn comes, so out-of-order input costs one extra scan of that value. Recursion follows the
//! type's nesting only (bounded by [`crate::MAX_TYPE_DEPTH`]); the tokenizer skips other values
//! without recursing.

use super::json_floats::read_floats;
use super::json_lex::{Lexer, Next};
use super::rules;
use crate::cdr::write::Writer;
use crate::error::{EncodeError, EncodeErrorKind as K, Segment};
use crate::layout::{Elem, FieldLayout, StructLayout};
use crate::schema::{Multiplicity, Primitive};
use crate::EncodeOptions;

/// Appends the CDR of the JSON message `json` to `out`; on error `out` is left as it was.
pub(crate) fn json_to_cdr(
    l: &StructLayout,
    json: &[u8],
    opts: &EncodeOptions,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let start = out.len();
    let r = {
        let mut cx = Cx {
            w: Writer::new(out, opts.endian),
            now: opts.now,
            input: json,
        };
        let mut lx = Lexer::new(json);
        read_struct(&mut lx, &mut cx, l).and_then(|()| lx.finish())
    };
    if r.is_err() {
        out.truncate(start);
    }
    r
}

struct Cx<'o, 'j> {
    w: Writer<'o>,
    /// The time `"now"` stands for, if allowed (see [`crate::EncodeOptions::now`]).
    now: Option<(i32, u32)>,
    /// The whole input, where fields kept back are read from.
    input: &'j [u8],
}

/// A value of the wrong kind.
#[cold]
fn mismatch(expected: &str, next: Next) -> EncodeError {
    EncodeError::mismatch(expected, next.found())
}

fn field_seg(f: &FieldLayout) -> Segment {
    Segment::Field(f.name.clone())
}

fn read_struct(
    lx: &mut Lexer<'_>,
    cx: &mut Cx<'_, '_>,
    l: &StructLayout,
) -> Result<(), EncodeError> {
    match lx.peek()? {
        Next::Object => {}
        Next::String => {
            let s = lx.str()?;
            if rules::put_now(&mut cx.w, l, s, cx.now) {
                return Ok(());
            }
            return Err(mismatch(&format!("an object for {}", l.name), Next::String));
        }
        other => return Err(mismatch(&format!("an object for {}", l.name), other)),
    }
    let n = l.fields.len();
    let mut next = 0usize;
    // Fields given before their turn: where each starts in the input.
    let mut held: Vec<Option<usize>> = Vec::new();
    let mut key = lx.object_first()?;
    while let Some(k) = key {
        let idx = match rules::field_index(l, k) {
            Some(i) => i,
            None => return Err(EncodeError::new(K::UnknownField(k.to_string()))),
        };
        let f = &l.fields[idx];
        if idx < next || held.get(idx).is_some_and(Option::is_some) {
            // Its grammar is checked first (serde_json's order, kept so that both readers
            // report the same error).
            lx.skip(false)?;
            return Err(EncodeError::new(K::DuplicateField).at(field_seg(f)));
        }
        if idx == next {
            read_field(lx, cx, f).map_err(|e| e.at(field_seg(f)))?;
            next += 1;
            while let Some(at) = held.get_mut(next).and_then(Option::take) {
                read_held(cx, &l.fields[next], at)?;
                next += 1;
            }
        } else {
            if held.is_empty() {
                held.resize(n, None);
            }
            lx.peek()?;
            held[idx] = Some(lx.pos());
            lx.skip(true)?;
        }
        key = lx.object_next()?;
    }
    if n == 0 {
        cx.w.out.push(0);
    }
    while next < n {
        let f = &l.fields[next];
        match held.get_mut(next).and_then(Option::take) {
            Some(at) => read_held(cx, f, at)?,
            None => rules::put_missing(&mut cx.w, l, f, cx.now).map_err(|e| e.at(field_seg(f)))?,
        }
        next += 1;
    }
    Ok(())
}

/// A field whose value was kept back: already checked to be one JSON value at `at`.
fn read_held(cx: &mut Cx<'_, '_>, f: &FieldLayout, at: usize) -> Result<(), EncodeError> {
    let mut lx = Lexer::at(cx.input, at);
    read_field(&mut lx, cx, f).map_err(|e| e.at(field_seg(f)))
}

fn read_field(lx: &mut Lexer<'_>, cx: &mut Cx<'_, '_>, f: &FieldLayout) -> Result<(), EncodeError> {
    match f.multiplicity {
        Multiplicity::Single => read_elem(lx, cx, &f.elem),
        _ => read_array(lx, cx, f),
    }
}

fn read_elem(lx: &mut Lexer<'_>, cx: &mut Cx<'_, '_>, elem: &Elem) -> Result<(), EncodeError> {
    match elem {
        Elem::Prim(p) => read_prim(lx, &mut cx.w, *p),
        Elem::String { bound } => read_string(lx, &mut cx.w, *bound, false),
        Elem::WString { bound } => read_string(lx, &mut cx.w, *bound, true),
        Elem::Struct(l) => read_struct(lx, cx, l),
    }
}

fn read_string(
    lx: &mut Lexer<'_>,
    w: &mut Writer<'_>,
    bound: Option<u32>,
    wide: bool,
) -> Result<(), EncodeError> {
    match lx.peek()? {
        Next::String => rules::put_str(w, lx.str()?, bound, wide),
        other => Err(mismatch("a string", other)),
    }
}

/// One primitive value.
fn read_prim(lx: &mut Lexer<'_>, w: &mut Writer<'_>, p: Primitive) -> Result<(), EncodeError> {
    match lx.peek()? {
        Next::Bool if p == Primitive::Bool => {
            let v = lx.bool()?;
            w.int(p, v as i128);
            Ok(())
        }
        // `null` is how NaN and infinities leave as JSON; it comes back as NaN.
        Next::Null if p.is_float() => {
            lx.null()?;
            w.float(p, f64::NAN);
            Ok(())
        }
        Next::Number if p.is_float() => {
            let v = lx.float()?;
            rules::put_float(w, p, v)
        }
        Next::Number => match read_number(lx)? {
            Number::Int(v) => rules::put_int(w, p, v),
            Number::Float(v) => rules::put_float(w, p, v),
        },
        other => Err(mismatch(p.msg_name(), other)),
    }
}

enum Number {
    Int(i128),
    Float(f64),
}

/// A number for an integer or bool field. As JSON readers that keep integers exact do, text
/// without a fraction or exponent is an integer if it fits 64 bits; anything else (`1.0`,
/// `1e3`, `-0`, 2^64) is a float, which integer fields refuse.
fn read_number(lx: &mut Lexer<'_>) -> Result<Number, EncodeError> {
    let start = lx.pos();
    let text = lx.number_text()?;
    // The lexer checked the grammar: the text is ASCII.
    let s = std::str::from_utf8(text).unwrap_or_default();
    if !s.contains(['.', 'e', 'E']) {
        let int = match s.strip_prefix('-') {
            Some(_) => s.parse::<i64>().ok().filter(|&v| v != 0).map(i128::from),
            None => s.parse::<u64>().ok().map(i128::from),
        };
        if let Some(v) = int {
            return Ok(Number::Int(v));
        }
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(Number::Float(v)),
        _ => Err(lx.error_at("number out of range", start)),
    }
}

/// An array or sequence field: a JSON array, or base64 text for a binary field.
fn read_array(lx: &mut Lexer<'_>, cx: &mut Cx<'_, '_>, f: &FieldLayout) -> Result<(), EncodeError> {
    let seq = f.multiplicity.is_sequence();
    match lx.peek()? {
        Next::Array => {}
        Next::String if f.binary => {
            let text = lx.str_bytes()?;
            let at = seq.then(|| cx.w.begin_len());
            let count = rules::put_base64(&mut cx.w, text)?;
            return rules::finish_array(&mut cx.w, f.multiplicity, at, count);
        }
        other => return Err(mismatch("an array", other)),
    }
    let at = seq.then(|| cx.w.begin_len());
    let limit = rules::element_limit(f.multiplicity);
    let mut more = lx.array_first()?;
    let mut count = 0usize;
    if let Elem::Prim(p @ (Primitive::Float32 | Primitive::Float64)) = f.elem {
        if more {
            count = read_floats(lx, &mut cx.w, p, limit)?;
        }
    } else {
        while more {
            read_elem(lx, cx, &f.elem).map_err(|e| e.at(Segment::Index(count)))?;
            count += 1;
            if count > limit {
                // Stop at the first element too many instead of reading the rest.
                break;
            }
            more = lx.array_next()?;
        }
    }
    rules::finish_array(&mut cx.w, f.multiplicity, at, count)
}
