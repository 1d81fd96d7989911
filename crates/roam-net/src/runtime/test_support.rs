//! Routers on loopback for the runtime's tests, with a throw-away PKI.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use roam_proto::frame::Role;

use super::*;
use crate::link::LinkConfig;
use crate::pki;

pub struct Dir(pub PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn identity(dir: &Dir, name: &str) -> Arc<pki::Identity> {
    pki::issue(&dir.0, name, Role::Router, pki::Validity::days(1)).unwrap();
    Arc::new(pki::load_identity(&dir.0, name).unwrap())
}

pub async fn router(dir: &Dir, name: &str, connect: Option<SocketAddr>) -> RouterHandle {
    router_with(dir, name, connect, LinkConfig::default()).await
}

pub async fn router_with(
    dir: &Dir,
    name: &str,
    connect: Option<SocketAddr>,
    link: LinkConfig,
) -> RouterHandle {
    let config = RouterConfig {
        identity: identity(dir, name),
        listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        listen_tcp: None,
        connect: connect.map(PeerAddr::Quic).into_iter().collect(),
        link,
        timers: RoutingTimers::default(),
        max_backoff: Duration::from_millis(200),
        stall_timeout: Duration::from_secs(5),
    };
    start(config).await.unwrap().0
}
