//! The few CDR shapes the bridge writes and reads itself (mqtt_client's RosMsgType, the
//! timestamp, std_msgs primitives): XCDR1 plain, the 4-byte encapsulation header, alignment
//! counted from after it. Anything richer goes through roam-msg's dynamic codec.

use crate::wire::WireError;

/// Writes little-endian CDR with its header.
pub struct Writer(Vec<u8>);

impl Writer {
    pub fn new() -> Self {
        Self(vec![0x00, 0x01, 0x00, 0x00])
    }

    fn align(&mut self, n: usize) {
        while !(self.0.len() - 4).is_multiple_of(n) {
            self.0.push(0);
        }
    }

    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }

    pub fn u16(&mut self, v: u16) {
        self.align(2);
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    pub fn u32(&mut self, v: u32) {
        self.align(4);
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    pub fn i32(&mut self, v: i32) {
        self.u32(v as u32);
    }

    pub fn u64(&mut self, v: u64) {
        self.align(8);
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    pub fn f32(&mut self, v: f32) {
        self.u32(v.to_bits());
    }

    pub fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }

    /// A CDR string: length including the NUL, bytes, NUL.
    pub fn string(&mut self, s: &str) {
        self.u32(s.len() as u32 + 1);
        self.0.extend_from_slice(s.as_bytes());
        self.0.push(0);
    }

    /// A `uint8[]`: length, bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }

    pub fn finish(self) -> Vec<u8> {
        self.0
    }
}

impl Default for Writer {
    fn default() -> Self {
        Self::new()
    }
}

/// Reads CDR of either byte order; every read is bounds-checked.
pub struct Reader<'a> {
    body: &'a [u8],
    at: usize,
    big_endian: bool,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8], what: &'static str) -> Result<Self, WireError> {
        if bytes.len() < 4 {
            return Err(WireError::Short {
                what,
                len: bytes.len(),
                need: 4,
            });
        }
        let kind = u16::from_be_bytes([bytes[0], bytes[1]]);
        let big_endian = match kind {
            0x0000 => true,
            0x0001 => false,
            _ => return Err(WireError::Encapsulation { what, kind }),
        };
        Ok(Self {
            body: &bytes[4..],
            at: 0,
            big_endian,
            what,
        })
    }

    fn take(&mut self, n: usize, align: usize) -> Result<&'a [u8], WireError> {
        let start = self.at.div_ceil(align) * align;
        let end = start.checked_add(n).filter(|&e| e <= self.body.len());
        let Some(end) = end else {
            return Err(WireError::Short {
                what: self.what,
                len: self.body.len() + 4,
                need: start.saturating_add(n).saturating_add(4),
            });
        };
        self.at = end;
        Ok(&self.body[start..end])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, N)?);
        if self.big_endian {
            a.reverse();
        }
        Ok(a)
    }

    pub fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1, 1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    pub fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub fn i32(&mut self) -> Result<i32, WireError> {
        Ok(self.u32()? as i32)
    }

    pub fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub fn f32(&mut self) -> Result<f32, WireError> {
        Ok(f32::from_bits(self.u32()?))
    }

    pub fn f64(&mut self) -> Result<f64, WireError> {
        Ok(f64::from_bits(self.u64()?))
    }

    pub fn string(&mut self) -> Result<String, WireError> {
        let n = self.u32()? as usize;
        let bad = WireError::BadString { what: self.what };
        if n == 0 {
            return Err(bad);
        }
        let raw = self.take(n, 1)?;
        let (text, nul) = raw.split_at(n - 1);
        if nul != [0] {
            return Err(bad);
        }
        String::from_utf8(text.to_vec()).map_err(|_| bad)
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.u32()? as usize;
        self.take(n, 1)
    }
}
