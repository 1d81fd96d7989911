//! `roam gateway`: programs outside ROS join a realm. The gateway runs its own edge router
//! (as a proxy does: started by `boot.rs`, linked to its upstream routers), so its clients
//! reach each other in-process as well as the realm; it serves rosbridge v2 over WebSocket
//! and, when configured, gRPC and the Foxglove WebSocket protocol (see docs/gateway.md).

mod config;
mod tls_config;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use clap::Args;
use roam_edge::definitions::DefinitionSource;
use roam_edge::{Edge, Port};
use roam_gateway::tls::DoorTls;
use roam_gateway::Gateway;
use roam_net::runtime::PeerAddr;

use super::CmdResult;

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
}

pub async fn run(a: GatewayArgs) -> CmdResult {
    let mut stop = super::signals::Stop::install()?;
    let (cfg, tls) = config::load(
        &a.config,
        config::Overrides {
            listen: a.listen,
            grpc_listen: a.grpc_listen,
            foxglove_listen: a.foxglove_listen,
            upstream: a.connect,
        },
    )?;
    let realm = Arc::new(roam_edge::realm::load(&cfg.realm)?);
    let definitions = Arc::new(
        DefinitionSource::from_env(&cfg.msg_paths).map_err(|e| format!("msg_paths: {e}"))?,
    );
    let connect = cfg
        .upstream
        .iter()
        .map(|s| s.parse::<PeerAddr>())
        .collect::<Result<Vec<_>, _>>()?;
    let router_listen = cfg
        .router_listen
        .as_deref()
        .map(roam_net::runtime::resolve)
        .transpose()?;
    let (router, _router_task) = crate::boot::start_router(crate::boot::RouterBoot {
        id: &cfg.id,
        pki: &cfg.pki,
        listen: router_listen,
        listen_tcp: None,
        connect,
        link: &cfg.link,
        what: "the gateway (its edge router)",
    })
    .await?;
    let edge = Edge::new(Port::Router(router), cfg.id.clone());
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|e| format!("rosbridge: cannot listen on {}: {e}", cfg.listen))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("rosbridge: {e}"))?;
    let authenticated = cfg.tokens.is_some();
    let ws_tls = match &tls {
        Some(t) => DoorTls::new(
            t.server_config(&[b"http/1.1"])
                .map_err(|e| format!("tls: {e}"))?,
        ),
        None => DoorTls::plain(),
    };
    let scheme = if ws_tls.is_tls() { "wss" } else { "ws" };
    let gw = Gateway::new(edge, realm.clone(), definitions, cfg.tokens, cfg.limits).await;
    println!("rosbridge listening {scheme}://{bound}");
    tracing::info!(
        "rosbridge v2 on {scheme}://{bound} for realm {} ({})",
        realm.label,
        if authenticated {
            "clients authenticate with a token or a client certificate"
        } else {
            "no authentication: every client may do everything"
        }
    );
    let server = tokio::spawn(roam_gateway::rosbridge::serve(gw.clone(), listener, ws_tls));
    let grpc = match cfg.grpc_listen {
        Some(addr) => Some(start_grpc(gw.clone(), addr, tls.as_ref()).await?),
        None => None,
    };
    let foxglove = match cfg.foxglove_listen {
        Some(addr) => Some(start_foxglove(gw.clone(), addr, tls.as_ref()).await?),
        None => None,
    };
    let sig = stop.wait().await;
    eprintln!("{sig}: stopping");
    server.abort();
    for door in [grpc, foxglove].into_iter().flatten() {
        door.abort();
    }
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

/// Binds the gRPC door's address and serves it; prints `grpc listening ADDR`.
async fn start_grpc(
    gw: Arc<Gateway>,
    addr: std::net::SocketAddr,
    tls: Option<&roam_gateway::tls::TlsSettings>,
) -> Result<tokio::task::JoinHandle<()>, String> {
    // gRPC is HTTP/2: ALPN `h2`.
    let door_tls = match tls {
        Some(t) => DoorTls::new(t.server_config(&[b"h2"]).map_err(|e| format!("tls: {e}"))?),
        None => DoorTls::plain(),
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("grpc: cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| format!("grpc: {e}"))?;
    let scheme = if door_tls.is_tls() { " (TLS)" } else { "" };
    println!("grpc listening {bound}{scheme}");
    tracing::info!("gRPC (roam.gateway.v1) on {bound}{scheme}");
    let incoming = roam_gateway::grpc::door_incoming(gw.clone(), listener, door_tls);
    Ok(tokio::spawn(async move {
        if let Err(e) = roam_gateway::grpc::serve(gw, incoming).await {
            tracing::error!("grpc: the server stopped: {e}");
        }
    }))
}

/// Binds the Foxglove door's address and serves it; prints `foxglove listening ws://ADDR`.
async fn start_foxglove(
    gw: Arc<Gateway>,
    addr: std::net::SocketAddr,
    tls: Option<&roam_gateway::tls::TlsSettings>,
) -> Result<tokio::task::JoinHandle<()>, String> {
    // WebSocket is HTTP/1.1 until the upgrade.
    let door_tls = match tls {
        Some(t) => DoorTls::new(
            t.server_config(&[b"http/1.1"])
                .map_err(|e| format!("tls: {e}"))?,
        ),
        None => DoorTls::plain(),
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("foxglove: cannot listen on {addr}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("foxglove: {e}"))?;
    let scheme = if door_tls.is_tls() { "wss" } else { "ws" };
    println!("foxglove listening {scheme}://{bound}");
    tracing::info!("Foxglove WebSocket on {scheme}://{bound}");
    Ok(tokio::spawn(roam_gateway::foxglove::serve(
        gw, listener, door_tls,
    )))
}
