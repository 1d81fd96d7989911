//! A deterministic network simulator for routing tests.
//!
//! Routers and clients are joined by virtual wires with a fixed latency each; frames on a wire
//! arrive in order. Time is virtual (one `Instant::now()` at start, then advanced by
//! durations; nothing sleeps), and `step()` jumps to the next arrival or router timer. A
//! seeded `SmallRng` makes topologies and failures reproducible. A wire that is cut is never
//! revived: restoring a connection builds a new wire with fresh link ids, as the shell would.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use roam_proto::envelope::EnvelopeHeader;
use roam_proto::frame::Role;
use roam_proto::{EnvelopeFlags, Frame, Name, RouterId};

use crate::{Config, Event, LinkId, Router};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Router(usize, LinkId),
    Client(usize),
}

struct Wire {
    a: End,
    b: End,
    latency: Duration,
    up: bool,
}

struct Arrival {
    at: Instant,
    seq: u64,
    wire: usize,
    to: End,
    frame: Frame,
}

impl PartialEq for Arrival {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Arrival {}
impl PartialOrd for Arrival {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Arrival {
    // Reversed: BinaryHeap is a max-heap and we want the earliest arrival first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// A client program (`roam pub`/`roam sub`) attached to one router.
pub(crate) struct Client {
    pub node: usize,
    wire: usize,
    publishes: Vec<Name>,
    subscribes: Vec<Name>,
    /// Copies received per (session, seq) of each envelope.
    pub received: HashMap<(u64, u64), u32>,
    /// Demand the router last signalled per published name.
    pub wanted: HashMap<Name, bool>,
}

pub(crate) struct Sim {
    pub now: Instant,
    pub routers: Vec<Router>,
    pub clients: Vec<Client>,
    wires: Vec<Wire>,
    by_end: HashMap<(usize, LinkId), usize>,
    queue: BinaryHeap<Arrival>,
    seq: u64,
    next_link: LinkId,
    pub rng: SmallRng,
    /// In-process deliveries per router, per (session, seq).
    pub local_rx: Vec<HashMap<(u64, u64), u32>>,
    /// Demand events per router, in order.
    pub demand: Vec<Vec<(Name, bool)>>,
    pub steps: u64,
    pub step_cap: u64,
    /// Frames delivered per kind, for tests that print traffic figures.
    pub frames: std::collections::BTreeMap<&'static str, u64>,
}

/// Test timers: short enough that refresh and expiry run within a simulated minute.
/// Brings up a router link to `peer` on `link` and confirms the edge with the LSA `peer`
/// would send (listing `r` as its only neighbour): the usual start of a single-router test.
pub(crate) fn add_neighbour(r: &mut Router, now: Instant, link: LinkId, peer: RouterId) {
    r.link_up(now, link, roam_proto::frame::Role::Router, peer);
    let lsa = roam_proto::frame::Lsa {
        origin: peer,
        seq: 1,
        lifetime_s: 60,
        neighbours: vec![r.id()],
    };
    r.handle_frame(now, link, Frame::Lsa(lsa));
}

pub(crate) fn config(id: RouterId, initial_seq: u64) -> Config {
    Config {
        router_id: id,
        initial_seq,
        lsa_refresh: Duration::from_secs(10),
        lsa_lifetime: Duration::from_secs(40),
        advert_refresh: Duration::from_secs(10),
        advert_lifetime: Duration::from_secs(40),
        sub_refresh: Duration::from_secs(10),
        sub_lifetime: Duration::from_secs(40),
        query_ttl: 16,
        withdraw_linger: Duration::from_millis(500),
        client_max_names: crate::router::DEFAULT_CLIENT_MAX_NAMES,
    }
}

/// A well-formed envelope header with an empty sealed payload; routers read only the name.
pub(crate) fn envelope(name: Name, session: u64, seq: u64) -> Bytes {
    let mut v = Vec::new();
    EnvelopeHeader {
        flags: EnvelopeFlags(0),
        epoch: 0,
        name,
        session,
        seq,
        send_time_us: 0,
    }
    .write(&mut v);
    v.extend_from_slice(&[0u8; roam_proto::envelope::TAG_LEN]);
    Bytes::from(v)
}

pub(crate) fn name(n: u8) -> Name {
    Name([n; 32])
}

impl Sim {
    pub fn new(seed: u64) -> Self {
        Self {
            now: Instant::now(),
            routers: Vec::new(),
            clients: Vec::new(),
            wires: Vec::new(),
            by_end: HashMap::new(),
            queue: BinaryHeap::new(),
            seq: 0,
            next_link: 1,
            rng: SmallRng::seed_from_u64(seed),
            local_rx: Vec::new(),
            demand: Vec::new(),
            steps: 0,
            step_cap: 5_000_000,
            frames: Default::default(),
        }
    }

    /// Adds a router with id `node + 1`; returns its node index.
    pub fn add_router(&mut self) -> usize {
        let node = self.routers.len();
        self.routers
            .push(Router::new(config(node as RouterId + 1, 1), self.now));
        self.local_rx.push(HashMap::new());
        self.demand.push(Vec::new());
        node
    }

    pub fn id(&self, node: usize) -> RouterId {
        self.routers[node].id()
    }

    fn link_id(&mut self) -> LinkId {
        self.next_link += 1;
        self.next_link
    }

    /// Joins two routers; returns the wire index.
    pub fn connect(&mut self, a: usize, b: usize, latency: Duration) -> usize {
        let (la, lb) = (self.link_id(), self.link_id());
        let w = self.wires.len();
        self.wires.push(Wire {
            a: End::Router(a, la),
            b: End::Router(b, lb),
            latency,
            up: true,
        });
        self.by_end.insert((a, la), w);
        self.by_end.insert((b, lb), w);
        let (ida, idb) = (self.id(a), self.id(b));
        self.routers[a].link_up(self.now, la, Role::Router, idb);
        self.drain(a);
        self.routers[b].link_up(self.now, lb, Role::Router, ida);
        self.drain(b);
        w
    }

    /// Joins two routers with a random latency of 1-20 ms.
    pub fn connect_random(&mut self, a: usize, b: usize) -> usize {
        let ms = self.rng.gen_range(1..=20);
        self.connect(a, b, Duration::from_millis(ms))
    }

    /// Cuts a wire: frames in flight are lost, both routers see the link go down.
    pub fn cut(&mut self, w: usize) {
        if !self.wires[w].up {
            return;
        }
        self.wires[w].up = false;
        for end in [self.wires[w].a, self.wires[w].b] {
            if let End::Router(node, link) = end {
                self.routers[node].link_down(self.now, link);
                self.drain(node);
            }
        }
    }

    /// The router nodes a wire joins, if it joins two routers.
    pub fn wire_nodes(&self, w: usize) -> Option<(usize, usize)> {
        match (self.wires[w].a, self.wires[w].b) {
            (End::Router(a, _), End::Router(b, _)) => Some((a, b)),
            _ => None,
        }
    }

    /// Puts a frame on the wire from router `from` to router `to`, as if `from` sent it (to
    /// play a misbehaving or out-of-date neighbour).
    pub fn inject(&mut self, from: usize, to: usize, frame: Frame) {
        let found = (0..self.wires.len()).find_map(|w| {
            match (self.wires[w].up, self.wires[w].a, self.wires[w].b) {
                (true, End::Router(a, _), End::Router(b, lb)) if (a, b) == (from, to) => {
                    Some((w, End::Router(b, lb)))
                }
                (true, End::Router(a, la), End::Router(b, _)) if (b, a) == (from, to) => {
                    Some((w, End::Router(a, la)))
                }
                _ => None,
            }
        });
        let Some((w, end)) = found else {
            panic!("no wire {from} -> {to}")
        };
        let latency = self.wires[w].latency;
        self.enqueue(w, end, latency, frame);
    }

    pub fn wire_up(&self, w: usize) -> bool {
        self.wires[w].up
    }

    /// Attaches a client program to router `node` (2 ms away).
    pub fn add_client(&mut self, node: usize) -> usize {
        let cid = self.clients.len();
        self.clients.push(Client {
            node,
            wire: 0,
            publishes: Vec::new(),
            subscribes: Vec::new(),
            received: HashMap::new(),
            wanted: HashMap::new(),
        });
        self.attach(cid);
        cid
    }

    fn attach(&mut self, cid: usize) {
        let node = self.clients[cid].node;
        let link = self.link_id();
        let w = self.wires.len();
        self.wires.push(Wire {
            a: End::Client(cid),
            b: End::Router(node, link),
            latency: Duration::from_millis(2),
            up: true,
        });
        self.by_end.insert((node, link), w);
        self.clients[cid].wire = w;
        self.routers[node].link_up(self.now, link, Role::Client, 0);
        self.drain(node);
        // A reconnecting client re-announces what it does, like `roam pub/sub` would.
        let (p, s) = (
            self.clients[cid].publishes.clone(),
            self.clients[cid].subscribes.clone(),
        );
        if !p.is_empty() {
            self.client_frame(cid, Frame::Publish(p));
        }
        if !s.is_empty() {
            self.client_frame(cid, Frame::Subscribe(s));
        }
    }

    /// Disconnects a client (its router sees the link go down).
    pub fn detach(&mut self, cid: usize) {
        let w = self.clients[cid].wire;
        self.cut(w);
    }

    fn client_frame(&mut self, cid: usize, frame: Frame) {
        let w = self.clients[cid].wire;
        let (to, latency) = (self.wires[w].b, self.wires[w].latency);
        self.enqueue(w, to, latency, frame);
    }

    pub fn publish(&mut self, cid: usize, n: Name) {
        self.clients[cid].publishes.push(n);
        self.client_frame(cid, Frame::Publish(vec![n]));
    }

    pub fn unpublish(&mut self, cid: usize, n: Name) {
        self.clients[cid].publishes.retain(|&x| x != n);
        self.client_frame(cid, Frame::Unpublish(vec![n]));
    }

    pub fn subscribe(&mut self, cid: usize, n: Name) {
        self.clients[cid].subscribes.push(n);
        self.client_frame(cid, Frame::Subscribe(vec![n]));
    }

    pub fn unsubscribe(&mut self, cid: usize, n: Name) {
        self.clients[cid].subscribes.retain(|&x| x != n);
        self.client_frame(cid, Frame::Unsubscribe(vec![n]));
    }

    /// The client sends message `seq` on `n`; its session is `1000 + cid`.
    pub fn send(&mut self, cid: usize, n: Name, seq: u64) {
        let env = envelope(n, session_of(cid), seq);
        self.client_frame(
            cid,
            Frame::Data {
                origin: 0,
                envelope: env,
            },
        );
    }

    /// Replaces router `node` with a fresh instance (same id, larger `initial_seq`), as after a
    /// process restart: all its links drop and come back, its clients reconnect.
    pub fn restart(&mut self, node: usize, initial_seq: u64) {
        let mut peers = Vec::new();
        let mut clients = Vec::new();
        for w in 0..self.wires.len() {
            if !self.wires[w].up {
                continue;
            }
            match (self.wires[w].a, self.wires[w].b) {
                (End::Router(a, _), End::Router(b, _)) if a == node || b == node => {
                    peers.push((if a == node { b } else { a }, self.wires[w].latency));
                    self.wires[w].up = false;
                    for end in [self.wires[w].a, self.wires[w].b] {
                        if let End::Router(n, link) = end {
                            if n != node {
                                self.routers[n].link_down(self.now, link);
                                self.drain(n);
                            }
                        }
                    }
                }
                (End::Client(c), End::Router(n, _)) if n == node => {
                    self.wires[w].up = false;
                    clients.push(c);
                }
                _ => {}
            }
        }
        self.routers[node] = Router::new(config(node as RouterId + 1, initial_seq), self.now);
        for (p, latency) in peers {
            self.connect(node, p, latency);
        }
        for c in clients {
            self.attach(c);
        }
    }

    fn enqueue(&mut self, wire: usize, to: End, latency: Duration, frame: Frame) {
        self.seq += 1;
        self.queue.push(Arrival {
            at: self.now + latency,
            seq: self.seq,
            wire,
            to,
            frame,
        });
    }

    /// Moves everything router `node` produced onto wires and into the records.
    pub fn drain(&mut self, node: usize) {
        while let Some(t) = self.routers[node].poll_transmit() {
            let Some(&w) = self.by_end.get(&(node, t.link)) else {
                panic!("router {node} sent on unknown link {}", t.link)
            };
            if !self.wires[w].up {
                continue;
            }
            let wire = &self.wires[w];
            let to = if wire.a == End::Router(node, t.link) {
                wire.b
            } else {
                wire.a
            };
            let latency = wire.latency;
            self.enqueue(w, to, latency, t.frame);
        }
        while let Some(e) = self.routers[node].poll_event() {
            match e {
                Event::Deliver { envelope, .. } => {
                    if let Ok(h) = EnvelopeHeader::parse(&envelope) {
                        *self.local_rx[node].entry((h.session, h.seq)).or_default() += 1;
                    }
                }
                Event::Demand { name, wanted } => self.demand[node].push((name, wanted)),
            }
        }
    }

    fn next_timer(&self) -> Option<(Instant, usize)> {
        self.routers
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.poll_timeout().map(|t| (t, i)))
            .min()
    }

    /// Runs the next arrival or timer; false if there is nothing left to do.
    pub fn step(&mut self) -> bool {
        self.steps += 1;
        assert!(
            self.steps <= self.step_cap,
            "step cap reached: the network does not settle"
        );
        let msg = self.queue.peek().map(|a| a.at);
        let timer = self.next_timer();
        match (msg, timer) {
            (Some(m), t) if t.is_none_or(|(t, _)| m <= t) => {
                let Some(a) = self.queue.pop() else {
                    return false;
                };
                self.now = self.now.max(a.at);
                self.deliver(a);
            }
            (_, Some((t, node))) => {
                self.now = self.now.max(t);
                self.routers[node].handle_timeout(self.now);
                self.drain(node);
            }
            (None, None) => return false,
            (Some(_), None) => unreachable!(),
        }
        true
    }

    fn deliver(&mut self, a: Arrival) {
        if !self.wires[a.wire].up {
            return;
        }
        *self.frames.entry(kind(&a.frame)).or_default() += 1;
        match a.to {
            End::Router(node, link) => {
                self.routers[node].handle_frame(self.now, link, a.frame);
                self.drain(node);
            }
            End::Client(cid) => {
                let c = &mut self.clients[cid];
                match a.frame {
                    Frame::Data { envelope, .. } => {
                        if let Ok(h) = EnvelopeHeader::parse(&envelope) {
                            *c.received.entry((h.session, h.seq)).or_default() += 1;
                        }
                    }
                    Frame::Subscribe(names) => names.iter().for_each(|n| {
                        c.wanted.insert(*n, true);
                    }),
                    Frame::Unsubscribe(names) => names.iter().for_each(|n| {
                        c.wanted.insert(*n, false);
                    }),
                    _ => {}
                }
            }
        }
    }

    /// Runs everything due within `d` of virtual time, then sets the clock to the end.
    pub fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        loop {
            let next = [
                self.queue.peek().map(|a| a.at),
                self.next_timer().map(|(t, _)| t),
            ]
            .into_iter()
            .flatten()
            .min();
            match next {
                Some(t) if t <= end => {
                    self.step();
                }
                _ => break,
            }
        }
        self.now = end;
    }

    /// Checks that each subscriber got each (publisher, seq) exactly once.
    pub fn assert_exactly_once(&self, subs: &[usize], pubs: &[usize], seqs: std::ops::Range<u64>) {
        for &s in subs {
            for &p in pubs {
                for q in seqs.clone() {
                    let got = self.clients[s]
                        .received
                        .get(&(session_of(p), q))
                        .copied()
                        .unwrap_or(0);
                    assert_eq!(got, 1, "subscriber {s} (router {}) got message {q} of publisher {p} (router {}) {got} times", self.clients[s].node, self.clients[p].node);
                }
            }
        }
    }
}

pub(crate) fn session_of(cid: usize) -> u64 {
    1000 + cid as u64
}

fn kind(f: &Frame) -> &'static str {
    match f {
        Frame::Hello { .. } => "hello",
        Frame::Lsa(_) => "lsa",
        Frame::Advertise(_) => "advertise",
        Frame::Subscribe(_) => "subscribe",
        Frame::Unsubscribe(_) => "unsubscribe",
        Frame::Publish(_) => "publish",
        Frame::Unpublish(_) => "unpublish",
        Frame::Query { .. } => "query",
        Frame::Data { .. } => "data",
        Frame::Revocations(_) => "revocations",
    }
}
