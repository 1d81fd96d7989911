//! The proxy process: a DDS participant on the local domain, an in-process edge router, and
//! the tasks that forward what crosses between them ([`roam_proxy::forwarding`]: one task per
//! exported or imported topic, the service legs). This file wires them: configuration, the
//! router, DDS discovery (fed to the forwarding), the directory, and the proxy's own entry in
//! `ros_discovery_info`; and the rules file (reloaded on SIGHUP).

use std::collections::BTreeMap;
use std::sync::Arc;

use roam_dds::{Discovery, DiscoveryEvent, Participant};
use roam_edge::{Edge, Port};
use roam_net::runtime::{self, PeerAddr};
use tokio::sync::mpsc;
use tracing::{info, warn};

use crate::stats::Status;
use roam_proxy::config::ProxyConfig;
use roam_proxy::fast_services::{interface_addresses, FastServices};
use roam_proxy::forwarding::{Context, Forwarding};
use roam_proxy::process::{announce_directory, display_ticker, signing_identity, NodeAnnouncer};

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
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let listen = cfg
        .listen
        .as_deref()
        .map(runtime::resolve)
        .transpose()
        .map_err(|e| e.to_string())?;
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
    let edge = match signing_identity(&cfg, &realms).map_err(|e| e.to_string())? {
        Some(signer) => Edge::signed(Port::Router(router.clone()), cfg.id.clone(), signer),
        None => Edge::new(Port::Router(router.clone()), cfg.id.clone()),
    };
    // Every realm's epoch is taken up before anything is sealed in it.
    let identity = roam_pki::load_identity(&cfg.pki, &cfg.id).map_err(|e| e.to_string())?;
    let mut _epochs = Vec::new();
    for realm in realms.values() {
        _epochs.push(crate::cmd::connect::follow_epochs(&edge, realm, &identity).await?);
    }
    // Interface definitions on this machine (AMENT_PREFIX_PATH, msg_paths), announced with
    // the topics so that members without them can read the data.
    let definitions = Arc::new(
        roam_edge::definitions::DefinitionSource::from_env(&cfg.msg_paths)
            .map_err(|e| format!("msg_paths: {e}"))?,
    );

    let rules =
        roam_proxy::rules::ProxyRules::load(cfg.rules.as_deref()).map_err(|e| e.to_string())?;
    let dashboard = match &cfg.dashboard {
        Some((addr, realm)) => {
            let (listener, bound) = roam_gateway::dashboard::bind(*addr)
                .await
                .map_err(|e| e.to_string())?;
            let view = edge.realm_metrics(realms[realm].clone()).await;
            let (latest, follow) = roam_gateway::dashboard::follow(
                realms[realm].label.clone(),
                view,
                std::time::Duration::from_secs(1),
            );
            println!("dashboard listening http://{bound}");
            info!("dashboard of realm {realm} on http://{bound}");
            Some((
                tokio::spawn(roam_gateway::dashboard::serve(listener, latest)),
                follow,
            ))
        }
        None => None,
    };
    // Gateway doors on this proxy's edge: its clients reach the local DDS topics the proxy
    // exports and imports in-process, and the realm.
    let doors = match cfg.gateway.take() {
        Some(g) => Some(
            roam_gateway::doors::start(
                edge.clone(),
                realms[&g.realm].clone(),
                definitions.clone(),
                g.doors.openings(),
                g.tls,
            )
            .await
            .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    if let Some(d) = &doors {
        // The proxy's rules apply to what the doors' clients publish and receive too.
        let _ = d.gw.rules.set(rules.clone());
    }
    let nodes = roam_proxy::nodes::NodeNames::default();

    let xml = roam_proxy::dds_config::xml(&cfg.dds);
    let participant =
        Participant::new(cfg.dds.domain, Some(&xml)).map_err(|e| format!("DDS: {e}"))?;
    info!(domain = cfg.dds.domain, "DDS participant up");
    let mqtt = match cfg.mqtt.take() {
        Some(section) => Some(
            roam_proxy::mqtt::Bridge::start(
                section,
                roam_proxy::mqtt::Context {
                    participant: participant.clone(),
                    definitions: definitions.clone(),
                    realms: Some((edge.clone(), realms.clone())),
                },
            )
            .await
            .map_err(|e| e.to_string())?,
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
        .map(|s| roam_config::addr::parse_listen(s).map_err(|e| format!("metrics_listen: {e}")))
        .transpose()?;
    let _metrics_endpoint =
        roam_edge::metrics::MetricsEndpoint::start(metrics_listen, status.metrics())
            .await
            .map_err(|e| e.to_string())?;
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
            intake: Arc::new(roam_proxy::intake::Intake::new(
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

    let mut node = NodeAnnouncer::new(&participant, &cfg).map_err(|e| e.to_string())?;
    let directory = announce_directory(&cfg, &forwarding, &edge, &participant, &realms)
        .await
        .map_err(|e| e.to_string())?;
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
