//! An edge service client against a real third-party server: the Python cyclonedds
//! AddTwoInts server (on the wire what a ROS 2 server on rmw_cyclonedds is) in a DDS domain
//! behind a real `roam proxy` process that exports the service, called by an edge
//! `ServiceClient` over a client link to the router the proxy dials.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use roam_edge::{Edge, Port, ServiceError, ServiceRef};
use roam_net::client::{Client, ClientConfig};
use roam_net::link::LinkConfig;
use roam_net::runtime::PeerAddr;
use roam_pki as pki;

/// An `AddTwoInts` request (little endian CDR).
fn request(a: i64, b: i64) -> Vec<u8> {
    let mut v = vec![0, 1, 0, 0];
    v.extend_from_slice(&a.to_le_bytes());
    v.extend_from_slice(&b.to_le_bytes());
    v
}

fn sum_of(reply: &[u8]) -> i64 {
    assert_eq!(reply.len(), 12, "an AddTwoInts reply: {reply:?}");
    assert_eq!(reply[..4], [0, 1, 0, 0]);
    i64::from_le_bytes(reply[4..12].try_into().unwrap())
}

#[test]
fn an_edge_client_calls_a_dds_server_behind_a_proxy_and_the_sums_come_back_right() {
    let net = Net::new("edge-service");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let server = python("server", "service.py", &["server", "91", "add_two_ints"]);
    let robot = net.proxy(
        "robot",
        91,
        &addr,
        "exports:\n  - service: /add_two_ints\n    realm: test\n",
    );
    net.issue("laptop", "client");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let identity = Arc::new(pki::load_identity(Path::new(&net.pki), "laptop").unwrap());
        let client = Client::start(ClientConfig {
            identity,
            router: addr.parse::<PeerAddr>().unwrap(),
            link: LinkConfig::default(),
            max_backoff: Duration::from_millis(200),
        })
        .unwrap();
        let edge = Edge::new(Port::Client(Arc::new(client)), "laptop");
        let realm = Arc::new(roam_edge::realm::load(Path::new(&net.realm)).unwrap());
        let svc =
            ServiceRef::new(realm, "/add_two_ints", "example_interfaces/srv/AddTwoInts").unwrap();
        let c = Arc::new(edge.service_client(&svc, Default::default()).await.unwrap());
        assert!(
            c.wait_for_server(Duration::from_secs(30)).await,
            "the proxy never offered the service: {}",
            robot.logs()
        );
        // The proxy makes its DDS request writer when the client's stream is announced, and
        // its reply reader when the client subscribes: CycloneDDS matches them with the
        // server's endpoints a little later, and a volatile sample written before that is
        // lost, as for any DDS client that calls without waiting. So the first call is
        // retried (each try a new call) until one is answered.
        let end = Instant::now() + Duration::from_secs(30);
        let mut tries = 0;
        loop {
            tries += 1;
            match c.call(&request(40, 2), Duration::from_secs(2)).await {
                Ok(reply) => {
                    assert_eq!(sum_of(&reply), 42);
                    break;
                }
                Err(ServiceError::Timeout { .. }) if Instant::now() < end => {}
                Err(e) => panic!("{e}\nproxy: {}", robot.logs()),
            }
        }
        eprintln!("first call answered after {tries} tries");
        // Then 20 calls, 5 in flight at a time, each answered with its own sum. (A ROS 2
        // server keeps 10 requests, the services QoS depth: more at once than it takes are
        // lost on DDS, with or without roam.)
        let in_flight = Arc::new(tokio::sync::Semaphore::new(5));
        let mut calls = tokio::task::JoinSet::new();
        for i in 0..20i64 {
            let c = c.clone();
            let in_flight = in_flight.clone();
            calls.spawn(async move {
                let _slot = in_flight.acquire().await.unwrap();
                let reply = c.call(&request(1000 * i, i), Duration::from_secs(20)).await;
                (i, reply)
            });
        }
        while let Some(r) = calls.join_next().await {
            let (i, reply) = r.unwrap();
            let reply = reply.unwrap_or_else(|e| {
                let mut lines = Vec::new();
                while let Some(l) = server.line(Duration::from_millis(200)) {
                    lines.push(l);
                }
                panic!("call {i}: {e}\nserver: {lines:?}\nproxy: {}", robot.logs())
            });
            assert_eq!(sum_of(&reply), 1001 * i);
        }
        assert_eq!(c.pending(), 0);
    });
    // The server answered every call the client made.
    let mut served = 0;
    while let Some(l) = server.line(Duration::from_millis(200)) {
        if let Some(n) = l.strip_prefix("served ") {
            served = n.parse().unwrap();
        }
    }
    assert!(served >= 21, "served {served}");
}
