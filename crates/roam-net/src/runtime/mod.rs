//! A router process: the async shell that drives `roam_routing::Router`.
//!
//! The routing core sits behind a lock ([`direct`]): link tasks (readers) and in-process
//! publishers route what they bring on their own thread, and a loop task keeps the core's
//! timers and carries out commands (links up, subscriptions, reports), in the order sent. The
//! core's transmits go to each link's non-blocking [`LinkSender`]; a full lane pauses its
//! topic, which holds the readers bringing it (see [`crate::pause`]). Dialers reconnect with backoff ([`dial`]);
//! listeners accept QUIC and, optionally, TCP+TLS, under admission control ([`accept`]).
//! In-process endpoints (the ROS 2 proxy) use [`RouterHandle`].

mod accept;
mod dial;
mod direct;
mod handle;
mod local;
mod stall;

pub use handle::{LocalPublication, LocalSubscription, RouterHandle};
pub use local::LocalId;

#[cfg(test)]
mod congestion_tests;
#[cfg(test)]
mod direct_tests;
#[cfg(test)]
mod fec_tests;
#[cfg(test)]
mod forwarding_tests;
#[cfg(test)]
mod link_queue_tests;
#[cfg(test)]
mod local_stall_tests;
#[cfg(test)]
mod local_tests;
#[cfg(test)]
mod report_tests;
#[cfg(test)]
mod test_support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use roam_proto::frame::Role;
use roam_proto::{Name, RouterId};
use roam_routing::{Event, Router, Stats};
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{info, warn};

use crate::admission::gate::Gate;
use crate::admission::AdmissionStats;
use crate::link::{
    Established, Inbound, LinkConfig, LinkError, LinkId, LinkInput, LinkSender, LocalInfo, PeerInfo,
};
use crate::pause::Pauses;
use crate::pki::Identity;
use crate::{quic, tls};

pub(crate) use direct::{Direct, Queue, Routed};

/// Where to reach a peer router.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerAddr {
    Quic(SocketAddr),
    Tcp(SocketAddr),
    /// Through an MQTT broker, at a rendezvous (docs/operations.md).
    Mqtt(crate::mqtt::MqttPeer),
}

impl std::str::FromStr for PeerAddr {
    type Err = String;

    /// `quic://HOST:PORT`, `tcp://HOST:PORT`, `HOST:PORT` (QUIC), or
    /// `mqtt[s]://[USER:PASS@]HOST:PORT/RENDEZVOUS`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (tcp, rest) = match s.split_once("://") {
            Some(("quic", r)) => (false, r),
            Some(("tcp", r)) => (true, r),
            Some(("mqtt" | "mqtts", _)) => {
                return crate::mqtt::MqttPeer::parse(s).map(PeerAddr::Mqtt)
            }
            Some((scheme, _)) => {
                return Err(format!(
                    "unknown scheme {scheme:?} in {s:?}: use quic://, tcp:// or mqtt://"
                ))
            }
            None => (false, s),
        };
        let addr = resolve(rest)?;
        Ok(if tcp {
            PeerAddr::Tcp(addr)
        } else {
            PeerAddr::Quic(addr)
        })
    }
}

impl std::fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerAddr::Quic(a) => write!(f, "quic://{a}"),
            PeerAddr::Tcp(a) => write!(f, "tcp://{a}"),
            PeerAddr::Mqtt(m) => write!(f, "{m}"),
        }
    }
}

/// Resolves `HOST:PORT` (names through the system resolver).
pub fn resolve(s: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs()
        .map_err(|e| format!("cannot resolve {s:?}: {e}"))?
        .next()
        .ok_or_else(|| format!("{s:?} resolves to no address"))
}

/// Timers of the routing core.
#[derive(Debug, Clone)]
pub struct RoutingTimers {
    pub lsa_refresh: Duration,
    pub advert_refresh: Duration,
    pub sub_refresh: Duration,
}

impl Default for RoutingTimers {
    fn default() -> Self {
        Self {
            lsa_refresh: Duration::from_secs(10),
            advert_refresh: Duration::from_secs(30),
            sub_refresh: Duration::from_secs(30),
        }
    }
}

/// Everything a router process needs.
#[derive(Clone)]
pub struct RouterConfig {
    pub identity: Arc<Identity>,
    pub listen: Option<SocketAddr>,
    pub listen_tcp: Option<SocketAddr>,
    /// Rendezvous in MQTT brokers where dialers find this router.
    pub listen_mqtt: Vec<crate::mqtt::MqttPeer>,
    pub connect: Vec<PeerAddr>,
    pub link: LinkConfig,
    pub timers: RoutingTimers,
    /// Longest wait between reconnection attempts.
    pub max_backoff: Duration,
    /// How long a reliable topic waits for a full subscriber link before that link loses
    /// the waiting messages (so one stuck subscriber cannot stop a topic for everyone).
    pub stall_timeout: Duration,
}

fn routing_config(id: RouterId, t: &RoutingTimers) -> roam_routing::Config {
    let now_us = crate::latency::now_us().max(1);
    roam_routing::Config {
        router_id: id,
        initial_seq: now_us,
        lsa_refresh: t.lsa_refresh,
        lsa_lifetime: t.lsa_refresh * 4,
        advert_refresh: t.advert_refresh,
        advert_lifetime: t.advert_refresh * 3,
        sub_refresh: t.sub_refresh,
        sub_lifetime: t.sub_refresh * 3,
        query_ttl: 16,
        withdraw_linger: Duration::from_secs(2),
    }
}

/// Per-link figures for status output.
#[derive(Debug, Clone)]
pub struct LinkReport {
    pub link: LinkId,
    pub peer: PeerInfo,
    pub kind: &'static str,
    pub frames_in: u64,
    pub frames_out: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub dropped_full: u64,
    pub dropped_stale: u64,
    /// What waits in the link's lanes now (its send queue).
    pub queued: crate::lane::Depth,
    /// Times a reliable topic found the link's lane full and paused its publishers.
    pub stalls: u64,
    /// Topics paused on this link now, waiting for room in its lane.
    pub stalled_topics: usize,
    /// Age of the data that arrived on the link (see [`crate::latency`]): every bucket, so
    /// an export format loses nothing; `.summary()` gives the quantiles.
    pub data_age: crate::latency::LatencySnapshot,
    /// The QUIC connection's path estimates (`None` on TCP links).
    pub path: Option<crate::link::PathStats>,
    /// Whether the link takes its peer to forward what it gets (its LSAs name routers besides
    /// this one, or it sent none): QUIC sends small messages from the routing thread only to
    /// a peer that does not.
    pub peer_forwards: bool,
    /// The link is down; these are its figures at the end (the last
    /// [`CLOSED_LINKS_KEPT`] closed links are reported).
    pub closed: bool,
}

/// How many closed links' final figures a router keeps for its status report, so a link
/// that went down (a peer restarted, or both ends stopping together) is still accounted for.
pub const CLOSED_LINKS_KEPT: usize = 16;

#[derive(Debug, Clone)]
pub struct RouterReport {
    pub routing: Stats,
    pub links: Vec<LinkReport>,
    /// In-process deliveries dropped because the local subscriber was not reading.
    pub local_dropped: u64,
    /// Connections that have not authenticated yet: pending now, and what became of them.
    pub admission: AdmissionStats,
}

enum Command {
    Up {
        link: LinkId,
        est: Box<Established>,
        dialed: bool,
        down: Option<oneshot::Sender<()>>,
    },
    Publish {
        name: Name,
        id: LocalId,
        demand: watch::Sender<bool>,
    },
    Unpublish {
        name: Name,
        id: LocalId,
    },
    Subscribe {
        name: Name,
        id: LocalId,
        tx: crate::envelope_queue::QueueSender,
    },
    Unsubscribe {
        name: Name,
        id: LocalId,
    },
    Send {
        name: Name,
        envelope: Bytes,
    },
    Report(oneshot::Sender<RouterReport>),
    Shutdown,
    /// A stalled lane has room again (or gave up waiting).
    Unstall {
        link: LinkId,
        name: Name,
        gave_up: bool,
    },
    /// A stalled in-process subscriber has room again (or gave up waiting).
    LocalUnstall {
        name: Name,
        id: LocalId,
        gave_up: bool,
    },
}

/// Starts a router: binds its listeners, dials its peers, and runs until shut down.
pub async fn start(
    config: RouterConfig,
) -> Result<(RouterHandle, tokio::task::JoinHandle<()>), LinkError> {
    let id = tls::router_id(&config.identity.name);
    let me = LocalInfo {
        name: config.identity.name.clone(),
        role: Role::Router,
        id,
    };
    let ep = quic::endpoint(&config.identity, &config.link, config.listen)?;
    let quic_addr = match config.listen {
        Some(_) => Some(ep.local_addr()?),
        None => None,
    };
    let (cmd_tx, cmd_rx) = mpsc::channel(1024);
    let (in_tx, in_rx) = mpsc::channel(4096);
    let queued = Arc::new(AtomicUsize::new(0));
    let cmd_tx = Queue::new(cmd_tx, queued.clone());
    let pauses = Arc::new(Pauses::default());
    let handle_pauses = pauses.clone();
    let next_link = Arc::new(AtomicU32::new(1));
    let gate = Gate::new(config.link.admission());
    let (stopping_tx, stopping) = watch::channel(false);
    let rt = Runtime {
        core: Router::new(routing_config(id, &config.timers), Instant::now()),
        links: HashMap::new(),
        peers: HashMap::new(),
        local: local::Local::default(),
        local_dropped: 0,
        closed: std::collections::VecDeque::new(),
        pauses: pauses.clone(),
        stalls: HashMap::new(),
        local_stalls: HashMap::new(),
        cmd: cmd_tx.clone(),
        stall_timeout: config.stall_timeout,
        gate: gate.clone(),
        stopping: stopping_tx,
        armed: None,
    };
    let direct = Arc::new(Direct::new(rt, queued.clone()));
    let shared = Shared {
        me,
        config: config.clone(),
        ep: ep.clone(),
        cmd: cmd_tx.clone(),
        inbound: Inbound::routed(direct.clone(), Queue::new(in_tx, queued), pauses.clone()),
        next_link,
        gate: gate.clone(),
        stopping,
    };

    let tcp_listener = match config.listen_tcp {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|source| LinkError::Bind {
                    what: "TCP+TLS",
                    addr,
                    source,
                })?,
        ),
        None => None,
    };
    if config.listen.is_some() {
        tokio::spawn(accept::accept_quic(shared.clone()));
    }
    let tcp_addr = match tcp_listener {
        Some(listener) => {
            let local = listener.local_addr()?;
            tokio::spawn(accept::accept_tcp(shared.clone(), listener));
            Some(local)
        }
        None => None,
    };
    for peer in &config.listen_mqtt {
        tokio::spawn(accept::accept_mqtt(shared.clone(), peer.clone()));
    }
    tokio::spawn(accept::flush_gate_log(gate.clone(), shared.clone()));
    let dialers: Vec<_> = config
        .connect
        .iter()
        .map(|peer| tokio::spawn(dial::dial_loop(shared.clone(), peer.clone())))
        .collect();
    info!(router = %config.identity.name, id = format_args!("{id:#018x}"), quic = ?quic_addr, tcp = ?tcp_addr, "router started");
    let gate_at_exit = gate;
    let looped = direct.clone();
    let task = tokio::spawn(async move {
        run(looped, cmd_rx, in_rx, ep).await;
        gate_at_exit.flush_all_log();
        // The dialers end at once now; waiting for them means their last words ("closed:
        // the router is shutting down") are logged before the router reports it stopped.
        for d in dialers {
            let _ = d.await;
        }
    });
    Ok((
        RouterHandle::new(cmd_tx, direct, handle_pauses, id, quic_addr, tcp_addr),
        task,
    ))
}

#[derive(Clone)]
struct Shared {
    me: LocalInfo,
    config: RouterConfig,
    ep: quinn::Endpoint,
    cmd: Queue<Command>,
    inbound: Inbound,
    next_link: Arc<AtomicU32>,
    gate: Arc<Gate>,
    /// Turns true when the router stops (the sender is gone once it has stopped).
    stopping: watch::Receiver<bool>,
}

impl Shared {
    fn link_id(&self) -> LinkId {
        self.next_link.fetch_add(1, Ordering::Relaxed)
    }

    fn is_stopping(&self) -> bool {
        *self.stopping.borrow() || self.stopping.has_changed().is_err()
    }

    /// Resolves when the router stops.
    fn stopping(&self) -> impl std::future::Future<Output = ()> {
        let mut rx = self.stopping.clone();
        async move {
            let _ = rx.wait_for(|stopping| *stopping).await;
        }
    }
}

struct LinkEntry {
    tx: LinkSender,
    peer: PeerInfo,
    down: Option<oneshot::Sender<()>>,
}

/// Most commands or link inputs taken per turn of the runtime's loop before it flushes.
const BATCH: usize = 256;

struct Runtime {
    core: Router,
    links: HashMap<LinkId, LinkEntry>,
    /// The one link kept per peer router.
    peers: HashMap<RouterId, LinkId>,
    /// In-process publishers and subscribers, any number per name.
    local: local::Local,
    local_dropped: u64,
    /// Final figures of the most recently closed links, oldest first.
    closed: std::collections::VecDeque<LinkReport>,
    pauses: Arc<Pauses>,
    /// Reliable data waiting for room in a full lane, per (link, topic), in order.
    stalls: HashMap<(LinkId, Name), stall::Stall>,
    /// Reliable data waiting for a full in-process subscriber, per (topic, subscriber), in order.
    local_stalls: HashMap<(Name, LocalId), stall::LocalStall>,
    cmd: Queue<Command>,
    stall_timeout: Duration,
    gate: Arc<Gate>,
    stopping: watch::Sender<bool>,
    /// The routing timer the loop sleeps to (see [`Runtime::timer_moved_earlier`]).
    armed: Option<Instant>,
}

/// The routing loop: commands and link inputs sent to it, and the core's timers. Messages
/// are mostly routed by whoever brings them ([`direct`]); what comes here is carried out
/// under the same lock, in the order sent.
async fn run(
    direct: Arc<Direct>,
    mut cmd: mpsc::Receiver<Command>,
    mut inbound: mpsc::Receiver<(LinkId, LinkInput)>,
    ep: quinn::Endpoint,
) {
    loop {
        let deadline = match direct.lock().as_mut() {
            Some(rt) => rt.arm(),
            None => return,
        };
        let deadline = deadline.map(tokio::time::Instant::from_std);
        // What is already queued is taken in the same turn, with one reading of the clock
        // (the routing core's timers need no finer time): one wake-up and one lock for a
        // burst of messages instead of one each.
        tokio::select! {
            biased;
            c = cmd.recv() => {
                let Some(c) = c else { break };
                let now = Instant::now();
                let mut guard = direct.lock();
                let Some(rt) = guard.as_mut() else { return };
                let mut next = Some(c);
                let mut taken = 0;
                while let Some(c) = next.take() {
                    direct.carried_out(1);
                    if matches!(c, Command::Shutdown) {
                        if let Some(rt) = guard.take() {
                            rt.shut_down(ep);
                        }
                        return;
                    }
                    rt.command(c, now);
                    // Each command's deliveries and demand changes go out before the
                    // next command runs: an Unsubscribe after a Send must not find the
                    // envelope still queued for the subscriber it removes.
                    rt.flush();
                    taken += 1;
                    if taken < BATCH {
                        next = cmd.try_recv().ok();
                    }
                }
            },
            m = inbound.recv() => {
                let Some((link, input)) = m else { break };
                let now = Instant::now();
                let mut guard = direct.lock();
                let Some(rt) = guard.as_mut() else { return };
                rt.input(link, input, now);
                direct.carried_out(1);
                for _ in 1..BATCH {
                    match inbound.try_recv() {
                        Ok((link, input)) => {
                            rt.input(link, input, now);
                            direct.carried_out(1);
                        }
                        Err(_) => break,
                    }
                }
                rt.flush();
            },
            _ = direct.timer_moved.notified() => {},
            _ = sleep_until(deadline) => {
                if let Some(rt) = direct.lock().as_mut() {
                    rt.core.handle_timeout(Instant::now());
                    rt.flush();
                }
            },
        }
    }
    if let Some(rt) = direct.lock().take() {
        rt.shut_down(ep);
    }
}

impl Runtime {
    /// The routing timer the loop is to sleep to, remembered.
    fn arm(&mut self) -> Option<Instant> {
        self.armed = self.core.poll_timeout();
        self.armed
    }

    /// Whether routing a caller's message set a timer earlier than the loop sleeps to (then
    /// remembered as armed: the loop is woken once for it).
    fn timer_moved_earlier(&mut self) -> bool {
        match self.core.poll_timeout() {
            Some(t) if self.armed.is_none_or(|a| t < a) => {
                self.armed = Some(t);
                true
            }
            _ => false,
        }
    }

    fn shut_down(self, ep: quinn::Endpoint) {
        // First, so that links closing now are not taken for lost ones.
        self.stopping.send_replace(true);
        for l in self.links.values() {
            l.tx.close("router shutting down");
        }
        ep.close(0u32.into(), b"shutdown");
    }

    fn command(&mut self, c: Command, now: Instant) {
        match c {
            Command::Up {
                link,
                mut est,
                dialed,
                down,
            } => {
                let peer = est.peer.clone();
                if peer.role == Role::Router {
                    if let Some(existing) = self.peers.get(&peer.id) {
                        warn!(
                            "second link to {} (links {existing} and {link}); keeping the first",
                            peer.name
                        );
                        est.tx.close("duplicate link");
                        return;
                    }
                    self.peers.insert(peer.id, link);
                }
                info!(peer = %peer.name, role = ?peer.role, dialed, link, "link up");
                self.core.link_up(now, link, peer.role, peer.id);
                self.links.insert(
                    link,
                    LinkEntry {
                        tx: est.tx.clone(),
                        peer,
                        down,
                    },
                );
                est.start();
            }
            Command::Publish { name, id, demand } => self.local_publish(now, name, id, demand),
            Command::Unpublish { name, id } => self.local_unpublish(now, name, id),
            Command::Subscribe { name, id, tx } => self.local_subscribe(now, name, id, tx),
            Command::Unsubscribe { name, id } => self.local_unsubscribe(now, name, id),
            Command::Send { name, envelope } => self.core.send_local(now, name, envelope),
            Command::Report(tx) => {
                let _ = tx.send(self.report());
            }
            Command::Shutdown => {}
            Command::Unstall {
                link,
                name,
                gave_up,
            } => self.unstall(link, name, gave_up),
            Command::LocalUnstall { name, id, gave_up } => self.local_unstall(name, id, gave_up),
        }
    }

    fn input(&mut self, link: LinkId, input: LinkInput, now: Instant) {
        match input {
            LinkInput::Frame(roam_proto::Frame::Data { origin, envelope }) => {
                self.core.handle_data(now, link, origin, envelope)
            }
            LinkInput::Frame(f) => {
                tracing::debug!(link, frame = ?f, "control frame");
                let lsa = matches!(f, roam_proto::Frame::Lsa(_));
                self.core.handle_frame(now, link, f);
                if lsa {
                    self.tell_links_who_forwards();
                }
            }
            LinkInput::Closed(reason) => {
                if let Some(mut entry) = self.links.remove(&link) {
                    info!(peer = %entry.peer.name, link, "link down: {reason}");
                    if self.closed.len() == CLOSED_LINKS_KEPT {
                        self.closed.pop_front();
                    }
                    let mut last = link_report(link, &entry);
                    last.closed = true;
                    self.closed.push_back(last);
                    // Whatever waited for this link is moot now.
                    let stalled: Vec<Name> = self
                        .stalls
                        .keys()
                        .filter(|(l, _)| *l == link)
                        .map(|(_, n)| *n)
                        .collect();
                    for name in stalled {
                        self.stalls.remove(&(link, name));
                        self.resume_if_unstalled(name);
                    }
                    if self.peers.get(&entry.peer.id) == Some(&link) {
                        self.peers.remove(&entry.peer.id);
                    }
                    self.core.link_down(now, link);
                    if let Some(d) = entry.down.take() {
                        let _ = d.send(());
                    }
                }
            }
        }
    }

    /// Tells each router link whether its peer forwards, from the peers' newest LSAs (a link
    /// state change is what changes it).
    fn tell_links_who_forwards(&mut self) {
        for entry in self.links.values() {
            if entry.peer.role == Role::Router {
                entry
                    .tx
                    .set_peer_forwards(self.core.forwards(entry.peer.id));
            }
        }
    }

    fn flush(&mut self) {
        while let Some(t) = self.core.poll_transmit() {
            if !t.frame.is_data() {
                tracing::debug!(link = t.link, frame = ?t.frame, "send control frame");
            }
            self.transmit(t.link, t.frame);
        }
        while let Some(e) = self.core.poll_event() {
            match e {
                Event::Deliver { name, envelope, .. } => self.deliver_local(name, envelope),
                Event::Demand { name, wanted } => self.local_demand(name, wanted),
            }
        }
    }

    fn report(&self) -> RouterReport {
        let mut links: Vec<LinkReport> = self
            .links
            .iter()
            .map(|(id, l)| {
                let mut r = link_report(*id, l);
                r.stalled_topics = self.stalls.keys().filter(|(k, _)| k == id).count();
                r
            })
            .collect();
        links.sort_by_key(|l| l.link);
        links.extend(self.closed.iter().cloned());
        RouterReport {
            routing: self.core.stats(),
            links,
            local_dropped: self.local_dropped,
            admission: self.gate.stats(),
        }
    }
}

fn link_report(link: LinkId, l: &LinkEntry) -> LinkReport {
    let s = l.tx.stats();
    let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    LinkReport {
        link,
        peer: l.peer.clone(),
        kind: l.tx.0.kind(),
        frames_in: g(&s.frames_in),
        frames_out: g(&s.frames_out),
        bytes_in: g(&s.bytes_in),
        bytes_out: g(&s.bytes_out),
        dropped_full: g(&s.dropped_full),
        dropped_stale: g(&s.dropped_stale),
        queued: l.tx.depth(),
        stalls: g(&s.stalls),
        stalled_topics: 0,
        data_age: s.data_age.snapshot(),
        path: l.tx.path(),
        peer_forwards: l.tx.peer_forwards(),
        closed: false,
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
