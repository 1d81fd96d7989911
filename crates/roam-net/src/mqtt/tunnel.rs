//! A byte stream as MQTT messages (no I/O): each message is one segment,
//! `[kind u8][sequence u64 BE][bytes]`, sequences counting from 0 in each direction.
//!
//! MQTT QoS 1 delivers a topic's messages in order but may repeat one after a reconnection;
//! a repeat is skipped, and a gap (a lost segment: the broker lost the session) ends the
//! stream with an error rather than corrupting it. The TLS session above then fails its
//! record checks anyway; this makes the failure prompt and clear.

use bytes::{BufMut, Bytes, BytesMut};

/// The largest segment payload: under every common broker limit (AWS IoT: 128 KB), so large
/// messages are split and reassembled by the stream, never refused by the broker.
pub const SEGMENT: usize = 32 << 10;

const DATA: u8 = 0;
const FIN: u8 = 1;
const HEADER: usize = 9;

/// The first message on the accept topic: asks for a tunnel with this session id.
pub const OPEN: &[u8] = b"roam-open/1 ";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TunnelError {
    #[error("segment of {0} bytes is shorter than its header")]
    Short(usize),
    #[error("unknown segment kind {0}")]
    Kind(u8),
    #[error("segment {got} arrived where {want} was due: the broker lost some")]
    Gap { want: u64, got: u64 },
}

/// Numbers outgoing segments.
#[derive(Debug, Default)]
pub struct Segmenter {
    next: u64,
}

impl Segmenter {
    pub fn data(&mut self, bytes: &[u8]) -> Bytes {
        self.segment(DATA, bytes)
    }

    pub fn fin(&mut self) -> Bytes {
        self.segment(FIN, &[])
    }

    fn segment(&mut self, kind: u8, bytes: &[u8]) -> Bytes {
        let mut b = BytesMut::with_capacity(HEADER + bytes.len());
        b.put_u8(kind);
        b.put_u64(self.next);
        b.put_slice(bytes);
        self.next += 1;
        b.freeze()
    }
}

/// What one incoming segment means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    Data(Bytes),
    /// A repeat of a segment already taken.
    Repeat,
    Fin,
}

/// Checks incoming segments' order.
#[derive(Debug, Default)]
pub struct Reassembler {
    expected: u64,
}

impl Reassembler {
    pub fn accept(&mut self, segment: Bytes) -> Result<Incoming, TunnelError> {
        if segment.len() < HEADER {
            return Err(TunnelError::Short(segment.len()));
        }
        let kind = segment[0];
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&segment[1..HEADER]);
        let seq = u64::from_be_bytes(seq);
        if kind != DATA && kind != FIN {
            return Err(TunnelError::Kind(kind));
        }
        if seq < self.expected {
            return Ok(Incoming::Repeat);
        }
        if seq > self.expected {
            return Err(TunnelError::Gap {
                want: self.expected,
                got: seq,
            });
        }
        self.expected += 1;
        Ok(match kind {
            DATA => Incoming::Data(segment.slice(HEADER..)),
            _ => Incoming::Fin,
        })
    }
}

/// The session id an open message asks for.
pub fn parse_open(msg: &[u8]) -> Option<[u8; 16]> {
    let id = msg.strip_prefix(OPEN)?;
    id.try_into().ok()
}

pub fn open_message(session: &[u8; 16]) -> Bytes {
    let mut b = BytesMut::with_capacity(OPEN.len() + 16);
    b.put_slice(OPEN);
    b.put_slice(session);
    b.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_arrive_in_order_repeats_are_skipped_and_gaps_are_errors() {
        let mut s = Segmenter::default();
        let mut r = Reassembler::default();
        let a = s.data(b"hello");
        let b = s.data(b"world");
        let f = s.fin();
        assert_eq!(
            r.accept(a.clone()).unwrap(),
            Incoming::Data(Bytes::from_static(b"hello"))
        );
        assert_eq!(r.accept(a).unwrap(), Incoming::Repeat);
        assert_eq!(
            r.accept(b).unwrap(),
            Incoming::Data(Bytes::from_static(b"world"))
        );
        assert_eq!(r.accept(f).unwrap(), Incoming::Fin);
        let mut r = Reassembler::default();
        let mut s = Segmenter::default();
        let _lost = s.data(b"x");
        assert_eq!(
            r.accept(s.data(b"y")),
            Err(TunnelError::Gap { want: 0, got: 1 })
        );
        assert_eq!(
            r.accept(Bytes::from_static(b"abc")),
            Err(TunnelError::Short(3))
        );
        assert_eq!(
            r.accept(Bytes::from_static(&[7, 0, 0, 0, 0, 0, 0, 0, 0])),
            Err(TunnelError::Kind(7))
        );
    }

    #[test]
    fn open_messages_carry_a_session_id() {
        let m = open_message(&[9; 16]);
        assert_eq!(parse_open(&m), Some([9; 16]));
        assert_eq!(parse_open(b"roam-open/1 short"), None);
        assert_eq!(parse_open(b"hello"), None);
    }
}
