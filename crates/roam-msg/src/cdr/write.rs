//! Appends CDR to a buffer: primitives, lengths patched in place, and default values for the
//! fields an input leaves out.

use crate::cdr::Endian;
use crate::error::{EncodeError, EncodeErrorKind as K};
use crate::layout::{Elem, FieldLayout, StructLayout};
use crate::schema::{Literal, Multiplicity, Primitive};

pub(crate) struct Writer<'a> {
    pub out: &'a mut Vec<u8>,
    /// Index in `out` where the payload starts (alignment is relative to it).
    base: usize,
    pub endian: Endian,
}

impl<'a> Writer<'a> {
    /// Starts a message: writes the encapsulation header.
    pub fn new(out: &'a mut Vec<u8>, endian: Endian) -> Writer<'a> {
        out.extend_from_slice(&endian.header());
        let base = out.len();
        Writer { out, base, endian }
    }

    pub fn align(&mut self, n: usize) {
        let pad = (n - (self.out.len() - self.base) % n) % n;
        self.out.resize(self.out.len() + pad, 0);
    }

    fn num<const N: usize>(&mut self, le: [u8; N]) {
        self.align(N);
        match self.endian {
            Endian::Little => self.out.extend_from_slice(&le),
            Endian::Big => {
                let mut be = le;
                be.reverse();
                self.out.extend_from_slice(&be);
            }
        }
    }

    pub fn u32(&mut self, v: u32) {
        self.num(v.to_le_bytes());
    }

    /// Writes a placeholder length; returns where to patch it.
    pub fn begin_len(&mut self) -> usize {
        self.u32(0);
        self.out.len() - 4
    }

    pub fn patch_len(&mut self, at: usize, len: usize) -> Result<(), EncodeError> {
        let len = u32::try_from(len).map_err(|_| EncodeError::new(K::TooLarge))?;
        let b = match self.endian {
            Endian::Little => len.to_le_bytes(),
            Endian::Big => len.to_be_bytes(),
        };
        self.out[at..at + 4].copy_from_slice(&b);
        Ok(())
    }

    /// Writes an integer already checked to be in the primitive's range.
    pub fn int(&mut self, p: Primitive, v: i128) {
        match p {
            Primitive::Bool => self.out.push((v != 0) as u8),
            Primitive::Byte | Primitive::Char | Primitive::UInt8 | Primitive::Int8 => {
                self.out.push(v as u8)
            }
            Primitive::Int16 | Primitive::UInt16 => self.num((v as u16).to_le_bytes()),
            Primitive::Int32 | Primitive::UInt32 => self.num((v as u32).to_le_bytes()),
            Primitive::Int64 | Primitive::UInt64 => self.num((v as u64).to_le_bytes()),
            Primitive::Float32 => self.num((v as f32).to_le_bytes()),
            Primitive::Float64 => self.num((v as f64).to_le_bytes()),
        }
    }

    pub fn float(&mut self, p: Primitive, v: f64) {
        match p {
            Primitive::Float32 => self.num((v as f32).to_le_bytes()),
            _ => self.num(v.to_le_bytes()),
        }
    }

    pub fn string(&mut self, s: &str) -> Result<(), EncodeError> {
        let len = u32::try_from(s.len() + 1).map_err(|_| EncodeError::new(K::TooLarge))?;
        self.u32(len);
        self.out.extend_from_slice(s.as_bytes());
        self.out.push(0);
        Ok(())
    }

    pub fn wstring(&mut self, s: &str) -> Result<(), EncodeError> {
        let at = self.begin_len();
        let mut n = 0usize;
        for unit in s.encode_utf16() {
            n += 1;
            match self.endian {
                Endian::Little => self.out.extend_from_slice(&unit.to_le_bytes()),
                Endian::Big => self.out.extend_from_slice(&unit.to_be_bytes()),
            }
        }
        self.patch_len(at, n)
    }

    /// Copies little-endian packed numbers (a CBOR typed array) into CDR order.
    pub fn packed_le(&mut self, size: usize, raw: &[u8]) {
        if raw.is_empty() {
            return;
        }
        self.align(size);
        match self.endian {
            Endian::Little => self.out.extend_from_slice(raw),
            Endian::Big => {
                let start = self.out.len();
                self.out.extend_from_slice(raw);
                for chunk in self.out[start..].chunks_exact_mut(size) {
                    chunk.reverse();
                }
            }
        }
    }

    /// Writes a field's default: its literal from the definition, else zero, empty or the
    /// nested type's defaults.
    pub fn default_field(&mut self, f: &FieldLayout) -> Result<(), EncodeError> {
        let items = match &f.default {
            Some(Literal::Array(items)) => Some(items.as_slice()),
            _ => None,
        };
        match f.multiplicity {
            Multiplicity::Single => self.default_elem(&f.elem, f.default.as_ref()),
            Multiplicity::Fixed(n) => {
                for i in 0..n as usize {
                    self.default_elem(&f.elem, items.and_then(|v| v.get(i)))?;
                }
                Ok(())
            }
            Multiplicity::Bounded(_) | Multiplicity::Unbounded => {
                let items = items.unwrap_or(&[]);
                self.u32(items.len() as u32);
                for item in items {
                    self.default_elem(&f.elem, Some(item))?;
                }
                Ok(())
            }
        }
    }

    fn default_elem(&mut self, elem: &Elem, lit: Option<&Literal>) -> Result<(), EncodeError> {
        match (elem, lit) {
            (Elem::Prim(p), Some(Literal::Float(v))) => self.float(*p, *v),
            (Elem::Prim(p), Some(Literal::Int(v))) => self.int(*p, *v),
            (Elem::Prim(p), Some(Literal::Bool(v))) => self.int(*p, *v as i128),
            (Elem::Prim(p), _) => self.int(*p, 0),
            (Elem::String { .. }, Some(Literal::String(s))) => self.string(s)?,
            (Elem::String { .. }, _) => self.string("")?,
            (Elem::WString { .. }, Some(Literal::String(s))) => self.wstring(s)?,
            (Elem::WString { .. }, _) => self.wstring("")?,
            (Elem::Struct(l), _) => self.default_struct(l)?,
        }
        Ok(())
    }

    pub fn default_struct(&mut self, l: &StructLayout) -> Result<(), EncodeError> {
        if l.fields.is_empty() {
            self.out.push(0);
        }
        for f in &l.fields {
            self.default_field(f)?;
        }
        Ok(())
    }
}
