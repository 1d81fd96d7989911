//! The flood campaign: a realm member floods one topic as fast as its link takes it, next to
//! a 100 Hz neighbour topic of another member, through two routers (r0 - r1, both
//! publishers on r0, both subscribers on r1, so the flood crosses a router link the
//! neighbour shares). Three fresh runs: the neighbour alone, with the flood and no client
//! quota, and with the flood under the routers' default client quota. Per
//! run: the neighbour's latency (p50, p99, max) over a window, the flood's rate, and what
//! r0 counted on the flooder's link (quota waits and drops), read from its metrics file.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use roam_bench::delivery::Summary;
use roam_edge::metrics::{Link, MetricsFile};
use roam_net::quota::QuotaLimits;
use serde::Serialize;

use super::campaign::{numbers, read};
use super::mesh::Mesh;
use super::stream::Arrival;

pub const NEIGHBOUR_TOPIC: &str = "/fault/imu";
pub const NEIGHBOUR_HZ: f64 = 100.0;
pub const FLOOD_TOPIC: &str = "/fault/flood";
pub const SIZE: usize = 100;
/// Longer than the quota's burst (one second's worth) and a metrics interval.
const BURST_SPENT: Duration = Duration::from_secs(2);

/// What `roam router` holds a client to unless told otherwise.
fn default_quota() -> QuotaLimits {
    QuotaLimits::default()
}
/// The quota the smoke run sets instead of the default: the debug builds the test runs may
/// not reach the default, and then nothing would be held back.
pub const SMOKE_QUOTA_MSGS_PER_S: u64 = 2_000;

/// One run's set-up.
struct RunSpec {
    name: &'static str,
    flood: bool,
    /// `--client-max-messages-per-s` for the routers (0: none); None: the default.
    quota: Option<u64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FloodOutcome {
    pub what: String,
    pub window_s: f64,
    pub runs: Vec<FloodRun>,
    pub error: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FloodRun {
    pub name: String,
    pub flood: bool,
    /// The routers' client quota in messages per second (0: none); None: the default.
    pub quota_msgs_per_s: Option<u64>,
    /// The quota in force, in messages per second (0: none).
    pub quota_in_force: u64,
    /// The neighbour's messages within the window, and their latency in milliseconds.
    pub neighbour_messages: usize,
    pub neighbour_p50_ms: f64,
    pub neighbour_p99_ms: f64,
    pub neighbour_max_ms: f64,
    /// Neighbour messages missing within the window (a reliable keep-last topic).
    pub neighbour_missing: u64,
    /// The flooder's own count over its whole run.
    pub flood_sent: Option<u64>,
    /// What r0 took in from the flooder a second over the window.
    pub flood_per_s: Option<f64>,
    /// r0's counts on the flooder's link over the window.
    pub flood_quota_waits: Option<u64>,
    pub flood_dropped_quota: Option<u64>,
}

/// The runs: alone, flooded with no quota, flooded under the quota (the routers' default;
/// `smoke`: [`SMOKE_QUOTA_MSGS_PER_S`]).
pub fn run(roam: &std::path::Path, window: Duration, smoke: bool) -> FloodOutcome {
    let held = smoke.then_some(SMOKE_QUOTA_MSGS_PER_S);
    let specs = [
        RunSpec {
            name: "alone",
            flood: false,
            quota: None,
        },
        RunSpec {
            name: "flood, no quota",
            flood: true,
            quota: Some(0),
        },
        RunSpec {
            name: if smoke {
                "flood, quota"
            } else {
                "flood, default quota"
            },
            flood: true,
            quota: held,
        },
    ];
    let mut out = FloodOutcome {
        what: format!(
            "r0 - r1; a {NEIGHBOUR_HZ} Hz reliable topic of {SIZE}-byte messages from one member next to an unpaced publisher of {SIZE}-byte messages from another, both on r0, subscribed on r1; alone, flooded with no client quota, flooded under a quota of {} msg/s{}",
            held.unwrap_or(default_quota().msgs_per_s),
            if smoke { "" } else { " (the default)" }
        ),
        window_s: window.as_secs_f64(),
        ..FloodOutcome::default()
    };
    for spec in &specs {
        eprintln!("faults: flood: {}", spec.name);
        match one(roam, spec, window) {
            Ok(r) => out.runs.push(r),
            Err(e) => {
                out.error = Some(format!("{}: {e}", spec.name));
                break;
            }
        }
    }
    out
}

fn one(roam: &std::path::Path, spec: &RunSpec, window: Duration) -> Result<FloodRun, String> {
    let mut mesh = Mesh::new(
        roam,
        &format!("flood-{}", spec.quota.unwrap_or(0)),
        2,
        &[(1, 0)],
    )?;
    let quota = spec.quota.map(|q| q.to_string());
    let metrics = mesh
        .file("{id}.metrics.json")
        .to_string_lossy()
        .into_owned();
    let mut args = vec!["--status-interval", "1", "--metrics-file", &metrics];
    if let Some(q) = &quota {
        args.extend(["--client-max-messages-per-s", q]);
    }
    mesh.set_router_args(&args);
    mesh.start_all()?;
    let (size, hz) = (SIZE.to_string(), NEIGHBOUR_HZ.to_string());
    let sub = mesh.client("sub", NEIGHBOUR_TOPIC, "console", 1, &[])?;
    let mut neighbour = mesh.client(
        "pub",
        NEIGHBOUR_TOPIC,
        "imu",
        0,
        &["--size", &size, "--rate", &hz],
    )?;
    let mut flood = None;
    let origin = Instant::now();
    let (stop, flowing) = (AtomicBool::new(false), AtomicUsize::new(0));
    let result = std::thread::scope(|s| -> Result<_, String> {
        let (stop, flowing) = (&stop, &flowing);
        let reader = s.spawn(move || read(sub, origin, stop, flowing));
        let measured = (|| {
            wait_for(flowing, 50, "the neighbour topic")?;
            if spec.flood {
                let sink = mesh.client("sub", FLOOD_TOPIC, "sink", 1, &["--quiet"])?;
                let p = mesh.client("pub", FLOOD_TOPIC, "flooder", 0, &["--size", &size])?;
                // The flood is on once r0 has counted the flooder's link moving data; the
                // window begins once the quota's one-second burst is spent.
                wait_status(&mesh, Duration::from_secs(20))?;
                std::thread::sleep(BURST_SPENT);
                flood = Some((p, sink));
            }
            let from = Instant::now();
            let before = flooder_link(&mesh);
            std::thread::sleep(window);
            let to = Instant::now();
            let after = flooder_link(&mesh);
            Ok::<_, String>((from, to, before, after))
        })();
        // The reader ends once the neighbour topic has gone quiet.
        neighbour.stop(Duration::from_secs(5));
        stop.store(true, Ordering::Relaxed);
        let (sub, arrivals) = reader
            .join()
            .unwrap_or_else(|_| Err("reader panicked".into()))?;
        Ok((measured?, sub, arrivals))
    });
    let ((from, to, before, after), mut sub, arrivals) = result?;
    let ms = |t: Instant| t.duration_since(origin).as_secs_f64() * 1e3;
    let mut run = FloodRun {
        name: spec.name.into(),
        flood: spec.flood,
        quota_msgs_per_s: spec.quota,
        quota_in_force: spec.quota.unwrap_or(default_quota().msgs_per_s),
        ..FloodRun::default()
    };
    let (window, missing) = within(&arrivals, ms(from), ms(to));
    let summary = Summary::of(window.iter().map(|a| (a.at_ms - a.sent_ms) * 1e3).collect());
    run.neighbour_messages = summary.count;
    run.neighbour_p50_ms = summary.median_us / 1e3;
    run.neighbour_p99_ms = summary.p99_us / 1e3;
    run.neighbour_max_ms = summary.max_us / 1e3;
    run.neighbour_missing = missing;
    if let Some((mut p, mut sink)) = flood {
        let delta = |of: fn(&Link) -> u64| {
            Some(of(&after.as_ref()?.1).saturating_sub(of(&before.as_ref()?.1)))
        };
        // What r0 took in from the flooder between its snapshots at the window's ends.
        let secs = before
            .as_ref()
            .zip(after.as_ref())
            .map(|(b, a)| a.0.saturating_sub(b.0) as f64 / 1e6)
            .filter(|s| *s > 0.0);
        run.flood_per_s = delta(|l| l.frames_in).zip(secs).map(|(n, s)| n as f64 / s);
        run.flood_quota_waits = delta(|l| l.queue.quota_waits);
        run.flood_dropped_quota = delta(|l| l.drops.quota);
        p.stop(Duration::from_secs(10));
        run.flood_sent = numbers(&p, "dropped while offline").first().copied();
        sink.stop(Duration::from_secs(5));
    }
    sub.stop(Duration::from_secs(5));
    Ok(run)
}

/// Waits until `n` messages have been read.
fn wait_for(flowing: &AtomicUsize, n: usize, what: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while flowing.load(Ordering::Relaxed) < n {
        if Instant::now() > deadline {
            return Err(format!("{what} did not flow within 30 s"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// Waits until r0's metrics show the flooder's link has brought data in.
fn wait_status(mesh: &Mesh, timeout: Duration) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    while flooder_link(mesh).is_none_or(|(_, l)| l.frames_in <= 1000) {
        if Instant::now() > deadline {
            return Err(format!(
                "r0's metrics ({}) show no data from the flooder within {timeout:?}",
                mesh.file("r0.metrics.json").display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// The flooder's link in r0's newest metrics snapshot, and when that was taken (µs).
fn flooder_link(mesh: &Mesh) -> Option<(u64, Link)> {
    let s = MetricsFile::read(&mesh.file("r0.metrics.json")).ok()?;
    let at = s.process.snapshot_time_us;
    let link = s
        .links
        .into_iter()
        .find(|l| l.peer == "flooder" && !l.closed)?;
    Some((at, link))
}

/// The arrivals within [from_ms, to_ms), and how many sequence numbers between the first and
/// the last of them did not arrive.
fn within(arrivals: &[Arrival], from_ms: f64, to_ms: f64) -> (Vec<Arrival>, u64) {
    let w: Vec<Arrival> = arrivals
        .iter()
        .filter(|a| a.at_ms >= from_ms && a.at_ms < to_ms)
        .copied()
        .collect();
    let mut seqs: Vec<u64> = w.iter().map(|a| a.seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    let missing = match (seqs.first(), seqs.last()) {
        (Some(a), Some(b)) => (b - a + 1).saturating_sub(seqs.len() as u64),
        _ => 0,
    };
    (w, missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_counts_what_is_missing_between_its_ends() {
        let a = |at_ms: f64, seq: u64| Arrival {
            at_ms,
            sent_ms: at_ms - 1.0,
            seq,
        };
        let arrivals = [a(5.0, 1), a(10.0, 2), a(20.0, 3), a(30.0, 6), a(40.0, 7)];
        let (w, missing) = within(&arrivals, 10.0, 40.0);
        assert_eq!(w.iter().map(|a| a.seq).collect::<Vec<_>>(), vec![2, 3, 6]);
        assert_eq!(missing, 2);
    }
}
