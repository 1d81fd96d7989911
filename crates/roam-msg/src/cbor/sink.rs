//! Writes a decoded message as CBOR, the way rosbridge's `compression: cbor` does
//! (`cbor_conversion.py`): maps with text keys, binary fields as byte strings, numeric arrays as
//! little-endian typed arrays (RFC 8746 tags), floats as float64.

use minicbor::data::Tag;
use minicbor::Encoder;

use crate::cdr::read::Sink;
use crate::cdr::Endian;
use crate::layout::{FieldLayout, StructLayout};
use crate::schema::{Multiplicity, Primitive};

pub(crate) struct CborSink<'a> {
    pub enc: Encoder<&'a mut Vec<u8>>,
}

/// The RFC 8746 little-endian typed-array tag for a primitive (rosbridge's table, plus uint8).
pub(crate) fn typed_array_tag(p: Primitive) -> Option<u64> {
    Some(match p {
        Primitive::Byte | Primitive::Char | Primitive::UInt8 => 64,
        Primitive::UInt16 => 69,
        Primitive::UInt32 => 70,
        Primitive::UInt64 => 71,
        Primitive::Int8 => 72,
        Primitive::Int16 => 77,
        Primitive::Int32 => 78,
        Primitive::Int64 => 79,
        Primitive::Float32 => 85,
        Primitive::Float64 => 86,
        Primitive::Bool => return None,
    })
}

// Writing into a Vec cannot fail (its error type is Infallible): results are dropped.
impl Sink for CborSink<'_> {
    fn begin_struct(&mut self, layout: &StructLayout) {
        let _ = self.enc.map(layout.fields.len() as u64);
    }
    fn field(&mut self, field: &FieldLayout, _: usize) {
        let _ = self.enc.str(&field.name);
    }
    fn end_struct(&mut self) {}
    fn begin_array(&mut self, len: usize) {
        let _ = self.enc.array(len as u64);
    }
    fn array_item(&mut self, _: usize) {}
    fn end_array(&mut self) {}
    fn bool(&mut self, v: bool) {
        let _ = self.enc.bool(v);
    }
    fn int(&mut self, v: i64) {
        let _ = self.enc.i64(v);
    }
    fn uint(&mut self, v: u64) {
        let _ = self.enc.u64(v);
    }
    fn float(&mut self, v: f64, _: bool) {
        let _ = self.enc.f64(v);
    }
    fn str(&mut self, v: &str) {
        let _ = self.enc.str(v);
    }
    fn binary(&mut self, bytes: &[u8]) {
        let _ = self.enc.bytes(bytes);
    }
    fn prim_array(&mut self, p: Primitive, raw: &[u8], endian: Endian, _: Multiplicity) {
        let Some(tag) = typed_array_tag(p) else {
            let _ = self.enc.array(raw.len() as u64);
            for b in raw {
                let _ = self.enc.bool(*b == 1);
            }
            return;
        };
        let _ = self.enc.tag(Tag::new(tag));
        if endian == Endian::Little || p.size() == 1 {
            let _ = self.enc.bytes(raw);
            return;
        }
        let _ = self.enc.bytes_len(raw.len() as u64);
        let out = self.enc.writer_mut();
        let start = out.len();
        out.extend_from_slice(raw);
        for chunk in out[start..].chunks_exact_mut(p.size()) {
            chunk.reverse();
        }
    }
}
