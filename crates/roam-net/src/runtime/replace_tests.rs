use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::*;

const ME: RouterId = 10;
const PEER: RouterId = 20;

fn addr(port: u16) -> Option<SocketAddr> {
    Some(SocketAddr::from(([10, 0, 0, 1], port)))
}

fn from_peer(link: LinkId) -> Offer {
    Offer {
        link,
        dialed_by: PEER,
        remote: addr(7000 + link as u16),
    }
}

fn dialed_by(link: LinkId, who: RouterId) -> Offer {
    Offer {
        link,
        dialed_by: who,
        remote: addr(7000 + link as u16),
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn a_first_link_comes_up_and_its_end_clears_the_peer() {
    let t0 = Instant::now();
    let mut l = Links::new(ME, Policy::default());
    assert_eq!(l.offer(PEER, from_peer(1), t0), Verdict::Up);
    assert_eq!(l.current(PEER), Some(1));
    l.down(PEER, 1);
    assert_eq!(l.current(PEER), None);
    assert_eq!(l.offer(PEER, from_peer(2), t0 + secs(1)), Verdict::Up);
}

#[test]
fn a_restarted_peer_replaces_its_stale_link_and_the_old_end_leaves_the_new_link_alone() {
    let t0 = Instant::now();
    let mut l = Links::new(ME, Policy::default());
    l.offer(PEER, from_peer(1), t0);
    assert_eq!(
        l.offer(PEER, from_peer(2), t0 + secs(60)),
        Verdict::Replace { old: 1 }
    );
    assert_eq!(l.current(PEER), Some(2));
    // The replaced link's own end arrives later.
    l.down(PEER, 1);
    assert_eq!(l.current(PEER), Some(2));
    l.down(PEER, 2);
    assert_eq!(l.current(PEER), None);
}

#[test]
fn a_link_this_router_dialed_to_a_restarted_peer_replaces_the_peers_old_one() {
    let t0 = Instant::now();
    let mut l = Links::new(ME, Policy::default());
    l.offer(PEER, from_peer(1), t0);
    assert_eq!(
        l.offer(PEER, dialed_by(2, ME), t0 + secs(30)),
        Verdict::Replace { old: 1 }
    );
}

#[test]
fn both_ends_of_a_simultaneous_dial_keep_the_link_the_smaller_id_dialed_in_either_order() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    // Link 1 dialed by router 10, link 2 by router 20; each end sees them in both orders.
    for (first, second) in [(1, 2), (2, 1)] {
        for (me, peer) in [(10, 20), (20, 10)] {
            let mut l = Links::new(me, Policy::default());
            let offer = |link: LinkId| dialed_by(link, if link == 1 { 10 } else { 20 });
            assert_eq!(l.offer(peer, offer(first), t0), Verdict::Up);
            let v = l.offer(peer, offer(second), t0 + ms(300));
            match first {
                1 => assert_eq!(v, Verdict::KeepExisting { current: 1 }),
                _ => assert_eq!(v, Verdict::Replace { old: 2 }),
            }
            assert_eq!(
                l.current(peer),
                Some(1),
                "router {me}, order {first}-{second}"
            );
        }
    }
}

#[test]
fn the_losing_half_of_a_simultaneous_dial_does_not_count_as_a_fight() {
    let t0 = Instant::now();
    let mut l = Links::new(ME, Policy::default());
    let mut now = t0;
    // The peer (the larger id) keeps dialing while this router's link is young: each is
    // kept out, never damped.
    l.offer(PEER, dialed_by(1, ME), now);
    for link in 2..10 {
        now += Duration::from_millis(100);
        assert_eq!(
            l.offer(PEER, from_peer(link), now),
            Verdict::KeepExisting { current: 1 }
        );
    }
}

#[test]
fn a_link_from_the_same_side_soon_after_is_a_new_life_not_a_simultaneous_dial() {
    let t0 = Instant::now();
    let mut l = Links::new(ME, Policy::default());
    l.offer(PEER, from_peer(1), t0);
    assert_eq!(
        l.offer(PEER, from_peer(2), t0 + Duration::from_millis(500)),
        Verdict::Replace { old: 1 }
    );
}

#[test]
fn after_the_simultaneous_window_the_newest_link_wins_whoever_dialed_it() {
    let t0 = Instant::now();
    // This router (10) dialed link 1; the peer (20) dials link 2 long after: the peer
    // restarted, and its new link wins although the smaller id dialed the old one.
    let mut l = Links::new(ME, Policy::default());
    l.offer(PEER, dialed_by(1, ME), t0);
    assert_eq!(
        l.offer(PEER, from_peer(2), t0 + secs(3)),
        Verdict::Replace { old: 1 }
    );
}

#[test]
fn two_holders_of_one_identity_are_damped_after_three_takeovers_and_said_once() {
    let t0 = Instant::now();
    let mut l = Links::new(ME, Policy::default());
    let mut now = t0;
    l.offer(PEER, from_peer(1), now);
    for link in 2..=4 {
        now += secs(2) + Duration::from_millis(100);
        assert_eq!(
            l.offer(PEER, from_peer(link), now),
            Verdict::Replace { old: link - 1 }
        );
    }
    now += secs(1);
    let until = now + secs(30);
    assert_eq!(
        l.offer(PEER, from_peer(5), now),
        Verdict::Refuse {
            current: 4,
            why: Refusal::Contested {
                until,
                first: true,
                places: [addr(7004), addr(7005)],
            }
        }
    );
    now += secs(5);
    assert_eq!(
        l.offer(PEER, from_peer(6), now),
        Verdict::Refuse {
            current: 4,
            why: Refusal::Contested {
                until,
                first: false,
                places: [addr(7004), addr(7006)],
            }
        }
    );
    assert_eq!(
        l.current(PEER),
        Some(4),
        "the kept link stays through the back-off"
    );
    // Once the back-off is over, a new link replaces again.
    assert_eq!(
        l.offer(PEER, from_peer(7), until),
        Verdict::Replace { old: 4 }
    );
}

#[test]
fn replacements_spread_wider_than_the_window_are_never_damped() {
    let t0 = Instant::now();
    let mut l = Links::new(ME, Policy::default());
    let mut now = t0;
    l.offer(PEER, from_peer(1), now);
    for link in 2..20 {
        now += secs(4);
        assert_eq!(
            l.offer(PEER, from_peer(link), now),
            Verdict::Replace { old: link - 1 }
        );
    }
}

#[test]
fn during_a_back_off_a_peer_whose_link_went_down_still_links_again() {
    let t0 = Instant::now();
    let mut l = Links::new(ME, Policy::default());
    let mut now = t0;
    l.offer(PEER, from_peer(1), now);
    for link in 2..=5 {
        now += secs(2) + Duration::from_millis(100);
        l.offer(PEER, from_peer(link), now);
    }
    assert_eq!(l.current(PEER), Some(4));
    l.down(PEER, 4);
    assert_eq!(l.offer(PEER, from_peer(6), now + secs(1)), Verdict::Up);
}

#[test]
fn ends_of_unknown_links_and_peers_change_nothing() {
    let t0 = Instant::now();
    let mut l = Links::new(ME, Policy::default());
    l.down(PEER, 9);
    l.offer(PEER, from_peer(1), t0);
    l.down(PEER, 9);
    l.down(30, 1);
    assert_eq!(l.current(PEER), Some(1));
}
