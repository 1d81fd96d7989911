//! A lane's QUIC stream, and writing on it from the sender's thread.
//!
//! A message routed by a thread that is not one of the runtime's tasks (a proxy's DDS
//! receive thread) that finds its lane empty and the lane's writer idle is written on the
//! stream and sent by that thread (`quinn::SendStream::write_chunks_here`, roam's change to
//! quinn): no wake-up of the runtime's worker, no task in between. A message that finds
//! others queued, or the writer busy, is queued behind them as before, and so is one that
//! follows the stream's last write closely (a burst), one routed by a task (a router's link
//! reader), and one that needs the writer's care: forward error correction on a lossy path,
//! or a change of the stream's priority.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use roam_proto::frame::data_header;

use super::streams::Priority;
use super::QuicTransport;
use crate::fec;
use crate::lane::Weighted;
use crate::link::Outgoing;

/// A lane's stream, with where its next frame starts (repairs name stream offsets) and the
/// priority it was given.
pub(super) struct LaneStream {
    pub stream: quinn::SendStream,
    pub offset: u64,
    pub priority: Priority,
    /// When the stream last took a write, by either path.
    pub last_write: Instant,
}

impl LaneStream {
    /// A new stream, past `offset` bytes written on it before (the control stream's Hello).
    pub fn new(stream: quinn::SendStream, offset: u64) -> Self {
        Self {
            stream,
            offset,
            // quinn opens every stream at priority 0, bulk's.
            priority: Priority::Bulk,
            last_write: Instant::now(),
        }
    }
}

/// Where a lane's stream waits between its writer's writes.
pub(super) type StreamSlot = Mutex<Option<LaneStream>>;

pub(super) fn lock(slot: &StreamSlot) -> MutexGuard<'_, Option<LaneStream>> {
    match slot.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// A message this soon after the stream's last write is likely part of a burst: it goes to
/// the writer, whose batches take a burst in a few writes and packets, where a write from
/// the sender's thread per message would send a packet (and make a system call) each.
const BURST_GAP: Duration = Duration::from_micros(50);

/// Frames up to this size go to quinn as one buffer (header and envelope copied together),
/// as the writer's batches do: quinn keeps every buffer until it is acknowledged.
const ONE_BUFFER_MAX: usize = 16 << 10;

/// Writes `item` on the stream in `slot` from the calling thread (called by
/// `Lane::push_or_write` with the lane empty and its writer idle). Gives back what the
/// writer must send instead: the item when the stream is not there or the item needs the
/// writer, the unwritten rest of its bytes when flow control took only part of it.
///
/// Messages of every size go from here, to a router too. Small ones once went only to a peer
/// that delivers: on an Intel Xeon lab machine the 8 B echo through a router was slower when
/// they left from here (eight alternating pairs of nine, 195 -> 245 us), the router's worker
/// moved at every message to the vCPU of the DDS thread that woke it
/// (bench/results/lab-write-here-small.md). On an AMD EPYC it was the other way round (8 B
/// and 1 KiB through a router 2-30% shorter in twelve alternating pairs of twelve, the
/// router's worker moving 0.45 times a round trip instead of 1.5, the path's CPU 12% lower;
/// bench/results/lab-write-here-router.md). Where the router runs on another host, as in a
/// deployment, only the proxy's saving is left: a wake-up of its worker, a context switch and
/// two system calls fewer per message.
pub(super) fn write_here(t: &QuicTransport, slot: &StreamSlot, item: Outgoing) -> Option<Outgoing> {
    // In a task (a router's link reader) the lane's writer is a task on the same worker,
    // woken without a system call: sending from here measured no faster through a router
    // (bench/results/lab-write-here-small.md), and slower with the first attempt's timer.
    if in_a_task() {
        return Some(item);
    }
    let Ok(mut guard) = slot.try_lock() else {
        return Some(item);
    };
    let Some(ls) = guard.as_mut() else {
        return Some(item);
    };
    let size = item.size();
    let now = Instant::now();
    if now.saturating_duration_since(ls.last_write) < BURST_GAP
        || Priority::of(size) != ls.priority
        || (t.cfg.fec && fec::worth_repairing(t.repair_view().loss))
    {
        ls.last_write = now;
        return Some(item);
    }
    ls.last_write = now;
    let mut chunks = match &item {
        Outgoing::Data { origin, envelope } if size <= ONE_BUFFER_MAX => {
            let mut b = BytesMut::with_capacity(size);
            b.extend_from_slice(&data_header(*origin, envelope.len()));
            b.extend_from_slice(envelope);
            vec![b.freeze()]
        }
        Outgoing::Data { origin, envelope } => vec![
            Bytes::copy_from_slice(&data_header(*origin, envelope.len())),
            envelope.clone(),
        ],
        Outgoing::Control(b) => vec![b.clone()],
    };
    match ls.stream.write_chunks_here(&mut chunks) {
        Ok(Some(w)) => {
            ls.offset += w.bytes as u64;
            if w.bytes == size {
                t.stats.count_out_many(1, size);
                return None;
            }
            // The rest goes next, before anything queued after it.
            let mut rest = BytesMut::with_capacity(size - w.bytes);
            for c in &chunks[w.chunks..] {
                rest.extend_from_slice(c);
            }
            Some(Outgoing::Control(rest.freeze()))
        }
        // No room, or the stream failed: the writer waits for room, or finds the failure.
        Ok(None) | Err(_) => Some(item),
    }
}

/// Whether the caller is one of the runtime's tasks. A DDS receive thread routes within the
/// runtime's context (`Handle::enter`, for the routing core's timers and spawns), so being in
/// the context says nothing; being polled as a task does.
pub(super) fn in_a_task() -> bool {
    tokio::task::try_id().is_some()
}

#[cfg(test)]
mod tests {
    use super::in_a_task;

    #[test]
    fn a_thread_in_the_runtimes_context_is_not_a_task() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let _context = rt.enter();
        assert!(!in_a_task(), "a DDS thread that entered the runtime");
        assert!(
            rt.block_on(rt.spawn(async { in_a_task() })).unwrap(),
            "a spawned task (a link reader)"
        );
    }
}
