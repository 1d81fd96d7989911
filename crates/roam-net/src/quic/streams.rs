//! The tasks that move a QUIC link's frames: a writer per lane (batching what is queued
//! into one stream write, at the stream's priority) and a reader per incoming stream and for
//! datagrams.

use std::sync::Arc;

use bytes::Bytes;
use roam_proto::frame::{data_header, DATA_HEADER_LEN};
use roam_proto::FrameAssembler;
use tracing::{debug, warn};

use super::QuicTransport;
use crate::lane::{Lane, Weighted};
use crate::link::{Inbound, LinkId, Outgoing};

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

pub(super) async fn write_lane(
    t: Arc<QuicTransport>,
    mut s: quinn::SendStream,
    lane: Arc<Lane<Outgoing>>,
) {
    let mut chunks: Vec<Bytes> = Vec::with_capacity(2 * WRITE_BATCH_FRAMES);
    let mut batch: Vec<Outgoing> = Vec::with_capacity(WRITE_BATCH_FRAMES);
    // quinn opens every stream at priority 0, bulk's.
    let mut priority = Priority::Bulk;
    while let Some(first) = lane.pop().await {
        // Whatever else is queued already goes in the same write.
        let mut bytes = first.size();
        batch.push(first);
        while batch.len() < WRITE_BATCH_FRAMES && bytes < WRITE_BATCH_BYTES {
            let Some(item) = lane.try_pop() else { break };
            bytes += item.size();
            batch.push(item);
        }
        let frames = batch.len();
        let largest = batch.iter().map(Weighted::size).max().unwrap_or(0);
        coalesce(&mut batch, &mut chunks);
        let wanted = Priority::of(largest);
        if wanted != priority {
            priority = wanted;
            let _ = s.set_priority(priority as i32);
        }
        if let Err(e) = s.write_all_chunks(&mut chunks).await {
            debug!("lane closed: {e}");
            lane.close();
            return;
        }
        chunks.clear();
        t.stats.count_out_many(frames, bytes);
    }
    // Closed: everything queued has been written. Wait until the peer acknowledged it, so a
    // program that exits right after publishing loses nothing.
    if s.finish().is_ok() {
        let _ = s.stopped().await;
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
enum Priority {
    /// A stream carrying large messages (images, point clouds, maps).
    Bulk = 0,
    /// The rest (joystick, odometry, status, services): sent ahead of bulk data, so a small
    /// message never waits behind megabytes queued on another topic's stream.
    Interactive = 1,
}

impl Priority {
    /// Messages up to this size are interactive.
    const INTERACTIVE_MAX: usize = 64 << 10;

    fn of(largest_message: usize) -> Priority {
        if largest_message <= Self::INTERACTIVE_MAX {
            Priority::Interactive
        } else {
            Priority::Bulk
        }
    }
}

/// Most chunks taken out of quinn per read: one lock of the connection for a burst of packets.
const READ_CHUNKS: usize = 32;

/// Reads frames until the stream ends; true when the peer finished it cleanly.
pub(super) async fn read_stream(
    t: Arc<QuicTransport>,
    mut rx: quinn::RecvStream,
    link: LinkId,
    inbound: Inbound,
) -> bool {
    // quinn hands out the received packets' bytes as they are (no copy); the assembler copies
    // each frame once into a buffer of its size, with no intermediate read buffer.
    let mut chunks: [Bytes; READ_CHUNKS] = Default::default();
    let mut assembler = FrameAssembler::new(t.cfg.max_frame);
    let mut frames = Vec::with_capacity(READ_CHUNKS);
    loop {
        let n = match rx.read_chunks(&mut chunks).await {
            Ok(Some(n)) => n,
            Ok(None) if assembler.is_between_frames() => return true,
            Ok(None) => {
                debug!("stream ended inside a frame");
                return false;
            }
            Err(e) => {
                debug!("stream ended: {e}");
                return false;
            }
        };
        let mut bad = None;
        for chunk in &mut chunks[..n] {
            if bad.is_none() {
                bad = assembler.push(chunk, &mut frames).err();
            }
            // Release the packets now, not when their slots are next filled.
            *chunk = Bytes::new();
        }
        // The frames before a bad one are delivered: the peer sent them whole. One clock read
        // dates the batch.
        let now = crate::latency::now_us();
        for frame in frames.drain(..) {
            t.stats.count_frame_in_at(&frame, now);
            if !inbound.frame(link, frame).await {
                return false;
            }
        }
        if let Some(e) = bad {
            warn!("closing link: peer sent a bad frame: {e}");
            t.conn.close(2u32.into(), b"bad frame");
            return false;
        }
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
            read_stream(t2.clone(), rx, link, inbound).await;
            t2.readers.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

pub(super) async fn read_datagrams(t: Arc<QuicTransport>, link: LinkId, inbound: Inbound) {
    while let Ok(d) = t.conn.read_datagram().await {
        t.stats.count_in(d.len());
        match roam_proto::frame::decode_all(d, t.cfg.max_frame) {
            Ok(frames) => {
                for f in frames {
                    t.stats.record_age(&f);
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
