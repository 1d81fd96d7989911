//! Writes a decoded message as JSON text straight into the output buffer.

use super::floats;
use crate::cdr::read::Sink;
use crate::cdr::Endian;
use crate::layout::{FieldLayout, StructLayout};
use crate::schema::{Multiplicity, Primitive};

pub(crate) struct JsonSink<'a> {
    pub out: &'a mut Vec<u8>,
}

impl JsonSink<'_> {
    #[inline]
    fn f64(&mut self, v: f64) {
        floats::write_f64(self.out, v);
    }

    #[inline]
    fn i64(&mut self, v: i64) {
        let mut b = itoa::Buffer::new();
        self.out.extend_from_slice(b.format(v).as_bytes());
    }

    #[inline]
    fn u64(&mut self, v: u64) {
        let mut b = itoa::Buffer::new();
        self.out.extend_from_slice(b.format(v).as_bytes());
    }
}

/// Decodes `N`-byte numbers from raw CDR and writes each with `emit`, comma separated.
#[inline]
fn each<const N: usize>(
    raw: &[u8],
    endian: Endian,
    out: &mut JsonSink<'_>,
    emit: impl Fn(&mut JsonSink<'_>, [u8; N]),
) {
    for (i, chunk) in raw.chunks_exact(N).enumerate() {
        if i > 0 {
            out.out.push(b',');
        }
        let mut a = [0u8; N];
        a.copy_from_slice(chunk);
        if endian == Endian::Big {
            a.reverse();
        }
        emit(out, a);
    }
}

impl Sink for JsonSink<'_> {
    fn begin_struct(&mut self, _: &StructLayout) {
        self.out.push(b'{');
    }
    fn field(&mut self, field: &FieldLayout, index: usize) {
        if index > 0 {
            self.out.push(b',');
        }
        self.out.extend_from_slice(&field.json_key);
    }
    fn end_struct(&mut self) {
        self.out.push(b'}');
    }
    fn begin_array(&mut self, _: usize) {
        self.out.push(b'[');
    }
    fn array_item(&mut self, index: usize) {
        if index > 0 {
            self.out.push(b',');
        }
    }
    fn end_array(&mut self) {
        self.out.push(b']');
    }
    fn bool(&mut self, v: bool) {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
    }
    fn int(&mut self, v: i64) {
        self.i64(v);
    }
    fn uint(&mut self, v: u64) {
        self.u64(v);
    }
    fn float(&mut self, v: f64, _single: bool) {
        // A float32 is printed as the float64 of the same value, as rclpy and rosbridge do.
        self.f64(v);
    }
    fn str(&mut self, v: &str) {
        write_str(self.out, v);
    }
    fn binary(&mut self, bytes: &[u8]) {
        self.out.push(b'"');
        base64_simd::STANDARD.encode_append(bytes, self.out);
        self.out.push(b'"');
    }
    fn prim_array(&mut self, p: Primitive, raw: &[u8], endian: Endian, _: Multiplicity) {
        self.out.push(b'[');
        // About 20 characters per number: reserve once instead of growing as we go.
        self.out.reserve(raw.len() / p.size() * 20);
        match p {
            Primitive::Bool => each::<1>(raw, endian, self, |s, a| s.bool(a[0] == 1)),
            Primitive::Byte | Primitive::Char | Primitive::UInt8 => {
                each::<1>(raw, endian, self, |s, a| s.u64(a[0] as u64))
            }
            Primitive::Int8 => each::<1>(raw, endian, self, |s, a| s.i64(a[0] as i8 as i64)),
            Primitive::Int16 => each::<2>(raw, endian, self, |s, a| {
                s.i64(i16::from_le_bytes(a) as i64)
            }),
            Primitive::UInt16 => each::<2>(raw, endian, self, |s, a| {
                s.u64(u16::from_le_bytes(a) as u64)
            }),
            Primitive::Int32 => each::<4>(raw, endian, self, |s, a| {
                s.i64(i32::from_le_bytes(a) as i64)
            }),
            Primitive::UInt32 => each::<4>(raw, endian, self, |s, a| {
                s.u64(u32::from_le_bytes(a) as u64)
            }),
            Primitive::Int64 => each::<8>(raw, endian, self, |s, a| s.i64(i64::from_le_bytes(a))),
            Primitive::UInt64 => each::<8>(raw, endian, self, |s, a| s.u64(u64::from_le_bytes(a))),
            Primitive::Float32 => {
                floats::write_array::<4>(self.out, raw, endian, |a| f32::from_le_bytes(a) as f64)
            }
            Primitive::Float64 => {
                floats::write_array::<8>(self.out, raw, endian, f64::from_le_bytes)
            }
        }
        self.out.push(b']');
    }
}

/// Writes a JSON string literal: copies runs of plain bytes, escapes `"`, `\` and controls.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[run..i]);
        if esc.is_empty() {
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 0xf) as usize],
            ]);
        } else {
            out.extend_from_slice(esc);
        }
        run = i + 1;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}
