//! Arrays and sequences through the serde seeds (CBOR): element by element, as base64 text
//! (binary fields), as raw or typed-array bytes, with a direct path for float arrays.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{rules, Ctx, ElemSeed};
use crate::error::{EncodeError, Segment};
use crate::layout::{Elem, FieldLayout};
use crate::schema::Primitive;

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

pub(super) struct ArrayVisitor<'c, 'o> {
    pub ctx: &'c mut Ctx<'o>,
    pub field: &'c FieldLayout,
}

impl ArrayVisitor<'_, '_> {
    fn begin(&mut self) -> Option<usize> {
        self.field
            .multiplicity
            .is_sequence()
            .then(|| self.ctx.w.begin_len())
    }

    fn finish<E: de::Error>(self, at: Option<usize>, count: usize) -> Result<(), E> {
        rules::finish_array(&mut self.ctx.w, self.field.multiplicity, at, count)
            .map_err(|e| self.ctx.fail(e))
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
                if let Err(e) = rules::check_float32(v) {
                    return Err(self.ctx.fail(e.at(Segment::Index(count))));
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
        match rules::put_base64(&mut self.ctx.w, v) {
            Ok(count) => self.finish(at, count),
            Err(e) => Err(self.ctx.fail(e)),
        }
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
        let limit = rules::element_limit(self.field.multiplicity);
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
        self.raw_bytes(v)
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
