//! Floats as rosbridge prints them (Python's `repr` of the float64), one at a time or a whole
//! array straight from CDR bytes. Arrays of floats (scans, clouds, covariances) are most of the
//! JSON text a bridge writes, so the array loop avoids a call per copied number.

use crate::cdr::Endian;

/// Integers below this are exact in a float64 and one apart at most, so the shortest digits
/// that round-trip are the integer's own.
const EXACT_INT: u64 = 1 << 53;

/// Writes a float as Python's `repr` does (what rosbridge sends): the shortest digits that
/// round-trip, with `.0` after a whole number. Whole numbers (intensities, counts, zeros of a
/// scan) take the integer path: itoa is several times faster than zmij on them, whose fixed
/// notation pads and moves its digits; the output is the same (tested against zmij). JSON has
/// no NaN or infinities: rosbridge sends them as null.
#[inline]
pub(crate) fn write_f64(out: &mut Vec<u8>, v: f64) {
    let whole = v as i64;
    // `whole != 0` leaves -0.0 (and 0.0) to zmij, which keeps the sign.
    if whole as f64 == v && whole != 0 && whole.unsigned_abs() < EXACT_INT {
        out.extend_from_slice(itoa::Buffer::new().format(whole).as_bytes());
        out.extend_from_slice(b".0");
    } else if v.is_finite() {
        out.extend_from_slice(zmij::Buffer::new().format_finite(v).as_bytes());
    } else {
        out.extend_from_slice(b"null");
    }
}

/// The longest text of one float64: `-1.2345678901234567e-308`; a whole number below
/// [`EXACT_INT`] is shorter (16 digits, sign and `.0`).
const MAX_LEN: usize = 24;

/// Numbers written between two resizes of the output: the zeroed room stays in the cache.
const CHUNK: usize = 256;

/// Writes the CDR array `raw` of `N`-byte floats as a comma-separated list (no brackets).
/// The output grows by a chunk of zeroed room at a time and each number is copied into it
/// with fixed-size moves, instead of a `memmove` call per number as `extend_from_slice` makes.
pub(crate) fn write_array<const N: usize>(
    out: &mut Vec<u8>,
    raw: &[u8],
    endian: Endian,
    decode: impl Fn([u8; N]) -> f64,
) {
    let mut first = true;
    for chunk in raw.chunks(N * CHUNK) {
        let mut pos = out.len();
        out.resize(pos + chunk.len() / N * (MAX_LEN + 1), 0);
        for bytes in chunk.chunks_exact(N) {
            let mut a = [0u8; N];
            a.copy_from_slice(bytes);
            if endian == Endian::Big {
                a.reverse();
            }
            if !first {
                out[pos] = b',';
                pos += 1;
            }
            first = false;
            pos = put_f64(out, pos, decode(a));
        }
        out.truncate(pos);
    }
}

/// [`write_f64`] into room already there: `out[pos..pos + MAX_LEN]`. Returns the new end.
#[inline]
fn put_f64(out: &mut [u8], pos: usize, v: f64) -> usize {
    let whole = v as i64;
    if whole as f64 == v && whole != 0 && whole.unsigned_abs() < EXACT_INT {
        let end = put(out, pos, itoa::Buffer::new().format(whole).as_bytes());
        out[end..end + 2].copy_from_slice(b".0");
        end + 2
    } else if v.is_finite() {
        put(out, pos, zmij::Buffer::new().format_finite(v).as_bytes())
    } else {
        out[pos..pos + 4].copy_from_slice(b"null");
        pos + 4
    }
}

/// Copies `b` (at most 32 bytes) to `out[pos..]` with two fixed-size, possibly overlapping
/// moves, which compile to a few loads and stores.
#[inline]
fn put(out: &mut [u8], pos: usize, b: &[u8]) -> usize {
    let len = b.len();
    let dst = &mut out[pos..pos + len];
    if len >= 16 {
        dst[..16].copy_from_slice(&b[..16]);
        dst[len - 16..].copy_from_slice(&b[len - 16..]);
    } else if len >= 8 {
        dst[..8].copy_from_slice(&b[..8]);
        dst[len - 8..].copy_from_slice(&b[len - 8..]);
    } else if len >= 4 {
        dst[..4].copy_from_slice(&b[..4]);
        dst[len - 4..].copy_from_slice(&b[len - 4..]);
    } else {
        dst.copy_from_slice(b);
    }
    pos + len
}

#[cfg(test)]
mod tests {
    use super::{write_array, write_f64, EXACT_INT};
    use crate::cdr::Endian;
    use proptest::prelude::*;

    /// What the writer printed before the whole-number path: zmij's digits, null if not finite.
    fn zmij_text(v: f64) -> Vec<u8> {
        if v.is_finite() {
            zmij::Buffer::new().format_finite(v).as_bytes().to_vec()
        } else {
            b"null".to_vec()
        }
    }

    fn text(v: f64) -> Vec<u8> {
        let mut out = Vec::new();
        write_f64(&mut out, v);
        out
    }

    #[test]
    fn whole_numbers_print_as_python_does() {
        assert_eq!(text(1234.0), b"1234.0");
        assert_eq!(text(-7.0), b"-7.0");
        assert_eq!(text(0.0), b"0.0");
        assert_eq!(text(-0.0), b"-0.0");
        assert_eq!(text(1e15), b"1000000000000000.0");
        assert_eq!(text(1e16), b"1e+16");
        assert_eq!(text(f64::NAN), b"null");
        assert_eq!(text(f64::NEG_INFINITY), b"null");
        let edge = EXACT_INT as f64;
        for v in [
            edge - 2.0,
            edge - 1.0,
            edge,
            edge + 2.0,
            -edge + 1.0,
            -edge,
            9.2e18,
            -9.3e18,
        ] {
            assert_eq!(text(v), zmij_text(v), "{v}");
        }
    }

    /// The array writer gives the numbers [`write_f64`] gives, comma separated, past a chunk.
    fn joined(values: &[f64]) -> Vec<u8> {
        let mut out = b"[".to_vec();
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_f64(&mut out, *v);
        }
        out
    }

    proptest! {
        #[test]
        fn array_writer_matches_one_by_one(
            bits in proptest::collection::vec(any::<u64>(), 0..700),
            whole in any::<bool>(),
        ) {
            // Half the runs with whole numbers and special values, which take other paths.
            let values: Vec<f64> = bits
                .iter()
                .map(|b| match (whole, b % 7) {
                    (true, 0) => f64::NAN,
                    (true, 1) => -0.0,
                    (true, _) => (*b as i64 >> (b % 64)) as f64,
                    (false, _) => f64::from_bits(*b),
                })
                .collect();
            let le: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            let be: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
            let want = joined(&values);
            for (raw, endian) in [(le, Endian::Little), (be, Endian::Big)] {
                let mut out = b"[".to_vec();
                write_array::<8>(&mut out, &raw, endian, f64::from_le_bytes);
                prop_assert_eq!(&out, &want);
            }
            let singles: Vec<f32> = values.iter().map(|v| *v as f32).collect();
            let raw: Vec<u8> = singles.iter().flat_map(|v| v.to_le_bytes()).collect();
            let mut out = b"[".to_vec();
            write_array::<4>(&mut out, &raw, Endian::Little, |a| f32::from_le_bytes(a) as f64);
            let widened: Vec<f64> = singles.iter().map(|v| *v as f64).collect();
            prop_assert_eq!(out, joined(&widened));
        }

        #[test]
        fn same_text_as_zmij_for_any_f64(bits in any::<u64>()) {
            let v = f64::from_bits(bits);
            prop_assert_eq!(text(v), zmij_text(v));
        }

        #[test]
        fn same_text_as_zmij_for_whole_numbers(n in any::<i64>(), shift in 0u32..64) {
            let v = (n >> shift) as f64;
            prop_assert_eq!(text(v), zmij_text(v));
        }

        #[test]
        fn same_text_as_zmij_for_any_f32(bits in any::<u32>()) {
            let v = f32::from_bits(bits) as f64;
            prop_assert_eq!(text(v), zmij_text(v));
        }
    }
}
