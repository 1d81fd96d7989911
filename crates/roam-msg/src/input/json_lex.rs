//! A JSON tokenizer (RFC 8259) for the type-driven reader in [`super::json`]: the reader asks
//! for the value it expects next (an object's keys, an array's elements, a string, a number)
//! and this checks the grammar as it goes. It holds no tree and does not recurse; skipping a
//! value keeps one byte per open bracket, at most [`MAX_JSON_DEPTH`]. Numbers are parsed by
//! lexical-parse-float with its JSON grammar (correctly rounded; `01`, `.5`, `1.`, `inf`
//! refused), whole numbers in float arrays by an exact shortcut and plain decimals by
//! [`json_decimal`]'s where it provably agrees; strings are searched for their
//! end with memchr. Errors name the line and column, as serde_json's do.

use std::ops::Range;

use lexical_parse_float::{format::JSON, FromLexicalWithOptions, Options};

use super::json_decimal;
use crate::error::{EncodeError, EncodeErrorKind as K};

const FLOAT_OPTIONS: Options = Options::new();

/// How deep a value the type does not descend into (one being skipped) may nest; the same
/// limit as CBOR input's and serde_json's.
pub const MAX_JSON_DEPTH: usize = 128;

/// The kind of the next value, from its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl Next {
    /// What the value is, in the words of [`K::Mismatch`].
    pub fn found(self) -> &'static str {
        match self {
            Next::Null => "null",
            Next::Bool => "a bool",
            Next::Number => "a number",
            Next::String => "a string",
            Next::Array => "an array",
            Next::Object => "an object",
        }
    }
}

/// Why [`Lexer::float_element`] read no element.
pub(crate) enum FloatsError {
    /// Not JSON.
    Syntax(EncodeError),
    /// A value that is not a number nor `null` (the caller peeks at it to say what it is).
    NotNumber,
}

/// Where a string's bytes are: in the input (no escapes) or decoded into the scratch buffer.
enum Raw {
    Input(Range<usize>),
    Scratch,
}

pub(crate) struct Lexer<'a> {
    b: &'a [u8],
    i: usize,
    /// Strings with escapes are decoded here (allocated only once one is met).
    scratch: Vec<u8>,
}

impl<'a> Lexer<'a> {
    pub fn new(b: &'a [u8]) -> Lexer<'a> {
        Lexer::at(b, 0)
    }

    /// A lexer over `b` starting at `i` (to read a value kept back earlier; positions in
    /// errors stay those of the whole input).
    pub fn at(b: &'a [u8], i: usize) -> Lexer<'a> {
        Lexer {
            b,
            i,
            scratch: Vec::new(),
        }
    }

    pub fn pos(&self) -> usize {
        self.i
    }

    /// A syntax error at byte `at`, with its line and column (1-based, columns in bytes).
    #[cold]
    pub fn error_at(&self, what: &str, at: usize) -> EncodeError {
        let before = &self.b[..at.min(self.b.len())];
        let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
        let column = before.len()
            - before
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(0, |p| p + 1)
            + 1;
        EncodeError::new(K::Syntax(format!("{what} at line {line} column {column}")))
    }

    #[cold]
    pub fn error(&self, what: &str) -> EncodeError {
        self.error_at(what, self.i)
    }

    /// The next byte after whitespace, not consumed.
    #[inline]
    fn peek_byte(&mut self) -> Result<u8, EncodeError> {
        self.peek_byte_in("EOF while parsing a value")
    }

    #[inline]
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The kind of the next value (after whitespace); nothing is consumed.
    #[inline]
    pub fn peek(&mut self) -> Result<Next, EncodeError> {
        Ok(match self.peek_byte()? {
            b'n' => Next::Null,
            b't' | b'f' => Next::Bool,
            b'-' | b'0'..=b'9' => Next::Number,
            b'"' => Next::String,
            b'[' => Next::Array,
            b'{' => Next::Object,
            _ => return Err(self.error("expected value")),
        })
    }

    /// Checks that only whitespace follows the value read.
    pub fn finish(&mut self) -> Result<(), EncodeError> {
        self.skip_whitespace();
        if self.i < self.b.len() {
            return Err(self.error("trailing characters"));
        }
        Ok(())
    }

    fn word(&mut self, w: &[u8]) -> Result<(), EncodeError> {
        if self.b[self.i..].starts_with(w) {
            self.i += w.len();
            Ok(())
        } else {
            Err(self.error("expected value"))
        }
    }

    /// `null`, known to be next.
    pub fn null(&mut self) -> Result<(), EncodeError> {
        self.word(b"null")
    }

    /// `true` or `false`, known to be next.
    pub fn bool(&mut self) -> Result<bool, EncodeError> {
        if self.b[self.i] == b't' {
            self.word(b"true").map(|()| true)
        } else {
            self.word(b"false").map(|()| false)
        }
    }

    /// A number, known to be next, as the nearest float64. Integers round the same way.
    #[inline]
    pub fn float(&mut self) -> Result<f64, EncodeError> {
        let mut whole = true;
        self.float_fast(&mut whole, false)
            .map_err(|what| self.error(what))
    }

    /// [`Lexer::float`] with the error as a bare message, for the array loop. While `whole`,
    /// a whole number takes the exact path first; the first number that does not clears it
    /// (an array of long fractions then skips the try). Then a plain decimal takes the
    /// shortcut of [`json_decimal`] where it can: when `narrow`, good to float32 only.
    #[inline(always)]
    fn float_fast(&mut self, whole: &mut bool, narrow: bool) -> Result<f64, &'static str> {
        if *whole {
            match self.whole_float() {
                Some(v) => return Ok(v),
                None => *whole = false,
            }
        }
        if let Some(d) = json_decimal::decimal(self.b, self.i) {
            let v = if narrow {
                d.f64_for_f32()
            } else {
                d.exact_f64()
            };
            if let Some(v) = v {
                self.i = d.end;
                return Ok(v);
            }
        }
        match f64::from_lexical_partial_with_options::<JSON>(&self.b[self.i..], &FLOAT_OPTIONS) {
            Ok((v, n)) if v.is_finite() => {
                self.i += n;
                Ok(v)
            }
            Ok(_) => Err("number out of range"),
            Err(_) => Err("invalid number"),
        }
    }

    /// The whole input, for a loop that reads ahead on its own ([`super::json_floats`]).
    pub fn input(&self) -> &'a [u8] {
        self.b
    }

    /// Moves on to `i`, where such a loop stopped: at most the input's length, and where the
    /// next token (or whitespace before it) starts.
    pub fn set_pos(&mut self, i: usize) {
        self.i = i.min(self.b.len());
    }

    /// One element of a float array: a number, or `null` for NaN. `whole` and `narrow` are
    /// [`Lexer::float_fast`]'s.
    #[inline]
    pub fn float_element(&mut self, whole: &mut bool, narrow: bool) -> Result<f64, FloatsError> {
        self.skip_whitespace();
        match self.b.get(self.i) {
            Some(b'-' | b'0'..=b'9') => self
                .float_fast(whole, narrow)
                .map_err(|what| FloatsError::Syntax(self.error(what))),
            Some(b'n') if self.b[self.i..].starts_with(b"null") => {
                self.i += 4;
                Ok(f64::NAN)
            }
            _ => Err(FloatsError::NotNumber),
        }
    }

    /// A whole number of up to 7 digits, with or without a `.0` (how whole floats are printed:
    /// intensities, counts): exact in a float64, so converted without the general parser.
    /// `None` (nothing consumed) for anything else, including what is not valid JSON. The
    /// digits are found and converted 8 bytes at a time, so that a number it does not take
    /// (a range's `16.294673919677734`) costs little and few mispredicted branches.
    #[inline(always)]
    fn whole_float(&mut self) -> Option<f64> {
        let b = self.b;
        let negative = b.get(self.i) == Some(&b'-');
        let i = self.i + negative as usize;
        let chunk: [u8; 8] = b.get(i..i + 8)?.try_into().ok()?;
        let x = u64::from_le_bytes(chunk);
        // A byte is a digit if its high nibble is 3 and adding 6 keeps it so. Carries only
        // run from a non-digit byte to later ones, so the first non-digit is found right.
        const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
        const ZEROS: u64 = 0x3030_3030_3030_3030;
        let not_digit =
            ((x & HIGH) ^ ZEROS) | ((x.wrapping_add(0x0606_0606_0606_0606) & HIGH) ^ ZEROS);
        let digits = (not_digit.trailing_zeros() / 8) as usize;
        // One branch for the three ways out (`&`/`|`, not `&&`/`||`): none, more than 7 or a
        // leading zero.
        if (digits.wrapping_sub(1) >= 7) | ((digits > 1) & (chunk[0] == b'0')) {
            return None;
        }
        let mut end = i + digits;
        let point_zero = (b.get(end) == Some(&b'.')) & (b.get(end + 1) == Some(&b'0'));
        end += 2 * point_zero as usize;
        if matches!(b.get(end), Some(b'.' | b'e' | b'E' | b'0'..=b'9')) {
            return None;
        }
        // The digits as one 8-digit number with leading zeros (first character in the
        // lowest byte, as fast_float's eight-digit conversion takes them).
        let v = x.wrapping_sub(ZEROS) << (8 * (8 - digits));
        let v = (v.wrapping_mul(10) + (v >> 8)) & 0x00FF_00FF_00FF_00FF;
        let v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_FFFF_0000_FFFF;
        let n = (v.wrapping_mul(10000) + (v >> 32)) & 0xFFFF_FFFF;
        self.i = end;
        let v = n as f64;
        Some(if negative { -v } else { v })
    }

    /// A number, known to be next, as its text (checked against JSON's grammar, and refused
    /// beyond float64's range, as serde_json does).
    pub fn number_text(&mut self) -> Result<&'a [u8], EncodeError> {
        self.number_text_checked(true)
    }

    fn number_text_checked(&mut self, in_range: bool) -> Result<&'a [u8], EncodeError> {
        let start = self.i;
        match f64::from_lexical_partial_with_options::<JSON>(&self.b[start..], &FLOAT_OPTIONS) {
            Ok((v, n)) if v.is_finite() || !in_range => {
                self.i += n;
                Ok(&self.b[start..self.i])
            }
            Ok(_) => Err(self.error("number out of range")),
            Err(_) => Err(self.error("invalid number")),
        }
    }

    /// A string, known to be next, as text.
    pub fn str(&mut self) -> Result<&str, EncodeError> {
        let start = self.i;
        let raw = self.string_raw(true)?;
        std::str::from_utf8(self.raw_bytes(raw))
            .map_err(|_| self.error_at("invalid UTF-8 in a string", start))
    }

    /// A string, known to be next, as bytes, not checked to be UTF-8 nor free of control
    /// characters: base64 text, whose decoder refuses anything but its alphabet and ASCII
    /// whitespace (as serde_json's byte strings did; it saves a pass over megabytes).
    pub fn str_bytes(&mut self) -> Result<&[u8], EncodeError> {
        let raw = self.string_raw(false)?;
        Ok(self.raw_bytes(raw))
    }

    /// The bytes of a string [`Lexer::string_raw`] read.
    fn raw_bytes(&self, raw: Raw) -> &[u8] {
        match raw {
            Raw::Input(r) => &self.b[r],
            Raw::Scratch => &self.scratch,
        }
    }

    /// Reads a string, decoding its escapes if it has any; refuses raw control characters
    /// (as JSON does) if `strict`.
    fn string_raw(&mut self, strict: bool) -> Result<Raw, EncodeError> {
        self.i += 1; // the opening quote
        let start = self.i;
        let mut decoded = false;
        loop {
            let rest = &self.b[self.i..];
            let Some(n) = memchr::memchr2(b'"', b'\\', rest) else {
                return Err(self.error_at("EOF while parsing a string", self.b.len()));
            };
            // Without an early exit, so that it vectorises (base64 text runs to megabytes).
            if strict && rest[..n].iter().fold(false, |seen, &c| seen | (c < 0x20)) {
                let at = self.i + rest[..n].iter().position(|&c| c < 0x20).unwrap_or(0);
                return Err(self.error_at(
                    "control character (\\u0000-\\u001F) found while parsing a string",
                    at,
                ));
            }
            if rest[n] == b'"' && !decoded {
                self.i += n + 1;
                return Ok(Raw::Input(start..self.i - 1));
            }
            if !decoded {
                self.scratch.clear();
                decoded = true;
            }
            self.scratch.extend_from_slice(&rest[..n]);
            self.i += n + 1;
            if rest[n] == b'"' {
                return Ok(Raw::Scratch);
            }
            self.escape()?;
        }
    }

    /// One escape after its backslash, appended to `scratch` as UTF-8.
    fn escape(&mut self) -> Result<(), EncodeError> {
        let Some(&c) = self.b.get(self.i) else {
            return Err(self.error("EOF while parsing a string"));
        };
        self.i += 1;
        let byte = match c {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let ch = self.unicode_escape()?;
                let mut buf = [0u8; 4];
                self.scratch
                    .extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                return Ok(());
            }
            _ => return Err(self.error_at("invalid escape", self.i - 1)),
        };
        self.scratch.push(byte);
        Ok(())
    }

    /// `\uXXXX` (the `\u` read), with a UTF-16 surrogate pair taking a second one.
    fn unicode_escape(&mut self) -> Result<char, EncodeError> {
        let hi = self.hex4()?;
        let code = match hi {
            0xD800..=0xDBFF => {
                if !self.b[self.i..].starts_with(b"\\u") {
                    return Err(self.error("lone leading surrogate in hex escape"));
                }
                self.i += 2;
                let lo = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&lo) {
                    return Err(self.error("lone leading surrogate in hex escape"));
                }
                0x10000 + ((hi as u32 - 0xD800) << 10) + (lo as u32 - 0xDC00)
            }
            _ => hi as u32,
        };
        char::from_u32(code).ok_or_else(|| self.error("invalid unicode code point"))
    }

    fn hex4(&mut self) -> Result<u16, EncodeError> {
        let digits = self.b.get(self.i..self.i + 4);
        let v = digits
            .and_then(|d| std::str::from_utf8(d).ok())
            .filter(|s| s.bytes().all(|c| c.is_ascii_hexdigit()))
            .and_then(|s| u16::from_str_radix(s, 16).ok());
        match v {
            Some(v) => {
                self.i += 4;
                Ok(v)
            }
            None => Err(self.error("invalid escape")),
        }
    }

    /// Enters an array known to be next; true if an element follows.
    pub fn array_first(&mut self) -> Result<bool, EncodeError> {
        self.i += 1;
        if self.peek_byte_in("EOF while parsing a list")? == b']' {
            self.i += 1;
            return Ok(false);
        }
        Ok(true)
    }

    /// After an element: true if another follows, false at the array's end.
    #[inline]
    pub fn array_next(&mut self) -> Result<bool, EncodeError> {
        // The common case first: a comma right after the element.
        if self.b.get(self.i) == Some(&b',') {
            self.i += 1;
            return Ok(true);
        }
        match self.peek_byte_in("EOF while parsing a list")? {
            b',' => {
                self.i += 1;
                Ok(true)
            }
            b']' => {
                self.i += 1;
                Ok(false)
            }
            _ => Err(self.error("expected `,` or `]`")),
        }
    }

    /// Enters an object known to be next; reads its first key and the `:` after it.
    pub fn object_first(&mut self) -> Result<Option<&str>, EncodeError> {
        self.i += 1;
        match self.peek_byte_in("EOF while parsing an object")? {
            b'}' => {
                self.i += 1;
                Ok(None)
            }
            _ => self.key().map(Some),
        }
    }

    /// After a member's value: the next key, or `None` at the object's end.
    pub fn object_next(&mut self) -> Result<Option<&str>, EncodeError> {
        match self.peek_byte_in("EOF while parsing an object")? {
            b',' => {
                self.i += 1;
                self.key().map(Some)
            }
            b'}' => {
                self.i += 1;
                Ok(None)
            }
            _ => Err(self.error("expected `,` or `}`")),
        }
    }

    fn key(&mut self) -> Result<&str, EncodeError> {
        match self.peek_byte_in("EOF while parsing an object")? {
            b'"' => {}
            b'}' => return Err(self.error("trailing comma")),
            _ => return Err(self.error("key must be a string")),
        }
        let raw = self.string_raw(true)?;
        if self.peek_byte_in("EOF while parsing an object")? != b':' {
            return Err(self.error("expected `:`"));
        }
        self.i += 1;
        std::str::from_utf8(self.raw_bytes(raw)).map_err(|_| self.error("invalid UTF-8 in a key"))
    }

    /// The next byte after whitespace, not consumed; at the end of the input, the error `eof`.
    #[inline]
    fn peek_byte_in(&mut self, eof: &str) -> Result<u8, EncodeError> {
        self.skip_whitespace();
        match self.b.get(self.i) {
            Some(&c) => Ok(c),
            None => Err(self.error(eof)),
        }
    }

    /// Reads over one value of any kind, checking its grammar (and, if `in_range`, that its
    /// numbers fit a float64, as they must in a value read later); returns its text.
    pub fn skip(&mut self, in_range: bool) -> Result<&'a [u8], EncodeError> {
        self.peek_byte()?;
        let start = self.i;
        // The open containers: true for an object.
        let mut open: Vec<bool> = Vec::new();
        loop {
            // A value.
            match self.peek()? {
                Next::Null => self.null()?,
                Next::Bool => {
                    self.bool()?;
                }
                Next::Number => {
                    self.number_text_checked(in_range)?;
                }
                // Only its end is needed: a string read later is checked then, as the
                // field's type asks (base64 text may hold line breaks).
                Next::String => {
                    self.string_raw(false)?;
                }
                Next::Array | Next::Object if open.len() == MAX_JSON_DEPTH => {
                    return Err(EncodeError::new(K::TooDeep(MAX_JSON_DEPTH)));
                }
                Next::Array => {
                    if self.array_first()? {
                        open.push(false);
                        continue;
                    }
                }
                Next::Object => {
                    if self.object_first()?.is_some() {
                        open.push(true);
                        continue;
                    }
                }
            }
            // Close what ends after it.
            loop {
                match open.last() {
                    None => return Ok(&self.b[start..self.i]),
                    Some(false) if self.array_next()? => break,
                    Some(true) if self.object_next()?.is_some() => break,
                    Some(_) => {
                        open.pop();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What lexical-parse-float (the general path) makes of a number text.
    fn general(text: &[u8]) -> Option<(u64, usize)> {
        f64::from_lexical_partial_with_options::<JSON>(text, &FLOAT_OPTIONS)
            .ok()
            .map(|(v, n)| (v.to_bits(), n))
    }

    proptest! {
        /// The whole-number path takes only what the general parser reads the same way.
        #[test]
        fn whole_numbers_read_as_the_general_parser_does(
            sign in prop::bool::ANY,
            digits in "[0-9]{1,9}",
            tail in prop::sample::select(vec!["", ".0", ".00", ".5", ".05", "e1", ".0e1", "E0", "x", "0"]),
            after in prop::sample::select(vec!["", ",", "]", " ", "}", ",1,2,3,4"]),
        ) {
            let text = format!("{}{digits}{tail}{after}        ", if sign { "-" } else { "" });
            let mut lx = Lexer::new(text.as_bytes());
            if let Some(v) = lx.whole_float() {
                prop_assert_eq!(Some((v.to_bits(), lx.pos())), general(text.as_bytes()), "{}", text);
            } else {
                prop_assert_eq!(lx.pos(), 0);
            }
        }
    }

    #[test]
    fn whole_numbers_take_the_exact_path() {
        for (text, want) in [
            ("0,", 0.0f64),
            ("-0]", -0.0),
            ("7.0,", 7.0),
            ("1234567.0 ", 1234567.0),
            ("-42}      ", -42.0),
        ] {
            let padded = format!("{text}        ");
            let mut lx = Lexer::new(padded.as_bytes());
            let v = lx.whole_float();
            assert_eq!(v.map(f64::to_bits), Some(want.to_bits()), "{text}");
        }
        for text in [
            "01,",
            "12345678,",
            "1.5,",
            "1.05,",
            "1e3,",
            "-,",
            "1.0e3,",
            ".5,",
        ] {
            let padded = format!("{text}        ");
            assert_eq!(Lexer::new(padded.as_bytes()).whole_float(), None, "{text}");
        }
    }
}
