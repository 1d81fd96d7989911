//! The sending side: recovery shards of one frame, or of one stream write of small frames, as
//! repair datagrams.

use bytes::Bytes;
use reed_solomon_simd::ReedSolomonEncoder;
use roam_proto::repair::{RepairHeader, REPAIR_HEADER_LEN};

/// Frames of this size and larger are protected one by one, each by repairs of its own (the
/// small frames of the same write go without).
pub const ALONE_MIN: usize = 32 << 10;
/// A stream write of smaller frames, up to this many bytes in all, is sent again as copies: a
/// teleoperation command or a pose is one or two packets, and when one of them is the last
/// packet sent for a while, QUIC learns of its loss only by its probe timeout (more than a
/// round trip); its copy stands in for it at once. Copies, not Reed-Solomon shards: decoding
/// those costs ~0.3 ms whatever their size (the code's transform over GF(2^16)), more than a
/// small message's whole trip through a proxy. Larger writes of small frames are bursts that
/// fill the path, where the copies would take the capacity the burst needs.
pub const BATCH_MAX: usize = 32 << 10;
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

/// Copies of the bytes `pieces` (one after the other) written at offset `start` of stream
/// `stream`, cut at `shard_len` (even): one repair datagram per cut, each a group of one
/// original shard whose one recovery shard is that shard itself (what Reed-Solomon gives
/// for a single shard, so any receiver rebuilds from it, and ours just copies it).
pub fn copies(stream: u64, start: u64, pieces: &[&[u8]], shard_len: usize) -> Vec<Bytes> {
    let len: usize = pieces.iter().map(|p| p.len()).sum();
    let Ok(shard16) = u16::try_from(shard_len) else {
        return Vec::new();
    };
    if shard_len == 0 || !shard_len.is_multiple_of(2) || len == 0 {
        return Vec::new();
    }
    let mut flat = Vec::with_capacity(len.next_multiple_of(shard_len));
    for p in pieces {
        flat.extend_from_slice(p);
    }
    let mut out = Vec::with_capacity(len.div_ceil(shard_len));
    let mut at = 0;
    while at < len {
        let piece = (len - at).min(shard_len);
        // The last cut is its own length, rounded up to even with a zero.
        let padded = piece + piece % 2;
        flat.resize(flat.len().max(at + padded), 0);
        let header = RepairHeader {
            stream,
            start: start + at as u64,
            frame_len: piece as u32,
            shard_len: if padded == shard_len {
                shard16
            } else {
                padded as u16
            },
            originals: 1,
            recoveries: 1,
            index: 0,
        };
        out.push(header.encode(&flat[at..at + padded]));
        at += piece;
    }
    out
}

/// The shard length for `len` protected bytes sent in datagrams of at most `max_datagram`
/// bytes: what fills a datagram, or less where the bytes split evenly into fewer shards, so
/// a small frame's repair is no larger than the frame (even, as the coder needs; 0 when no
/// shard fits).
pub fn shard_len_for(len: usize, max_datagram: usize) -> usize {
    let max = max_datagram
        .saturating_sub(REPAIR_HEADER_LEN)
        .min(u16::MAX as usize)
        & !1;
    if max == 0 || len == 0 {
        return 0;
    }
    let shards = len.div_ceil(max);
    // Rounded up to even: never past `max`, which is even.
    (len.div_ceil(shards) + 1) & !1
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
    }

    #[test]
    fn a_write_is_copied_in_shards_that_reed_solomon_would_give_too() {
        let body: Vec<u8> = (0..2501u32).map(|i| (i * 13) as u8).collect();
        let d = copies(6, 40, &[&body[..100], &body[100..]], 1000);
        assert_eq!(d.len(), 3);
        let mut rebuilt = Vec::new();
        for (i, d) in d.iter().enumerate() {
            let (h, shard) = RepairHeader::decode(d).unwrap();
            assert_eq!((h.stream, h.start), (6, 40 + 1000 * i as u64));
            assert_eq!((h.originals, h.recoveries, h.index), (1, 1, 0));
            let piece = &body[1000 * i..(1000 * (i + 1)).min(body.len())];
            assert_eq!(h.frame_len as usize, piece.len());
            // The same recovery shard the coder makes for one original shard.
            let mut original = piece.to_vec();
            original.resize(h.shard_len as usize, 0);
            let coded = encode(6, h.start, &[piece], h.shard_len as usize, 1);
            let (_, coded_shard) = RepairHeader::decode(&coded[0]).unwrap();
            assert_eq!(shard, coded_shard);
            assert_eq!(&shard[..], &original[..]);
            rebuilt.extend_from_slice(&shard[..piece.len()]);
        }
        assert_eq!(rebuilt, body);
        assert_eq!(
            RepairHeader::decode(&d[2]).unwrap().0.shard_len,
            502,
            "501 rounded up"
        );
        assert!(copies(6, 0, &[&body], 999).is_empty(), "odd shards");
        assert!(copies(6, 0, &[], 1000).is_empty());
    }

    #[test]
    fn shards_fill_a_datagram_or_split_the_bytes_evenly() {
        let full = (1200 - REPAIR_HEADER_LEN) & !1;
        assert_eq!(shard_len_for(1 << 20, 1200), full);
        assert_eq!(shard_len_for(full, 1200), full);
        // A small frame's repair is its size (rounded up to even), not a full datagram.
        assert_eq!(shard_len_for(61, 1200), 62);
        assert_eq!(shard_len_for(60, 1200), 60);
        // Just over one datagram: two half shards, not one full and one nearly empty.
        assert_eq!(full, 1166);
        assert_eq!(shard_len_for(full + 2, 1200), 584);
        for len in [1, 2, 3, 999, full - 1, full + 1, 5 * full + 3, 40_000] {
            let s = shard_len_for(len, 1200);
            assert!(s > 0 && s <= full && s.is_multiple_of(2), "{len}: {s}");
            assert_eq!(
                RepairHeader::originals_for(len, s),
                len.div_ceil(full),
                "{len}: no more shards than full ones would make"
            );
        }
        assert_eq!(shard_len_for(10, 10), 0, "no room for a shard");
        assert_eq!(shard_len_for(0, 1200), 0);
    }
}
