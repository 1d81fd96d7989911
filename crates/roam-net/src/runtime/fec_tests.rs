//! Forward error correction end to end: two routers whose QUIC link crosses a relay that
//! delays every datagram and loses some; large and small messages arrive whole, and the
//! receiving link rebuilt lost pieces from repairs (or, with `fec` off, got none).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use roam_proto::{Name, RealmSecret, Sealer};
use tokio::net::UdpSocket;

use super::test_support::{pub_sub_via, Dir, PubSub};
use crate::latency::now_us;
use crate::link::{LinkConfig, PathStats};

/// Relays datagrams between the dialing router and `server`, each `delay` late; of the
/// datagrams towards the server larger than `min_len` bytes, after the first 50, drops one in
/// `one_in` (a fixed pattern, so the test sees the same loss every run). Returns the address
/// to dial; the relay stops with the returned task.
async fn lossy_relay(
    server: SocketAddr,
    delay: Duration,
    min_len: usize,
    one_in: u64,
) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let addr = sock.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut client: Option<SocketAddr> = None;
        let mut large = 0u64;
        let mut buf = vec![0u8; 65536];
        while let Ok((n, from)) = sock.recv_from(&mut buf).await {
            let to = if from == server {
                match client {
                    Some(c) => c,
                    None => continue,
                }
            } else {
                client = Some(from);
                if n > min_len {
                    large += 1;
                    if large > 50 && large.is_multiple_of(one_in) {
                        continue;
                    }
                }
                server
            };
            let d = buf[..n].to_vec();
            let s = sock.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = s.send_to(&d, to).await;
            });
        }
    });
    (addr, task)
}

/// Two routers whose link crosses [`lossy_relay`] (15 ms each way, losing one in `one_in`
/// datagrams over `min_len` bytes towards the subscribing side), a subscription of `depth` to
/// `name` there; with the scratch directory and the relay's task, for the test to stop.
async fn pub_sub_over_loss(
    what: &str,
    name: Name,
    depth: usize,
    link: LinkConfig,
    min_len: usize,
    one_in: u64,
) -> (Dir, PubSub, tokio::task::JoinHandle<()>) {
    let dir = Dir(std::env::temp_dir().join(format!("roam-fec-{what}-{}", std::process::id())));
    let mut relay_task = None;
    let slot = &mut relay_task;
    let routers = pub_sub_via(&dir, name, depth, link, move |sub| async move {
        let (relay, task) = lossy_relay(sub, Duration::from_millis(15), min_len, one_in).await;
        *slot = Some(task);
        relay
    })
    .await;
    (dir, routers, relay_task.expect("the relay started"))
}

/// Sends `count` messages of 1 MiB over a lossy relayed link configured with `link`; returns
/// the sending and the receiving link's path reports.
async fn one_mib_messages_over_loss(
    what: &str,
    link: LinkConfig,
    count: usize,
) -> (PathStats, PathStats) {
    let name = Name([5; 32]);
    let (
        _dir,
        PubSub {
            sub_router,
            pub_router,
            mut rx,
        },
        relay,
    ) = pub_sub_over_loss(what, name, 64, link, 1000, 25).await;
    let mut sealer = Sealer::new(&RealmSecret::from_bytes([3; 32]), name, false, None).unwrap();
    for i in 0..count {
        let payload: Vec<u8> = (0..1usize << 20).map(|b| (b * 7 + i) as u8).collect();
        let env = sealer.seal_to_vec(&payload, now_us()).unwrap();
        pub_router.send(name, Bytes::from(env.clone())).await;
        let got = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("{what}: message {i} did not arrive"))
            .unwrap();
        assert!(got[..] == env[..], "{what}: message {i} changed on the way");
    }
    let sent = pub_router.report().await.unwrap().links[0].path.unwrap();
    let received = sub_router.report().await.unwrap().links[0].path.unwrap();
    pub_router.shutdown().await;
    sub_router.shutdown().await;
    relay.abort();
    (sent, received)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_pieces_of_large_messages_are_rebuilt_from_repairs() {
    let (sent, received) = one_mib_messages_over_loss("on", LinkConfig::default(), 12).await;
    assert!(sent.lost_packets > 0, "the relay lost packets: {sent:?}");
    assert!(
        sent.repairs_sent > 0,
        "the lossy link sent repairs: {sent:?}"
    );
    assert!(received.repairs_received > 0, "{received:?}");
    assert!(
        received.shards_rebuilt > 0,
        "lost pieces were rebuilt before their retransmission: {received:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_without_fec_sends_no_repairs_and_still_delivers() {
    let link = LinkConfig {
        fec: false,
        ..LinkConfig::default()
    };
    let (sent, received) = one_mib_messages_over_loss("off", link, 4).await;
    assert!(sent.lost_packets > 0, "{sent:?}");
    assert_eq!((sent.repairs_sent, received.shards_rebuilt), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_small_messages_are_rebuilt_from_repairs() {
    // 1 KiB messages every 2 ms (a teleoperation stream): each is one packet and one stream
    // write of its own; the relay loses one in ten packets of 200 bytes or more.
    let name = Name([6; 32]);
    let (
        _dir,
        PubSub {
            sub_router,
            pub_router,
            mut rx,
        },
        relay,
    ) = pub_sub_over_loss("small", name, 1024, LinkConfig::default(), 200, 10).await;
    let mut sealer = Sealer::new(&RealmSecret::from_bytes([4; 32]), name, false, None).unwrap();
    let count = 600;
    let mut sent = Vec::with_capacity(count);
    let mut tick = tokio::time::interval(Duration::from_millis(2));
    for i in 0..count {
        tick.tick().await;
        let payload: Vec<u8> = (0..1024usize).map(|b| (b * 3 + i) as u8).collect();
        let env = sealer.seal_to_vec(&payload, now_us()).unwrap();
        pub_router.send(name, Bytes::from(env.clone())).await;
        sent.push(env);
    }
    for (i, env) in sent.iter().enumerate() {
        let got = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("message {i} did not arrive"))
            .unwrap();
        assert!(
            got[..] == env[..],
            "message {i} changed or came out of order"
        );
    }
    // The link now protects its control stream's writes too (which start past the Hello): a
    // topic declared now must still reach the other side.
    let later = Name([7; 32]);
    let mut later_rx = sub_router.subscribe(later, 16).await.rx;
    let mut demand = pub_router.publish(later).await.demand;
    tokio::time::timeout(Duration::from_secs(10), demand.wait_for(|w| *w))
        .await
        .expect("a topic declared on the lossy link found its subscriber")
        .unwrap();
    let mut later_sealer =
        Sealer::new(&RealmSecret::from_bytes([4; 32]), later, false, None).unwrap();
    let env = later_sealer.seal_to_vec(b"after", now_us()).unwrap();
    pub_router.send(later, Bytes::from(env.clone())).await;
    let got = tokio::time::timeout(Duration::from_secs(10), later_rx.recv())
        .await
        .expect("the later topic's message arrived")
        .unwrap();
    assert!(got[..] == env[..]);
    let out = pub_router.report().await.unwrap().links[0].path.unwrap();
    let got = sub_router.report().await.unwrap().links[0].path.unwrap();
    pub_router.shutdown().await;
    sub_router.shutdown().await;
    relay.abort();
    assert!(out.lost_packets > 0, "the relay lost packets: {out:?}");
    assert!(
        out.repairs_sent > 0,
        "small messages were protected: {out:?}"
    );
    assert!(
        got.shards_rebuilt > 0,
        "lost small messages were rebuilt before their retransmission: {got:?}"
    );
}
