//! What the edge tests share: a CA, a real router in process, a real client link to it (QUIC
//! on loopback), a realm.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use roam_edge::{Edge, Port, Realm};
use roam_net::client::{Client, ClientConfig};
use roam_net::link::LinkConfig;
use roam_net::runtime::{self, PeerAddr, RouterConfig, RouterHandle, RoutingTimers};
use roam_pki::{self as pki, Validity};
use roam_proto::frame::Role;
use roam_proto::RealmSecret;

/// The longest any single wait in these tests may take.
pub const T: Duration = Duration::from_secs(10);

pub struct Dir(pub PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn pki_dir(test: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("roam-edge-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    pki::init_ca(&d).unwrap();
    Dir(d)
}

pub async fn router(dir: &Dir, name: &str) -> RouterHandle {
    pki::issue(&dir.0, name, Role::Router, Validity::days(1)).unwrap();
    let identity = Arc::new(pki::load_identity(&dir.0, name).unwrap());
    let (h, _task) = runtime::start(RouterConfig {
        listen_mqtt: Vec::new(),
        identity,
        listen: Some("127.0.0.1:0".parse().unwrap()),
        listen_tcp: None,
        connect: vec![],
        link: LinkConfig::default(),
        timers: RoutingTimers::default(),
        max_backoff: Duration::from_millis(200),
        stall_timeout: Duration::from_secs(5),
    })
    .await
    .unwrap();
    h
}

/// A client link to `router`, as a program without a router of its own has.
pub fn client(dir: &Dir, name: &str, router: &RouterHandle) -> Arc<Client> {
    pki::issue(&dir.0, name, Role::Client, Validity::days(1)).unwrap();
    let identity = Arc::new(pki::load_identity(&dir.0, name).unwrap());
    Arc::new(
        Client::start(ClientConfig {
            identity,
            router: PeerAddr::Quic(router.quic_addr.unwrap()),
            link: LinkConfig::default(),
            max_backoff: Duration::from_millis(200),
        })
        .unwrap(),
    )
}

/// An edge over a client link to `router`.
pub fn client_edge(dir: &Dir, name: &str, router: &RouterHandle) -> Edge {
    Edge::new(Port::Client(client(dir, name, router)), name)
}

pub fn realm() -> Arc<Realm> {
    realm_with_members(HashMap::new())
}

/// A realm whose members (signing key -> name) must sign what they send, when there are any.
pub fn realm_with_members(members: HashMap<[u8; 32], String>) -> Arc<Realm> {
    let mut realm = Realm::from_secret("test", RealmSecret::from_bytes([6; 32]));
    realm.require_signed = !members.is_empty();
    realm.members = members;
    Arc::new(realm)
}

/// Waits until the router's count of subscribed names is `n`.
pub async fn until_subscribed_names(r: &RouterHandle, n: u64) {
    let end = Instant::now() + T;
    loop {
        let now = r.report().await.unwrap().routing;
        if now.subscribed_names == n {
            return;
        }
        assert!(
            Instant::now() < end,
            "subscribed names stay {} (waiting for {n})",
            now.subscribed_names
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
