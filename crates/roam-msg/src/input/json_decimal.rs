//! A shortcut for the numbers float arrays are full of: plain decimals such as a range's
//! `16.294673919677734` (rosbridge prints a float32 as the float64 of its value: up to 17
//! digits) and whole numbers' `12.0`. The general parser (lexical-parse-float, correctly
//! rounded) spends about 26 ns on such a number; reading its digits eight at a time and
//! multiplying by a power of ten takes a fraction of that. The shortcut answers only where its
//! answer is provably the general path's, and says "don't know" (`None`, nothing consumed)
//! for everything else: exponents, 8 or more whole digits, more than 22 digits, anything not
//! JSON, the rare value near a rounding tie, and numbers within 32 bytes of the input's end.

/// Whether each of the 8 bytes of `x` is an ASCII digit, as a mask of non-digit bits: a byte
/// is a digit if its high nibble is 3 and adding 6 keeps it so. Carries only run from a
/// non-digit byte to later ones, so the first non-digit is found right.
#[inline(always)]
fn not_digits(x: u64) -> u64 {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    ((x & HIGH) ^ ZEROS) | ((x.wrapping_add(0x0606_0606_0606_0606) & HIGH) ^ ZEROS)
}

/// How many of the 8 bytes of `x` (first character in the lowest byte) are digits before
/// the first that is not: 0 to 8.
#[inline(always)]
fn digit_count(x: u64) -> usize {
    (not_digits(x).trailing_zeros() / 8) as usize
}

/// The value of the first `n` (0 to 8) digits of `x`.
#[inline(always)]
fn digits_value(x: u64, n: usize) -> u64 {
    // The digits as one 8-digit number with leading zeros (as fast_float's eight-digit
    // conversion takes them); later bytes shift out. No branch for no digits (a shift by 64
    // would wrap): the mask clears the value instead.
    let none = ((n != 0) as u64).wrapping_neg();
    let v = (x.wrapping_sub(0x3030_3030_3030_3030) & none).wrapping_shl(8 * (8 - n as u32));
    let v = (v.wrapping_mul(10) + (v >> 8)) & 0x00FF_00FF_00FF_00FF;
    let v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_FFFF_0000_FFFF;
    (v.wrapping_mul(10000) + (v >> 32)) & 0xFFFF_FFFF
}

const POW10_U64: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// 10^k for k <= 22: every one exact in a float64.
const POW10_F64: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The nearest float64 of 10^-k for k <= 14 (the most decimals [`decimal`] keeps).
const NEG_POW10_F64: [f64; 15] = [
    1e0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14,
];

/// A number `-?int(.frac)?` as read: `digits / 10^scale`, negated if `negative`; `end` is
/// where its text ends. If `truncated`, digits past the 15th were dropped (the number is at
/// least `digits` and less than `digits + 1`, over 10^scale), and `digits` is at least 10^13.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decimal {
    pub negative: bool,
    pub digits: u64,
    pub scale: usize,
    pub truncated: bool,
    pub end: usize,
}

/// The bytes a number is read from: the longest one taken (`-`, 22 digits, `.`) and the
/// byte after it, rounded up to whole 8-byte groups. Numbers that start within this many
/// bytes of the input's end take the general path.
pub(crate) const WINDOW: usize = 32;

/// The 8 bytes of `w` from `at` (at most `WINDOW - 8`; the `min` lets the compiler see it).
#[inline(always)]
fn load8(w: &[u8; WINDOW], at: usize) -> u64 {
    let at = at.min(WINDOW - 8);
    w[at..]
        .first_chunk::<8>()
        .map_or(0, |c| u64::from_le_bytes(*c))
}

/// Reads a plain JSON decimal at `i`; `None` for anything else (see the module's words).
#[inline(always)]
pub(crate) fn decimal(b: &[u8], i: usize) -> Option<Decimal> {
    let d = in_window(b.get(i..)?.first_chunk()?)?;
    // An exponent (or a second point, not JSON) is the general path's.
    if matches!(b.get(i + d.end), Some(b'.' | b'e' | b'E')) {
        return None;
    }
    Some(Decimal {
        end: i + d.end,
        ..d
    })
}

/// The digits of a plain decimal at the start of `w`, 8 bytes at a time; the caller checks
/// that the byte at `end` (not a digit) ends the number: not `.`, `e` nor `E`.
///
/// The first group holds the whole part (1 to 7 digits) and the point: the point is taken
/// out (the bytes after it move down one) and the group is converted as one number, which is
/// all of a whole number's `3.0`. A longer fraction (a range's 15 to 17 digits) goes on into
/// a second group, converted too, and a third, whose digits are only counted: 15 digits
/// already put the value within 10^-13 of itself, which [`Decimal::f64_for_f32`] allows for
/// and [`Decimal::exact_f64`] refuses.
///
/// Where a number ends is found from the digit flags directly, not from the converted
/// groups: in an array, the next number's start waits on it.
#[inline(always)]
pub(crate) fn in_window(w: &[u8; WINDOW]) -> Option<Decimal> {
    let negative = w[0] == b'-';
    let s = negative as usize;
    let x = load8(w, s);
    let flags = not_digits(x);
    let whole = (flags.trailing_zeros() / 8) as usize;
    // JSON: at least one digit, no leading zero before another digit. Up to 7, so that the
    // byte after them is in `x` and known not to be a digit. One branch for the three ways
    // out.
    if (whole.wrapping_sub(1) >= 7) | ((whole > 1) & (x as u8 == b'0')) {
        return None;
    }
    // A point's flag is one bit of its byte (0x10): without it, the lowest flag is the next
    // non-digit's, the fraction's end if it is within the group (8 if not).
    let second = ((flags & flags.wrapping_sub(1)).trailing_zeros() / 8) as usize;
    let (digits, scale, truncated, end);
    if (x >> (8 * whole)) as u8 == b'.' {
        // The group without its point: the whole digits, then the fraction's; the top byte
        // is zero, not a digit.
        let low = (1u64 << (8 * whole)) - 1;
        let joined = (x & low) | ((x >> 8) & !low);
        if second < 8 {
            let n = second - 1;
            if n == whole {
                return None; // `1.`: not JSON.
            }
            digits = digits_value(joined, n);
            scale = n - whole;
            truncated = false;
            end = s + second;
        } else {
            let x2 = load8(w, s + 8);
            let x3 = load8(w, s + 16);
            let n2 = digit_count(x2);
            // The third group counts only after a full second one.
            let n3 = digit_count(x3) & ((n2 == 8) as usize).wrapping_neg();
            let d = digits_value(joined, 7) * POW10_U64[n2] + digits_value(x2, n2);
            truncated = n3 != 0;
            // Too long for the window, or too few significant digits kept for the
            // truncation's bound.
            if (n3 == 8) | (truncated & (d < 10u64.pow(13))) {
                return None;
            }
            digits = d;
            scale = 7 + n2 - whole;
            end = s + 8 + n2 + n3;
        }
    } else {
        digits = digits_value(x, whole);
        scale = 0;
        truncated = false;
        end = s + whole;
    }
    Some(Decimal {
        negative,
        digits,
        scale,
        truncated,
        end,
    })
}

impl Decimal {
    fn signed(&self, v: f64) -> f64 {
        if self.negative {
            -v
        } else {
            v
        }
    }

    /// The correctly rounded float64, where two exact operands make one division exact
    /// (Clinger's fast path): up to 2^53 and 22 decimals.
    #[inline(always)]
    pub fn exact_f64(&self) -> Option<f64> {
        if self.truncated || self.digits > 1 << 53 || self.scale > 22 {
            return None;
        }
        Some(self.signed(self.digits as i64 as f64 / POW10_F64[self.scale]))
    }

    /// A float64 that rounds to the same float32 as the correctly rounded float64 does (what
    /// the general path and then `as f32` make), for a float32 field. The digits (exact in a
    /// float64: fewer than 16) times the nearest float64 of 10^-scale is within 2^-52 of the
    /// digits' value relatively, and that within 10^-13 of the number's (the dropped digits
    /// of a truncated one); together under 904 units in the last place of the result, and the
    /// correctly rounded float64 half a unit further (units are consecutive bit patterns; near
    /// a power of two, twice as many below it: 1808). Float32 rounding drops the low 29 bits,
    /// so both round alike unless those bits are within [`GUARD`] (2048) of the tie,
    /// `0x1000_0000`: refused there (1 value in 130,000), and below float32's normal range
    /// (its rounding point moves), and above 3.4e38, short of float32's largest value by far
    /// more than the error, so that the caller's range check (which wants the exact value)
    /// sees no difference. A multiplication, not a division: it is much of a range's cost.
    #[inline(always)]
    pub fn f64_for_f32(&self) -> Option<f64> {
        let a = self.digits as i64 as f64 * *NEG_POW10_F64.get(self.scale)?;
        // Both checks on the bits (`a` is not negative, so they order as the values do).
        const TIE: u64 = 1 << 28;
        const LOWEST: u64 = (f32::MIN_POSITIVE as f64).to_bits();
        const HIGHEST: u64 = 3.4e38f64.to_bits();
        let bits = a.to_bits();
        let in_range = bits.wrapping_sub(LOWEST) <= HIGHEST - LOWEST;
        let near_tie = (bits & ((1 << 29) - 1)).wrapping_sub(TIE - GUARD) <= 2 * GUARD;
        if near_tie | !in_range {
            // Zero is exact, and below the range only by its sign.
            return (self.digits == 0).then(|| self.signed(0.0));
        }
        Some(f64::from_bits(bits | (self.negative as u64) << 63))
    }
}

/// How near a float32 rounding tie, in float64 bit patterns, [`Decimal::f64_for_f32`] refuses.
const GUARD: u64 = 2048;

#[cfg(test)]
mod tests {
    use super::*;
    use lexical_parse_float::{format::JSON, FromLexicalWithOptions, Options};
    use proptest::prelude::*;

    /// What follows a number in the tests: more than a window's worth.
    const PAD: &str = ",1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]";

    fn general(text: &str) -> f64 {
        f64::from_lexical_partial_with_options::<JSON>(text.as_bytes(), &Options::new())
            .unwrap()
            .0
    }

    /// Every decimal the shortcut answers for agrees with the general path: exactly for a
    /// float64, after rounding to float32 for a float32; and it ends where the number does.
    fn agrees(number: &str) -> Result<(), TestCaseError> {
        let text = format!("{number}{PAD}");
        let Some(d) = decimal(text.as_bytes(), 0) else {
            return Ok(());
        };
        prop_assert_eq!(d.end, number.len(), "{}", number);
        let want = general(&text);
        if let Some(v) = d.exact_f64() {
            prop_assert_eq!(v.to_bits(), want.to_bits(), "{}", number);
        }
        if let Some(v) = d.f64_for_f32() {
            prop_assert_eq!((v as f32).to_bits(), (want as f32).to_bits(), "{}", number);
            prop_assert!(
                v.abs() <= f32::MAX as f64 && want.abs() <= f32::MAX as f64,
                "{}",
                number
            );
        }
        Ok(())
    }

    /// The float64 `steps` bit patterns away from `v`.
    fn step(v: f64, steps: i64) -> f64 {
        f64::from_bits((v.to_bits() as i64 + steps) as u64)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// float32 values printed as rosbridge prints them (shortest float64 text).
        #[test]
        fn printed_float32s_read_back_exactly(bits in any::<u32>()) {
            let f = f32::from_bits(bits);
            prop_assume!(f.is_finite());
            let number = format!("{}", f as f64);
            agrees(&number)?;
            let text = format!("{number}{PAD}");
            if let Some(d) = decimal(text.as_bytes(), 0) {
                if let Some(v) = d.f64_for_f32() {
                    prop_assert_eq!((v as f32).to_bits(), f.to_bits());
                }
            }
        }

        /// Any digits, any point: including values right at float32 ties.
        #[test]
        fn random_decimals_agree(
            sign in prop::bool::ANY,
            whole in "[0-9]{1,12}",
            frac in prop::option::of("[0-9]{1,24}"),
        ) {
            let number = format!(
                "{}{whole}{}",
                if sign { "-" } else { "" },
                frac.map(|f| format!(".{f}")).unwrap_or_default()
            );
            agrees(&number)?;
        }

        /// The exact midpoints between neighbouring float32s, printed in full (they are
        /// exact in a float64): the double-rounding cases. Also values a little off them, to
        /// either side of the refused band, in full and with digits cut off (where the
        /// truncation's bound matters).
        #[test]
        fn float32_ties_are_left_to_the_general_path(
            bits in 0x0080_0000u32..0x7F00_0000,
            off in -3 * GUARD as i64..3 * GUARD as i64,
            cut in 0usize..4,
        ) {
            let lo = f32::from_bits(bits) as f64;
            let hi = f32::from_bits(bits + 1) as f64;
            let mid = (lo + hi) / 2.0;
            for v in [mid, step(mid, 1), step(mid, -1), step(mid, off)] {
                agrees(&format!("{v}"))?;
                let full = format!("{v:.17}");
                agrees(&full)?;
                agrees(&full[..full.len() - cut])?;
            }
        }
    }

    #[test]
    fn reads_plain_decimals_and_refuses_the_rest() {
        let at = |s: &str| decimal(format!("{s}{PAD}").as_bytes(), 0);
        assert_eq!(
            at("-16.294673919677734"),
            Some(Decimal {
                negative: true,
                digits: 162946739196777,
                scale: 13,
                truncated: true,
                end: 19
            })
        );
        assert_eq!(at("0.5").map(|d| (d.digits, d.scale)), Some((5, 1)));
        assert_eq!(
            at("12.0").map(|d| (d.digits, d.scale, d.end)),
            Some((120, 1, 4))
        );
        assert_eq!(
            at("1234567").map(|d| (d.digits, d.scale)),
            Some((1234567, 0))
        );
        assert_eq!(
            at("1.23456789012345").map(|d| (d.digits, d.scale, d.truncated)),
            Some((123456789012345, 14, false))
        );
        for s in [
            "01.5",
            "1.",
            ".5",
            "-",
            "1e5",
            "1.5e-3",
            "1.2.3",
            "12345678",
            "1.234567890123456789012345",
            // Truncated with too few significant digits left for the bound.
            "0.000012345678901234",
            "x",
        ] {
            assert_eq!(at(s), None, "{s}");
        }
        // Within a window of the end: the general path's.
        assert_eq!(decimal(b"1.5]", 0), None);
    }
}
