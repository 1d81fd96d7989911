//! Float arrays (scans, covariances), the bulk of numeric JSON, read straight into CDR. A
//! float32 array first goes through a loop of its own that takes elements as long as they are
//! plain decimals that [`json_decimal`] answers for followed by `,` (`, ` in an array written
//! so) or `]`, as rosbridge, roam and Python's json.dumps print them; every other element
//! (other whitespace, an exponent, `null`, a value near a float32 rounding tie, a syntax
//! error) goes through the tokenizer's general path, which also says what is wrong. Float64
//! arrays take the general path throughout.

use super::json_decimal::{self, WINDOW};
use super::json_lex::{FloatsError, Lexer};
use super::rules;
use crate::cdr::write::Writer;
use crate::cdr::Endian;
use crate::error::{EncodeError, Segment};
use crate::schema::Primitive;

/// The elements of a non-empty float array whose `[` was read, straight into the output
/// (aligned once); returns how many were read, stopping at the first past `limit`.
pub(super) fn read_floats(
    lx: &mut Lexer<'_>,
    w: &mut Writer<'_>,
    p: Primitive,
    limit: usize,
) -> Result<usize, EncodeError> {
    w.align(p.size());
    let big = w.endian == Endian::Big;
    let out = &mut *w.out;
    let narrow = p == Primitive::Float32;
    let mut count = 0usize;
    let mut whole = true;
    loop {
        if narrow {
            // `count <= limit` here: room for one past the limit, which makes the error.
            let room = (limit - count).saturating_add(1);
            let (b, i) = (lx.input(), lx.pos());
            // Right after a comma the general path read (see below), a space says the array
            // is written `1.5, 2.5` (Python's json.dumps, as roslibpy sends it): the loop
            // then takes one after each comma.
            let spaced = i > 0 && b[i - 1] == b',' && b.get(i) == Some(&b' ');
            let i = i + spaced as usize;
            let run = match (big, spaced) {
                (false, false) => f32_run::<false, false>(b, i, room, out),
                (false, true) => f32_run::<false, true>(b, i, room, out),
                (true, false) => f32_run::<true, false>(b, i, room, out),
                (true, true) => f32_run::<true, true>(b, i, room, out),
            };
            lx.set_pos(run.end);
            count += run.count;
            if run.closed || count > limit {
                return Ok(count);
            }
        }
        let v = match lx.float_element(&mut whole, narrow) {
            Ok(v) => v,
            Err(FloatsError::Syntax(e)) => return Err(e.at(Segment::Index(count))),
            Err(FloatsError::NotNumber) => {
                let e = match lx.peek() {
                    Ok(next) => EncodeError::mismatch(p.msg_name(), next.found()),
                    Err(e) => e,
                };
                return Err(e.at(Segment::Index(count)));
            }
        };
        if narrow {
            rules::check_float32(v).map_err(|e| e.at(Segment::Index(count)))?;
            put(out, &(v as f32).to_le_bytes(), big);
        } else {
            put(out, &v.to_le_bytes(), big);
        }
        count += 1;
        if count > limit {
            return Ok(count);
        }
        if !lx.array_next().map_err(|e| e.at(Segment::Index(count)))? {
            return Ok(count);
        }
    }
}

/// Appends the little-endian bytes `le`, reversed for big-endian CDR.
#[inline(always)]
fn put<const N: usize>(out: &mut Vec<u8>, le: &[u8; N], big: bool) {
    let mut b = *le;
    if big {
        b.reverse();
    }
    out.extend_from_slice(&b);
}

/// Where [`f32_run`] stopped.
struct Run {
    /// After the last element it took and its `,` (or the array's `]`).
    end: usize,
    /// How many elements it took.
    count: usize,
    /// Whether it read the array's `]`.
    closed: bool,
}

/// Float32 elements from `i`, written to `out` (big-endian if `BIG`), while each is a plain
/// decimal that [`json_decimal::in_window`] reads and [`json_decimal::Decimal::f64_for_f32`]
/// answers for, followed straight by `,` (and one space if `SPACED`) or `]`; at most `room`
/// of them. What it refuses it leaves unread for the general path. (A value it takes is
/// within float32's range, so the general path's range check has nothing to say about it.)
#[inline]
fn f32_run<const BIG: bool, const SPACED: bool>(
    b: &[u8],
    mut i: usize,
    room: usize,
    out: &mut Vec<u8>,
) -> Run {
    // Values go into `buf` first, a whole buffer at a time into `out`: a store each instead
    // of a capacity check and a length update each.
    const N: usize = 64;
    let mut buf = [0u8; 4 * N];
    let mut held = 0;
    let mut count = 0;
    let mut closed = false;
    while count < room {
        let Some(w) = b.get(i..).and_then(<[u8]>::first_chunk::<WINDOW>) else {
            break;
        };
        let Some(d) = json_decimal::in_window(w) else {
            break;
        };
        let Some(v) = d.f64_for_f32() else {
            break;
        };
        // Also what tells the number's end from an exponent or a second point.
        let sep = w.get(d.end).copied().unwrap_or(0);
        let spaced = !SPACED || w.get(d.end + 1) == Some(&b' ');
        if !(sep == b',' && spaced || sep == b']') {
            break;
        }
        let v = v as f32;
        let bytes = if BIG {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        buf[(held % N) * 4..][..4].copy_from_slice(&bytes);
        held += 1;
        if held == N {
            out.extend_from_slice(&buf);
            held = 0;
        }
        count += 1;
        if sep == b']' {
            i += d.end + 1;
            closed = true;
            break;
        }
        // Where the next number starts depends on `d.end` alone, not on the bytes after it:
        // it is what the next iteration waits for.
        i += d.end + 1 + SPACED as usize;
    }
    out.extend_from_slice(&buf[..(held % N) * 4]);
    Run {
        end: i,
        count,
        closed,
    }
}
