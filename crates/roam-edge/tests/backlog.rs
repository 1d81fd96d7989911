//! A topic pushed back on does not hold up the thread that publishes it (a DDS listener's,
//! which serves every other topic too): its envelopes wait in the publisher's backlog and
//! arrive later, in order and complete, while another topic published from the same thread
//! flows on.

use std::time::{Duration, Instant};

use bytes::Bytes;

use roam_edge::{Edge, Event, PayloadKind, Port, StreamSpec, SubscriberOptions, TopicRef};

mod support;
use support::{pki_dir, realm, router, T};

const STRING: &str = "std_msgs::msg::dds_::String_";

/// A reliable keep-all stream: nothing it publishes may be dropped.
fn keep_all() -> StreamSpec {
    let mut spec = StreamSpec::new(STRING);
    spec.qos.depth = 0;
    spec
}

/// Polls `done` until it holds; fails with `what` after the tests' deadline.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + T;
    while !done() {
        assert!(Instant::now() < end, "{what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The next message's payload, skipping announcement events.
async fn next_payload(sub: &mut roam_edge::Subscriber) -> Vec<u8> {
    let mut buf = Vec::new();
    loop {
        match tokio::time::timeout(T, sub.recv(&mut buf))
            .await
            .expect("in time")
        {
            Some(Event::Message(_)) => return buf,
            Some(_) => {}
            None => panic!("subscriber closed"),
        }
    }
}

/// Reads announcements on `subs` until every publisher sees demand.
async fn until_demand(ps: &[&roam_edge::Publisher], subs: &mut [&mut roam_edge::Subscriber]) {
    let end = Instant::now() + T;
    let mut buf = Vec::new();
    while ps.iter().any(|p| !*p.demand().borrow()) {
        assert!(Instant::now() < end, "no demand");
        for s in subs.iter_mut() {
            if let Ok(Some(Event::Message(_))) =
                tokio::time::timeout(Duration::from_millis(20), s.recv(&mut buf)).await
            {
                panic!("a message before the publishers saw demand");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_topic_waits_in_its_backlog_while_another_flows_from_the_same_thread() {
    let dir = pki_dir("backlog");
    let r = router(&dir, "r").await;
    let edge = Edge::new(Port::Router(r.clone()), "proc");
    let (images, joy) = (
        TopicRef::new(realm(), "/image"),
        TopicRef::new(realm(), "/joy"),
    );
    // The image subscriber holds one envelope and is not read for a while: its topic pauses.
    let mut slow = edge
        .subscriber(
            &images,
            SubscriberOptions {
                depth: 1,
                ..SubscriberOptions::default()
            },
        )
        .await;
    let mut fast = edge.subscriber(&joy, SubscriberOptions::default()).await;
    let image_pub = edge.publisher(&images, keep_all()).await.unwrap();
    let joy_pub = edge.publisher(&joy, StreamSpec::new(STRING)).await.unwrap();
    until_demand(&[&image_pub, &joy_pub], &mut [&mut slow, &mut fast]).await;

    // One thread publishes both, as a DDS listener thread does.
    let (p, name) = (image_pub.clone(), image_pub.name());
    tokio::task::spawn_blocking(move || {
        for i in 0..3u32 {
            p.publish_blocking(roam_edge::Pending::new(
                PayloadKind::Data,
                Bytes::copy_from_slice(&i.to_be_bytes()),
                None,
            ))
            .unwrap();
        }
    })
    .await
    .unwrap();
    until("the image topic never paused", || r.is_paused(&name)).await;
    let (p, j) = (image_pub.clone(), joy_pub.clone());
    let publishing = tokio::task::spawn_blocking(move || {
        for i in 3..200u32 {
            p.publish_blocking(roam_edge::Pending::new(
                PayloadKind::Data,
                Bytes::copy_from_slice(&i.to_be_bytes()),
                None,
            ))
            .unwrap();
        }
        for i in 0..5u32 {
            j.publish_blocking(roam_edge::Pending::new(
                PayloadKind::Data,
                Bytes::copy_from_slice(&i.to_be_bytes()),
                None,
            ))
            .unwrap();
        }
    });
    tokio::time::timeout(T, publishing)
        .await
        .expect("the publishing thread went on while the image topic was paused")
        .unwrap();
    for i in 0..5u32 {
        assert_eq!(next_payload(&mut fast).await, i.to_be_bytes());
    }
    assert!(image_pub.backlog().0 > 0, "{:?}", image_pub.backlog());
    // Read at last: every image, in order.
    for i in 0..200u32 {
        assert_eq!(next_payload(&mut slow).await, i.to_be_bytes(), "image {i}");
    }
    let end = Instant::now() + T;
    while image_pub.backlog() != (0, 0) {
        assert!(Instant::now() < end, "{:?}", image_pub.backlog());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A router, and a keep-all topic's subscriber and publisher on it, past the publisher's
/// first demand (keep the router's handle for the test's length).
async fn one_keep_all_topic(
    dir: &support::Dir,
) -> (
    roam_net::runtime::RouterHandle,
    roam_edge::Subscriber,
    roam_edge::Publisher,
) {
    let r = router(dir, "r").await;
    let edge = Edge::new(Port::Router(r.clone()), "proc");
    let images = TopicRef::new(realm(), "/image");
    let mut sub = edge.subscriber(&images, SubscriberOptions::default()).await;
    let p = edge.publisher(&images, keep_all()).await.unwrap();
    until_demand(&[&p], &mut [&mut sub]).await;
    (r, sub, p)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_payloads_sealed_off_the_thread_arrive_whole_and_in_order_with_small_ones() {
    let dir = pki_dir("backlog-large");
    let (_r, mut sub, p) = one_keep_all_topic(&dir).await;
    let big = roam_edge::backlog::SEAL_ELSEWHERE;
    // Large, small, large, small...: the large ones go through the drainer, and the small
    // ones behind them must wait for it rather than overtake.
    let payloads: Vec<Vec<u8>> = (0..12u8)
        .map(|i| {
            let n = if i % 2 == 0 { big + i as usize } else { 8 };
            (0..n).map(|k| (k as u8).wrapping_mul(31) ^ i).collect()
        })
        .collect();
    let sent = payloads.clone();
    let publisher = p.clone();
    tokio::task::spawn_blocking(move || {
        for pl in sent {
            publisher
                .publish_blocking(roam_edge::Pending::new(
                    PayloadKind::Data,
                    Bytes::from(pl),
                    None,
                ))
                .unwrap();
        }
    })
    .await
    .unwrap();
    for (i, want) in payloads.iter().enumerate() {
        let got = next_payload(&mut sub).await;
        assert_eq!(got.len(), want.len(), "message {i}");
        assert!(got == *want, "message {i} differs");
    }
    assert_eq!(
        p.stats().failed.load(std::sync::atomic::Ordering::Relaxed),
        0
    );
}

/// A current-thread runtime has no worker to hand over while a large envelope is opened:
/// the subscriber opens it in place (a multi-threaded one hands its other tasks to another
/// thread meanwhile, the test above).
#[tokio::test(flavor = "current_thread")]
async fn large_envelopes_open_in_place_on_a_current_thread_runtime() {
    let dir = pki_dir("backlog-current-thread");
    let (_r, mut sub, p) = one_keep_all_topic(&dir).await;
    let big: Vec<u8> = (0..roam_edge::backlog::SEAL_ELSEWHERE * 2)
        .map(|k| (k % 251) as u8)
        .collect();
    let (publisher, sent) = (p.clone(), big.clone());
    tokio::task::spawn_blocking(move || {
        publisher
            .publish_blocking(roam_edge::Pending::new(
                PayloadKind::Data,
                Bytes::from(sent),
                None,
            ))
            .unwrap();
        publisher
            .publish_blocking(roam_edge::Pending::new(
                PayloadKind::Data,
                Bytes::from_static(b"after"),
                None,
            ))
            .unwrap();
    })
    .await
    .unwrap();
    assert!(
        next_payload(&mut sub).await == big,
        "the large payload differs"
    );
    assert_eq!(next_payload(&mut sub).await, b"after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keep_last_topic_pushed_back_on_drops_its_oldest_and_never_holds_the_thread() {
    let dir = pki_dir("backlog-keep-last");
    let r = router(&dir, "r").await;
    let edge = Edge::new(Port::Router(r.clone()), "proc");
    let images = TopicRef::new(realm(), "/image");
    // Not read for now, one envelope deep: the topic pauses at once.
    let mut slow = edge
        .subscriber(
            &images,
            SubscriberOptions {
                depth: 1,
                ..SubscriberOptions::default()
            },
        )
        .await;
    // StreamSpec::new: the ROS 2 default QoS, reliable keep-last 10, no keys.
    let p = edge
        .publisher(&images, StreamSpec::new(STRING))
        .await
        .unwrap();
    until_demand(&[&p], &mut [&mut slow]).await;
    const N: u8 = 20;
    const SIZE: usize = 4 << 20;
    let publisher = p.clone();
    // A plain thread, as a DDS listener's: if it were held for good, the test still ends.
    let publishing = std::thread::spawn(move || {
        for i in 0..N {
            let mut body = vec![0u8; SIZE];
            body[0] = i;
            publisher
                .publish_blocking(roam_edge::Pending::new(
                    PayloadKind::Data,
                    Bytes::from(body),
                    None,
                ))
                .unwrap();
        }
    });
    // 80 MB against a 32 MiB backlog and a subscriber that reads nothing: a keep-all topic
    // would hold this thread; a keep-last one drops its oldest and goes on.
    until("the publishing thread was held", || {
        publishing.is_finished()
    })
    .await;
    publishing.join().unwrap();
    let overwritten = p
        .stats()
        .overwritten
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(overwritten > 0, "nothing was dropped");
    // A keep-last backlog holds at most 8 MiB beyond one sample: two of these images.
    assert!(p.backlog().1 <= 8 << 20, "{:?}", p.backlog());
    // What is left arrives in order and ends with the newest.
    let mut tags = Vec::new();
    while tags.last() != Some(&(N - 1)) {
        let got = next_payload(&mut slow).await;
        assert_eq!(got.len(), SIZE);
        tags.push(got[0]);
    }
    assert!(tags.windows(2).all(|w| w[0] < w[1]), "{tags:?}");
    assert_eq!(tags.len() as u64 + overwritten, N as u64, "{tags:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keep_last_topic_pushed_back_on_keeps_only_its_depth_waiting() {
    let dir = pki_dir("backlog-depth");
    let r = router(&dir, "r").await;
    let edge = Edge::new(Port::Router(r.clone()), "proc");
    let topic = TopicRef::new(realm(), "/pose");
    let mut slow = edge
        .subscriber(
            &topic,
            SubscriberOptions {
                depth: 1,
                ..SubscriberOptions::default()
            },
        )
        .await;
    // Reliable, keep-last 10 (StreamSpec::new).
    let p = edge
        .publisher(&topic, StreamSpec::new(STRING))
        .await
        .unwrap();
    until_demand(&[&p], &mut [&mut slow]).await;
    let publish = |range: std::ops::Range<u32>| {
        let publisher = p.clone();
        std::thread::spawn(move || {
            for i in range {
                publisher
                    .publish_blocking(roam_edge::Pending::new(
                        PayloadKind::Data,
                        Bytes::copy_from_slice(&i.to_be_bytes()),
                        None,
                    ))
                    .unwrap();
            }
        })
    };
    // The subscriber holds 0 and is not read: 1 waits in the router and the topic pauses.
    publish(0..2).join().unwrap();
    until("the topic never paused", || r.is_paused(&p.name())).await;
    const N: u32 = 200;
    let publishing = publish(2..N);
    until("the publishing thread was held", || {
        publishing.is_finished()
    })
    .await;
    publishing.join().unwrap();
    // Of what came while the topic was paused only the newest 10 wait, as the DDS history of
    // a keep-last 10 writer would keep them; nothing was taken out of the backlog before the
    // topic could carry it.
    assert_eq!(p.backlog().0, 10);
    let overwritten = p
        .stats()
        .overwritten
        .load(std::sync::atomic::Ordering::Relaxed);
    let mut got = Vec::new();
    while got.last() != Some(&(N - 1)) {
        let b = next_payload(&mut slow).await;
        got.push(u32::from_be_bytes(b[..4].try_into().unwrap()));
    }
    let newest: Vec<u32> = (N - 10..N).collect();
    assert_eq!(got[..2], [0, 1], "{got:?}");
    assert_eq!(got[2..], newest[..], "{got:?}");
    assert_eq!(got.len() as u64 + overwritten, N as u64, "{got:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_reliable_keep_last_streams_without_keys_tell_routers_to_keep_the_latest() {
    let dir = pki_dir("backlog-flag");
    let r = router(&dir, "r").await;
    let edge = Edge::new(Port::Router(r.clone()), "proc");
    let keyed = {
        let mut s = StreamSpec::new(STRING);
        s.keyed = true;
        s
    };
    let best_effort = {
        let mut s = StreamSpec::new(STRING);
        s.qos.reliable = false;
        s
    };
    for (topic, spec, keep_latest) in [
        ("/camera", StreamSpec::new(STRING), true),
        ("/log", keep_all(), false),
        ("/objects", keyed, false),
        ("/scan", best_effort, false),
    ] {
        let p = edge
            .publisher(&TopicRef::new(realm(), topic), spec)
            .await
            .unwrap();
        let env = p.seal(PayloadKind::Data, b"sample").unwrap();
        let flags = roam_proto::EnvelopeHeader::parse(&env).unwrap().flags;
        assert_eq!(flags.keep_latest(), keep_latest, "{topic}");
    }
}
