//! The envelope: what travels between publishers and subscribers through routers.
//!
//! ```text
//! offset size field
//!  0      1   version (1)
//!  1      1   flags   (bit 0 signed, bit 1 best effort, bit 2 clear text, bit 3 dispose,
//!                      bit 4 unregister, bit 5 keep latest, bit 6 source time; other bits
//!                      must be zero, and 3 and 4 not both)
//!  2      2   epoch of the realm's keys it is sealed with (0: the realm file's secret;
//!             see crate::epoch)
//!  4     32   name
//! 36      8   sender session (random per sealer)
//! 44      8   sequence (starts at 1, strictly increasing per session)
//! 52      8   send time, microseconds since the Unix epoch (sender's clock)
//! 60      n   AEAD ciphertext of the payload [with source time: and 8 more bytes, the
//!             publisher's own time of the message, nanoseconds since the Unix epoch, BE]
//! 60+n   16   AEAD tag
//! [if signed]
//!        32   signer Ed25519 public key
//!        64   Ed25519 signature over every preceding byte
//! ```
//!
//! The 60-byte header (plus the signer key when signed) is the AEAD's associated data, so it
//! cannot be altered without detection. Routers read only the name and flags.

use crate::codec::{CodecError, Reader};
use crate::name::Name;

pub const VERSION: u8 = 1;
pub const HEADER_LEN: usize = 60;
pub const TAG_LEN: usize = 16;
pub const SIGNER_LEN: usize = 32;
pub const SIGNATURE_LEN: usize = 64;
/// The source time at the end of the plaintext ([`EnvelopeFlags::SOURCE_TIME`]).
pub const SOURCE_TIME_LEN: usize = 8;
/// The smallest valid envelope: a header and the tag of an empty payload.
pub const MIN_LEN: usize = HEADER_LEN + TAG_LEN;

/// Envelope flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EnvelopeFlags(pub u8);

impl EnvelopeFlags {
    pub const SIGNED: u8 = 0x01;
    pub const BEST_EFFORT: u8 = 0x02;
    /// The payload travels in clear text, authenticated only: the tag is AES-GCM over the
    /// header and payload as associated data (GMAC). Routers can read it but still cannot
    /// forge or replay it.
    pub const CLEAR: u8 = 0x04;
    /// Instance lifecycle: the payload is the serialized key of a keyed topic's instance
    /// that its publisher disposed.
    pub const DISPOSE: u8 = 0x08;
    /// Instance lifecycle: the payload is the serialized key of an instance that lost its
    /// publisher (unregistered, or the publisher left).
    pub const UNREGISTER: u8 = 0x10;
    /// The publisher keeps only its newest samples (a DDS KEEP_LAST history, unkeyed): an
    /// older sample still waiting at the source may be replaced by a newer one. A router
    /// holds such a stream back as soon as a lane toward its subscribers is full, rather than
    /// queueing one more sample behind it, so the next sample sent is the newest there is.
    pub const KEEP_LATEST: u8 = 0x20;
    /// The plaintext ends with the publisher's own time of the message (for a DDS sample its
    /// source timestamp), 8 bytes, nanoseconds since the Unix epoch, big-endian, encrypted
    /// with the payload: an importer writes the sample with the timestamp its publisher gave
    /// it, as within one DDS domain.
    pub const SOURCE_TIME: u8 = 0x40;
    const KNOWN: u8 = Self::SIGNED
        | Self::BEST_EFFORT
        | Self::CLEAR
        | Self::DISPOSE
        | Self::UNREGISTER
        | Self::KEEP_LATEST
        | Self::SOURCE_TIME;

    pub fn signed(self) -> bool {
        self.0 & Self::SIGNED != 0
    }

    pub fn best_effort(self) -> bool {
        self.0 & Self::BEST_EFFORT != 0
    }

    pub fn clear(self) -> bool {
        self.0 & Self::CLEAR != 0
    }

    pub fn keep_latest(self) -> bool {
        self.0 & Self::KEEP_LATEST != 0
    }

    pub fn source_time(self) -> bool {
        self.0 & Self::SOURCE_TIME != 0
    }

    /// What the payload is: data, or an instance lifecycle change.
    pub fn payload_kind(self) -> PayloadKind {
        if self.0 & Self::DISPOSE != 0 {
            PayloadKind::Dispose
        } else if self.0 & Self::UNREGISTER != 0 {
            PayloadKind::Unregister
        } else {
            PayloadKind::Data
        }
    }
}

/// What an envelope's payload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PayloadKind {
    /// A message (for ROS 2 and DDS topics: its serialized CDR).
    #[default]
    Data,
    /// The serialized key of a keyed topic's instance that was disposed.
    Dispose,
    /// The serialized key of an instance that lost its publisher.
    Unregister,
}

impl PayloadKind {
    fn flag(self) -> u8 {
        match self {
            PayloadKind::Data => 0,
            PayloadKind::Dispose => EnvelopeFlags::DISPOSE,
            PayloadKind::Unregister => EnvelopeFlags::UNREGISTER,
        }
    }
}

/// The parsed, still unauthenticated header of an envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopeHeader {
    pub flags: EnvelopeFlags,
    /// The realm epoch whose key sealed it ([`crate::epoch`]).
    pub epoch: crate::epoch::Epoch,
    pub name: Name,
    pub session: u64,
    pub seq: u64,
    pub send_time_us: u64,
}

/// Why an envelope could not even be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    #[error("malformed envelope: {0}")]
    Codec(#[from] CodecError),
    #[error("unsupported envelope version {0}")]
    Version(u8),
    #[error("unknown envelope flags {0:#04x}")]
    Flags(u8),
    #[error("envelope shorter than its trailer")]
    TooShort,
}

impl EnvelopeHeader {
    /// Parses the header at the front of `bytes` and checks that the whole envelope is long
    /// enough for its tag (and signature). This is all a router ever does with an envelope.
    pub fn parse(bytes: &[u8]) -> Result<Self, EnvelopeError> {
        let mut r = Reader::new(bytes);
        let version = r.u8()?;
        if version != VERSION {
            return Err(EnvelopeError::Version(version));
        }
        let flags = r.u8()?;
        let lifecycle = EnvelopeFlags::DISPOSE | EnvelopeFlags::UNREGISTER;
        if flags & !EnvelopeFlags::KNOWN != 0 || flags & lifecycle == lifecycle {
            return Err(EnvelopeError::Flags(flags));
        }
        let epoch = r.u16()?;
        let header = EnvelopeHeader {
            flags: EnvelopeFlags(flags),
            epoch,
            name: Name(r.array()?),
            session: r.u64()?,
            seq: r.u64()?,
            send_time_us: r.u64()?,
        };
        let source_time = if header.flags.source_time() {
            SOURCE_TIME_LEN
        } else {
            0
        };
        if bytes.len() < header.trailer_len() + HEADER_LEN + source_time {
            return Err(EnvelopeError::TooShort);
        }
        Ok(header)
    }

    /// Bytes after the ciphertext: the tag, plus signer key and signature when signed.
    pub fn trailer_len(&self) -> usize {
        TAG_LEN
            + if self.flags.signed() {
                SIGNER_LEN + SIGNATURE_LEN
            } else {
                0
            }
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bytes());
    }

    /// The header as it is on the wire.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0] = VERSION;
        b[1] = self.flags.0;
        b[2..4].copy_from_slice(&self.epoch.to_be_bytes());
        b[4..36].copy_from_slice(self.name.as_bytes());
        b[36..44].copy_from_slice(&self.session.to_be_bytes());
        b[44..52].copy_from_slice(&self.seq.to_be_bytes());
        b[52..60].copy_from_slice(&self.send_time_us.to_be_bytes());
        b
    }
}

impl PayloadKind {
    /// The envelope flags with this kind set (and any other kind cleared).
    pub(crate) fn apply(self, flags: EnvelopeFlags) -> EnvelopeFlags {
        let lifecycle = EnvelopeFlags::DISPOSE | EnvelopeFlags::UNREGISTER;
        EnvelopeFlags((flags.0 & !lifecycle) | self.flag())
    }
}

/// Reads only the name of an envelope (router fast path), after the version check.
pub fn peek_name(bytes: &[u8]) -> Option<Name> {
    if bytes.len() < MIN_LEN || bytes[0] != VERSION {
        return None;
    }
    let mut n = [0u8; 32];
    n.copy_from_slice(&bytes[4..36]);
    Some(Name(n))
}

/// Reads only the send time of an envelope (for measuring its age at a hop): unauthenticated
/// until the envelope is opened, so only good for statistics.
pub fn peek_send_time(bytes: &[u8]) -> Option<u64> {
    if bytes.len() < MIN_LEN || bytes[0] != VERSION {
        return None;
    }
    let mut t = [0u8; 8];
    t.copy_from_slice(&bytes[52..60]);
    Some(u64::from_be_bytes(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let h = EnvelopeHeader {
            flags: EnvelopeFlags(EnvelopeFlags::BEST_EFFORT),
            epoch: 0x0203,
            name: Name([7; 32]),
            session: 0x0102030405060708,
            seq: 9,
            send_time_us: 10,
        };
        let mut b = Vec::new();
        h.write(&mut b);
        assert_eq!(b.len(), HEADER_LEN);
        b.extend_from_slice(&[0; TAG_LEN]);
        assert_eq!(EnvelopeHeader::parse(&b).unwrap(), h);
        assert_eq!(peek_name(&b), Some(Name([7; 32])));
        assert_eq!(peek_send_time(&b), Some(10));
        assert_eq!(peek_send_time(&b[..MIN_LEN - 1]), None);
    }

    #[test]
    fn rejects_bad_headers() {
        let h = EnvelopeHeader {
            flags: EnvelopeFlags(0),
            epoch: 0,
            name: Name([1; 32]),
            session: 1,
            seq: 1,
            send_time_us: 1,
        };
        let mut b = Vec::new();
        h.write(&mut b);
        assert_eq!(EnvelopeHeader::parse(&b), Err(EnvelopeError::TooShort));
        b.extend_from_slice(&[0; TAG_LEN]);
        let mut v = b.clone();
        v[0] = 2;
        assert_eq!(EnvelopeHeader::parse(&v), Err(EnvelopeError::Version(2)));
        let mut f = b.clone();
        f[1] = 0x80;
        assert_eq!(EnvelopeHeader::parse(&f), Err(EnvelopeError::Flags(0x80)));
        f[1] = EnvelopeFlags::DISPOSE | EnvelopeFlags::UNREGISTER;
        assert_eq!(EnvelopeHeader::parse(&f), Err(EnvelopeError::Flags(0x18)));
        f[1] = EnvelopeFlags::UNREGISTER;
        assert_eq!(
            EnvelopeHeader::parse(&f).unwrap().flags.payload_kind(),
            PayloadKind::Unregister
        );
        let mut s = b.clone();
        s[1] = EnvelopeFlags::SIGNED;
        assert_eq!(EnvelopeHeader::parse(&s), Err(EnvelopeError::TooShort));
        for len in 0..MIN_LEN {
            assert!(EnvelopeHeader::parse(&b[..len]).is_err());
        }
    }
}
