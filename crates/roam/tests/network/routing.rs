//! The routing plane end to end: real routers, publishers and subscribers on loopback.
#![allow(clippy::cloned_ref_to_slice_refs)]

use std::io::Write;
use std::time::Duration;

use crate::common::*;

const T: Duration = Duration::from_secs(60);

#[test]
fn chain_of_three_delivers_10000_reliable_messages_in_order() {
    let net = Net::new("chain10k");
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let (_r2, a2) = net.router("r2", "127.0.0.1:0", &[a1.clone()]);
    let (_r3, a3) = net.router("r3", "127.0.0.1:0", &[a2.clone()]);
    let sub = net.sub("/bulk", "cloud", &a3, &["--count", "10000"]);
    wait_subscribed(&sub);
    let _p = net.publisher(
        "/bulk",
        "robot",
        &a1,
        &["--count", "10000", "--size", "1000"],
    );
    let got = collect(&sub, 10_000, T);
    assert_eq!(got.len(), 10_000, "lost messages");
    for (i, m) in got.iter().enumerate() {
        let seq = i as u64 + 1;
        assert_eq!(m.seq, seq, "out of order at {i}");
        assert_eq!(m.size, 1000);
        // Spot-check content (hashing all 10,000 here would only slow the test).
        if seq % 997 == 1 {
            assert_eq!(m.body, expected_digest(seq, 1000));
        }
    }
}

#[test]
fn triangle_delivers_each_message_exactly_once() {
    let net = Net::new("triangle");
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let (_r2, a2) = net.router("r2", "127.0.0.1:0", &[a1.clone()]);
    let (_r3, a3) = net.router("r3", "127.0.0.1:0", &[a1.clone(), a2.clone()]);
    // Subscribers on every router, publishers on two of them.
    let subs: Vec<Proc> = [(&a1, "s1"), (&a2, "s2"), (&a3, "s3")]
        .iter()
        .map(|(a, id)| net.sub("/tri", id, a, &["--count", "400"]))
        .collect();
    for s in &subs {
        wait_subscribed(s);
    }
    // Both publishers connect and advertise first; only once every subscriber's path has
    // formed do they send (a publisher that starts at once would, as in ROS, reach the
    // subscribers whose routes exist at that moment).
    let mut p1 = net.publisher_stdin("/tri", "p1", &a1, &[]);
    let mut p2 = net.publisher_stdin("/tri", "p2", &a2, &[]);
    std::thread::sleep(Duration::from_secs(1));
    let (mut in1, mut in2) = (p1.stdin().unwrap(), p2.stdin().unwrap());
    for i in 0..200 {
        writeln!(in1, "p1 message {i}").unwrap();
        writeln!(in2, "p2 message {i}").unwrap();
    }
    drop((in1, in2));
    for s in &subs {
        let got = collect(s, 400, T);
        assert_eq!(got.len(), 400, "{} got {} of 400", s.name, got.len());
        // Two publishers, each seq 1..=200, each exactly once.
        let mut count = std::collections::HashMap::new();
        for m in &got {
            *count.entry(m.body.clone()).or_insert(0) += 1;
        }
        let dups: Vec<_> = count.iter().filter(|(_, &c)| c != 1).collect();
        assert!(dups.is_empty(), "{}: duplicates {dups:?}", s.name);
        assert_eq!(count.len(), 400);
        // No more arrive later (no duplicates trickling in).
        let extra = collect(s, 1, Duration::from_millis(500));
        assert!(extra.is_empty(), "{}: extra message {extra:?}", s.name);
    }
}

#[test]
fn a_64_mib_message_arrives_intact() {
    let net = Net::new("big");
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let (_r2, a2) = net.router("r2", "127.0.0.1:0", &[a1.clone()]);
    let (_r3, a3) = net.router("r3", "127.0.0.1:0", &[a2.clone()]);
    let sub = net.sub("/big", "cloud", &a3, &["--count", "2"]);
    wait_subscribed(&sub);
    let size = 64 << 20;
    let _p = net.publisher(
        "/big",
        "robot",
        &a1,
        &["--count", "2", "--size", &size.to_string()],
    );
    let got = collect(&sub, 2, Duration::from_secs(120));
    assert_eq!(got.len(), 2, "sub logs: {}", sub.logs());
    for (i, m) in got.iter().enumerate() {
        assert_eq!(m.seq, i as u64 + 1);
        assert_eq!(m.size, size);
        assert_eq!(m.body, expected_digest(m.seq, size));
    }
}

#[test]
fn routers_link_over_tcp_when_udp_is_blocked() {
    let net = Net::new("tcp");
    let (mut r1, _a1) = net.router_with("r1", "127.0.0.1:0", &[], &["--listen-tcp", "127.0.0.1:0"]);
    // The TCP address is printed on the line after the QUIC one.
    let tcp = r1
        .line(Duration::from_secs(5))
        .and_then(|l| l.strip_prefix("listening tcp ").map(str::to_string))
        .expect("tcp addr");
    let (mut r2, a2) = net.router("r2", "127.0.0.1:0", &[format!("tcp://{tcp}")]);
    let mut sub = net.sub("/over_tcp", "cloud", &a2, &["--count", "100"]);
    wait_subscribed(&sub);
    // The publisher waits until r1 has the subscription (its demand), so nothing it sends
    // predates the route.
    let mut p = net.publisher(
        "/over_tcp",
        "robot",
        &format!("tcp://{tcp}"),
        &["--count", "100", "--size", "2048"],
    );
    let got = collect(&sub, 100, T);
    if got.len() != 100 {
        // Where the rest stopped: every process's own count (the publisher's "sent", the
        // routers' data_in/forwarded/no_route and per-link figures, the subscriber's
        // "received"), which each prints when stopped.
        panic!(
            "{} of 100 messages arrived (seq {:?} to {:?}){}",
            got.len(),
            got.first().map(|m| m.seq),
            got.last().map(|m| m.seq),
            final_words(&mut [&mut p, &mut r1, &mut r2, &mut sub])
        );
    }
    assert!(got
        .iter()
        .enumerate()
        .all(|(i, m)| m.seq == i as u64 + 1 && m.body == expected_digest(m.seq, 2048)));
}

#[test]
fn a_best_effort_flood_does_not_hold_back_a_reliable_topic() {
    let net = Net::new("flood");
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let (_r2, a2) = net.router("r2", "127.0.0.1:0", &[a1.clone()]);
    let flood_sub = net.sub("/camera", "viewer", &a2, &["--quiet"]);
    let sub = net.sub("/joystick", "cloud", &a2, &["--count", "100"]);
    wait_subscribed(&sub);
    wait_subscribed(&flood_sub);
    // A flood of 256 KB best-effort frames as fast as possible, for much longer than the
    // reliable topic needs.
    let mut flood = net.publisher(
        "/camera",
        "camera",
        &a1,
        &["--size", "262144", "--best-effort", "--count", "20000"],
    );
    std::thread::sleep(Duration::from_millis(500));
    let _joy = net.publisher(
        "/joystick",
        "joy",
        &a1,
        &["--count", "100", "--size", "32", "--rate", "100"],
    );
    let got = collect(&sub, 100, T);
    // Every reliable message arrived, in order, while the flood was still running.
    assert_eq!(got.len(), 100);
    assert!(got.iter().enumerate().all(|(i, m)| m.seq == i as u64 + 1));
    assert!(
        flood.wait_exit(Duration::from_millis(1)).is_none(),
        "flood ended before the reliable topic finished"
    );
}

#[test]
fn stdin_lines_are_published_as_text() {
    let net = Net::new("stdin");
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let sub = net.sub("/chatter", "cloud", &a1, &["--count", "2"]);
    wait_subscribed(&sub);
    let mut p = net.publisher_stdin("/chatter", "robot", &a1, &[]);
    let mut stdin = p.stdin().unwrap();
    writeln!(stdin, "hello roam").unwrap();
    writeln!(stdin, "second line").unwrap();
    drop(stdin);
    let got = collect(&sub, 2, T);
    assert_eq!(
        got.iter().map(|m| m.body.as_str()).collect::<Vec<_>>(),
        ["text=\"hello roam\"", "text=\"second line\""]
    );
    assert!(p.wait_exit(T).is_some_and(|s| s.success()));
}

#[test]
fn full_lanes_push_back_on_the_publisher_instead_of_dropping() {
    // Tiny reliable queues on the routers: the publisher outruns them constantly, so every
    // message must wait for room (topic paused) rather than be dropped.
    let net = Net::new("pushback");
    let cfg = net.dir.join("small-queues.yaml");
    std::fs::write(
        &cfg,
        "link:\n  reliable_queue_messages: 8\n  idle_timeout_ms: 3000\n",
    )
    .unwrap();
    let cfg = cfg.to_string_lossy().into_owned();
    let (_r1, a1) = net.router_with("r1", "127.0.0.1:0", &[], &["-c", &cfg]);
    let (r2, a2) = net.router_with(
        "r2",
        "127.0.0.1:0",
        std::slice::from_ref(&a1),
        &["-c", &cfg],
    );
    let sub = net.sub("/bulk", "cloud", &a2, &["--count", "5000"]);
    wait_subscribed(&sub);
    let _p = net.publisher(
        "/bulk",
        "robot",
        &a1,
        &["--count", "5000", "--size", "4000"],
    );
    let got = collect(&sub, 5000, T);
    assert_eq!(got.len(), 5000, "lost messages; r2: {}", r2.logs());
    assert!(
        got.iter().enumerate().all(|(i, m)| m.seq == i as u64 + 1),
        "out of order"
    );
}

/// Stops each process (SIGTERM, by PID) so that it prints its summary, and returns all their
/// logs, for a failure's message.
fn final_words(procs: &mut [&mut Proc]) -> String {
    let mut out = String::new();
    for p in procs.iter_mut() {
        p.terminate();
        out.push_str(&format!("\n--- {}:\n{}", p.name, p.logs()));
    }
    out
}
