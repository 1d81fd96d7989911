//! The tasks that move a QUIC link's frames: a writer per lane (batching what is queued
//! into one stream write, at the stream's priority) and a reader per incoming stream and for
//! datagrams.

use std::sync::Arc;

use bytes::Bytes;
use roam_proto::frame::{data_header, DATA_HEADER_LEN};
use roam_proto::RouterId;
use tracing::{debug, warn};

use super::lane_stream::{lock, LaneStream, StreamSlot};
use super::QuicTransport;
use crate::fec::{self, GapError, GapReader};
use crate::inbound::Inbound;
use crate::lane::{Lane, Weighted};
use crate::link::{LinkId, Outgoing};

/// Most frames one stream write takes from a lane, and the byte count past which it stops
/// taking more: enough to amortise waking quinn's connection driver over a burst of small
/// messages, small enough that a lane's first message never waits behind a long batch.
const WRITE_BATCH_FRAMES: usize = 64;
const WRITE_BATCH_BYTES: usize = 256 << 10;
/// Frames up to this size are copied into one buffer per batch; larger envelopes go to quinn
/// as they are (no copy). quinn keeps every written buffer until the peer acknowledges it and
/// looks data up by walking those buffers, so a burst of small messages must not become
/// thousands of tiny buffers.
const COALESCE_MAX: usize = 16 << 10;

/// Writes `lane`'s frames on the stream in `slot`, which it leaves there between writes so
/// that a sender finding the lane empty can write itself ([`write_here`]).
pub(super) async fn write_lane(
    t: Arc<QuicTransport>,
    lane: Arc<Lane<Outgoing>>,
    slot: Arc<StreamSlot>,
) {
    let mut chunks: Vec<Bytes> = Vec::with_capacity(2 * WRITE_BATCH_FRAMES);
    let mut batch: Vec<Outgoing> = Vec::with_capacity(WRITE_BATCH_FRAMES);
    while let Some(first) = lane.pop().await {
        // Whatever else is queued already goes in the same write.
        let mut bytes = first.size();
        batch.push(first);
        while batch.len() < WRITE_BATCH_FRAMES && bytes < WRITE_BATCH_BYTES {
            let Some(item) = lane.try_pop() else { break };
            bytes += item.size();
            batch.push(item);
        }
        // The stream stays in the slot between writes; while the lane says its writer is
        // busy, no sender takes it, so it is there.
        let Some(mut ls) = lock(&slot).take() else {
            lane.close();
            return;
        };
        if !write_batch(&t, &mut ls, &lane, &mut batch, &mut chunks, bytes).await {
            lane.close();
            return;
        }
        ls.last_write = std::time::Instant::now();
        *lock(&slot) = Some(ls);
        lane.written();
    }
    // Closed: everything queued has been written. Wait until the peer acknowledged it, so a
    // program that exits right after publishing loses nothing.
    let Some(LaneStream { mut stream, .. }) = lock(&slot).take() else {
        return;
    };
    if stream.finish().is_ok() {
        let _ = stream.stopped().await;
    }
}

/// One write of a batch of `bytes` bytes; false once the stream is gone.
async fn write_batch(
    t: &Arc<QuicTransport>,
    ls: &mut LaneStream,
    lane: &Lane<Outgoing>,
    batch: &mut Vec<Outgoing>,
    chunks: &mut Vec<Bytes>,
    bytes: usize,
) -> bool {
    let frames = batch.len();
    let largest = batch.iter().map(Weighted::size).max().unwrap_or(0);
    let stream = u64::from(ls.stream.id());
    // Repairs only while the link keeps up (nothing else waits in the lane): where
    // messages queue for it, the link is the bottleneck, the repairs would take capacity
    // the waiting messages need, and a message's wait is the queue, not a lost packet.
    let view = if t.cfg.fec {
        t.repair_view()
    } else {
        Default::default()
    };
    let loss = view.loss;
    let repairing = fec::worth_repairing(loss) && lane.queued_bytes() == 0;
    let large = if repairing && largest >= fec::ALONE_MIN {
        large_frames(batch, ls.offset)
    } else {
        Vec::new()
    };
    let start = ls.offset;
    ls.offset += bytes as u64;
    coalesce(batch, chunks);
    // A write of small frames goes again as copies while the path has room for them;
    // until they are made, its pieces are shared, not copied.
    let written = (repairing && view.copies && largest < fec::ALONE_MIN && bytes <= fec::BATCH_MAX)
        .then(|| chunks.clone());
    let wanted = Priority::of(largest);
    if wanted != ls.priority {
        ls.priority = wanted;
        let _ = ls.stream.set_priority(wanted as i32);
    }
    if let Err(e) = ls.stream.write_all_chunks(chunks).await {
        debug!("lane closed: {e}");
        return false;
    }
    chunks.clear();
    t.stats.count_out_many(frames, bytes);
    if !large.is_empty() {
        send_large_repairs(t, stream, large, loss);
    }
    if let Some(pieces) = written {
        send_write_copies(t, stream, start, &pieces);
    }
    true
}

/// The data frames of a batch large enough for repairs, with their stream offsets (the batch
/// goes on the stream from `offset`, frame after frame).
fn large_frames(batch: &[Outgoing], mut offset: u64) -> Vec<(u64, RouterId, Bytes)> {
    let mut large = Vec::new();
    for item in batch {
        if let Outgoing::Data { origin, envelope } = item {
            if item.size() >= fec::ALONE_MIN {
                large.push((offset, *origin, envelope.clone()));
            }
        }
        offset += item.size() as u64;
    }
    large
}

/// The repair datagrams of the bytes `pieces` (one after the other) written at `start` on
/// `stream`, as many as loss rate `loss` calls for.
fn repairs_of(
    stream: u64,
    start: u64,
    pieces: &[&[u8]],
    max_datagram: usize,
    loss: f64,
) -> Vec<Bytes> {
    let len = pieces.iter().map(|p| p.len()).sum();
    let shard_len = fec::shard_len_for(len, max_datagram);
    if shard_len == 0 {
        return Vec::new();
    }
    let originals = roam_proto::repair::RepairHeader::originals_for(len, shard_len);
    let n = fec::recoveries_for(originals, loss);
    fec::encode(stream, start, pieces, shard_len, n)
}

/// Sends repair datagrams for large frames just written on `stream`. The coding runs off the
/// runtime's threads: a 13 MB image takes milliseconds, which a proxy's one worker must not
/// spend.
fn send_large_repairs(
    t: &Arc<QuicTransport>,
    stream: u64,
    frames: Vec<(u64, RouterId, Bytes)>,
    loss: f64,
) {
    let Some(max) = t.conn.max_datagram_size() else {
        return;
    };
    let t = t.clone();
    tokio::spawn(async move {
        let coded = tokio::task::spawn_blocking(move || {
            let mut datagrams = Vec::new();
            for (start, origin, envelope) in frames {
                let header = data_header(origin, envelope.len());
                datagrams.extend(repairs_of(stream, start, &[&header, &envelope], max, loss));
            }
            datagrams
        })
        .await;
        send_datagrams(&t, coded.unwrap_or_default());
    });
}

/// Sends copies of a write of small frames just made at `start` on `stream`, as repair
/// datagrams: at most [`fec::BATCH_MAX`] bytes, copied here.
fn send_write_copies(t: &QuicTransport, stream: u64, start: u64, pieces: &[Bytes]) {
    let Some(max) = t.conn.max_datagram_size() else {
        return;
    };
    let len = pieces.iter().map(Bytes::len).sum();
    let slices: Vec<&[u8]> = pieces.iter().map(|p| &p[..]).collect();
    send_datagrams(
        t,
        fec::copies(stream, start, &slices, fec::shard_len_for(len, max)),
    );
}

fn send_datagrams(t: &QuicTransport, datagrams: Vec<Bytes>) {
    for d in datagrams {
        t.stats.count_repair_out(d.len());
        // quinn drops the oldest queued datagram when its buffer is full: a repair is a
        // shortcut, the stream's retransmission still comes.
        if t.conn.send_datagram(d).is_err() {
            break;
        }
    }
}

/// Appends a batch of frames to `chunks` as the buffers of one stream write: frames up to
/// [`COALESCE_MAX`], and the headers of larger envelopes, are copied into one buffer allocated
/// once at its final size (growing it frame by frame reallocated and copied it again and
/// again); larger envelopes and control frames go as they are.
/// Empties `batch`.
fn coalesce(batch: &mut Vec<Outgoing>, chunks: &mut Vec<Bytes>) {
    let copied: usize = batch
        .iter()
        .map(|item| match item {
            _ if item.size() <= COALESCE_MAX => item.size(),
            Outgoing::Data { .. } => DATA_HEADER_LEN,
            Outgoing::Control(_) => 0,
        })
        .sum();
    // Split off in pieces, every piece shares this one allocation.
    let mut small = bytes::BytesMut::with_capacity(copied);
    for item in batch.drain(..) {
        let size = item.size();
        match item {
            Outgoing::Control(b) if size <= COALESCE_MAX => small.extend_from_slice(&b),
            Outgoing::Control(b) => {
                if !small.is_empty() {
                    chunks.push(small.split().freeze());
                }
                chunks.push(b);
            }
            Outgoing::Data { origin, envelope } => {
                small.extend_from_slice(&data_header(origin, envelope.len()));
                if size <= COALESCE_MAX {
                    small.extend_from_slice(&envelope);
                } else {
                    chunks.push(small.split().freeze());
                    chunks.push(envelope);
                }
            }
        }
    }
    if !small.is_empty() {
        chunks.push(small.freeze());
    }
}

/// Which of a connection's streams quinn serves first when several have data to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Priority {
    /// A stream carrying large messages (images, point clouds, maps).
    Bulk = 0,
    /// The rest (joystick, odometry, status, services): sent ahead of bulk data, so a small
    /// message never waits behind megabytes queued on another topic's stream.
    Interactive = 1,
}

impl Priority {
    /// Messages up to this size are interactive.
    const INTERACTIVE_MAX: usize = 64 << 10;

    pub(super) fn of(largest_message: usize) -> Priority {
        if largest_message <= Self::INTERACTIVE_MAX {
            Priority::Interactive
        } else {
            Priority::Bulk
        }
    }
}

/// Most chunks taken out of quinn per read: one lock of the connection for a burst of packets.
const READ_CHUNKS: usize = 32;

/// Reads frames from stream offset `start` (past what was read before, such as the control
/// stream's Hello) until the stream ends; true when the peer finished it cleanly.
///
/// In order, in batches of chunks, until a repair comes for the stream; from then on out of
/// order (QUIC hands out what arrived past a lost packet), so that repairs can fill the hole
/// before the retransmission does.
pub(super) async fn read_stream(
    t: Arc<QuicTransport>,
    mut rx: quinn::RecvStream,
    start: u64,
    link: LinkId,
    inbound: Inbound,
) -> bool {
    let stream = u64::from(rx.id());
    let repairs = t.repairs.register(stream);
    let gaps = GapReader::new(start, t.cfg.max_frame, t.gap_limit());
    let clean = read_frames(&t, &mut rx, stream, gaps, &repairs, link, &inbound).await;
    t.repairs.unregister(stream);
    clean
}

async fn read_frames(
    t: &Arc<QuicTransport>,
    rx: &mut quinn::RecvStream,
    stream: u64,
    mut gaps: GapReader,
    repairs: &tokio::sync::Notify,
    link: LinkId,
    inbound: &Inbound,
) -> bool {
    // quinn hands out the received packets' bytes as they are (no copy); the assembler copies
    // each frame once into a buffer of its size, with no intermediate read buffer.
    let mut chunks: [Bytes; READ_CHUNKS] = Default::default();
    let mut held = HeldPastGaps::new(t);
    let mut ordered = true;
    let mut rebuilt = 0;
    let mut frames = Vec::with_capacity(READ_CHUNKS);
    loop {
        let mut bad = None;
        let ended = tokio::select! {
            biased;
            _ = repairs.notified() => {
                // Out of order from now on: quinn allows no ordered read after that.
                ordered = false;
                for (h, shard) in t.repairs.take(stream) {
                    gaps.repair(h, shard);
                }
                None
            }
            read = read_some(rx, &mut chunks, ordered) => match read {
                Ok(Some(Got::InOrder(n))) => {
                    for chunk in &mut chunks[..n] {
                        if bad.is_none() {
                            bad = gaps.push_next(chunk, &mut frames).err();
                        }
                        // Release the packets now, not when their slots are next filled.
                        *chunk = Bytes::new();
                    }
                    None
                }
                Ok(Some(Got::At(chunk))) => {
                    bad = gaps.chunk(chunk.offset, chunk.bytes, &mut frames).err();
                    None
                }
                Ok(None) => Some(Ok(())),
                Err(e) => Some(Err(e)),
            },
        };
        // Decoding takes ~0.3 ms and milliseconds per megabyte: not on the runtime's thread,
        // which a proxy's other topics share; a copy (a small write's repair) is taken here.
        while bad.is_none() {
            let Some(job) = gaps.next_rebuild() else {
                break;
            };
            let rebuilt = if job.is_copy() {
                job.run()
            } else {
                match tokio::task::spawn_blocking(move || job.run()).await {
                    Ok(rebuilt) => rebuilt,
                    Err(_) => break,
                }
            };
            bad = gaps.apply(rebuilt, &mut frames).err();
        }
        if bad.is_none() {
            bad = held.update(gaps.held()).err();
        }
        if gaps.rebuilt_shards() != rebuilt {
            t.stats.count_rebuilt(gaps.rebuilt_shards() - rebuilt);
            rebuilt = gaps.rebuilt_shards();
        }
        // The frames before a bad one are delivered: the peer sent them whole. One clock read
        // dates the batch.
        let now = crate::latency::now_us();
        for frame in frames.drain(..) {
            t.stats.count_frame_in_at(&frame, now);
            if !crate::quota::admit(t.quota.as_deref(), &frame, &t.stats).await {
                continue;
            }
            if !inbound.frame(link, frame).await {
                return false;
            }
        }
        if let Some(e) = bad {
            warn!("closing link: {e}");
            t.conn.close(2u32.into(), b"bad frame");
            return false;
        }
        match ended {
            None => {}
            Some(Ok(())) if gaps.is_between_frames() => return true,
            Some(Ok(())) => {
                debug!("stream ended inside a frame");
                return false;
            }
            Some(Err(e)) => {
                debug!("stream ended: {e}");
                return false;
            }
        }
    }
}

/// What one read of a stream gave.
enum Got {
    /// The stream's next `n` chunks, in order, in the read buffer.
    InOrder(usize),
    /// One chunk from wherever it lies in the stream.
    At(quinn::Chunk),
}

async fn read_some(
    rx: &mut quinn::RecvStream,
    chunks: &mut [Bytes; READ_CHUNKS],
    ordered: bool,
) -> Result<Option<Got>, quinn::ReadError> {
    if ordered {
        Ok(rx.read_chunks(chunks).await?.map(Got::InOrder))
    } else {
        Ok(rx.read_chunk(usize::MAX, false).await?.map(Got::At))
    }
}

/// A reader's share of the link's bytes held past gaps, kept in the link's total: one peer
/// may not make a link hold more than [`QuicTransport::gap_limit`] over all its streams.
struct HeldPastGaps<'a> {
    t: &'a QuicTransport,
    mine: usize,
}

impl<'a> HeldPastGaps<'a> {
    fn new(t: &'a QuicTransport) -> Self {
        HeldPastGaps { t, mine: 0 }
    }

    fn update(&mut self, now: usize) -> Result<(), GapError> {
        use std::sync::atomic::Ordering;
        if now == self.mine {
            return Ok(());
        }
        let total = if now > self.mine {
            self.t
                .held_past_gaps
                .fetch_add(now - self.mine, Ordering::AcqRel)
                + now
                - self.mine
        } else {
            self.t
                .held_past_gaps
                .fetch_sub(self.mine - now, Ordering::AcqRel)
                - (self.mine - now)
        };
        self.mine = now;
        let limit = self.t.gap_limit();
        if total > limit {
            return Err(GapError::TooFarAhead {
                bytes: total,
                limit,
            });
        }
        Ok(())
    }
}

impl Drop for HeldPastGaps<'_> {
    fn drop(&mut self) {
        self.t
            .held_past_gaps
            .fetch_sub(self.mine, std::sync::atomic::Ordering::AcqRel);
    }
}

/// The peer finished its control stream: it is leaving and has finished its data streams
/// first. Read those to the end, then close, so nothing it sent is lost (quinn discards
/// unread data once a connection closes, and the peer's acknowledgements only mean the data
/// reached our buffers).
pub(super) async fn close_when_drained(t: Arc<QuicTransport>) {
    use std::sync::atomic::Ordering;
    // Streams opened before the control stream ended are already acceptable; give the accept
    // loop a moment to pick them up.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let deadline =
        tokio::time::Instant::now() + t.cfg.idle_timeout.max(std::time::Duration::from_secs(5));
    while t.readers.load(Ordering::Acquire) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    t.conn.close(0u32.into(), b"bye");
}

pub(super) async fn accept_streams(t: Arc<QuicTransport>, link: LinkId, inbound: Inbound) {
    use std::sync::atomic::Ordering;
    while let Ok(rx) = t.conn.accept_uni().await {
        t.readers.fetch_add(1, Ordering::AcqRel);
        let t2 = t.clone();
        let inbound = inbound.clone();
        tokio::spawn(async move {
            read_stream(t2.clone(), rx, 0, link, inbound).await;
            t2.readers.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

pub(super) async fn read_datagrams(t: Arc<QuicTransport>, link: LinkId, inbound: Inbound) {
    while let Ok(d) = t.conn.read_datagram().await {
        t.stats.count_in(d.len());
        if roam_proto::repair::is_repair(&d) {
            match roam_proto::repair::RepairHeader::decode(&d) {
                Ok((h, shard)) => {
                    t.stats.count_repair_in();
                    t.repairs.put(h, shard);
                }
                Err(e) => debug!("dropping a bad repair: {e}"),
            }
            continue;
        }
        match roam_proto::frame::decode_all(d, t.cfg.max_frame) {
            Ok(frames) => {
                for f in frames {
                    t.stats.record_age(&f);
                    if !crate::quota::admit(t.quota.as_deref(), &f, &t.stats).await {
                        continue;
                    }
                    if !inbound.frame(link, f).await {
                        return;
                    }
                }
            }
            // A bad datagram is dropped; datagrams are best effort by nature.
            Err(e) => debug!("dropping a bad datagram: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(origin: u64, len: usize, byte: u8) -> Outgoing {
        Outgoing::Data {
            origin,
            envelope: Bytes::from(vec![byte; len]),
        }
    }

    /// The bytes a batch puts on the stream, frame after frame.
    fn wire(batch: &[Outgoing]) -> Vec<u8> {
        let mut out = Vec::new();
        for item in batch {
            match item {
                Outgoing::Control(b) => out.extend_from_slice(b),
                Outgoing::Data { origin, envelope } => {
                    out.extend_from_slice(&data_header(*origin, envelope.len()));
                    out.extend_from_slice(envelope);
                }
            }
        }
        out
    }

    #[test]
    fn a_batch_keeps_its_bytes_and_order_and_copies_only_small_frames_once() {
        let big = COALESCE_MAX + 1;
        let batch = vec![
            data(1, 100, 0xa1),
            Outgoing::Control(Bytes::from_static(b"ctl")),
            data(2, big, 0xb2),
            data(3, 10, 0xc3),
            Outgoing::Control(Bytes::from(vec![0xd4; big])),
            data(4, 0, 0),
        ];
        let expected = wire(&batch);
        let large_envelope = match &batch[2] {
            Outgoing::Data { envelope, .. } => envelope.as_ptr(),
            Outgoing::Control(_) => unreachable!(),
        };
        let mut items = batch;
        let mut chunks = Vec::new();
        coalesce(&mut items, &mut chunks);
        assert!(items.is_empty());
        assert_eq!(chunks.concat(), expected);
        // [data 1 + ctl + header 2] [envelope 2] [data 3] [large ctl] [data 4]
        let sizes: Vec<usize> = chunks.iter().map(Bytes::len).collect();
        assert_eq!(
            sizes,
            vec![
                2 * DATA_HEADER_LEN + 100 + 3,
                big,
                DATA_HEADER_LEN + 10,
                big,
                DATA_HEADER_LEN
            ]
        );
        // The large envelope is passed as it is, not copied.
        assert_eq!(chunks[1].as_ptr(), large_envelope);
        // The copied pieces are consecutive parts of one allocation.
        let end = |c: &Bytes| c.as_ptr() as usize + c.len();
        assert_eq!(end(&chunks[0]), chunks[2].as_ptr() as usize);
        assert_eq!(end(&chunks[2]), chunks[4].as_ptr() as usize);
    }

    #[test]
    fn an_empty_batch_writes_nothing() {
        let mut chunks = Vec::new();
        coalesce(&mut Vec::new(), &mut chunks);
        assert!(chunks.is_empty());
    }
}
