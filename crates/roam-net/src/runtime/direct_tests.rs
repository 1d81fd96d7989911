//! Routing on the caller's thread ([`super::direct`]): from a thread outside the runtime, as a
//! DDS listener sends, and in order with what the caller queued for the loop before.

use bytes::Bytes;
use roam_proto::{Name, RealmSecret, Sealer};

use super::test_support::{next_seq, pki, pub_sub, router, Dir, PubSub};
use crate::link::LinkConfig;

fn sealer(name: Name) -> Sealer {
    Sealer::new(&RealmSecret::from_bytes([3; 32]), name, false, None).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_outside_the_runtime_routes_a_topics_first_messages_over_a_link() {
    let dir = Dir(std::env::temp_dir().join(format!("roam-direct-thread-{}", std::process::id())));
    let name = Name([21; 32]);
    let PubSub {
        sub_router,
        pub_router,
        mut rx,
    } = pub_sub(&dir, name, 256, LinkConfig::default()).await;
    // The first message of the topic opens its lane on the link, whose writer is a task
    // started from the sending thread: a plain thread, as a DDS listener's is.
    let sender = pub_router.clone();
    let thread = std::thread::spawn(move || {
        let mut sealer = sealer(name);
        for i in 0..100u64 {
            let env = Bytes::from(sealer.seal_to_vec(&i.to_be_bytes(), 0).unwrap());
            sender.send_blocking(name, env);
        }
    });
    tokio::task::spawn_blocking(move || thread.join())
        .await
        .unwrap()
        .expect("the sending thread routes without a runtime of its own");
    for want in 1..=100 {
        assert_eq!(next_seq(&mut rx).await, want, "every message, in order");
    }
    sub_router.shutdown().await;
    pub_router.shutdown().await;
}

/// One thread: the loop cannot take the subscription in between, so the send finds it still
/// queued, and must queue behind it rather than route past it.
#[tokio::test(flavor = "current_thread")]
async fn a_send_does_not_overtake_a_subscription_queued_before_it() {
    let dir = Dir(std::env::temp_dir().join(format!("roam-direct-order-{}", std::process::id())));
    pki::init_ca(&dir.0).unwrap();
    let r = router(&dir, "alone", None, LinkConfig::default()).await;
    let name = Name([22; 32]);
    let mut sealer = sealer(name);
    let mut sub = r.subscribe(name, 8).await;
    r.send(name, Bytes::from(sealer.seal_to_vec(b"first", 0).unwrap()))
        .await;
    assert_eq!(
        next_seq(&mut sub.rx).await,
        1,
        "the subscriber gets the send"
    );

    // And the other way: a send routed at once is delivered before a later unsubscribe.
    r.send(name, Bytes::from(sealer.seal_to_vec(b"second", 0).unwrap()))
        .await;
    r.unsubscribe(name, sub.id).await;
    assert_eq!(next_seq(&mut sub.rx).await, 2);
    assert!(sub.rx.recv().await.is_none(), "released after it");
    r.shutdown().await;
}
