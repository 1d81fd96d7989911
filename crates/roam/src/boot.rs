//! Starting a router from configuration: the one bootstrap that `roam router`, a proxy's edge
//! router and a gateway's share (identity, role check, links, listeners, dialers).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use roam_net::link::LinkConfig;
use roam_net::runtime::{self, PeerAddr, RouterConfig, RouterHandle, RoutingTimers};
use tokio::task::JoinHandle;

use roam_config::link::LinkFile;

/// What a router is started from.
pub struct RouterBoot<'a> {
    pub id: &'a str,
    pub pki: &'a Path,
    pub listen: Option<SocketAddr>,
    pub listen_tcp: Option<SocketAddr>,
    /// Rendezvous in MQTT brokers to be found at (`listen_mqtt:`).
    pub listen_mqtt: Vec<roam_net::mqtt::MqttPeer>,
    pub connect: Vec<PeerAddr>,
    /// The `link:` section, flags already applied.
    pub link: &'a LinkFile,
    /// Who runs it, for the error when the identity has a client certificate.
    pub what: &'a str,
}

/// Loads the identity (which must hold a router certificate), starts the router, and prints
/// `listening quic ADDR` / `listening tcp ADDR` on stdout (scripts and tests read them).
pub async fn start_router(b: RouterBoot<'_>) -> Result<(RouterHandle, JoinHandle<()>), String> {
    let link = b.link.apply(LinkConfig::default())?;
    let identity = roam_pki::load_identity(b.pki, b.id).map_err(|e| e.to_string())?;
    if identity.role != roam_proto::frame::Role::Router {
        return Err(format!(
            "{} runs a router: identity {} has a client certificate; issue one with `roam pki issue {} --role router`",
            b.what, b.id, b.id
        ));
    }
    let config = RouterConfig {
        identity: Arc::new(identity),
        listen: b.listen,
        listen_tcp: b.listen_tcp,
        listen_mqtt: b.listen_mqtt.clone(),
        connect: b.connect,
        link,
        timers: RoutingTimers::default(),
        max_backoff: Duration::from_millis(b.link.max_backoff_ms.unwrap_or(1000)),
        stall_timeout: b.link.stall_timeout(),
    };
    let (handle, task) = runtime::start(config).await.map_err(|e| e.to_string())?;
    if let Some(a) = handle.quic_addr {
        println!("listening quic {a}");
    }
    if let Some(a) = handle.tcp_addr {
        println!("listening tcp {a}");
    }
    for m in &b.listen_mqtt {
        println!("listening mqtt {m}");
    }
    Ok((handle, task))
}
