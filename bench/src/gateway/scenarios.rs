//! The scenarios: a topic streamed to a set of clients (images at a frame rate, 1 KB texts at
//! a high rate), and a client that stops reading beside one that keeps up. Each runs against a
//! fresh gateway; the measured window starts once every client has its first message (the
//! warm-up, left out) and ends after the given time; messages still on their way get a few
//! seconds to arrive before the clients stop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use roam_bench::procs::{cpu_ticks, rss_kb, thread_ticks, Proc, Usage};
use serde::Serialize;

use super::clients::{self, Progress, Published, Receipts};
use super::door::Door;
use super::messages::Kind;
use super::setup::Setup;
use super::stats::{figures, ClientFigures};

const TOPIC: &str = "/bench";
const WARM_UP: Duration = Duration::from_secs(20);
const DRAIN: Duration = Duration::from_secs(3);
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// One client's row.
#[derive(Clone, Debug, Serialize)]
pub struct ClientRow {
    pub door: Door,
    #[serde(flatten)]
    pub figures: ClientFigures,
    /// `status` ops the gateway sent it (drop warnings, errors), and the first one.
    pub statuses: u64,
    pub first_status: Option<String>,
    /// Frames it could not decode, and the first reason.
    pub errors: u64,
    pub first_error: Option<String>,
}

/// One thread of the gateway over a window.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadUse {
    pub thread: String,
    /// Percent of one core.
    pub cpu_percent: f64,
}

/// The gateway's busiest threads (at most three) between two `thread_ticks` readings.
fn busiest(pid: u32, before: &[(u32, String, u64)], over: Duration) -> Vec<ThreadUse> {
    let mut used: Vec<ThreadUse> = thread_ticks(pid)
        .into_iter()
        .map(|(tid, name, ticks)| {
            let t0 = before
                .iter()
                .find(|(t, _, _)| *t == tid)
                .map_or(0, |(_, _, t)| *t);
            ThreadUse {
                thread: if tid == pid {
                    format!("{name} (main thread)")
                } else {
                    name
                },
                cpu_percent: percent(ticks.saturating_sub(t0), over),
            }
        })
        .collect();
    used.sort_by(|a, b| b.cpu_percent.total_cmp(&a.cpu_percent));
    used.truncate(3);
    used
}

/// A topic streamed to clients.
#[derive(Clone, Debug, Serialize)]
pub struct StreamRun {
    pub name: String,
    pub message: &'static str,
    /// The publisher's schedule; 0: unpaced (as fast as the gateway takes them).
    pub rate_hz: f64,
    /// Messages the publisher got onto its socket per second of the window.
    pub published_rate_hz: f64,
    pub seconds: f64,
    pub clients: Vec<ClientRow>,
    /// Messages delivered per second, all clients together.
    pub delivered_per_s: f64,
    pub gateway: Usage,
    pub gateway_threads: Vec<ThreadUse>,
    /// CPU of this program (the publisher and every client), percent of one core: the
    /// machine's other share.
    pub clients_cpu_percent: f64,
    /// The gateway's own count of messages dropped for slow clients (its exit summary).
    pub gateway_dropped: Option<u64>,
    /// `status` ops the gateway sent the publisher, and the first one.
    pub publisher_statuses: u64,
    pub publisher_first_status: Option<String>,
}

pub struct Stream {
    pub name: String,
    pub kind: Kind,
    pub rate_hz: f64,
    pub window: Duration,
    pub doors: Vec<Door>,
}

type Sub = (Arc<Progress>, JoinHandle<Result<Receipts, String>>);

/// Waits for `ok` until `timeout`; an error when a client thread ended (with its reason).
fn wait_for(
    what: &str,
    timeout: Duration,
    subs: &mut Vec<Sub>,
    ok: impl Fn(&[Sub]) -> bool,
) -> Result<(), String> {
    let end = Instant::now() + timeout;
    while !ok(subs) {
        if let Some(i) = subs.iter().position(|(_, h)| h.is_finished()) {
            let (_, h) = subs.swap_remove(i);
            let why = match h.join() {
                Ok(Err(e)) => e,
                _ => "ended".into(),
            };
            return Err(format!("{what}: client {i}: {why}"));
        }
        if Instant::now() > end {
            return Err(format!("{what}: not within {timeout:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// CPU ticks of this program.
fn own_ticks() -> u64 {
    cpu_ticks(std::process::id()).unwrap_or(0)
}

fn percent(ticks: u64, over: Duration) -> f64 {
    ticks as f64 / 100.0 / over.as_secs_f64().max(1e-3) * 100.0
}

/// Stops the gateway and reads its exit summary's drop count.
fn stop_gateway(mut gw: Proc) -> Option<u64> {
    gw.stop(Duration::from_secs(5));
    let end = Instant::now() + Duration::from_secs(2);
    loop {
        let tail = gw.log_tail();
        if let Some(n) = tail
            .split("dropped ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
        {
            return Some(n);
        }
        if Instant::now() > end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn join_subs(subs: Vec<Sub>) -> Result<Vec<Receipts>, String> {
    subs.into_iter()
        .map(|(_, h)| h.join().map_err(|_| "a client panicked".to_string())?)
        .collect()
}

fn row(door: Door, r: &Receipts, range: (u64, u64), period_ms: Option<f64>) -> ClientRow {
    ClientRow {
        door,
        figures: figures(&r.samples, range.0, range.1, period_ms),
        statuses: r.statuses,
        first_status: r.first_status.clone(),
        errors: r.errors,
        first_error: r.first_error.clone(),
    }
}

fn join_publisher(h: JoinHandle<Result<Published, String>>) -> Result<Published, String> {
    h.join().map_err(|_| "the publisher panicked".to_string())?
}

pub fn stream(setup: &mut Setup, s: &Stream) -> Result<StreamRun, String> {
    eprintln!("{}: {}, {:?}", s.name, s.kind.type_name(), s.window);
    let (mut gw, ports) = setup.gateway()?;
    let port = ports.rosbridge;
    let stop_subs = Arc::new(AtomicBool::new(false));
    let mut subs: Vec<Sub> = s
        .doors
        .iter()
        .map(|d| clients::subscriber(*d, s.kind, ports.of(*d), TOPIC, stop_subs.clone()))
        .collect();
    let all = |f: fn(&Progress) -> bool| move |subs: &[Sub]| subs.iter().all(|(p, _)| f(p));
    wait_for(
        "subscribing",
        WARM_UP,
        &mut subs,
        all(|p| p.subscribed.load(Ordering::Acquire)),
    )?;
    let stop_pub = Arc::new(AtomicBool::new(false));
    let (next, publisher) = clients::publisher(s.kind, port, TOPIC, s.rate_hz, stop_pub.clone());
    let warm = wait_for(
        "first messages",
        WARM_UP,
        &mut subs,
        all(|p| p.received.load(Ordering::Acquire) > 0),
    );
    if let Err(e) = warm {
        stop_pub.store(true, Ordering::Release);
        let p = join_publisher(publisher);
        return Err(format!(
            "{e} (publisher: {p:?}; gateway: {})",
            gw.log_tail()
        ));
    }

    let from = next.load(Ordering::Acquire);
    gw.begin_window();
    let threads0 = thread_ticks(gw.pid());
    let (t0, cpu0) = (Instant::now(), own_ticks());
    while t0.elapsed() < s.window {
        std::thread::sleep(SAMPLE_EVERY);
        gw.sample();
    }
    let sent_to = next.load(Ordering::Acquire);
    let elapsed = t0.elapsed();
    let clients_cpu = percent(own_ticks().saturating_sub(cpu0), elapsed);
    let gateway_threads = busiest(gw.pid(), &threads0, elapsed);
    let usage = gw.end_window().ok_or("the gateway's /proc entry is gone")?;
    stop_pub.store(true, Ordering::Release);
    let published = join_publisher(publisher)?;
    let to = sent_to.saturating_sub(1);
    // Drained when every client has seen the last message (or gave up on it).
    let _ = wait_for("draining", DRAIN, &mut subs, move |subs| {
        subs.iter()
            .all(|(p, _)| p.next_seq.load(Ordering::Acquire) > to)
    });
    stop_subs.store(true, Ordering::Release);
    let receipts = join_subs(subs)?;
    let dropped = stop_gateway(gw);

    let period_ms = (s.kind == Kind::Image && s.rate_hz > 0.0).then(|| 1000.0 / s.rate_hz);
    let clients: Vec<ClientRow> = s
        .doors
        .iter()
        .zip(&receipts)
        .map(|(d, r)| row(*d, r, (from, to), period_ms))
        .collect();
    let delivered: u64 = clients.iter().map(|c| c.figures.received).sum();
    Ok(StreamRun {
        name: s.name.clone(),
        message: s.kind.type_name(),
        rate_hz: s.rate_hz,
        published_rate_hz: sent_to.saturating_sub(from) as f64 / elapsed.as_secs_f64(),
        seconds: elapsed.as_secs_f64(),
        clients,
        delivered_per_s: delivered as f64 / elapsed.as_secs_f64(),
        gateway: usage,
        gateway_threads,
        clients_cpu_percent: clients_cpu,
        gateway_dropped: dropped,
        publisher_statuses: published.statuses,
        publisher_first_status: published.first_status,
    })
}

/// A client that stops reading, beside one that keeps up.
#[derive(Clone, Debug, Serialize)]
pub struct StalledRun {
    pub rate_hz: f64,
    pub seconds: f64,
    /// The gateway's resident memory before the stalled client came, MiB.
    pub rss_start_mib: f64,
    /// Once a second while it is connected, MiB.
    pub rss_mib: Vec<f64>,
    pub rss_peak_mib: f64,
    pub rss_end_mib: f64,
    /// Growth over the second half of the window, MiB.
    pub rss_second_half_growth_mib: f64,
    /// Two seconds after the stalled client disconnected, MiB.
    pub rss_after_close_mib: f64,
    /// The rule in GATEWAY.md: it stopped growing (under 5 MiB over the second half).
    pub bounded: bool,
    /// Peak minus the RSS before, less the per-client queue limit: what the gateway holds for
    /// the stalled client beyond the queued messages (the frame being written, allocator
    /// slack), MiB.
    pub beyond_queue_limit_mib: f64,
    pub other: ClientRow,
    pub gateway: Usage,
    pub gateway_dropped: Option<u64>,
}

/// `client_queue_bytes`, the gateway's default per-client bound, in MiB.
pub const CLIENT_QUEUE_MIB: f64 = 64.0;

fn rss_mib(pid: u32) -> f64 {
    rss_kb(pid).unwrap_or(0) as f64 / 1024.0
}

pub fn stalled(setup: &mut Setup, rate_hz: f64, window: Duration) -> Result<StalledRun, String> {
    eprintln!("stalled client: images at {rate_hz} Hz, {window:?}");
    let kind = Kind::Image;
    let door = Door::RosbridgeCborRaw;
    let (mut gw, ports) = setup.gateway()?;
    let port = ports.rosbridge;
    let stop_subs = Arc::new(AtomicBool::new(false));
    let mut subs = vec![clients::subscriber(
        door,
        kind,
        port,
        TOPIC,
        stop_subs.clone(),
    )];
    let stop_pub = Arc::new(AtomicBool::new(false));
    let (next, publisher) = clients::publisher(kind, port, TOPIC, rate_hz, stop_pub.clone());
    let warm = wait_for("first messages", WARM_UP, &mut subs, |s| {
        s[0].0.received.load(Ordering::Acquire) > 0
    });
    if let Err(e) = warm {
        stop_pub.store(true, Ordering::Release);
        let _ = join_publisher(publisher);
        return Err(e);
    }
    // A second of steady state without it.
    let settle = Instant::now();
    while settle.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(SAMPLE_EVERY);
    }
    let rss_start_mib = rss_mib(gw.pid());

    let stop_stalled = Arc::new(AtomicBool::new(false));
    let (subscribed, stalled) = clients::stalled(kind, port, TOPIC, stop_stalled.clone());
    let end = Instant::now() + WARM_UP;
    while !subscribed.load(Ordering::Acquire) {
        if Instant::now() > end || stalled.is_finished() {
            return Err(format!(
                "the stalled client did not subscribe: {:?}",
                stalled.join()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let from = next.load(Ordering::Acquire);
    gw.begin_window();
    let t0 = Instant::now();
    let mut rss = Vec::new();
    for i in 1..=window.as_secs().max(2) {
        let at = t0 + Duration::from_secs(i);
        while Instant::now() < at {
            std::thread::sleep(SAMPLE_EVERY.min(at.saturating_duration_since(Instant::now())));
            gw.sample();
        }
        rss.push(rss_mib(gw.pid()));
    }
    let to = next.load(Ordering::Acquire).saturating_sub(1);
    let seconds = t0.elapsed().as_secs_f64();
    let usage = gw.end_window().ok_or("the gateway's /proc entry is gone")?;
    stop_stalled.store(true, Ordering::Release);
    stalled
        .join()
        .map_err(|_| "the stalled client panicked".to_string())??;
    let closed = Instant::now();
    while closed.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(SAMPLE_EVERY);
    }
    let rss_after_close_mib = rss_mib(gw.pid());
    stop_pub.store(true, Ordering::Release);
    join_publisher(publisher)?;
    let _ = wait_for("draining", DRAIN, &mut subs, move |s| {
        s[0].0.next_seq.load(Ordering::Acquire) > to
    });
    stop_subs.store(true, Ordering::Release);
    let receipts = join_subs(subs)?;
    let dropped = stop_gateway(gw);

    // The lab's `peak_rss_mb` is KiB / 1024: MiB.
    let rss_peak_mib = usage.peak_rss_mb;
    let rss_end_mib = *rss.last().unwrap_or(&0.0);
    let growth = rss_end_mib - rss[rss.len() / 2 - 1];
    Ok(StalledRun {
        rate_hz,
        seconds,
        rss_start_mib,
        rss_peak_mib,
        rss_end_mib,
        rss_second_half_growth_mib: growth,
        rss_after_close_mib,
        bounded: growth < 5.0,
        beyond_queue_limit_mib: rss_peak_mib - rss_start_mib - CLIENT_QUEUE_MIB,
        rss_mib: rss,
        other: row(door, &receipts[0], (from, to), Some(1000.0 / rate_hz)),
        gateway: usage,
        gateway_dropped: dropped,
    })
}
