//! E11 (issue 18): sharing a bottleneck. Is BBR safe as roam's default next to Cubic flows?
//!
//! Two independent roam paths, each `roam pub` -> router A_i -> `roam-wan-relay` -> router
//! B_i -> `roam sub`, start together through ONE relay whose shared bottleneck (20 Mbit/s, a
//! drop-tail queue of some bandwidth-delay products, 35 ms one way) both links cross, like two
//! flows on a robot's uplink. Each path runs one congestion controller (`link: {congestion:
//! ...}` in both its routers' files): pairs Cubic + Cubic (the baseline), roam's tolerant
//! Cubic + Cubic, tolerant + tolerant, BBR + Cubic, BBR + BBR, and each controller alone as a
//! reference. Per flow, over a steady window after a
//! warm-up: goodput (64 KiB messages the subscriber printed), its share of the bottleneck, the
//! datagrams the bottleneck dropped, the QUIC link's own figures (RTT, window, losses) from
//! router A_i's metrics file; per run: Jain's fairness index and the bottleneck's queueing
//! delay, from the relay's stats file. The relay and the metrics files are read at the
//! window's edges and subtracted.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use roam_bench::procs::Proc;
use serde::Serialize;
use serde_json::Value;

use super::systems::Lab;

/// Every message: 64 KiB, so a link is always backlogged with whole QUIC packets.
pub const MESSAGE_BYTES: usize = 64 * 1024;
pub const RATE_MBIT: f64 = 20.0;
pub const DELAY_MS: f64 = 35.0;
/// One bandwidth-delay product: 20 Mbit/s x 70 ms = 175,000 bytes.
pub const BDP_BYTES: f64 = RATE_MBIT * 1e6 / 8.0 * 2.0 * DELAY_MS / 1e3;
/// Each publisher offers 1.25 times the whole bottleneck: its link is always backlogged even
/// when it gets all of the bottleneck, and the publishers do not spend the shared cores
/// sealing messages that would only wait in the router's link queue.
const OFFERED: f64 = 1.25;
/// Router ports (A_i listens for the publisher, B_i for its router link and the subscriber)
/// and the relay's listeners: the lab's range, apart from the other systems'.
const ROUTER_PORTS: [(u16, u16); 2] = [(32273, 32274), (32275, 32276)];
const RELAY_PORTS: [u16; 2] = [32281, 32282];
/// How long every flow may take to deliver its first message.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A link's congestion controller, as `link.congestion` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cc {
    /// roam's default: Cubic that tells random loss from congestion.
    Tolerant,
    /// The same without forward error correction (`link.fec: false`): what the repairs of
    /// a lossy link cost its goodput.
    TolerantNoFec,
    Cubic,
    Bbr,
}

impl Cc {
    pub fn name(self) -> &'static str {
        match self {
            Cc::Tolerant => "tolerant",
            Cc::TolerantNoFec => "tolerant-nofec",
            Cc::Cubic => "cubic",
            Cc::Bbr => "bbr",
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            Cc::Tolerant => "tolerant Cubic",
            Cc::TolerantNoFec => "tolerant Cubic without FEC",
            Cc::Cubic => "Cubic",
            Cc::Bbr => "BBR",
        }
    }
    /// The routers' `link:` section. Cubic and BBR flows stand for other QUIC traffic on
    /// the uplink, so they keep QUIC's own acknowledgements and their controller's own
    /// initial window; the tolerant flow runs roam's defaults.
    pub fn link_yaml(self) -> String {
        match self {
            Cc::Tolerant => "{congestion: tolerant}".into(),
            Cc::TolerantNoFec => "{congestion: tolerant, fec: false}".into(),
            Cc::Cubic => {
                "{congestion: cubic, ack_every_packets: 0, initial_window_bytes: 12000}".into()
            }
            Cc::Bbr => {
                "{congestion: bbr, ack_every_packets: 0, initial_window_bytes: 240000}".into()
            }
        }
    }
}

/// The queue of the bottleneck and the path's random loss.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Regime {
    /// Queue size in bandwidth-delay products.
    pub queue_bdp: f64,
    pub loss: f64,
}

const REGIMES: [Regime; 4] = [
    Regime {
        queue_bdp: 1.0,
        loss: 0.0,
    },
    Regime {
        queue_bdp: 0.25,
        loss: 0.0,
    },
    Regime {
        queue_bdp: 4.0,
        loss: 0.0,
    },
    Regime {
        queue_bdp: 1.0,
        loss: 0.01,
    },
];
/// The flows of a run: the pairs, and each controller alone (in the regimes of [`ALONE`]) to
/// tell what a controller does by itself from what it does to the other flow.
const PAIRS: [&[Cc]; 5] = [
    &[Cc::Cubic, Cc::Cubic],
    &[Cc::Tolerant, Cc::Cubic],
    &[Cc::Tolerant, Cc::Tolerant],
    &[Cc::Bbr, Cc::Cubic],
    &[Cc::Bbr, Cc::Bbr],
];
const SINGLES: [&[Cc]; 4] = [
    &[Cc::Cubic],
    &[Cc::Tolerant],
    &[Cc::TolerantNoFec],
    &[Cc::Bbr],
];
/// The regimes (index into [`REGIMES`]) with single-flow reference runs: 1 BDP, with and
/// without random loss.
const ALONE: [usize; 2] = [0, 3];

/// One flow of a run, over the window.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Flow {
    pub congestion: String,
    /// Messages the subscriber printed within the window.
    pub messages: u64,
    pub goodput_mbit: f64,
    /// Goodput over the bottleneck's rate.
    pub share: f64,
    /// Bytes of this flow that crossed the bottleneck (QUIC packets, retransmissions too).
    pub link_mbit: Option<f64>,
    pub bottleneck_drops: Option<u64>,
    pub random_losses: Option<u64>,
    /// From router A_i's metrics file: packets the QUIC link sent and declared lost, and
    /// the times its controller shrank the window, within the window.
    pub quic_sent_packets: Option<u64>,
    pub quic_lost_packets: Option<u64>,
    pub congestion_events: Option<u64>,
    /// The link's smoothed RTT and window, sampled once a second: median.
    pub rtt_ms_p50: Option<f64>,
    pub cwnd_kb_p50: Option<f64>,
    /// Seconds from the start of the run's publishers to this flow's first message.
    pub first_message_s: Option<f64>,
}

/// One run: one or two flows through one bottleneck.
#[derive(Clone, Debug, Serialize)]
pub struct FairnessRun {
    pub regime: Regime,
    pub queue_bytes: usize,
    pub rate_mbit: f64,
    pub delay_ms: f64,
    pub message_bytes: usize,
    pub warmup_s: f64,
    pub window_s: f64,
    pub flows: Vec<Flow>,
    /// Jain's index of the goodputs: 1 is an even split, 0.5 one flow with everything (none
    /// for a flow alone).
    pub jain: Option<f64>,
    /// Both goodputs over the bottleneck's rate.
    pub utilisation: Option<f64>,
    /// The bottleneck in the data direction within the window: datagrams offered and
    /// dropped at its tail, and how long datagrams waited in its queue.
    pub offered_packets: Option<u64>,
    pub dropped_packets: Option<u64>,
    pub queue_delay_ms_mean: Option<f64>,
    pub queue_delay_ms_p50: Option<f64>,
    pub queue_delay_ms_p99: Option<f64>,
    pub error: Option<String>,
}

/// Every regime and pair (and the single flows), each run for `warmup` + `window` seconds
/// after every flow delivered.
pub fn run_all(lab: &Lab, warmup: u64, window: u64) -> Vec<FairnessRun> {
    let dir = lab.dir.join("e11");
    let mut out = Vec::new();
    if let Err(e) = prepare(lab, &dir) {
        eprintln!("  e11 left out: {e}");
        return out;
    }
    for (i, regime) in REGIMES.into_iter().enumerate() {
        let singles = if ALONE.contains(&i) {
            &SINGLES[..]
        } else {
            &[]
        };
        // ROAM_LAB_E11_WITH=NAME[,NAME]: only the runs with one of those controllers (when
        // trying one out).
        let with = std::env::var("ROAM_LAB_E11_WITH").ok();
        let wanted = |flows: &&&[Cc]| {
            with.as_deref().is_none_or(|w| {
                flows
                    .iter()
                    .any(|c| w.split(',').any(|name| c.name() == name))
            })
        };
        for flows in singles.iter().chain(PAIRS.iter()).filter(wanted) {
            let names: Vec<&str> = flows.iter().map(|c| c.label()).collect();
            eprintln!(
                "  e11 {} through {RATE_MBIT} Mbit/s, queue {} BDP, loss {}%",
                names.join(" + "),
                regime.queue_bdp,
                regime.loss * 100.0
            );
            let r = run(lab, &dir, regime, flows, warmup, window);
            if let Some(e) = &r.error {
                eprintln!("    failed: {}", e.lines().next().unwrap_or(""));
            }
            out.push(r);
        }
    }
    out
}

/// A CA, the routers' and clients' identities and a realm, for E11 alone.
fn prepare(lab: &Lab, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let pki = dir.join("pki").to_string_lossy().to_string();
    let roam = |args: &[&str]| roam_bench::procs::roam_ok(&lab.roam, args);
    roam(&["pki", "init", "--dir", &pki])?;
    for id in ["fa0", "fb0", "fa1", "fb1"] {
        roam(&["pki", "issue", id, "--dir", &pki, "--role", "router"])?;
    }
    for id in ["fpub", "fsub"] {
        roam(&["pki", "issue", id, "--dir", &pki, "--role", "client"])?;
    }
    let realm = dir.join("e11.realm").to_string_lossy().to_string();
    roam(&["realm", "new", "e11", "--out", &realm])
}

fn run(lab: &Lab, dir: &Path, regime: Regime, ccs: &[Cc], warmup: u64, window: u64) -> FairnessRun {
    let mut r = FairnessRun {
        regime,
        queue_bytes: (BDP_BYTES * regime.queue_bdp).round() as usize,
        rate_mbit: RATE_MBIT,
        delay_ms: DELAY_MS,
        message_bytes: MESSAGE_BYTES,
        warmup_s: warmup as f64,
        window_s: window as f64,
        flows: ccs
            .iter()
            .map(|cc| Flow {
                congestion: cc.name().into(),
                ..Flow::default()
            })
            .collect(),
        jain: None,
        utilisation: None,
        offered_packets: None,
        dropped_packets: None,
        queue_delay_ms_mean: None,
        queue_delay_ms_p50: None,
        queue_delay_ms_p99: None,
        error: None,
    };
    let mut procs = Vec::new();
    if let Err(e) = measure(lab, dir, ccs, &mut r, &mut procs) {
        r.error = Some(e);
    }
    // In reverse order of start: clients, then routers, then the relay.
    for mut p in procs.into_iter().rev() {
        p.stop(Duration::from_secs(3));
    }
    r
}

/// What was read at one edge of the window.
struct Edge {
    at: Instant,
    received: Vec<u64>,
    relay: Option<Value>,
    links: Vec<Option<roam_edge::metrics::QuicPath>>,
}

fn measure(
    lab: &Lab,
    dir: &Path,
    ccs: &[Cc],
    r: &mut FairnessRun,
    procs: &mut Vec<Proc>,
) -> Result<(), String> {
    let pki = dir.join("pki");
    let realm = dir.join("e11.realm");
    let relay_stats = fresh(dir.join("relay.json"))?;
    let mut relay_args = Vec::new();
    for (i, port) in RELAY_PORTS.iter().enumerate() {
        relay_args.push("--udp".to_string());
        relay_args.push(format!("127.0.0.1:{port}=127.0.0.1:{}", ROUTER_PORTS[i].1));
    }
    relay_args.extend(
        [
            "--delay-ms",
            &DELAY_MS.to_string(),
            "--loss",
            &r.regime.loss.to_string(),
            "--seed",
            "7",
            "--rate-mbit",
            &RATE_MBIT.to_string(),
            "--bottleneck-bytes",
            &r.queue_bytes.to_string(),
            "--stats-json",
            &relay_stats.to_string_lossy(),
            "--stats-interval-s",
            "1",
        ]
        .map(String::from),
    );
    let relay = Proc::start("wan-relay", &lab.relay, &relay_args)?;
    relay.wait_line(Duration::from_secs(10), |l| l == "ready")?;
    procs.push(relay);

    // Routers: B_i listens (for A_i's link through the relay, and for the subscriber), A_i
    // listens for the publisher and dials B_i through the relay. Both ends of a path run the
    // path's controller; A_i's is the one that sends the data.
    let paths = ROUTER_PORTS
        .get(..ccs.len())
        .ok_or("more flows than paths through the relay")?;
    let mut metrics = Vec::new();
    for (i, ((cc, (a_port, b_port)), relay_port)) in
        ccs.iter().zip(paths).zip(RELAY_PORTS).enumerate()
    {
        let b = router(lab, dir, &format!("fb{i}"), *b_port, None, *cc)?;
        procs.push(b.0);
        let a = router(lab, dir, &format!("fa{i}"), *a_port, Some(relay_port), *cc)?;
        procs.push(a.0);
        metrics.push((a.1, format!("fb{i}")));
    }
    let client = |cmd: &str, i: usize, id: &str, port: u16, extra: &[String]| {
        let mut args: Vec<String> = [
            cmd,
            &format!("/e11/flow{i}"),
            "--type",
            "test_msgs/msg/Blob",
            "--realm",
            &realm.to_string_lossy(),
            "--pki",
            &pki.to_string_lossy(),
            "--id",
            id,
            "--connect",
            &format!("127.0.0.1:{port}"),
        ]
        .map(String::from)
        .to_vec();
        args.extend_from_slice(extra);
        Proc::start(&format!("{cmd}{i}"), &lab.roam, &args)
    };
    let mut subs = Vec::new();
    for (i, ports) in paths.iter().enumerate() {
        subs.push(client("sub", i, "fsub", ports.1, &[])?);
    }
    // Messages per second that offer 1.25x the bottleneck: each publisher waits for its
    // subscriber, then sends at that rate.
    let rate = OFFERED * RATE_MBIT * 1e6 / (MESSAGE_BYTES as f64 * 8.0);
    let pub_args = [
        "--size".to_string(),
        MESSAGE_BYTES.to_string(),
        "--rate".to_string(),
        format!("{rate:.2}"),
    ];
    let started = Instant::now();
    for (i, ports) in paths.iter().enumerate() {
        procs.push(client("pub", i, "fpub", ports.0, &pub_args)?);
    }

    // Count the subscribers' lines until every flow delivers, then through warm-up and window.
    let mut received = vec![0u64; ccs.len()];
    let mut first: Vec<Option<Instant>> = vec![None; ccs.len()];
    let drain = |subs: &[Proc], received: &mut [u64], first: &mut [Option<Instant>]| {
        for (i, s) in subs.iter().enumerate() {
            let (lines, _) = s.lines_for(Duration::from_millis(5));
            let n = lines.iter().filter(|l| l.starts_with("seq=")).count() as u64;
            if n > 0 {
                first[i].get_or_insert_with(Instant::now);
                received[i] += n;
            }
        }
    };
    while first.iter().any(Option::is_none) {
        if started.elapsed() > START_TIMEOUT {
            let (i, s) = subs
                .iter()
                .enumerate()
                .find(|(i, _)| first[*i].is_none())
                .ok_or("no flow")?;
            return Err(format!(
                "flow {i} delivered nothing within {START_TIMEOUT:?}\n{}",
                s.log_tail()
            ));
        }
        drain(&subs, &mut received, &mut first);
        std::thread::sleep(Duration::from_millis(20));
    }
    for (f, t) in r.flows.iter_mut().zip(&first) {
        f.first_message_s = t.map(|t| (t - started).as_secs_f64());
    }
    let both = first.iter().flatten().max().copied().ok_or("no flow")?;
    let begin = both + Duration::from_secs_f64(r.warmup_s);
    let end = begin + Duration::from_secs_f64(r.window_s);
    let mut start_edge = None;
    let mut samples: Vec<Vec<(f64, f64)>> = vec![Vec::new(); ccs.len()];
    let mut next_sample = begin;
    while Instant::now() < end {
        drain(&subs, &mut received, &mut first);
        let now = Instant::now();
        if start_edge.is_none() && now >= begin {
            start_edge = Some(edge(now, &received, &relay_stats, &metrics));
        }
        if start_edge.is_some() && now >= next_sample {
            next_sample += Duration::from_secs(1);
            for (i, (path, peer)) in metrics.iter().enumerate() {
                if let Some(p) = quic_path(path, peer) {
                    samples[i].push((p.rtt_us as f64 / 1e3, p.cwnd as f64 / 1e3));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drain(&subs, &mut received, &mut first);
    let start_edge = start_edge.ok_or("the window never began")?;
    let end_edge = edge(Instant::now(), &received, &relay_stats, &metrics);
    procs.extend(subs);
    figures(r, &start_edge, &end_edge, &samples);
    Ok(())
}

/// Starts `roam router -c FILE` with the path's controller; returns it and its metrics file.
fn router(
    lab: &Lab,
    dir: &Path,
    id: &str,
    port: u16,
    connect: Option<u16>,
    cc: Cc,
) -> Result<(Proc, PathBuf), String> {
    let metrics = fresh(dir.join(format!("{id}.metrics.json")))?;
    let mut yaml = format!(
        "id: {id}\npki: {}\nlisten: 127.0.0.1:{port}\nstatus_interval_s: 1\n\
         metrics_file: {}\nlink: {}\n",
        dir.join("pki").display(),
        metrics.display(),
        cc.link_yaml()
    );
    if let Some(c) = connect {
        yaml.push_str(&format!("connect: [quic://127.0.0.1:{c}]\n"));
    }
    let file = dir.join(format!("{id}.yaml"));
    std::fs::write(&file, yaml).map_err(|e| format!("{}: {e}", file.display()))?;
    let args = ["router", "-c", &file.to_string_lossy()].map(String::from);
    let p = Proc::start(id, &lab.roam, &args)?;
    p.wait_line(Duration::from_secs(10), |l| l.starts_with("listening"))?;
    Ok((p, metrics))
}

/// `path` with no file left from an earlier run.
fn fresh(path: PathBuf) -> Result<PathBuf, String> {
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("{}: {e}", path.display()))
        }
        _ => Ok(path),
    }
}

fn edge(at: Instant, received: &[u64], relay: &Path, metrics: &[(PathBuf, String)]) -> Edge {
    let relay = std::fs::read_to_string(relay)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    Edge {
        at,
        received: received.to_vec(),
        relay,
        links: metrics.iter().map(|(p, peer)| quic_path(p, peer)).collect(),
    }
}

/// The QUIC figures of the link to `peer` in the metrics file at `path`.
fn quic_path(path: &Path, peer: &str) -> Option<roam_edge::metrics::QuicPath> {
    let s = roam_edge::metrics::MetricsFile::read(path).ok()?;
    s.links
        .iter()
        .find(|l| l.peer == peer && !l.closed)
        .and_then(|l| l.path.clone())
}

/// Fills `r` from the two edges of the window and the samples taken within it.
fn figures(r: &mut FairnessRun, a: &Edge, b: &Edge, samples: &[Vec<(f64, f64)>]) {
    let secs = (b.at - a.at).as_secs_f64().max(1e-3);
    let goodputs: Vec<f64> = (0..r.flows.len())
        .map(|i| (b.received[i] - a.received[i]) as f64 * MESSAGE_BYTES as f64 * 8.0 / secs / 1e6)
        .collect();
    let relay = a.relay.as_ref().zip(b.relay.as_ref());
    let relay_secs = relay.and_then(|(x, y)| Some(num(y, &["uptime_s"])? - num(x, &["uptime_s"])?));
    for (i, f) in r.flows.iter_mut().enumerate() {
        f.messages = b.received[i] - a.received[i];
        f.goodput_mbit = goodputs[i];
        f.share = goodputs[i] / RATE_MBIT;
        let listener = |v: &Value, key: &str| -> Option<f64> {
            num(v, &["listeners", &i.to_string(), "client_to_target", key])
        };
        let delta =
            |key: &str| relay.and_then(|(x, y)| Some(listener(y, key)? - listener(x, key)?));
        f.link_mbit = delta("forwarded_bytes")
            .zip(relay_secs)
            .map(|(bytes, s)| bytes * 8.0 / s.max(1e-3) / 1e6);
        f.bottleneck_drops = delta("bottleneck_dropped_packets").map(|v| v as u64);
        f.random_losses = delta("lost_packets").map(|v| v as u64);
        if let (Some(Some(x)), Some(Some(y))) = (a.links.get(i), b.links.get(i)) {
            f.quic_sent_packets = Some(y.sent_packets.saturating_sub(x.sent_packets));
            f.quic_lost_packets = Some(y.lost_packets.saturating_sub(x.lost_packets));
            f.congestion_events = Some(y.congestion_events.saturating_sub(x.congestion_events));
        }
        let own = samples.get(i).map(Vec::as_slice).unwrap_or_default();
        f.rtt_ms_p50 = median(own.iter().map(|s| s.0).collect());
        f.cwnd_kb_p50 = median(own.iter().map(|s| s.1).collect());
    }
    r.jain = (goodputs.len() > 1).then(|| jain(&goodputs)).flatten();
    r.utilisation = Some(goodputs.iter().sum::<f64>() / RATE_MBIT);
    let bn = |v: &Value, key: &str| num(v, &["bottleneck", "client_to_target", key]);
    let delta = |key: &str| relay.and_then(|(x, y)| Some(bn(y, key)? - bn(x, key)?));
    r.offered_packets = delta("offered_packets").map(|v| v as u64);
    r.dropped_packets = delta("dropped_packets").map(|v| v as u64);
    if let (Some(sum), Some(n)) = (delta("wait_sum_us"), delta("sent_packets")) {
        r.queue_delay_ms_mean = (n > 0.0).then(|| sum / n / 1e3);
    }
    if let Some((x, y)) = relay {
        let waits = buckets(y).minus(&buckets(x));
        r.queue_delay_ms_p50 = waits.quantile(0.5).map(|us| us / 1e3);
        r.queue_delay_ms_p99 = waits.quantile(0.99).map(|us| us / 1e3);
    }
}

/// A number at `path` in a JSON value (array elements by their index).
fn num(v: &Value, path: &[&str]) -> Option<f64> {
    let mut v = v;
    for p in path {
        v = match p.parse::<usize>() {
            Ok(i) => v.get(i)?,
            Err(_) => v.get(*p)?,
        };
    }
    v.as_f64()
}

/// The relay's histogram of queueing delays: `(upper bound µs, datagrams)`, ascending.
#[derive(Debug, PartialEq)]
struct Waits(Vec<(u64, u64)>);

fn buckets(v: &Value) -> Waits {
    let list = v
        .pointer("/bottleneck/client_to_target/wait_buckets")
        .and_then(Value::as_array);
    Waits(
        list.into_iter()
            .flatten()
            .filter_map(|b| Some((b.get(0)?.as_u64()?, b.get(1)?.as_u64()?)))
            .collect(),
    )
}

impl Waits {
    /// The buckets of `self` minus those of an earlier snapshot.
    fn minus(&self, earlier: &Waits) -> Waits {
        Waits(
            self.0
                .iter()
                .map(|(le, n)| {
                    let before = earlier.0.iter().find(|(l, _)| l == le).map_or(0, |b| b.1);
                    (*le, n.saturating_sub(before))
                })
                .filter(|(_, n)| *n > 0)
                .collect(),
        )
    }

    /// The bucket bound under which at least `q` of the datagrams waited.
    fn quantile(&self, q: f64) -> Option<f64> {
        let total: u64 = self.0.iter().map(|b| b.1).sum();
        let want = ((q * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (le, n) in &self.0 {
            seen += n;
            if seen >= want {
                return Some(*le as f64);
            }
        }
        None
    }
}

/// Jain's fairness index: `(sum x)^2 / (n * sum x^2)`; 1 for equal shares, `1/n` when one
/// flow has everything. `None` when nothing was delivered.
pub fn jain(x: &[f64]) -> Option<f64> {
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    (squares > 0.0).then(|| sum * sum / (x.len() as f64 * squares))
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_of_even_and_uneven_shares() {
        assert_eq!(jain(&[10.0, 10.0]), Some(1.0));
        assert_eq!(jain(&[20.0, 0.0]), Some(0.5));
        let j = jain(&[15.0, 5.0]).unwrap();
        assert!((j - 0.8).abs() < 1e-9, "{j}");
        assert_eq!(jain(&[0.0, 0.0]), None);
    }

    #[test]
    fn the_window_is_the_difference_of_two_relay_snapshots() {
        let snap = |buckets: &str, sent: u64| -> Value {
            serde_json::from_str(&format!(
                r#"{{"uptime_s": 1.0, "bottleneck": {{"client_to_target": {{
                    "sent_packets": {sent}, "wait_buckets": {buckets}}}}}}}"#
            ))
            .unwrap()
        };
        let a = snap("[[500, 10], [1000, 5]]", 15);
        let b = snap("[[500, 12], [1000, 5], [20000, 4], [40000, 4]]", 25);
        let w = buckets(&b).minus(&buckets(&a));
        assert_eq!(w, Waits(vec![(500, 2), (20000, 4), (40000, 4)]));
        assert_eq!(w.quantile(0.5), Some(20000.0));
        assert_eq!(w.quantile(0.99), Some(40000.0));
        assert_eq!(w.quantile(0.1), Some(500.0));
        assert_eq!(Waits(vec![]).quantile(0.5), None);
        assert_eq!(
            num(&b, &["bottleneck", "client_to_target", "sent_packets"]),
            Some(25.0)
        );
        let l: Value = serde_json::from_str(r#"{"listeners": [{"x": 1}, {"x": 2}]}"#).unwrap();
        assert_eq!(num(&l, &["listeners", "1", "x"]), Some(2.0));
    }

    #[test]
    fn one_bdp_is_175_kb() {
        assert_eq!(BDP_BYTES.round() as usize, 175_000);
    }
}
