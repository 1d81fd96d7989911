//! Bounds-checked reading and big-endian writing helpers shared by every parser.
//!
//! Once a [`Reader`] has been built over a slice, no accessor can panic: each checks the
//! remaining length first and returns [`CodecError::UnexpectedEnd`].

use thiserror::Error;

/// A failure to parse bytes from outside.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CodecError {
    #[error("input ended early: needed {needed} more bytes")]
    UnexpectedEnd { needed: usize },
    #[error("{0} trailing bytes after the end of the structure")]
    TrailingBytes(usize),
    #[error("length {len} exceeds the limit {limit}")]
    TooLong { len: usize, limit: usize },
    #[error("text field is not valid UTF-8")]
    InvalidUtf8,
}

/// A cursor over untrusted bytes.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    pub fn rest(&self) -> &'a [u8] {
        self.buf
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if self.buf.len() < n {
            return Err(CodecError::UnexpectedEnd {
                needed: n - self.buf.len(),
            });
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], CodecError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.array::<1>()?[0])
    }

    pub fn u16(&mut self) -> Result<u16, CodecError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    pub fn u32(&mut self) -> Result<u32, CodecError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    pub fn u64(&mut self) -> Result<u64, CodecError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// A string prefixed by a u16 length, at most `limit` bytes.
    pub fn str16(&mut self, limit: usize) -> Result<&'a str, CodecError> {
        let len = self.u16()? as usize;
        if len > limit {
            return Err(CodecError::TooLong { len, limit });
        }
        std::str::from_utf8(self.take(len)?).map_err(|_| CodecError::InvalidUtf8)
    }

    /// Fails if any byte is left: structures have no slack.
    pub fn finish(&self) -> Result<(), CodecError> {
        match self.buf.len() {
            0 => Ok(()),
            n => Err(CodecError::TrailingBytes(n)),
        }
    }
}

/// Appends a u16-length-prefixed string. The caller guarantees `s.len() <= u16::MAX`.
pub fn put_str16(out: &mut Vec<u8>, s: &str) {
    let bytes = &s.as_bytes()[..s.len().min(u16::MAX as usize)];
    out.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
    out.extend_from_slice(bytes);
}
