//! What a running proxy forwards, and the tasks that do it: one import task per imported DDS
//! topic, one export task per exported one (fed that topic's local publications), and the
//! service legs in rmw_fastrtps's convention ([`super::fast_services`]).
//!
//! Everything goes through [`Forwarding::add`], one mapping at a time: the proxy's file at
//! start, and, as DDS discovery shows them, the services and actions a pattern matches
//! (`service_servers`/`action_servers` in `exports:` when a local server appears,
//! `service_clients`/`action_clients` in `imports:` when a local client does). A service or
//! action set up late is then fed the discovery of the local endpoints seen before it, so it
//! ends up as if it had been configured from the start. Topics imported because a local
//! subscriber reads them and a `subscribers` pattern matches start here too.
//!
//! Endpoints of the proxy's own participants, and writers any proxy created for an import, are
//! never exported and never make a pattern match, so what a proxy imports never goes back out.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, RwLock};

use roam_dds::{DiscoveryEvent, Endpoint, Guid, Participant};
use roam_edge::definitions::DefinitionSource;
use roam_edge::directory::ItemKind;
use roam_edge::names::{dds_topic, service_reply, service_request};
use roam_edge::ros_names::{ros_endpoint, service_to_dds, topic_to_dds, RosEndpoint};
use roam_edge::{Edge, Realm};
use tokio::sync::{mpsc, Notify};
use tracing::{debug, info};

use super::config::{Mapping, ProxyConfig, What};
use super::convention::Setting;
use super::directory::Imported;
use super::export::{export, ExportLeg, PublicationEvent, SkipWriter};
use super::fast_services::{FastServices, ServiceEntry, Views};
use super::import::{import, Admit, ImportLeg};
use super::nodes::NodeNames;
use super::patterns::Side;
use super::rules::ProxyRules;
use super::user_data::is_proxy_import;

/// One direction of a topic or service between a DDS topic here and a name in a realm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leg {
    pub dds_topic: String,
    pub remote: String,
    pub realm: String,
    /// A service's request or reply topic: its convention setting, and whether its server is
    /// here (an `exports:` entry).
    pub service: Option<(Setting, bool)>,
}

/// What the proxy forwards beyond its file's topic entries, shared with the directory
/// ([`super::directory`]): grows as patterns match services and actions.
#[derive(Default)]
pub struct Forwarded {
    /// The DDS topics of services (a server's replies, clients' requests) and raw DDS topics
    /// exported from here.
    exports: Vec<Leg>,
    /// ROS topics exported (by an entry, or as a part of an action a pattern matched): local
    /// name -> (realm, realm-side name).
    topics: HashMap<String, (String, String)>,
    /// What is imported, by the local DDS topic its writers write (a service's replies).
    imported: HashMap<String, Imported>,
    /// The services set up (local names), on whichever side.
    services: HashSet<String>,
}

impl Forwarded {
    /// The import whose writers write `dds_topic`, if any.
    pub fn imported(&self, dds_topic: &str) -> Option<&Imported> {
        self.imported.get(dds_topic)
    }
}

/// [`Forwarded`], behind a lock: the proxy's loop writes it, the directory's task reads it.
pub type Shared = Arc<RwLock<Forwarded>>;

/// Reads the shared state (a panic elsewhere leaves it as it was).
pub fn read(s: &Shared) -> std::sync::RwLockReadGuard<'_, Forwarded> {
    s.read().unwrap_or_else(|p| p.into_inner())
}

fn write(s: &Shared) -> std::sync::RwLockWriteGuard<'_, Forwarded> {
    s.write().unwrap_or_else(|p| p.into_inner())
}

/// What every leg needs from the process.
pub struct Context {
    pub cfg: Arc<ProxyConfig>,
    pub edge: Edge,
    pub participant: Participant,
    /// Which participant reads each exported topic (bulk types on a second one).
    pub intake: Arc<super::intake::Intake>,
    pub realms: BTreeMap<String, Arc<Realm>>,
    pub definitions: Arc<DefinitionSource>,
    pub rules: Arc<ProxyRules>,
    pub nodes: NodeNames,
    /// Whether import writers carry type hashes (every distribution after Humble).
    pub type_hashes: bool,
}

/// The legs of a running proxy. Fed every DDS discovery event ([`Self::discovered`]).
pub struct Forwarding {
    cx: Context,
    fast: FastServices,
    views: Arc<Views>,
    shared: Shared,
    /// Local DDS topics with an import task.
    importing: HashSet<String>,
    /// One export task per exported DDS topic, fed that topic's local publications.
    exports: HashMap<String, mpsc::UnboundedSender<PublicationEvent>>,
    exported: HashMap<Guid, String>,
    /// The live endpoints of other participants, for what a pattern sets up late.
    seen: HashMap<Guid, DiscoveryEvent>,
    /// Told when exports change without a discovery event (the directory looks again).
    changed: Arc<Notify>,
}

impl Forwarding {
    /// Sets up everything the proxy's file names.
    pub fn new(cx: Context, fast: FastServices) -> Self {
        let views = fast.views();
        let mut f = Forwarding {
            cx,
            fast,
            views,
            shared: Shared::default(),
            importing: HashSet::new(),
            exports: HashMap::new(),
            exported: HashMap::new(),
            seen: HashMap::new(),
            changed: Arc::new(Notify::new()),
        };
        let cfg = f.cx.cfg.clone();
        let entries =
            (cfg.exports.iter().map(|m| (m, true))).chain(cfg.imports.iter().map(|m| (m, false)));
        for (m, server_here) in entries {
            f.add(m, server_here);
        }
        f
    }

    pub fn shared(&self) -> Shared {
        self.shared.clone()
    }

    pub fn views(&self) -> Arc<Views> {
        self.views.clone()
    }

    /// Notified when a pattern adds exports: the directory then looks again at the local
    /// publications it saw.
    pub fn changed(&self) -> Arc<Notify> {
        self.changed.clone()
    }

    /// Sets up one mapping, from the file or matched by a pattern: `server_here` for an
    /// `exports:` one. Returns the local DDS topics whose endpoints it concerns.
    fn add(&mut self, m: &Mapping, server_here: bool) -> Vec<String> {
        let raw = |m: &Mapping| Leg {
            dds_topic: m.local.clone(),
            remote: dds_topic(&m.remote),
            realm: m.realm.clone(),
            service: None,
        };
        match (m.what, server_here) {
            (What::Topic, true) => {
                let e = (m.realm.clone(), m.remote.clone());
                write(&self.shared).topics.insert(m.local.clone(), e);
                vec![topic_to_dds(&m.local)]
            }
            (What::Topic, false) => {
                let leg = Leg {
                    dds_topic: topic_to_dds(&m.local),
                    remote: m.remote.clone(),
                    realm: m.realm.clone(),
                    service: None,
                };
                self.imported(m, &leg.dds_topic);
                self.start_import(leg, None, "importing");
                Vec::new()
            }
            (What::DdsTopic, true) => {
                write(&self.shared).exports.push(raw(m));
                vec![m.local.clone()]
            }
            (What::DdsTopic, false) => {
                self.imported(m, &m.local);
                self.start_import(raw(m), None, "importing");
                Vec::new()
            }
            (What::Service, _) => self.add_service(m, server_here),
        }
    }

    /// A ROS 2 service is two DDS topics: requests (`rq/...Request`, written by clients) and
    /// replies (`rr/...Reply`, written by the server). The network with the server exports
    /// the replies and imports the requests; a network with clients does the opposite. Both
    /// travel with the rmw request header inside each sample (client id and sequence), so
    /// every client picks its own replies; local endpoints in rmw_fastrtps's convention go
    /// through [`FastServices`], which this adds the service to first (its gates decide what
    /// the CycloneDDS legs write).
    fn add_service(&mut self, m: &Mapping, server_here: bool) -> Vec<String> {
        let (rq, rr) = service_to_dds(&m.local);
        let service = Some((m.convention, server_here));
        let request = Leg {
            dds_topic: rq.clone(),
            remote: service_request(&m.remote),
            realm: m.realm.clone(),
            service,
        };
        let reply = Leg {
            dds_topic: rr.clone(),
            remote: service_reply(&m.remote),
            realm: m.realm.clone(),
            service,
        };
        self.fast.add(ServiceEntry {
            local: m.local.clone(),
            rq: rq.clone(),
            rr: rr.clone(),
            remote: m.remote.clone(),
            realm: self.cx.realms[&m.realm].clone(),
            server_here,
            setting: m.convention,
            encrypt: self.cx.cfg.encrypt_payloads,
        });
        let (out, into) = match server_here {
            true => (reply, request),
            false => (request, reply),
        };
        {
            let mut s = write(&self.shared);
            s.exports.push(out);
            s.services.insert(m.local.clone());
        }
        if !server_here {
            self.imported(m, &rr);
        }
        let admit = admit(&into, &self.fast, &self.views);
        self.start_import(into, admit, "importing");
        vec![rq, rr]
    }

    /// Records an import for the directory, by the local DDS topic of its writers.
    fn imported(&mut self, m: &Mapping, dds_topic: &str) {
        let i = super::directory::imported(m);
        write(&self.shared)
            .imported
            .insert(dds_topic.to_string(), i);
    }

    /// Starts the import task of a DDS topic, once.
    fn start_import(&mut self, leg: Leg, admit: Option<Admit>, why: &str) {
        if !self.importing.insert(leg.dds_topic.clone()) {
            return;
        }
        info!(dds_topic = %leg.dds_topic, from = %leg.remote, realm = %leg.realm, "{why}");
        let cx = &self.cx;
        let leg = ImportLeg {
            realm: cx.realms[&leg.realm].clone(),
            dds_topic: leg.dds_topic,
            remote: leg.remote,
            definitions: cx.definitions.clone(),
            rules: cx.rules.clone(),
            admit,
            type_hashes: cx.type_hashes,
        };
        tokio::spawn(import(cx.edge.clone(), cx.participant.clone(), leg));
    }

    /// Follows one DDS discovery event: what a pattern matches is set up first, then the
    /// event goes where it belongs (the service legs, a topic's import or export).
    pub fn discovered(&mut self, ev: DiscoveryEvent) {
        if let Some((mappings, server_here)) = self.matched(&ev) {
            self.add_matched(&mappings, server_here);
        }
        let ep = ev.endpoint();
        if !self.cx.participant.owns(ep) && !self.views.is_own(&ep.guid) {
            match ep.alive {
                true => self.seen.insert(ep.guid, ev.clone()),
                false => self.seen.remove(&ep.guid),
            };
        }
        self.fast.observe(&self.cx.participant, &ev);
        match ev {
            DiscoveryEvent::Subscription(ep) => {
                let leg = pattern_import(&self.cx.cfg, &self.cx.participant, &self.views, &ep);
                if let Some(leg) = leg.filter(|l| !self.exports_topic(&l.dds_topic)) {
                    let why =
                        "importing (a local subscriber reads it and an import pattern matches)";
                    self.start_import(leg, None, why);
                }
            }
            DiscoveryEvent::Publication(ep) => self.publication(ep),
        }
    }

    /// Whether the proxy exports the ROS topic of `dds_topic` by an entry or an action.
    fn exports_topic(&self, dds: &str) -> bool {
        let Some(RosEndpoint::Topic(local)) = ros_endpoint(dds) else {
            return false;
        };
        read(&self.shared).topics.contains_key(&local)
    }

    /// The service or action a pattern sets up for a local server or client that appeared:
    /// its mappings, and whether the server is here. A service is set up once, on the side
    /// that matched first.
    fn matched(&self, ev: &DiscoveryEvent) -> Option<(Vec<Mapping>, bool)> {
        let (cfg, me) = (&self.cx.cfg, &self.cx.participant);
        let ep = ev.endpoint();
        let writer = matches!(ev, DiscoveryEvent::Publication(_));
        if !ep.alive
            || (cfg.pattern_exports.is_empty() && cfg.pattern_imports.is_empty())
            || me.owns(ep)
            || self.views.is_own(&ep.guid)
            || (writer && is_proxy_import(&ep.user_data))
        {
            return None;
        }
        // A server reads requests and writes replies; a client the reverse.
        let (name, server_here) = match (ros_endpoint(&ep.topic_name)?, writer) {
            (RosEndpoint::ServiceRequest(n), false) | (RosEndpoint::ServiceReply(n), true) => {
                (n, true)
            }
            (RosEndpoint::ServiceRequest(n), true) | (RosEndpoint::ServiceReply(n), false) => {
                (n, false)
            }
            (RosEndpoint::Topic(_), _) => return None,
        };
        let side = if server_here {
            Side::Exports
        } else {
            Side::Imports
        };
        let mappings = match name.strip_suffix(ACTION_GOAL) {
            Some(action) => cfg.action_pattern(side, action)?,
            None => vec![cfg.service_pattern(side, &name)?],
        };
        // An action's first mapping is its goal service.
        if read(&self.shared).services.contains(&mappings[0].local) {
            return None;
        }
        Some((mappings, server_here))
    }

    /// Sets up what a pattern matched, then feeds it the local endpoints seen before.
    fn add_matched(&mut self, mappings: &[Mapping], server_here: bool) {
        let what = match mappings.len() {
            1 => "service",
            _ => "action",
        };
        let name = mappings[0].local.strip_suffix(ACTION_GOAL);
        let name = name.unwrap_or(&mappings[0].local);
        match server_here {
            true => {
                info!(%what, %name, "a local server serves it and an export pattern matches: exporting it")
            }
            false => {
                info!(%what, %name, "a local client calls it and an import pattern matches: importing it")
            }
        }
        let topics: HashSet<String> = mappings
            .iter()
            .flat_map(|m| self.add(m, server_here))
            .collect();
        let mut earlier: Vec<DiscoveryEvent> = self
            .seen
            .values()
            .filter(|ev| topics.contains(&ev.endpoint().topic_name))
            .filter(|ev| !self.exported.contains_key(&ev.endpoint().guid))
            .cloned()
            .collect();
        // Servers' readers before their writers, as discovery usually has them.
        earlier.sort_by_key(|ev| matches!(ev, DiscoveryEvent::Publication(_)));
        debug!(%name, endpoints = earlier.len(), "local endpoints seen before the pattern matched");
        for ev in earlier {
            self.fast.observe(&self.cx.participant, &ev);
            if let DiscoveryEvent::Publication(ep) = ev {
                self.publication(ep);
            }
        }
        self.changed.notify_one();
    }

    /// A local publication: fed to its topic's export task if the proxy exports it (the task
    /// starts with the topic's first one).
    fn publication(&mut self, ep: Endpoint) {
        if !ep.alive {
            if let Some(topic) = self.exported.remove(&ep.guid) {
                if let Some(tx) = self.exports.get(&topic) {
                    let _ = tx.send(PublicationEvent::Down(ep.guid));
                }
            }
            return;
        }
        let found = exportable(
            &self.cx.cfg,
            &read(&self.shared),
            &self.cx.participant,
            &ep,
            Some(&self.views),
        );
        let Some((realm, remote)) = found else { return };
        let topic = ep.topic_name.clone();
        if !self.exports.contains_key(&topic) {
            let (tx, rx) = mpsc::unbounded_channel();
            let cx = &self.cx;
            let ros_name = match ros_endpoint(&topic) {
                Some(RosEndpoint::Topic(name)) => Some(name),
                _ => None,
            };
            let leg = ExportLeg {
                window: cx.cfg.resend_windows.limits(ros_name.as_deref(), &topic),
                dds_topic: topic.clone(),
                remote,
                realm: cx.realms[&realm].clone(),
                encrypt: cx.cfg.encrypt_payloads,
                definitions: cx.definitions.clone(),
                rules: cx.rules.clone(),
                nodes: cx.nodes.clone(),
                skip: self.skip(&topic),
            };
            tokio::spawn(export(
                cx.edge.clone(),
                cx.participant.clone(),
                cx.intake.clone(),
                leg,
                rx,
            ));
            self.exports.insert(topic.clone(), tx);
        }
        self.exported.insert(ep.guid, topic.clone());
        let _ = self.exports[&topic].send(PublicationEvent::Up(Box::new(ep)));
    }

    /// The writers an exported service topic leaves to [`FastServices`].
    fn skip(&self, topic: &str) -> Option<SkipWriter> {
        let shared = read(&self.shared);
        let leg = shared.exports.iter().find(|l| l.dds_topic == topic)?;
        let (setting, _) = leg.service?;
        let v = self.views.clone();
        Some(Arc::new(move |g: &Guid| v.is_fast(setting, g)))
    }
}

/// The service whose server or client stands for an action's (rcl_action's names).
const ACTION_GOAL: &str = "/_action/send_goal";

/// Whether a discovered publication is one this proxy exports: (realm, realm topic). With
/// `fast`, a service's writers in rmw_fastrtps's convention are not (their leg is
/// [`super::fast_services`]'s).
pub fn exportable(
    cfg: &ProxyConfig,
    forwarded: &Forwarded,
    me: &Participant,
    ep: &Endpoint,
    fast: Option<&Views>,
) -> Option<(String, String)> {
    // Our own endpoints, and any roam proxy's import writers, are never exported.
    if !ep.alive || me.owns(ep) || is_proxy_import(&ep.user_data) {
        return None;
    }
    if let Some(leg) = forwarded
        .exports
        .iter()
        .find(|l| l.dds_topic == ep.topic_name)
    {
        if let (Some(v), Some((setting, server_here))) = (fast, leg.service) {
            // An imported service's requests are all read by its RustDDS leg unless every
            // local endpoint is said to be rmw_cyclonedds's; elsewhere, writers in
            // rmw_fastrtps's convention are that leg's.
            if (!server_here && setting != Setting::Cyclone) || v.is_fast(setting, &ep.guid) {
                return None;
            }
        }
        if fast.is_none_or(|v| !v.is_own(&ep.guid)) {
            return Some((leg.realm.clone(), leg.remote.clone()));
        }
        return None;
    }
    let Some(RosEndpoint::Topic(local)) = ros_endpoint(&ep.topic_name) else {
        return None;
    };
    if let Some(e) = forwarded.topics.get(&local) {
        return Some(e.clone());
    }
    // A topic imported (an action's part, by a pattern) does not go back out.
    if forwarded.imported.contains_key(&ep.topic_name) {
        return None;
    }
    cfg.export_of(&local)
}

/// The import a local subscription asks for through an import pattern, if any: not the
/// proxy's own readers (its exports') nor those of its RustDDS participant.
fn pattern_import(
    cfg: &ProxyConfig,
    me: &Participant,
    views: &Views,
    ep: &Endpoint,
) -> Option<Leg> {
    if !ep.alive || cfg.pattern_imports.is_empty() || me.owns(ep) || views.is_own(&ep.guid) {
        return None;
    }
    let Some(RosEndpoint::Topic(local)) = ros_endpoint(&ep.topic_name) else {
        return None;
    };
    let (realm, remote) = cfg.pattern_import_of(&local)?;
    Some(Leg {
        dds_topic: ep.topic_name.clone(),
        remote,
        realm,
        service: None,
    })
}

/// What a service's CycloneDDS import writes: requests only while an rmw_cyclonedds server
/// is here; replies except those for the clients [`FastServices`] serves and failed calls
/// (an edge server's refusal, which ROS 2 has no reply for: the DDS client gets nothing).
fn admit(leg: &Leg, fast: &FastServices, views: &Arc<Views>) -> Option<Admit> {
    let (_, server_here) = leg.service?;
    if server_here {
        let gate = fast.cyclone_gate(&leg.dds_topic)?;
        return Some(Arc::new(move |_: &[u8]| *gate.borrow()));
    }
    let v = views.clone();
    Some(Arc::new(move |cdr: &[u8]| {
        !roam_edge::service::wire::split(cdr)
            .is_ok_and(|h| h.id.seq < 0 || v.is_fast_client(h.id.client))
    }))
}

/// The directory's view of a topic the proxy imports by pattern, by the local DDS topic of
/// its writers: (realm, kind, realm-side name).
pub fn pattern_imported(
    cfg: &ProxyConfig,
    forwarded: &Forwarded,
    dds: &str,
) -> Option<(String, ItemKind, String)> {
    if let Some(i) = forwarded.imported(dds) {
        return Some((i.realm.clone(), i.kind, i.name.clone()));
    }
    match ros_endpoint(dds) {
        Some(RosEndpoint::Topic(local)) => {
            let (realm, name) = cfg.pattern_import_of(&local)?;
            Some((realm, ItemKind::Topic, name))
        }
        _ => None,
    }
}
