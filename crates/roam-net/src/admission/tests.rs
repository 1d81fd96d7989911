//! The admission core, driven with an injected clock: no sockets, no sleeping.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use super::*;

const TIMEOUT: Duration = Duration::from_secs(10);

fn limits(total: usize, per_source: usize) -> AdmissionLimits {
    AdmissionLimits {
        handshake_timeout: TIMEOUT,
        total,
        per_source,
    }
}

fn v4(a: u8, b: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, a, b))
}

#[test]
fn one_address_gets_at_most_its_share_and_others_still_get_in() {
    let t0 = Instant::now();
    let mut a = Admission::new(limits(256, 16));
    for i in 0..16 {
        assert!(a.admit(t0, v4(0, 1), i).is_ok());
    }
    for i in 16..1000 {
        assert_eq!(
            a.admit(t0, v4(0, 1), i).unwrap_err(),
            Refusal::PerSource,
            "attempt {i}"
        );
    }
    assert_eq!(a.pending(), 16);
    assert!(
        a.admit(t0, v4(0, 2), 0).is_ok(),
        "another address is let in"
    );
    let s = a.stats();
    assert_eq!((s.admitted, s.refused_per_source, s.pending), (17, 984, 17));
}

#[test]
fn an_ipv6_host_is_its_slash_64_and_mapped_ipv4_is_ipv4() {
    let t0 = Instant::now();
    let mut a = Admission::new(limits(256, 2));
    let host = |last: u16| IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 7, 0, 0, 0, last));
    assert!(a.admit(t0, host(1), ()).is_ok());
    assert!(a.admit(t0, host(2), ()).is_ok());
    assert_eq!(a.admit(t0, host(3), ()).unwrap_err(), Refusal::PerSource);
    let next_net = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 8, 0, 0, 0, 1));
    assert!(a.admit(t0, next_net, ()).is_ok());

    let plain = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 9));
    let mapped = IpAddr::V6(Ipv4Addr::new(192, 0, 2, 9).to_ipv6_mapped());
    assert!(a.admit(t0, plain, ()).is_ok());
    assert!(a.admit(t0, mapped, ()).is_ok());
    assert_eq!(a.admit(t0, plain, ()).unwrap_err(), Refusal::PerSource);
    assert_eq!(a.pending_from(mapped), 2);
    assert_eq!(Source::from(host(9)).to_string(), "2001:db8:0:7::/64");
}

#[test]
fn when_full_a_newcomer_displaces_the_oldest_attempt_of_the_busiest_address() {
    let t0 = Instant::now();
    let mut a = Admission::new(limits(8, 8));
    // Address 1 holds 6 (values 0..6, oldest first), address 2 holds 2.
    for i in 0..6 {
        a.admit(t0, v4(0, 1), i).unwrap();
    }
    a.admit(t0, v4(0, 2), 100).unwrap();
    a.admit(t0, v4(0, 2), 101).unwrap();
    let fresh = a.admit(t0, v4(0, 3), 200).unwrap();
    assert_eq!(fresh.evicted.map(|(_, v)| v), Some(0), "address 1's oldest");
    assert_eq!((a.pending(), a.pending_from(v4(0, 1))), (8, 5));
    // Address 2 (2 pending) may still displace address 1 (5 pending)...
    let again = a.admit(t0, v4(0, 2), 102).unwrap();
    assert_eq!(again.evicted.map(|(_, v)| v), Some(1));
    // ...but address 1 cannot displace anyone: it is the busiest.
    assert_eq!(a.admit(t0, v4(0, 1), 7).unwrap_err(), Refusal::Total);
    assert_eq!(a.stats().evicted, 2);
    assert_eq!(a.stats().refused_total, 1);
}

#[test]
fn when_every_address_has_its_fair_share_newcomers_are_refused() {
    let t0 = Instant::now();
    let mut a = Admission::new(limits(4, 16));
    for b in 1..=4 {
        a.admit(t0, v4(0, b), b).unwrap();
    }
    // Displacing one of four single attempts would only move the problem.
    assert_eq!(a.admit(t0, v4(0, 9), 9).unwrap_err(), Refusal::Total);
    assert_eq!(a.pending(), 4);
}

#[test]
fn a_flood_from_many_addresses_never_locks_out_a_fresh_address() {
    let t0 = Instant::now();
    let mut a = Admission::new(limits(256, 16));
    let mut open = 0usize;
    // 40 addresses, 25 attempts each, interleaved: 1,000 stalled handshakes.
    for round in 0..25u32 {
        for src in 0..40u8 {
            if let Ok(adm) = a.admit(t0, v4(1, src), round) {
                open += 1;
                open -= usize::from(adm.evicted.is_some());
            }
            assert!(a.pending() <= 256);
            assert!(a.pending_from(v4(1, src)) <= 16);
        }
    }
    assert_eq!(open, a.pending());
    assert_eq!(a.pending(), 256, "the flood fills the total");
    // A legitimate peer from another address still gets a place, at once.
    let legit = a.admit(t0, v4(9, 9), 9999).unwrap();
    assert!(legit.evicted.is_some());
    assert_eq!(a.pending(), 256);
    let s = a.stats();
    assert_eq!(
        s.admitted + s.refused_per_source + s.refused_total,
        1001,
        "every attempt is accounted for: {s:?}"
    );
}

#[test]
fn a_finished_handshake_frees_its_place_once() {
    let t0 = Instant::now();
    let mut a = Admission::new(limits(2, 1));
    let first = a.admit(t0, v4(0, 1), "a").unwrap().ticket;
    assert_eq!(a.admit(t0, v4(0, 1), "b").unwrap_err(), Refusal::PerSource);
    assert_eq!(a.finish(first, Outcome::Authenticated), Some("a"));
    assert_eq!(a.finish(first, Outcome::Failed), None, "counted once");
    let second = a.admit(t0, v4(0, 1), "c").unwrap().ticket;
    assert_eq!(a.finish(second, Outcome::Failed), Some("c"));
    let s = a.stats();
    assert_eq!((s.authenticated, s.failed, s.pending), (1, 1, 0));
}

#[test]
fn attempts_past_their_deadline_expire_in_order_and_free_their_places() {
    let t0 = Instant::now();
    let mut a = Admission::new(limits(2, 2));
    let first = a.admit(t0, v4(0, 1), 1).unwrap();
    let second = a.admit(t0 + Duration::from_secs(3), v4(0, 1), 2).unwrap();
    assert_eq!(first.deadline, t0 + TIMEOUT);
    assert_eq!(a.next_deadline(), Some(t0 + TIMEOUT));
    assert_eq!(a.admit(t0, v4(0, 1), 3).unwrap_err(), Refusal::PerSource);

    assert!(a.expire(t0 + TIMEOUT - Duration::from_millis(1)).is_empty());
    let gone = a.expire(t0 + TIMEOUT);
    assert_eq!(gone, vec![(first.ticket, 1)]);
    assert_eq!(a.next_deadline(), Some(second.deadline));
    assert!(
        a.admit(t0 + TIMEOUT, v4(0, 1), 4).is_ok(),
        "its place is free"
    );
    // The shell's own timer may report the same timeout: it is not counted twice.
    assert_eq!(a.finish(first.ticket, Outcome::TimedOut), None);
    assert_eq!(a.expire(t0 + Duration::from_secs(60)).len(), 2);
    let s = a.stats();
    assert_eq!((s.timed_out, s.pending), (3, 0));
    assert_eq!(a.next_deadline(), None);
}

#[test]
fn a_refused_attempt_changes_nothing_but_its_counter() {
    let t0 = Instant::now();
    let mut a = Admission::new(limits(1, 1));
    a.admit(t0, v4(0, 1), ()).unwrap();
    let before = (a.pending(), a.next_deadline());
    assert!(a.admit(t0, v4(0, 2), ()).is_err());
    assert_eq!((a.pending(), a.next_deadline()), before);
}
