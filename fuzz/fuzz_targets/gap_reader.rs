//! A QUIC stream's bytes and repair datagrams in any order, as a lossy link's receiver gets
//! them (roam_net::fec::GapReader): nothing panics, and what it holds past a hole stays
//! within its limit.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use roam_net::fec::GapReader;
use roam_proto::repair::RepairHeader;

const LIMIT: usize = 64 << 10;

fuzz_target!(|data: &[u8]| {
    let mut g = GapReader::new(0, 16 << 10, LIMIT);
    let mut frames = Vec::new();
    let mut rest = data;
    // Each operation: a kind byte, a length byte, an offset (u16 BE, for chunks), the bytes.
    while rest.len() >= 4 {
        let (kind, len) = (rest[0] % 3, rest[1] as usize * 4);
        let offset = u64::from(u16::from_be_bytes([rest[2], rest[3]]));
        let body = &rest[4..];
        let n = len.min(body.len());
        let (bytes, tail) = body.split_at(n);
        rest = tail;
        let r = match kind {
            0 => g.push_next(bytes, &mut frames),
            1 => g.chunk(offset, Bytes::copy_from_slice(bytes), &mut frames),
            _ => {
                if let Ok((h, shard)) = RepairHeader::decode(&Bytes::copy_from_slice(bytes)) {
                    g.repair(h, shard);
                }
                g.rebuild_now(&mut frames)
            }
        };
        if r.is_err() {
            // The link would close here.
            return;
        }
        assert!(g.held() <= LIMIT, "held {} past the limit", g.held());
        frames.clear();
    }
});
