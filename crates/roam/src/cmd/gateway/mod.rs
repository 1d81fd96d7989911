//! `roam gateway`: programs outside ROS join a realm. The gateway is a client of a router
//! (like `roam sub`), reached through the edge layer; it serves rosbridge v2 over WebSocket
//! (see docs/gateway.md).

mod config;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use clap::Args;
use roam_edge::definitions::DefinitionSource;
use roam_gateway::Gateway;

use super::connect::{client_config, client_edge, ClientEdge};
use super::{CmdResult, ConnectArgs};

#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// Gateway configuration file (YAML: identity, PKI, router, realm, msg_paths, rosbridge
    /// listen address, limits, auth tokens; see docs/gateway.md).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: PathBuf,
    /// The rosbridge WebSocket address to listen on, e.g. 127.0.0.1:9090 (0 as the port picks
    /// a free one) [default: rosbridge.listen in the file, else 0.0.0.0:9090]. The address
    /// bound is printed on stdout as `rosbridge listening ws://ADDR`.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// The router to join the realm through (quic://HOST:PORT, tcp://HOST:PORT or HOST:PORT)
    /// [default: router in the file].
    #[arg(long, value_name = "ADDR")]
    pub connect: Option<String>,
}

pub async fn run(a: GatewayArgs) -> CmdResult {
    let mut stop = super::signals::Stop::install()?;
    let cfg = config::load(
        &a.config,
        config::Overrides {
            listen: a.listen,
            router: a.connect,
        },
    )?;
    let realm = Arc::new(roam_edge::realm::load(&cfg.realm)?);
    let definitions = Arc::new(
        DefinitionSource::from_env(&cfg.msg_paths).map_err(|e| format!("msg_paths: {e}"))?,
    );
    let conn = ConnectArgs {
        connect: cfg.router.clone(),
        pki: cfg.pki.clone(),
        id: cfg.id.clone(),
        max_message_bytes: None,
    };
    let ClientEdge { edge, .. } =
        client_edge(client_config(&conn)?, &cfg.id, "connected to", None)?;
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|e| format!("rosbridge: cannot listen on {}: {e}", cfg.listen))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("rosbridge: {e}"))?;
    let authenticated = cfg.tokens.is_some();
    let gw = Gateway::new(edge, realm.clone(), definitions, cfg.tokens, cfg.limits).await;
    println!("rosbridge listening ws://{bound}");
    tracing::info!(
        "rosbridge v2 on ws://{bound} for realm {} ({})",
        realm.label,
        if authenticated {
            "clients authenticate with a token"
        } else {
            "no authentication: every client may do everything"
        }
    );
    let server = tokio::spawn(roam_gateway::rosbridge::serve(gw.clone(), listener));
    let sig = stop.wait().await;
    eprintln!("{sig}: stopping");
    server.abort();
    let s = &gw.stats;
    eprintln!(
        "served {} clients; refused {} ops (authentication, permissions), {} bad frames; dropped {} messages for slow clients",
        s.clients_total.load(Ordering::Relaxed),
        s.refused.load(Ordering::Relaxed),
        s.bad_frames.load(Ordering::Relaxed),
        s.dropped.load(Ordering::Relaxed),
    );
    Ok(())
}
