//! Fault tolerance: routers die and come back; publishers and subscribers keep running.
#![allow(clippy::cloned_ref_to_slice_refs)]

mod common;

use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(30);

/// Messages keep flowing at `rate`; returns the sequence numbers seen within `window`.
fn seqs(sub: &Proc, window: Duration) -> Vec<u64> {
    collect(sub, usize::MAX, window)
        .into_iter()
        .map(|m| m.seq)
        .collect()
}

#[test]
fn traffic_reroutes_around_a_dead_router_in_a_diamond() {
    // r1 (publisher) reaches r4 (subscriber) through r2 or r3.
    let net = Net::new("diamond");
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let (mut r2, a2) = net.router("r2", "127.0.0.1:0", &[a1.clone()]);
    let (mut r3, a3) = net.router("r3", "127.0.0.1:0", &[a1.clone()]);
    let (_r4, a4) = net.router("r4", "127.0.0.1:0", &[a2.clone(), a3.clone()]);
    let sub = net.sub("/odom", "cloud", &a4, &[]);
    wait_subscribed(&sub);
    let _p = net.publisher("/odom", "robot", &a1, &["--size", "100", "--rate", "200"]);
    assert!(
        !seqs(&sub, Duration::from_secs(2)).is_empty(),
        "no traffic before the fault"
    );

    for (victim, addr, name) in [(&mut r2, &a2, "r2"), (&mut r3, &a3, "r3")] {
        victim.kill();
        // Within a few idle timeouts the other path carries the traffic again.
        let after = seqs(&sub, Duration::from_secs(6));
        assert!(
            after.len() > 100,
            "traffic did not resume after killing {name}: {} messages",
            after.len()
        );
        // Bring it back on the same address before killing the other one.
        let (p, _) = net.router(name, addr, &[a1.clone()]);
        *victim = p;
        std::thread::sleep(Duration::from_secs(2));
        let seen = seqs(&sub, Duration::from_secs(1));
        let mut sorted = seen.clone();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            seen.len(),
            "duplicates after {name} came back"
        );
    }
}

#[test]
fn a_restarted_router_resumes_delivery_without_restarting_endpoints() {
    let net = Net::new("restart");
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let (mut r2, a2) = net.router("r2", "127.0.0.1:0", &[a1.clone()]);
    let (_r3, a3) = net.router("r3", "127.0.0.1:0", &[a2.clone()]);
    let sub = net.sub("/status", "cloud", &a3, &[]);
    wait_subscribed(&sub);
    let _p = net.publisher("/status", "robot", &a1, &["--size", "64", "--rate", "100"]);
    assert!(!seqs(&sub, Duration::from_secs(2)).is_empty());
    r2.kill();
    std::thread::sleep(Duration::from_secs(3));
    let _ = seqs(&sub, Duration::from_millis(10));
    let (_r2b, _) = net.router("r2", &a2, &[a1.clone()]);
    let after = seqs(&sub, Duration::from_secs(8));
    assert!(
        after.len() > 100,
        "delivery did not resume: {} messages; r3: {}",
        after.len(),
        _r3.logs()
    );
    assert!(
        after.windows(2).all(|w| w[0] < w[1]),
        "out of order or duplicated after restart"
    );
}

#[test]
fn the_first_router_restarting_reconnects_its_clients() {
    let net = Net::new("client-reconnect");
    let (mut r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let sub = net.sub("/cmd", "cloud", &a1, &[]);
    wait_subscribed(&sub);
    let _p = net.publisher("/cmd", "robot", &a1, &["--size", "16", "--rate", "100"]);
    assert!(!seqs(&sub, Duration::from_secs(2)).is_empty());
    r1.kill();
    std::thread::sleep(Duration::from_secs(1));
    let (_r1b, _) = net.router("r1", &a1, &[]);
    let after = seqs(&sub, T.min(Duration::from_secs(8)));
    assert!(
        after.len() > 100,
        "clients did not come back: {}",
        after.len()
    );
}
