//! A Subscribe call's response stream. The session's outbox is the only queue: a message is
//! taken from it (and converted) only when tonic asks for the next item, which it does as
//! HTTP/2 flow control lets the client receive. So a slow client holds at most `queue_length`
//! messages (and the client's byte budget) on the gateway; the oldest are dropped first, and
//! the next item sent says how many.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use futures_util::Stream;
use tonic::Status;

use super::door::CallSession;
use super::pb::{self, Encoding};
use crate::outbox::Next;
use crate::session::{Outgoing, Sample, SubId};

/// One client's subscription, pulled as it reads.
pub struct Subscription {
    /// Holds the edge subscriber (released when the call ends) and the outbox.
    _session: CallSession,
    out: Arc<Outgoing<Infallible>>,
    id: SubId,
    encoding: Encoding,
    /// Drops reported by the outbox and not yet told to the client.
    dropped: u64,
    dropped_total: u64,
    skipped: u64,
}

impl Subscription {
    pub fn new(
        session: CallSession,
        out: Arc<Outgoing<Infallible>>,
        id: SubId,
        encoding: Encoding,
    ) -> Self {
        Self {
            _session: session,
            out,
            id,
            encoding,
            dropped: 0,
            dropped_total: 0,
            skipped: 0,
        }
    }

    /// The messages as a response stream (endless: the client ends it by cancelling).
    pub fn into_stream(self) -> impl Stream<Item = Result<pb::SubscribeResponse, Status>> + Send {
        futures_util::stream::unfold(self, |mut s| async move {
            let item = s.next().await;
            Some((Ok(item), s))
        })
    }

    async fn next(&mut self) -> pb::SubscribeResponse {
        let out = self.out.clone();
        loop {
            let next = out.outbox().next(Instant::now());
            match next {
                Next::Control(never) => match never {},
                Next::Sample(id, sample) if id == self.id => {
                    if let Some(item) = self.item(sample) {
                        return item;
                    }
                }
                Next::Sample(..) => {}
                Next::Dropped { dropped, total, .. } => {
                    self.dropped += dropped;
                    self.dropped_total = total;
                }
                Next::Wait(Some(at)) => {
                    tokio::select! {
                        _ = out.wake.notified() => {}
                        _ = tokio::time::sleep_until(at.into()) => {}
                    }
                }
                Next::Wait(None) => out.wake.notified().await,
            }
        }
    }

    /// The response for one sample; None when it cannot be sent in JSON (counted).
    fn item(&mut self, s: Sample) -> Option<pb::SubscribeResponse> {
        let payload = match self.encoding {
            Encoding::Cdr => s.cdr,
            Encoding::Json => {
                let mut json = Vec::new();
                match s.codec.map(|c| c.cdr_to_json(&s.cdr, &mut json)) {
                    Some(Ok(())) => json,
                    Some(Err(_)) | None => {
                        self.skipped += 1;
                        return None;
                    }
                }
            }
        };
        let t = s.received.duration_since(UNIX_EPOCH).unwrap_or_default();
        Some(pb::SubscribeResponse {
            payload,
            receive_time: Some(time_of(t)),
            dropped: std::mem::take(&mut self.dropped),
            dropped_total: self.dropped_total,
            skipped: std::mem::take(&mut self.skipped),
            source_time: s.source_time_ns.map(|ns| time_of(Duration::from_nanos(ns))),
        })
    }
}

/// A time since the Unix epoch as builtin_interfaces/Time.
fn time_of(t: Duration) -> pb::Time {
    pb::Time {
        sec: i64::try_from(t.as_secs()).unwrap_or(i64::MAX),
        nanosec: t.subsec_nanos(),
    }
}
