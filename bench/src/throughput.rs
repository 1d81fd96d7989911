//! Messages per second through one or two in-process routers on loopback: a publisher and a
//! subscriber `Client` over QUIC with mutual TLS, sealed and opened at the edges.

use roam_net::latency::now_us;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use roam_net::client::{Client, ClientConfig};
use roam_net::link::LinkConfig;
use roam_net::runtime::{self, PeerAddr, RouterConfig, RouterHandle, RoutingTimers};
use roam_proto::frame::Role;
use roam_proto::{Opener, OpenerConfig, RealmSecret, Sealer, TopicDescriptor};
use serde::Serialize;
use tokio::task::JoinHandle;

use crate::pki::TempPki;
use crate::timer::quantile;

#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub routers: usize,
    pub messages: u64,
    pub payload: usize,
    pub best_effort: bool,
    /// Paced at this many messages per second; `None`: as fast as the client accepts.
    pub rate: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub routers: usize,
    pub payload_bytes: usize,
    pub best_effort: bool,
    /// `null`: unpaced (as fast as the client accepts).
    pub paced_msgs_per_s: Option<u64>,
    pub sent: u64,
    pub delivered: u64,
    pub lost: u64,
    /// Envelopes the subscriber refused to open (forged, replayed, ...): must be 0.
    pub refused: u64,
    /// From the first send to the last delivery.
    pub elapsed_s: f64,
    pub msgs_per_s: f64,
    /// Payload megabytes (10^6 bytes) per second delivered.
    pub mb_per_s: f64,
    /// One-way, from the envelope's send time to its opening at the subscriber.
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    pub latency_max_us: f64,
    /// Frames the routers' links dropped (full or stale queues), summed over routers.
    pub router_link_drops: u64,
    /// Data messages the first router took in (`Stats::data_in`): `sent` minus this were lost
    /// before reaching a router (in the publisher's own link queue).
    pub first_router_data_in: u64,
    /// Data messages the last router forwarded (to the subscriber's link).
    pub last_router_forwarded: u64,
    /// Delivered msg/s of every repetition of this scenario; the row shows the median one.
    pub runs_msgs_per_s: Vec<f64>,
    /// Messages lost in every repetition, in the same order as `runs_msgs_per_s`.
    pub runs_lost: Vec<u64>,
}

/// Routers in a chain, a publisher client on the first and a subscriber client on the last.
pub(crate) struct Net {
    pub routers: Vec<(RouterHandle, JoinHandle<()>)>,
    pub publisher: Client,
    pub subscriber: Client,
}

async fn start_router(
    pki: &TempPki,
    name: &str,
    connect: Option<SocketAddr>,
) -> Result<(RouterHandle, JoinHandle<()>), String> {
    let identity = pki.identity(name, Role::Router)?;
    let config = RouterConfig {
        listen_mqtt: Vec::new(),
        identity,
        listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        listen_tcp: None,
        connect: connect.map(PeerAddr::Quic).into_iter().collect(),
        // What the routing plane carries, not what a router lets one client bring in: the
        // unpaced clients here pass the default client quota many times over.
        link: LinkConfig {
            client_quota: roam_net::quota::QuotaLimits::NONE,
            ..LinkConfig::default()
        },
        timers: RoutingTimers::default(),
        max_backoff: Duration::from_millis(500),
        stall_timeout: Duration::from_secs(5),
    };
    runtime::start(config)
        .await
        .map_err(|e| format!("starting router {name}: {e}"))
}

fn client(pki: &TempPki, name: &str, router: SocketAddr) -> Result<Client, String> {
    let cfg = ClientConfig {
        identity: pki.identity(name, Role::Client)?,
        router: PeerAddr::Quic(router),
        link: LinkConfig::default(),
        max_backoff: Duration::from_millis(500),
    };
    Client::start(cfg).map_err(|e| format!("starting client {name}: {e}"))
}

pub(crate) async fn build(pki: &TempPki, routers: usize) -> Result<Net, String> {
    let mut rs: Vec<(RouterHandle, JoinHandle<()>)> = Vec::new();
    for i in 0..routers.max(1) {
        let prev = rs.last().and_then(|(h, _)| h.quic_addr);
        rs.push(start_router(pki, &format!("r{i}"), prev).await?);
    }
    let first = rs
        .first()
        .and_then(|(h, _)| h.quic_addr)
        .ok_or("first router has no QUIC address")?;
    let last = rs
        .last()
        .and_then(|(h, _)| h.quic_addr)
        .ok_or("last router has no QUIC address")?;
    Ok(Net {
        publisher: client(pki, "pub", first)?,
        subscriber: client(pki, "sub", last)?,
        routers: rs,
    })
}

/// What the subscriber saw.
struct Received {
    latencies_us: Vec<f64>,
    refused: u64,
    last: Option<Instant>,
}

async fn receive(
    mut events: roam_net::envelope_queue::QueueReceiver,
    realm: RealmSecret,
    expect: u64,
    mut done_rx: tokio::sync::watch::Receiver<bool>,
) -> Received {
    let mut opener = Opener::new(&realm, OpenerConfig::default());
    let mut plain = Vec::new();
    let mut r = Received {
        latencies_us: Vec::with_capacity(expect as usize),
        refused: 0,
        last: None,
    };
    let idle = Duration::from_secs(2);
    loop {
        if r.latencies_us.len() as u64 >= expect {
            break;
        }
        let publisher_done = *done_rx.borrow();
        let ev = if publisher_done {
            match tokio::time::timeout(idle, events.recv()).await {
                Ok(ev) => ev,
                Err(_) => break,
            }
        } else {
            tokio::select! {
                ev = events.recv() => ev,
                _ = done_rx.changed() => continue,
            }
        };
        let Some(envelope) = ev else { break };
        match opener.open(&envelope, now_us(), &mut plain) {
            Ok(o) => {
                r.latencies_us
                    .push(now_us().saturating_sub(o.header.send_time_us) as f64);
                r.last = Some(Instant::now());
            }
            Err(_) => r.refused += 1,
        }
    }
    r
}

/// Runs one scenario in a fresh network (new PKI, routers and clients), then stops it.
pub async fn run(s: Scenario) -> Result<Outcome, String> {
    let pki = TempPki::new("tp")?;
    let net = build(&pki, s.routers).await?;
    let realm = RealmSecret::from_bytes([42; 32]);
    let name = TopicDescriptor::topic("/bench/throughput", "std_msgs/msg/String").name(&realm);

    let sub_events = net.subscriber.subscribe(name, 4096).await.rx;
    let mut publication = net.publisher.publish(name).await;
    // The subscription has crossed every router once the publisher is told it is wanted.
    let wanted = tokio::time::timeout(Duration::from_secs(20), publication.demand.wait_for(|w| *w))
        .await
        .map(|r| r.is_ok());
    if wanted != Ok(true) {
        shutdown(net).await;
        return Err(format!(
            "no demand reached the publisher through {} router(s) within 20 s",
            s.routers
        ));
    }

    let (done_tx, done_rx) = tokio::sync::watch::channel(false);
    let receiver = tokio::spawn(receive(sub_events, realm.clone(), s.messages, done_rx));

    let mut sealer = Sealer::new(&realm, name, s.best_effort, None).map_err(|e| e.to_string())?;
    let payload = vec![0x5au8; s.payload];
    let start = Instant::now();
    let mut failure = None;
    for i in 0..s.messages {
        if let Some(rate) = s.rate {
            tokio::time::sleep_until(
                (start + Duration::from_secs_f64(i as f64 / rate as f64)).into(),
            )
            .await;
        }
        let mut buf = Vec::with_capacity(sealer.sealed_len(payload.len()));
        if let Err(e) = sealer.seal(&payload, now_us(), &mut buf) {
            failure = Some(format!("seal: {e}"));
            break;
        }
        if let Err(e) = net.publisher.send(Bytes::from(buf)).await {
            failure = Some(format!("send: {e}"));
            break;
        }
    }
    let _ = done_tx.send(true);
    let got = receiver.await.map_err(|e| format!("subscriber task: {e}"));
    let sent = net.publisher.stats().sent;
    let mut drops = 0;
    let mut data_in = Vec::new();
    let mut forwarded = Vec::new();
    for (h, _) in &net.routers {
        if let Some(rep) = h.report().await {
            data_in.push(rep.routing.data_in);
            forwarded.push(rep.routing.data_forwarded);
            drops += rep.local_dropped
                + rep
                    .links
                    .iter()
                    .map(|l| l.dropped_full + l.dropped_stale)
                    .sum::<u64>();
        }
    }
    shutdown(net).await;
    if let Some(f) = failure {
        return Err(f);
    }
    let mut got = got?;
    let delivered = got.latencies_us.len() as u64;
    let elapsed = got
        .last
        .map(|l| l.duration_since(start))
        .unwrap_or_default()
        .as_secs_f64();
    let rate = |x: f64| if elapsed > 0.0 { x / elapsed } else { 0.0 };
    let lat = &mut got.latencies_us;
    Ok(Outcome {
        routers: s.routers,
        payload_bytes: s.payload,
        best_effort: s.best_effort,
        paced_msgs_per_s: s.rate,
        sent,
        delivered,
        lost: s.messages.saturating_sub(delivered),
        refused: got.refused,
        elapsed_s: elapsed,
        msgs_per_s: rate(delivered as f64),
        mb_per_s: rate(delivered as f64 * s.payload as f64) / 1e6,
        latency_p50_us: quantile(lat, 0.5),
        latency_p99_us: quantile(lat, 0.99),
        latency_max_us: quantile(lat, 1.0),
        router_link_drops: drops,
        first_router_data_in: data_in.first().copied().unwrap_or(0),
        last_router_forwarded: forwarded.last().copied().unwrap_or(0),
        runs_msgs_per_s: Vec::new(),
        runs_lost: Vec::new(),
    })
}

pub(crate) async fn shutdown(net: Net) {
    let Net {
        routers,
        publisher,
        subscriber,
    } = net;
    drop(publisher);
    drop(subscriber);
    for (h, task) in routers {
        h.shutdown().await;
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    }
}

/// Runs a scenario `repeat` times, each in a fresh network, and keeps the run with the median
/// delivered rate (all rates kept in `runs_msgs_per_s`).
pub async fn run_repeated(s: Scenario, repeat: usize) -> Result<Outcome, String> {
    let mut runs = Vec::new();
    for _ in 0..repeat.max(1) {
        runs.push(run(s).await?);
    }
    runs.sort_by(|a, b| a.msgs_per_s.total_cmp(&b.msgs_per_s));
    let rates = runs.iter().map(|o| o.msgs_per_s).collect();
    let lost = runs.iter().map(|o| o.lost).collect();
    let mut mid = runs.swap_remove(runs.len() / 2);
    mid.runs_msgs_per_s = rates;
    mid.runs_lost = lost;
    Ok(mid)
}

pub fn describe(o: &Outcome) -> String {
    format!(
        "{} router(s) {} {}: {}/{} delivered, {:.0} msg/s, {:.1} MB/s, latency p50 {:.0} us p99 {:.0} us",
        o.routers,
        if o.best_effort { "best-effort" } else { "reliable" },
        o.paced_msgs_per_s.map_or("unpaced".to_string(), |r| format!("paced {r}/s")),
        o.delivered,
        o.sent,
        o.msgs_per_s,
        o.mb_per_s,
        o.latency_p50_us,
        o.latency_p99_us
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_message_crosses_one_router() {
        let o = run(Scenario {
            routers: 1,
            messages: 200,
            payload: 1024,
            best_effort: false,
            rate: None,
        })
        .await
        .expect("harness runs");
        eprintln!("{}", describe(&o));
        assert_eq!(o.delivered, 200, "{o:?}");
        assert_eq!(o.refused, 0, "{o:?}");
        assert_eq!(o.lost, 0, "{o:?}");
    }
}
