//! Fault tolerance: routers die and come back; publishers and subscribers keep running.
#![allow(clippy::cloned_ref_to_slice_refs)]

use std::time::{Duration, Instant};

use crate::common::*;

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

#[test]
fn a_killed_middle_router_restarted_at_once_is_taken_back_at_once() {
    // r2 dials both: its neighbours take its new links in place of the dead ones.
    kill_and_restart_the_middle_of_a_chain(true, Duration::from_secs(4));
}

#[test]
fn a_killed_router_restarted_on_its_address_is_redialled_at_once() {
    // r3 dials r2: r3 learns from r2's stateless reset, not its idle timeout, that the
    // old link is dead, and dials again: well before the 3 s idle timeout these routers
    // run with (waiting for that took 3.9 s in all).
    kill_and_restart_the_middle_of_a_chain(false, Duration::from_secs(3));
}

/// r1 (publisher) - r2 - r3 (subscriber): r2 is killed (SIGKILL) and restarted on its
/// address 1 s later; the subscriber's longest gap stays under `max_gap` (about that
/// second, where the dead link's idle timeout once cost 10 s), with no duplicates. r2
/// dials r1, and r3 too if `middle_dials_both` (else r3 dials r2).
fn kill_and_restart_the_middle_of_a_chain(middle_dials_both: bool, max_gap: Duration) {
    let net = Net::new(&format!("chain-restart-{middle_dials_both}"));
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let (r3, a3, r2, a2, r2_connects);
    if middle_dials_both {
        (r3, a3) = net.router("r3", "127.0.0.1:0", &[]);
        r2_connects = vec![a1.clone(), a3.clone()];
        (r2, a2) = net.router("r2", "127.0.0.1:0", &r2_connects);
    } else {
        r2_connects = vec![a1.clone()];
        (r2, a2) = net.router("r2", "127.0.0.1:0", &r2_connects);
        (r3, a3) = net.router("r3", "127.0.0.1:0", &[a2.clone()]);
    }
    let (_r3, mut r2) = (r3, r2);
    let sub = net.sub("/scan", "cloud", &a3, &[]);
    wait_subscribed(&sub);
    let _p = net.publisher("/scan", "robot", &a1, &["--size", "100", "--rate", "200"]);
    assert!(
        collect(&sub, 100, T).len() == 100,
        "no traffic before the fault"
    );

    let restarted: std::sync::Mutex<Option<Instant>> = std::sync::Mutex::new(None);
    let flowing = std::sync::atomic::AtomicUsize::new(0);
    let (seen, _sub, _r2b, killed) = std::thread::scope(|s| {
        let restarted = &restarted;
        let flowing = &flowing;
        let reader = s.spawn(move || {
            // Two seconds of traffic after the restart, or give up well after the old 10 s.
            let end = Instant::now() + Duration::from_secs(30);
            let mut seen: Vec<(Instant, u64)> = Vec::new();
            while Instant::now() < end {
                let back = *restarted.lock().unwrap();
                if back.is_some_and(|b| seen.iter().filter(|(t, _)| *t > b).count() >= 400) {
                    break;
                }
                if let Some(m) = sub
                    .line(Duration::from_millis(50))
                    .as_deref()
                    .and_then(parse_line)
                {
                    seen.push((Instant::now(), m.seq));
                    flowing.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
            (seen, sub)
        });
        // The gap is measured from the last message before the kill.
        let end = Instant::now() + T;
        while flowing.load(std::sync::atomic::Ordering::Relaxed) < 50 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        r2.kill();
        let killed = Instant::now();
        // The fault itself: the router stays dead for one second (nothing to wait for).
        std::thread::sleep(Duration::from_secs(1));
        let (r2b, _) = net.router("r2", &a2, &r2_connects);
        *restarted.lock().unwrap() = Some(Instant::now());
        let (seen, sub) = reader.join().expect("reader");
        (seen, sub, r2b, killed)
    });

    let back = restarted.lock().unwrap().expect("restarted");
    let after = seen.iter().filter(|(t, _)| *t > back).count();
    assert!(
        after >= 400,
        "delivery did not resume after r2 came back: {after} messages; r1: {}\nr3: {}",
        _r1.logs(),
        _r3.logs()
    );
    let (gap, at) = seen
        .windows(2)
        .map(|w| (w[1].0 - w[0].0, w[0].1))
        .max()
        .expect("messages");
    let seqs: Vec<u64> = seen.iter().map(|(_, s)| *s).collect();
    let mut unique = seqs.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), seqs.len(), "duplicates after the restart");
    let jump = seqs
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .max()
        .unwrap_or(0);
    eprintln!(
        "longest gap {gap:?} after message {at}; {} messages, seq {}..{}, largest seq jump {jump}, killed {:?} after the first",
        seen.len(), seqs[0], seqs[seqs.len() - 1], killed.saturating_duration_since(seen[0].0)
    );
    assert!(
        gap < max_gap,
        "longest delivery gap {gap:?} after message {at} (the old idle timeout cost 10 s)"
    );
}

#[test]
fn two_routers_dialing_each_other_settle_on_one_link() {
    // Each is configured with the other's address: both dial, and both ends must keep the
    // same one of the two links, then leave it alone.
    let net = Net::new("mutual-dial");
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port();
    let a2 = format!("127.0.0.1:{port}");
    let (r1, a1) = net.router("r1", "127.0.0.1:0", &[a2.clone()]);
    let (r2, _) = net.router("r2", &a2, &[a1.clone()]);
    let sub = net.sub("/odom", "cloud", &a2, &[]);
    wait_subscribed(&sub);
    let _p = net.publisher("/odom", "robot", &a1, &["--size", "64", "--rate", "200"]);
    assert_eq!(collect(&sub, 100, T).len(), 100, "no traffic between them");
    let links_up =
        |r: &Proc, peer: &str| r.logs().matches(&format!("link up peer={peer} ")).count();
    // A dial still in flight when the other side's link came up (its first packet sent
    // before that side listened, resent by QUIC a second later) may complete within the
    // simultaneous-dial window (2 s) and replace the link once, alike at both ends. Settled
    // is no change for longer than that window; a link that keeps changing never settles.
    let deadline = Instant::now() + T;
    let mut before = (links_up(&r1, "r2"), links_up(&r2, "r1"));
    let mut since = Instant::now();
    while since.elapsed() < Duration::from_millis(2500) {
        assert!(
            Instant::now() < deadline,
            "the link never settled: r1: {}\nr2: {}",
            r1.logs(),
            r2.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
        let now = (links_up(&r1, "r2"), links_up(&r2, "r1"));
        if now != before {
            (before, since) = (now, Instant::now());
        }
    }
    assert!(
        before.0 <= 2 && before.1 <= 2,
        "more than one replacement while settling: r1: {}\nr2: {}",
        r1.logs(),
        r2.logs()
    );
    // Longer than the simultaneous-dial window and a dialer's longest backoff.
    let seen = seqs(&sub, Duration::from_secs(4));
    assert_eq!(
        (links_up(&r1, "r2"), links_up(&r2, "r1")),
        before,
        "the link kept changing: r1: {}\nr2: {}",
        r1.logs(),
        r2.logs()
    );
    assert!(
        seen.len() > 600 && seen.windows(2).all(|w| w[0] < w[1]),
        "{} messages, or out of order",
        seen.len()
    );
}
