//! Any bytes through the frame decoder: never panics; what decodes re-encodes to the same bytes.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use roam_proto::frame::{decode_all, Frame};

fuzz_target!(|data: &[u8]| {
    if let Ok(frames) = decode_all(Bytes::copy_from_slice(data), 1 << 20) {
        let mut again = Vec::new();
        for f in &frames {
            again.extend_from_slice(&f.encode());
        }
        // Hello names are truncated on encode only when over the decoder's own limit, and
        // booleans are normalised (any non-zero byte reads as true), so compare frames.
        let re = decode_all(Bytes::from(again), 1 << 20).expect("re-encoded frames decode");
        assert_eq!(re, frames);
    }
    let _ = Frame::decode(Bytes::copy_from_slice(data));
});
