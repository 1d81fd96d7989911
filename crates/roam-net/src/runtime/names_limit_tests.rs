//! A client link holds at most `client_max_names` names in a router: what it asks beyond
//! is refused and counted on its link, and its neighbours are untouched.

use std::sync::Arc;
use std::time::Duration;

use roam_proto::frame::Role;
use roam_proto::Name;

use super::test_support::{router, Dir};
use super::{LinkReport, PeerAddr, RouterHandle};
use crate::client::{Client, ClientConfig};
use crate::link::LinkConfig;

fn client(dir: &Dir, name: &str, router: std::net::SocketAddr) -> Client {
    roam_pki::issue(&dir.0, name, Role::Client, roam_pki::Validity::days(1)).unwrap();
    let identity = Arc::new(roam_pki::load_identity(&dir.0, name).unwrap());
    Client::start(ClientConfig {
        identity,
        router: PeerAddr::Quic(router),
        link: LinkConfig::default(),
        max_backoff: Duration::from_millis(100),
    })
    .unwrap()
}

/// The open link of `peer` once `done` holds for it (10 s at most).
async fn link_of(
    h: &RouterHandle,
    peer: &str,
    done: impl Fn(&LinkReport) -> bool,
) -> Option<LinkReport> {
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut last = None;
    while tokio::time::Instant::now() < end {
        let r = h.report().await?;
        last = r
            .links
            .into_iter()
            .find(|l| l.peer.name == peer && !l.closed);
        if last.as_ref().is_some_and(&done) {
            break;
        }
        // The report is asked for, not pushed: ask again shortly, until the deadline.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_over_its_limit_of_names_is_refused_and_counted_and_its_neighbour_is_not() {
    let dir = Dir(std::env::temp_dir().join(format!("roam-names-{}", std::process::id())));
    roam_pki::init_ca(&dir.0).unwrap();
    let link = LinkConfig {
        client_max_names: 5,
        ..LinkConfig::default()
    };
    let r = router(&dir, "r", None, link).await;
    let addr = r.quic_addr.expect("the router listens on QUIC");
    let greedy = client(&dir, "greedy", addr);
    let name = |i: u8| Name([i; 32]);
    let mut subs = Vec::new();
    for i in 0..8 {
        subs.push(greedy.subscribe(name(i), 4).await);
    }
    let held = link_of(&r, "greedy", |l| l.names + l.names_refused as usize >= 8).await;
    let held = held.expect("the client's link");
    assert_eq!((held.names, held.names_refused), (5, 3));
    // Another client's room is its own.
    let modest = client(&dir, "modest", addr);
    let _mine = modest.subscribe(name(20), 4).await;
    let pubs = [
        modest.publish(name(21)).await,
        modest.publish(name(22)).await,
    ];
    let other = link_of(&r, "modest", |l| l.names >= 3).await;
    let other = other.expect("the other client's link");
    assert_eq!((other.names, other.names_refused), (3, 0));
    drop(pubs);
    // Letting names go makes room again.
    for (i, s) in subs.drain(..4).enumerate() {
        greedy.unsubscribe(name(i as u8), s.id).await;
    }
    let _again = greedy.subscribe(name(30), 4).await;
    let after = link_of(&r, "greedy", |l| l.names == 2).await;
    assert_eq!(after.map(|l| (l.names, l.names_refused)), Some((2, 3)));
    greedy.finish().await;
    modest.finish().await;
}
