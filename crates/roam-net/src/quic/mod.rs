//! Links over QUIC (quinn). One connection per peer:
//!
//! - one unidirectional control stream each way, opened first, starting with `Hello`;
//! - one unidirectional stream per topic for reliable data (up to `max_lanes`, then topics
//!   share lanes by hash), so a large message on one topic never delays another topic;
//! - best-effort data as QUIC datagrams when it fits in one, else on a per-topic stream whose
//!   lane drops its oldest message first.

mod endpoint;
mod lane_stream;
mod link_socket;
#[cfg(test)]
mod readers_first_tests;
mod repair_inbox;
mod reset_key;
mod silence;
mod socket_drops;
mod streams;
#[cfg(test)]
mod tapped_pair;
mod timer;
#[cfg(test)]
mod write_here_tests;

pub use endpoint::{endpoint, transport_config};
pub use socket_drops::{udp_receive_drops, udp_table, UdpTableRow};

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use roam_proto::frame::data_header;
use roam_proto::{Frame, Name};
use tracing::debug;

use crate::fec::{self, LossEstimate};
use crate::framing::read_frame_counted;
use crate::inbound::Inbound;
use crate::lane::{Lane, Policy, Pushed};
use crate::link::{
    check_hello, is_best_effort, Established, LinkConfig, LinkError, LinkId, LinkSender, LinkStats,
    LocalInfo, Outgoing, PathStats, Transport,
};
use crate::tls;
use lane_stream::{write_here, LaneStream, StreamSlot};
use repair_inbox::RepairInbox;
use streams::{accept_streams, close_when_drained, read_datagrams, read_stream, write_lane};

/// Dials a router and runs the Hello exchange.
pub async fn dial(
    ep: &quinn::Endpoint,
    addr: SocketAddr,
    me: &LocalInfo,
    cfg: &LinkConfig,
    link: LinkId,
    inbound: Inbound,
) -> Result<Established, LinkError> {
    let handshake = async {
        let conn = ep
            .connect(addr, roam_pki::ROUTER_SERVER_NAME)
            .map_err(|e| LinkError::Connect(e.to_string()))?
            .await
            .map_err(|e| LinkError::Connect(e.to_string()))?;
        establish(conn, me, cfg, link, inbound).await
    };
    // A router that accepts but never answers (overloaded, or not a roam router) must not
    // hold the dialer forever: give up and let the caller retry.
    tokio::time::timeout(cfg.handshake_timeout, handshake)
        .await
        .map_err(|_| LinkError::HandshakeTimeout(cfg.handshake_timeout))?
}

/// Runs the Hello exchange on an accepted or dialed connection and starts its tasks.
pub async fn establish(
    conn: quinn::Connection,
    me: &LocalInfo,
    cfg: &LinkConfig,
    link: LinkId,
    inbound: Inbound,
) -> Result<Established, LinkError> {
    let certs = conn
        .peer_identity()
        .and_then(|any| {
            any.downcast::<Vec<rustls_pki_types::CertificateDer<'static>>>()
                .ok()
        })
        .ok_or_else(|| LinkError::Certificate("peer presented no certificate".into()))?;
    let cert = tls::peer_identity(&certs).map_err(|e| LinkError::Certificate(e.to_string()))?;

    let mut control = conn
        .open_uni()
        .await
        .map_err(|e| LinkError::Connect(e.to_string()))?;
    let my_hello = me.hello().encode();
    control
        .write_all(&my_hello)
        .await
        .map_err(|e| LinkError::Connect(e.to_string()))?;
    let hello = async {
        let mut rx = conn
            .accept_uni()
            .await
            .map_err(|e| LinkError::Connect(e.to_string()))?;
        let hello = read_frame_counted(&mut rx, 4096)
            .await
            .map_err(|e| LinkError::Hello(e.to_string()))?;
        Ok::<_, LinkError>((rx, hello))
    };
    let (control_rx, hello) = tokio::time::timeout(cfg.hello_timeout, hello)
        .await
        .map_err(|_| LinkError::Hello("no Hello within the timeout".into()))??;
    // Both control streams go on after the Hellos: repairs name stream offsets.
    let (hello, hello_len) = match hello {
        Some((frame, len)) => (Some(frame), len as u64),
        None => (None, 0),
    };
    let peer = match check_hello(&cert, hello) {
        Ok(p) => p,
        Err(e) => {
            conn.close(1u32.into(), b"bad hello");
            return Err(e);
        }
    };

    let t = Arc::new(QuicTransport {
        conn: conn.clone(),
        writers: Mutex::new(Vec::new()),
        readers: std::sync::atomic::AtomicUsize::new(0),
        control: Arc::new(Lane::new(Policy::Reliable, cfg.reliable)),
        lanes: Mutex::new(HashMap::new()),
        cfg: cfg.clone(),
        stats: LinkStats::default(),
        repairs: RepairInbox::default(),
        path: Mutex::new(PathCache::default()),
        held_past_gaps: std::sync::atomic::AtomicUsize::new(0),
        peer_forwards: std::sync::atomic::AtomicBool::new(true),
        quota: inbound.quota_for(&peer, cfg.client_quota),
    });
    let control = Arc::new(Mutex::new(Some(LaneStream::new(
        control,
        my_hello.len() as u64,
    ))));
    let w = tokio::spawn(write_lane(t.clone(), t.control.clone(), control));
    t.track(w);
    let reader = t.clone();
    let peer_name = peer.name.clone();
    let start = Box::new(move || {
        let control_reader = reader.clone();
        let control_inbound = inbound.clone();
        tokio::spawn(async move {
            let clean = read_stream(
                control_reader.clone(),
                control_rx,
                hello_len,
                link,
                control_inbound,
            )
            .await;
            if clean {
                close_when_drained(control_reader).await;
            }
        });
        tokio::spawn(accept_streams(reader.clone(), link, inbound.clone()));
        tokio::spawn(read_datagrams(reader.clone(), link, inbound.clone()));
        tokio::spawn(silence::watch(
            reader.conn.clone(),
            reader.cfg.silence_timeout,
            reader.cfg.keepalive,
            reader.cfg.idle_timeout,
            peer_name,
        ));
        tokio::spawn(async move {
            let reason = reader.conn.closed().await;
            reader.close_lanes();
            inbound.closed(link, reason.to_string()).await;
        });
    });
    Ok(Established::new(peer, LinkSender::from(t), start))
}

/// A topic's lane and its stream's slot ([`lane_stream`]).
type DataLane = (Arc<Lane<Outgoing>>, Arc<StreamSlot>);

struct QuicTransport {
    conn: quinn::Connection,
    /// Lane writers, awaited by `finish` so queued data is delivered before closing.
    writers: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Data streams from the peer still being read.
    readers: std::sync::atomic::AtomicUsize,
    control: Arc<Lane<Outgoing>>,
    /// Each topic's lane, and the slot its stream waits in between writes.
    lanes: Mutex<HashMap<Name, DataLane>>,
    cfg: LinkConfig,
    stats: LinkStats,
    /// Repairs received, waiting for their streams' readers.
    repairs: RepairInbox,
    /// The loss rate that sizes the repairs sent, and the room left for them.
    path: Mutex<PathCache>,
    /// Bytes all readers hold past gaps in their streams (see [`QuicTransport::gap_limit`]).
    held_past_gaps: std::sync::atomic::AtomicUsize,
    /// Whether the peer forwards what it gets (the runtime says, from its link state; until
    /// then, yes), for the link's report.
    peer_forwards: std::sync::atomic::AtomicBool,
    /// What a client peer may bring in ([`crate::quota`]); None for routers.
    quota: Option<Arc<crate::quota::LinkQuota>>,
}

/// How often a link's view of its path takes in the connection's counters: reading them
/// locks the connection, and lane writers ask before every write.
const PATH_REFRESH: std::time::Duration = std::time::Duration::from_millis(50);

/// What a link's repairs go by, refreshed every [`PATH_REFRESH`].
#[derive(Debug, Clone, Copy, Default)]
struct RepairView {
    /// The share of its packets the link lost lately.
    loss: f64,
    /// Whether it has room to send small messages twice.
    copies: bool,
}

struct PathCache {
    estimate: LossEstimate,
    /// The estimate's clock.
    since: std::time::Instant,
    read_at: Option<std::time::Instant>,
    /// UDP bytes sent by then.
    tx_bytes: u64,
    view: RepairView,
}

impl Default for PathCache {
    fn default() -> Self {
        PathCache {
            estimate: LossEstimate::default(),
            since: std::time::Instant::now(),
            read_at: None,
            tx_bytes: 0,
            view: RepairView::default(),
        }
    }
}

impl QuicTransport {
    fn repair_view(&self) -> RepairView {
        let mut cache = match self.path.lock() {
            Ok(c) => c,
            Err(p) => p.into_inner(),
        };
        let now = std::time::Instant::now();
        let last = cache.read_at;
        if last.is_none_or(|at| now.duration_since(at) >= PATH_REFRESH) {
            let stats = self.conn.stats();
            let ms = now.duration_since(cache.since).as_millis() as u64;
            let loss = cache
                .estimate
                .update(stats.path.sent_packets, stats.path.lost_packets, ms);
            // No rate before a second reading: no copies.
            let copies = last.is_some_and(|at| {
                let secs = now.duration_since(at).as_secs_f64();
                let sent = stats.udp_tx.bytes.saturating_sub(cache.tx_bytes) as f64;
                fec::room_for_copies(sent / secs, stats.path.cwnd, stats.path.rtt.as_secs_f64())
            });
            cache.view = RepairView { loss, copies };
            cache.tx_bytes = stats.udp_tx.bytes;
            cache.read_at = Some(now);
        }
        cache.view
    }

    /// Most bytes a link holds past gaps in its streams, over all of them. Read out of order
    /// (once repairs come), a stream's flow-control credit grows with what arrives past a
    /// lost packet; a peer that never sends the missing bytes would otherwise grow this
    /// without end. An honest peer retransmits within a few round trips; past this the link
    /// is closed.
    fn gap_limit(&self) -> usize {
        self.cfg.window_bytes.saturating_mul(4)
    }

    fn lane_for(self: &Arc<Self>, name: Name, best_effort: bool) -> DataLane {
        let mut lanes = match self.lanes.lock() {
            Ok(l) => l,
            Err(p) => p.into_inner(),
        };
        if let Some(l) = lanes.get(&name) {
            return l.clone();
        }
        if lanes.len() >= self.cfg.max_lanes {
            // Out of lanes: share one chosen by the name's first byte (names are uniform).
            let shared = lanes
                .values()
                .nth(name.0[0] as usize % lanes.len())
                .cloned();
            if let Some(l) = shared {
                lanes.insert(name, l.clone());
                return l;
            }
        }
        let (policy, limits) = if best_effort {
            (Policy::BestEffort, self.cfg.best_effort)
        } else {
            (Policy::Reliable, self.cfg.reliable)
        };
        let lane: DataLane = (
            Arc::new(Lane::new(policy, limits)),
            Arc::new(Mutex::new(None)),
        );
        lanes.insert(name, lane.clone());
        let t = self.clone();
        let (l, slot) = lane.clone();
        let w = tokio::spawn(async move {
            match t.conn.open_uni().await {
                Ok(s) => {
                    *lane_stream::lock(&slot) = Some(LaneStream::new(s, 0));
                    write_lane(t, l, slot).await
                }
                Err(e) => debug!("cannot open a lane: {e}"),
            }
        });
        drop(lanes);
        self.track(w);
        lane
    }

    fn track(&self, w: tokio::task::JoinHandle<()>) {
        if let Ok(mut ws) = self.writers.lock() {
            ws.retain(|h| !h.is_finished());
            ws.push(w);
        }
    }

    fn close_lanes(&self) {
        self.control.close();
        self.close_data_lanes();
    }

    /// The lane of `name`, if one was made.
    fn existing_lane(&self, name: Name) -> Option<Arc<Lane<Outgoing>>> {
        let lanes = self.lanes.lock().ok()?;
        lanes.get(&name).map(|(lane, _)| lane.clone())
    }

    fn close_data_lanes(&self) {
        if let Ok(lanes) = self.lanes.lock() {
            for (l, _) in lanes.values() {
                l.close();
            }
        }
    }
}

/// The transport needs its own `Arc` to spawn lane writers; this wrapper provides it.
/// The tolerant controller's loss verdicts (zero for a link on plain Cubic or BBR). quinn hands
/// out a copy of the controller, cloned under the connection's lock: a few hundred bytes, once
/// per status report or scrape.
fn loss_verdicts(conn: &quinn::Connection) -> crate::congestion::Counts {
    conn.congestion_state()
        .into_any()
        .downcast::<crate::congestion::Tolerant>()
        .map(|t| t.counts())
        .unwrap_or_default()
}

impl Transport for ArcTransport {
    fn send_reliable(&self, frame: Frame) -> Pushed {
        let t = &self.0;
        let pushed = match frame {
            Frame::Data { origin, envelope } => {
                let Some(name) = roam_proto::envelope::peek_name(&envelope) else {
                    return Pushed::Refused;
                };
                let best_effort = is_best_effort(&envelope);
                if best_effort {
                    if let Some(max) = t.conn.max_datagram_size() {
                        let len = roam_proto::frame::DATA_HEADER_LEN + envelope.len();
                        if len <= max {
                            let mut d = Vec::with_capacity(len);
                            d.extend_from_slice(&data_header(origin, envelope.len()));
                            d.extend_from_slice(&envelope);
                            t.stats.count_out(len);
                            // quinn drops the oldest queued datagram when its buffer is full.
                            return match t.conn.send_datagram(Bytes::from(d)) {
                                Ok(()) => Pushed::Queued,
                                Err(_) => Pushed::Closed,
                            };
                        }
                    }
                }
                let (lane, slot) = t.lane_for(name, best_effort);
                let item = Outgoing::Data { origin, envelope };
                match best_effort {
                    true => lane.push(item),
                    false => lane.push_or_write(item, |item| write_here(t, &slot, item)),
                }
            }
            other => t.control.push(Outgoing::from_frame(other)),
        };
        if matches!(pushed, Pushed::DroppedOldest(_)) {
            t.stats.count_push(pushed);
        }
        pushed
    }

    fn close(&self, reason: &str) {
        self.0.conn.close(0u32.into(), reason.as_bytes());
        self.0.close_lanes();
    }

    fn finish(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            self.0.close_data_lanes();
            // Data lanes first; the control lane (the first writer) ends last, which tells the
            // peer we are leaving. It then reads everything and closes the connection.
            let mut writers = self
                .0
                .writers
                .lock()
                .map(|mut w| std::mem::take(&mut *w))
                .unwrap_or_default();
            let control = if writers.is_empty() {
                None
            } else {
                Some(writers.remove(0))
            };
            for w in writers {
                let _ = w.await;
            }
            self.0.control.close();
            if let Some(c) = control {
                let _ = c.await;
            }
            let wait = self
                .0
                .cfg
                .idle_timeout
                .max(std::time::Duration::from_secs(5));
            let _ = tokio::time::timeout(wait, self.0.conn.closed()).await;
            self.0.conn.close(0u32.into(), b"done");
        })
    }

    fn stats(&self) -> &LinkStats {
        &self.0.stats
    }

    fn path(&self) -> Option<PathStats> {
        use std::sync::atomic::Ordering::Relaxed;
        let s = self.0.conn.stats();
        Some(PathStats {
            rtt_us: s.path.rtt.as_micros() as u64,
            cwnd: s.path.cwnd,
            sent_packets: s.path.sent_packets,
            lost_packets: s.path.lost_packets,
            congestion_events: s.path.congestion_events,
            mtu: s.path.current_mtu,
            repairs_sent: self.0.stats.repairs_out.load(Relaxed),
            repairs_received: self.0.stats.repairs_in.load(Relaxed),
            shards_rebuilt: self.0.stats.shards_rebuilt.load(Relaxed),
            loss_verdicts: loss_verdicts(&self.0.conn),
        })
    }

    fn wait_space(
        &self,
        name: Name,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        let lane = self.0.existing_lane(name);
        Box::pin(async move {
            if let Some(lane) = lane {
                lane.wait_space().await;
            }
        })
    }

    fn has_space(&self, name: Name) -> bool {
        let lane = self.0.existing_lane(name);
        lane.is_none_or(|l| l.has_space())
    }

    fn kind(&self) -> &'static str {
        "quic"
    }

    fn remote(&self) -> Option<std::net::SocketAddr> {
        Some(self.0.conn.remote_address())
    }

    fn depth(&self) -> crate::lane::Depth {
        let t = &self.0;
        let mut depth = t.control.depth();
        if let Ok(lanes) = t.lanes.lock() {
            // Topics past `max_lanes` share a lane: count each lane once.
            let mut seen = std::collections::HashSet::new();
            for (l, _) in lanes.values() {
                if seen.insert(Arc::as_ptr(l)) {
                    depth = depth + l.depth();
                }
            }
        }
        depth
    }

    fn set_peer_forwards(&self, forwards: bool) {
        self.0
            .peer_forwards
            .store(forwards, std::sync::atomic::Ordering::Relaxed);
    }

    fn peer_forwards(&self) -> bool {
        self.0
            .peer_forwards
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

struct ArcTransport(Arc<QuicTransport>);

impl From<Arc<QuicTransport>> for LinkSender {
    fn from(t: Arc<QuicTransport>) -> Self {
        LinkSender(Arc::new(ArcTransport(t)))
    }
}
