//! The sans-IO routing core: RIB insert and lookup, publish and subscribe cost with a full
//! RIB, and the data path, all driven directly through `roam_routing::Router`.

use std::hint::black_box;
use std::time::Instant;

use bytes::Bytes;
use roam_proto::frame::{Advert, Lsa, Role};
use roam_proto::{Frame, Name, RealmSecret, Sealer};
use roam_routing::{Config, Router};
use serde::Serialize;

use crate::timer::{measure, time_loop, OpTime, Plan};

/// Link ids inside the bench router: a neighbour router (id 2) and two client links.
pub const ROUTER_LINK: roam_routing::LinkId = 12;
const SUB_LINK: roam_routing::LinkId = 100;
const PUB_LINK: roam_routing::LinkId = 101;
const PEER: u64 = 2;
const BATCH: usize = 1024;

#[derive(Debug, Clone, Serialize)]
pub struct RibFigures {
    pub names: usize,
    /// Mean ns per advert over whole inserts (batches of 1024 through `handle_frame`), the
    /// median over `insert_runs` fresh routers.
    pub insert_ns_per_name: f64,
    pub insert_runs: usize,
    /// `has_route` on present names.
    pub lookup: OpTime,
    /// `has_route` on absent names.
    pub lookup_miss: OpTime,
    pub rib_bytes_per_name: f64,
    /// A client's `Publish` of one new name (one frame each), with the RIB full: mean.
    pub publish_one_ns: f64,
    /// A client's `Subscribe` to one advertised name (one frame each), with the RIB full: mean.
    pub subscribe_one_ns: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DataPath {
    pub payload_bytes: usize,
    /// `handle_data` from the neighbour router (RPF checked) to one client subscriber,
    /// transmits drained.
    pub transit: OpTime,
    /// From a client publisher on this router to one client subscriber.
    pub from_client: OpTime,
}

#[derive(Debug, Clone, Serialize)]
pub struct RoutingCore {
    pub rib: Vec<RibFigures>,
    pub data: DataPath,
}

pub fn name(i: u32) -> Name {
    let mut b = [0x5au8; 32];
    b[..4].copy_from_slice(&i.to_le_bytes());
    Name(b)
}

/// Adverts for names `from..to` from origin `PEER`, in frames of 1024.
pub fn advert_frames(from: u32, to: u32) -> Vec<Frame> {
    (from..to)
        .collect::<Vec<_>>()
        .chunks(BATCH)
        .map(|c| {
            Frame::Advertise(
                c.iter()
                    .map(|&i| Advert {
                        name: name(i),
                        origin: PEER,
                        seq: 1,
                        lifetime_s: 600,
                        withdrawn: false,
                    })
                    .collect(),
            )
        })
        .collect()
}

/// Router 1 with a neighbour router and two client links, nothing advertised yet.
pub fn bench_router(now: Instant) -> Router {
    let mut r = Router::new(Config::default_for(1), now);
    r.link_up(now, ROUTER_LINK, Role::Router, PEER);
    r.link_up(now, SUB_LINK, Role::Client, 0);
    r.link_up(now, PUB_LINK, Role::Client, 0);
    r.handle_frame(
        now,
        ROUTER_LINK,
        Frame::Lsa(Lsa {
            origin: PEER,
            seq: 1,
            lifetime_s: 600,
            neighbours: vec![1],
        }),
    );
    drain(&mut r);
    r
}

fn drain(r: &mut Router) -> usize {
    let mut n = 0;
    while r.poll_transmit().is_some() {
        n += 1;
    }
    while r.poll_event().is_some() {}
    n
}

fn rib(plan: Plan, n: u32, runs: usize) -> Result<RibFigures, String> {
    let now = Instant::now();
    let mut per_name = Vec::new();
    let mut router = None;
    for _ in 0..runs {
        let mut r = bench_router(now);
        let frames = advert_frames(0, n);
        let t = Instant::now();
        for f in frames {
            r.handle_frame(now, ROUTER_LINK, f);
            drain(&mut r);
        }
        per_name.push(t.elapsed().as_nanos() as f64 / n as f64);
        if r.names_len() != n as usize {
            return Err(format!(
                "RIB holds {} names after {n} adverts",
                r.names_len()
            ));
        }
        router = Some(r);
    }
    let mut r = router.ok_or("no insert run")?;
    // Present names in a scattered order (a stride coprime with n).
    let stride = 7919u64;
    let mut hits = 0u64;
    let mut total = 0u64;
    let lookup = measure(plan, u64::MAX, |k| {
        time_loop(k, |i| {
            total += 1;
            hits += black_box(r.has_route(now, &name(((i * stride) % n as u64) as u32))) as u64;
        })
    });
    if hits != total {
        return Err(format!("lookups found {hits} of {total} advertised names"));
    }
    let mut false_hits = 0u64;
    let lookup_miss = measure(plan, u64::MAX, |k| {
        time_loop(k, |i| {
            false_hits += black_box(r.has_route(now, &name(n + 1 + (i % 1_000_000) as u32))) as u64;
        })
    });
    if false_hits != 0 {
        return Err(format!("{false_hits} lookups found names never advertised"));
    }
    let rib_bytes_per_name = r.rib_memory_estimate() as f64 / n as f64;

    // One name per frame, as a client sends them; names beyond the RIB (new publications),
    // then subscriptions to advertised names (each sends interest towards the origin).
    let k = 10_000u32.min(n);
    let base = n + 2_000_000;
    let t = time_loop(k as u64, |i| {
        r.handle_frame(now, PUB_LINK, Frame::Publish(vec![name(base + i as u32)]));
        drain(&mut r);
    });
    let publish_one_ns = t.as_nanos() as f64 / k as f64;
    let step = (n / k).max(1);
    let t = time_loop(k as u64, |i| {
        r.handle_frame(now, SUB_LINK, Frame::Subscribe(vec![name(i as u32 * step)]));
        drain(&mut r);
    });
    let subscribe_one_ns = t.as_nanos() as f64 / k as f64;

    let mut v = per_name.clone();
    let f = RibFigures {
        names: n as usize,
        insert_ns_per_name: crate::timer::quantile(&mut v, 0.5),
        insert_runs: runs,
        lookup,
        lookup_miss,
        rib_bytes_per_name,
        publish_one_ns,
        subscribe_one_ns,
    };
    eprintln!(
        "  rib {:>9} names: insert {:>7.0} ns/name, lookup {:>5.0} ns (miss {:>5.0}), ~{:.0} B/name, publish-1 {:.0} ns, subscribe-1 {:.0} ns",
        n, f.insert_ns_per_name, f.lookup.median_ns, f.lookup_miss.median_ns, f.rib_bytes_per_name, f.publish_one_ns, f.subscribe_one_ns
    );
    Ok(f)
}

fn data_path(plan: Plan) -> Result<DataPath, String> {
    let now = Instant::now();
    let mut r = bench_router(now);
    for f in advert_frames(0, 10_000) {
        r.handle_frame(now, ROUTER_LINK, f);
    }
    let payload = vec![0u8; 1024];
    let transit_name = name(7);
    let mut sealer = Sealer::with_session(
        &RealmSecret::from_bytes([1; 32]),
        transit_name,
        1,
        false,
        None,
    );
    let transit_env = Bytes::from(sealer.seal_to_vec(&payload, 1).map_err(|e| e.to_string())?);
    let local_name = name(50_000_000);
    let mut sealer = Sealer::with_session(
        &RealmSecret::from_bytes([1; 32]),
        local_name,
        1,
        false,
        None,
    );
    let local_env = Bytes::from(sealer.seal_to_vec(&payload, 1).map_err(|e| e.to_string())?);
    r.handle_frame(now, PUB_LINK, Frame::Publish(vec![local_name]));
    r.handle_frame(
        now,
        SUB_LINK,
        Frame::Subscribe(vec![transit_name, local_name]),
    );
    drain(&mut r);

    let mut sent = 0u64;
    let mut ops = 0u64;
    let transit = measure(plan, u64::MAX, |k| {
        time_loop(k, |_| {
            ops += 1;
            r.handle_data(now, ROUTER_LINK, PEER, transit_env.clone());
            sent += drain(&mut r) as u64;
        })
    });
    if sent != ops {
        return Err(format!("transit data: {sent} transmits for {ops} messages"));
    }
    let (mut sent, mut ops) = (0u64, 0u64);
    let from_client = measure(plan, u64::MAX, |k| {
        time_loop(k, |_| {
            ops += 1;
            r.handle_data(now, PUB_LINK, 0, local_env.clone());
            sent += drain(&mut r) as u64;
        })
    });
    if sent != ops {
        return Err(format!("client data: {sent} transmits for {ops} messages"));
    }
    eprintln!(
        "  data path: transit {:.0} ns/msg, from client {:.0} ns/msg",
        transit.median_ns, from_client.median_ns
    );
    Ok(DataPath {
        payload_bytes: payload.len(),
        transit,
        from_client,
    })
}

pub fn run(plan: Plan, quick: bool) -> Result<RoutingCore, String> {
    let big_runs = if quick { 1 } else { 3 };
    let rib = vec![rib(plan, 10_000, 5)?, rib(plan, 1_000_000, big_runs)?];
    Ok(RoutingCore {
        rib,
        data: data_path(plan)?,
    })
}
