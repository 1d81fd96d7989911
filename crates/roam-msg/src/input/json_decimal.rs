//! A shortcut for the numbers float arrays are full of: plain decimals such as a range's
//! `16.294673919677734` (rosbridge prints a float32 as the float64 of its value: up to 17
//! digits). The general parser (lexical-parse-float, correctly rounded) spends about 26 ns on
//! such a number; reading its digits eight at a time and dividing by an exact power of ten
//! takes a fraction of that. The shortcut answers only where its answer is provably the
//! general path's, and says "don't know" (`None`, nothing consumed) for everything else:
//! exponents, more than 18 digits, anything not JSON, the rare value near a rounding tie.

/// Whether each of the 8 bytes of `x` is an ASCII digit, as a mask of non-digit bits: a byte
/// is a digit if its high nibble is 3 and adding 6 keeps it so. Carries only run from a
/// non-digit byte to later ones, so the first non-digit is found right.
#[inline(always)]
fn not_digits(x: u64) -> u64 {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    ((x & HIGH) ^ ZEROS) | ((x.wrapping_add(0x0606_0606_0606_0606) & HIGH) ^ ZEROS)
}

/// The leading digits among the 8 bytes from `i`: how many, and their value. `None` when
/// fewer than 8 bytes remain (the caller takes the general path there).
#[inline(always)]
pub(crate) fn digits8(b: &[u8], i: usize) -> Option<(usize, u64)> {
    let chunk: [u8; 8] = b.get(i..i + 8)?.try_into().ok()?;
    let x = u64::from_le_bytes(chunk);
    let n = (not_digits(x).trailing_zeros() / 8) as usize;
    // The digits as one 8-digit number with leading zeros (first character in the lowest
    // byte, as fast_float's eight-digit conversion takes them); later bytes shift out. No
    // branch for no digits (a shift by 64 would wrap): the mask clears the value instead.
    let none = ((n != 0) as u64).wrapping_neg();
    let v = (x.wrapping_sub(0x3030_3030_3030_3030) & none).wrapping_shl(8 * (8 - n as u32));
    let v = (v.wrapping_mul(10) + (v >> 8)) & 0x00FF_00FF_00FF_00FF;
    let v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_FFFF_0000_FFFF;
    Some((n, (v.wrapping_mul(10000) + (v >> 32)) & 0xFFFF_FFFF))
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

/// The nearest float64 of 10^-k for k <= 22.
const NEG_POW10_F64: [f64; 23] = [
    1e0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13,
    1e-14, 1e-15, 1e-16, 1e-17, 1e-18, 1e-19, 1e-20, 1e-21, 1e-22,
];

/// A number `-?int(.frac)?` as read: `digits / 10^scale`, negated if `negative`; `end` is
/// where its text ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decimal {
    pub negative: bool,
    pub digits: u64,
    pub scale: usize,
    pub end: usize,
}

/// The most digits taken (a float32 printed as a float64 has at most 17 significant ones,
/// and `0.` before them): their value fits an i64, which converts in one instruction.
const MAX_DIGITS: usize = 18;

/// Accumulates the digits from `i` into `d`, 8 bytes at a time; `None` past 18 digits in all
/// or within 8 bytes of the input's end. Returns how many digits were read. (Reading two or
/// three groups without a branch between them measured slower than this loop.)
#[inline(always)]
fn run(b: &[u8], i: &mut usize, d: &mut u64, count: &mut usize) -> Option<usize> {
    let mut read = 0;
    loop {
        let (n, v) = digits8(b, *i)?;
        *count += n;
        if *count > MAX_DIGITS {
            return None;
        }
        *d = *d * POW10_U64[n] + v;
        *i += n;
        read += n;
        if n < 8 {
            return Some(read);
        }
    }
}

/// Reads a plain JSON decimal at `i`; `None` for anything else (see the module's words).
#[inline(always)]
pub(crate) fn decimal(b: &[u8], i: usize) -> Option<Decimal> {
    let negative = b.get(i) == Some(&b'-');
    let start = i + negative as usize;
    let mut i = start;
    let (mut digits, mut count) = (0u64, 0usize);
    let whole = run(b, &mut i, &mut digits, &mut count)?;
    // JSON: at least one digit, no leading zero before another digit.
    if whole == 0 || (whole > 1 && b[start] == b'0') {
        return None;
    }
    let mut scale = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        scale = run(b, &mut i, &mut digits, &mut count)?;
        if scale == 0 {
            return None;
        }
    }
    // An exponent (or a second point, not JSON) is the general path's.
    if matches!(b.get(i), Some(b'.' | b'e' | b'E')) {
        return None;
    }
    Some(Decimal {
        negative,
        digits,
        scale,
        end: i,
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
        if self.digits > 1 << 53 || self.scale > 22 {
            return None;
        }
        Some(self.signed(self.digits as i64 as f64 / POW10_F64[self.scale]))
    }

    /// A float64 that rounds to the same float32 as the correctly rounded float64 does (what
    /// the general path and then `as f32` make), for a float32 field. The digits times the
    /// nearest float64 of 10^-scale is within 2 units in the last place of the exact value
    /// (three roundings of half a unit), the correctly rounded float64 within 3 (units are
    /// consecutive bit patterns; near a power of two, twice as many below it). Float32
    /// rounding drops the low 29 bits, so both round alike unless those bits are near the
    /// tie, `0x1000_0000`: refused there, and below float32's normal range (its rounding
    /// point moves) and above its largest value (the caller's range check wants the exact
    /// value). A multiplication, not a division: this is most of a range's cost.
    #[inline(always)]
    pub fn f64_for_f32(&self) -> Option<f64> {
        let a = self.digits as i64 as f64 * *NEG_POW10_F64.get(self.scale)?;
        const TIE: u64 = 1 << 28;
        const GUARD: u64 = 16;
        let low = a.to_bits() & ((1 << 29) - 1);
        let near_tie = low.wrapping_sub(TIE - GUARD) <= 2 * GUARD;
        if near_tie | !(f32::MIN_POSITIVE as f64..=f32::MAX as f64).contains(&a) {
            // Zero is exact, and below the range only by its sign.
            return (self.digits == 0).then(|| self.signed(0.0));
        }
        Some(self.signed(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lexical_parse_float::{format::JSON, FromLexicalWithOptions, Options};
    use proptest::prelude::*;

    const PAD: &str = ",1,2,3,4,5,6,7,8]";

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
        }
        Ok(())
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
            frac in prop::option::of("[0-9]{1,20}"),
        ) {
            let number = format!(
                "{}{whole}{}",
                if sign { "-" } else { "" },
                frac.map(|f| format!(".{f}")).unwrap_or_default()
            );
            agrees(&number)?;
        }

        /// The exact midpoints between neighbouring float32s, printed in full (they are
        /// exact in a float64): the double-rounding cases.
        #[test]
        fn float32_ties_are_left_to_the_general_path(bits in 0x0080_0000u32..0x7F00_0000) {
            let lo = f32::from_bits(bits) as f64;
            let hi = f32::from_bits(bits + 1) as f64;
            let mid = (lo + hi) / 2.0;
            for v in [mid, f64::from_bits(mid.to_bits() + 1), f64::from_bits(mid.to_bits() - 1)] {
                agrees(&format!("{v}"))?;
                agrees(&format!("{v:.17}"))?;
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
                digits: 16294673919677734,
                scale: 15,
                end: 19
            })
        );
        assert_eq!(at("0.5").map(|d| (d.digits, d.scale)), Some((5, 1)));
        for s in ["01.5", "1.", ".5", "-", "1e5", "1.5e-3", "1.2.3", "1234567890123456789", "x"] {
            assert_eq!(at(s), None, "{s}");
        }
        // Within 8 bytes of the end: the general path's.
        assert_eq!(decimal(b"1.5]", 0), None);
    }
}
