//! Cutting a byte stream that arrives in arbitrary pieces (QUIC stream chunks) into frames,
//! without I/O. Each frame's bytes are copied once, into a buffer allocated at the frame's
//! size after its length was checked; nothing is zeroed first and nothing is buffered twice.

use bytes::BytesMut;

use crate::frame::{frame_len, LEN_PREFIX};
use crate::{Frame, FrameError};

/// Frames from a byte stream fed in pieces of any size.
///
/// A frame is never a slice of the pieces it came in: a stream chunk shares its allocation
/// with the rest of the datagrams received with it, and a small frame held in a queue would
/// keep all of them alive.
#[derive(Debug)]
pub struct FrameAssembler {
    limit: usize,
    prefix: [u8; LEN_PREFIX],
    prefix_len: usize,
    /// The body of the frame being read, allocated at its final size once the prefix is in.
    body: BytesMut,
    /// Its length from the prefix; 0 while the prefix is incomplete.
    want: usize,
}

impl FrameAssembler {
    /// Frames longer than `limit` are refused before any buffer is allocated for them.
    pub fn new(limit: usize) -> FrameAssembler {
        FrameAssembler {
            limit,
            prefix: [0; LEN_PREFIX],
            prefix_len: 0,
            body: BytesMut::new(),
            want: 0,
        }
    }

    /// Takes the next bytes of the stream; appends every frame they complete to `frames`.
    /// After an error the stream is unusable (its framing is lost).
    pub fn push(&mut self, mut data: &[u8], frames: &mut Vec<Frame>) -> Result<(), FrameError> {
        while !data.is_empty() {
            if self.want == 0 {
                let take = (LEN_PREFIX - self.prefix_len).min(data.len());
                self.prefix[self.prefix_len..self.prefix_len + take].copy_from_slice(&data[..take]);
                self.prefix_len += take;
                data = &data[take..];
                if self.prefix_len < LEN_PREFIX {
                    return Ok(());
                }
                self.want = frame_len(self.prefix, self.limit)?;
                self.body = BytesMut::with_capacity(self.want);
            }
            let take = (self.want - self.body.len()).min(data.len());
            self.body.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.body.len() == self.want {
                let body = std::mem::take(&mut self.body).freeze();
                self.want = 0;
                self.prefix_len = 0;
                frames.push(Frame::decode(body)?);
            }
        }
        Ok(())
    }

    /// The bytes of the frame being read, as far as they came: its length prefix, then its
    /// body. Forward error correction rebuilds a frame's lost bytes from these and the rest.
    pub fn unfinished(&self) -> (&[u8], &[u8]) {
        (&self.prefix[..self.prefix_len], &self.body)
    }

    /// True between frames: a stream that ends here ended cleanly.
    pub fn is_between_frames(&self) -> bool {
        self.prefix_len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Role;
    use bytes::Bytes;

    fn sample() -> (Vec<Frame>, Vec<u8>) {
        let frames = vec![
            Frame::Hello {
                version: 1,
                role: Role::Client,
                id: 3,
                name: "edge".into(),
            },
            Frame::Data {
                origin: 9,
                envelope: Bytes::from((0..5000u32).map(|i| i as u8).collect::<Vec<_>>()),
            },
            Frame::Data {
                origin: 1,
                envelope: Bytes::from_static(b"x"),
            },
            Frame::Subscribe(vec![crate::Name([7; 32])]),
        ];
        let wire = frames.iter().flat_map(|f| f.encode()).collect();
        (frames, wire)
    }

    #[test]
    fn frames_come_out_whole_whatever_the_piece_sizes() {
        let (frames, wire) = sample();
        for piece in [1, 2, 3, 4, 5, 7, 13, 1200, 4999, 5020, wire.len()] {
            let mut a = FrameAssembler::new(1 << 20);
            let mut out = Vec::new();
            for p in wire.chunks(piece) {
                a.push(p, &mut out).unwrap();
            }
            assert_eq!(out, frames, "pieces of {piece} bytes");
            assert!(a.is_between_frames());
        }
    }

    #[test]
    fn a_stream_cut_inside_a_frame_is_not_between_frames() {
        let (_, wire) = sample();
        for cut in [1, 3, 4, 5, 30] {
            let mut a = FrameAssembler::new(1 << 20);
            let mut out = Vec::new();
            a.push(&wire[..cut], &mut out).unwrap();
            assert!(!a.is_between_frames(), "cut after {cut} bytes");
        }
    }

    #[test]
    fn an_oversized_length_is_refused_before_allocating() {
        let mut a = FrameAssembler::new(1 << 20);
        let mut out = Vec::new();
        let err = a.push(&u32::MAX.to_be_bytes(), &mut out).unwrap_err();
        assert!(matches!(err, FrameError::TooLarge { .. }), "{err}");
        assert_eq!(a.body.capacity(), 0);
    }

    #[test]
    fn a_zero_length_and_a_bad_body_are_errors() {
        let mut out = Vec::new();
        let err = FrameAssembler::new(64)
            .push(&[0, 0, 0, 0], &mut out)
            .unwrap_err();
        assert!(matches!(err, FrameError::Empty), "{err}");
        let err = FrameAssembler::new(64)
            .push(&[0, 0, 0, 1, 0xee], &mut out)
            .unwrap_err();
        assert!(matches!(err, FrameError::UnknownType(0xee)), "{err}");
    }

    #[test]
    fn frames_do_not_share_the_pieces_allocation() {
        let (_, wire) = sample();
        let chunk = Bytes::from(wire);
        let mut out = Vec::new();
        FrameAssembler::new(1 << 20).push(&chunk, &mut out).unwrap();
        let Frame::Data { envelope, .. } = &out[1] else {
            panic!("{:?}", out[1]);
        };
        let range = chunk.as_ptr_range();
        assert!(!range.contains(&envelope.as_ptr()));
    }
}
