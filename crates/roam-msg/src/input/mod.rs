//! JSON or CBOR -> CDR, driven by the type: serde seeds that write CDR straight into the output
//! buffer as the input is parsed, with no intermediate tree (only fields given out of
//! declaration order are held back, see [`captured`]).
//!
//! rosbridge's rules (`message_conversion.py`, `_to_inst`): missing fields take their defaults;
//! unknown fields are refused; an integer is accepted for a float, not a float for an integer;
//! binary fields take base64 text (or, from CBOR, a byte string, or a list of numbers); `Time`
//! and `Duration` also take `secs`/`nsecs`; given a clock ([`crate::EncodeOptions::now`]), a
//! `Time` may be `"now"` and a `std_msgs/Header` without a stamp is stamped now.

pub(crate) mod captured;

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::cdr::write::Writer;
use crate::error::{EncodeError, EncodeErrorKind as K, Segment};
use crate::layout::{Elem, FieldLayout, StructLayout};
use crate::schema::{Multiplicity, Primitive};
use captured::{convert, Captured};

pub(crate) struct Ctx<'o> {
    pub w: Writer<'o>,
    /// The typed error behind the serde error being returned (serde errors are strings).
    pub err: Option<EncodeError>,
    /// The time `"now"` stands for in a `builtin_interfaces/Time` field, if allowed.
    pub now: Option<(i32, u32)>,
    /// The input is JSON text: byte strings the deserializer hands over are base64 text (asked
    /// for with `deserialize_bytes`, which skips a UTF-8 check base64 does not need), not raw
    /// bytes as from CBOR.
    pub json: bool,
}

impl Ctx<'_> {
    fn fail<E: de::Error>(&mut self, e: EncodeError) -> E {
        let msg = e.to_string();
        self.err = Some(e);
        E::custom(msg)
    }

    /// Adds `seg` to the path of an error coming out of a nested value.
    fn nest<T, E: de::Error>(
        &mut self,
        seg: impl FnOnce() -> Segment,
        r: Result<T, E>,
    ) -> Result<T, E> {
        if let Err(e) = &r {
            let inner = self
                .err
                .take()
                .unwrap_or_else(|| EncodeError::new(K::Syntax(e.to_string())));
            self.err = Some(inner.at(seg()));
        }
        r
    }
}

fn field_seg(f: &FieldLayout) -> impl FnOnce() -> Segment + '_ {
    move || Segment::Field(f.name.clone())
}

/// A whole message.
pub(crate) struct StructSeed<'c, 'o> {
    pub ctx: &'c mut Ctx<'o>,
    pub layout: &'c StructLayout,
}

impl<'de> DeserializeSeed<'de> for StructSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(StructVisitor {
            ctx: self.ctx,
            layout: self.layout,
        })
    }
}

struct StructVisitor<'c, 'o> {
    ctx: &'c mut Ctx<'o>,
    layout: &'c StructLayout,
}

impl<'de> Visitor<'de> for StructVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object for {}", self.layout.name)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        match self.ctx.now {
            Some((sec, nanosec))
                if v == "now" && self.layout.time_like && self.layout.name.name == "Time" =>
            {
                self.ctx.w.int(Primitive::Int32, sec as i128);
                self.ctx.w.int(Primitive::UInt32, nanosec as i128);
                Ok(())
            }
            _ => Err(self.ctx.fail(EncodeError::mismatch(
                format!("an object for {}", self.layout.name),
                "a string",
            ))),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (ctx, l) = (self.ctx, self.layout);
        let n = l.fields.len();
        let mut next = 0usize;
        let mut pending: Vec<Option<Captured>> = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed(l))? {
            let idx = match key {
                Key::Field(i) => i,
                Key::Unknown(name) => return Err(ctx.fail(EncodeError::new(K::UnknownField(name)))),
            };
            let f = &l.fields[idx];
            if idx < next || pending.get(idx).is_some_and(Option::is_some) {
                map.next_value::<IgnoredAny>()?;
                return Err(ctx
                    .fail(EncodeError::new(K::DuplicateField).at(Segment::Field(f.name.clone()))));
            }
            if idx == next {
                let r = map.next_value_seed(FieldSeed {
                    ctx: &mut *ctx,
                    field: f,
                });
                ctx.nest(field_seg(f), r)?;
                next += 1;
                while let Some(v) = pending.get_mut(next).and_then(Option::take) {
                    encode_captured(ctx, &l.fields[next], v)?;
                    next += 1;
                }
            } else {
                if pending.is_empty() {
                    pending.resize_with(n, || None);
                }
                pending[idx] = Some(map.next_value::<Captured>()?);
            }
        }
        if n == 0 {
            ctx.w.out.push(0);
        }
        while next < n {
            let f = &l.fields[next];
            match pending.get_mut(next).and_then(Option::take) {
                Some(v) => encode_captured(ctx, f, v)?,
                // rosbridge stamps a std_msgs/Header given without a stamp with its clock.
                None if f.name == "stamp"
                    && l.name.package == "std_msgs"
                    && l.name.name == "Header"
                    && ctx.now.is_some() =>
                {
                    let (sec, nanosec) = ctx.now.unwrap_or_default();
                    ctx.w.int(Primitive::Int32, sec as i128);
                    ctx.w.int(Primitive::UInt32, nanosec as i128);
                }
                None => {
                    let r = ctx.w.default_field(f).map_err(|e| ctx.fail::<A::Error>(e));
                    ctx.nest(field_seg(f), r)?;
                }
            }
            next += 1;
        }
        Ok(())
    }
}

fn encode_captured<E: de::Error>(ctx: &mut Ctx<'_>, f: &FieldLayout, v: Captured) -> Result<(), E> {
    let r = FieldSeed {
        ctx: &mut *ctx,
        field: f,
    }
    .deserialize(v)
    .map_err(convert::<E>);
    ctx.nest(field_seg(f), r)
}

enum Key {
    Field(usize),
    Unknown(String),
}

struct KeySeed<'a>(&'a StructLayout);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        let l = self.0;
        let alias = match v {
            "secs" if l.time_like => "sec",
            "nsecs" if l.time_like => "nanosec",
            other => other,
        };
        Ok(match l.fields.iter().position(|f| f.name == alias) {
            Some(i) => Key::Field(i),
            None => Key::Unknown(v.to_string()),
        })
    }
}

struct FieldSeed<'c, 'o> {
    ctx: &'c mut Ctx<'o>,
    field: &'c FieldLayout,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.field.multiplicity {
            Multiplicity::Single => ElemSeed {
                ctx: self.ctx,
                elem: &self.field.elem,
            }
            .deserialize(d),
            _ if self.field.binary && self.ctx.json => d.deserialize_bytes(ArrayVisitor {
                ctx: self.ctx,
                field: self.field,
            }),
            _ => d.deserialize_any(ArrayVisitor {
                ctx: self.ctx,
                field: self.field,
            }),
        }
    }
}

struct ElemSeed<'c, 'o> {
    ctx: &'c mut Ctx<'o>,
    elem: &'c Elem,
}

impl<'de> DeserializeSeed<'de> for ElemSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.elem {
            Elem::Prim(p) => d.deserialize_any(PrimVisitor {
                ctx: self.ctx,
                p: *p,
            }),
            Elem::String { bound } => d.deserialize_any(StrVisitor {
                ctx: self.ctx,
                bound: *bound,
                wide: false,
            }),
            Elem::WString { bound } => d.deserialize_any(StrVisitor {
                ctx: self.ctx,
                bound: *bound,
                wide: true,
            }),
            Elem::Struct(l) => d.deserialize_any(StructVisitor {
                ctx: self.ctx,
                layout: l,
            }),
        }
    }
}

struct PrimVisitor<'c, 'o> {
    ctx: &'c mut Ctx<'o>,
    p: Primitive,
}

impl PrimVisitor<'_, '_> {
    fn int<E: de::Error>(self, v: i128) -> Result<(), E> {
        if self.p.is_float() {
            self.ctx.w.float(self.p, v as f64);
            return Ok(());
        }
        match self.p.int_range() {
            Some((lo, hi)) if v >= lo && v <= hi => {
                self.ctx.w.int(self.p, v);
                Ok(())
            }
            Some(_) => Err(self.ctx.fail(EncodeError::new(K::OutOfRange {
                value: v.to_string(),
                ty: self.p.msg_name(),
            }))),
            None => Err(self
                .ctx
                .fail(EncodeError::mismatch(self.p.msg_name(), "a number"))),
        }
    }
}

impl<'de> Visitor<'de> for PrimVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {}", self.p.msg_name())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        if self.p == Primitive::Bool {
            self.ctx.w.int(self.p, v as i128);
            return Ok(());
        }
        Err(self
            .ctx
            .fail(EncodeError::mismatch(self.p.msg_name(), "a bool")))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.int(v as i128)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.int(v as i128)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        match self.p {
            Primitive::Float32 if v.is_finite() && v.abs() > f32::MAX as f64 => {
                Err(self.ctx.fail(EncodeError::new(K::OutOfRange {
                    value: v.to_string(),
                    ty: "float32",
                })))
            }
            p if p.is_float() => {
                self.ctx.w.float(p, v);
                Ok(())
            }
            p => Err(self.ctx.fail(EncodeError::mismatch(
                p.msg_name(),
                format!("the float {v}"),
            ))),
        }
    }
    /// `null` is how NaN and infinities leave as JSON; it comes back as NaN.
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        if self.p.is_float() {
            self.ctx.w.float(self.p, f64::NAN);
            return Ok(());
        }
        Err(self
            .ctx
            .fail(EncodeError::mismatch(self.p.msg_name(), "null")))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(self
            .ctx
            .fail(EncodeError::mismatch(self.p.msg_name(), "a string")))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(self
            .ctx
            .fail(EncodeError::mismatch(self.p.msg_name(), "an array")))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(self
            .ctx
            .fail(EncodeError::mismatch(self.p.msg_name(), "an object")))
    }
}

struct StrVisitor<'c, 'o> {
    ctx: &'c mut Ctx<'o>,
    bound: Option<u32>,
    wide: bool,
}

impl<'de> Visitor<'de> for StrVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        if let Some(bound) = self.bound {
            let found = v.chars().count();
            if found > bound as usize {
                return Err(self
                    .ctx
                    .fail(EncodeError::new(K::StringTooLong { bound, found })));
            }
        }
        let r = if self.wide {
            self.ctx.w.wstring(v)
        } else {
            self.ctx.w.string(v)
        };
        r.map_err(|e| self.ctx.fail(e))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(self.ctx.fail(EncodeError::mismatch("a string", "a bool")))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(self.ctx.fail(EncodeError::mismatch("a string", "a number")))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(self.ctx.fail(EncodeError::mismatch("a string", "a number")))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(self.ctx.fail(EncodeError::mismatch("a string", "a number")))
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(self.ctx.fail(EncodeError::mismatch("a string", "null")))
    }
}

/// One element of a float array: a number, `null` (NaN), or what else was there.
enum Num {
    Value(f64),
    Not(&'static str),
}

impl<'de> serde::Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        d.deserialize_any(NumVisitor)
    }
}

struct NumVisitor;

impl<'de> Visitor<'de> for NumVisitor {
    type Value = Num;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number or null")
    }
    fn visit_f64<E>(self, v: f64) -> Result<Num, E> {
        Ok(Num::Value(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Num, E> {
        Ok(Num::Value(v as f64))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Num, E> {
        Ok(Num::Value(v as f64))
    }
    fn visit_unit<E>(self) -> Result<Num, E> {
        Ok(Num::Value(f64::NAN))
    }
    fn visit_none<E>(self) -> Result<Num, E> {
        Ok(Num::Value(f64::NAN))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Num, E> {
        Ok(Num::Not("a bool"))
    }
    fn visit_str<E>(self, _: &str) -> Result<Num, E> {
        Ok(Num::Not("a string"))
    }
    fn visit_bytes<E>(self, _: &[u8]) -> Result<Num, E> {
        Ok(Num::Not("bytes"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Num, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Num::Not("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Num, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Num::Not("an object"))
    }
}

struct ArrayVisitor<'c, 'o> {
    ctx: &'c mut Ctx<'o>,
    field: &'c FieldLayout,
}

impl ArrayVisitor<'_, '_> {
    fn begin(&mut self) -> Option<usize> {
        self.field
            .multiplicity
            .is_sequence()
            .then(|| self.ctx.w.begin_len())
    }

    fn finish<E: de::Error>(self, at: Option<usize>, count: usize) -> Result<(), E> {
        let r = match self.field.multiplicity {
            Multiplicity::Fixed(n) if count != n as usize => {
                Err(EncodeError::new(K::WrongLength {
                    expected: n,
                    found: count,
                }))
            }
            Multiplicity::Bounded(bound) if count > bound as usize => {
                Err(EncodeError::new(K::BoundExceeded {
                    bound,
                    found: count,
                }))
            }
            _ => match at {
                Some(at) => self.ctx.w.patch_len(at, count),
                None => Ok(()),
            },
        };
        r.map_err(|e| self.ctx.fail(e))
    }

    /// Float arrays (scans, covariances) are the bulk of numeric JSON: read each number
    /// straight into CDR, aligning once, without the per-element seed machinery.
    fn float_seq<'de, A: SeqAccess<'de>>(
        self,
        p: Primitive,
        mut seq: A,
        at: Option<usize>,
        limit: usize,
    ) -> Result<(), A::Error> {
        let mut count = 0usize;
        let big = self.ctx.w.endian == crate::cdr::Endian::Big;
        loop {
            let r = seq.next_element::<Num>();
            let v = match self.ctx.nest(|| Segment::Index(count), r)? {
                Some(Num::Value(v)) => v,
                Some(Num::Not(found)) => {
                    let e = EncodeError::mismatch(p.msg_name(), found).at(Segment::Index(count));
                    return Err(self.ctx.fail(e));
                }
                None => break,
            };
            if count == 0 {
                self.ctx.w.align(p.size());
            }
            let out = &mut *self.ctx.w.out;
            if p == Primitive::Float32 {
                if v.is_finite() && v.abs() > f32::MAX as f64 {
                    let e = EncodeError::new(K::OutOfRange {
                        value: v.to_string(),
                        ty: "float32",
                    })
                    .at(Segment::Index(count));
                    return Err(self.ctx.fail(e));
                }
                let b = v as f32;
                out.extend_from_slice(&if big {
                    b.to_be_bytes()
                } else {
                    b.to_le_bytes()
                });
            } else {
                out.extend_from_slice(&if big {
                    v.to_be_bytes()
                } else {
                    v.to_le_bytes()
                });
            }
            count += 1;
            if count > limit {
                return self.finish(at, count);
            }
        }
        self.finish(at, count)
    }

    /// A binary field given as base64 text.
    fn base64<E: de::Error>(mut self, v: &[u8]) -> Result<(), E> {
        if !self.field.binary {
            return Err(self.ctx.fail(EncodeError::mismatch("an array", "a string")));
        }
        let at = self.begin();
        let start = self.ctx.w.out.len();
        // Standard alphabet, padded (what every client sends) straight into the output; else
        // the forgiving form (no padding, ASCII whitespace), as lenient as Python's b64decode
        // about those.
        if base64_simd::STANDARD
            .decode_append(v, self.ctx.w.out)
            .is_err()
        {
            self.ctx.w.out.truncate(start);
            match base64_simd::forgiving_decode_to_vec(v) {
                Ok(bytes) => self.ctx.w.out.extend_from_slice(&bytes),
                Err(e) => return Err(self.ctx.fail(EncodeError::new(K::Base64(e.to_string())))),
            }
        }
        let count = self.ctx.w.out.len() - start;
        self.finish(at, count)
    }

    fn raw_bytes<E: de::Error>(mut self, v: &[u8]) -> Result<(), E> {
        let size = match self.field.elem {
            Elem::Prim(p) if p != Primitive::Bool => p.size(),
            _ => return Err(self.ctx.fail(EncodeError::mismatch("an array", "bytes"))),
        };
        if !v.len().is_multiple_of(size) {
            let found = format!(
                "{} bytes, not a whole number of {size}-byte elements",
                v.len()
            );
            return Err(self.ctx.fail(EncodeError::mismatch("a typed array", found)));
        }
        let at = self.begin();
        self.ctx.w.packed_le(size, v);
        self.finish(at, v.len() / size)
    }
}

impl<'de> Visitor<'de> for ArrayVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.binary {
            f.write_str("base64 text or an array")
        } else {
            f.write_str("an array")
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let at = self.begin();
        let limit = match self.field.multiplicity {
            Multiplicity::Fixed(n) | Multiplicity::Bounded(n) => n as usize,
            _ => usize::MAX,
        };
        if let Elem::Prim(p @ (Primitive::Float32 | Primitive::Float64)) = self.field.elem {
            return self.float_seq(p, seq, at, limit);
        }
        let mut count = 0usize;
        loop {
            let seed = ElemSeed {
                ctx: &mut *self.ctx,
                elem: &self.field.elem,
            };
            let r = seq.next_element_seed(seed);
            match self.ctx.nest(|| Segment::Index(count), r)? {
                Some(()) => count += 1,
                None => break,
            }
            if count > limit {
                // Stop at the first element too many instead of reading the rest.
                return self.finish(at, count);
            }
        }
        self.finish(at, count)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.base64(v.as_bytes())
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<(), E> {
        if self.ctx.json {
            self.base64(v)
        } else {
            self.raw_bytes(v)
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(self.ctx.fail(EncodeError::mismatch("an array", "null")))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(self.ctx.fail(EncodeError::mismatch("an array", "a bool")))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(self.ctx.fail(EncodeError::mismatch("an array", "a number")))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(self.ctx.fail(EncodeError::mismatch("an array", "a number")))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(self.ctx.fail(EncodeError::mismatch("an array", "a number")))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(self
            .ctx
            .fail(EncodeError::mismatch("an array", "an object")))
    }
}
