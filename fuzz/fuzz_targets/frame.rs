//! Any bytes through the frame decoder: never panics; what decodes re-encodes to the same bytes;
//! the stream assembler, fed the same bytes in two pieces, finds the same frames; the repair
//! datagram decoder never panics, and what it accepts re-encodes to the same bytes.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use roam_proto::frame::{decode_all, Frame};
use roam_proto::repair::RepairHeader;
use roam_proto::FrameAssembler;

fuzz_target!(|data: &[u8]| {
    let whole = decode_all(Bytes::copy_from_slice(data), 1 << 20);
    if let Ok(frames) = &whole {
        let mut again = Vec::new();
        for f in frames {
            again.extend_from_slice(&f.encode());
        }
        // Hello names are truncated on encode only when over the decoder's own limit, and
        // booleans are normalised (any non-zero byte reads as true), so compare frames.
        let re = decode_all(Bytes::from(again), 1 << 20).expect("re-encoded frames decode");
        assert_eq!(&re, frames);
    }
    // The first byte says where to cut the rest.
    if let Some((&cut, rest)) = data.split_first() {
        let cut = (cut as usize).min(rest.len());
        let mut a = FrameAssembler::new(1 << 20);
        let mut got = Vec::new();
        let pushed = a
            .push(&rest[..cut], &mut got)
            .and_then(|_| a.push(&rest[cut..], &mut got));
        if let Ok(frames) = decode_all(Bytes::copy_from_slice(rest), 1 << 20) {
            assert!(pushed.is_ok());
            assert!(a.is_between_frames());
            assert_eq!(got, frames);
        }
    }
    let _ = Frame::decode(Bytes::copy_from_slice(data));
    let datagram = Bytes::copy_from_slice(data);
    if let Ok((h, shard)) = RepairHeader::decode(&datagram) {
        assert_eq!(h.encode(&shard), datagram);
    }
});
