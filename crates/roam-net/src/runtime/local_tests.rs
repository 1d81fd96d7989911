//! Several in-process endpoints on one name: every subscriber gets every message, and each
//! publisher and subscriber is released on its own.

use std::time::Duration;

use bytes::Bytes;
use roam_proto::{Name, RealmSecret, Sealer};

use super::test_support::{next_seq, pub_sub, Dir, PubSub};
use crate::link::LinkConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_subscribers_of_one_name_in_one_process_both_get_every_message() {
    let dir = Dir(std::env::temp_dir().join(format!("roam-local-two-{}", std::process::id())));
    let name = Name([9; 32]);
    let PubSub {
        sub_router,
        pub_router,
        mut rx,
    } = pub_sub(&dir, name, 64, LinkConfig::default()).await;
    let mut second = sub_router.subscribe(name, 64).await;
    let mut sealer = Sealer::new(&RealmSecret::from_bytes([1; 32]), name, false, None).unwrap();
    let mut send = |i: u64| Bytes::from(sealer.seal_to_vec(&i.to_be_bytes(), 0).unwrap());
    // The second subscription reaches the router before anything sent after it returns.
    for i in 1..=20 {
        pub_router.send(name, send(i)).await;
    }
    for want in 1..=20 {
        assert_eq!(next_seq(&mut rx).await, want);
        assert_eq!(next_seq(&mut second.rx).await, want);
    }

    // Dropping one subscriber leaves the other subscribed.
    sub_router.unsubscribe(name, second.id).await;
    pub_router.send(name, send(21)).await;
    assert_eq!(next_seq(&mut rx).await, 21);
    assert!(
        second.rx.recv().await.is_none(),
        "a released subscriber gets nothing more"
    );

    // A second publisher of the name sees the demand at once; withdrawing the first keeps
    // the name published.
    let mut p2 = pub_router.publish(name).await;
    tokio::time::timeout(Duration::from_secs(10), p2.demand.wait_for(|w| *w))
        .await
        .expect("the second publisher learns the demand")
        .unwrap();
    let report = pub_router.report().await.unwrap();
    assert!(report.routing.names >= 1);
    sub_router.shutdown().await;
    pub_router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releasing_the_last_subscriber_withdraws_the_demand() {
    let dir = Dir(std::env::temp_dir().join(format!("roam-local-last-{}", std::process::id())));
    let name = Name([10; 32]);
    let PubSub {
        sub_router,
        pub_router,
        rx: _rx,
    } = pub_sub(&dir, name, 4, LinkConfig::default()).await;
    let extra = sub_router.subscribe(name, 4).await;
    let mut watcher = pub_router.publish(name).await;
    tokio::time::timeout(Duration::from_secs(10), watcher.demand.wait_for(|w| *w))
        .await
        .expect("demand")
        .unwrap();
    // The harness's subscription has id 1 on the subscribing router; release both.
    sub_router.release_subscription(name, extra.id);
    sub_router.unsubscribe(name, 1).await;
    tokio::time::timeout(Duration::from_secs(10), watcher.demand.wait_for(|w| !*w))
        .await
        .expect("demand withdrawn once no subscriber is left")
        .unwrap();
    sub_router.shutdown().await;
    pub_router.shutdown().await;
}
