//! [`Subscriber`]: a topic of a realm, read. It follows the topic's announcements (which
//! streams exist, with what type and QoS, and the definitions of the types), subscribes to the
//! data of every announced type, opens every envelope, and says which stream each message
//! belongs to. Dropping it releases its subscriptions.
//!
//! Everything is read on the caller's task: no task and no copy between the router (or client
//! link) and the caller, which gives a buffer to open into. So a subscriber follows the
//! announcements (and subscribes to newly announced types) only while it is read: keep calling
//! [`Subscriber::recv`].

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use roam_net::latency::now_us;
use roam_proto::meta::TopicAnnouncement;
use roam_proto::{EnvelopeHeader, Name, Opener, PayloadKind};
use tracing::warn;

use crate::backlog::SEAL_ELSEWHERE;
use crate::edge::{Edge, TopicRef};
use crate::names::meta_descriptor;
use crate::port::{Port, PortSubscription};
use crate::recovery::{self, ask::Asker, AskPolicy, Reorder};
use crate::stats::{Direction, TopicStats};
use crate::streams::{AnnouncedStreams, StreamId, StreamInfo};

mod sequence;

/// How a subscriber reads.
#[derive(Debug, Clone)]
pub struct SubscriberOptions {
    /// Subscribe to this type's data at once, before (or without) any announcement: what a
    /// tool that names the type does (`roam sub --type`). Announced types are added anyway.
    pub dds_type: Option<String>,
    /// Hold data of a stream not announced yet, for up to [`HOLD`], so every message is known
    /// by its stream (what an importer that writes per stream needs); data still unannounced
    /// then is dropped and counted. Off: such data comes at once, with no stream.
    pub hold_unannounced: bool,
    /// Envelopes queued per data name before the topic is pushed back on.
    pub depth: usize,
    /// Bytes queued per data name before the topic is pushed back on (an empty queue takes
    /// one envelope of any size): what bounds the memory of a subscriber that falls behind
    /// on large messages, where `depth` alone would allow 4096 images.
    pub max_bytes: usize,
    /// Follow the announcements only (streams, definitions), not the data: for a tool that
    /// publishes and wants the topic's definitions.
    pub announcements_only: bool,
}

impl Default for SubscriberOptions {
    fn default() -> Self {
        Self {
            dds_type: None,
            hold_unannounced: false,
            depth: 4096,
            max_bytes: roam_net::envelope_queue::DEFAULT_MAX_BYTES,
            announcements_only: false,
        }
    }
}

/// How long data of an unannounced stream waits for its announcement (metadata and data travel
/// on different names, so a new stream's first messages can overtake it).
pub const HOLD: Duration = Duration::from_secs(2);
/// Most messages held at once; beyond it the oldest is dropped (counted).
const MAX_HELD: usize = 1024;

/// What a subscriber has to tell.
#[derive(Debug)]
pub enum Event {
    /// The announced streams changed (see [`Subscriber::streams`]).
    Streams,
    /// New definitions were announced (see [`Subscriber::definition`]).
    Definitions,
    /// A message: its payload is in the caller's buffer.
    Message(Received),
}

/// A message's envelope, opened.
#[derive(Debug, Clone)]
pub struct Received {
    /// The stream it belongs to, when announced.
    pub stream: Option<StreamId>,
    /// Data, or an instance lifecycle change (the payload is then the instance's key).
    pub kind: PayloadKind,
    /// The authenticated header (session, sequence, send time).
    pub header: EnvelopeHeader,
    /// The realm member that signed it, in signed mode.
    pub signer: Option<String>,
    /// The publisher's own time of the message (a DDS sample's source timestamp,
    /// nanoseconds since the Unix epoch), when its sealer gave one.
    pub source_time_ns: Option<u64>,
}

struct DataSub {
    dds_type: String,
    name: Name,
    sub: PortSubscription,
}

struct Held {
    at: Instant,
    received: Received,
    plain: Vec<u8>,
}

enum Step {
    Meta(Bytes),
    Data(Bytes),
    Timer,
    Closed,
}

/// Whether an envelope of `len` bytes is opened with the runtime worker's other tasks handed
/// to another thread (`block_in_place`), as large payloads are sealed off the workers
/// ([`SEAL_ELSEWHERE`]): opening a 13 MB image takes milliseconds, and every other topic this
/// worker carries (a proxy runs one) would wait behind it. Only a multi-threaded runtime can
/// hand its tasks over; on another, the envelope is opened in place.
/// Whether an envelope's flags (byte 1, read before it is opened) are a recoverable
/// stream's.
fn recoverable_envelope(env: &[u8]) -> bool {
    env.get(1)
        .is_some_and(|f| recovery::recoverable(roam_proto::EnvelopeFlags(*f)))
}

fn open_elsewhere(len: usize) -> bool {
    len >= SEAL_ELSEWHERE
        && tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// A topic of a realm, read.
pub struct Subscriber {
    port: Port,
    topic: TopicRef,
    opener: Opener,
    announced: AnnouncedStreams,
    sessions: HashMap<u64, StreamId>,
    meta_name: Name,
    /// None for a raw name (nothing is announced for it).
    meta: Option<PortSubscription>,
    data: Vec<DataSub>,
    options: SubscriberOptions,
    held: VecDeque<Held>,
    stashed_meta: VecDeque<Bytes>,
    next_data: usize,
    timer: Pin<Box<tokio::time::Sleep>>,
    meta_plain: Vec<u8>,
    stats: Arc<TopicStats>,
    /// The causes of refusal already logged (each once; all are counted).
    warned: std::collections::HashSet<std::mem::Discriminant<roam_proto::OpenError>>,
    /// Recoverable sessions in order, what is held behind their gaps ([`crate::recovery`]).
    reorder: Reorder<(Received, Vec<u8>)>,
    asker: Asker,
    /// The reorder's (lost, recovered) counts already added to `stats`.
    counted: (u64, u64),
}

impl Edge {
    /// Starts reading `topic`.
    pub async fn subscriber(&self, topic: &TopicRef, options: SubscriberOptions) -> Subscriber {
        let port = self.inner.port.clone();
        let meta_name = meta_descriptor(&topic.topic).name(&topic.realm.secret);
        let meta = match topic.raw {
            None => Some(port.subscribe(meta_name, 64, options.max_bytes).await),
            Some(_) => None,
        };
        let mut s = Subscriber {
            opener: Opener::with_keys(&topic.realm.keys, topic.realm.opener_config()),
            port,
            topic: topic.clone(),
            announced: AnnouncedStreams::default(),
            sessions: HashMap::new(),
            meta_name,
            meta,
            data: Vec::new(),
            options,
            held: VecDeque::new(),
            stashed_meta: VecDeque::new(),
            next_data: 0,
            timer: Box::pin(tokio::time::sleep(Duration::ZERO)),
            meta_plain: Vec::new(),
            stats: self.inner.stats.topic(Direction::Import, &topic.topic),
            warned: Default::default(),
            reorder: Reorder::new(AskPolicy::default()),
            asker: Asker::new(
                self.inner.port.clone(),
                topic.realm.keys.clone(),
                topic.realm.secret.clone(),
                self.inner.signer.clone(),
            ),
            counted: (0, 0),
        };
        s.sync_data_names().await;
        s
    }
}

impl Subscriber {
    /// The next event; a message's payload goes into `payload` (its previous contents are
    /// replaced). `None` once the edge is gone.
    pub async fn recv(&mut self, payload: &mut Vec<u8>) -> Option<Event> {
        loop {
            if let Some(ev) = self.release_ready(payload) {
                return Some(ev);
            }
            if let Some(ev) = self.release_held(payload) {
                return Some(ev);
            }
            let step = match self.stashed_meta.pop_front() {
                Some(env) => Step::Meta(env),
                None => std::future::poll_fn(|cx| self.poll_step(cx)).await,
            };
            match step {
                Step::Closed => return None,
                Step::Meta(env) => {
                    if let Some(ev) = self.handle_meta(&env).await {
                        return Some(ev);
                    }
                }
                Step::Timer => {
                    self.poll_recovery();
                    if self.announced.handle_timeout(Instant::now()) {
                        self.streams_changed().await;
                        return Some(Event::Streams);
                    }
                }
                Step::Data(env) => {
                    if let Some(ev) = self.handle_data(&env, payload) {
                        return Some(ev);
                    }
                }
            }
        }
    }

    /// A message already queued, without waiting (to batch what arrived together). Anything
    /// else queued (announcements) is left for [`Self::recv`].
    pub fn try_recv(&mut self, payload: &mut Vec<u8>) -> Option<Received> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        loop {
            if let Some(Event::Message(r)) = self.release_ready(payload) {
                return Some(r);
            }
            match self.poll_data(&mut cx) {
                Some(env) => {
                    if let Some(Event::Message(r)) = self.handle_data(&env, payload) {
                        return Some(r);
                    }
                }
                None => return None,
            }
        }
    }

    /// Every stream announced now.
    pub fn streams(&self) -> std::collections::BTreeMap<StreamId, StreamInfo> {
        self.announced.streams()
    }

    /// A definition of `dds_type` (ros2msg text) some announcer of the topic gave.
    pub fn definition(&self, dds_type: &str) -> Option<&str> {
        self.announced.definition(dds_type)
    }

    pub fn topic(&self) -> &TopicRef {
        &self.topic
    }

    pub fn stats(&self) -> &Arc<TopicStats> {
        &self.stats
    }

    /// What the opener refused, by cause (forged, replayed, unsigned, ...), since the start.
    pub fn open_stats(&self) -> roam_proto::seal::OpenStats {
        self.opener.stats()
    }

    fn poll_step(&mut self, cx: &mut Context<'_>) -> Poll<Step> {
        if let Some(meta) = &mut self.meta {
            match meta.rx.poll_recv(cx) {
                Poll::Ready(Some(env)) => return Poll::Ready(Step::Meta(env)),
                Poll::Ready(None) => return Poll::Ready(Step::Closed),
                Poll::Pending => {}
            }
        }
        if let Some(env) = self.poll_data(cx) {
            return Poll::Ready(Step::Data(env));
        }
        let deadline = [
            self.announced.poll_timeout(),
            self.held.iter().map(|h| h.at + HOLD).min(),
            self.reorder.deadline(),
        ]
        .into_iter()
        .flatten()
        .min();
        if let Some(d) = deadline {
            self.timer.as_mut().reset(d.into());
            if self.timer.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Step::Timer);
            }
        }
        Poll::Pending
    }

    /// The next envelope of any data name, taking them in turn.
    fn poll_data(&mut self, cx: &mut Context<'_>) -> Option<Bytes> {
        let n = self.data.len();
        for k in 0..n {
            let i = (self.next_data + k) % n;
            if let Poll::Ready(Some(env)) = self.data[i].sub.rx.poll_recv(cx) {
                self.next_data = i + 1;
                return Some(env);
            }
        }
        None
    }

    async fn handle_meta(&mut self, env: &[u8]) -> Option<Event> {
        let now = now_us();
        let opened = self.opener.open(env, now, &mut self.meta_plain);
        let a = match opened
            .map_err(|e| e.to_string())
            .and_then(|_| TopicAnnouncement::decode(&self.meta_plain).map_err(|e| e.to_string()))
        {
            Ok(a) => a,
            Err(e) => {
                TopicStats::count(&self.stats.refused);
                warn!(topic = %self.topic.topic, "dropped a topic announcement: {e}");
                return None;
            }
        };
        let changed = self.announced.handle_announcement(Instant::now(), a);
        if changed.streams {
            self.streams_changed().await;
            return Some(Event::Streams);
        }
        changed.definitions.then_some(Event::Definitions)
    }

    async fn streams_changed(&mut self) {
        self.sessions = self.announced.sessions();
        self.sync_data_names().await;
    }

    /// Subscribes to the data of every announced type (and the one asked for); releases the
    /// others.
    async fn sync_data_names(&mut self) {
        if self.options.announcements_only {
            return;
        }
        if let Some(name) = self.topic.raw {
            if self.data.is_empty() {
                let sub = self
                    .port
                    .subscribe(name, self.options.depth, self.options.max_bytes)
                    .await;
                self.data.push(DataSub {
                    dds_type: String::new(),
                    name,
                    sub,
                });
            }
            return;
        }
        let mut wanted = self.announced.data_types();
        if let Some(t) = &self.options.dds_type {
            wanted.insert(t.clone());
        }
        let mut i = 0;
        while i < self.data.len() {
            if wanted.contains(&self.data[i].dds_type) {
                i += 1;
            } else {
                let d = self.data.swap_remove(i);
                self.port.unsubscribe(d.name, d.sub.id).await;
            }
        }
        for ty in wanted {
            if self.data.iter().any(|d| d.dds_type == ty) {
                continue;
            }
            let name = self.topic.data_name(&ty);
            // Another announced spelling of the same type names the same data.
            if self.data.iter().any(|d| d.name == name) {
                continue;
            }
            let sub = self
                .port
                .subscribe(name, self.options.depth, self.options.max_bytes)
                .await;
            self.data.push(DataSub {
                dds_type: ty,
                name,
                sub,
            });
        }
    }

    fn handle_data(&mut self, env: &[u8], payload: &mut Vec<u8>) -> Option<Event> {
        let now = now_us();
        let opened = match open_elsewhere(env.len()) {
            true => tokio::task::block_in_place(|| self.opener.open(env, now, payload)),
            false => self.opener.open(env, now, payload),
        };
        let opened = match opened {
            Ok(o) => o,
            Err(roam_proto::OpenError::Replayed(_) | roam_proto::OpenError::TooOld(_))
                if recoverable_envelope(env) =>
            {
                // A message sent again for a subscriber that missed it, which this one had
                // (counted by the opener as replayed; expected, so not refused or logged).
                return None;
            }
            Err(e) => {
                TopicStats::count(&self.stats.refused);
                if self.warned.insert(std::mem::discriminant(&e)) {
                    warn!(topic = %self.topic.topic, "dropped an envelope: {e} (more for this reason are counted, not logged)");
                }
                return None;
            }
        };
        self.stats.age_in.record_envelope_at(env, now);
        let session = opened.header.session;
        let received = Received {
            stream: self.sessions.get(&session).copied(),
            kind: opened.header.flags.payload_kind(),
            header: opened.header,
            signer: opened.signer,
            source_time_ns: opened.source_time_ns,
        };
        if recovery::recoverable(received.header.flags) {
            return self.sequence(received, payload);
        }
        self.deliver(received, payload)
    }

    /// Hands a message to the reader, or holds it until its stream is announced.
    fn deliver(&mut self, mut received: Received, payload: &mut Vec<u8>) -> Option<Event> {
        let session = received.header.session;
        if received.stream.is_none() {
            // Held behind a gap meanwhile: its stream may be announced by now.
            received.stream = self.sessions.get(&session).copied();
        }
        let earlier_held = self
            .held
            .iter()
            .any(|h| h.received.header.session == session);
        if self.options.hold_unannounced && (received.stream.is_none() || earlier_held) {
            if self.held.len() >= MAX_HELD {
                self.held.pop_front();
                TopicStats::count(&self.stats.unannounced);
            }
            self.held.push_back(Held {
                at: Instant::now(),
                received,
                plain: std::mem::take(payload),
            });
            return None;
        }
        Some(Event::Message(received))
    }

    /// A held message whose stream is now announced (the oldest of its session), or, past
    /// [`HOLD`], drops those still unannounced.
    fn release_held(&mut self, payload: &mut Vec<u8>) -> Option<Event> {
        let now = Instant::now();
        let mut i = 0;
        while i < self.held.len() {
            let session = self.held[i].received.header.session;
            let first_of_session = !self
                .held
                .iter()
                .take(i)
                .any(|h| h.received.header.session == session);
            if first_of_session {
                if let Some(stream) = self.sessions.get(&session).copied() {
                    let mut h = self.held.remove(i)?;
                    h.received.stream = Some(stream);
                    *payload = std::mem::take(&mut h.plain);
                    return Some(Event::Message(h.received));
                }
                if now >= self.held[i].at + HOLD {
                    self.held.remove(i);
                    TopicStats::count(&self.stats.unannounced);
                    warn!(topic = %self.topic.topic, session, "dropped data of a stream that was never announced");
                    continue;
                }
            }
            i += 1;
        }
        None
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        if let Some(meta) = &self.meta {
            self.port.release_subscription(self.meta_name, meta.id);
        }
        for d in &self.data {
            self.port.release_subscription(d.name, d.sub.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{open_elsewhere, SEAL_ELSEWHERE};

    #[test]
    fn only_large_envelopes_on_a_multi_threaded_runtime_are_opened_elsewhere() {
        // Outside any runtime there is no worker to hand over.
        assert!(!open_elsewhere(SEAL_ELSEWHERE));
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        multi.block_on(async {
            let decided = tokio::spawn(async {
                (
                    open_elsewhere(SEAL_ELSEWHERE - 1),
                    open_elsewhere(SEAL_ELSEWHERE),
                )
            });
            assert_eq!(decided.await.unwrap(), (false, true));
        });
        // block_in_place would panic on a current-thread runtime: the envelope is opened in place.
        let current = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        current.block_on(async { assert!(!open_elsewhere(SEAL_ELSEWHERE << 4)) });
    }
}
