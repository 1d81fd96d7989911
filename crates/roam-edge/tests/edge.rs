//! The edge layer on a real router (in process) and over a real client link (QUIC on
//! loopback): several handles per name, announcements, held data, released routes.

use std::time::{Duration, Instant};

use roam_edge::{
    Edge, Event, PayloadKind, Port, StreamQos, StreamSpec, SubscriberOptions, TopicRef,
};

mod support;
use support::{client, pki_dir, realm, router, until_subscribed_names, T};

const STRING: &str = "std_msgs::msg::dds_::String_";

/// The next message's payload, skipping announcement events.
async fn next_message(sub: &mut roam_edge::Subscriber) -> (roam_edge::Received, Vec<u8>) {
    let mut buf = Vec::new();
    loop {
        match tokio::time::timeout(T, sub.recv(&mut buf))
            .await
            .expect("in time")
        {
            Some(Event::Message(r)) => return (r, buf),
            Some(_) => {}
            None => panic!("subscriber closed"),
        }
    }
}

/// Lets the subscribers read (a subscriber follows announcements only while it is read)
/// until the publisher sees that someone wants its data.
async fn until_demand(p: &roam_edge::Publisher, subs: &mut [&mut roam_edge::Subscriber]) {
    let end = Instant::now() + T;
    let mut buf = Vec::new();
    while !*p.demand().borrow() {
        assert!(Instant::now() < end, "no demand");
        for s in subs.iter_mut() {
            if let Ok(Some(Event::Message(_))) =
                tokio::time::timeout(Duration::from_millis(20), s.recv(&mut buf)).await
            {
                panic!("a message before the publisher saw demand");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_subscribers_in_one_process_both_get_every_message_and_see_the_stream() {
    let dir = pki_dir("two-subs");
    let r = router(&dir, "r").await;
    let edge = Edge::new(Port::Router(r.clone()), "proc-a");
    let topic = TopicRef::new(realm(), "/chatter");
    let mut a = edge.subscriber(&topic, SubscriberOptions::default()).await;
    let mut b = edge.subscriber(&topic, SubscriberOptions::default()).await;
    let mut spec = StreamSpec::new(STRING);
    spec.qos = StreamQos {
        reliable: true,
        transient_local: true,
        depth: 3,
    };
    spec.definition = Some("string data\n".into());
    let p = edge.publisher(&topic, spec).await.unwrap();
    until_demand(&p, &mut [&mut a, &mut b]).await;
    for i in 0..20u32 {
        p.publish(&i.to_be_bytes()).await.unwrap();
    }
    for sub in [&mut a, &mut b] {
        for i in 0..20u32 {
            let (r, payload) = next_message(sub).await;
            assert_eq!(payload, i.to_be_bytes());
            assert_eq!(r.kind, PayloadKind::Data);
            assert_eq!(r.header.session, p.session());
        }
        let streams = sub.streams();
        assert_eq!(streams.len(), 1, "{streams:?}");
        let s = streams.values().next().unwrap();
        assert!(s.qos.transient_local && s.qos.depth == 3 && s.announcer == "proc-a");
        assert_eq!(sub.definition(STRING), Some("string data\n"));
    }
    // The stream ids the messages carried are the announced one.
    let (r1, _) = {
        p.publish(b"x").await.unwrap();
        next_message(&mut a).await
    };
    assert_eq!(r1.stream, a.streams().keys().next().copied());
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_handles_release_their_routes_and_withdraw_their_stream() {
    let dir = pki_dir("release");
    let r = router(&dir, "r").await;
    let edge = Edge::new(Port::Router(r.clone()), "proc");
    let topic = TopicRef::new(realm(), "/status");
    let base = r.report().await.unwrap().routing;
    let mut watcher = edge.subscriber(&topic, SubscriberOptions::default()).await;
    let p = edge
        .publisher(&topic, StreamSpec::new(STRING))
        .await
        .unwrap();
    let mut extra = edge.subscriber(&topic, SubscriberOptions::default()).await;
    until_demand(&p, &mut [&mut extra]).await;
    let mut buf = Vec::new();
    // The stream is announced...
    loop {
        match tokio::time::timeout(T, watcher.recv(&mut buf))
            .await
            .unwrap()
        {
            Some(Event::Streams) if !watcher.streams().is_empty() => break,
            Some(_) => {}
            None => panic!("closed"),
        }
    }
    let during = r.report().await.unwrap().routing;
    assert!(
        during.subscribed_names > base.subscribed_names,
        "{during:?}"
    );
    // ... and withdrawn at once when its publisher goes.
    drop(p);
    loop {
        match tokio::time::timeout(T, watcher.recv(&mut buf))
            .await
            .unwrap()
        {
            Some(Event::Streams) if watcher.streams().is_empty() => break,
            Some(_) => {}
            None => panic!("closed"),
        }
    }
    drop(extra);
    drop(watcher);
    until_subscribed_names(&r, base.subscribed_names).await;
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_a_client_link_two_subscribers_and_a_publisher_share_one_session() {
    let dir = pki_dir("client");
    let r = router(&dir, "r").await;
    let here = Edge::new(Port::Client(client(&dir, "laptop", &r)), "laptop");
    let there = Edge::new(Port::Router(r.clone()), "robot");
    let topic = TopicRef::new(realm(), "/scan");
    let mut a = here.subscriber(&topic, SubscriberOptions::default()).await;
    let mut b = here.subscriber(&topic, SubscriberOptions::default()).await;
    let p = there
        .publisher(&topic, StreamSpec::new(STRING))
        .await
        .unwrap();
    until_demand(&p, &mut [&mut a, &mut b]).await;
    for i in 0..10u8 {
        p.publish(&[i]).await.unwrap();
    }
    for sub in [&mut a, &mut b] {
        for i in 0..10u8 {
            assert_eq!(next_message(sub).await.1, [i]);
        }
    }
    // And the other way: a publisher behind the client link.
    let mut far = there.subscriber(&topic, SubscriberOptions::default()).await;
    let q = here
        .publisher(&topic, StreamSpec::new(STRING))
        .await
        .unwrap();
    until_demand(&q, &mut [&mut far]).await;
    q.publish(b"from the laptop").await.unwrap();
    loop {
        let (r, payload) = next_message(&mut far).await;
        if r.header.session == q.session() {
            assert_eq!(payload, b"from the laptop");
            break;
        }
    }
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_before_its_announcement_is_held_until_the_stream_is_known() {
    let dir = pki_dir("hold");
    let r = router(&dir, "r").await;
    let edge = Edge::new(Port::Router(r.clone()), "proc");
    let topic = TopicRef::new(realm(), "/map");
    // The reader knows the type, so it receives data before any announcement could arrive.
    let mut sub = edge
        .subscriber(
            &topic,
            SubscriberOptions {
                dds_type: Some(STRING.into()),
                hold_unannounced: true,
                ..Default::default()
            },
        )
        .await;
    let p = edge
        .publisher(&topic, StreamSpec::new(STRING))
        .await
        .unwrap();
    // The data subscription exists from the start: demand comes without reading.
    tokio::time::timeout(T, p.demand().wait_for(|w| *w))
        .await
        .unwrap()
        .unwrap();
    p.publish(b"first").await.unwrap();
    let (received, payload) = next_message(&mut sub).await;
    assert_eq!(payload, b"first");
    assert!(
        received.stream.is_some(),
        "delivered with its stream, once announced"
    );
    r.shutdown().await;
}
