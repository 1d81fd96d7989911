//! End-to-end recovery (roam-edge `recovery`): a reliable topic that keeps every message
//! (`roam pub --keep-all`) loses nothing when a router on its path dies, and what falls
//! outside the publisher's resend window is counted, the same, at both ends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::*;

const T: Duration = Duration::from_secs(30);

/// Every sequence the subscriber printed (counted in `flowing` as they come), until `after`
/// more have come once `back` is set (or the deadline).
fn read_until(
    sub: &Proc,
    flowing: &AtomicUsize,
    back: &std::sync::Mutex<Option<Instant>>,
    after: usize,
) -> Vec<u64> {
    let end = Instant::now() + T;
    let mut seen = Vec::new();
    let mut since_back = 0;
    while Instant::now() < end && since_back < after {
        if let Some(m) = sub
            .line(Duration::from_millis(50))
            .as_deref()
            .and_then(parse_line)
        {
            seen.push(m.seq);
            flowing.fetch_add(1, Ordering::Relaxed);
            if back.lock().unwrap().is_some() {
                since_back += 1;
            }
        }
    }
    seen
}

/// The numbers in the summary line that contains `marker`, in order.
fn summary_numbers(p: &Proc, marker: &str) -> Vec<u64> {
    let logs = p.logs();
    let line = logs
        .lines()
        .find(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no {marker:?} in\n{logs}"));
    line.split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// (recovered, lost) from `roam sub`'s summary.
fn sub_counts(sub: &Proc) -> (u64, u64) {
    let n = summary_numbers(sub, "recovered after a loss");
    (n[n.len() - 2], n[n.len() - 1])
}

/// (resent, lost, subscribers) from `roam pub`'s summary.
fn pub_counts(publisher: &Proc) -> (u64, u64, u64) {
    let n = summary_numbers(publisher, "did not reach");
    (n[0], n[1], n[2])
}

/// The sequences missing between the first and the last one seen, and whether any came
/// twice or out of order.
fn missing(seqs: &[u64]) -> (u64, bool) {
    let disordered = seqs.windows(2).any(|w| w[1] <= w[0]);
    let span = seqs.last().unwrap() - seqs.first().unwrap() + 1;
    (span - seqs.len() as u64, disordered)
}

/// r1 (publisher) - r2 - r3 (subscriber); r2 is killed (SIGKILL) and restarted on its
/// address after `dead`. Returns the subscriber's sequences and both ends, stopped, with
/// their summaries.
fn chain_with_a_dead_middle(
    test: &str,
    pub_args: &[&str],
    dead: Duration,
) -> (Vec<u64>, Proc, Proc) {
    let net = Net::new(test);
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let (mut r2, a2) = net.router("r2", "127.0.0.1:0", std::slice::from_ref(&a1));
    let (_r3, a3) = net.router("r3", "127.0.0.1:0", std::slice::from_ref(&a2));
    let sub = net.sub("/scan", "cloud", &a3, &[]);
    wait_subscribed(&sub);
    let mut args = vec!["--size", "100", "--rate", "200", "--keep-all"];
    args.extend_from_slice(pub_args);
    let mut publisher = net.publisher("/scan", "robot", &a1, &args);
    let back = std::sync::Mutex::new(None);
    let flowing = AtomicUsize::new(0);
    let (seqs, mut sub, _r2b) = std::thread::scope(|s| {
        let (back, flowing) = (&back, &flowing);
        let reader = s.spawn(move || (read_until(&sub, flowing, back, 600), sub));
        // The fault comes once the stream runs: a second of it.
        let end = Instant::now() + T;
        while flowing.load(Ordering::Relaxed) < 200 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        r2.kill();
        // The fault itself: the router stays dead this long (nothing to wait for).
        std::thread::sleep(dead);
        let (r2b, _) = net.router("r2", &a2, std::slice::from_ref(&a1));
        *back.lock().unwrap() = Some(Instant::now());
        let (seqs, sub) = reader.join().expect("reader");
        (seqs, sub, r2b)
    });
    assert!(
        seqs.len() > 600,
        "the stream did not resume: {} messages\nr3: {}",
        seqs.len(),
        _r3.logs()
    );
    publisher.terminate();
    sub.terminate();
    (seqs, publisher, sub)
}

#[test]
fn a_keep_all_topic_loses_nothing_when_the_router_on_its_only_path_dies() {
    let (seqs, publisher, sub) =
        chain_with_a_dead_middle("recover-chain", &[], Duration::from_secs(1));
    let (lost, disordered) = missing(&seqs);
    assert_eq!(lost, 0, "messages lost: {}", sub.logs());
    assert!(!disordered, "duplicated or out of order");
    let (recovered, sub_lost) = sub_counts(&sub);
    assert!(recovered > 0, "nothing was recovered: {}", sub.logs());
    assert_eq!(sub_lost, 0);
    let (resent, pub_lost, subscribers) = pub_counts(&publisher);
    assert!(
        resent >= recovered,
        "resent {resent}, recovered {recovered}"
    );
    assert_eq!((pub_lost, subscribers), (0, 0));
}

#[test]
fn a_loss_beyond_the_resend_window_is_counted_alike_at_both_ends() {
    // Half a second kept, three seconds dead: most of the gap is gone by the time it is
    // asked for; the newest part of it is still resent.
    let (seqs, publisher, sub) = chain_with_a_dead_middle(
        "recover-beyond",
        &["--resend-window", "0.5"],
        Duration::from_secs(3),
    );
    let (lost, disordered) = missing(&seqs);
    assert!(!disordered, "duplicated or out of order");
    assert!(lost > 0, "a 3 s outage fits no 0.5 s window");
    let (recovered, sub_lost) = sub_counts(&sub);
    assert_eq!(sub_lost, lost, "the subscriber's count: {}", sub.logs());
    let (resent, pub_lost, subscribers) = pub_counts(&publisher);
    assert_eq!(
        (pub_lost, subscribers),
        (lost, 1),
        "the publisher's count: {}",
        publisher.logs()
    );
    assert!(resent >= recovered);
}

#[test]
fn a_keep_all_topic_loses_nothing_when_either_path_of_a_diamond_dies() {
    // r1 (publisher) reaches r4 (subscriber) through r2 or r3; each dies in turn and comes
    // back before the other does.
    let net = Net::new("recover-diamond");
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let (mut r2, a2) = net.router("r2", "127.0.0.1:0", std::slice::from_ref(&a1));
    let (mut r3, a3) = net.router("r3", "127.0.0.1:0", std::slice::from_ref(&a1));
    let (_r4, _a4) = net.router("r4", "127.0.0.1:0", &[a2.clone(), a3.clone()]);
    let mut sub = net.sub("/odom", "cloud", &_a4, &[]);
    wait_subscribed(&sub);
    let mut publisher = net.publisher(
        "/odom",
        "robot",
        &a1,
        &["--size", "100", "--rate", "200", "--keep-all"],
    );
    let mut seqs: Vec<u64> = collect(&sub, 200, T).into_iter().map(|m| m.seq).collect();
    assert_eq!(seqs.len(), 200, "no traffic before the faults");
    for (victim, addr, name) in [(&mut r2, &a2, "r2"), (&mut r3, &a3, "r3")] {
        victim.kill();
        // Traffic goes on over the other path: 400 more messages (2 s).
        let after = collect(&sub, 400, T);
        assert_eq!(
            after.len(),
            400,
            "traffic did not resume after killing {name}"
        );
        seqs.extend(after.iter().map(|m| m.seq));
        let (p, _) = net.router(name, addr, std::slice::from_ref(&a1));
        *victim = p;
        let again = collect(&sub, 400, T);
        assert_eq!(again.len(), 400, "traffic stopped when {name} came back");
        seqs.extend(again.iter().map(|m| m.seq));
    }
    publisher.terminate();
    sub.terminate();
    let (lost, disordered) = missing(&seqs);
    assert_eq!(lost, 0, "messages lost: {}", sub.logs());
    assert!(!disordered, "duplicated or out of order");
    assert_eq!(sub_counts(&sub).1, 0);
}
