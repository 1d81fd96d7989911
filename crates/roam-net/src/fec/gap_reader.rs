//! One incoming QUIC stream cut into frames, read in order while nothing is missing and out
//! of order once repairs come for it; a hole that repairs can fill does not wait for QUIC's
//! retransmission.

use std::collections::BTreeMap;
use std::ops::Range;

use bytes::{Buf, Bytes};
use reed_solomon_simd::ReedSolomonDecoder;
use roam_proto::frame::LEN_PREFIX;
use roam_proto::repair::RepairHeader;
use roam_proto::{Frame, FrameAssembler, FrameError};

/// Frames of one stream with repairs pending at once; more are dropped (the stream still
/// completes by retransmission).
const MAX_GROUPS: usize = 64;
/// Fewest bytes a group of two or more shards covers (senders code frames of
/// [`super::ALONE_MIN`] and more): decoding one costs ~0.3 ms whatever its size, so a peer
/// may not ask for a decode per handful of bytes.
const MIN_CODED_GROUP: usize = super::ALONE_MIN / 2;

/// Why a stream cannot be read on.
#[derive(Debug, thiserror::Error)]
pub enum GapError {
    #[error(transparent)]
    Frame(#[from] FrameError),
    #[error("peer left a gap and sent {bytes} bytes past it (limit {limit})")]
    TooFarAhead { bytes: usize, limit: usize },
}

/// The repairs received for one frame and which of its original shards are in.
#[derive(Debug)]
struct Group {
    /// The frame's header, `index` 0.
    h: RepairHeader,
    present: Vec<bool>,
    present_count: usize,
    repairs: Vec<(usize, Bytes)>,
}

impl Group {
    fn originals(&self) -> usize {
        self.h.originals as usize
    }

    fn repair_bytes(&self) -> usize {
        self.repairs.iter().map(|(_, s)| s.len()).sum()
    }

    /// Whether the shards in hand rebuild every missing original.
    fn decodable(&self) -> bool {
        self.present_count < self.originals()
            && self.repairs.len() >= self.originals() - self.present_count
    }
}

/// Frames out of one stream's bytes, which may come out of order, and repair shards.
///
/// Bytes past the first hole wait in `ahead` until the hole is filled, by the stream or by a
/// rebuild; they and the repairs held count against a limit, past which the peer is taken to
/// have left a hole on purpose.
#[derive(Debug)]
pub struct GapReader {
    assembler: FrameAssembler,
    max_frame: usize,
    /// Stream offset up to which bytes went into the assembler.
    delivered: u64,
    /// Stream offset of the next byte an ordered read returns.
    ordered_at: u64,
    /// Bytes past `delivered`, by offset; never overlapping each other.
    ahead: BTreeMap<u64, Bytes>,
    /// Bytes in `ahead` and in repairs held.
    held: usize,
    limit: usize,
    groups: Vec<Group>,
    rebuilt: u64,
}

impl GapReader {
    /// A stream whose frames start at offset `start` (what came before was read elsewhere);
    /// frames up to `max_frame`; at most `limit` bytes held past a hole.
    pub fn new(start: u64, max_frame: usize, limit: usize) -> GapReader {
        GapReader {
            assembler: FrameAssembler::new(max_frame),
            max_frame,
            delivered: start,
            ordered_at: start,
            ahead: BTreeMap::new(),
            held: 0,
            limit,
            groups: Vec::new(),
            rebuilt: 0,
        }
    }

    /// Stream offset of the first byte not yet cut into frames.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Original shards rebuilt from repairs so far.
    pub fn rebuilt_shards(&self) -> u64 {
        self.rebuilt
    }

    /// Bytes held past holes and in repairs.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Whether repairs are held for frames not yet complete.
    pub fn has_repairs(&self) -> bool {
        !self.groups.is_empty()
    }

    /// True when the stream may end here: between frames, nothing held past a hole.
    pub fn is_between_frames(&self) -> bool {
        self.assembler.is_between_frames() && self.ahead.is_empty()
    }

    /// The stream's next bytes (an ordered read: they follow the last ordered read, which a
    /// rebuild may have overtaken).
    pub fn push_next(&mut self, bytes: &[u8], frames: &mut Vec<Frame>) -> Result<(), GapError> {
        let offset = self.ordered_at;
        self.ordered_at += bytes.len() as u64;
        if offset != self.delivered || !self.ahead.is_empty() {
            return self.chunk(offset, Bytes::copy_from_slice(bytes), frames);
        }
        let from = self.delivered;
        self.feed(bytes, frames)?;
        if !self.groups.is_empty() {
            self.note(from..self.delivered);
            self.drop_finished();
        }
        Ok(())
    }

    /// Bytes at stream offset `offset` (an unordered read: any order, no byte twice from
    /// QUIC, though a rebuild may have filled them already).
    pub fn chunk(
        &mut self,
        offset: u64,
        bytes: Bytes,
        frames: &mut Vec<Frame>,
    ) -> Result<(), GapError> {
        self.insert(offset, bytes);
        self.advance(frames)?;
        if self.held > self.limit {
            return Err(GapError::TooFarAhead {
                bytes: self.held,
                limit: self.limit,
            });
        }
        self.drop_finished();
        Ok(())
    }

    /// A repair shard for a frame of this stream. Repairs that do not fit (too many frames
    /// pending, the limit reached, a frame already complete, counts the coder does not take)
    /// are dropped: they are a shortcut, never needed. Rebuilds are then taken with
    /// [`GapReader::next_rebuild`].
    pub fn repair(&mut self, h: RepairHeader, shard: Bytes) {
        if h.end() <= self.delivered
            || h.frame_len as usize > self.max_frame + LEN_PREFIX
            || shard.len() != h.shard_len as usize
            || !ReedSolomonDecoder::supports(h.originals as usize, h.recoveries as usize)
            || (h.originals > 1 && (h.frame_len as usize) < MIN_CODED_GROUP)
            || self.held + shard.len() > self.limit
        {
            return;
        }
        let key = h.group();
        let gi = match self.groups.iter().position(|g| g.h == key) {
            Some(i) => i,
            None => {
                let overlaps = self
                    .groups
                    .iter()
                    .any(|g| g.h.start < key.end() && key.start < g.h.end());
                if overlaps || self.groups.len() >= MAX_GROUPS {
                    return;
                }
                let present: Vec<bool> = (0..key.originals as usize)
                    .map(|i| covered(&self.ahead, self.delivered, key.shard_range(i)))
                    .collect();
                let present_count = present.iter().filter(|p| **p).count();
                self.groups.push(Group {
                    h: key,
                    present,
                    present_count,
                    repairs: Vec::new(),
                });
                self.groups.len() - 1
            }
        };
        let g = &mut self.groups[gi];
        let index = h.index as usize;
        if g.repairs.iter().any(|(i, _)| *i == index) {
            return;
        }
        self.held += shard.len();
        g.repairs.push((index, shard));
    }

    fn feed(&mut self, bytes: &[u8], frames: &mut Vec<Frame>) -> Result<(), GapError> {
        self.delivered += bytes.len() as u64;
        self.assembler.push(bytes, frames)?;
        Ok(())
    }

    /// Keeps the parts of `bytes` at `offset` that are not in yet.
    fn insert(&mut self, mut offset: u64, mut bytes: Bytes) {
        let end = offset.saturating_add(bytes.len() as u64);
        if end <= self.delivered {
            return;
        }
        if offset < self.delivered {
            bytes.advance((self.delivered - offset) as usize);
            offset = self.delivered;
        }
        let mut at = offset;
        if let Some((&k, b)) = self.ahead.range(..at).next_back() {
            at = at.max(k + b.len() as u64);
        }
        if at >= end {
            return;
        }
        let mut pieces = Vec::new();
        for (&k, b) in self.ahead.range(at..end) {
            if k > at {
                pieces.push(at..k);
            }
            at = at.max(k + b.len() as u64);
        }
        if at < end {
            pieces.push(at..end);
        }
        for p in pieces {
            let piece = bytes.slice((p.start - offset) as usize..(p.end - offset) as usize);
            self.held += piece.len();
            self.ahead.insert(p.start, piece);
            self.note(p);
        }
    }

    /// Cuts what became contiguous into frames.
    fn advance(&mut self, frames: &mut Vec<Frame>) -> Result<(), GapError> {
        while let Some(entry) = self.ahead.first_entry() {
            if *entry.key() != self.delivered {
                break;
            }
            let b = entry.remove();
            self.held -= b.len();
            self.feed(&b, frames)?;
        }
        Ok(())
    }

    /// Marks the original shards that bytes `r` completed.
    fn note(&mut self, r: Range<u64>) {
        for g in &mut self.groups {
            if r.end <= g.h.start || r.start >= g.h.end() {
                continue;
            }
            let len = u64::from(g.h.shard_len);
            let first = ((r.start.max(g.h.start) - g.h.start) / len) as usize;
            let last = ((r.end.min(g.h.end()) - 1 - g.h.start) / len) as usize;
            for i in first..=last.min(g.present.len().saturating_sub(1)) {
                if !g.present[i] && covered(&self.ahead, self.delivered, g.h.shard_range(i)) {
                    g.present[i] = true;
                    g.present_count += 1;
                }
            }
        }
    }

    /// Drops the groups the stream completed by itself.
    fn drop_finished(&mut self) {
        let delivered = self.delivered;
        let mut freed = 0;
        self.groups.retain(|g| {
            let keep = g.h.end() > delivered && g.present_count < g.originals();
            if !keep {
                freed += g.repair_bytes();
            }
            keep
        });
        self.held -= freed;
    }

    /// A frame whose shards in hand now rebuild its holes, taken out of the reader to be
    /// decoded where it may take milliseconds ([`Rebuild::run`]), then handed back with
    /// [`GapReader::apply`]. None while no frame has enough shards.
    pub fn next_rebuild(&mut self) -> Option<Rebuild> {
        self.drop_finished();
        loop {
            let gi = self.groups.iter().position(Group::decodable)?;
            let g = self.groups.swap_remove(gi);
            self.held -= g.repair_bytes();
            if let Some(job) = self.prepare(g) {
                return Some(job);
            }
        }
    }

    /// Takes in what a rebuild restored and cuts what became contiguous into frames. The
    /// stream may have brought some of the same bytes meanwhile: those are kept as they came.
    pub fn apply(&mut self, rebuilt: Rebuilt, frames: &mut Vec<Frame>) -> Result<(), GapError> {
        for (offset, bytes) in rebuilt.0 {
            self.rebuilt += 1;
            self.insert(offset, bytes);
        }
        self.advance(frames)?;
        self.drop_finished();
        Ok(())
    }

    /// Runs every rebuild that is ready here and now.
    pub fn rebuild_now(&mut self, frames: &mut Vec<Frame>) -> Result<(), GapError> {
        while let Some(job) = self.next_rebuild() {
            self.apply(job.run(), frames)?;
        }
        Ok(())
    }

    /// Copies the original shards in hand for `g`; none when the bytes do not fit the
    /// repairs' description (a frame that does not start where they say).
    fn prepare(&self, g: Group) -> Option<Rebuild> {
        let shard_len = g.h.shard_len as usize;
        let present: Vec<usize> = (0..g.originals()).filter(|i| g.present[*i]).collect();
        let mut originals = vec![0u8; present.len() * shard_len];
        for (slot, &i) in originals.chunks_exact_mut(shard_len).zip(&present) {
            let r = g.h.shard_range(i);
            if !self.copy_range(r.clone(), &mut slot[..(r.end - r.start) as usize]) {
                return None;
            }
        }
        Some(Rebuild {
            h: g.h,
            present,
            originals,
            repairs: g.repairs,
        })
    }

    /// Copies the received bytes `r` into `out`: those before `delivered` from the frame the
    /// assembler is reading (so `r` must not start before that frame), the rest from `ahead`.
    fn copy_range(&self, r: Range<u64>, out: &mut [u8]) -> bool {
        let before = r.end.min(self.delivered);
        let mut at = r.start;
        if at < before {
            let (prefix, body) = self.assembler.unfinished();
            let held = (prefix.len() + body.len()) as u64;
            let frame_start = self.delivered - held;
            if at < frame_start {
                return false;
            }
            // The frame's bytes so far are its prefix, then its body.
            let (from, to) = ((at - frame_start) as usize, (before - frame_start) as usize);
            for (src, base) in [(prefix, 0), (body, prefix.len())] {
                let (s, e) = (from.max(base), to.min(base + src.len()));
                if s < e {
                    out[s - from..e - from].copy_from_slice(&src[s - base..e - base]);
                }
            }
            at = before;
        }
        copy_from(&self.ahead, at, r.end, r.start, out) == r.end
    }
}

/// Copies bytes `at..end` from pieces by offset into `out` (which holds the bytes from
/// `base`), as far as the pieces reach without a hole; returns the offset reached.
fn copy_from(
    pieces: &BTreeMap<u64, Bytes>,
    mut at: u64,
    end: u64,
    base: u64,
    out: &mut [u8],
) -> u64 {
    while at < end {
        let Some((&k, c)) = pieces.range(..=at).next_back() else {
            break;
        };
        let c_end = k + c.len() as u64;
        if c_end <= at {
            break;
        }
        let n = (c_end.min(end) - at) as usize;
        let (from, o) = ((at - k) as usize, (at - base) as usize);
        out[o..o + n].copy_from_slice(&c[from..from + n]);
        at += n as u64;
    }
    at
}

/// The shards in hand for one frame: decoding them is CPU work (about 3 ms per MB), for a
/// blocking thread rather than the reader's.
#[derive(Debug)]
pub struct Rebuild {
    h: RepairHeader,
    /// Which original shards are in `originals`, one `shard_len` after the other.
    present: Vec<usize>,
    originals: Vec<u8>,
    repairs: Vec<(usize, Bytes)>,
}

/// The bytes a rebuild restored, by stream offset (none when the shards were inconsistent).
#[derive(Debug)]
pub struct Rebuilt(Vec<(u64, Bytes)>);

impl Rebuild {
    /// Whether the rebuild is a copy (a group of one shard): no decoding, microseconds, where
    /// Reed-Solomon decoding takes ~0.3 ms and more with the size.
    pub fn is_copy(&self) -> bool {
        self.h.originals == 1
    }

    /// Decodes the missing original shards.
    pub fn run(self) -> Rebuilt {
        Rebuilt(self.decode().unwrap_or_default())
    }

    fn decode(&self) -> Option<Vec<(u64, Bytes)>> {
        if self.is_copy() {
            // With one original shard every recovery shard is that shard.
            let (_, shard) = self.repairs.first()?;
            let r = self.h.shard_range(0);
            let len = ((r.end - r.start) as usize).min(shard.len());
            return Some(vec![(r.start, shard.slice(..len))]);
        }
        let shard_len = self.h.shard_len as usize;
        let originals = self.h.originals as usize;
        let mut decoder =
            ReedSolomonDecoder::new(originals, self.h.recoveries as usize, shard_len).ok()?;
        for (shard, &i) in self.originals.chunks_exact(shard_len).zip(&self.present) {
            decoder.add_original_shard(i, shard).ok()?;
        }
        for (i, s) in &self.repairs {
            decoder.add_recovery_shard(*i, s).ok()?;
        }
        let result = decoder.decode().ok()?;
        Some(
            result
                .restored_original_iter()
                .map(|(i, data)| {
                    let r = self.h.shard_range(i);
                    let len = ((r.end - r.start) as usize).min(data.len());
                    (r.start, Bytes::copy_from_slice(&data[..len]))
                })
                .collect(),
        )
    }
}

/// Whether every byte of `r` is in: before `delivered`, or in `ahead`.
fn covered(ahead: &BTreeMap<u64, Bytes>, delivered: u64, r: Range<u64>) -> bool {
    let mut at = r.start.max(delivered);
    while at < r.end {
        match ahead.range(..=at).next_back() {
            Some((&k, b)) if k + b.len() as u64 > at => at = k + b.len() as u64,
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
#[path = "gap_reader_tests.rs"]
mod tests;
