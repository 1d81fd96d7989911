//! `roam gateway`: programs outside ROS join a realm. The gateway runs its own edge router
//! (as a proxy does: started by `boot.rs`, linked to its upstream routers), so its clients
//! reach each other in-process as well as the realm; it serves rosbridge v2 over WebSocket
//! and, when configured, gRPC and the Foxglove WebSocket protocol (see docs/gateway.md).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use roam_edge::definitions::DefinitionSource;
use roam_edge::{Edge, Port};
use roam_net::runtime::PeerAddr;

use super::CmdResult;
use roam_config::gateway as config;

#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// Gateway configuration file (YAML: identity, PKI, upstream routers, realm, msg_paths, rosbridge
    /// listen address, limits, auth tokens; see docs/gateway.md).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: PathBuf,
    /// The rosbridge WebSocket address to listen on, e.g. 127.0.0.1:9090 (0 as the port picks
    /// a free one) [default: rosbridge.listen in the file, else 0.0.0.0:9090]. The address
    /// bound is printed on stdout as `rosbridge listening ws://ADDR` (`wss://` with `tls:`).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Serve the gRPC door (roam.gateway.v1, proto/roam/gateway/v1/gateway.proto) on this
    /// address, e.g. 127.0.0.1:50051 (0 as the port picks a free one) [default: grpc.listen in
    /// the file; without either, no gRPC door]. The address bound is printed on stdout as
    /// `grpc listening ADDR`.
    #[arg(long, value_name = "ADDR")]
    pub grpc_listen: Option<String>,
    /// Serve the Foxglove WebSocket door (Foxglove, Lichtblick, @foxglove/ws-protocol
    /// clients) on this address, e.g. 127.0.0.1:8765 (0 as the port picks a free one)
    /// [default: foxglove.listen in the file; without either, no Foxglove door]. The address
    /// bound is printed on stdout as `foxglove listening ws://ADDR` (`wss://` with `tls:`).
    #[arg(long, value_name = "ADDR")]
    pub foxglove_listen: Option<String>,
    /// A router to join the realm through (quic://HOST:PORT, tcp://HOST:PORT or HOST:PORT);
    /// repeatable; replaces `upstream:` in the file.
    #[arg(long, value_name = "ADDR")]
    pub connect: Vec<String>,
    /// Serve Prometheus metrics (GET /metrics: the gateway's edge router, links and its
    /// clients' topics) on this address, e.g. 127.0.0.1:9465; replaces `metrics_listen:`.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
}

pub async fn run(a: GatewayArgs) -> CmdResult {
    let (cfg, tls) = config::load(
        &a.config,
        config::Overrides {
            listen: a.listen,
            grpc_listen: a.grpc_listen,
            foxglove_listen: a.foxglove_listen,
            upstream: a.connect,
            metrics_listen: a.metrics_listen,
        },
    )?;
    let rules =
        roam_proxy::rules::ProxyRules::load(cfg.rules.as_deref()).map_err(|e| e.to_string())?;
    // With a rules file SIGHUP reloads it instead of stopping.
    let mut stop = match rules.has_file() {
        true => super::signals::Stop::install_without_hangup()?,
        false => super::signals::Stop::install()?,
    };
    let realm = Arc::new(roam_edge::realm::load(&cfg.realm)?);
    let definitions = Arc::new(
        DefinitionSource::from_env(&cfg.msg_paths).map_err(|e| format!("msg_paths: {e}"))?,
    );
    let connect = cfg
        .upstream
        .iter()
        .map(|s| s.parse::<PeerAddr>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let router_listen = cfg
        .router_listen
        .as_deref()
        .map(roam_net::runtime::resolve)
        .transpose()
        .map_err(|e| e.to_string())?;
    let (router, _router_task) = crate::boot::start_router(crate::boot::RouterBoot {
        id: &cfg.id,
        pki: &cfg.pki,
        listen: router_listen,
        listen_tcp: None,
        listen_mqtt: Vec::new(),
        connect,
        link: &cfg.link,
        what: "the gateway (its edge router)",
    })
    .await?;
    let edge = Edge::new(Port::Router(router.clone()), cfg.id.clone());
    let identity = roam_pki::load_identity(&cfg.pki, &cfg.id).map_err(|e| e.to_string())?;
    let _epochs = super::connect::follow_epochs(&edge, &realm, &identity).await?;
    let metrics =
        roam_edge::metrics::Metrics::new(&cfg.id, roam_edge::metrics::ProcessKind::Gateway)
            .with_router(router.clone())
            .with_topics(Arc::new(edge.clone()));
    let metrics_listen = cfg
        .metrics_listen
        .as_deref()
        .map(|s| roam_config::addr::parse_listen(s).map_err(|e| format!("metrics_listen: {e}")))
        .transpose()?;
    let _metrics_endpoint = roam_edge::metrics::MetricsEndpoint::start(metrics_listen, &metrics)
        .await
        .map_err(|e| e.to_string())?;
    let _metrics_to_realm = crate::stats::Status::announce(
        &cfg.id,
        roam_edge::metrics::ProcessKind::Gateway,
        &router,
        &edge,
        std::slice::from_ref(&realm),
    )
    .await;
    let doors = roam_gateway::doors::start(edge, realm, definitions, cfg.doors.openings(), tls)
        .await
        .map_err(|e| e.to_string())?;
    let _ = doors.gw.rules.set(rules.clone());
    let mut hangup = match rules.has_file() {
        true => Some(
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
                .map_err(|e| format!("cannot handle SIGHUP: {e}"))?,
        ),
        false => None,
    };
    let sig = loop {
        tokio::select! {
            sig = stop.wait() => break sig,
            Some(()) = async { match hangup.as_mut() { Some(h) => h.recv().await, None => std::future::pending().await } } => {
                tracing::info!(target: "roam::rules", "SIGHUP: reloading the rules");
                rules.reload();
            }
        }
    };
    eprintln!("{sig}: stopping");
    rules.log_figures(true);
    rules.finish_logs();
    doors.stop();
    Ok(())
}
