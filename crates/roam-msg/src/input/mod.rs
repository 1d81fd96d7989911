//! JSON or CBOR -> CDR, driven by the type. JSON text goes through [`json`], a one-pass reader
//! over a tokenizer; CBOR (read into a [`Captured`] tree by `crate::cbor`) through the serde
//! seeds here, which write CDR straight into the output buffer. Both apply [`rules`].
//!
//! rosbridge's rules (`message_conversion.py`, `_to_inst`): missing fields take their defaults;
//! unknown fields are refused; an integer is accepted for a float, not a float for an integer;
//! binary fields take base64 text (or, from CBOR, a byte string, or a list of numbers); `Time`
//! and `Duration` also take `secs`/`nsecs`; given a clock ([`crate::EncodeOptions::now`]), a
//! `Time` may be `"now"` and a `std_msgs/Header` without a stamp is stamped now.

mod array;
pub(crate) mod captured;
pub(crate) mod json;
mod json_decimal;
mod json_floats;
pub(crate) mod json_lex;
#[cfg(test)]
mod json_tests;
mod rules;

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

impl StructVisitor<'_, '_> {
    fn not_object<E: de::Error>(self, found: &str) -> E {
        let expected = format!("an object for {}", self.layout.name);
        self.ctx.fail(EncodeError::mismatch(expected, found))
    }
}

impl<'de> Visitor<'de> for StructVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object for {}", self.layout.name)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        if rules::put_now(&mut self.ctx.w, self.layout, v, self.ctx.now) {
            return Ok(());
        }
        Err(self.not_object("a string"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(self.not_object("a bool"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(self.not_object("a number"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(self.not_object("a number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(self.not_object("a number"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(self.not_object("null"))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<(), E> {
        Err(self.not_object("bytes"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(self.not_object("an array"))
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
                None => {
                    let r = rules::put_missing(&mut ctx.w, l, f, ctx.now)
                        .map_err(|e| ctx.fail::<A::Error>(e));
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
        Ok(match rules::field_index(self.0, v) {
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
            _ => d.deserialize_any(array::ArrayVisitor {
                ctx: self.ctx,
                field: self.field,
            }),
        }
    }
}

pub(super) struct ElemSeed<'c, 'o> {
    pub ctx: &'c mut Ctx<'o>,
    pub elem: &'c Elem,
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
        rules::put_int(&mut self.ctx.w, self.p, v).map_err(|e| self.ctx.fail(e))
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
        rules::put_float(&mut self.ctx.w, self.p, v).map_err(|e| self.ctx.fail(e))
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
        rules::put_str(&mut self.ctx.w, v, self.bound, self.wide).map_err(|e| self.ctx.fail(e))
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
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<(), E> {
        Err(self.ctx.fail(EncodeError::mismatch("a string", "bytes")))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(self.ctx.fail(EncodeError::mismatch("a string", "an array")))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(self
            .ctx
            .fail(EncodeError::mismatch("a string", "an object")))
    }
}
