//! The JSON text reader against the serde seeds (what CBOR goes through, here fed by
//! serde_json, which was the JSON reader before): on random JSON shaped like each type, with
//! fields in any order, wrong kinds, values at and past their ranges and bounds, escapes and
//! whitespace, both must give the same CDR or the same error kind at the same path.

use proptest::prelude::*;
use serde::de::DeserializeSeed;

use crate::error::{EncodeError, EncodeErrorKind as K};
use crate::layout::{Elem, FieldLayout, StructLayout};
use crate::schema::{Multiplicity, Primitive};
use crate::{EncodeOptions, Endian, MessageType, TypeRegistry};

const DEFS: &[(&str, &str)] = &[
    (
        "std_msgs/msg/Header",
        "builtin_interfaces/Time stamp\nstring frame_id\n",
    ),
    (
        "t/msg/Scan",
        "std_msgs/Header header\nfloat32 angle_min\nfloat64 t\nfloat32[] ranges\nfloat64[<=3] b\n",
    ),
    (
        "t/msg/All",
        "bool b\nbyte y\nchar c\nint8 i8\nuint8 u8\nint16 i16\nuint16 u16\nint32 i32\nuint32 u32\n\
         int64 i64\nuint64 u64\nfloat32 f32\nfloat64 f64\nstring s\nwstring w\nstring<=3 bs\n\
         uint8[] data\nuint8[4] fixed_data\nuint8[<=4] bounded_data\nchar[] chars\n\
         float64[3] v\nint32[<=2] bi\nstring[] names\nwstring<=2[<=2] ws\nbuiltin_interfaces/Duration d\n\
         builtin_interfaces/Time[] times\nEmpty e\nbool[] flags\n",
    ),
    ("t/msg/Empty", ""),
    (
        "t/msg/Floats",
        "float32[] a\nfloat32[<=5] b\nfloat64[] c\nfloat32[3] d\n",
    ),
    (
        "t/msg/Nested",
        "std_msgs/Header[] headers\nAll[<=2] all\nEmpty[2] e\nint64 x 5\nDefaults d\n",
    ),
    (
        "t/msg/Defaults",
        "int32 a 7\nstring s \"hi\"\nfloat64[2] v [1.5, -2]\nint8[] q [1, 2]\n",
    ),
];

fn types() -> Vec<MessageType> {
    let mut reg = TypeRegistry::with_builtins();
    for (name, text) in DEFS {
        reg.add_msg(name, text).unwrap();
    }
    [
        "t/msg/Scan",
        "t/msg/All",
        "t/msg/Nested",
        "std_msgs/msg/Header",
    ]
    .iter()
    .map(|t| reg.resolve(t).unwrap())
    .collect()
}

/// The serde seeds fed by serde_json.
fn via_serde(ty: &MessageType, text: &[u8], opts: &EncodeOptions) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(text);
    crate::encode_with(ty, opts, &mut out, |seed| {
        seed.deserialize(&mut de).and_then(|()| de.end())
    })?;
    Ok(out)
}

fn via_reader(ty: &MessageType, text: &[u8], opts: &EncodeOptions) -> Result<Vec<u8>, EncodeError> {
    let mut out = vec![7u8];
    let r = super::json::json_to_cdr(&ty.0, text, opts, &mut out);
    if r.is_err() {
        assert_eq!(out, [7u8], "the output is left as it was");
    }
    r.map(|()| out[1..].to_vec())
}

/// Same result; errors of the same kind at the same path (syntax messages are each reader's).
fn same(a: &Result<Vec<u8>, EncodeError>, b: &Result<Vec<u8>, EncodeError>) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => a == b,
        (Err(a), Err(b)) => {
            a.path == b.path
                && match (&a.kind, &b.kind) {
                    (K::Syntax(_), K::Syntax(_)) => true,
                    (K::Base64(_), K::Base64(_)) => true,
                    (a, b) => a == b,
                }
        }
        _ => false,
    }
}

/// A small deterministic generator (the proptest case gives the seed). Tame, it writes JSON
/// the type accepts (to compare the bytes written); wild, it also writes wrong kinds, values
/// out of range and past bounds, unknown and repeated fields (to compare errors).
struct Gen {
    state: u64,
    wild: bool,
}

impl Gen {
    fn new(seed: u64) -> Gen {
        let mut g = Gen {
            state: seed,
            wild: false,
        };
        g.wild = g.one_in(2);
        g
    }
    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }
    /// Something wrong, now and then, when wild.
    fn odd(&mut self, n: u64) -> bool {
        self.wild && self.one_in(n)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
    fn ws(&mut self, s: &mut String) {
        if self.one_in(4) {
            s.push_str([" ", "\n", "\t ", "\r\n  "][self.below(4) as usize]);
        }
    }

    fn any_value(&mut self, s: &mut String) {
        let v = [
            "null",
            "true",
            "false",
            "1",
            "-2.5",
            "\"x\"",
            "[]",
            "{}",
            "[1, \"a\"]",
            "{\"k\": [null]}",
        ];
        s.push_str(v[self.below(v.len() as u64) as usize]);
    }

    fn number(&mut self, s: &mut String, p: Primitive) {
        let (lo, hi) = p.int_range().unwrap_or((-(1 << 53), 1 << 53));
        let pick = match p {
            _ if self.wild => self.below(12),
            Primitive::Float32 => [0, 1, 2, 3, 4, 5, 9, 10, 11][self.below(9) as usize],
            Primitive::Float64 => [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11][self.below(11) as usize],
            _ => [0, 1, 11][self.below(3) as usize],
        };
        let text = match pick {
            0 => lo.to_string(),
            1 => hi.to_string(),
            2 => (lo - 1).to_string(),
            3 => (hi + 1).to_string(),
            4 => "-0".into(),
            5 => ["1.0", "1e3", "-0.0", "1E-2", "0.5", "2.5e-320"][self.below(6) as usize].into(),
            6 => [
                "1e39",
                "-3.5e38",
                "1e400",
                "18446744073709551616",
                "123456789012345678901234",
            ][self.below(5) as usize]
                .into(),
            7 => format!("{}", f64::from_bits(self.next())),
            8 => format!("{:e}", f64::from_bits(self.next())),
            9 => format!("{}", f32::from_bits(self.next() as u32) as f64),
            10 => format!("{}.0", self.below(100000)),
            _ => {
                (lo + (self.below((hi - lo + 1).min(u64::MAX as i128) as u64) as i128)).to_string()
            }
        };
        // Bit patterns of NaN and infinity print as words, not JSON numbers.
        if text.contains("inf") || text.contains("NaN") {
            s.push_str("null");
        } else {
            s.push_str(&text);
        }
    }

    fn string(&mut self, s: &mut String, len: u64) {
        let chars = ['a', 'é', '😀', '"', '\\', '\n', '\u{1}', '✓', '/', ' '];
        let mut v = String::new();
        for _ in 0..self.below(len + 1) {
            v.push(chars[self.below(chars.len() as u64) as usize]);
        }
        let mut text = serde_json::to_string(&v).unwrap();
        if self.one_in(4) {
            text = text.replace('é', "\\u00e9").replace('😀', "\\ud83d\\ude00");
        }
        s.push_str(&text);
    }

    fn prim(&mut self, s: &mut String, p: Primitive) {
        if !self.wild {
            return match p {
                Primitive::Bool => s.push_str(["true", "false"][self.below(2) as usize]),
                _ if p.is_float() && self.one_in(8) => s.push_str("null"),
                _ => self.number(s, p),
            };
        }
        match self.below(14) {
            0 => s.push_str("null"),
            1 => s.push_str(["true", "false"][self.below(2) as usize]),
            2 => self.string(s, 2),
            3 => self.any_value(s),
            _ if p == Primitive::Bool => s.push_str(["true", "false"][self.below(2) as usize]),
            _ => self.number(s, p),
        }
    }

    fn elem(&mut self, s: &mut String, e: &Elem) {
        match e {
            Elem::Prim(p) => self.prim(s, *p),
            Elem::String { bound } | Elem::WString { bound } => {
                if self.odd(10) {
                    self.any_value(s)
                } else {
                    let longest = bound.map_or(6, |b| b as u64 + self.wild as u64);
                    self.string(s, longest)
                }
            }
            Elem::Struct(l) => self.object(s, l),
        }
    }

    fn field(&mut self, s: &mut String, f: &FieldLayout) {
        if f.multiplicity == Multiplicity::Single {
            return self.elem(s, &f.elem);
        }
        let n = match f.multiplicity {
            Multiplicity::Fixed(n) | Multiplicity::Bounded(n) => n as u64,
            _ => 4,
        };
        let count = match f.multiplicity {
            Multiplicity::Fixed(_) if !self.odd(3) => n,
            _ if self.wild => self.below(n + 2),
            _ => self.below(n + 1),
        };
        if f.binary && self.one_in(2) {
            let bytes: Vec<u8> = (0..count).map(|_| self.next() as u8).collect();
            let mut b64 = base64_simd::STANDARD.encode_to_string(&bytes);
            if self.one_in(5) {
                b64 = b64.trim_end_matches('=').to_string();
            }
            if self.odd(8) {
                b64.push('!');
            }
            return s.push_str(&format!("\"{b64}\""));
        }
        if self.odd(12) {
            return self.any_value(s);
        }
        s.push('[');
        for i in 0..count {
            if i > 0 {
                s.push(',');
            }
            self.ws(s);
            self.elem(s, &f.elem);
        }
        self.ws(s);
        s.push(']');
    }

    fn object(&mut self, s: &mut String, l: &StructLayout) {
        if self.odd(30) {
            return self.any_value(s);
        }
        if l.time_like && self.odd(6) {
            return s.push_str("\"now\"");
        }
        let mut order: Vec<usize> = (0..l.fields.len()).filter(|_| !self.one_in(4)).collect();
        if !self.one_in(3) {
            // Out of declaration order.
            for i in (1..order.len()).rev() {
                order.swap(i, self.below(i as u64 + 1) as usize);
            }
        }
        if !order.is_empty() && self.odd(25) {
            order.push(order[0]);
        }
        s.push('{');
        for (k, &i) in order.iter().enumerate() {
            if k > 0 {
                s.push(',');
            }
            self.ws(s);
            let f = &l.fields[i];
            let key = match f.name.as_str() {
                "sec" if l.time_like && self.one_in(2) => "secs",
                "nanosec" if l.time_like && self.one_in(2) => "nsecs",
                other => other,
            };
            s.push_str(&format!("\"{key}\":"));
            self.ws(s);
            self.field(s, f);
        }
        if self.odd(30) {
            s.push_str(if order.is_empty() {
                "\"zz\": 1"
            } else {
                ", \"zz\": 1"
            });
        }
        self.ws(s);
        s.push('}');
    }
}

fn options(g: &mut Gen) -> EncodeOptions {
    EncodeOptions {
        endian: if g.one_in(2) {
            Endian::Big
        } else {
            Endian::Little
        },
        now: g.one_in(2).then_some((5, 6)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn reader_matches_the_serde_seeds(seed in 1u64.., which in 0usize..4) {
        let ty = &types()[which];
        let mut g = Gen::new(seed);
        let mut text = String::new();
        g.object(&mut text, &ty.0);
        let opts = options(&mut g);
        let old = via_serde(ty, text.as_bytes(), &opts);
        let new = via_reader(ty, text.as_bytes(), &opts);
        prop_assert!(same(&old, &new), "{text}\nserde: {old:?}\nreader: {new:?}");
        prop_assert!(g.wild || new.is_ok(), "{text}\nreader: {new:?}");
    }

    /// Cut or corrupted text: both refuse it, or both read it to the same bytes. (Not with a
    /// raw tab, newline, form feed or carriage return inside base64 text: the reader lets the
    /// base64 decoder skip them, as serde_json did for byte strings, which the serde seeds
    /// here do not ask it for.)
    #[test]
    fn reader_agrees_on_damaged_text(seed in 1u64.., which in 0usize..4, cut in any::<prop::sample::Index>(), byte in any::<u8>().prop_filter("base64 whitespace", |b| !b"\t\n\x0c\r".contains(b))) {
        let ty = &types()[which];
        let mut g = Gen::new(seed);
        let mut text = String::new();
        g.object(&mut text, &ty.0);
        let mut bytes = text.into_bytes();
        let at = cut.index(bytes.len().max(1));
        if g.one_in(2) {
            bytes.truncate(at);
        } else if at < bytes.len() {
            bytes[at] = byte;
        }
        let opts = options(&mut g);
        let old = via_serde(ty, &bytes, &opts);
        let new = via_reader(ty, &bytes, &opts);
        prop_assert_eq!(old.is_ok(), new.is_ok(), "{}\nserde: {:?}\nreader: {:?}", String::from_utf8_lossy(&bytes), old, new);
        if let (Ok(a), Ok(b)) = (&old, &new) {
            prop_assert_eq!(a, b);
        }
    }
}

/// One element of a float array as senders print them, and the texts near the float
/// readers' edges: float32 rounding ties (and values some way off them), truncated digits,
/// float32's range ends, exponents, nulls and what is not JSON.
fn float_text(g: &mut Gen) -> String {
    let sign = if g.one_in(4) { "-" } else { "" };
    match g.below(12) {
        0 | 1 => format!("{}", f32::from_bits(g.next() as u32) as f64),
        2 => format!("{sign}{}.0", g.below(10_000)),
        3 => format!("{sign}{}", g.below(10_000_000)),
        4 | 5 => {
            // Off a float32 tie by up to 5000 float64 steps, in full or cut short.
            let bits = 0x0080_0000 + g.below(0x7F00_0000 - 0x0080_0000) as u32;
            let mid = (f32::from_bits(bits) as f64 + f32::from_bits(bits + 1) as f64) / 2.0;
            let off = g.below(10_001) as i64 - 5000;
            let v = f64::from_bits((mid.to_bits() as i64 + off) as u64);
            let t = if g.odd(2) {
                format!("{v}")
            } else {
                format!("{v:.17}")
            };
            let keep = t.len() - g.below(4) as usize;
            format!("{sign}{}", &t[..keep.max(1)])
        }
        6 => {
            // Any digits: long fractions, leading zeros, 8 or more whole digits.
            let digits = |g: &mut Gen, n: u64| {
                (0..n)
                    .map(|_| char::from(b'0' + g.below(10) as u8))
                    .collect::<String>()
            };
            let whole = if g.one_in(3) {
                "0".to_string()
            } else {
                let n = g.below(9);
                format!("{}", 1 + g.below(9)) + &digits(g, n)
            };
            let n = g.below(24);
            let frac = digits(g, n);
            if frac.is_empty() {
                format!("{sign}{whole}")
            } else {
                format!("{sign}{whole}.{frac}")
            }
        }
        7 => [
            "3.4028234663852886e38",
            "3.4028235e38",
            "340282356779733661637539395458142568448",
            "340282346638528859811704183484516925440.0",
            "3.4e38",
            "3.41e38",
            "1e-45",
            "1.1754943508222875e-38",
            "1.1754942e-38",
            "0.0",
            "-0.0",
            "0",
            "1e39",
        ][g.below(13) as usize]
            .to_string(),
        8 => ["1e3", "1.5E-7", "2.5e+2", "null", "7E0"][g.below(5) as usize].to_string(),
        9 if g.wild => [
            "-", "01", "1.", ".5", "1.5.3", "--1", "1e", "true", "\"1\"", "[]", "0x1", "1,",
        ][g.below(12) as usize]
            .to_string(),
        _ => format!("{}", f32::from_bits(g.next() as u32)),
    }
}

fn float_array(g: &mut Gen, n: u64) -> String {
    // Written as roam and rosbridge do, as Python's json.dumps does, or mixed.
    let style = g.below(3);
    let mut s = String::from("[");
    for k in 0..n {
        if k > 0 {
            let pick = if style < 2 { style } else { g.below(5) };
            s.push_str([",", ", ", " ,", ",\n  ", ",  "][pick as usize]);
        }
        let t = float_text(g);
        // Bit patterns of NaN and infinity print as words, not JSON numbers.
        s.push_str(if t.contains("inf") || t.contains("NaN") {
            "null"
        } else {
            &t
        });
    }
    s.push(']');
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Float arrays, where the float32 loop and its shortcut run: the same CDR or the same
    /// error as the serde seeds (whose numbers are serde_json's, correctly rounded).
    #[test]
    fn float_arrays_read_as_the_serde_seeds_do(seed in 1u64.., wild in prop::bool::ANY) {
        let mut reg = TypeRegistry::with_builtins();
        for (name, text) in DEFS {
            reg.add_msg(name, text).unwrap();
        }
        let ty = reg.resolve("t/msg/Floats").unwrap();
        let mut g = Gen::new(seed);
        g.wild = wild;
        let lens = [1 + g.below(60), g.below(7), g.below(20), if wild { g.below(5) } else { 3 }];
        let [a, b, c, d] = lens.map(|n| float_array(&mut g, n));
        let text = format!("{{\"a\":{a},\"b\":{b},\"c\":{c},\"d\":{d}}}");
        let opts = options(&mut g);
        let old = via_serde(&ty, text.as_bytes(), &opts);
        let new = via_reader(&ty, text.as_bytes(), &opts);
        prop_assert!(same(&old, &new), "{text}\nserde: {old:?}\nreader: {new:?}");
    }
}
