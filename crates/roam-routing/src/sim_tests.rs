//! Multi-router scenarios on the simulator: delivery exactly once, re-convergence, pending
//! interest, withdrawal, restart and demand.

use std::time::Duration;

use rand::Rng;

use crate::sim::{name, Sim};

const SETTLE: Duration = Duration::from_secs(2);

fn chain(sim: &mut Sim, n: usize) -> Vec<usize> {
    let nodes: Vec<usize> = (0..n).map(|_| sim.add_router()).collect();
    let wires = nodes
        .windows(2)
        .map(|w| sim.connect(w[0], w[1], Duration::from_millis(5)))
        .collect();
    wires
}

fn send_round(sim: &mut Sim, pubs: &[usize], n: roam_proto::Name, seqs: std::ops::Range<u64>) {
    for &p in pubs {
        for q in seqs.clone() {
            sim.send(p, n, q);
        }
    }
    sim.run_for(SETTLE);
}

#[test]
fn chain_of_three_delivers_once() {
    let mut sim = Sim::new(1);
    chain(&mut sim, 3);
    let n = name(1);
    let p = sim.add_client(0);
    let s = sim.add_client(2);
    sim.publish(p, n);
    sim.subscribe(s, n);
    sim.run_for(SETTLE);
    assert_eq!(
        sim.clients[p].wanted.get(&n),
        Some(&true),
        "publisher learns it is wanted"
    );
    send_round(&mut sim, &[p], n, 0..10);
    sim.assert_exactly_once(&[s], &[p], 0..10);
    assert_eq!(sim.routers[1].stats().data_forwarded, 10);
    // The subscriber leaves: demand reaches the publisher, data stops at its router.
    sim.unsubscribe(s, n);
    sim.run_for(SETTLE);
    assert_eq!(sim.clients[p].wanted.get(&n), Some(&false));
    let before = sim.routers[1].stats().data_in;
    send_round(&mut sim, &[p], n, 10..12);
    assert_eq!(sim.routers[1].stats().data_in, before);
    assert_eq!(sim.routers[0].stats().data_no_route, 2);
}

#[test]
fn triangle_delivers_once() {
    let mut sim = Sim::new(2);
    for _ in 0..3 {
        sim.add_router();
    }
    sim.connect(0, 1, Duration::from_millis(3));
    sim.connect(1, 2, Duration::from_millis(7));
    sim.connect(2, 0, Duration::from_millis(11));
    let n = name(2);
    let p = sim.add_client(0);
    let s1 = sim.add_client(1);
    let s2 = sim.add_client(2);
    let s0 = sim.add_client(0);
    sim.publish(p, n);
    for s in [s0, s1, s2] {
        sim.subscribe(s, n);
    }
    sim.run_for(SETTLE);
    send_round(&mut sim, &[p], n, 0..20);
    sim.assert_exactly_once(&[s0, s1, s2], &[p], 0..20);
}

#[test]
fn several_publishers_and_subscribers_on_one_name() {
    let mut sim = Sim::new(3);
    for _ in 0..6 {
        sim.add_router();
    }
    // A ring with a chord: two cycles.
    for (a, b) in [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0), (1, 4)] {
        sim.connect_random(a, b);
    }
    let n = name(3);
    let pubs: Vec<usize> = [0, 2, 4].iter().map(|&r| sim.add_client(r)).collect();
    let subs: Vec<usize> = [0, 1, 3, 5, 5].iter().map(|&r| sim.add_client(r)).collect();
    for &p in &pubs {
        sim.publish(p, n);
    }
    for &s in &subs {
        sim.subscribe(s, n);
    }
    sim.run_for(SETTLE);
    send_round(&mut sim, &pubs, n, 0..10);
    sim.assert_exactly_once(&subs, &pubs, 0..10);
}

/// Whether the routers are connected using only the wires that are up.
fn connected(sim: &Sim, wires: &[usize]) -> bool {
    let n = sim.routers.len();
    let mut seen = vec![false; n];
    let mut stack = vec![0];
    seen[0] = true;
    while let Some(u) = stack.pop() {
        for &w in wires {
            if !sim.wire_up(w) {
                continue;
            }
            if let Some((a, b)) = sim.wire_nodes(w) {
                for (x, y) in [(a, b), (b, a)] {
                    if x == u && !seen[y] {
                        seen[y] = true;
                        stack.push(y);
                    }
                }
            }
        }
    }
    seen.iter().all(|&s| s)
}

#[test]
fn random_mesh_of_fifty_survives_cuts_and_restores() {
    for seed in [50, 51, 52, 53] {
        mesh_of_fifty(seed);
    }
}

fn mesh_of_fifty(seed: u64) {
    let mut sim = Sim::new(seed);
    let n_routers = 50;
    for _ in 0..n_routers {
        sim.add_router();
    }
    let mut wires = Vec::new();
    for i in 1..n_routers {
        let j = sim.rng.gen_range(0..i);
        wires.push(sim.connect_random(i, j));
    }
    let mut extra = 0;
    while extra < 30 {
        let (a, b) = (
            sim.rng.gen_range(0..n_routers),
            sim.rng.gen_range(0..n_routers),
        );
        let dup = wires.iter().any(
            |&w| matches!(sim.wire_nodes(w), Some((x, y)) if (x, y) == (a, b) || (x, y) == (b, a)),
        );
        if a != b && !dup {
            wires.push(sim.connect_random(a, b));
            extra += 1;
        }
    }
    let names = [name(10), name(11), name(12)];
    let mut pubs_by_name: Vec<Vec<usize>> = vec![Vec::new(); 3];
    let mut subs_by_name: Vec<Vec<usize>> = vec![Vec::new(); 3];
    for i in 0..8 {
        let r = sim.rng.gen_range(0..n_routers);
        let c = sim.add_client(r);
        sim.publish(c, names[i % 3]);
        pubs_by_name[i % 3].push(c);
    }
    for i in 0..15 {
        let r = sim.rng.gen_range(0..n_routers);
        let c = sim.add_client(r);
        sim.subscribe(c, names[i % 3]);
        subs_by_name[i % 3].push(c);
    }
    sim.run_for(SETTLE);
    println!(
        "seed {seed}: converged after {} steps {:?}",
        sim.steps, sim.frames
    );
    let mut round = 0u64;
    let mut check = |sim: &mut Sim| {
        let seqs = round * 100..round * 100 + 5;
        for k in 0..3 {
            send_round(sim, &pubs_by_name[k], names[k], seqs.clone());
        }
        for k in 0..3 {
            sim.assert_exactly_once(&subs_by_name[k], &pubs_by_name[k], seqs.clone());
        }
        round += 1;
        println!("round {round} ok at step {} {:?}", sim.steps, sim.frames);
    };
    check(&mut sim);

    // Cut links on cycles only, so the graph stays connected.
    let mut cut = Vec::new();
    while cut.len() < 6 {
        let w = wires[sim.rng.gen_range(0..wires.len())];
        if !sim.wire_up(w) {
            continue;
        }
        sim.cut(w);
        if connected(&sim, &wires) {
            cut.push(w);
        } else {
            let (a, b) = sim.wire_nodes(w).unwrap_or((0, 0));
            let w2 = sim.connect_random(a, b);
            wires.push(w2);
        }
    }
    sim.run_for(SETTLE);
    check(&mut sim);

    for w in cut {
        if let Some((a, b)) = sim.wire_nodes(w) {
            let w2 = sim.connect_random(a, b);
            wires.push(w2);
        }
    }
    sim.run_for(SETTLE);
    check(&mut sim);

    // Refreshes and expiry sweeps over a few lifetimes must not disturb delivery.
    sim.run_for(Duration::from_secs(120));
    check(&mut sim);
    let rpf: u64 = sim.routers.iter().map(|r| r.stats().data_rpf_drop).sum();
    println!(
        "seed {seed}: 50-router mesh: {} sim steps, {rpf} RPF drops",
        sim.steps
    );
}

#[test]
fn pending_interest_resolves_when_publisher_appears() {
    let mut sim = Sim::new(5);
    chain(&mut sim, 4);
    let n = name(5);
    let s = sim.add_client(3);
    sim.subscribe(s, n);
    sim.run_for(SETTLE);
    assert!(!sim.routers[3].has_route(sim.now, &n));
    // Long enough for a re-query round on the subscription refresh.
    sim.run_for(Duration::from_secs(11));
    let p = sim.add_client(0);
    sim.publish(p, n);
    sim.run_for(SETTLE);
    send_round(&mut sim, &[p], n, 0..3);
    sim.assert_exactly_once(&[s], &[p], 0..3);
}

#[test]
fn withdrawn_publisher_disappears_everywhere() {
    let mut sim = Sim::new(6);
    chain(&mut sim, 4);
    let (a, b) = (name(6), name(7));
    let p = sim.add_client(0);
    sim.publish(p, a);
    sim.publish(p, b);
    sim.run_for(SETTLE);
    let now = sim.now;
    assert!(sim
        .routers
        .iter_mut()
        .all(|r| r.has_route(now, &a) && r.has_route(now, &b)));
    sim.unpublish(p, a);
    sim.run_for(SETTLE);
    let now = sim.now;
    assert!(sim
        .routers
        .iter_mut()
        .all(|r| !r.has_route(now, &a) && r.has_route(now, &b)));
    // The client going away withdraws the rest.
    sim.detach(p);
    sim.run_for(SETTLE);
    let now = sim.now;
    assert!(sim.routers.iter_mut().all(|r| !r.has_route(now, &b)));
    // Tombstones lapse after the advert lifetime.
    sim.run_for(Duration::from_secs(60));
    assert!(sim.routers.iter().all(|r| r.names_len() == 0));
}

#[test]
fn unreachable_publisher_then_back() {
    let mut sim = Sim::new(7);
    let wires = chain(&mut sim, 3);
    let n = name(8);
    let p = sim.add_client(0);
    let s = sim.add_client(2);
    sim.publish(p, n);
    sim.subscribe(s, n);
    sim.run_for(SETTLE);
    send_round(&mut sim, &[p], n, 0..3);
    sim.assert_exactly_once(&[s], &[p], 0..3);
    sim.cut(wires[0]);
    sim.run_for(SETTLE);
    let now = sim.now;
    assert!(!sim.routers[2].has_route(now, &n), "origin is unreachable");
    assert!(sim.routers[2].stats().routers_known <= 3);
    sim.connect(0, 1, Duration::from_millis(4));
    sim.run_for(SETTLE);
    send_round(&mut sim, &[p], n, 3..6);
    sim.assert_exactly_once(&[s], &[p], 3..6);
}

#[test]
fn restarted_router_rejoins() {
    let mut sim = Sim::new(8);
    chain(&mut sim, 3);
    let (n, gone) = (name(9), name(19));
    let p = sim.add_client(2);
    let p_gone = sim.add_client(2);
    let s = sim.add_client(0);
    sim.publish(p, n);
    sim.publish(p_gone, gone);
    sim.subscribe(s, n);
    sim.run_for(SETTLE);
    send_round(&mut sim, &[p], n, 0..3);
    sim.assert_exactly_once(&[s], &[p], 0..3);

    // The middle router restarts.
    sim.restart(1, 1_000_000);
    sim.run_for(SETTLE);
    send_round(&mut sim, &[p], n, 3..6);
    sim.assert_exactly_once(&[s], &[p], 3..6);

    // The publisher's router restarts; the client of `gone` does not come back.
    sim.detach(p_gone);
    sim.run_for(SETTLE);
    sim.restart(2, 2_000_000);
    sim.run_for(SETTLE);
    send_round(&mut sim, &[p], n, 6..9);
    sim.assert_exactly_once(&[s], &[p], 6..9);
    let now = sim.now;
    assert!(sim.routers.iter_mut().all(|r| !r.has_route(now, &gone)));
}

#[test]
fn restarted_router_supersedes_its_previous_life() {
    // The router restarts while its neighbours still hold its old, live advert.
    let mut sim = Sim::new(9);
    chain(&mut sim, 3);
    let gone = name(20);
    let p = sim.add_client(2);
    sim.publish(p, gone);
    sim.run_for(SETTLE);
    // Clear the client's memory so it does not republish after the restart.
    sim.unpublish(p, gone);
    sim.restart(2, 5_000_000);
    sim.run_for(SETTLE);
    let now = sim.now;
    assert!(sim.routers.iter_mut().all(|r| !r.has_route(now, &gone)));
}

#[test]
fn demand_reaches_client_and_local_publishers() {
    let mut sim = Sim::new(10);
    chain(&mut sim, 2);
    let n = name(11);
    let p = sim.add_client(0);
    sim.publish(p, n);
    let now = sim.now;
    sim.routers[0].publish_local(now, n);
    sim.drain(0);
    sim.run_for(SETTLE);
    assert_eq!(sim.clients[p].wanted.get(&n), None);
    assert!(sim.demand[0].is_empty());

    let s = sim.add_client(1);
    sim.subscribe(s, n);
    sim.run_for(SETTLE);
    assert_eq!(sim.clients[p].wanted.get(&n), Some(&true));
    assert_eq!(sim.demand[0], vec![(n, true)]);

    sim.detach(s);
    sim.run_for(SETTLE);
    assert_eq!(sim.clients[p].wanted.get(&n), Some(&false));
    assert_eq!(sim.demand[0], vec![(n, true), (n, false)]);

    // A local subscriber on the same router is an audience too.
    let now = sim.now;
    sim.routers[0].subscribe_local(now, n);
    sim.drain(0);
    sim.run_for(SETTLE);
    assert_eq!(sim.clients[p].wanted.get(&n), Some(&true));
    assert_eq!(sim.demand[0].last(), Some(&(n, true)));
    send_round(&mut sim, &[p], n, 0..2);
    assert_eq!(sim.local_rx[0].len(), 2);
}

#[test]
fn local_publisher_reaches_remote_subscriber() {
    let mut sim = Sim::new(11);
    chain(&mut sim, 3);
    let n = name(12);
    let now = sim.now;
    sim.routers[2].subscribe_local(now, n);
    sim.drain(2);
    sim.routers[0].publish_local(now, n);
    sim.drain(0);
    sim.run_for(SETTLE);
    let now = sim.now;
    for q in 0..4 {
        sim.routers[0].send_local(now, n, crate::sim::envelope(n, 7, q));
    }
    sim.drain(0);
    sim.run_for(SETTLE);
    assert_eq!(sim.local_rx[2].len(), 4);
    assert!(sim.local_rx[2].values().all(|&c| c == 1));
}

#[test]
fn rpf_drops_copies_from_off_tree_neighbours() {
    let mut sim = Sim::new(12);
    for _ in 0..3 {
        sim.add_router();
    }
    sim.connect(0, 1, Duration::from_millis(3));
    sim.connect(1, 2, Duration::from_millis(3));
    sim.connect(2, 0, Duration::from_millis(3));
    let n = name(13);
    let p = sim.add_client(0);
    let s = sim.add_client(1);
    sim.publish(p, n);
    sim.subscribe(s, n);
    sim.run_for(SETTLE);
    send_round(&mut sim, &[p], n, 0..5);
    // Router 2 misbehaves (say, a stale tree) and floods router 0's data to router 1 too.
    let origin = sim.id(0);
    for q in 0..5 {
        let envelope = crate::sim::envelope(n, crate::sim::session_of(p), q);
        sim.inject(2, 1, roam_proto::Frame::Data { origin, envelope });
    }
    sim.run_for(SETTLE);
    sim.assert_exactly_once(&[s], &[p], 0..5);
    assert_eq!(sim.routers[1].stats().data_rpf_drop, 5);
}

#[test]
fn malformed_envelopes_cross_the_mesh_without_harm() {
    let mut sim = Sim::new(13);
    chain(&mut sim, 3);
    let n = name(14);
    let p = sim.add_client(0);
    let s = sim.add_client(2);
    sim.publish(p, n);
    sim.subscribe(s, n);
    sim.run_for(SETTLE);
    for bytes in [&[][..], &[1u8; 20][..], &[2u8; 200][..]] {
        sim.inject(
            1,
            2,
            roam_proto::Frame::Data {
                origin: sim.id(0),
                envelope: bytes::Bytes::copy_from_slice(bytes),
            },
        );
    }
    sim.run_for(SETTLE);
    assert_eq!(sim.routers[2].stats().data_malformed, 3);
    send_round(&mut sim, &[p], n, 0..2);
    sim.assert_exactly_once(&[s], &[p], 0..2);
}
