//! Repair datagrams: forward error correction for a large frame sent on a QUIC stream.
//!
//! A link that sees loss sends, beside a large frame's stream bytes, a few QUIC datagrams
//! each carrying one Reed-Solomon recovery shard computed over that frame's bytes as they
//! stand in the stream. The receiver rebuilds the packets it lost from them instead of
//! waiting a round trip for QUIC's retransmission; the retransmission still comes, so a lost
//! repair costs nothing but the shortcut. Link-level and hop by hop: a router decodes and
//! re-protects, like QUIC's own packet protection.
//!
//! ```text
//! repair = length u32 BE | type 0x80 u8 | stream u64 | start u64 | frame_len u32
//!        | shard_len u16 | originals u16 | recoveries u16 | index u16 | shard (shard_len)
//! ```
//!
//! - `stream`: the QUIC stream id the frame was written on; `start`: the stream offset of the
//!   frame's first byte (its length prefix); `frame_len`: its length on the stream, prefix
//!   included.
//! - The frame's bytes are cut into `originals` shards of `shard_len` bytes (the last one
//!   padded with zeros); `index` says which of the `recoveries` recovery shards this is.
//!
//! The type byte is outside [`crate::frame`]'s range, so a peer that does not know repairs
//! drops the datagram as a bad frame and loses nothing else.

use bytes::{BufMut, Bytes, BytesMut};

use crate::codec::{CodecError, Reader};
use crate::frame::LEN_PREFIX;

/// The type byte of a repair datagram.
pub const REPAIR_TYPE: u8 = 0x80;
/// Bytes before the shard: length prefix, type and the header fields.
pub const REPAIR_HEADER_LEN: usize = LEN_PREFIX + 1 + 8 + 8 + 4 + 2 + 2 + 2 + 2;

/// Which bytes a repair datagram protects and which recovery shard it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RepairHeader {
    pub stream: u64,
    pub start: u64,
    pub frame_len: u32,
    pub shard_len: u16,
    pub originals: u16,
    pub recoveries: u16,
    pub index: u16,
}

/// A repair datagram that does not describe a consistent set of shards.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RepairError {
    #[error("malformed repair datagram: {0}")]
    Codec(#[from] CodecError),
    #[error("not a repair datagram")]
    NotRepair,
    #[error("repair header inconsistent: {0}")]
    Inconsistent(&'static str),
}

impl RepairHeader {
    /// The number of original shards a frame of `frame_len` bytes makes at `shard_len`.
    pub fn originals_for(frame_len: usize, shard_len: usize) -> usize {
        frame_len.div_ceil(shard_len.max(1))
    }

    /// The stream offsets of original shard `i`, the last one cut at the frame's end.
    pub fn shard_range(&self, i: usize) -> std::ops::Range<u64> {
        let len = u64::from(self.shard_len);
        let from = self.start + i as u64 * len;
        let to = (from + len).min(self.end());
        from..to
    }

    /// The stream offset just past the frame.
    pub fn end(&self) -> u64 {
        self.start + u64::from(self.frame_len)
    }

    /// The fields every repair of one frame shares (all but `index`).
    pub fn group(&self) -> RepairHeader {
        RepairHeader { index: 0, ..*self }
    }

    fn check(&self) -> Result<(), RepairError> {
        let bad = RepairError::Inconsistent;
        if self.shard_len == 0 || !self.shard_len.is_multiple_of(2) {
            return Err(bad("shard length must be even and non-zero"));
        }
        if self.frame_len == 0 {
            return Err(bad("empty frame"));
        }
        let originals = Self::originals_for(self.frame_len as usize, self.shard_len as usize);
        if originals != self.originals as usize {
            return Err(bad("original count does not match the frame length"));
        }
        if self.index >= self.recoveries {
            return Err(bad("recovery index out of range"));
        }
        if self.start.checked_add(u64::from(self.frame_len)).is_none() {
            return Err(bad("frame end overflows"));
        }
        Ok(())
    }

    /// A repair datagram: this header and `shard` (exactly `shard_len` bytes).
    pub fn encode(&self, shard: &[u8]) -> Bytes {
        debug_assert_eq!(shard.len(), self.shard_len as usize);
        let mut out = BytesMut::with_capacity(REPAIR_HEADER_LEN + shard.len());
        out.put_u32((REPAIR_HEADER_LEN - LEN_PREFIX + shard.len()) as u32);
        out.put_u8(REPAIR_TYPE);
        out.put_u64(self.stream);
        out.put_u64(self.start);
        out.put_u32(self.frame_len);
        out.put_u16(self.shard_len);
        out.put_u16(self.originals);
        out.put_u16(self.recoveries);
        out.put_u16(self.index);
        out.put_slice(shard);
        out.freeze()
    }

    /// Parses a repair datagram; the shard shares the datagram's buffer.
    pub fn decode(datagram: &Bytes) -> Result<(RepairHeader, Bytes), RepairError> {
        if !is_repair(datagram) {
            return Err(RepairError::NotRepair);
        }
        let mut r = Reader::new(datagram);
        let len = u32::from_be_bytes(r.array()?) as usize;
        let _ty = r.u8()?;
        let h = RepairHeader {
            stream: r.u64()?,
            start: r.u64()?,
            frame_len: r.u32()?,
            shard_len: r.u16()?,
            originals: r.u16()?,
            recoveries: r.u16()?,
            index: r.u16()?,
        };
        h.check()?;
        if LEN_PREFIX + len != datagram.len()
            || datagram.len() != REPAIR_HEADER_LEN + h.shard_len as usize
        {
            return Err(RepairError::Inconsistent("length does not match the shard"));
        }
        Ok((h, datagram.slice(REPAIR_HEADER_LEN..)))
    }
}

/// Whether a datagram is a repair (rather than frames).
pub fn is_repair(datagram: &[u8]) -> bool {
    datagram.get(LEN_PREFIX) == Some(&REPAIR_TYPE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> RepairHeader {
        RepairHeader {
            stream: 6,
            start: 1000,
            frame_len: 2501,
            shard_len: 1000,
            originals: 3,
            recoveries: 2,
            index: 1,
        }
    }

    #[test]
    fn a_repair_round_trips_and_names_its_shards() {
        let h = header();
        let shard = vec![7u8; 1000];
        let d = h.encode(&shard);
        assert!(is_repair(&d));
        let (back, s) = RepairHeader::decode(&d).unwrap();
        assert_eq!(back, h);
        assert_eq!(&s[..], &shard[..]);
        assert_eq!(h.shard_range(0), 1000..2000);
        assert_eq!(h.shard_range(2), 3000..3501);
        assert_eq!(h.end(), 3501);
    }

    #[test]
    fn inconsistent_or_cut_repairs_are_errors() {
        let shard = vec![0u8; 1000];
        let good = header().encode(&shard);
        for cut in [0, 3, 4, 5, 20, REPAIR_HEADER_LEN, good.len() - 1] {
            let d = good.slice(..cut);
            assert!(RepairHeader::decode(&d).is_err(), "cut at {cut}");
        }
        let bad = [
            RepairHeader {
                shard_len: 999,
                ..header()
            },
            RepairHeader {
                shard_len: 0,
                ..header()
            },
            RepairHeader {
                originals: 4,
                ..header()
            },
            RepairHeader {
                index: 2,
                ..header()
            },
            RepairHeader {
                frame_len: 0,
                originals: 0,
                ..header()
            },
            RepairHeader {
                start: u64::MAX,
                ..header()
            },
        ];
        for h in bad {
            let mut d = BytesMut::from(&h.encode(&vec![0u8; h.shard_len as usize])[..]);
            d.truncate(REPAIR_HEADER_LEN + h.shard_len as usize);
            assert!(
                matches!(
                    RepairHeader::decode(&d.freeze()),
                    Err(RepairError::Inconsistent(_))
                ),
                "{h:?}"
            );
        }
        let frames = crate::Frame::Subscribe(vec![]).encode().freeze();
        assert_eq!(RepairHeader::decode(&frames), Err(RepairError::NotRepair));
    }
}
