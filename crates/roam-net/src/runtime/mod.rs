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
mod config;
mod dial;
mod direct;
mod handle;
mod links;
mod local;

mod replace;
mod report;
mod routing_loop;
mod stall;
mod trust;

pub use crate::peer_addr::{resolve, AddrError, PeerAddr};
pub use config::{RouterConfig, RoutingTimers};
pub use handle::{LocalPublication, LocalSubscription, RouterHandle};
pub use local::LocalId;
pub use report::{LinkReport, ReplaceStats, RouterReport, CLOSED_LINKS_KEPT};
pub use trust::TrustStats;

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
mod names_limit_tests;
#[cfg(test)]
mod report_tests;
#[cfg(test)]
mod test_support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use roam_proto::frame::Role;
use roam_proto::Name;
use roam_routing::{Event, Router};
use tokio::sync::{mpsc, oneshot, watch};
use tracing::info;

use crate::admission::gate::Gate;
use crate::inbound::Inbound;
use crate::link::{Established, LinkError, LinkId, LinkInput, LinkSender, LocalInfo, PeerInfo};
use crate::pause::Pauses;
use crate::{quic, tls};

pub(crate) use direct::{Direct, Queue};

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
    /// Time to look at the revocation list's file and at certificate expiry.
    TrustSweep,
}

/// Longest a stopping router waits for its links' closes to be sent and answered.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

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
    let gate = Gate::new(crate::admission::AdmissionLimits::of(&config.link));
    let (stopping_tx, stopping) = watch::channel(false);
    let (router_links_down_tx, router_links_down) = watch::channel(0u64);
    let rt = Runtime {
        core: Router::new(
            config::routing_config(id, &config.timers, config.link.client_max_names),
            Instant::now(),
        ),
        links: HashMap::new(),
        peers: replace::Links::new(id, replace::Policy::default()),
        replacements: ReplaceStats::default(),
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
        router_links_down: router_links_down_tx,
        armed: None,
        trust: trust::Trust::new(config.identity.revoked.clone()),
    };
    let direct = Arc::new(Direct::new(rt, queued.clone()));
    let shared = Shared {
        me,
        config: config.clone(),
        ep: ep.clone(),
        cmd: cmd_tx.clone(),
        inbound: Inbound::routed(direct.clone(), Queue::new(in_tx, queued), pauses.clone())
            .with_client_quotas(Arc::new(crate::quota::ClientQuotas::new(
                config.link.client_quota,
            ))),
        next_link,
        gate: gate.clone(),
        stopping,
        router_links_down,
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
    tokio::spawn(trust_sweeps(shared.clone()));
    let dialers: Vec<_> = config
        .connect
        .iter()
        .map(|peer| tokio::spawn(dial::dial_loop(shared.clone(), peer.clone())))
        .collect();
    info!(router = %config.identity.name, id = format_args!("{id:#018x}"), quic = ?quic_addr, tcp = ?tcp_addr, "router started");
    let gate_at_exit = gate;
    let looped = direct.clone();
    let closing = ep.clone();
    let task = tokio::spawn(async move {
        routing_loop::run(looped, cmd_rx, in_rx, ep).await;
        // The links' closes are only queued so far: without this the process can exit before
        // they are sent, and its peers keep routing into the dead links until their idle
        // timeout. Bounded: a peer that does not answer is not waited for.
        let since = Instant::now();
        let closed = tokio::time::timeout(CLOSE_WAIT, closing.wait_idle()).await;
        tracing::debug!(
            "links closed in {:?}{}",
            since.elapsed(),
            if closed.is_err() {
                " (not all answered)"
            } else {
                ""
            }
        );
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
    /// Counts links to peer routers gone down: what a dialer refused as the losing half of a
    /// simultaneous dial waits for (the peer's link to this router is up until then).
    router_links_down: watch::Receiver<u64>,
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

/// Sends the routing loop a [`Command::TrustSweep`] every [`trust::SWEEP_EVERY`].
async fn trust_sweeps(shared: Shared) {
    let mut tick = tokio::time::interval(trust::SWEEP_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shared.stopping() => return,
        }
        if shared.cmd.send(Command::TrustSweep).await.is_err() {
            return;
        }
    }
}

struct LinkEntry {
    tx: LinkSender,
    peer: PeerInfo,
    /// Dialers waiting for this peer's link to end before they dial again: the one that
    /// dialed it, and any whose own link to the same router was closed in its favour.
    down: Vec<oneshot::Sender<()>>,
}

struct Runtime {
    core: Router,
    links: HashMap<LinkId, LinkEntry>,
    /// The one link kept per peer router, and which of two links to keep ([`replace`]).
    peers: replace::Links,
    replacements: ReplaceStats,
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
    /// Counts links to peer routers gone down ([`Shared::router_links_down`]).
    router_links_down: watch::Sender<u64>,
    /// The routing timer the loop sleeps to (see [`Runtime::timer_moved_earlier`]).
    armed: Option<Instant>,
    /// The revocation list held, and what became of lists and revoked links.
    trust: trust::Trust,
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
                est,
                dialed,
                down,
            } => self.link_up(link, *est, dialed, down, now),
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
            Command::TrustSweep => self.trust_sweep(now),
        }
    }

    fn input(&mut self, link: LinkId, input: LinkInput, now: Instant) {
        match input {
            LinkInput::Frame(roam_proto::Frame::Data { origin, envelope }) => {
                self.core.handle_data(now, link, origin, envelope)
            }
            LinkInput::Frame(roam_proto::Frame::Revocations(list)) => {
                self.revocations_in(link, list)
            }
            LinkInput::Frame(f) => {
                tracing::debug!(link, frame = ?f, "control frame");
                let lsa = matches!(f, roam_proto::Frame::Lsa(_));
                let refused = self.core.names_refused_from(link);
                self.core.handle_frame(now, link, f);
                if lsa {
                    self.tell_links_who_forwards();
                }
                if refused == 0 && self.core.names_refused_from(link) > 0 {
                    self.warn_names_refused(link);
                }
            }
            LinkInput::Closed(reason) => {
                // A link replaced earlier was already taken down: its end changes nothing.
                if let Some(entry) = self.remove_link(link, &reason, now) {
                    for d in entry.down {
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
}
