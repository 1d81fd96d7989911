//! The public API and the glue between the tables. Control frames are handled in
//! `control.rs`, interest and demand in `interest.rs`, data in `forward.rs`.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use roam_proto::frame::{Advert, Role};
use roam_proto::{Frame, Name, RouterId};

use crate::hash::{mix64, Map, Seeded, Set};
use crate::lsdb::Lsdb;
use crate::outbox::Outbox;
use crate::rib::Rib;
use crate::subs::Subs;

/// The shell's handle for one link (assigned by the shell, never reused while up).
pub type LinkId = u32;

/// Names the RIB holds at most; adverts for further names are dropped (a peer cannot make us
/// grow without bound).
const MAX_RIB_NAMES: usize = 16_000_000;
/// Names with subscription state at most.
const MAX_SUB_NAMES: usize = 16_000_000;

/// Names a client link holds at most by default: a client holds a few per topic (data,
/// announcements, repairs), more per service and action and a few for the realm (a
/// `roam sub` holds five), so a large robot's proxy a few thousand; a program holding this
/// many is filling the router, not using it.
pub const DEFAULT_CLIENT_MAX_NAMES: usize = 20_000;

/// Timers and identity of one router.
#[derive(Debug, Clone)]
pub struct Config {
    pub router_id: RouterId,
    /// First LSA/advert sequence number; the shell passes wall-clock microseconds so a
    /// restarted router's announcements supersede its previous life's.
    pub initial_seq: u64,
    pub lsa_refresh: Duration,
    pub lsa_lifetime: Duration,
    pub advert_refresh: Duration,
    pub advert_lifetime: Duration,
    pub sub_refresh: Duration,
    pub sub_lifetime: Duration,
    pub query_ttl: u8,
    /// How long a name stays advertised after its last publisher leaves. Data the publisher
    /// sent just before leaving travels on its own stream and can be overtaken by a
    /// withdrawal on the control stream; lingering lets it reach every subscriber first.
    pub withdraw_linger: Duration,
    /// Names one client link may hold (subscriptions and publications together); further
    /// ones are refused and counted on the link, so one client cannot fill the router's
    /// tables. 0: no limit beyond the tables' own.
    pub client_max_names: usize,
}

impl Config {
    /// Defaults: refresh every 30 s (adverts 60 s), lifetimes four refreshes, 8-hop queries.
    pub fn default_for(router_id: RouterId) -> Self {
        Self {
            router_id,
            initial_seq: 1,
            lsa_refresh: Duration::from_secs(30),
            lsa_lifetime: Duration::from_secs(120),
            advert_refresh: Duration::from_secs(60),
            advert_lifetime: Duration::from_secs(240),
            sub_refresh: Duration::from_secs(30),
            sub_lifetime: Duration::from_secs(120),
            query_ttl: 8,
            withdraw_linger: Duration::from_secs(2),
            client_max_names: DEFAULT_CLIENT_MAX_NAMES,
        }
    }

    /// How often lapsed LSAs, adverts and subscriptions are swept out.
    pub(crate) fn sweep_interval(&self) -> Duration {
        let shortest = self
            .lsa_lifetime
            .min(self.advert_lifetime)
            .min(self.sub_lifetime);
        (shortest / 4).max(Duration::from_millis(250))
    }
}

/// A frame to send on a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    pub link: LinkId,
    pub frame: Frame,
}

/// Something for the in-process endpoints of this router.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Data for a name that an in-process subscriber ([`Router::subscribe_local`]) wants.
    Deliver {
        name: Name,
        origin: RouterId,
        envelope: Bytes,
    },
    /// Whether anyone (remote or another local endpoint) now wants a name this router's
    /// in-process publisher ([`Router::publish_local`]) publishes.
    Demand { name: Name, wanted: bool },
}

/// Counters and table sizes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub data_in: u64,
    pub data_forwarded: u64,
    pub data_delivered_local: u64,
    /// Data for a name nobody wants here.
    pub data_no_route: u64,
    /// Data that arrived on a link other than the reverse path to its origin (dropped).
    pub data_rpf_drop: u64,
    pub frames_control_in: u64,
    pub names: u64,
    pub routers_known: u64,
    /// Data whose envelope header could not be read (dropped).
    pub data_malformed: u64,
    /// Data on a link that is not up (dropped).
    pub data_unknown_link: u64,
    /// Names with any subscription state here.
    pub subscribed_names: u64,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct LinkInfo {
    pub role: Role,
    pub peer: RouterId,
    /// Data from this link that no one here or beyond wanted (counted per source, so a
    /// flood on names nobody subscribes to names its sender).
    pub no_route: u64,
    /// Names a client link holds now (subscriptions and publications), against
    /// [`Config::client_max_names`].
    pub names: usize,
    /// Subscriptions and publications refused for that limit.
    pub names_refused: u64,
}

/// Who publishes a name on this router, and whether each publisher was told it is wanted.
#[derive(Debug, Default)]
pub(crate) struct Publisher {
    pub clients: Vec<(LinkId, bool)>,
    pub local: u32,
    pub local_wanted: bool,
    /// Set when the last publisher left: the withdrawal is due then.
    pub linger_until: Option<Instant>,
}

impl Publisher {
    fn is_live(&self) -> bool {
        self.local > 0 || !self.clients.is_empty() || self.linger_until.is_some()
    }

    fn has_publishers(&self) -> bool {
        self.local > 0 || !self.clients.is_empty()
    }
}

/// Who is adding or removing a publication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Local,
    Client(LinkId),
}

/// Recently seen query ids, bounded: oldest forgotten first.
pub(crate) const MAX_SEEN_QUERIES: usize = 4096;

/// All routing state of one router. See the crate documentation for the poll order.
pub struct Router {
    pub(crate) cfg: Config,
    pub(crate) me: RouterId,
    base: Instant,
    pub(crate) links: Map<LinkId, LinkInfo>,
    /// Peer router id -> the link to it (the shell keeps at most one per peer).
    pub(crate) router_links: BTreeMap<RouterId, LinkId>,
    pub(crate) lsdb: Lsdb,
    pub(crate) rib: Rib,
    pub(crate) subs: Subs,
    pub(crate) published: Map<Name, Publisher>,
    pub(crate) out: Outbox,
    pub(crate) events: VecDeque<Event>,
    pub(crate) stats: Stats,
    pub(crate) lsa_seq: u64,
    pub(crate) advert_seq: u64,
    query_counter: u64,
    seen_queries: Set<u64>,
    pub(crate) seen_order: VecDeque<u64>,
    pub(crate) next_lsa: Instant,
    pub(crate) next_advert: Instant,
    pub(crate) next_sub: Instant,
    pub(crate) next_sweep: Instant,
    /// Names whose last publisher left, in the order their withdrawals fall due.
    pub(crate) lingering: VecDeque<(Instant, Name)>,
}

impl Router {
    pub fn new(config: Config, now: Instant) -> Self {
        let me = config.router_id;
        let hasher = Seeded(mix64(me, config.initial_seq));
        let mut lsdb = Lsdb::new(me, hasher);
        lsdb.set_own(config.initial_seq, secs(config.lsa_lifetime), &[]);
        Self {
            me,
            base: now,
            links: Map::with_hasher(hasher),
            router_links: BTreeMap::new(),
            lsdb,
            rib: Rib::new(hasher, MAX_RIB_NAMES),
            subs: Subs::new(hasher, MAX_SUB_NAMES),
            published: Map::with_hasher(hasher),
            out: Outbox::default(),
            events: VecDeque::new(),
            stats: Stats::default(),
            lsa_seq: config.initial_seq,
            advert_seq: config.initial_seq,
            query_counter: 0,
            lingering: VecDeque::new(),
            seen_queries: Set::with_hasher(hasher),
            seen_order: VecDeque::new(),
            next_lsa: now + config.lsa_refresh,
            next_advert: now + config.advert_refresh,
            next_sub: now + config.sub_refresh,
            next_sweep: now + config.sweep_interval(),
            cfg: config,
        }
    }

    pub fn id(&self) -> RouterId {
        self.me
    }

    pub fn link_up(&mut self, now: Instant, link: LinkId, role: Role, peer: RouterId) {
        if self.links.contains_key(&link) {
            self.link_down(now, link);
        }
        self.links.insert(
            link,
            LinkInfo {
                role,
                peer,
                no_route: 0,
                names: 0,
                names_refused: 0,
            },
        );
        if role == Role::Router && peer != self.me {
            if let Some(old) = self.router_links.get(&peer).copied() {
                self.link_down(now, old);
            }
            self.router_links.insert(peer, link);
            self.originate_lsa();
            // Our own LSA went out with the flood above; the rest of the LSDB and every
            // advert we hold bring the new neighbour up to date.
            let lsas: Vec<_> = self.lsdb.all().filter(|l| l.origin != self.me).collect();
            for lsa in lsas {
                self.out.push(link, Frame::Lsa(lsa));
            }
            let now_s = self.now_s(now);
            let ads: Vec<Advert> = self.rib.all(now_s).collect();
            self.out.adverts(link, &ads);
        }
        self.settle(now);
    }

    pub fn link_down(&mut self, now: Instant, link: LinkId) {
        let Some(info) = self.links.remove(&link) else {
            return;
        };
        self.out.forget(link);
        let mut affected = Vec::new();
        self.subs.drop_link(link, &mut affected);
        match info.role {
            Role::Router => {
                if self.router_links.get(&info.peer) == Some(&link) {
                    self.router_links.remove(&info.peer);
                    self.originate_lsa();
                }
            }
            Role::Client => {
                let names: Vec<Name> = self
                    .published
                    .iter()
                    .filter(|(_, p)| p.clients.iter().any(|&(l, _)| l == link))
                    .map(|(n, _)| *n)
                    .collect();
                let mut ads = Vec::new();
                for n in names {
                    ads.extend(self.remove_publisher(now, n, Source::Client(link)));
                    affected.push(n);
                }
                self.flood_adverts(&ads, None);
            }
        }
        self.settle(now);
        for n in affected {
            self.recompute(now, n);
        }
        self.out.flush();
    }

    /// Any frame received on `link` (control or data).
    pub fn handle_frame(&mut self, now: Instant, link: LinkId, frame: Frame) {
        if let Frame::Data { origin, envelope } = frame {
            self.handle_data(now, link, origin, envelope);
            return;
        }
        self.stats.frames_control_in += 1;
        self.on_control(now, link, frame);
        self.settle(now);
    }

    /// The data fast path: no allocation beyond pushing transmits.
    pub fn handle_data(&mut self, now: Instant, link: LinkId, origin: RouterId, envelope: Bytes) {
        self.on_data(now, link, origin, envelope);
    }

    pub fn publish_local(&mut self, now: Instant, name: Name) {
        let ads: Vec<Advert> = self
            .add_publisher(now, name, Source::Local)
            .into_iter()
            .collect();
        self.flood_adverts(&ads, None);
        self.recompute(now, name);
        self.settle(now);
    }

    pub fn unpublish_local(&mut self, now: Instant, name: Name) {
        let ads: Vec<Advert> = self
            .remove_publisher(now, name, Source::Local)
            .into_iter()
            .collect();
        self.flood_adverts(&ads, None);
        self.recompute(now, name);
        self.settle(now);
    }

    pub fn subscribe_local(&mut self, now: Instant, name: Name) {
        self.subs.add_local(name);
        self.recompute(now, name);
        self.settle(now);
    }

    pub fn unsubscribe_local(&mut self, now: Instant, name: Name) {
        self.subs.remove_local(&name);
        self.recompute(now, name);
        self.settle(now);
    }

    /// Data from an in-process publisher; this router is its origin. (A publisher's backlog
    /// can still be draining after it unpublished: see [`Self::keep_lingering`].)
    pub fn send_local(&mut self, now: Instant, name: Name, envelope: Bytes) {
        self.keep_lingering(now, name);
        self.stats.data_in += 1;
        self.fan_out(None, self.me, name, envelope);
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        self.on_timeout(now);
        self.settle(now);
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        let t = self
            .next_lsa
            .min(self.next_advert)
            .min(self.next_sub)
            .min(self.next_sweep);
        Some(self.lingering.front().map_or(t, |&(due, _)| t.min(due)))
    }

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop()
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Data messages from `link` dropped for want of a route (0 for a link not up).
    pub fn no_route_from(&self, link: LinkId) -> u64 {
        self.links.get(&link).map_or(0, |i| i.no_route)
    }

    /// Subscriptions and publications refused to `link` for its name limit
    /// ([`Config::client_max_names`]; 0 for a link not up).
    pub fn names_refused_from(&self, link: LinkId) -> u64 {
        self.links.get(&link).map_or(0, |i| i.names_refused)
    }

    /// Names `link` holds now (subscriptions and publications of a client link).
    pub fn names_held_by(&self, link: LinkId) -> usize {
        self.links.get(&link).map_or(0, |i| i.names)
    }

    pub fn stats(&self) -> Stats {
        Stats {
            names: self.rib.len() as u64,
            routers_known: self.lsdb.len() as u64,
            subscribed_names: self.subs.len() as u64,
            ..self.stats
        }
    }

    /// Names in the RIB (live or withdrawn).
    pub fn names_len(&self) -> usize {
        self.rib.len()
    }

    /// Approximate bytes used by the RIB.
    pub fn rib_memory_estimate(&self) -> usize {
        self.rib.memory_estimate()
    }

    /// Whether some live, reachable origin (possibly this router) advertises `name`.
    pub fn has_route(&mut self, now: Instant, name: &Name) -> bool {
        let now_s = self.now_s(now);
        let me = self.me;
        let lsdb = &mut self.lsdb;
        self.rib
            .origins(name)
            .iter()
            .any(|o| o.is_live(now_s) && (o.origin == me || lsdb.reachable(o.origin)))
    }

    /// The current RPF neighbour towards `origin`, if reachable.
    /// Whether a neighbour forwards: its LSA names routers besides this one, or it sent none
    /// yet (assumed to). A neighbour that does not only delivers to its own subscribers (a
    /// proxy linked to this proxy alone).
    pub fn forwards(&self, peer: RouterId) -> bool {
        self.lsdb.has_others(peer).unwrap_or(true)
    }

    pub fn parent_of(&mut self, origin: RouterId) -> Option<RouterId> {
        self.lsdb.tree(origin).parent
    }

    // ---- helpers shared by the other impl blocks ----

    /// Whole seconds since this router was created (the RIB's clock).
    pub(crate) fn now_s(&self, now: Instant) -> u32 {
        now.saturating_duration_since(self.base)
            .as_secs()
            .min(u32::MAX as u64) as u32
    }

    /// Re-announces our LSA (new sequence number) to every router neighbour.
    pub(crate) fn originate_lsa(&mut self) {
        self.lsa_seq += 1;
        let neighbours: Vec<RouterId> = self.router_links.keys().copied().collect();
        let lifetime_s = secs(self.cfg.lsa_lifetime);
        self.lsdb.set_own(self.lsa_seq, lifetime_s, &neighbours);
        let lsa = roam_proto::frame::Lsa {
            origin: self.me,
            seq: self.lsa_seq,
            lifetime_s,
            neighbours,
        };
        for &l in self.router_links.values() {
            self.out.push(l, Frame::Lsa(lsa.clone()));
        }
    }

    /// A fresh advert of ours for `name`, stored in our own RIB.
    pub(crate) fn originate_advert(&mut self, now: Instant, name: Name, withdrawn: bool) -> Advert {
        self.advert_seq += 1;
        let a = Advert {
            name,
            origin: self.me,
            seq: self.advert_seq,
            lifetime_s: secs(self.cfg.advert_lifetime),
            withdrawn,
        };
        let now_s = self.now_s(now);
        self.rib.apply(now_s, &a);
        a
    }

    /// Sends adverts to every router link except `except`.
    pub(crate) fn flood_adverts(&mut self, ads: &[Advert], except: Option<LinkId>) {
        if ads.is_empty() {
            return;
        }
        for &l in self.router_links.values() {
            if Some(l) != except {
                self.out.adverts(l, ads);
            }
        }
    }

    /// Registers a publisher; returns the advert to flood if the name just became published.
    pub(crate) fn add_publisher(
        &mut self,
        now: Instant,
        name: Name,
        who: Source,
    ) -> Option<Advert> {
        let p = self.published.entry(name).or_default();
        let was_live = p.is_live();
        p.linger_until = None;
        match who {
            Source::Local => p.local += 1,
            Source::Client(l) => {
                if !p.clients.iter().any(|&(c, _)| c == l) {
                    p.clients.push((l, false));
                }
            }
        }
        (!was_live).then(|| self.originate_advert(now, name, false))
    }

    /// Removes a publisher; returns the withdrawal to flood if it was the last one.
    pub(crate) fn remove_publisher(
        &mut self,
        now: Instant,
        name: Name,
        who: Source,
    ) -> Option<Advert> {
        let p = self.published.get_mut(&name)?;
        match who {
            Source::Local => {
                if p.local == 0 {
                    return None;
                }
                p.local -= 1;
                if p.local == 0 {
                    p.local_wanted = false;
                }
            }
            Source::Client(l) => p.clients.retain(|&(c, _)| c != l),
        }
        if p.has_publishers() || p.linger_until.is_some() {
            return None;
        }
        let due = now + self.cfg.withdraw_linger;
        p.linger_until = Some(due);
        self.lingering.push_back((due, name));
        None
    }

    /// Data from a client for a name whose last publisher has left keeps the name advertised
    /// until `withdraw_linger` after it. A publisher that quits with messages still queued
    /// on a slow link sends its unpublish ahead of them (control frames go first, or on
    /// their own stream), and those messages must still find their subscribers however long
    /// they take to drain. The name is queued again at most every half linger, so a long
    /// drain adds an entry a second, not one per message; free while nothing lingers.
    pub(crate) fn keep_lingering(&mut self, now: Instant, name: Name) {
        if self.lingering.is_empty() {
            return;
        }
        let Some(p) = self.published.get_mut(&name) else {
            return;
        };
        let Some(due) = p.linger_until else {
            return;
        };
        let wanted = now + self.cfg.withdraw_linger;
        if wanted.saturating_duration_since(due) >= self.cfg.withdraw_linger / 2 {
            p.linger_until = Some(wanted);
            self.lingering.push_back((wanted, name));
        }
    }

    /// Withdraws names whose linger has run out and that no publisher took up again.
    pub(crate) fn withdraw_lingering(&mut self, now: Instant) {
        let mut ads = Vec::new();
        while let Some(&(due, name)) = self.lingering.front() {
            if due > now {
                break;
            }
            self.lingering.pop_front();
            let expired = self
                .published
                .get(&name)
                .is_some_and(|p| !p.has_publishers() && p.linger_until == Some(due));
            if expired {
                self.published.remove(&name);
                ads.push(self.originate_advert(now, name, true));
            }
        }
        if !ads.is_empty() {
            self.flood_adverts(&ads, None);
            for a in &ads {
                self.recompute(now, a.name);
            }
        }
    }

    pub(crate) fn is_published(&self, name: &Name) -> bool {
        self.published.get(name).is_some_and(Publisher::is_live)
    }

    /// Sends a query for `name` to every router neighbour.
    pub(crate) fn send_query(&mut self, name: Name) {
        if self.cfg.query_ttl == 0 {
            return;
        }
        self.query_counter += 1;
        let id = mix64(self.me, self.query_counter);
        self.remember_query(id);
        for &l in self.router_links.values() {
            self.out.push(
                l,
                Frame::Query {
                    id,
                    ttl: self.cfg.query_ttl,
                    name,
                },
            );
        }
    }

    /// True if `id` was not seen recently (and remembers it).
    pub(crate) fn remember_query(&mut self, id: u64) -> bool {
        if !self.seen_queries.insert(id) {
            return false;
        }
        self.seen_order.push_back(id);
        if self.seen_order.len() > MAX_SEEN_QUERIES {
            if let Some(old) = self.seen_order.pop_front() {
                self.seen_queries.remove(&old);
            }
        }
        true
    }

    /// Recomputes every name after a graph change, then sends batched (un)subscribes.
    pub(crate) fn settle(&mut self, now: Instant) {
        if self.lsdb.take_changed() {
            let names: Vec<Name> = self.subs.names().collect();
            for n in names {
                self.recompute(now, n);
            }
        }
        self.out.flush();
    }
}

/// A duration as whole wire seconds, at least 1.
pub(crate) fn secs(d: Duration) -> u32 {
    d.as_secs().clamp(1, u32::MAX as u64) as u32
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use roam_proto::frame::{Advert, Role};
    use roam_proto::{Frame, Name};

    use super::*;

    #[test]
    fn poll_timeout_is_the_earliest_timer() {
        let now = Instant::now();
        let r = Router::new(crate::sim::config(1, 1), now);
        // Sweep every lifetime/4 = 10 s, the same as every refresh in the test config.
        assert_eq!(r.poll_timeout(), Some(now + Duration::from_secs(10)));
        let mut c = Config::default_for(2);
        c.sub_refresh = Duration::from_secs(3);
        assert_eq!(
            Router::new(c, now).poll_timeout(),
            Some(now + Duration::from_secs(3))
        );
    }

    #[test]
    fn million_names_through_the_router() {
        // Prints figures for the report; asserts only correctness.
        let n: u32 = if cfg!(debug_assertions) {
            100_000
        } else {
            1_000_000
        };
        let now = Instant::now();
        let mut r = Router::new(crate::sim::config(1, 1), now);
        crate::sim::add_neighbour(&mut r, now, 12, 2);
        r.link_up(now, 100, Role::Client, 0);
        let name = |i: u32| {
            let mut b = [0x5au8; 32];
            b[..4].copy_from_slice(&i.to_le_bytes());
            Name(b)
        };
        let frames: Vec<Frame> = (0..n)
            .collect::<Vec<_>>()
            .chunks(1024)
            .map(|c| {
                Frame::Advertise(
                    c.iter()
                        .map(|&i| Advert {
                            name: name(i),
                            origin: 2,
                            seq: 1,
                            lifetime_s: 60,
                            withdrawn: false,
                        })
                        .collect(),
                )
            })
            .collect();
        let t = Instant::now();
        for f in frames {
            r.handle_frame(now, 12, f);
        }
        let adv = t.elapsed();
        let t = Instant::now();
        let mut hits = 0;
        for i in 0..n {
            hits += r.has_route(now, &name(i)) as u32;
        }
        let look = t.elapsed();
        assert_eq!(hits, n);
        r.handle_frame(now, 100, Frame::Subscribe(vec![name(7)]));
        while r.poll_transmit().is_some() {}
        let env = crate::sim::envelope(name(7), 1, 1);
        let msgs = 200_000u32;
        let t = Instant::now();
        for _ in 0..msgs {
            r.handle_data(now, 12, 2, env.clone());
            while r.poll_transmit().is_some() {}
        }
        let data = t.elapsed();
        assert_eq!(r.stats().data_forwarded, msgs as u64);
        let t = Instant::now();
        r.handle_timeout(now + Duration::from_secs(10));
        let sweep = t.elapsed();
        println!(
            "router: {n} adverts in {adv:?} ({:?}/advert), lookup {:?}/name, rib ~{} bytes/name, \
             data {:?}/message, timers with {n} names {sweep:?}",
            adv / n,
            look / n,
            r.rib_memory_estimate() / n as usize,
            data / msgs,
        );
    }
}
