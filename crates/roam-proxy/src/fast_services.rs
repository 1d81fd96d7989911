//! Services in rmw_fastrtps's convention ([`super::convention`]): the legs that translate call
//! identities between local DDS endpoints that carry them beside the payload and the realm,
//! which carries them in a header (rmw_cyclonedds's convention, unchanged).
//!
//! CycloneDDS cannot read a sample's sequence number nor read or write
//! `related_sample_identity`, so these legs use a second DDS participant (RustDDS,
//! [`roam_dds::rpc`]) on the same domain. It exists only once a forwarded service has a local
//! endpoint in that convention: a proxy whose services are all rmw_cyclonedds's (or that has
//! none) never creates it. Its endpoints are the proxy's own: discovery of them is ignored
//! ([`Views::is_own`]), so nothing it writes is exported again.
//!
//! Services are added one by one ([`FastServices::add`]): those of the proxy's file at start,
//! those a pattern matches when discovery shows their first local server or client. Per
//! service, the CycloneDDS legs ([`super::export`], [`super::import`]) keep serving
//! rmw_cyclonedds's endpoints, and skip what this module serves:
//!
//! - **Clients here** (an `imports:` service set to `auto` or `fastdds`): a RustDDS reader
//!   takes the requests of every local client: those in rmw_fastrtps's convention are given a
//!   realm id ([`FastClients`]), rmw_cyclonedds's go as they are. It is the proxy's only reader
//!   of the request topic (the CycloneDDS export leaves it alone), so a client's
//!   `wait_for_service` never succeeds on a reader that would not take its calls. A RustDDS
//!   writer answers the rmw_fastrtps clients, naming each request in
//!   `related_sample_identity`; the CycloneDDS import of the reply topic answers the others
//!   and skips the replies addressed to these. The RustDDS endpoints are made once the realm
//!   has a server (someone takes requests and someone announces replies), so a local
//!   client's `wait_for_service` means what it says.
//! - **Server here** (an `exports:` service): a RustDDS writer writes the realm's requests to
//!   the local servers in that convention ([`PendingCalls`] remembers which realm call each
//!   sample is), a RustDDS reader takes their replies. The CycloneDDS import of the request
//!   topic writes only while an rmw_cyclonedds server is here ([`FastServices::cyclone_gate`]),
//!   and this leg only while an rmw_fastrtps one is: neither kind of server is handed requests
//!   in the other's layout.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use roam_dds::rpc::{
    RpcParticipant, RpcQos, RpcReader, RpcSample, RpcWriter, SampleId, SEQ_UNKNOWN,
};
use roam_dds::{DiscoveryEvent, Guid, Participant};
use roam_edge::names::{service_reply, service_request};
use roam_edge::service::wire;
use roam_edge::stats::TopicStats;
use roam_edge::{Edge, Event, Realm, StreamSpec, SubscriberOptions, TopicRef};
use tokio::sync::{mpsc, watch};
use tracing::{debug, info, warn};

use super::call_ids::{Answer, FastClients, PendingCalls};
use super::convention::{
    classify, reply_type_of, request_type_of, vendor, vendor_name, Convention, Setting,
};
use super::user_data::is_proxy_import;

/// How long a reply waits for its client's reader to match the proxy's reply writer.
const REPLY_MATCH_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// One forwarded service, as this proxy serves it.
#[derive(Clone, Debug)]
pub struct ServiceEntry {
    /// The local ROS name, e.g. `/add_two_ints`.
    pub local: String,
    /// Its DDS request and reply topics here (`rq/add_two_intsRequest`, `rr/...Reply`).
    pub rq: String,
    pub rr: String,
    /// Its name in the realm.
    pub remote: String,
    pub realm: Arc<Realm>,
    /// true: an `exports:` entry (the server is here); false: clients are here.
    pub server_here: bool,
    pub setting: Setting,
    /// false: payloads in clear text (still authenticated).
    pub encrypt: bool,
}

/// What the CycloneDDS legs and discovery need to know of this module, shared.
#[derive(Default)]
pub struct Views {
    /// GUID prefixes of the proxy's own RustDDS participant.
    own: RwLock<Vec<[u8; 12]>>,
    /// Writers of any roam proxy's imports (USER_DATA: [`super::user_data`]): never a local peer.
    proxies: RwLock<HashSet<Guid>>,
    /// Realm client ids of the local clients this module serves.
    fast_clients: RwLock<HashSet<u64>>,
}

impl Views {
    /// Whether `guid` is one of the proxy's RustDDS endpoints.
    pub fn is_own(&self, guid: &Guid) -> bool {
        read(&self.own).iter().any(|p| guid[..12] == p[..])
    }

    /// Whether the local endpoint `guid` of a service set to `setting` is this module's to
    /// serve (rmw_fastrtps's convention, and a peer: not a proxy's own endpoint).
    pub fn is_fast(&self, setting: Setting, guid: &Guid) -> bool {
        classify(setting, guid) == Convention::Fast && self.is_peer(guid)
    }

    /// Whether `guid` is a local peer's, not this proxy's nor any roam proxy's import writer.
    pub fn is_peer(&self, guid: &Guid) -> bool {
        !self.is_own(guid) && !read(&self.proxies).contains(guid)
    }

    /// Whether a realm reply with client id `client` is for one of this module's clients.
    pub fn is_fast_client(&self, client: u64) -> bool {
        let c = read(&self.fast_clients);
        !c.is_empty() && c.contains(&client)
    }
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

enum LegMsg {
    /// A local client's request writer is gone.
    Forget(Guid),
}

struct EntryState {
    /// Local servers (readers of the request topic) and their conventions.
    servers: HashMap<Guid, Convention>,
    cyclone_gate: watch::Sender<bool>,
    fast_gate: watch::Sender<bool>,
    leg: Option<mpsc::UnboundedSender<LegMsg>>,
}

/// The RustDDS participant, made on first need and shared by the legs.
struct Rtps {
    domain: u16,
    networks: Vec<IpAddr>,
    views: Arc<Views>,
    /// The participant, or `Err(())` once it could not be made (said once).
    made: std::sync::Mutex<Option<Result<RpcParticipant, ()>>>,
}

impl Rtps {
    fn get(&self) -> Option<RpcParticipant> {
        let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
        if made.is_none() {
            *made = Some(match RpcParticipant::new(self.domain, &self.networks) {
                Ok(p) => {
                    write(&self.views.own).push(p.guid_prefix());
                    info!(domain = self.domain, prefix = %hex::encode(p.guid_prefix()), "RustDDS participant up (services in rmw_fastrtps's convention)");
                    Ok(p)
                }
                Err(e) => {
                    warn!("cannot serve services in rmw_fastrtps's convention: {e}");
                    Err(())
                }
            });
        }
        made.as_ref().and_then(|m| m.as_ref().ok().cloned())
    }
}

/// The services of one proxy in rmw_fastrtps's convention. Fed every DDS discovery event.
pub struct FastServices {
    edge: Edge,
    entries: Vec<(ServiceEntry, EntryState)>,
    views: Arc<Views>,
    rtps: Arc<Rtps>,
}

impl FastServices {
    /// No service yet ([`Self::add`]). `networks`: the local addresses the RustDDS
    /// participant may use (empty: all).
    pub fn new(edge: Edge, domain: u16, networks: Vec<IpAddr>) -> Self {
        let views = Arc::new(Views::default());
        let rtps = Arc::new(Rtps {
            domain,
            networks,
            views: views.clone(),
            made: std::sync::Mutex::new(None),
        });
        FastServices {
            edge,
            entries: Vec::new(),
            views,
            rtps,
        }
    }

    /// Serves one more service. Its clients being here and possibly speaking rmw_fastrtps's
    /// convention, its leg starts now: it follows the realm and makes its RustDDS endpoints
    /// (and the participant) only once the realm has a server, so they exist before a local
    /// client's `wait_for_service` can succeed on CycloneDDS endpoints alone. Its server
    /// being here, the leg starts with the first local server in that convention
    /// ([`Self::observe`]: a service added after its servers appeared is fed their discovery
    /// again by the caller). A service already served is left as it is.
    pub fn add(&mut self, e: ServiceEntry) {
        if self.entries.iter().any(|(x, _)| x.rq == e.rq) {
            return;
        }
        let mut state = EntryState {
            servers: HashMap::new(),
            cyclone_gate: watch::channel(false).0,
            fast_gate: watch::channel(false).0,
            leg: None,
        };
        if !e.server_here && e.setting != Setting::Cyclone {
            let (tx, rx) = mpsc::unbounded_channel();
            state.leg = Some(tx);
            let leg = Leg {
                edge: self.edge.clone(),
                entry: e.clone(),
                rtps: self.rtps.clone(),
                views: self.views.clone(),
            };
            tokio::spawn(leg.call(rx));
        }
        self.entries.push((e, state));
    }

    pub fn views(&self) -> Arc<Views> {
        self.views.clone()
    }

    /// For the CycloneDDS import of a served service's request topic: whether an
    /// rmw_cyclonedds server is here (only then does it write requests).
    pub fn cyclone_gate(&self, dds_topic: &str) -> Option<watch::Receiver<bool>> {
        self.entries
            .iter()
            .find(|(e, _)| e.server_here && e.rq == dds_topic)
            .map(|(_, s)| s.cyclone_gate.subscribe())
    }

    /// Follows one discovery event: the local servers of served services and their
    /// conventions (a server leg starts with the first one in rmw_fastrtps's), and the local
    /// clients that leave.
    pub fn observe(&mut self, participant: &Participant, ev: &DiscoveryEvent) {
        let ep = ev.endpoint();
        if participant.owns(ep) || self.views.is_own(&ep.guid) {
            return;
        }
        let publication = matches!(ev, DiscoveryEvent::Publication(_));
        if publication && is_proxy_import(&ep.user_data) {
            let mut p = write(&self.views.proxies);
            match ep.alive {
                true => p.insert(ep.guid),
                false => p.remove(&ep.guid),
            };
            return;
        }
        let Some(i) = self
            .entries
            .iter()
            .position(|(e, _)| e.rq == ep.topic_name || e.rr == ep.topic_name)
        else {
            return;
        };
        let (entry, state) = &mut self.entries[i];
        let request_topic = ep.topic_name == entry.rq;
        let conv = classify(entry.setting, &ep.guid);
        if !entry.server_here {
            // A client's request writer left: forget its id.
            if request_topic && publication && !ep.alive {
                if let Some(tx) = &state.leg {
                    let _ = tx.send(LegMsg::Forget(ep.guid));
                }
            }
            return;
        }
        // Servers are the readers of the request topic.
        if !request_topic || publication {
            return;
        }
        match ep.alive {
            true => state.servers.insert(ep.guid, conv),
            false => state.servers.remove(&ep.guid),
        };
        let has = |c| state.servers.values().any(|v| *v == c);
        state.cyclone_gate.send_replace(has(Convention::Cyclone));
        state.fast_gate.send_replace(has(Convention::Fast));
        if !ep.alive {
            return;
        }
        info!(service = %entry.local, vendor = vendor_name(vendor(&ep.guid)), convention = ?conv, "a local server of the service");
        if conv != Convention::Fast || state.leg.is_some() {
            return;
        }
        let Some(rep_type) = reply_type_of(&ep.type_name) else {
            warn!(service = %entry.local, ty = %ep.type_name, "not a service type (no _Request_ suffix): not served in rmw_fastrtps's convention");
            return;
        };
        let (tx, rx) = mpsc::unbounded_channel();
        state.leg = Some(tx);
        let leg = Leg {
            edge: self.edge.clone(),
            entry: entry.clone(),
            rtps: self.rtps.clone(),
            views: self.views.clone(),
        };
        tokio::spawn(leg.serve(
            (ep.type_name.clone(), rep_type),
            state.fast_gate.subscribe(),
            rx,
        ));
    }
}

/// The local addresses of the named interfaces, for the RustDDS participant (empty when no
/// interface is named: RustDDS then uses all, as CycloneDDS does).
pub fn interface_addresses(names: &[String]) -> Vec<IpAddr> {
    if names.is_empty() {
        return Vec::new();
    }
    #[cfg(unix)]
    {
        let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
            return Vec::new();
        };
        addrs
            .filter(|a| names.contains(&a.interface_name))
            .filter_map(|a| a.address?.as_sockaddr_in().map(|s| IpAddr::V4(s.ip())))
            .collect()
    }
    #[cfg(not(unix))]
    Vec::new()
}

/// One service's leg in rmw_fastrtps's convention.
struct Leg {
    edge: Edge,
    entry: ServiceEntry,
    rtps: Arc<Rtps>,
    views: Arc<Views>,
}

/// The next sample of a reader that may not exist yet.
async fn next(r: &mut Option<RpcReader>) -> Option<RpcSample> {
    match r {
        Some(r) => r.recv().await,
        None => std::future::pending().await,
    }
}

/// The next change of a watch that may not exist yet.
async fn changed(w: &mut Option<watch::Receiver<bool>>) -> Result<(), watch::error::RecvError> {
    match w {
        Some(w) => w.changed().await,
        None => std::future::pending().await,
    }
}

/// Writes with a writer that may block briefly (reliable, readers lagging): off the async
/// workers.
fn write_rpc(w: &RpcWriter, cdr: &[u8], related: SampleId) -> Result<SampleId, roam_dds::DdsError> {
    tokio::task::block_in_place(|| w.write(cdr, Some(related)))
}

impl Leg {
    fn topics(&self) -> (TopicRef, TopicRef) {
        let realm = self.entry.realm.clone();
        (
            TopicRef::new(realm.clone(), service_request(&self.entry.remote)),
            TopicRef::new(realm, service_reply(&self.entry.remote)),
        )
    }

    fn spec(&self, ty: &str) -> StreamSpec {
        let mut s = StreamSpec::new(ty);
        s.clear_text = !self.entry.encrypt;
        s
    }

    /// Clients here: their requests into the realm, the realm's replies back to them. The
    /// service's types come from the realm's reply streams (a server announces them).
    async fn call(self, mut msgs: mpsc::UnboundedReceiver<LegMsg>) {
        let service = self.entry.local.clone();
        let (request_topic, reply_topic) = self.topics();
        let mut replies = self
            .edge
            .subscriber(&reply_topic, SubscriberOptions::default())
            .await;
        let mut requests: Option<roam_edge::Publisher> = None;
        let mut demand: Option<watch::Receiver<bool>> = None;
        let mut types: Option<(String, String)> = None;
        let mut reader: Option<RpcReader> = None;
        let mut writer: Option<RpcWriter> = None;
        let mut clients = FastClients::default();
        let (mut buf, mut body, mut sample) = (Vec::new(), Vec::new(), Vec::new());
        let (mut warned, mut gave_up) = (false, false);
        loop {
            if types.is_none() {
                let announced = replies.streams().into_values().next().map(|s| s.dds_type);
                if let Some(rep) = announced {
                    match request_type_of(&rep) {
                        Some(req) => types = Some((req, rep)),
                        None if !gave_up => {
                            gave_up = true;
                            warn!(%service, ty = %rep, "the realm's replies are not of a service type (no _Response_ suffix): rmw_fastrtps clients are not served");
                        }
                        None => {}
                    }
                }
            }
            if let (None, Some((req, _))) = (&requests, &types) {
                match self.edge.publisher(&request_topic, self.spec(req)).await {
                    Ok(p) => {
                        demand = Some(p.demand());
                        requests = Some(p);
                    }
                    Err(e) => return warn!(%service, "cannot export requests: {e}"),
                }
            }
            let server = demand.as_mut().is_some_and(|d| *d.borrow_and_update())
                && !replies.streams().is_empty();
            if let (None, true, Some((req, rep))) = (&reader, server, &types) {
                let Some(rtps) = self.rtps.get() else { return };
                let qos = RpcQos::default();
                match (
                    rtps.reader(&self.entry.rq, req, qos),
                    rtps.writer(&self.entry.rr, rep, qos),
                ) {
                    (Ok(r), Ok(w)) => {
                        info!(%service, "the realm has a server: taking the requests of clients in rmw_fastrtps's convention");
                        reader = Some(r);
                        writer = Some(w);
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        return warn!(%service, "cannot create RustDDS endpoints: {e}")
                    }
                }
            }
            tokio::select! {
                s = next(&mut reader) => {
                    let (Some(s), Some(requests)) = (s, &requests) else { break };
                    if !self.views.is_peer(&s.id.writer) {
                        continue;
                    }
                    // This reader takes every local client's requests (the only proxy reader
                    // of the topic, so no client's wait_for_service succeeds on a reader that
                    // does not take its calls): rmw_cyclonedds clients' carry the realm's
                    // header already and go as they are.
                    let joined = match classify(self.entry.setting, &s.id.writer) {
                        Convention::Fast => {
                            let id = clients.request(Instant::now(), s.id, s.related);
                            write(&self.views.fast_clients).insert(id.client);
                            wire::join(id, &s.cdr, &mut sample)
                        }
                        Convention::Cyclone => wire::split(&s.cdr).map(|_| {
                            sample.clear();
                            sample.extend_from_slice(&s.cdr);
                        }),
                    };
                    if let Err(e) = joined {
                        TopicStats::count(&requests.stats().failed);
                        if !std::mem::replace(&mut warned, true) {
                            warn!(%service, "dropped a malformed request: {e} (more are counted, not logged)");
                        }
                        continue;
                    }
                    if let Err(e) = requests.publish(&sample).await {
                        debug!(%service, "cannot export a request: {e}");
                    }
                }
                ev = replies.recv(&mut buf) => match ev {
                    None => break,
                    // A failed call (an edge server's refusal): ROS 2 has no failed reply,
                    // so the DDS client gets nothing, as from its own servers.
                    Some(Event::Message(_)) if wire::is_failure(&buf) => {}
                    Some(Event::Message(_)) => {
                        let Ok(h) = wire::body(&buf, &mut body) else {
                            TopicStats::count(&replies.stats().failed);
                            continue;
                        };
                        let (Some(to), Some(w)) = (clients.reply_to(Instant::now(), h.id), &writer) else {
                            continue;
                        };
                        // As rmw_fastrtps's servers do: a client that matched the CycloneDDS
                        // reply writer first may not have matched this one yet.
                        let until = Instant::now() + REPLY_MATCH_WAIT;
                        while !w.reaches(&to.writer) && Instant::now() < until {
                            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                        }
                        if let Err(e) = write_rpc(w, &body, to) {
                            TopicStats::count(&replies.stats().failed);
                            debug!(%service, "cannot write a reply: {e}");
                        }
                    }
                    Some(_) => {}
                },
                r = changed(&mut demand) => if r.is_err() { break },
                m = msgs.recv() => match m {
                    Some(LegMsg::Forget(g)) => {
                        if let Some(id) = clients.forget(&g) {
                            write(&self.views.fast_clients).remove(&id);
                        }
                    }
                    None => break,
                },
            }
        }
    }

    /// A server here: the realm's requests to it, its replies into the realm.
    async fn serve(
        self,
        (req_type, rep_type): (String, String),
        mut gate: watch::Receiver<bool>,
        mut msgs: mpsc::UnboundedReceiver<LegMsg>,
    ) {
        let service = self.entry.local.clone();
        let (request_topic, reply_topic) = self.topics();
        let Some(rtps) = self.rtps.get() else { return };
        info!(%service, "a local server in rmw_fastrtps's convention: serving it through RustDDS");
        let qos = RpcQos::default();
        let (mut reader, w) = match (
            rtps.reader(&self.entry.rr, &rep_type, qos),
            rtps.writer(&self.entry.rq, &req_type, qos),
        ) {
            (Ok(r), Ok(w)) => (r, w),
            (Err(e), _) | (_, Err(e)) => {
                return warn!(%service, "cannot create RustDDS endpoints: {e}")
            }
        };
        // The reply stream tells the realm a server is there: announced only while a server in
        // this convention is here and matched the writer that hands it requests (a call made
        // on that news is not written into the void), withdrawn when none is left.
        let mut replies: Option<roam_edge::Publisher> = None;
        let options = SubscriberOptions {
            dds_type: Some(req_type.clone()),
            ..SubscriberOptions::default()
        };
        let mut requests = self.edge.subscriber(&request_topic, options).await;
        // rmw_fastrtps's clients name their reply reader in each request, and servers
        // answer to it; a server that answers to the request's own identity names the writer.
        let ours = [w.guid(), reader.guid()];
        let to_reader = SampleId {
            writer: reader.guid(),
            seq: SEQ_UNKNOWN,
        };
        let mut pending = PendingCalls::for_service(&service);
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
        let (mut buf, mut body, mut sample) = (Vec::new(), Vec::new(), Vec::new());
        let (mut late, mut unserved, mut warned) = (0u64, 0u64, false);
        loop {
            let serving = *gate.borrow_and_update() && w.matched_readers() > 0;
            if serving && replies.is_none() {
                match self
                    .edge
                    .publisher(&reply_topic, self.spec(&rep_type))
                    .await
                {
                    Ok(p) => {
                        info!(%service, "serving the realm's calls to a local server in rmw_fastrtps's convention");
                        replies = Some(p);
                    }
                    Err(e) => return warn!(%service, "cannot export replies: {e}"),
                }
            } else if !serving && replies.take().is_some() {
                info!(%service, "no local server in rmw_fastrtps's convention left: no longer offered to the realm");
            }
            tokio::select! {
                ev = requests.recv(&mut buf) => match ev {
                    None => break,
                    Some(Event::Message(_)) => {
                        let h = match wire::body(&buf, &mut body) {
                            Ok(h) => h,
                            Err(e) => {
                                TopicStats::count(&requests.stats().failed);
                                if !std::mem::replace(&mut warned, true) {
                                    warn!(%service, "dropped a malformed request: {e} (more are counted, not logged)");
                                }
                                continue;
                            }
                        };
                        if replies.is_none() {
                            // No server in this convention here (now): nobody to hand it to.
                            unserved += 1;
                            continue;
                        }
                        match write_rpc(&w, &body, to_reader) {
                            Ok(sid) => pending.insert(Instant::now(), sid.seq, h.id),
                            Err(e) => {
                                TopicStats::count(&requests.stats().failed);
                                debug!(%service, "cannot write a request: {e}");
                            }
                        }
                    }
                    Some(_) => {}
                },
                s = reader.recv() => {
                    let Some(s) = s else { break };
                    // rmw_cyclonedds servers' replies are the CycloneDDS legs'.
                    if !self.views.is_fast(self.entry.setting, &s.id.writer) {
                        continue;
                    }
                    match (pending.answer(Instant::now(), s.related, &ours), &replies) {
                        (Answer::Call(id), Some(replies)) => {
                            if wire::join(id, &s.cdr, &mut sample).is_err() {
                                TopicStats::count(&replies.stats().failed);
                                continue;
                            }
                            if let Err(e) = replies.publish(&sample).await {
                                debug!(%service, "cannot export a reply: {e}");
                            }
                        }
                        (Answer::Call(_), None) | (Answer::Late, _) => late += 1,
                        (Answer::NotOurs, _) => {}
                    }
                }
                r = gate.changed() => if r.is_err() { break },
                _ = tick.tick() => pending.expire(Instant::now()),
                m = msgs.recv() => if m.is_none() { break },
            }
        }
        info!(%service, late, unserved, expired = pending.expired, dropped = pending.dropped_full, "service leg ended");
    }
}
