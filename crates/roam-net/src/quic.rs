//! Links over QUIC (quinn). One connection per peer:
//!
//! - one unidirectional control stream each way, opened first, starting with `Hello`;
//! - one unidirectional stream per topic for reliable data (up to `max_lanes`, then topics
//!   share lanes by hash), so a large message on one topic never delays another topic;
//! - best-effort data as QUIC datagrams when it fits in one, else on a per-topic stream whose
//!   lane drops its oldest message first.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use roam_proto::frame::data_header;
use roam_proto::{Frame, Name};
use tracing::{debug, warn};

use crate::framing::read_frame;
use crate::lane::{Lane, Policy, Pushed};
use crate::link::{
    check_hello, is_best_effort, Congestion, Established, Inbound, LinkConfig, LinkError, LinkId,
    LinkSender, LinkStats, LocalInfo, Outgoing, PathStats, Transport,
};
use crate::pki::Identity;
use crate::tls;

/// The least receive window a link grants, whatever UDP buffer the kernel gave: below this a
/// wide-area path crawls (a window per round trip), which costs more than the rare datagram
/// a too-small buffer drops (the warning of [`udp_socket`] says how to raise it).
const MIN_RECEIVE_WINDOW: usize = 2 << 20;

/// One stream may hold at most this fraction of the connection's window. A stream that cannot
/// move (its topic paused, or its data waiting behind a lost packet) then leaves the rest of
/// the connection's credit, at both ends, to the other topics: with one stream allowed the
/// whole window, a 13 MB image stream over a path losing 1% held it, and the small topics next
/// to it got nothing through (lab E12). The sender's writes stop at the peer's stream window
/// too, so neither can one stream fill the send window.
const STREAM_SHARE: usize = 4;

/// The largest UDP payload a link's MTU discovery searches for (and that the endpoint says
/// it takes). Above quinn's 1,452 so that loopback and jumbo-frame LANs carry a message in a
/// fifth of the packets; no more than 6,500 because quinn hands the kernel up to ten packets
/// in one segmentation-offload send, which may total at most 64 KB: larger packets make
/// that send fail with EMSGSIZE, which quinn takes for a lost MTU probe, and every datagram
/// of it is lost (the lab measured 56-122 ms echoes of 64 KiB with 9,000- and 65,527-byte
/// bounds). A 1500-byte path settles near 1,452 as before.
const MAX_UDP_PAYLOAD: u16 = 6500;

/// QUIC transport parameters for roam links whose UDP socket holds `socket_buffer` bytes.
///
/// Every window is `cfg.window_bytes` (see [`LinkConfig::window_bytes`]; a stream's receive
/// window a [`STREAM_SHARE`] of it), the receive windows no larger than the socket buffer: a peer may then have no more stream data in flight than
/// the socket can hold while this endpoint is busy, so a fast sender (loopback, a LAN) fills
/// the window instead of overflowing the socket and losing datagrams.
pub fn transport_config(cfg: &LinkConfig, socket_buffer: usize) -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    t.max_concurrent_uni_streams(((cfg.max_lanes * 2 + 16) as u32).into());
    t.max_concurrent_bidi_streams(0u32.into());
    let receive = receive_window(cfg.window_bytes, socket_buffer);
    let varint = |n: usize| quinn::VarInt::from_u64(n as u64).unwrap_or(quinn::VarInt::MAX);
    t.stream_receive_window(varint(receive / STREAM_SHARE));
    t.receive_window(varint(receive));
    t.send_window(cfg.window_bytes as u64);
    t.keep_alive_interval(Some(cfg.keepalive));
    t.max_idle_timeout(cfg.idle_timeout.try_into().ok());
    t.datagram_receive_buffer_size(Some(4 << 20));
    t.datagram_send_buffer_size(1 << 20);
    let mut mtu = quinn::MtuDiscoveryConfig::default();
    mtu.upper_bound(MAX_UDP_PAYLOAD);
    t.mtu_discovery_config(Some(mtu));
    match cfg.congestion {
        Congestion::Tolerant => {
            t.congestion_controller_factory(Arc::new(crate::congestion::TolerantConfig::default()));
        }
        Congestion::Cubic => {}
        Congestion::NewReno => {
            t.congestion_controller_factory(Arc::new(quinn::congestion::NewRenoConfig::default()));
        }
        Congestion::Bbr => {
            t.congestion_controller_factory(Arc::new(quinn::congestion::BbrConfig::default()));
        }
    }
    Arc::new(t)
}

/// The receive window for `window` bytes asked and a socket holding `socket_buffer`.
fn receive_window(window: usize, socket_buffer: usize) -> usize {
    window.min(socket_buffer.max(MIN_RECEIVE_WINDOW))
}

/// A QUIC endpoint that listens for peers (routers) or only dials (clients, edge routers).
pub fn endpoint(
    id: &Identity,
    cfg: &LinkConfig,
    listen: Option<SocketAddr>,
) -> Result<quinn::Endpoint, LinkError> {
    let addr = listen.unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
    let (socket, socket_buffer) =
        udp_socket(addr, cfg.udp_buffer_bytes).map_err(|source| match listen {
            Some(addr) => LinkError::Bind {
                what: "QUIC (UDP)",
                addr,
                source,
            },
            None => LinkError::Io(source),
        })?;
    let transport = transport_config(cfg, socket_buffer);
    let client = tls::quinn_client_config(id, transport.clone())
        .map_err(|e| LinkError::Connect(e.to_string()))?;
    let server = match listen {
        Some(_) => {
            let mut server = tls::quinn_server_config(id, transport)
                .map_err(|e| LinkError::Connect(e.to_string()))?;
            limit_incoming(&mut server, cfg);
            Some(server)
        }
        None => None,
    };
    let runtime = quinn::default_runtime()
        .ok_or_else(|| LinkError::Connect("no async runtime for QUIC".into()))?;
    let mut ep_cfg = quinn::EndpointConfig::default();
    let _ = ep_cfg.max_udp_payload_size(MAX_UDP_PAYLOAD);
    let mut ep = quinn::Endpoint::new(ep_cfg, server, socket, runtime)?;
    ep.set_default_client_config(client);
    Ok(ep)
}

/// What quinn holds for connection attempts the router has not looked at yet, bounded like
/// the attempts it has (see [`crate::admission`]): quinn's defaults (65,536 attempts and
/// 100 MiB of their packets) are far above what a router admits. Attempts beyond these are
/// refused by quinn itself. A connection's first flight is a few kilobytes; 64 KiB each is
/// room to spare (roam sends no 0-RTT data).
fn limit_incoming(server: &mut quinn::ServerConfig, cfg: &LinkConfig) {
    const PER_ATTEMPT: u64 = 64 << 10;
    let attempts = cfg.max_unauthenticated.max(1);
    server
        .max_incoming(attempts)
        .incoming_buffer_size(PER_ATTEMPT)
        .incoming_buffer_size_total(PER_ATTEMPT * attempts as u64);
}

/// A UDP socket bound to `addr` with receive and send buffers of `buffer` bytes, as far as
/// the kernel allows, and the receive buffer it got. Root (CAP_NET_ADMIN) may go above
/// `net.core.rmem_max`, so that is asked first; says once how to raise the limit if the
/// kernel gave less than half.
fn udp_socket(addr: SocketAddr, buffer: usize) -> std::io::Result<(std::net::UdpSocket, usize)> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if buffer > 0 && force_buffers(&s, buffer).is_err() {
        let _ = s.set_recv_buffer_size(buffer);
        let _ = s.set_send_buffer_size(buffer);
    }
    // Linux reports twice the size it was given (bookkeeping included).
    let got = s.recv_buffer_size().unwrap_or(0) / 2;
    if buffer > 0 && got < buffer / 2 {
        warn_small_buffer(got, buffer);
    }
    s.bind(&addr.into())?;
    Ok((s.into(), got))
}

/// SO_RCVBUFFORCE and SO_SNDBUFFORCE: the sizes regardless of `net.core.rmem_max` and
/// `wmem_max`; refused (EPERM) without CAP_NET_ADMIN.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn force_buffers(s: &socket2::Socket, buffer: usize) -> nix::Result<()> {
    use nix::sys::socket::{setsockopt, sockopt};
    setsockopt(s, sockopt::RcvBufForce, &buffer)?;
    setsockopt(s, sockopt::SndBufForce, &buffer)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn force_buffers(_: &socket2::Socket, _: usize) -> Result<(), ()> {
    Err(())
}

fn warn_small_buffer(got: usize, wanted: usize) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        warn!(
            "the kernel gave QUIC links a {} KiB UDP receive buffer instead of {} KiB; large \
             messages may lose packets and slow down. Raise the limit: sysctl -w \
             net.core.rmem_max={wanted} net.core.wmem_max={wanted}",
            got >> 10,
            wanted >> 10
        )
    });
}

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
            .connect(addr, crate::pki::ROUTER_SERVER_NAME)
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
    control
        .write_all(&me.hello().encode())
        .await
        .map_err(|e| LinkError::Connect(e.to_string()))?;
    let hello = async {
        let mut rx = conn
            .accept_uni()
            .await
            .map_err(|e| LinkError::Connect(e.to_string()))?;
        let hello = read_frame(&mut rx, 4096)
            .await
            .map_err(|e| LinkError::Hello(e.to_string()))?;
        Ok::<_, LinkError>((rx, hello))
    };
    let (control_rx, hello) = tokio::time::timeout(cfg.hello_timeout, hello)
        .await
        .map_err(|_| LinkError::Hello("no Hello within the timeout".into()))??;
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
    });
    let w = tokio::spawn(write_lane(t.clone(), control, t.control.clone()));
    t.track(w);
    let reader = t.clone();
    let start = Box::new(move || {
        let control_reader = reader.clone();
        let control_inbound = inbound.clone();
        tokio::spawn(async move {
            let clean =
                read_stream(control_reader.clone(), control_rx, link, control_inbound).await;
            if clean {
                close_when_drained(control_reader).await;
            }
        });
        tokio::spawn(accept_streams(reader.clone(), link, inbound.clone()));
        tokio::spawn(read_datagrams(reader.clone(), link, inbound.clone()));
        tokio::spawn(async move {
            let reason = reader.conn.closed().await;
            reader.close_lanes();
            inbound.closed(link, reason.to_string()).await;
        });
    });
    Ok(Established::new(peer, LinkSender::from(t), start))
}

struct QuicTransport {
    conn: quinn::Connection,
    /// Lane writers, awaited by `finish` so queued data is delivered before closing.
    writers: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Data streams from the peer still being read.
    readers: std::sync::atomic::AtomicUsize,
    control: Arc<Lane<Outgoing>>,
    lanes: Mutex<HashMap<Name, Arc<Lane<Outgoing>>>>,
    cfg: LinkConfig,
    stats: LinkStats,
}

impl QuicTransport {
    fn lane_for(self: &Arc<Self>, name: Name, best_effort: bool) -> Arc<Lane<Outgoing>> {
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
        let lane = Arc::new(Lane::new(policy, limits));
        lanes.insert(name, lane.clone());
        let t = self.clone();
        let l = lane.clone();
        let w = tokio::spawn(async move {
            match t.conn.open_uni().await {
                Ok(s) => write_lane(t, s, l).await,
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

    fn close_data_lanes(&self) {
        if let Ok(lanes) = self.lanes.lock() {
            for l in lanes.values() {
                l.close();
            }
        }
    }
}

/// The transport needs its own `Arc` to spawn lane writers; this wrapper provides it.
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
                t.lane_for(name, best_effort)
                    .push(Outgoing::Data { origin, envelope })
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
        let s = self.0.conn.stats();
        Some(PathStats {
            rtt_us: s.path.rtt.as_micros() as u64,
            cwnd: s.path.cwnd,
            sent_packets: s.path.sent_packets,
            lost_packets: s.path.lost_packets,
            congestion_events: s.path.congestion_events,
            mtu: s.path.current_mtu,
        })
    }

    fn wait_space(
        &self,
        name: Name,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        let lane = self.0.lanes.lock().ok().and_then(|l| l.get(&name).cloned());
        Box::pin(async move {
            if let Some(lane) = lane {
                lane.wait_space().await;
            }
        })
    }

    fn kind(&self) -> &'static str {
        "quic"
    }

    fn depth(&self) -> crate::lane::Depth {
        let t = &self.0;
        let mut depth = t.control.depth();
        if let Ok(lanes) = t.lanes.lock() {
            // Topics past `max_lanes` share a lane: count each lane once.
            let mut seen = std::collections::HashSet::new();
            for l in lanes.values() {
                if seen.insert(Arc::as_ptr(l)) {
                    depth = depth + l.depth();
                }
            }
        }
        depth
    }
}

struct ArcTransport(Arc<QuicTransport>);

impl From<Arc<QuicTransport>> for LinkSender {
    fn from(t: Arc<QuicTransport>) -> Self {
        LinkSender(Arc::new(ArcTransport(t)))
    }
}

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

async fn write_lane(t: Arc<QuicTransport>, mut s: quinn::SendStream, lane: Arc<Lane<Outgoing>>) {
    let mut chunks: Vec<Bytes> = Vec::with_capacity(2 * WRITE_BATCH_FRAMES);
    let mut small = bytes::BytesMut::new();
    // quinn opens every stream at priority 0, bulk's.
    let mut priority = Priority::Bulk;
    while let Some(first) = lane.pop().await {
        // Whatever else is queued already goes in the same write.
        let (mut frames, mut bytes, mut largest) = (0, 0, 0);
        let mut next = Some(first);
        while let Some(item) = next.take() {
            frames += 1;
            let size = crate::lane::Weighted::size(&item);
            bytes += size;
            largest = largest.max(size);
            if size > COALESCE_MAX && !small.is_empty() {
                chunks.push(small.split().freeze());
            }
            match item {
                Outgoing::Control(b) if size <= COALESCE_MAX => small.extend_from_slice(&b),
                Outgoing::Control(b) => chunks.push(b),
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
            if frames < WRITE_BATCH_FRAMES && bytes < WRITE_BATCH_BYTES {
                next = lane.try_pop();
            }
        }
        if !small.is_empty() {
            chunks.push(small.split().freeze());
        }
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

/// Bytes buffered per stream read from quinn.
const READ_BUFFER: usize = 64 << 10;

/// Reads frames until the stream ends; true when the peer finished it cleanly.
async fn read_stream(
    t: Arc<QuicTransport>,
    rx: quinn::RecvStream,
    link: LinkId,
    inbound: Inbound,
) -> bool {
    // Small frames come several to a packet: buffering takes them out of quinn with one
    // read (one lock of the connection) instead of three per frame.
    let mut rx = tokio::io::BufReader::with_capacity(READ_BUFFER, rx);
    loop {
        match read_frame(&mut rx, t.cfg.max_frame).await {
            Ok(Some(frame)) => {
                t.stats.count_frame_in(&frame);
                if !inbound.frame(link, frame).await {
                    return false;
                }
            }
            Ok(None) => return true,
            Err(crate::framing::ReadError::Frame(e)) => {
                warn!("closing link: peer sent a bad frame: {e}");
                t.conn.close(2u32.into(), b"bad frame");
                return false;
            }
            Err(e) => {
                debug!("stream ended: {e}");
                return false;
            }
        }
    }
}

/// The peer finished its control stream: it is leaving and has finished its data streams
/// first. Read those to the end, then close, so nothing it sent is lost (quinn discards
/// unread data once a connection closes, and the peer's acknowledgements only mean the data
/// reached our buffers).
async fn close_when_drained(t: Arc<QuicTransport>) {
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

async fn accept_streams(t: Arc<QuicTransport>, link: LinkId, inbound: Inbound) {
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

async fn read_datagrams(t: Arc<QuicTransport>, link: LinkId, inbound: Inbound) {
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
    use super::{receive_window, udp_socket, MIN_RECEIVE_WINDOW};

    fn sysctl(name: &str) -> Option<usize> {
        std::fs::read_to_string(format!("/proc/sys/net/core/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    #[test]
    fn the_endpoint_socket_gets_the_buffers_asked_for_as_far_as_the_kernel_allows() {
        let (Some(rmem_max), Some(wmem_max)) = (sysctl("rmem_max"), sysctl("wmem_max")) else {
            return; // not Linux: the sizes are the platform's business
        };
        // Above the kernel's limit: only root (CAP_NET_ADMIN) gets all of it.
        let wanted = rmem_max.max(wmem_max) + (1 << 20);
        let (socket, got) = udp_socket("127.0.0.1:0".parse().unwrap(), wanted).unwrap();
        let s = socket2::Socket::from(socket);
        // Linux doubles the size it was given (room for its bookkeeping).
        let (recv, send) = (s.recv_buffer_size().unwrap(), s.send_buffer_size().unwrap());
        assert_eq!(
            got,
            recv / 2,
            "the buffer reported is the one the socket has"
        );
        let forced = recv == 2 * wanted && send == 2 * wanted;
        let capped = recv == 2 * rmem_max && send == 2 * wmem_max;
        assert!(forced || capped, "recv {recv}, send {send} for {wanted}");
    }

    #[test]
    fn a_link_grants_no_more_than_its_socket_holds_nor_less_than_the_floor() {
        let mib = 1 << 20;
        assert_eq!(receive_window(8 * mib, 16 * mib), 8 * mib);
        assert_eq!(receive_window(8 * mib, 4 * mib), 4 * mib);
        assert_eq!(receive_window(8 * mib, 208 << 10), MIN_RECEIVE_WINDOW);
        assert_eq!(
            receive_window(mib, 208 << 10),
            mib,
            "never above what was asked"
        );
    }
}
