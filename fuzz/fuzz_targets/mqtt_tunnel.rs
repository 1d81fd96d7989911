//! The MQTT tunnel's segments (a link's bytes through a broker, roam_net::mqtt::tunnel): any
//! segments a broker or a peer sends are refused or taken without a panic, and what a
//! segmenter cut is reassembled to the same bytes, repeats skipped.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use roam_net::mqtt::tunnel::{Incoming, Reassembler, Segmenter};

fuzz_target!(|data: &[u8]| {
    // Arbitrary segments, cut where the first byte of each says.
    let mut r = Reassembler::default();
    let mut rest = data;
    while let Some((&n, tail)) = rest.split_first() {
        let n = (n as usize).min(tail.len());
        let _ = r.accept(Bytes::copy_from_slice(&tail[..n]));
        rest = &tail[n..];
    }
    // The same bytes through a segmenter, every segment delivered twice.
    let mut s = Segmenter::default();
    let mut r = Reassembler::default();
    let mut got = Vec::new();
    for piece in data.chunks(97) {
        let seg = s.data(piece);
        for _ in 0..2 {
            match r.accept(seg.clone()).expect("a segmenter's segment is taken") {
                Incoming::Data(b) => got.extend_from_slice(&b),
                Incoming::Repeat => {}
                Incoming::Fin => panic!("a data segment read as the end"),
            }
        }
    }
    assert_eq!(got, data);
    assert!(matches!(r.accept(s.fin()), Ok(Incoming::Fin)));
});
