//! Where a link's repair datagrams wait for the reader of the stream they protect.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use roam_proto::repair::RepairHeader;
use tokio::sync::Notify;

/// Repair bytes held for one stream before its reader takes them; more are dropped.
const SLOT_BYTES: usize = 4 << 20;
/// Streams with repairs waiting at once. A repair may come before its stream is accepted, or
/// after its reader finished: those slots have no reader and are dropped first.
const MAX_SLOTS: usize = 1024;

#[derive(Default)]
struct Slot {
    notify: Arc<Notify>,
    queued: Vec<(RepairHeader, Bytes)>,
    bytes: usize,
    has_reader: bool,
}

/// Repairs by QUIC stream id, each stream's reader woken when one arrives.
#[derive(Default)]
pub(super) struct RepairInbox {
    slots: Mutex<HashMap<u64, Slot>>,
}

impl RepairInbox {
    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Slot>> {
        match self.slots.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        }
    }

    /// A stream's reader starts: what it waits on for repairs.
    pub(super) fn register(&self, stream: u64) -> Arc<Notify> {
        let mut slots = self.slots();
        let slot = slots.entry(stream).or_default();
        slot.has_reader = true;
        slot.notify.clone()
    }

    /// A stream's reader is done: its repairs are no use any more.
    pub(super) fn unregister(&self, stream: u64) {
        self.slots().remove(&stream);
    }

    /// Queues a repair for its stream's reader; false when it was dropped (no room).
    pub(super) fn put(&self, h: RepairHeader, shard: Bytes) -> bool {
        let mut slots = self.slots();
        if !slots.contains_key(&h.stream) && slots.len() >= MAX_SLOTS {
            slots.retain(|_, s| s.has_reader);
            if slots.len() >= MAX_SLOTS {
                return false;
            }
        }
        let slot = slots.entry(h.stream).or_default();
        if slot.bytes + shard.len() > SLOT_BYTES {
            return false;
        }
        slot.bytes += shard.len();
        slot.queued.push((h, shard));
        slot.notify.notify_one();
        true
    }

    /// The repairs queued for a stream.
    pub(super) fn take(&self, stream: u64) -> Vec<(RepairHeader, Bytes)> {
        match self.slots().get_mut(&stream) {
            Some(slot) => {
                slot.bytes = 0;
                std::mem::take(&mut slot.queued)
            }
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repair(stream: u64, len: usize) -> (RepairHeader, Bytes) {
        let h = RepairHeader {
            stream,
            start: 0,
            frame_len: 100,
            shard_len: 100,
            originals: 1,
            recoveries: 1,
            index: 0,
        };
        (h, Bytes::from(vec![0u8; len]))
    }

    #[tokio::test]
    async fn a_repair_wakes_its_reader_even_when_it_came_first() {
        let inbox = RepairInbox::default();
        let (h, s) = repair(4, 100);
        assert!(inbox.put(h, s));
        let notify = inbox.register(4);
        // The wake-up was stored for the reader that was not waiting yet.
        tokio::time::timeout(std::time::Duration::from_secs(5), notify.notified())
            .await
            .unwrap();
        assert_eq!(inbox.take(4).len(), 1);
        assert!(inbox.take(4).is_empty());
        inbox.unregister(4);
        assert!(inbox.take(4).is_empty());
    }

    #[test]
    fn the_inbox_is_bounded_per_stream_and_in_streams() {
        let inbox = RepairInbox::default();
        let mut queued = 0;
        while inbox.put(repair(1, 1 << 16).0, repair(1, 1 << 16).1) {
            queued += 1;
        }
        assert_eq!(queued, SLOT_BYTES >> 16);
        let _ = inbox.register(2);
        for stream in 10..10 + MAX_SLOTS as u64 {
            let (h, s) = repair(stream, 10);
            inbox.put(h, s);
        }
        // Slots without a reader made room; the registered one stayed.
        assert!(inbox.slots().len() <= MAX_SLOTS);
        assert!(inbox.slots().contains_key(&2));
    }
}
