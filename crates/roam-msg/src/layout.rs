//! A message type with every nested type resolved: what the codecs walk.
//!
//! Built once per type by [`crate::registry::TypeRegistry::resolve`] and shared (`Arc`), so a
//! gateway keeps one per topic and converts every message with it.

use std::sync::Arc;

use crate::names::TypeName;
use crate::schema::{Literal, Multiplicity, Primitive};

/// How deep types may nest (`a.b.c...`). Real interfaces stay under 10; the limit keeps the
/// recursive codecs' stack use bounded whatever definitions a peer announces.
pub const MAX_TYPE_DEPTH: usize = 64;

/// The most CDR bytes a type's fixed part may take (its fixed arrays, strings' lengths, ...).
/// Every message of the type is at least this big, so a definition announcing a huge fixed
/// array would make `{}` encode to gigabytes; real interfaces stay far below.
pub const MAX_FIXED_SIZE: usize = 1 << 28;

/// A resolved message type: the handle every codec function takes.
#[derive(Debug, Clone)]
pub struct MessageType(pub(crate) Arc<StructLayout>);

impl MessageType {
    pub fn name(&self) -> &TypeName {
        &self.0.name
    }

    /// Field names in wire order (empty for an empty message).
    pub fn field_names(&self) -> impl Iterator<Item = &str> {
        self.0.fields.iter().map(|f| f.name.as_str())
    }
}

#[derive(Debug)]
pub(crate) struct StructLayout {
    pub name: TypeName,
    pub fields: Vec<FieldLayout>,
    /// `builtin_interfaces/Time` or `Duration`: JSON input also accepts `secs`/`nsecs`.
    pub time_like: bool,
    /// The least number of CDR bytes the struct can take (see [`Elem::min_size`]).
    pub min_size: usize,
}

#[derive(Debug)]
pub(crate) struct FieldLayout {
    pub name: String,
    /// `"name":` with the name escaped, ready to copy into JSON output.
    pub json_key: Box<[u8]>,
    pub elem: Elem,
    pub multiplicity: Multiplicity,
    pub default: Option<Literal>,
    /// rosbridge's binary fields (`uint8[]`, `char[]`, `uint8[N]`, `char[N]`): base64 in JSON,
    /// a byte string in CBOR.
    pub binary: bool,
}

#[derive(Debug, Clone)]
pub(crate) enum Elem {
    Prim(Primitive),
    String { bound: Option<u32> },
    WString { bound: Option<u32> },
    Struct(Arc<StructLayout>),
}

impl Elem {
    /// The least number of CDR bytes one element can take: the bound used to refuse a
    /// sequence length that the bytes left cannot hold, before allocating anything.
    pub fn min_size(&self) -> usize {
        match self {
            Elem::Prim(p) => p.size(),
            Elem::String { .. } => 5,
            Elem::WString { .. } => 4,
            Elem::Struct(s) => s.min_size,
        }
    }
}

impl StructLayout {
    pub fn compute_min_size(fields: &[FieldLayout]) -> usize {
        if fields.is_empty() {
            return 1;
        }
        fields
            .iter()
            .map(|f| match f.multiplicity {
                Multiplicity::Single => f.elem.min_size(),
                Multiplicity::Fixed(n) => f.elem.min_size().saturating_mul(n as usize),
                Multiplicity::Bounded(_) | Multiplicity::Unbounded => 4,
            })
            .fold(0usize, |a, b| a.saturating_add(b))
            .max(1)
    }
}

/// Escapes a field name as a JSON object key followed by `:`.
pub(crate) fn json_key(name: &str) -> Box<[u8]> {
    let mut out = serde_json::to_vec(name).unwrap_or_else(|_| format!("\"{name}\"").into_bytes());
    out.push(b':');
    out.into_boxed_slice()
}
