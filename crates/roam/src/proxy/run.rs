//! The proxy process: a DDS participant on the local domain, an in-process edge router, and
//! the tasks that forward what crosses between them ([`super::forwarding`]: one task per
//! exported or imported topic, the service legs). This file wires them: configuration, the
//! router, DDS discovery (fed to the forwarding), the directory, and the proxy's own entry in
//! `ros_discovery_info`; and the rules file (reloaded on SIGHUP).

use std::collections::BTreeMap;
use std::sync::Arc;

use roam_dds::{ros_discovery_info, Discovery, DiscoveryEvent, Endpoint, Participant};
use roam_edge::ros_names::ros_endpoint;
use roam_edge::{Edge, Port};
use roam_net::runtime::{self, PeerAddr};
use tokio::sync::mpsc;
use tracing::{info, warn};

use super::config::ProxyConfig;
use super::fast_services::{interface_addresses, FastServices, Views};
use super::forwarding::{self, exportable, Context, Forwarding};
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
        Participant::new(cfg.dds.domain, Some(&xml)).map_err(|e| format!("DDS: {e}"))?;
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

    // Services whose local endpoints carry call identities beside the payload.
    let domain =
        u16::try_from(cfg.dds.domain).map_err(|_| "dds.domain out of range".to_string())?;
    let networks = interface_addresses(&cfg.dds.interfaces);
    if networks.is_empty() && !cfg.dds.interfaces.is_empty() {
        warn!(interfaces = ?cfg.dds.interfaces, "no IPv4 address on dds.interfaces: a RustDDS participant (services in rmw_fastrtps's convention) would use every interface");
    }
    let fast = FastServices::new(edge.clone(), domain, networks);
    let cfg = Arc::new(cfg);
    // What the file names starts now; what patterns match, as discovery shows it.
    let mut forwarding = Forwarding::new(
        Context {
            cfg: cfg.clone(),
            edge: edge.clone(),
            participant: participant.clone(),
            intake: Arc::new(super::intake::Intake::new(
                participant.clone(),
                cfg.dds.bulk_types.as_deref(),
            )),
            realms: realms.clone(),
            definitions: definitions.clone(),
            rules: rules.clone(),
            nodes: nodes.clone(),
            type_hashes: cfg.dds.ros_distro.as_deref() != Some("humble"),
        },
        fast,
    );
    let views = forwarding.views();

    // Discovery events are few (one per endpoint in the domain and its changes), so an
    // unbounded channel is fine, and sending never blocks a CycloneDDS thread.
    let (ev_tx, mut ev_rx) = mpsc::unbounded_channel::<DiscoveryEvent>();
    let _discovery = Discovery::new(&participant, move |ev| {
        let _ = ev_tx.send(ev);
    })
    .map_err(|e| format!("DDS discovery: {e}"))?;

    let mut node = NodeAnnouncer::new(&participant, &cfg)?;
    let directory = announce_directory(&cfg, &forwarding, &edge, &participant, &realms).await?;
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
                forwarding.discovered(ev);
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
/// [`exportable`] decides them for each local publication (looked at again when a pattern
/// adds exports), and its imports.
async fn announce_directory(
    cfg: &Arc<ProxyConfig>,
    forwarding: &Forwarding,
    edge: &Edge,
    participant: &Participant,
    realms: &BTreeMap<String, Arc<roam_edge::Realm>>,
) -> Result<super::directory::ProxyDirectory, String> {
    let (c, shared) = (cfg.clone(), forwarding.shared());
    // The directory lists every local server and client of an exported service, whichever
    // convention it speaks.
    let exported = Box::new(move |me: &Participant, ep: &Endpoint| {
        exportable(&c, &forwarding::read(&shared), me, ep, None)
    });
    let imports = super::directory::imports(cfg);
    let (c, shared) = (cfg.clone(), forwarding.shared());
    let pattern_imported = Box::new(move |dds_topic: &str| {
        forwarding::pattern_imported(&c, &forwarding::read(&shared), dds_topic)
    });
    super::directory::start(
        edge,
        participant,
        realms,
        imports,
        pattern_imported,
        exported,
        forwarding.changed(),
    )
    .await
}

/// Announces the proxy as a ROS 2 node in `ros_discovery_info`, listing the readers and
/// writers its participant owns, so `ros2 node list` and `ros2 topic info -v` show it. The
/// readers of its second participant (bulk topics, [`super::intake`]) are a node of their own,
/// `roam_proxy_NAME_bulk`, announced by that participant: rmw finds an endpoint's node through
/// the endpoint's own participant.
struct NodeAnnouncer {
    main: ros_discovery_info::NodeAnnouncer,
    /// Made when the second participant's first endpoint appears.
    bulk: Option<ros_discovery_info::NodeAnnouncer>,
    name: String,
    gid: ros_discovery_info::GidSize,
}

impl NodeAnnouncer {
    fn new(participant: &Participant, cfg: &ProxyConfig) -> Result<Self, String> {
        let name: String = cfg
            .id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let name = format!("roam_proxy_{name}");
        let gid = ros_discovery_info::GidSize::for_distro(cfg.dds.ros_distro.as_deref());
        let main = ros_discovery_info::NodeAnnouncer::new(participant, "/", &name, gid)
            .map_err(|e| format!("DDS ros_discovery_info: {e}"))?;
        Ok(NodeAnnouncer {
            main,
            bulk: None,
            name,
            gid,
        })
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
        let on_sibling = participant.owns(ep) && ep.participant_guid != participant.guid();
        // A reliable write may wait briefly for local readers: keep it off the async workers.
        let res = tokio::task::block_in_place(|| {
            let announcer = if on_sibling {
                self.bulk_announcer(participant)?
            } else {
                &mut self.main
            };
            announcer.set_endpoint(ep.guid, writer, ep.alive)
        });
        if let Err(e) = res {
            warn!("cannot announce the proxy in ros_discovery_info: {e}");
        }
    }

    /// The second participant's announcer, made on first use (the participant exists: one of
    /// its endpoints was seen).
    fn bulk_announcer(
        &mut self,
        participant: &Participant,
    ) -> Result<&mut ros_discovery_info::NodeAnnouncer, roam_dds::DdsError> {
        match self.bulk {
            Some(ref mut made) => Ok(made),
            None => {
                let sibling = participant.sibling()?;
                let name = format!("{}_bulk", self.name);
                let made = ros_discovery_info::NodeAnnouncer::new(&sibling, "/", &name, self.gid)?;
                Ok(self.bulk.insert(made))
            }
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
