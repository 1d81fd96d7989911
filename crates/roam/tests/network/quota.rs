//! A client that floods a router is held to its link's quota (`link.client_max_*_per_s`):
//! its reliable data waits (the client slows down, nothing is lost), its best-effort data is
//! dropped over the quota, and both are counted on its link in the router's figures.

use std::time::{Duration, Instant};

use crate::common::*;

const T: Duration = Duration::from_secs(30);
const QUOTA: &str = "500";

/// The numbers after `key=` in the router's status line for the link to `peer`.
fn link_figure(router: &Proc, peer: &str, key: &str) -> u64 {
    let logs = router.logs();
    logs.lines()
        .filter(|l| l.contains("roam::stats: link "))
        .filter(|l| l.contains(&format!("peer={peer} ")))
        .filter_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{key}=")))
                .and_then(|n| n.parse().ok())
        })
        .max()
        .unwrap_or_else(|| panic!("no {key} for the link to {peer} in\n{logs}"))
}

#[test]
fn a_reliable_flood_is_slowed_to_the_quota_and_loses_nothing() {
    let net = Net::new("quota-reliable");
    let (mut r1, a1) = net.router_with(
        "r1",
        "127.0.0.1:0",
        &[],
        &["--client-max-messages-per-s", QUOTA],
    );
    let sub = net.sub("/flood", "cloud", &a1, &[]);
    wait_subscribed(&sub);
    // Unpaced: as fast as the link takes them.
    let count = 2000;
    let started = Instant::now();
    let mut publisher = net.publisher(
        "/flood",
        "robot",
        &a1,
        &["--size", "100", "--count", &count.to_string()],
    );
    let mut seqs = Vec::new();
    let end = Instant::now() + T;
    while seqs.len() < count && Instant::now() < end {
        if let Some(m) = sub
            .line(Duration::from_millis(100))
            .as_deref()
            .and_then(parse_line)
        {
            seqs.push(m.seq);
        }
    }
    let took = started.elapsed();
    assert!(
        seqs.iter().copied().eq(1..=count as u64),
        "{} of {count} messages, in order: {}",
        seqs.len(),
        sub.logs()
    );
    // A second's worth passes at once, the rest at 500 a second: at least 3 s (a lower
    // bound: a slow machine only takes longer).
    assert!(
        took >= Duration::from_millis(2900),
        "the flood took only {took:?}"
    );
    publisher.wait_exit(T);
    r1.terminate();
    assert!(link_figure(&r1, "robot", "quota_waits") > 0);
    assert_eq!(link_figure(&r1, "robot", "dropped_quota"), 0);
    // Said once, then only counted.
    assert_eq!(
        r1.logs().matches("client over its quota").count(),
        1,
        "{}",
        r1.logs()
    );
    // The subscriber's link carries data out, not in: no quota applies to it.
    assert_eq!(link_figure(&r1, "cloud", "quota_waits"), 0);
}

#[test]
fn a_best_effort_flood_over_the_quota_is_dropped_and_counted() {
    let net = Net::new("quota-best-effort");
    let (mut r1, a1) = net.router_with(
        "r1",
        "127.0.0.1:0",
        &[],
        &["--client-max-messages-per-s", QUOTA],
    );
    let mut sub = net.sub("/flood", "cloud", &a1, &[]);
    wait_subscribed(&sub);
    let count = 5000;
    let mut publisher = net.publisher(
        "/flood",
        "robot",
        &a1,
        &[
            "--size",
            "100",
            "--count",
            &count.to_string(),
            "--best-effort",
        ],
    );
    assert!(
        publisher.wait_exit(T).is_some(),
        "the publisher did not finish: {}",
        publisher.logs()
    );
    // What got through arrives within moments of the publisher's end.
    let mut got = 0u64;
    while let Some(l) = sub.line(Duration::from_millis(500)) {
        got += u64::from(parse_line(&l).is_some());
    }
    sub.terminate();
    r1.terminate();
    let dropped = link_figure(&r1, "robot", "dropped_quota");
    assert!(
        dropped > 0,
        "nothing was dropped over the quota: {}",
        r1.logs()
    );
    assert!(
        got + dropped <= count as u64 && got < count as u64,
        "received {got} and dropped {dropped} of {count}"
    );
}

#[test]
fn data_on_a_name_nobody_subscribes_to_is_counted_against_its_sender() {
    let net = Net::new("quota-no-route");
    let (mut r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let mut publisher = net.publisher(
        "/nobody",
        "robot",
        &a1,
        &["--no-wait", "--size", "100", "--count", "300"],
    );
    assert!(
        publisher.wait_exit(T).is_some(),
        "the publisher did not finish: {}",
        publisher.logs()
    );
    r1.terminate();
    let dropped = link_figure(&r1, "robot", "dropped_no_route");
    assert!(dropped >= 300, "{dropped} counted: {}", r1.logs());
}

#[test]
fn links_of_one_identity_share_its_quota() {
    // Two unpaced `roam pub`s with one identity, each its own link and topic: the quota is
    // the identity's, so together they are held to it.
    let net = Net::new("quota-identity");
    let (mut r1, a1) = net.router_with(
        "r1",
        "127.0.0.1:0",
        &[],
        &["--client-max-messages-per-s", QUOTA],
    );
    let subs = [
        net.sub("/flood/a", "cloud", &a1, &[]),
        net.sub("/flood/b", "laptop", &a1, &[]),
    ];
    subs.iter().for_each(wait_subscribed);
    let count = 1000;
    let started = Instant::now();
    let mut pubs = ["/flood/a", "/flood/b"].map(|topic| {
        net.publisher(
            topic,
            "robot",
            &a1,
            &["--size", "100", "--count", &count.to_string()],
        )
    });
    let end = Instant::now() + T;
    let mut got = [0usize; 2];
    while got.iter().any(|&n| n < count) && Instant::now() < end {
        for (i, sub) in subs.iter().enumerate() {
            if got[i] < count
                && sub
                    .line(Duration::from_millis(20))
                    .as_deref()
                    .and_then(parse_line)
                    .is_some()
            {
                got[i] += 1;
            }
        }
    }
    let took = started.elapsed();
    assert_eq!(got, [count; 2], "every message of both");
    // 2,000 messages against one quota of 500 a second (a second's worth at once): at least
    // 3 s. Each link on a quota of its own would have taken about 1 s.
    assert!(
        took >= Duration::from_millis(2900),
        "both floods together took only {took:?}"
    );
    for p in &mut pubs {
        p.wait_exit(T);
    }
    r1.terminate();
    assert!(link_figure(&r1, "robot", "quota_waits") > 0);
}

#[test]
fn a_client_past_its_limit_of_names_is_refused_counted_and_logged_once() {
    // A `roam sub` holds several names from the start (its topic's data and announcement
    // names, the realm's own): with room for one, the rest are refused, counted on its link
    // and said once. The accounting itself is tested in roam-routing and roam-net.
    let net = Net::new("names-limit");
    let (mut r1, a1) = net.router_with("r1", "127.0.0.1:0", &[], &["--client-max-names", "1"]);
    let mut sub = net.sub("/odom", "cloud", &a1, &[]);
    assert!(
        r1.wait_log("client holds its limit of names", T),
        "no warning: {}",
        r1.logs()
    );
    r1.terminate();
    sub.terminate();
    assert_eq!(link_figure(&r1, "cloud", "names_held"), 1);
    assert!(link_figure(&r1, "cloud", "names_refused") >= 1);
    assert_eq!(
        r1.logs().matches("client holds its limit of names").count(),
        1,
        "logged once: {}",
        r1.logs()
    );
}
