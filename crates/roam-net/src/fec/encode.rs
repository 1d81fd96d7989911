//! The sending side: recovery shards of one frame, as repair datagrams.

use bytes::Bytes;
use reed_solomon_simd::ReedSolomonEncoder;
use roam_proto::repair::{RepairHeader, REPAIR_HEADER_LEN};

/// Frames shorter than this go without repairs: a few packets, whose loss costs what it
/// costs a small message, and whose repairs would be copies.
pub const FEC_MIN_FRAME: usize = 32 << 10;
/// Loss rates below this send no repairs: a clean path pays nothing.
const MIN_LOSS: f64 = 0.002;
/// At most this share of a frame's shards is sent again as recovery: past it the path loses
/// too much for repairs sent up front to be worth their bandwidth.
const MAX_SHARE: f64 = 0.25;

/// Whether a link losing this share of its packets sends repairs at all.
pub fn worth_repairing(loss: f64) -> bool {
    // NaN compares false: no repairs.
    loss >= MIN_LOSS
}

/// How many recovery shards protect `originals` shards at loss rate `loss`: a lost packet
/// usually straddles two shards (packets and shards are not aligned), so twice the expected
/// lost packets, plus three standard deviations and one; 0 on a clean path.
pub fn recoveries_for(originals: usize, loss: f64) -> usize {
    if !worth_repairing(loss) || originals == 0 {
        return 0;
    }
    let expected = 2.0 * loss.min(1.0) * originals as f64;
    let wanted = (expected + 3.0 * expected.sqrt()).ceil() as usize + 1;
    let cap = ((originals as f64 * MAX_SHARE).ceil() as usize).max(1);
    let mut n = wanted.min(cap);
    while n > 0 && !ReedSolomonEncoder::supports(originals, n) {
        n /= 2;
    }
    n
}

/// The repair datagrams of a frame written at offset `start` of stream `stream`, whose bytes
/// on the stream are `pieces` one after the other, with shards of `shard_len` bytes (even).
/// Empty when the counts are out of the coder's range (the frame then goes unprotected).
pub fn encode(
    stream: u64,
    start: u64,
    pieces: &[&[u8]],
    shard_len: usize,
    recoveries: usize,
) -> Vec<Bytes> {
    let frame_len: usize = pieces.iter().map(|p| p.len()).sum();
    let originals = RepairHeader::originals_for(frame_len, shard_len);
    let (Ok(frame_len32), Ok(shard16), Ok(originals16), Ok(recoveries16)) = (
        u32::try_from(frame_len),
        u16::try_from(shard_len),
        u16::try_from(originals),
        u16::try_from(recoveries),
    ) else {
        return Vec::new();
    };
    if recoveries == 0 || shard_len == 0 || !shard_len.is_multiple_of(2) || frame_len == 0 {
        return Vec::new();
    }
    let Ok(mut encoder) = ReedSolomonEncoder::new(originals, recoveries, shard_len) else {
        return Vec::new();
    };
    // The shards are the frame's bytes cut at `shard_len`, the last padded with zeros.
    let mut flat = Vec::with_capacity(originals * shard_len);
    for p in pieces {
        flat.extend_from_slice(p);
    }
    flat.resize(originals * shard_len, 0);
    for shard in flat.chunks_exact(shard_len) {
        if encoder.add_original_shard(shard).is_err() {
            return Vec::new();
        }
    }
    let Ok(result) = encoder.encode() else {
        return Vec::new();
    };
    let header = RepairHeader {
        stream,
        start,
        frame_len: frame_len32,
        shard_len: shard16,
        originals: originals16,
        recoveries: recoveries16,
        index: 0,
    };
    result
        .recovery_iter()
        .enumerate()
        .map(|(i, shard)| {
            RepairHeader {
                index: i as u16,
                ..header
            }
            .encode(shard)
        })
        .collect()
}

/// The shard length that fills a datagram of at most `max_datagram` bytes.
pub fn shard_len_for(max_datagram: usize) -> usize {
    max_datagram
        .saturating_sub(REPAIR_HEADER_LEN)
        .min(u16::MAX as usize)
        & !1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_repairs_on_a_clean_path_and_more_as_loss_grows() {
        assert_eq!(recoveries_for(800, 0.0), 0);
        assert_eq!(recoveries_for(800, 0.001), 0);
        assert_eq!(recoveries_for(800, f64::NAN), 0);
        let one = recoveries_for(800, 0.01);
        let three = recoveries_for(800, 0.03);
        assert!((16..=40).contains(&one), "{one}");
        assert!(three > one && three <= 200, "{three}");
        assert_eq!(recoveries_for(800, 0.9), 200, "capped at a quarter");
        assert_eq!(recoveries_for(1, 0.5), 1);
    }

    #[test]
    fn a_frame_makes_one_datagram_per_recovery_shard() {
        let body: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
        let d = encode(4, 100, &[&body[..13], &body[13..]], 1000, 3);
        assert_eq!(d.len(), 3);
        for (i, d) in d.iter().enumerate() {
            let (h, shard) = RepairHeader::decode(d).unwrap();
            assert_eq!((h.stream, h.start, h.frame_len), (4, 100, 10_000));
            assert_eq!((h.originals, h.recoveries, h.index), (10, 3, i as u16));
            assert_eq!(shard.len(), 1000);
        }
        assert!(encode(4, 100, &[&body], 999, 3).is_empty(), "odd shards");
        assert!(encode(4, 100, &[&body], 1000, 0).is_empty());
        assert!(encode(4, 100, &[], 1000, 3).is_empty());
        assert_eq!(shard_len_for(1200), (1200 - REPAIR_HEADER_LEN) & !1);
        assert_eq!(shard_len_for(1200) % 2, 0);
        assert_eq!(shard_len_for(10), 0);
    }
}
