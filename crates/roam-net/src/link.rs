//! What every link transport shares: configuration, peer identity, the sending handle,
//! per-link counters, and the Hello exchange that binds a link to its certificate.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use roam_proto::frame::{Role, DATA_HEADER_LEN, LINK_VERSION};
use roam_proto::{Frame, RouterId};

use crate::lane::{LaneLimits, Pushed, Weighted};
use crate::tls::{router_id, PeerIdentity};

pub use roam_routing::LinkId;

/// The largest UDP payload a link's MTU discovery searches for by default: a jumbo frame's.
/// On loopback (two DDS domains, or a proxy and a router, on one host) and on jumbo-frame LANs
/// an 8 KiB message then crosses in one packet and a 64 KiB one in 8 instead of 15, which
/// carries a large echo 10-30% sooner; a 1,500-byte path settles near 1,452 whatever the
/// bound. Many small topics (E13) arrive as soon through a router and perhaps 5-7% later
/// proxy to proxy, and the memory it once cost was quinn's receive buffer, now sized for a
/// batch whatever the bound (bench/results/lab-xeon-mtu-9000.md, lab-mtu-option.md).
pub const DEFAULT_MAX_UDP_PAYLOAD: u16 = 9000;

/// Tunables of a link. The defaults suit a robot on a WAN link; tests shorten the timeouts.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// Largest frame accepted from a peer (a message plus ~200 bytes of overhead).
    pub max_frame: usize,
    pub reliable: LaneLimits,
    pub best_effort: LaneLimits,
    /// Per-topic QUIC streams per link; beyond this, topics share lanes by hash.
    pub max_lanes: usize,
    pub idle_timeout: Duration,
    pub keepalive: Duration,
    pub hello_timeout: Duration,
    /// What a client link may bring into this router: data messages and bytes per second
    /// ([`crate::quota`]; links to routers have none).
    pub client_quota: crate::quota::QuotaLimits,
    /// Names (subscriptions and publications) one client link may hold in this router;
    /// further ones are refused and counted (0: no limit).
    pub client_max_names: usize,
    /// How QUIC links pace themselves (TCP links use the kernel's controller).
    pub congestion: Congestion,
    /// SO_RCVBUF and SO_SNDBUF of the QUIC endpoint's UDP socket. The kernel's default
    /// (about 208 KiB) drops datagrams when a large message arrives faster than the endpoint
    /// reads them, and each drop costs a congestion-window cut. Asked with the `FORCE`
    /// options first (allowed to root and CAP_NET_ADMIN: above `net.core.rmem_max`).
    pub udp_buffer_bytes: usize,
    /// The largest UDP payload a QUIC link's MTU discovery searches for, and that its
    /// endpoint says it takes (1,200 to 65,527). Paths with a smaller MTU settle below it
    /// by themselves; see [`DEFAULT_MAX_UDP_PAYLOAD`] for why the default is not larger.
    pub max_udp_payload: u16,
    /// Most bytes a QUIC connection holds for its peer: the flow-control windows it grants
    /// (per stream and per connection) and the data it keeps sent but unacknowledged or
    /// written but unsent. Bounds each link's memory and the time data waits in it under
    /// load; a path's throughput is at most this much per round trip. The receive windows
    /// are further capped by the UDP receive buffer the kernel gives (what the socket can
    /// hold while the endpoint is busy), so a fast sender cannot overflow it.
    pub window_bytes: usize,
    /// How many packets carrying data a QUIC peer receives before it must acknowledge them,
    /// asked of the peer with the ACK frequency extension, and how long it may hold an
    /// acknowledgement when fewer came. 0 (the default) does not use the extension: the peer
    /// acknowledges every second packet, as QUIC does. Each acknowledgement is built,
    /// encrypted and sent on the receiving endpoint's thread before the message it
    /// acknowledges is delivered; fewer of them raised throughput in the lab but tilted a
    /// shared bottleneck towards the link (docs/operations.md).
    pub ack_every: u32,
    pub max_ack_delay: Duration,
    /// The congestion window a QUIC link starts with, before it has measured the path
    /// (QUIC's Cubic: ten 1,200-byte packets). A robot's link is quiet, then sends a large
    /// message: with ten packets the first point cloud over a 35 ms path took 1.1 s instead
    /// of 0.5, and an application-limited stream (images at a few hertz) grows its window
    /// slowly. quinn's BBR starts at 240,000 bytes for the same reason. With fewer
    /// acknowledgements ([`LinkConfig::ack_every`]) a small window also cuts each burst
    /// into rounds that wait for the delayed acknowledgement between them.
    pub initial_window_bytes: u64,
    /// Whether a QUIC link that sees loss sends repair datagrams beside its messages
    /// (forward error correction, [`crate::fec`]): on by default; a clean path sends none.
    pub fec: bool,
    /// A QUIC peer that leaves what this side sent unanswered this long (or a keepalive
    /// plus six round trips, if longer) is taken for dead and its link closed, well before
    /// the idle timeout: routes move around a router that died within about this. Zero:
    /// only the idle timeout ([`crate::quic`]'s `silence`).
    pub silence_timeout: Duration,
    /// Longest a connection may take from its first packet to an authenticated Hello. A
    /// router closes connections still unauthenticated by then; a dialer gives up and retries.
    pub handshake_timeout: Duration,
    /// Most connections a router keeps in their handshake at once, over all its listeners.
    pub max_unauthenticated: usize,
    /// Most connections in their handshake at once from one address (an IPv6 /64).
    pub max_unauthenticated_per_source: usize,
}

/// The congestion controller of QUIC links.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Congestion {
    /// Cubic that tells random loss from congestion ([`crate::congestion`]): a loss with no
    /// queue behind it and a low loss rate is repaired without a window cut. Cubic wherever
    /// a queue builds, so fair to other flows; keeps its rate through a radio's random loss.
    #[default]
    Tolerant,
    /// Loss-based (RFC 9438), quinn's default: fair to other traffic, but random loss on a
    /// radio link reads as congestion and shrinks the window.
    Cubic,
    /// Loss-based, the simplest (RFC 9002).
    NewReno,
    /// Model-based (quinn's experimental BBR): paces at the measured bottleneck rate and
    /// does not back off on random loss, for lossy long-distance links.
    Bbr,
}

impl std::str::FromStr for Congestion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "tolerant" => Ok(Congestion::Tolerant),
            "cubic" => Ok(Congestion::Cubic),
            "new_reno" | "newreno" => Ok(Congestion::NewReno),
            "bbr" => Ok(Congestion::Bbr),
            _ => Err(format!(
                "unknown congestion controller `{s}`: expected tolerant, cubic, new_reno or bbr"
            )),
        }
    }
}

impl Default for LinkConfig {
    fn default() -> Self {
        Self {
            max_frame: 128 << 20,
            reliable: LaneLimits {
                // What waits before the link under load, per topic: small enough that the
                // topic is pushed back on (up to its DDS writer) within tens of milliseconds
                // instead of queueing seconds of data (a 64 KB ddsperf burst through 256 MB
                // lanes waited 0.9 s on average, and memory stayed at 250 MB); an empty lane
                // still takes one message of any size.
                max_messages: 8192,
                max_bytes: 8 << 20,
            },
            best_effort: LaneLimits {
                max_messages: 64,
                max_bytes: 16 << 20,
            },
            max_lanes: 256,
            // A dead peer is noticed within this: a router that died stops being routed
            // through after 3 s, not 10. Keepalives every 500 ms keep a quiet link alive
            // through five lost in a row, for 12 bytes a second each way.
            idle_timeout: Duration::from_secs(3),
            // Short enough to fit in a peer's shorter idle timeout, and it is what tells a
            // router a robot's new address after the robot moved while only receiving.
            keepalive: Duration::from_millis(500),
            hello_timeout: Duration::from_secs(5),
            congestion: Congestion::Tolerant,
            udp_buffer_bytes: 8 << 20,
            max_udp_payload: DEFAULT_MAX_UDP_PAYLOAD,
            window_bytes: 8 << 20,
            // Measured in bench/results/lab-ack-defaults.md: see docs/operations.md.
            ack_every: 0,
            max_ack_delay: Duration::from_millis(1),
            initial_window_bytes: 256 << 10,
            fec: true,
            // A TLS handshake takes a few round trips: seconds even over a satellite hop.
            handshake_timeout: Duration::from_secs(10),
            // Two keepalives unanswered: a live peer answers each within a round trip.
            silence_timeout: Duration::from_secs(1),
            // Far below the usual 1,024 file descriptors, far above what peers reconnecting
            // after a router restart need at once.
            max_unauthenticated: 256,
            max_unauthenticated_per_source: 16,
            client_quota: crate::quota::QuotaLimits::default(),
            client_max_names: roam_routing::DEFAULT_CLIENT_MAX_NAMES,
        }
    }
}

/// Who we are on a link.
#[derive(Debug, Clone)]
pub struct LocalInfo {
    pub name: String,
    pub role: Role,
    pub id: RouterId,
}

impl LocalInfo {
    pub fn hello(&self) -> Frame {
        Frame::Hello {
            version: LINK_VERSION,
            role: self.role,
            id: self.id,
            name: self.name.clone(),
        }
    }
}

/// The authenticated peer of a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    pub name: String,
    pub role: Role,
    pub id: RouterId,
    /// Its certificate's serial number, as revocation lists name it.
    pub serial: Vec<u8>,
    /// When its certificate expires (seconds since the Unix epoch): the link ends then.
    pub not_after: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("TLS/QUIC connection failed: {0}")]
    Connect(String),
    #[error("peer certificate refused: {0}")]
    Certificate(String),
    #[error("bad hello from peer: {0}")]
    Hello(String),
    #[error("no authenticated Hello within {0:?} (link.handshake_timeout_ms)")]
    HandshakeTimeout(Duration),
    /// A listener could not bind its address.
    #[error("cannot listen for {what} links on {addr}: {source}; {}", bind_hint(.source, .what))]
    Bind {
        /// "QUIC (UDP)" or "TCP+TLS".
        what: &'static str,
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What to do about a listener that cannot bind, by the reason the system gave.
fn bind_hint(e: &std::io::Error, what: &str) -> &'static str {
    let tcp = what.starts_with("TCP");
    match e.kind() {
        std::io::ErrorKind::AddrInUse if tcp => {
            "is another roam router or proxy (or another program) using that port? Stop it, or \
             choose another address with --listen-tcp (listen_tcp: in the config file)"
        }
        std::io::ErrorKind::AddrInUse => {
            "is another roam router or proxy (or another program) using that port? Stop it, or \
             choose another address with --listen (listen: in the config file)"
        }
        std::io::ErrorKind::AddrNotAvailable => {
            "that address is not one of this machine's: use one of its addresses, or 0.0.0.0 \
             for all of them"
        }
        std::io::ErrorKind::PermissionDenied => {
            "ports below 1024 need privileges: choose a port from 1024 up (7447 is roam's usual)"
        }
        _ => "choose another address to listen on",
    }
}

/// Checks the peer's Hello against its authenticated certificate: a peer cannot claim
/// another identity's router id, nor act as a router with a client certificate.
pub fn check_hello(cert: &PeerIdentity, hello: Option<Frame>) -> Result<PeerInfo, LinkError> {
    let Some(Frame::Hello {
        version,
        role,
        id,
        name,
    }) = hello
    else {
        return Err(LinkError::Hello("the first frame was not Hello".into()));
    };
    if version != LINK_VERSION {
        return Err(LinkError::Hello(format!(
            "link version {version}, this side speaks {LINK_VERSION}"
        )));
    }
    if name != cert.name {
        return Err(LinkError::Hello(format!(
            "claims name {name:?} but its certificate is for {:?}",
            cert.name
        )));
    }
    if role == Role::Router && cert.role != Role::Router {
        return Err(LinkError::Hello(format!(
            "{name} claims the router role with a client certificate"
        )));
    }
    if id != router_id(&name) {
        return Err(LinkError::Hello(format!(
            "{name} claims router id {id:#x}, expected {:#x}",
            router_id(&name)
        )));
    }
    Ok(PeerInfo {
        name,
        role,
        id,
        serial: cert.serial.clone(),
        not_after: cert.not_after,
    })
}

/// What a link reports to its owner.
#[derive(Debug)]
pub enum LinkInput {
    Frame(Frame),
    Closed(String),
}

/// Counters of one link, shared with its tasks ("every hop is measured").
#[derive(Debug, Default)]
pub struct LinkStats {
    pub frames_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub frames_out: AtomicU64,
    pub bytes_out: AtomicU64,
    /// Reliable messages refused because this link's lane was full.
    pub dropped_full: AtomicU64,
    /// Best-effort messages dropped to make room for newer ones.
    pub dropped_stale: AtomicU64,
    /// Times a reliable topic found this link's lane full and was paused (back-pressure on
    /// its publishers) until the lane had room again.
    pub stalls: AtomicU64,
    /// Times this client link's reliable data was held back for its quota
    /// ([`crate::quota`]), and best-effort messages dropped over it.
    pub quota_waits: AtomicU64,
    pub dropped_quota: AtomicU64,
    /// Age of the data arriving on this link (its envelopes' send time to reading it here).
    pub data_age: crate::latency::LatencyHistogram,
    /// Forward error correction (QUIC links, [`crate::fec`]): repair datagrams sent and
    /// received, and the lost pieces of messages rebuilt from them.
    pub repairs_out: AtomicU64,
    pub repairs_in: AtomicU64,
    pub shards_rebuilt: AtomicU64,
}

impl LinkStats {
    pub fn count_in(&self, bytes: usize) {
        self.frames_in.fetch_add(1, Ordering::Relaxed);
        self.bytes_in.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Counts a frame read from the link, and the age of its envelope if it carries data.
    pub fn count_frame_in(&self, frame: &Frame) {
        self.count_in(wire_size(frame));
        self.record_age(frame);
    }

    /// [`Self::count_frame_in`] for a frame of a batch read at `now_us`.
    pub fn count_frame_in_at(&self, frame: &Frame, now_us: u64) {
        self.count_in(wire_size(frame));
        if let Frame::Data { envelope, .. } = frame {
            self.data_age.record_envelope_at(envelope, now_us);
        }
    }

    /// Records how old a data frame's envelope is on arrival.
    pub fn record_age(&self, frame: &Frame) {
        if let Frame::Data { envelope, .. } = frame {
            self.data_age.record_envelope(envelope);
        }
    }

    pub fn count_repair_out(&self, bytes: usize) {
        self.repairs_out.fetch_add(1, Ordering::Relaxed);
        self.bytes_out.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub fn count_repair_in(&self) {
        self.repairs_in.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_rebuilt(&self, shards: u64) {
        self.shards_rebuilt.fetch_add(shards, Ordering::Relaxed);
    }

    pub fn count_out(&self, bytes: usize) {
        self.count_out_many(1, bytes);
    }

    /// Counts `frames` frames of `bytes` bytes in all, written at once.
    pub fn count_out_many(&self, frames: usize, bytes: usize) {
        self.frames_out.fetch_add(frames as u64, Ordering::Relaxed);
        self.bytes_out.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub fn count_push(&self, p: Pushed) -> Pushed {
        match p {
            Pushed::Refused => {
                self.dropped_full.fetch_add(1, Ordering::Relaxed);
            }
            Pushed::DroppedOldest(n) => {
                self.dropped_stale.fetch_add(n as u64, Ordering::Relaxed);
            }
            _ => {}
        }
        p
    }
}

/// A frame waiting in a lane.
#[derive(Debug, Clone)]
pub enum Outgoing {
    /// Bytes written as they are: an encoded control frame, or the rest of a data frame
    /// that a write from the sender's thread began (`quic/lane_stream.rs`).
    Control(Bytes),
    Data {
        origin: RouterId,
        envelope: Bytes,
    },
}

impl Weighted for Outgoing {
    fn size(&self) -> usize {
        match self {
            Outgoing::Control(b) => b.len(),
            Outgoing::Data { envelope, .. } => DATA_HEADER_LEN + envelope.len(),
        }
    }
}

impl Outgoing {
    pub fn from_frame(frame: Frame) -> Self {
        match frame {
            Frame::Data { origin, envelope } => Outgoing::Data { origin, envelope },
            other => Outgoing::Control(other.encode().freeze()),
        }
    }
}

/// The transport behind a [`LinkSender`].
pub trait Transport: Send + Sync + 'static {
    /// Queues a frame. A reliable data frame refused by a full lane is dropped and counted.
    fn send(&self, frame: Frame) -> Pushed {
        let p = self.send_reliable(frame);
        if p == Pushed::Refused {
            self.stats().count_push(p);
        }
        p
    }
    /// Queues a frame; a refusal is only reported, not counted (the caller keeps the frame).
    fn send_reliable(&self, frame: Frame) -> Pushed;
    fn close(&self, reason: &str);
    /// Stops accepting frames, sends everything queued, waits until the peer has it (or the
    /// link dies), then closes.
    fn finish(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>;
    /// Resolves when the reliable lane carrying `name` has room again.
    fn wait_space(
        &self,
        name: roam_proto::Name,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>;
    /// Whether the reliable lane carrying `name` has room for another message now.
    fn has_space(&self, name: roam_proto::Name) -> bool;
    fn stats(&self) -> &LinkStats;
    fn kind(&self) -> &'static str;
    /// What the transport knows of the network path (QUIC does; TCP leaves it to the kernel).
    fn path(&self) -> Option<PathStats> {
        None
    }
    /// The peer's address as this end sees it, where the transport knows it (QUIC does).
    fn remote(&self) -> Option<std::net::SocketAddr> {
        None
    }
    /// What waits in the link's lanes, not yet handed to the socket or the QUIC connection.
    fn depth(&self) -> crate::lane::Depth;
    /// Tells the link whether its peer forwards what it gets to others (a router) or only
    /// delivers it (a proxy linked to this one alone), which its report shows.
    fn set_peer_forwards(&self, _forwards: bool) {}
    /// What the link was last told by [`Transport::set_peer_forwards`] (a link that does not
    /// care: yes).
    fn peer_forwards(&self) -> bool {
        true
    }
}

/// A link's view of its network path, from the QUIC connection's own estimates: what tells
/// a slow wide-area link (long RTT, small window, losses) from a slow router.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PathStats {
    pub rtt_us: u64,
    /// Congestion window: bytes the link may have in flight.
    pub cwnd: u64,
    pub sent_packets: u64,
    pub lost_packets: u64,
    /// Loss events (a run of packets lost together counts once) the connection handed to its
    /// congestion controller; `loss_verdicts` says how many of them shrank the window.
    pub congestion_events: u64,
    /// The largest UDP payload the path carries, as the connection's MTU discovery found it.
    pub mtu: u16,
    /// Repair datagrams sent and received, and message pieces rebuilt from them.
    pub repairs_sent: u64,
    pub repairs_received: u64,
    pub shards_rebuilt: u64,
    /// What the default (tolerant) controller made of each loss event: forgiven as random, or
    /// a window cut and why. All zero under plain Cubic or BBR, which keep no such count.
    pub loss_verdicts: crate::congestion::Counts,
}

/// A cheap, cloneable handle that queues frames on a link. Never blocks.
#[derive(Clone)]
pub struct LinkSender(pub Arc<dyn Transport>);

impl LinkSender {
    pub fn send(&self, frame: Frame) -> Pushed {
        self.0.send(frame)
    }

    pub fn close(&self, reason: &str) {
        self.0.close(reason)
    }

    pub fn set_peer_forwards(&self, forwards: bool) {
        self.0.set_peer_forwards(forwards)
    }

    pub fn peer_forwards(&self) -> bool {
        self.0.peer_forwards()
    }

    pub async fn wait_space(&self, name: roam_proto::Name) {
        self.0.wait_space(name).await
    }

    /// Delivers what is queued, then closes (see [`Transport::finish`]).
    pub async fn finish(&self) {
        self.0.finish().await
    }

    pub fn stats(&self) -> &LinkStats {
        self.0.stats()
    }

    pub fn depth(&self) -> crate::lane::Depth {
        self.0.depth()
    }

    pub fn path(&self) -> Option<PathStats> {
        self.0.path()
    }

    pub fn remote(&self) -> Option<std::net::SocketAddr> {
        self.0.remote()
    }
}

impl std::fmt::Debug for LinkSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LinkSender({})", self.0.kind())
    }
}

/// An authenticated link, ready to carry frames. Its readers start only when [`Self::start`]
/// is called, so the owner can register the link before the first frame arrives.
pub struct Established {
    pub peer: PeerInfo,
    pub tx: LinkSender,
    start: Option<Box<dyn FnOnce() + Send>>,
}

impl Established {
    pub fn new(peer: PeerInfo, tx: LinkSender, start: Box<dyn FnOnce() + Send>) -> Self {
        Self {
            peer,
            tx,
            start: Some(start),
        }
    }

    /// Starts delivering the peer's frames to the link's inbound channel.
    pub fn start(&mut self) {
        if let Some(f) = self.start.take() {
            f()
        }
    }
}

impl std::fmt::Debug for Established {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Established")
            .field("peer", &self.peer)
            .field("tx", &self.tx)
            .finish()
    }
}

/// Whether an envelope asks for best-effort delivery (flags byte of the header).
pub fn is_best_effort(envelope: &[u8]) -> bool {
    envelope
        .get(1)
        .is_some_and(|f| f & roam_proto::EnvelopeFlags::BEST_EFFORT != 0)
}

/// Whether an envelope's publisher keeps only its newest samples
/// ([`roam_proto::EnvelopeFlags::KEEP_LATEST`]).
pub fn is_keep_latest(envelope: &[u8]) -> bool {
    envelope
        .get(1)
        .is_some_and(|f| f & roam_proto::EnvelopeFlags::KEEP_LATEST != 0)
}

/// Bytes a frame occupies on the wire, for the link counters. Control frames are counted
/// approximately: they are a small share of any link's traffic.
pub fn wire_size(f: &Frame) -> usize {
    match f {
        Frame::Data { envelope, .. } => DATA_HEADER_LEN + envelope.len(),
        _ => 64,
    }
}
