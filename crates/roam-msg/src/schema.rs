//! The parsed form of a message type: fields, constants and defaults, with nested types still
//! referred to by name (the [`crate::registry::TypeRegistry`] resolves them).

use std::fmt::{self, Write as _};

use crate::names::{Kind, TypeName};

/// Fixed-size scalar types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primitive {
    Bool,
    /// `.msg` `byte`, IDL `octet`.
    Byte,
    /// `.msg` `char` (rosidl maps it to `uint8`), IDL `char`.
    Char,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    Float32,
    Float64,
}

impl Primitive {
    /// Size on the wire, which is also its CDR alignment.
    pub fn size(self) -> usize {
        use Primitive::*;
        match self {
            Bool | Byte | Char | Int8 | UInt8 => 1,
            Int16 | UInt16 => 2,
            Int32 | UInt32 | Float32 => 4,
            Int64 | UInt64 | Float64 => 8,
        }
    }

    /// The `.msg` spelling.
    pub fn msg_name(self) -> &'static str {
        use Primitive::*;
        match self {
            Bool => "bool",
            Byte => "byte",
            Char => "char",
            Int8 => "int8",
            UInt8 => "uint8",
            Int16 => "int16",
            UInt16 => "uint16",
            Int32 => "int32",
            UInt32 => "uint32",
            Int64 => "int64",
            UInt64 => "uint64",
            Float32 => "float32",
            Float64 => "float64",
        }
    }

    pub fn from_msg_name(s: &str) -> Option<Primitive> {
        use Primitive::*;
        Some(match s {
            "bool" => Bool,
            "byte" => Byte,
            "char" => Char,
            "int8" => Int8,
            "uint8" => UInt8,
            "int16" => Int16,
            "uint16" => UInt16,
            "int32" => Int32,
            "uint32" => UInt32,
            "int64" => Int64,
            "uint64" => UInt64,
            "float32" => Float32,
            "float64" => Float64,
            _ => return None,
        })
    }

    pub fn is_float(self) -> bool {
        matches!(self, Primitive::Float32 | Primitive::Float64)
    }

    /// Integer range as (min, max); `None` for bool and floats.
    pub fn int_range(self) -> Option<(i128, i128)> {
        use Primitive::*;
        Some(match self {
            Byte | Char | UInt8 => (0, u8::MAX as i128),
            Int8 => (i8::MIN as i128, i8::MAX as i128),
            Int16 => (i16::MIN as i128, i16::MAX as i128),
            UInt16 => (0, u16::MAX as i128),
            Int32 => (i32::MIN as i128, i32::MAX as i128),
            UInt32 => (0, u32::MAX as i128),
            Int64 => (i64::MIN as i128, i64::MAX as i128),
            UInt64 => (0, u64::MAX as i128),
            Bool | Float32 | Float64 => return None,
        })
    }
}

/// The element type of a field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BaseType {
    Primitive(Primitive),
    /// UTF-8 string, optionally bounded (`string<=10`) in characters.
    String {
        bound: Option<u32>,
    },
    /// UTF-16 string, optionally bounded.
    WString {
        bound: Option<u32>,
    },
    /// Another message type.
    Named(TypeName),
}

/// Whether a field is one value or several.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Multiplicity {
    Single,
    /// `T[N]`: exactly N, no length on the wire.
    Fixed(u32),
    /// `T[<=N]`: a sequence of at most N.
    Bounded(u32),
    /// `T[]`: a sequence.
    Unbounded,
}

impl Multiplicity {
    pub fn is_sequence(self) -> bool {
        matches!(self, Multiplicity::Bounded(_) | Multiplicity::Unbounded)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldType {
    pub base: BaseType,
    pub multiplicity: Multiplicity,
}

/// A constant or default value, as written in a definition.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Bool(bool),
    /// Integers of every width (u64 and i64 both fit).
    Int(i128),
    Float(f64),
    String(String),
    Array(Vec<Literal>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub ty: FieldType,
    /// The default value given in the definition, already checked against the type.
    pub default: Option<Literal>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Constant {
    pub name: String,
    /// A primitive, `string` or `wstring`, never an array.
    pub ty: BaseType,
    pub value: Literal,
}

/// One message type. A type with no fields travels as one `uint8` (rosidl's
/// `structure_needs_at_least_one_member`), which the codec adds and hides.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageDef {
    pub name: TypeName,
    pub fields: Vec<Field>,
    pub constants: Vec<Constant>,
}

impl MessageDef {
    /// The names of the message types this one refers to, in field order.
    pub fn dependencies(&self) -> impl Iterator<Item = &TypeName> {
        self.fields.iter().filter_map(|f| match &f.ty.base {
            BaseType::Named(n) => Some(n),
            _ => None,
        })
    }

    /// The definition as `.msg` text: constants, then fields, one a line, without comments.
    /// Parsing it again gives the same `MessageDef`.
    pub fn to_msg_text(&self) -> String {
        let mut out = String::new();
        for c in &self.constants {
            let _ = writeln!(
                out,
                "{} {}={}",
                base_text(&c.ty),
                c.name,
                LiteralText(&c.value, false)
            );
        }
        for f in &self.fields {
            let _ = write!(out, "{} {}", field_type_text(&f.ty), f.name);
            if let Some(d) = &f.default {
                let _ = write!(out, " {}", LiteralText(d, true));
            }
            out.push('\n');
        }
        out
    }
}

/// A base type as `.msg` writes it.
pub fn base_text(base: &BaseType) -> String {
    match base {
        BaseType::Primitive(p) => p.msg_name().to_string(),
        BaseType::String { bound: None } => "string".into(),
        BaseType::String { bound: Some(n) } => format!("string<={n}"),
        BaseType::WString { bound: None } => "wstring".into(),
        BaseType::WString { bound: Some(n) } => format!("wstring<={n}"),
        BaseType::Named(t) if t.kind == Kind::Msg => t.short(),
        BaseType::Named(t) => t.full(),
    }
}

/// A field type as `.msg` writes it (`float32[]`, `string<=5[<=3]`, `geometry_msgs/Point[2]`).
pub fn field_type_text(ty: &FieldType) -> String {
    let base = base_text(&ty.base);
    match ty.multiplicity {
        Multiplicity::Single => base,
        Multiplicity::Fixed(n) => format!("{base}[{n}]"),
        Multiplicity::Bounded(n) => format!("{base}[<={n}]"),
        Multiplicity::Unbounded => format!("{base}[]"),
    }
}

/// Whether a string constant's value, written bare, would read back as something else: the
/// parser trims the line's ends and takes off one pair of enclosing quotes.
fn constant_needs_quotes(s: &str) -> bool {
    let quoted = |q: char| s.len() >= 2 && s.starts_with(q) && s.ends_with(q);
    s.trim() != s || quoted('"') || quoted('\'')
}

/// Whether a string array element must be written bare: quoted, a trailing backslash would
/// escape the closing quote (rosidl's syntax has no escape for a backslash), so such an element
/// is written as it is, which reads back whenever the parser could have made it (no comma, no
/// space at either end, no quote first).
fn element_needs_bare(s: &str) -> bool {
    s.ends_with('\\') && !s.contains(',') && s.trim() == s && !s.starts_with(['"', '\''])
}

/// Prints a literal so the `.msg` parser reads it back. Strings are quoted where a default needs
/// it, and in a constant (whose value runs to the end of its line) only where reading it bare
/// would change it.
struct LiteralText<'a>(&'a Literal, bool);

impl fmt::Display for LiteralText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Int(i) => write!(f, "{i}"),
            Literal::Float(x) if x.is_nan() => write!(f, "nan"),
            Literal::Float(x) if x.is_infinite() => {
                write!(f, "{}", if *x > 0.0 { "inf" } else { "-inf" })
            }
            Literal::Float(x) => write!(f, "{x:?}"),
            Literal::String(s) if self.1 || constant_needs_quotes(s) => {
                write!(f, "\"{}\"", s.replace('"', "\\\""))
            }
            Literal::String(s) => write!(f, "{s}"),
            Literal::Array(items) => {
                write!(f, "[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    match item {
                        Literal::String(s) if element_needs_bare(s) => write!(f, "{s}")?,
                        _ => write!(f, "{}", LiteralText(item, true))?,
                    }
                }
                write!(f, "]")
            }
        }
    }
}
