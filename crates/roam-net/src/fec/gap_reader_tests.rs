//! The gap reader against streams cut, reordered and holed the way a lossy path does it.

use super::*;
use crate::fec::encode;

const SHARD: usize = 1000;

/// The reader's calls followed by whatever rebuild they made ready, run at once.
trait Now {
    fn chunk_now(&mut self, offset: u64, b: Bytes, out: &mut Vec<Frame>) -> Result<(), GapError>;
    fn repair_now(
        &mut self,
        h: RepairHeader,
        s: Bytes,
        out: &mut Vec<Frame>,
    ) -> Result<(), GapError>;
    fn push_now(&mut self, b: &[u8], out: &mut Vec<Frame>) -> Result<(), GapError>;
}

impl Now for GapReader {
    fn chunk_now(&mut self, offset: u64, b: Bytes, out: &mut Vec<Frame>) -> Result<(), GapError> {
        self.chunk(offset, b, out)?;
        self.rebuild_now(out)
    }
    fn repair_now(
        &mut self,
        h: RepairHeader,
        s: Bytes,
        out: &mut Vec<Frame>,
    ) -> Result<(), GapError> {
        self.repair(h, s);
        self.rebuild_now(out)
    }
    fn push_now(&mut self, b: &[u8], out: &mut Vec<Frame>) -> Result<(), GapError> {
        self.push_next(b, out)?;
        self.rebuild_now(out)
    }
}

/// A small frame, a protected 50 KB frame, a small frame: the frames, the stream's bytes,
/// and where the large one starts and ends.
fn stream() -> (Vec<Frame>, Vec<u8>, Range<u64>) {
    let data = |origin, len: usize| Frame::Data {
        origin,
        envelope: Bytes::from(
            (0..len)
                .map(|i| (i * 31 + origin as usize) as u8)
                .collect::<Vec<_>>(),
        ),
    };
    let frames = vec![data(1, 300), data(2, 50_000), data(3, 40)];
    let wires: Vec<Vec<u8>> = frames.iter().map(|f| f.encode().to_vec()).collect();
    let start = wires[0].len() as u64;
    let end = start + wires[1].len() as u64;
    (frames, wires.concat(), start..end)
}

fn repairs(wire: &[u8], big: &Range<u64>, n: usize) -> Vec<(RepairHeader, Bytes)> {
    let bytes = &wire[big.start as usize..big.end as usize];
    encode(9, big.start, &[bytes], SHARD, n)
        .iter()
        .map(|d| RepairHeader::decode(d).unwrap())
        .collect()
}

/// Packets of `size` bytes of the stream, as (offset, bytes).
fn packets(wire: &[u8], size: usize) -> Vec<(u64, Bytes)> {
    wire.chunks(size)
        .enumerate()
        .map(|(i, c)| ((i * size) as u64, Bytes::copy_from_slice(c)))
        .collect()
}

/// Every packet but those numbered in `lost` reaches `r`, in order.
fn arrive_except(r: &mut GapReader, pkts: &[(u64, Bytes)], lost: &[usize], out: &mut Vec<Frame>) {
    for (i, (off, b)) in pkts.iter().enumerate() {
        if !lost.contains(&i) {
            r.chunk_now(*off, b.clone(), out).unwrap();
        }
    }
}

fn reader() -> GapReader {
    GapReader::new(0, 1 << 20, 1 << 20)
}

#[test]
fn in_order_bytes_come_out_as_frames_with_or_without_repairs() {
    let (frames, wire, big) = stream();
    for with_repairs in [false, true] {
        let mut r = reader();
        let mut out = Vec::new();
        if with_repairs {
            for (h, s) in repairs(&wire, &big, 5) {
                r.repair_now(h, s, &mut out).unwrap();
            }
        }
        for piece in wire.chunks(1300) {
            r.push_now(piece, &mut out).unwrap();
        }
        assert!(out == frames, "{} frames out", out.len());
        assert!(r.is_between_frames());
        if !with_repairs {
            assert_eq!(r.rebuilt_shards(), 0);
        }
        assert!(!r.has_repairs(), "a completed frame's repairs are dropped");
        assert_eq!(r.held, 0);
    }
}

#[test]
fn lost_packets_are_rebuilt_without_their_retransmission() {
    let (frames, wire, big) = stream();
    let pkts = packets(&wire, 1300);
    // Packets 3, 10 and 30 are lost (all inside the large frame), the rest arrive in order,
    // the repairs last (the tail's protection).
    let lost = [3usize, 10, 30];
    let mut r = reader();
    let mut out = Vec::new();
    arrive_except(&mut r, &pkts, &lost, &mut out);
    assert!(
        out == frames[..1],
        "the large frame waits for its holes: {} frames out",
        out.len()
    );
    for (h, s) in repairs(&wire, &big, 8) {
        r.repair_now(h, s, &mut out).unwrap();
    }
    assert!(
        out == frames,
        "rebuilt, and the frame after it delivered too: {} frames out",
        out.len()
    );
    assert!(r.rebuilt_shards() >= 3);
    // The retransmissions come anyway: nothing is delivered twice.
    for i in lost {
        r.chunk_now(pkts[i].0, pkts[i].1.clone(), &mut out).unwrap();
    }
    assert!(out == frames, "{} frames out", out.len());
    assert!(r.is_between_frames());
    assert_eq!(r.held, 0);
}

#[test]
fn repairs_that_arrive_first_rebuild_when_the_last_packet_does() {
    let (frames, wire, big) = stream();
    let pkts = packets(&wire, 1300);
    let mut r = reader();
    let mut out = Vec::new();
    for (h, s) in repairs(&wire, &big, 6) {
        r.repair_now(h, s, &mut out).unwrap();
    }
    // In order up to a hole at packet 5; the tail packet of the large frame lost too.
    let tail = (big.end as usize - 1) / 1300;
    arrive_except(&mut r, &pkts, &[5, tail], &mut out);
    // The tail packet also carried the start of the last frame: that part is not rebuilt.
    assert!(out == frames[..2], "{} frames out", out.len());
    r.chunk_now(pkts[tail].0, pkts[tail].1.clone(), &mut out)
        .unwrap();
    assert!(out == frames, "{} frames out", out.len());
}

#[test]
fn a_hole_before_the_protected_frame_holds_it_back_in_order() {
    let (frames, wire, big) = stream();
    let pkts = packets(&wire, 200);
    let mut r = reader();
    let mut out = Vec::new();
    // Packet 0 (the first frame's start) is late; packet 50 (inside the large frame) lost.
    for (off, b) in &pkts[1..] {
        if *off != 50 * 200 {
            r.chunk_now(*off, b.clone(), &mut out).unwrap();
        }
    }
    for (h, s) in repairs(&wire, &big, 4) {
        r.repair_now(h, s, &mut out).unwrap();
    }
    assert!(out.is_empty(), "rebuilt, but behind the first frame");
    r.chunk_now(pkts[0].0, pkts[0].1.clone(), &mut out).unwrap();
    assert!(out == frames, "{} frames out", out.len());
}

#[test]
fn too_few_repairs_wait_for_the_retransmission() {
    let (frames, wire, big) = stream();
    let pkts = packets(&wire, 1300);
    let lost = [2usize, 12, 20, 33];
    let mut r = reader();
    let mut out = Vec::new();
    for (h, s) in repairs(&wire, &big, 3) {
        r.repair_now(h, s, &mut out).unwrap();
    }
    arrive_except(&mut r, &pkts, &lost, &mut out);
    assert!(out == frames[..1], "{} frames out", out.len());
    for i in lost {
        r.chunk_now(pkts[i].0, pkts[i].1.clone(), &mut out).unwrap();
    }
    assert!(out == frames, "{} frames out", out.len());
    assert_eq!(r.held, 0);
}

#[test]
fn random_loss_and_order_always_give_the_frames_once() {
    let (frames, wire, big) = stream();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut rebuilt_before_retransmission = 0;
    for round in 0..200 {
        let size = 100 + (next() % 1500) as usize;
        let mut pkts = packets(&wire, size);
        // Swap neighbours now and then: reordering.
        for i in 1..pkts.len() {
            if next() % 8 == 0 {
                pkts.swap(i - 1, i);
            }
        }
        let (arrived, lost): (Vec<_>, Vec<_>) = pkts.into_iter().partition(|_| next() % 100 >= 5);
        let mut reps = repairs(&wire, &big, (next() % 12) as usize + 1);
        reps.retain(|_| next() % 100 >= 5);
        let mut r = reader();
        let mut out = Vec::new();
        let mut reps = reps.into_iter();
        for (off, b) in arrived {
            r.chunk_now(off, b, &mut out).unwrap();
            if next() % 20 == 0 {
                if let Some((h, s)) = reps.next() {
                    r.repair_now(h, s, &mut out).unwrap();
                }
            }
        }
        for (h, s) in reps {
            r.repair_now(h, s, &mut out).unwrap();
        }
        assert!(
            frames.starts_with(&out),
            "round {round}: a prefix, in order"
        );
        if out.len() >= 2 && r.rebuilt_shards() > 0 {
            rebuilt_before_retransmission += 1;
        }
        for (off, b) in lost {
            r.chunk_now(off, b, &mut out).unwrap();
        }
        assert!(out == frames, "{} frames out", out.len());
        assert!(r.is_between_frames(), "round {round}");
        assert_eq!(r.held, 0, "round {round}");
    }
    assert!(
        rebuilt_before_retransmission > 20,
        "{rebuilt_before_retransmission}"
    );
}

#[test]
fn a_peer_that_never_fills_a_hole_hits_the_limit() {
    let (_, wire, _) = stream();
    let mut r = GapReader::new(0, 1 << 20, 10_000);
    let mut out = Vec::new();
    let mut result = Ok(());
    for (off, b) in packets(&wire, 1000).into_iter().skip(1) {
        result = r.chunk_now(off, b, &mut out);
        if result.is_err() {
            break;
        }
    }
    assert!(
        matches!(result, Err(GapError::TooFarAhead { .. })),
        "{result:?}"
    );
}

#[test]
fn repairs_that_do_not_match_the_stream_are_ignored_or_fail_as_frames() {
    let (frames, wire, big) = stream();
    let pkts = packets(&wire, 1300);
    // Shards of other bytes than the stream's: whatever is rebuilt from them is a bad frame
    // or a wrong one, never a panic.
    let mut r = reader();
    let mut out = Vec::new();
    let garbage: Vec<u8> = wire.iter().map(|b| b ^ 0x5a).collect();
    for (h, s) in repairs(&garbage, &big, 8) {
        r.repair_now(h, s, &mut out).unwrap();
    }
    let mut err = None;
    for (i, (off, b)) in pkts.iter().enumerate() {
        if i != 3 {
            if let Err(e) = r.chunk_now(*off, b.clone(), &mut out) {
                err = Some(e);
                break;
            }
        }
    }
    assert!(err.is_some() || out.len() < 3 || out != frames, "{err:?}");
}

#[test]
fn arbitrary_chunks_and_repairs_never_panic_and_stay_bounded() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..300 {
        let mut r = GapReader::new(0, 1 << 16, 1 << 18);
        let mut out = Vec::new();
        for _ in 0..60 {
            let result = if next() % 2 == 0 {
                let len = (next() % 3000) as usize;
                let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                let offset = next() % (1 << 17);
                r.chunk_now(offset, Bytes::from(bytes), &mut out)
            } else {
                let shard_len = ((next() % 600) as u16 + 1) * 2;
                let frame_len = (next() % 40_000) as u32 + 1;
                let originals = RepairHeader::originals_for(frame_len as usize, shard_len as usize);
                let recoveries = (next() % 40) as u16 + 1;
                let h = RepairHeader {
                    stream: 0,
                    start: next() % (1 << 17),
                    frame_len,
                    shard_len,
                    originals: originals as u16,
                    recoveries,
                    index: (next() % recoveries as u64) as u16,
                };
                let shard: Vec<u8> = (0..shard_len).map(|_| next() as u8).collect();
                r.repair_now(h, Bytes::from(shard), &mut out)
            };
            assert!(r.held() <= (1 << 18) + 3000 + 1200, "{}", r.held());
            if result.is_err() {
                break;
            }
        }
    }
}

/// Ten small frames written at once (one stream write, sent again as copies).
fn small_write() -> (Vec<Frame>, Vec<u8>) {
    let frames: Vec<Frame> = (0..10u64)
        .map(|i| Frame::Data {
            origin: i,
            envelope: Bytes::from(vec![i as u8 ^ 0x5a; 150 + i as usize * 37]),
        })
        .collect();
    let wire = frames
        .iter()
        .map(|f| f.encode().to_vec())
        .collect::<Vec<_>>()
        .concat();
    (frames, wire)
}

fn copies_of(wire: &[u8], start: u64, shard: usize) -> Vec<(RepairHeader, Bytes)> {
    crate::fec::copies(9, start, &[wire], shard)
        .iter()
        .map(|d| RepairHeader::decode(d).unwrap())
        .collect()
}

#[test]
fn a_hole_in_a_write_of_small_frames_is_filled_from_its_copies() {
    let (frames, wire) = small_write();
    assert!(wire.len() > 4 * 500, "{}", wire.len());
    let pkts = packets(&wire, 500);
    // Packet 3 is lost; the frames before it come out at once, those after it wait.
    for copies_first in [false, true] {
        let mut r = reader();
        let mut out = Vec::new();
        let copies = copies_of(&wire, 0, 400);
        if copies_first {
            // What a copy stands in for arrived already: only the hole is rebuilt.
            for (h, s) in copies.iter().cloned() {
                r.repair(h, s);
            }
        }
        for (i, (off, b)) in pkts.iter().enumerate() {
            if i != 3 {
                r.chunk(*off, b.clone(), &mut out).unwrap();
            }
        }
        if !copies_first {
            assert!(out.len() < frames.len(), "held past the hole");
            for (h, s) in copies {
                r.repair(h, s);
            }
        }
        r.rebuild_now(&mut out).unwrap();
        assert!(out == frames, "{} of {} frames", out.len(), frames.len());
        assert_eq!(
            r.rebuilt_shards(),
            2,
            "the two cuts the lost packet touched"
        );
        assert!(r.is_between_frames());
        assert_eq!(r.held, 0);
    }
}

#[test]
fn a_lone_small_frame_comes_from_its_copy_when_its_packet_is_lost() {
    // The tail case: one small message, its only packet lost, nothing after it on the stream.
    let frame = Frame::Data {
        origin: 7,
        envelope: Bytes::from_static(b"cmd_vel: linear 0.5 angular -0.1"),
    };
    let wire = frame.encode().to_vec();
    let shard = crate::fec::shard_len_for(wire.len(), 1200);
    assert!(shard < 100, "a small frame's copy is small: {shard}");
    let copies = copies_of(&wire, 0, shard);
    assert_eq!(copies.len(), 1);
    let mut r = reader();
    let mut out = Vec::new();
    let (h, s) = copies[0].clone();
    r.repair(h, s);
    let job = r
        .next_rebuild()
        .expect("a copy alone rebuilds a one-shard frame");
    assert!(job.is_copy());
    r.apply(job.run(), &mut out).unwrap();
    assert!(out == vec![frame], "{out:?}");
    // The retransmission comes later and is dropped as a duplicate.
    r.chunk_now(0, Bytes::from(wire), &mut out).unwrap();
    assert_eq!(out.len(), 1);
    assert!(r.is_between_frames());
    assert_eq!(r.held, 0);
}

#[test]
fn small_coded_groups_are_ignored() {
    // Decoding costs the same for 4 bytes as for 16 KiB: a peer may not ask for it per
    // handful of bytes.
    let (_, wire) = small_write();
    let mut r = reader();
    for (h, s) in write_coded(&wire, 400, 2) {
        r.repair(h, s);
    }
    assert!(!r.has_repairs());
    assert_eq!(r.held, 0);
}

fn write_coded(wire: &[u8], shard: usize, n: usize) -> Vec<(RepairHeader, Bytes)> {
    encode(9, 0, &[wire], shard, n)
        .iter()
        .map(|d| RepairHeader::decode(d).unwrap())
        .collect()
}

#[test]
fn a_stream_read_from_past_its_start_takes_offsets_from_there() {
    // The control stream: its Hello (here 37 bytes) was read before the reader began.
    let (frames, wire) = small_write();
    let hello = 37u64;
    let pkts: Vec<(u64, Bytes)> = packets(&wire, 500)
        .into_iter()
        .map(|(off, b)| (off + hello, b))
        .collect();
    let mut r = GapReader::new(hello, 1 << 20, 1 << 20);
    let mut out = Vec::new();
    for (h, s) in copies_of(&wire, hello, 400) {
        r.repair(h, s);
    }
    for (i, (off, b)) in pkts.iter().enumerate() {
        if i != 2 {
            r.chunk(*off, b.clone(), &mut out).unwrap();
        }
    }
    r.rebuild_now(&mut out).unwrap();
    assert!(out == frames, "{} of {} frames", out.len(), frames.len());
    assert_eq!(r.delivered(), hello + wire.len() as u64);
    assert!(r.is_between_frames());
    assert_eq!(r.held, 0);
}
