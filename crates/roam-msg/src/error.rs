//! Typed errors. Codec errors carry the field path where they happened
//! (`header.stamp.sec`, `ranges[17]`).

use std::fmt;

use thiserror::Error;

use crate::names::TypeName;

/// A malformed type name.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NameError {
    #[error("invalid package name {0:?}")]
    Package(String),
    #[error("invalid type name {0:?}")]
    Type(String),
    #[error(
        "malformed type name {0:?} (expected pkg/msg/Type, pkg/Type or pkg::msg::dds_::Type_)"
    )]
    Malformed(String),
}

/// A definition that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{ty}: line {line}: {message}")]
pub struct ParseError {
    /// The type (or file) being parsed.
    pub ty: String,
    /// 1-based line number in the text given to the parser.
    pub line: usize,
    pub message: String,
}

/// A registry that cannot give a complete type.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RegistryError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Name(#[from] NameError),
    #[error("type {missing} is not known (needed by {needed_by}); add its definition")]
    Missing { missing: String, needed_by: String },
    #[error("type {0} is not known; add its definition")]
    Unknown(String),
    #[error("type {0} is defined twice with different contents")]
    Conflict(TypeName),
    #[error("type {0} contains itself")]
    Recursive(TypeName),
    #[error("types nest deeper than {0} levels")]
    TooDeep(usize),
    #[error("type {ty} takes at least {size} bytes, more than the {limit} allowed")]
    TooLarge {
        ty: TypeName,
        size: usize,
        limit: usize,
    },
    #[error("malformed ros2msg text: {0}")]
    Ros2Msg(String),
}

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Field(String),
    Index(usize),
}

/// Where in a message an error happened: `header.stamp.sec`, `ranges[17]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(Vec<Segment>);

impl FieldPath {
    /// Adds an outer segment; errors collect their path while they unwind (innermost first),
    /// so the happy path pays nothing for it.
    pub(crate) fn push_outer(&mut self, seg: Segment) {
        self.0.push(seg);
    }

    pub fn segments(&self) -> impl Iterator<Item = &Segment> {
        self.0.iter().rev()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for seg in self.segments() {
            match seg {
                Segment::Field(name) if first => write!(f, "{name}")?,
                Segment::Field(name) => write!(f, ".{name}")?,
                Segment::Index(i) => write!(f, "[{i}]")?,
            }
            first = false;
        }
        if first {
            write!(f, "<message>")?;
        }
        Ok(())
    }
}

/// Bytes that are not a valid CDR encoding of the type.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{path}: {kind}")]
pub struct DecodeError {
    pub path: FieldPath,
    pub kind: DecodeErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeErrorKind {
    #[error("needs {needs} bytes, {left} left")]
    Truncated { needs: usize, left: usize },
    #[error("unsupported encapsulation {0:#06x} (expected 0x0000 CDR_BE or 0x0001 CDR_LE)")]
    Encapsulation(u16),
    #[error("sequence of {len} elements cannot fit in the {left} bytes left")]
    SequenceTooLong { len: u32, left: usize },
    #[error("sequence of {len} elements exceeds its bound {bound}")]
    BoundExceeded { len: u32, bound: u32 },
    #[error("string of {found} characters exceeds its bound {bound}")]
    StringTooLong { bound: u32, found: usize },
    #[error("string is not valid UTF-8")]
    InvalidUtf8,
    #[error("wide string is not valid UTF-16")]
    InvalidUtf16,
    #[error("string is missing its terminating NUL")]
    MissingNul,
    #[error("bool byte {0} is neither 0 nor 1")]
    InvalidBool(u8),
    #[error("{0} bytes left over after the message")]
    TrailingBytes(usize),
    #[error("nesting deeper than {0} levels")]
    TooDeep(usize),
}

impl DecodeError {
    pub(crate) fn new(kind: DecodeErrorKind) -> DecodeError {
        DecodeError {
            path: FieldPath::default(),
            kind,
        }
    }

    pub(crate) fn at(mut self, seg: Segment) -> DecodeError {
        self.path.push_outer(seg);
        self
    }
}

/// JSON or CBOR that does not fit the type.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{path}: {kind}")]
pub struct EncodeError {
    pub path: FieldPath,
    pub kind: EncodeErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EncodeErrorKind {
    #[error("malformed input: {0}")]
    Syntax(String),
    #[error("the type has no field {0:?}")]
    UnknownField(String),
    #[error("field given twice")]
    DuplicateField,
    #[error("expected {expected}, found {found}")]
    Mismatch { expected: String, found: String },
    #[error("{value} is out of range for {ty}")]
    OutOfRange { value: String, ty: &'static str },
    #[error("expected exactly {expected} elements, found {found}")]
    WrongLength { expected: u32, found: usize },
    #[error("{found} elements exceed the bound {bound}")]
    BoundExceeded { bound: u32, found: usize },
    #[error("string of {found} characters exceeds the bound {bound}")]
    StringTooLong { bound: u32, found: usize },
    #[error("invalid base64: {0}")]
    Base64(String),
    #[error("nesting deeper than {0} levels")]
    TooDeep(usize),
    #[error("message larger than 4 GiB")]
    TooLarge,
}

impl EncodeError {
    pub(crate) fn new(kind: EncodeErrorKind) -> EncodeError {
        EncodeError {
            path: FieldPath::default(),
            kind,
        }
    }

    pub(crate) fn at(mut self, seg: Segment) -> EncodeError {
        self.path.push_outer(seg);
        self
    }

    pub(crate) fn mismatch(expected: impl Into<String>, found: impl Into<String>) -> EncodeError {
        EncodeError::new(EncodeErrorKind::Mismatch {
            expected: expected.into(),
            found: found.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_outer_to_inner() {
        let e = DecodeError::new(DecodeErrorKind::Truncated { needs: 4, left: 2 })
            .at(Segment::Field("sec".into()))
            .at(Segment::Field("stamp".into()))
            .at(Segment::Field("header".into()));
        assert_eq!(e.to_string(), "header.stamp.sec: needs 4 bytes, 2 left");
        let e = DecodeError::new(DecodeErrorKind::InvalidUtf8)
            .at(Segment::Index(17))
            .at(Segment::Field("ranges".into()));
        assert_eq!(e.to_string(), "ranges[17]: string is not valid UTF-8");
    }
}
