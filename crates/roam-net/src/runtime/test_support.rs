//! Routers on loopback for the runtime's tests, with a throw-away PKI.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use roam_proto::frame::Role;

use super::*;
use crate::link::LinkConfig;
pub use roam_pki as pki;

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

pub async fn router(
    dir: &Dir,
    name: &str,
    connect: Option<SocketAddr>,
    link: LinkConfig,
) -> RouterHandle {
    let config = RouterConfig {
        identity: identity(dir, name),
        listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        listen_mqtt: Vec::new(),
        listen_tcp: None,
        connect: connect.map(PeerAddr::Quic).into_iter().collect(),
        link,
        timers: RoutingTimers::default(),
        max_backoff: Duration::from_millis(200),
        stall_timeout: Duration::from_secs(5),
    };
    start(config).await.unwrap().0
}

/// A publishing router linked to a subscribing one, with `name` subscribed (queue of
/// `depth`) and demand already seen by the publisher: ready to send.
pub struct PubSub {
    pub sub_router: RouterHandle,
    pub pub_router: RouterHandle,
    pub rx: crate::envelope_queue::QueueReceiver,
}

pub async fn pub_sub(dir: &Dir, name: roam_proto::Name, depth: usize, link: LinkConfig) -> PubSub {
    pub_sub_via(dir, name, depth, link, |addr| async move { addr }).await
}

/// [`pub_sub`] where the publishing router dials the address `via` gives for the
/// subscribing router's (a relay in between, say).
pub async fn pub_sub_via<F, Fut>(
    dir: &Dir,
    name: roam_proto::Name,
    depth: usize,
    link: LinkConfig,
    via: F,
) -> PubSub
where
    F: FnOnce(SocketAddr) -> Fut,
    Fut: std::future::Future<Output = SocketAddr>,
{
    pki::init_ca(&dir.0).unwrap();
    let sub_router = router(dir, "sub", None, link.clone()).await;
    let dial = via(sub_router.quic_addr.expect("the router listens on QUIC")).await;
    let pub_router = router(dir, "pub", Some(dial), link).await;
    let rx = sub_router.subscribe(name, depth).await.rx;
    let mut demand = pub_router.publish(name).await.demand;
    tokio::time::timeout(Duration::from_secs(10), demand.wait_for(|w| *w))
        .await
        .expect("no demand")
        .unwrap();
    PubSub {
        sub_router,
        pub_router,
        rx,
    }
}

/// The sequence number of the next envelope on `rx`, waiting up to 10 s for it.
pub async fn next_seq(rx: &mut crate::envelope_queue::QueueReceiver) -> u64 {
    let env = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a message in time")
        .expect("queue open");
    roam_proto::EnvelopeHeader::parse(&env).unwrap().seq
}
