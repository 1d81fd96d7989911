//! Walks CDR bytes along a resolved type and feeds a [`Sink`] (JSON or CBOR writer).
//!
//! Every read checks the bytes left first; a sequence length is checked against the bytes
//! left (times the least size of an element) before anything is sized from it, so the work and
//! memory of a decode are bounded by the input. The type's nesting is bounded when it is
//! resolved, so recursion depth is too.

use crate::cdr::{Endian, HEADER_LEN};
use crate::error::{DecodeError, DecodeErrorKind as K, Segment};
use crate::layout::{Elem, FieldLayout, StructLayout};
use crate::schema::{Multiplicity, Primitive};

/// What a decoded message is written to.
pub(crate) trait Sink {
    fn begin_struct(&mut self, layout: &StructLayout);
    fn field(&mut self, field: &FieldLayout, index: usize);
    fn end_struct(&mut self);
    fn begin_array(&mut self, len: usize);
    fn array_item(&mut self, index: usize);
    fn end_array(&mut self);
    fn bool(&mut self, v: bool);
    fn int(&mut self, v: i64);
    fn uint(&mut self, v: u64);
    fn float(&mut self, v: f64, single: bool);
    fn str(&mut self, v: &str);
    /// A binary field (rosbridge's `uint8[]`/`char[]`).
    fn binary(&mut self, bytes: &[u8]);
    /// A whole array of numbers or bools, as raw CDR bytes (bools already checked to be 0/1).
    fn prim_array(&mut self, p: Primitive, raw: &[u8], endian: Endian, multiplicity: Multiplicity);
}

pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    pub endian: Endian,
}

impl<'a> Cursor<'a> {
    /// Reads the encapsulation header.
    pub fn new(data: &'a [u8]) -> Result<Cursor<'a>, DecodeError> {
        if data.len() < HEADER_LEN {
            return Err(DecodeError::new(K::Truncated {
                needs: HEADER_LEN,
                left: data.len(),
            }));
        }
        let endian = match u16::from_be_bytes([data[0], data[1]]) {
            0x0000 => Endian::Big,
            0x0001 => Endian::Little,
            other => return Err(DecodeError::new(K::Encapsulation(other))),
        };
        Ok(Cursor {
            buf: &data[HEADER_LEN..],
            pos: 0,
            endian,
        })
    }

    pub fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Skips padding up to `n`-byte alignment (relative to the end of the header).
    fn align(&mut self, n: usize) -> Result<(), DecodeError> {
        let pad = (n - self.pos % n) % n;
        self.take(pad).map(|_| ())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.left() {
            return Err(DecodeError::new(K::Truncated {
                needs: n,
                left: self.left(),
            }));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        self.align(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        if self.endian == Endian::Big {
            a.reverse();
        }
        Ok(a)
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        self.array::<4>().map(u32::from_le_bytes)
    }

    /// After the message: CDR writers may pad to a multiple of 4 (the count is in the options
    /// bytes); more than 3 bytes left over means the bytes are not this type.
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.left() {
            0..=3 => Ok(()),
            n => Err(DecodeError::new(K::TrailingBytes(n))),
        }
    }
}

pub(crate) fn read_struct<S: Sink>(
    c: &mut Cursor<'_>,
    l: &StructLayout,
    sink: &mut S,
) -> Result<(), DecodeError> {
    sink.begin_struct(l);
    if l.fields.is_empty() {
        // rosidl's `structure_needs_at_least_one_member`: one uint8, hidden.
        c.take(1)?;
    }
    for (i, f) in l.fields.iter().enumerate() {
        sink.field(f, i);
        read_field(c, f, sink).map_err(|e| e.at(Segment::Field(f.name.clone())))?;
    }
    sink.end_struct();
    Ok(())
}

fn read_field<S: Sink>(
    c: &mut Cursor<'_>,
    f: &FieldLayout,
    sink: &mut S,
) -> Result<(), DecodeError> {
    let len = match f.multiplicity {
        Multiplicity::Single => return read_elem(c, &f.elem, sink),
        Multiplicity::Fixed(n) => n,
        Multiplicity::Bounded(_) | Multiplicity::Unbounded => {
            let len = c.u32()?;
            if let Multiplicity::Bounded(bound) = f.multiplicity {
                if len > bound {
                    return Err(DecodeError::new(K::BoundExceeded { len, bound }));
                }
            }
            if (len as usize).saturating_mul(f.elem.min_size()) > c.left() {
                return Err(DecodeError::new(K::SequenceTooLong {
                    len,
                    left: c.left(),
                }));
            }
            len
        }
    };
    let n = len as usize;
    match &f.elem {
        Elem::Prim(_) if f.binary => sink.binary(c.take(n)?),
        Elem::Prim(p) => {
            // An empty sequence has no elements to align (as rosbags writes it).
            if n > 0 {
                c.align(p.size())?;
            }
            let raw = c.take(n.saturating_mul(p.size()))?;
            if *p == Primitive::Bool {
                if let Some(i) = raw.iter().position(|b| *b > 1) {
                    return Err(DecodeError::new(K::InvalidBool(raw[i])).at(Segment::Index(i)));
                }
            }
            sink.prim_array(*p, raw, c.endian, f.multiplicity);
        }
        elem => {
            sink.begin_array(n);
            for i in 0..n {
                sink.array_item(i);
                read_elem(c, elem, sink).map_err(|e| e.at(Segment::Index(i)))?;
            }
            sink.end_array();
        }
    }
    Ok(())
}

fn read_elem<S: Sink>(c: &mut Cursor<'_>, elem: &Elem, sink: &mut S) -> Result<(), DecodeError> {
    match elem {
        Elem::Prim(p) => read_prim(c, *p, sink),
        Elem::String { bound } => {
            let len = c.u32()? as usize;
            let bytes = c.take(len)?;
            let body = match bytes.split_last() {
                Some((0, body)) => body,
                Some(_) => return Err(DecodeError::new(K::MissingNul)),
                None => &[][..],
            };
            let s = std::str::from_utf8(body).map_err(|_| DecodeError::new(K::InvalidUtf8))?;
            check_bound(s, *bound)?;
            sink.str(s);
            Ok(())
        }
        Elem::WString { bound } => {
            let units = c.u32()? as usize;
            let raw = c.take(units.saturating_mul(2))?;
            let endian = c.endian;
            let iter = raw.chunks_exact(2).map(|b| match endian {
                Endian::Little => u16::from_le_bytes([b[0], b[1]]),
                Endian::Big => u16::from_be_bytes([b[0], b[1]]),
            });
            let s: String = char::decode_utf16(iter)
                .collect::<Result<_, _>>()
                .map_err(|_| DecodeError::new(K::InvalidUtf16))?;
            check_bound(&s, *bound)?;
            sink.str(&s);
            Ok(())
        }
        Elem::Struct(l) => read_struct(c, l, sink),
    }
}

/// Bounded strings count characters, as rclpy and rosbridge do.
fn check_bound(s: &str, bound: Option<u32>) -> Result<(), DecodeError> {
    match bound {
        Some(bound) if s.len() > bound as usize && s.chars().count() > bound as usize => {
            Err(DecodeError::new(K::StringTooLong {
                bound,
                found: s.chars().count(),
            }))
        }
        _ => Ok(()),
    }
}

fn read_prim<S: Sink>(c: &mut Cursor<'_>, p: Primitive, sink: &mut S) -> Result<(), DecodeError> {
    match p {
        Primitive::Bool => match c.take(1)?[0] {
            b @ 0..=1 => sink.bool(b == 1),
            b => return Err(DecodeError::new(K::InvalidBool(b))),
        },
        Primitive::Byte | Primitive::Char | Primitive::UInt8 => sink.uint(c.take(1)?[0] as u64),
        Primitive::Int8 => sink.int(c.take(1)?[0] as i8 as i64),
        Primitive::Int16 => sink.int(i16::from_le_bytes(c.array()?) as i64),
        Primitive::UInt16 => sink.uint(u16::from_le_bytes(c.array()?) as u64),
        Primitive::Int32 => sink.int(i32::from_le_bytes(c.array()?) as i64),
        Primitive::UInt32 => sink.uint(u32::from_le_bytes(c.array()?) as u64),
        Primitive::Int64 => sink.int(i64::from_le_bytes(c.array()?)),
        Primitive::UInt64 => sink.uint(u64::from_le_bytes(c.array()?)),
        Primitive::Float32 => sink.float(f32::from_le_bytes(c.array()?) as f64, true),
        Primitive::Float64 => sink.float(f64::from_le_bytes(c.array()?), false),
    }
    Ok(())
}
