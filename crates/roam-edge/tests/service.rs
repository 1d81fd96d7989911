//! Service handles on a real router in process and over a real client link (QUIC on
//! loopback): replies reach only their callers, calls run concurrently, a missing server is
//! said within the call's bound, a late reply is dropped, a dropped server releases its routes.

mod support;

use std::sync::Arc;
use std::time::Duration;

use roam_edge::service::RequestId;
use roam_edge::{
    Edge, Port, ServiceClientOptions, ServiceError, ServiceRef, ServiceServer, SubscriberOptions,
};
use support::{client_edge, pki_dir, realm, router, until_subscribed_names, T};
use tokio::task::JoinSet;

const ADD: &str = "example_interfaces/srv/AddTwoInts";

/// An `AddTwoInts` request (little endian CDR).
fn request(a: i64, b: i64) -> Vec<u8> {
    let mut v = vec![0, 1, 0, 0];
    v.extend_from_slice(&a.to_le_bytes());
    v.extend_from_slice(&b.to_le_bytes());
    v
}

fn sum_of(reply: &[u8]) -> i64 {
    assert_eq!(reply.len(), 12, "{reply:?}");
    i64::from_le_bytes(reply[4..12].try_into().unwrap())
}

/// Answers every request with a + b; returns the ids it saw when the edge goes.
fn serve(mut server: ServiceServer) -> tokio::task::JoinHandle<Vec<RequestId>> {
    tokio::spawn(async move {
        let mut seen = Vec::new();
        let mut body = Vec::new();
        while let Some(req) = server.recv_request(&mut body).await {
            assert_eq!(body.len(), 20, "the request header is gone from the body");
            let a = i64::from_le_bytes(body[4..12].try_into().unwrap());
            let b = i64::from_le_bytes(body[12..20].try_into().unwrap());
            let mut reply = vec![0, 1, 0, 0];
            reply.extend_from_slice(&(a + b).to_le_bytes());
            server.reply(req.id, &reply).await.unwrap();
            seen.push(req.id);
        }
        seen
    })
}

/// Two clients of one service in one process call it 20 times each, all at once. Both start
/// at sequence 1 and every reply goes to both: each must take only its own.
async fn two_clients_each_get_their_own_replies(clients: &Edge, server: &Edge) {
    let svc = ServiceRef::new(realm(), "/add_two_ints", ADD).unwrap();
    let _server = serve(server.service_server(&svc).await.unwrap());
    let c1 = Arc::new(
        clients
            .service_client(&svc, Default::default())
            .await
            .unwrap(),
    );
    let c2 = Arc::new(
        clients
            .service_client(&svc, Default::default())
            .await
            .unwrap(),
    );
    assert_ne!(c1.client_id(), c2.client_id());
    assert!(c1.wait_for_server(T).await && c2.wait_for_server(T).await);
    let mut calls = JoinSet::new();
    for (base, c) in [(1000, &c1), (2000, &c2)] {
        for i in 0..20 {
            let c = c.clone();
            calls.spawn(async move {
                let reply = c.call(&request(base, i), T).await.unwrap();
                (base, i, sum_of(&reply))
            });
        }
    }
    let mut n = 0;
    while let Some(r) = calls.join_next().await {
        let (base, i, sum) = r.unwrap();
        assert_eq!(
            sum,
            base + i,
            "client {base}, call {i} got someone else's reply"
        );
        n += 1;
    }
    assert_eq!(n, 40);
    assert_eq!(c1.pending() + c2.pending(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_router_two_clients_in_one_process_each_get_only_their_own_replies() {
    let dir = pki_dir("own-replies");
    let r = router(&dir, "r").await;
    let edge = Edge::new(Port::Router(r.clone()), "proc");
    two_clients_each_get_their_own_replies(&edge, &edge).await;
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_a_client_link_two_clients_each_get_only_their_own_replies() {
    let dir = pki_dir("own-replies-link");
    let r = router(&dir, "r").await;
    let laptop = client_edge(&dir, "laptop", &r);
    let robot = Edge::new(Port::Router(r.clone()), "robot");
    two_clients_each_get_their_own_replies(&laptop, &robot).await;
    // And the other way: the server behind the link, the clients on the router.
    two_clients_each_get_their_own_replies(&robot, &laptop).await;
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_with_no_server_fails_with_no_server_within_its_bound() {
    let dir = pki_dir("no-server");
    let r = router(&dir, "r").await;
    let edge = client_edge(&dir, "laptop", &r);
    let svc = ServiceRef::new(realm(), "/nobody", ADD).unwrap();
    let options = ServiceClientOptions {
        server_wait: Duration::from_millis(300),
        ..Default::default()
    };
    let c = edge.service_client(&svc, options).await.unwrap();
    // The call's own timeout is long: the server wait bounds it.
    let e = tokio::time::timeout(T, c.call(&request(1, 2), Duration::from_secs(60)))
        .await
        .expect("NoServer comes within the server wait")
        .unwrap_err();
    assert!(matches!(e, ServiceError::NoServer { .. }), "{e}");
    assert!(e.to_string().contains("/nobody"), "{e}");
    // A shorter call timeout bounds the wait too.
    let e = tokio::time::timeout(T, c.call(&request(1, 2), Duration::from_millis(50)))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(e, ServiceError::NoServer { .. }), "{e}");
    // Someone taking the requests is not a server: nobody announces replies.
    let there = Edge::new(Port::Router(r.clone()), "robot");
    let _eavesdropper = there
        .subscriber(
            &svc.request_topic(),
            SubscriberOptions {
                dds_type: Some(svc.request_type()),
                ..Default::default()
            },
        )
        .await;
    let e = c.call(&request(1, 2), T).await.unwrap_err();
    assert!(matches!(e, ServiceError::NoServer { .. }), "{e}");
    // A malformed request is refused before any wait.
    let e = c.call(&[1, 2], T).await.unwrap_err();
    assert!(matches!(e, ServiceError::Wire(_)), "{e}");
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_calls_late_reply_is_dropped_and_pending_calls_are_capped() {
    let dir = pki_dir("late");
    let r = router(&dir, "r").await;
    let edge = Edge::new(Port::Router(r.clone()), "proc");
    let svc = ServiceRef::new(realm(), "/slow", ADD).unwrap();
    let mut server = edge.service_server(&svc).await.unwrap();
    let options = ServiceClientOptions {
        max_pending: 2,
        ..Default::default()
    };
    let c = Arc::new(edge.service_client(&svc, options).await.unwrap());
    assert!(c.wait_for_server(T).await);
    // The server holds the first request until the call gave up.
    let e = c
        .call(&request(1, 1), Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(matches!(e, ServiceError::Timeout { .. }), "{e}");
    assert_eq!(c.pending(), 0, "a timed-out call leaves nothing behind");
    let mut body = Vec::new();
    let late = tokio::time::timeout(T, server.recv_request(&mut body))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(late.id.client, c.client_id());
    // Two calls wait; a third is refused.
    let mut waiting = JoinSet::new();
    for i in 0..2 {
        let c = c.clone();
        waiting.spawn(async move { sum_of(&c.call(&request(10, i), T).await.unwrap()) });
    }
    let mut held = Vec::new();
    for _ in 0..2 {
        let req = tokio::time::timeout(T, server.recv_request(&mut body))
            .await
            .unwrap()
            .unwrap();
        let a = i64::from_le_bytes(body[4..12].try_into().unwrap());
        let b = i64::from_le_bytes(body[12..20].try_into().unwrap());
        held.push((req.id, a + b));
    }
    let e = c.call(&request(0, 0), T).await.unwrap_err();
    assert!(
        matches!(e, ServiceError::TooManyPending { limit: 2, .. }),
        "{e}"
    );
    // The late reply first (a sum no call asked for), then the real ones.
    let mut reply = vec![0, 1, 0, 0];
    reply.extend_from_slice(&(-999i64).to_le_bytes());
    server.reply(late.id, &reply).await.unwrap();
    for (id, sum) in held {
        let mut reply = vec![0, 1, 0, 0];
        reply.extend_from_slice(&sum.to_le_bytes());
        server.reply(id, &reply).await.unwrap();
    }
    let mut sums = Vec::new();
    while let Some(s) = waiting.join_next().await {
        sums.push(s.unwrap());
    }
    sums.sort();
    assert_eq!(sums, [10, 11]);
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_server_stops_answering_and_its_routes_are_released() {
    let dir = pki_dir("drop-server");
    let r = router(&dir, "r").await;
    let edge = Edge::new(Port::Router(r.clone()), "proc");
    let svc = ServiceRef::new(realm(), "/add", ADD).unwrap();
    let options = ServiceClientOptions {
        server_wait: Duration::from_millis(500),
        ..Default::default()
    };
    let c = edge.service_client(&svc, options).await.unwrap();
    let base = r.report().await.unwrap().routing.subscribed_names;
    let server = serve(edge.service_server(&svc).await.unwrap());
    assert!(c.wait_for_server(T).await);
    assert_eq!(sum_of(&c.call(&request(2, 3), T).await.unwrap()), 5);
    assert!(r.report().await.unwrap().routing.subscribed_names > base);
    server.abort();
    let seen = server.await;
    assert!(
        seen.is_err(),
        "the serving task was stopped, dropping the server"
    );
    until_subscribed_names(&r, base).await;
    let e = c.call(&request(2, 3), T).await.unwrap_err();
    assert!(matches!(e, ServiceError::NoServer { .. }), "{e}");
    // A new server answers again.
    let _again = serve(edge.service_server(&svc).await.unwrap());
    assert_eq!(sum_of(&c.call(&request(4, 4), T).await.unwrap()), 8);
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_fail_as_closed_when_the_router_goes() {
    let dir = pki_dir("closed");
    let r = router(&dir, "r").await;
    let edge = Edge::new(Port::Router(r.clone()), "proc");
    let svc = ServiceRef::new(realm(), "/add", ADD).unwrap();
    let mut server = edge.service_server(&svc).await.unwrap();
    let c = Arc::new(edge.service_client(&svc, Default::default()).await.unwrap());
    assert!(c.wait_for_server(T).await);
    let call = {
        let c = c.clone();
        tokio::spawn(async move { c.call(&request(1, 1), Duration::from_secs(60)).await })
    };
    let mut body = Vec::new();
    tokio::time::timeout(T, server.recv_request(&mut body))
        .await
        .unwrap()
        .unwrap();
    r.shutdown().await;
    let e = tokio::time::timeout(T, call)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(matches!(e, ServiceError::Closed { .. }), "{e}");
}
