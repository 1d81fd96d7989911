//! The proxy process: a DDS participant on the local domain, an in-process edge router, and
//! one task per exported or imported topic between them ([`super::export`],
//! [`super::import`]). This file wires them: configuration, the router, DDS discovery (which
//! publications go to which export), the service legs, and the proxy's own entry in
//! `ros_discovery_info`; and the rules file (reloaded on SIGHUP).
//!
//! Endpoints of the proxy's own participant, and writers any proxy created for an import, are
//! never exported, so what a proxy imports never goes back out.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use roam_dds::{ros_discovery_info, Discovery, DiscoveryEvent, Endpoint, Guid, Participant};
use roam_edge::names::{dds_topic, service_reply, service_request};
use roam_edge::ros_names::{ros_endpoint, service_to_dds, topic_to_dds, RosEndpoint};
use roam_edge::{Edge, Port};
use roam_net::runtime::{self, PeerAddr};
use tokio::sync::mpsc;
use tracing::{info, warn};

use super::config::{ProxyConfig, What};
use super::convention::Setting;
use super::export::{export, ExportLeg, PublicationEvent, SkipWriter};
use super::fast_services::{interface_addresses, FastServices, ServiceEntry, Views};
use super::import::{import, Admit, ImportLeg};
use super::user_data::is_proxy_import;
use crate::stats::Status;

/// Runs a proxy until `stop` resolves.
pub async fn run(
    mut cfg: ProxyConfig,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), String> {
    let mut realms = BTreeMap::new();
    for (name, path) in &cfg.realms {
        realms.insert(name.clone(), Arc::new(roam_edge::realm::load(path)?));
    }
    let connect = cfg
        .upstream
        .iter()
        .map(|s| s.parse::<PeerAddr>())
        .collect::<Result<Vec<_>, _>>()?;
    let listen = cfg.listen.as_deref().map(runtime::resolve).transpose()?;
    let (router, router_task) = crate::boot::start_router(crate::boot::RouterBoot {
        id: &cfg.id,
        pki: &cfg.pki,
        listen,
        listen_tcp: None,
        listen_mqtt: Vec::new(),
        connect,
        link: &cfg.link,
        what: "the proxy (its edge router)",
    })
    .await?;
    let edge = match signing_identity(&cfg, &realms)? {
        Some(signer) => Edge::signed(Port::Router(router.clone()), cfg.id.clone(), signer),
        None => Edge::new(Port::Router(router.clone()), cfg.id.clone()),
    };
    // Interface definitions on this machine (AMENT_PREFIX_PATH, msg_paths), announced with
    // the topics so that members without them can read the data.
    let definitions = Arc::new(
        roam_edge::definitions::DefinitionSource::from_env(&cfg.msg_paths)
            .map_err(|e| format!("msg_paths: {e}"))?,
    );

    let rules = super::rules::ProxyRules::load(cfg.rules.as_deref()).map_err(|e| e.to_string())?;
    let dashboard = match &cfg.dashboard {
        Some((addr, realm)) => {
            let (listener, bound) = crate::dashboard::bind(*addr).await?;
            let view = edge.realm_metrics(realms[realm].clone()).await;
            let (latest, follow) = crate::dashboard::follow(
                realms[realm].label.clone(),
                view,
                std::time::Duration::from_secs(1),
            );
            println!("dashboard listening http://{bound}");
            info!("dashboard of realm {realm} on http://{bound}");
            Some((
                tokio::spawn(crate::dashboard::serve(listener, latest)),
                follow,
            ))
        }
        None => None,
    };
    // Gateway doors on this proxy's edge: its clients reach the local DDS topics the proxy
    // exports and imports in-process, and the realm.
    let doors = match cfg.gateway.take() {
        Some(g) => Some(
            crate::cmd::gateway::doors::start(
                edge.clone(),
                realms[&g.realm].clone(),
                definitions.clone(),
                g.doors,
                g.tls,
            )
            .await?,
        ),
        None => None,
    };
    if let Some(d) = &doors {
        // The proxy's rules apply to what the doors' clients publish and receive too.
        let _ = d.gw.rules.set(rules.clone());
    }
    let nodes = super::nodes::NodeNames::default();

    let xml = super::dds_config::xml(&cfg.dds);
    let participant =
        Participant::new(cfg.dds.domain, xml.as_deref()).map_err(|e| format!("DDS: {e}"))?;
    info!(domain = cfg.dds.domain, "DDS participant up");
    let mqtt = match cfg.mqtt.take() {
        Some(section) => Some(
            crate::mqtt::Bridge::start(
                section,
                crate::mqtt::Context {
                    participant: participant.clone(),
                    definitions: definitions.clone(),
                    realms: Some((edge.clone(), realms.clone())),
                },
            )
            .await?,
        ),
        None => None,
    };
    if !cfg.encrypt_payloads {
        warn!("encrypt_payloads is false: exported payloads travel in clear text (authenticated, not confidential)");
    }

    // Which node owns which writer (NODE in the rules), while there is a rules file.
    let _node_reader = match rules.has_file() {
        true => Some(
            nodes
                .follow(&participant)
                .map_err(|e| format!("DDS ros_discovery_info reader: {e}"))?,
        ),
        false => None,
    };
    let (status, ticker) = Status::start_proxy(&cfg, &router, &edge).await?;
    let realm_list: Vec<Arc<roam_edge::Realm>> = realms.values().cloned().collect();
    let _metrics_to_realms = Status::announce(
        &cfg.id,
        roam_edge::metrics::ProcessKind::Proxy,
        &router,
        &edge,
        &realm_list,
    )
    .await;
    let metrics_listen = cfg
        .metrics_listen
        .as_deref()
        .map(|s| crate::addr::parse_listen(s).map_err(|e| format!("metrics_listen: {e}")))
        .transpose()?;
    let _metrics_endpoint =
        crate::cmd::router::serve_metrics(metrics_listen, status.metrics()).await?;
    let display = display_ticker(rules.clone(), cfg.status_interval_s);
    let mut hangup = match rules.has_file() {
        true => Some(
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
                .map_err(|e| format!("cannot handle SIGHUP: {e}"))?,
        ),
        false => None,
    };

    let (mut service_exports, mut service_imports) = service_legs(&cfg);
    // Raw DDS topics travel like ROS ones, under their own DDS names.
    let raw = |m: &super::config::Mapping| Leg {
        dds_topic: m.local.clone(),
        remote: dds_topic(&m.remote),
        realm: m.realm.clone(),
        service: None,
    };
    service_exports.extend(
        cfg.exports
            .iter()
            .filter(|m| m.what == What::DdsTopic)
            .map(raw),
    );
    service_imports.extend(
        cfg.imports
            .iter()
            .filter(|m| m.what == What::DdsTopic)
            .map(raw),
    );
    let topic_imports = cfg
        .imports
        .iter()
        .filter(|m| m.what == What::Topic)
        .map(|m| Leg {
            dds_topic: topic_to_dds(&m.local),
            remote: m.remote.clone(),
            realm: m.realm.clone(),
            service: None,
        });
    // Services whose local endpoints carry call identities beside the payload.
    let domain =
        u16::try_from(cfg.dds.domain).map_err(|_| "dds.domain out of range".to_string())?;
    let networks = interface_addresses(&cfg.dds.interfaces);
    if networks.is_empty() && !cfg.dds.interfaces.is_empty() {
        warn!(interfaces = ?cfg.dds.interfaces, "no IPv4 address on dds.interfaces: a RustDDS participant (services in rmw_fastrtps's convention) would use every interface");
    }
    let mut fast = FastServices::new(
        edge.clone(),
        service_entries(&cfg, &realms),
        domain,
        networks,
    );
    let views = fast.views();
    let type_hashes = cfg.dds.ros_distro.as_deref() != Some("humble");
    let start_import = |leg: Leg, admit: Option<Admit>| {
        let leg = ImportLeg {
            realm: realms[&leg.realm].clone(),
            dds_topic: leg.dds_topic,
            remote: leg.remote,
            definitions: definitions.clone(),
            rules: rules.clone(),
            admit,
            type_hashes,
        };
        tokio::spawn(import(edge.clone(), participant.clone(), leg));
    };
    for leg in topic_imports.chain(service_imports) {
        info!(dds_topic = %leg.dds_topic, from = %leg.remote, realm = %leg.realm, "importing");
        let admit = admit(&leg, &fast, &views);
        start_import(leg, admit);
    }
    // Topics imported because a local subscriber reads them and an import pattern matches.
    let mut pattern_imports: HashSet<String> = HashSet::new();

    // Discovery events are few (one per endpoint in the domain and its changes), so an
    // unbounded channel is fine, and sending never blocks a CycloneDDS thread.
    let (ev_tx, mut ev_rx) = mpsc::unbounded_channel::<DiscoveryEvent>();
    let _discovery = Discovery::new(&participant, move |ev| {
        let _ = ev_tx.send(ev);
    })
    .map_err(|e| format!("DDS discovery: {e}"))?;

    let mut node = NodeAnnouncer::new(&participant, &cfg)?;
    let cfg = Arc::new(cfg);
    let directory =
        announce_directory(&cfg, &service_exports, &edge, &participant, &realms).await?;
    let settings: HashMap<String, Setting> = service_exports
        .iter()
        .filter_map(|l| Some((l.dds_topic.clone(), l.service?.0)))
        .collect();
    let skip = |topic: &str| -> Option<SkipWriter> {
        let setting = *settings.get(topic)?;
        let v = views.clone();
        Some(Arc::new(move |g: &Guid| v.is_fast(setting, g)))
    };
    // One export task per exported DDS topic, fed that topic's local publications.
    let mut exports: HashMap<String, mpsc::UnboundedSender<PublicationEvent>> = HashMap::new();
    let mut exported: HashMap<Guid, String> = HashMap::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            Some(()) = recv_hangup(&mut hangup) => {
                info!(target: "roam::rules", "SIGHUP: reloading the rules");
                let r = rules.clone();
                // File reads: off the async workers.
                let _ = tokio::task::spawn_blocking(move || r.reload()).await;
            }
            ev = ev_rx.recv() => {
                let Some(ev) = ev else { continue };
                tracing::debug!(?ev, "DDS discovery");
                node.observe(&participant, &views, &ev);
                fast.observe(&participant, &ev);
                if let DiscoveryEvent::Subscription(ep) = &ev {
                    if let Some(leg) = pattern_import(&cfg, &participant, &views, ep) {
                        if pattern_imports.insert(leg.dds_topic.clone()) {
                            info!(dds_topic = %leg.dds_topic, from = %leg.remote, realm = %leg.realm, "importing (a local subscriber reads it and an import pattern matches)");
                            start_import(leg, None);
                        }
                    }
                }
                let DiscoveryEvent::Publication(ep) = ev else { continue };
                if !ep.alive {
                    if let Some(topic) = exported.remove(&ep.guid) {
                        if let Some(tx) = exports.get(&topic) {
                            let _ = tx.send(PublicationEvent::Down(ep.guid));
                        }
                    }
                    continue;
                }
                let Some((realm, remote)) = exportable(&cfg, &service_exports, &participant, &ep, Some(&views)) else { continue };
                let tx = exports.entry(ep.topic_name.clone()).or_insert_with(|| {
                    let (tx, rx) = mpsc::unbounded_channel();
                    let leg = ExportLeg {
                        dds_topic: ep.topic_name.clone(),
                        remote,
                        realm: realms[&realm].clone(),
                        encrypt: cfg.encrypt_payloads,
                        definitions: definitions.clone(),
                        rules: rules.clone(),
                        nodes: nodes.clone(),
                        skip: skip(&ep.topic_name),
                    };
                    tokio::spawn(export(edge.clone(), participant.clone(), leg, rx));
                    tx
                });
                exported.insert(ep.guid, ep.topic_name.clone());
                let _ = tx.send(PublicationEvent::Up(ep));
            }
        }
    }
    directory.stop().await;
    if let Some(m) = mqtt {
        m.stop().await;
    }
    display.abort();
    if let Some(d) = doors {
        d.stop();
    }
    if let Some((server, follow)) = dashboard {
        server.abort();
        follow.abort();
    }
    rules.log_figures(true);
    rules.finish_logs();
    ticker.stop().await;
    status.report().await;
    router.shutdown().await;
    let _ = router_task.await;
    Ok(())
}

/// The next SIGHUP, if the proxy handles it (it does with a rules file).
async fn recv_hangup(h: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match h {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}

/// Logs the Display rules' figures every status interval (never with 0: only at exit).
fn display_ticker(rules: Arc<super::rules::ProxyRules>, secs: u64) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if secs == 0 {
            return;
        }
        let mut every = tokio::time::interval(std::time::Duration::from_secs(secs));
        every.tick().await;
        loop {
            every.tick().await;
            rules.log_figures(false);
        }
    })
}

/// The proxy's entries in its realms' directories ([`super::directory`]): its exports as
/// [`exportable`] decides them for each local publication, and its imports.
async fn announce_directory(
    cfg: &Arc<ProxyConfig>,
    service_exports: &[Leg],
    edge: &Edge,
    participant: &Participant,
    realms: &BTreeMap<String, Arc<roam_edge::Realm>>,
) -> Result<super::directory::ProxyDirectory, String> {
    let (c, legs) = (cfg.clone(), service_exports.to_vec());
    // The directory lists every local server and client of an exported service, whichever
    // convention it speaks.
    let exported =
        Box::new(move |me: &Participant, ep: &Endpoint| exportable(&c, &legs, me, ep, None));
    let imports = super::directory::imports(cfg);
    let c = cfg.clone();
    let pattern_imported = Box::new(move |dds_topic: &str| match ros_endpoint(dds_topic) {
        Some(RosEndpoint::Topic(local)) => c.pattern_import_of(&local),
        _ => None,
    });
    super::directory::start(
        edge,
        participant,
        realms,
        imports,
        pattern_imported,
        exported,
    )
    .await
}

/// Whether a discovered publication is one this proxy exports: (realm, realm topic). With
/// `fast`, a service's writers in rmw_fastrtps's convention are not (their leg is
/// [`super::fast_services`]'s).
fn exportable(
    cfg: &ProxyConfig,
    service_exports: &[Leg],
    me: &Participant,
    ep: &Endpoint,
    fast: Option<&Views>,
) -> Option<(String, String)> {
    // Our own endpoints, and any roam proxy's import writers, are never exported.
    if !ep.alive || me.owns(ep) || is_proxy_import(&ep.user_data) {
        return None;
    }
    if let Some(leg) = service_exports
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

/// One direction of a topic or service between a DDS topic here and a name in a realm.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Leg {
    dds_topic: String,
    remote: String,
    realm: String,
    /// A service's request or reply topic: its convention setting, and whether its server is
    /// here (an `exports:` entry).
    service: Option<(Setting, bool)>,
}

/// The configured services, for [`FastServices`].
fn service_entries(
    cfg: &ProxyConfig,
    realms: &BTreeMap<String, Arc<roam_edge::Realm>>,
) -> Vec<ServiceEntry> {
    cfg.exports
        .iter()
        .map(|m| (m, true))
        .chain(cfg.imports.iter().map(|m| (m, false)))
        .filter(|(m, _)| m.what == What::Service)
        .map(|(m, server_here)| {
            let (rq, rr) = service_to_dds(&m.local);
            ServiceEntry {
                local: m.local.clone(),
                rq,
                rr,
                remote: m.remote.clone(),
                realm: realms[&m.realm].clone(),
                server_here,
                setting: m.convention,
                encrypt: cfg.encrypt_payloads,
            }
        })
        .collect()
}

/// What a service's CycloneDDS import writes: requests only while an rmw_cyclonedds server
/// is here; replies except those for the clients [`FastServices`] serves.
fn admit(leg: &Leg, fast: &FastServices, views: &Arc<Views>) -> Option<Admit> {
    let (_, server_here) = leg.service?;
    if server_here {
        let gate = fast.cyclone_gate(&leg.dds_topic)?;
        return Some(Arc::new(move |_: &[u8]| *gate.borrow()));
    }
    let v = views.clone();
    Some(Arc::new(move |cdr: &[u8]| {
        !roam_edge::service::wire::split(cdr).is_ok_and(|h| v.is_fast_client(h.id.client))
    }))
}

/// A ROS 2 service is two DDS topics: requests (`rq/...Request`, written by clients) and
/// replies (`rr/...Reply`, written by the server). The network with the server exports the
/// replies and imports the requests; a network with clients does the opposite. Both travel
/// verbatim: the rmw request header inside each sample (client GUID and sequence) lets every
/// client pick its own replies, so the proxies keep no per-call state.
fn service_legs(cfg: &ProxyConfig) -> (Vec<Leg>, Vec<Leg>) {
    let (mut exports, mut imports) = (Vec::new(), Vec::new());
    for (m, server_here) in cfg
        .exports
        .iter()
        .map(|m| (m, true))
        .chain(cfg.imports.iter().map(|m| (m, false)))
        .filter(|(m, _)| m.what == What::Service)
    {
        let (rq, rr) = service_to_dds(&m.local);
        let service = Some((m.convention, server_here));
        let request = Leg {
            dds_topic: rq,
            remote: service_request(&m.remote),
            realm: m.realm.clone(),
            service,
        };
        let reply = Leg {
            dds_topic: rr,
            remote: service_reply(&m.remote),
            realm: m.realm.clone(),
            service,
        };
        if server_here {
            exports.push(reply);
            imports.push(request);
        } else {
            exports.push(request);
            imports.push(reply);
        }
    }
    (exports, imports)
}

/// Announces the proxy as a ROS 2 node in `ros_discovery_info`, listing the readers and
/// writers its participant owns, so `ros2 node list` and `ros2 topic info -v` show it.
struct NodeAnnouncer(ros_discovery_info::NodeAnnouncer);

impl NodeAnnouncer {
    fn new(participant: &Participant, cfg: &ProxyConfig) -> Result<Self, String> {
        let name: String = cfg
            .id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let gid = ros_discovery_info::GidSize::for_distro(cfg.dds.ros_distro.as_deref());
        ros_discovery_info::NodeAnnouncer::new(participant, "/", &format!("roam_proxy_{name}"), gid)
            .map(Self)
            .map_err(|e| format!("DDS ros_discovery_info: {e}"))
    }

    /// Tracks our own ROS endpoints (the RustDDS participant's too); republishes when they
    /// change.
    fn observe(&mut self, participant: &Participant, views: &Views, ev: &DiscoveryEvent) {
        let ep = ev.endpoint();
        let ours = participant.owns(ep) || views.is_own(&ep.guid);
        if !ours || ros_endpoint(&ep.topic_name).is_none() {
            return;
        }
        let writer = matches!(ev, DiscoveryEvent::Publication(_));
        // A reliable write may wait briefly for local readers: keep it off the async workers.
        let res = tokio::task::block_in_place(|| self.0.set_endpoint(ep.guid, writer, ep.alive));
        if let Err(e) = res {
            warn!("cannot announce the proxy in ros_discovery_info: {e}");
        }
    }
}

/// The key the proxy signs its envelopes with, if it signs: `sign:` as configured, else
/// whenever one of its realms refuses unsigned envelopes (its members could not read this
/// proxy otherwise). A signing proxy whose key is not among a signed realm's members is
/// refused by every receiver there, so that is said at start.
fn signing_identity(
    cfg: &ProxyConfig,
    realms: &BTreeMap<String, Arc<roam_edge::realm::Realm>>,
) -> Result<Option<Arc<roam_proto::SigningIdentity>>, String> {
    let sign = cfg
        .sign
        .unwrap_or_else(|| realms.values().any(|r| r.require_signed));
    if !sign {
        return Ok(None);
    }
    let id = roam_net::pki::load_identity(&cfg.pki, &cfg.id).map_err(|e| e.to_string())?;
    let signer = roam_proto::SigningIdentity::from_pkcs8(&id.signing_pkcs8)?;
    for (name, realm) in realms {
        if realm.require_signed && !realm.members.contains_key(&signer.public_key()) {
            warn!(
                realm = %name,
                "this proxy signs, but its key is not among the realm's members: receivers there refuse what it sends (roam realm add-member {} --realm FILE --pki DIR)",
                cfg.id
            );
        }
    }
    info!("signing every envelope as {}", cfg.id);
    Ok(Some(Arc::new(signer)))
}
