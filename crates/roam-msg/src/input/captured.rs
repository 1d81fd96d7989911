//! A value held back when an input gives a message's fields out of order: CDR needs them in
//! declaration order, so a field that arrives early is kept here until its turn. In-order input
//! (what every ROS tool sends) never uses it.

use serde::de::value::{Error, MapDeserializer, SeqDeserializer};
use serde::de::{self, Deserialize, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Captured {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(String),
    Bytes(Vec<u8>),
    Seq(Vec<Captured>),
    Map(Vec<(Captured, Captured)>),
}

impl<'de> Deserialize<'de> for Captured {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CapturedVisitor)
    }
}

struct CapturedVisitor;

impl<'de> Visitor<'de> for CapturedVisitor {
    type Value = Captured;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_unit<E>(self) -> Result<Captured, E> {
        Ok(Captured::Null)
    }
    fn visit_none<E>(self) -> Result<Captured, E> {
        Ok(Captured::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Captured, E> {
        Ok(Captured::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Captured, E> {
        Ok(Captured::I64(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Captured, E> {
        Ok(Captured::U64(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Captured, E> {
        Ok(Captured::F64(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Captured, E> {
        Ok(Captured::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Captured, E> {
        Ok(Captured::Str(v))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Captured, E> {
        Ok(Captured::Bytes(v.to_vec()))
    }
    fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Captured, E> {
        Ok(Captured::Bytes(v))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Captured, D::Error> {
        Captured::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Captured, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Captured::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Captured, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        Ok(Captured::Map(entries))
    }
}

impl<'de> Deserializer<'de> for Captured {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Captured::Null => visitor.visit_unit(),
            Captured::Bool(v) => visitor.visit_bool(v),
            Captured::I64(v) => visitor.visit_i64(v),
            Captured::U64(v) => visitor.visit_u64(v),
            Captured::F64(v) => visitor.visit_f64(v),
            Captured::Str(v) => visitor.visit_string(v),
            Captured::Bytes(v) => visitor.visit_byte_buf(v),
            Captured::Seq(v) => visitor.visit_seq(SeqDeserializer::new(v.into_iter())),
            Captured::Map(v) => visitor.visit_map(MapDeserializer::new(v.into_iter())),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl IntoDeserializer<'_, Error> for Captured {
    type Deserializer = Captured;
    fn into_deserializer(self) -> Captured {
        self
    }
}

/// Turns a held-back value's error into the outer input's error type.
pub(crate) fn convert<E: de::Error>(e: Error) -> E {
    E::custom(e)
}
