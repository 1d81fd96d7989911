//! Runs of many topics at once (E12, E13): one or more *flows*, each a `roam-loadgen
//! --topics N` source on side A and sink on side B, through one freshly started system.
//!
//! The sinks start first; then each flow's source in turn, the next only once the previous
//! one printed `sending` (its paths are up and it is measuring), so a later flow runs wholly
//! next to the earlier ones (E12's small topics next to the image stream). CPU and memory
//! are taken over the last flow's measured part: from its `sending` to its `sent`. Then the
//! earlier flows' sources are stopped (SIGTERM: they report what they sent), and each sink
//! gets [`DRAIN`] to receive what is still on its way before it is stopped too: a flow the
//! path cannot carry at its rate (13 MB images over a lossy path) bounds the run's time,
//! not the other way round.

use std::process::Command;
use std::time::{Duration, Instant};

use roam_bench::procs::{Proc, Usage};
use roam_bench::ros_msgs::Kind;
use serde::Serialize;
use serde_json::Value;

use super::systems::{Lab, System, Vendor, Wan};

/// What roam's proxies are given, as one would configure a robot with many topics: every
/// data topic (TOPIC/N) under /roam_lab/ by pattern from A to B, and the warm-up's echo
/// topics from B to A. Two patterns, because a proxy never imports by pattern a name one of
/// its export patterns matches.
pub const PATTERN: &str = "re:^/roam_lab/.+/[0-9]+$";
pub const ECHO_PATTERN: &str = "re:^/roam_lab/.+/echo$";

/// How long a sink may take, once every source has reported, to receive what is on its way.
const DRAIN: Duration = Duration::from_secs(10);

/// One flow: N topics of one type at `rate` each, `count` messages per topic.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct FlowSpec {
    pub name: &'static str,
    /// The topics are TOPIC/0 .. TOPIC/N-1 (under /roam_lab/, see [`PATTERN`]).
    pub topic: &'static str,
    pub kind: Kind,
    pub size: usize,
    pub topics: usize,
    pub rate: f64,
    /// Messages per topic; an earlier flow is stopped once the last one is done.
    pub count: u64,
    /// Unmeasured sending before the measured part (`--settle-ms`).
    pub settle_ms: u64,
    /// KEEP_ALL history (`--keep-all`); otherwise the load generator's KEEP_LAST 10, the
    /// ROS 2 default QoS.
    pub keep_all: bool,
}

/// What one flow measured.
#[derive(Clone, Debug, Serialize)]
pub struct FlowResult {
    pub name: &'static str,
    /// The source's and the sink's reports (the sink's without its per-topic list).
    pub source: Value,
    pub sink: Value,
    /// Seconds from the system's start to the source's `sending` and `sent`.
    pub sending_s: Option<f64>,
    pub sent_s: Option<f64>,
}

/// One run: its flows, and every process's CPU and peak memory over the last flow's
/// measured part.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowsRun {
    pub flows: Vec<FlowResult>,
    pub usage: Vec<Usage>,
    pub window_s: f64,
    /// Summed over roam's links: QUIC packets declared lost (none for other systems).
    pub link_lost_packets: Option<f64>,
    /// Where each flow's time went inside roam's proxies (none for other systems).
    pub stages: Vec<super::stages::Stage>,
    /// The age of what each roam process received over each link (none for other systems).
    pub link_ages: Vec<super::stages::LinkAge>,
    /// On a wide-area path: what the relay forwarded and dropped.
    pub relay: Option<super::drops::RelayDrops>,
    /// Datagrams the kernel dropped for a full receive buffer on the link sockets (QUIC, the
    /// relay's) of each process of the system, where any.
    pub socket_drops: std::collections::BTreeMap<String, u64>,
}

fn args(role: &str, domain: u32, f: &FlowSpec, path_timeout: Duration) -> Vec<String> {
    [
        role,
        "--domain",
        &domain.to_string(),
        "--topic",
        f.topic,
        "--topics",
        &f.topics.to_string(),
        "--type",
        f.kind.as_str(),
        "--size",
        &f.size.to_string(),
        "--count",
        &f.count.to_string(),
        "--rate",
        &f.rate.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(f.keep_all.then(|| "--keep-all".to_string()))
    .chain([
        "--path-timeout-ms".to_string(),
        path_timeout.as_millis().to_string(),
    ])
    .chain(
        (role == "source" && f.settle_ms > 0)
            .then(|| ["--settle-ms".to_string(), f.settle_ms.to_string()])
            .into_iter()
            .flatten(),
    )
    .collect()
}

/// SIGTERM to `p`, without waiting: a load generator then reports and exits.
fn terminate(p: &Proc) {
    let _ = Command::new("kill").arg(p.pid().to_string()).status();
}

/// A source and what it has printed so far.
struct Source {
    proc: Proc,
    sending: Option<Instant>,
    sent: Option<Instant>,
    report: Option<Value>,
}

impl Source {
    /// Reads what the source printed within `wait`; an error when it exited without a report.
    fn poll(&mut self, wait: Duration) -> Result<(), String> {
        let (lines, exited) = self.proc.lines_for(wait);
        for l in lines {
            match l.as_str() {
                "sending" => self.sending = Some(Instant::now()),
                "sent" => self.sent = Some(Instant::now()),
                l if l.starts_with('{') => {
                    let v = serde_json::from_str(l)
                        .map_err(|e| format!("{} report: {e}", self.proc.name))?;
                    self.report = Some(v);
                }
                _ => {}
            }
        }
        if exited && self.report.is_none() {
            // Its last words on stderr may still be on their way to the log.
            self.proc.wait_exit(Duration::from_secs(1));
            std::thread::sleep(Duration::from_millis(100));
            return Err(format!(
                "{} exited without a report:\n{}",
                self.proc.name,
                self.proc.log_tail()
            ));
        }
        Ok(())
    }
}

/// Runs `flows` over a fresh `system` (on `wan`, when given).
pub fn run(
    lab: &Lab,
    system: System,
    wan: Option<Wan>,
    flows: &[FlowSpec],
    path_timeout: Duration,
) -> Result<FlowsRun, String> {
    let mut sys = lab.start(system, Vendor::CycloneDds, PATTERN, wan)?;
    let mut sinks = Vec::new();
    for f in flows {
        let p = Proc::start(
            &format!("sink-{}", f.name),
            &lab.loadgen,
            &args("sink", sys.domain_b, f, path_timeout),
        )?;
        p.wait_line(Duration::from_secs(30), |l| l == "ready")?;
        sinks.push(p);
    }
    let mut sources: Vec<Source> = Vec::new();
    let mut windows = false;
    let mut window_start = Instant::now();
    // Generous: every path up, every message at the asked rate twice over, a slow drain.
    let send_s: f64 = flows.iter().map(|f| f.count as f64 / f.rate.max(0.1)).sum();
    let end = Instant::now()
        + path_timeout * flows.len() as u32
        + Duration::from_secs_f64(send_s * 2.0 + 60.0);
    let mut last_sample = Instant::now();
    let mut socket_drops = super::drops::SocketDrops::default();
    let procs_of = |sys: &super::systems::Running| -> Vec<(String, u32)> {
        sys.procs
            .iter()
            .map(|p| (p.name.clone(), p.pid()))
            .collect()
    };
    loop {
        if Instant::now() > end {
            return Err("no reports within the run's time budget".into());
        }
        // The next source, once the previous one is measuring.
        if sources.len() < flows.len() && sources.last().is_none_or(|s| s.sending.is_some()) {
            let f = &flows[sources.len()];
            let proc = Proc::start(
                &format!("source-{}", f.name),
                &lab.loadgen,
                &args("source", sys.domain_a, f, path_timeout),
            )?;
            sources.push(Source {
                proc,
                sending: None,
                sent: None,
                report: None,
            });
        }
        for s in &mut sources {
            s.poll(Duration::from_millis(20))?;
        }
        // The last flow's measured part: its `sending` and `sent`.
        let (measuring, done) = match sources.last().filter(|_| sources.len() == flows.len()) {
            Some(s) => (s.sending.is_some(), s.sent.is_some()),
            None => (false, false),
        };
        if !windows && measuring {
            for p in sys.procs.iter_mut().chain(&mut sinks) {
                p.begin_window();
            }
            for s in &mut sources {
                s.proc.begin_window();
            }
            window_start = Instant::now();
            windows = true;
        }
        if last_sample.elapsed() > Duration::from_millis(250) {
            let procs = procs_of(&sys);
            socket_drops.sample(procs.iter().map(|(n, p)| (n.as_str(), *p)));
            if windows {
                for p in sys.procs.iter_mut().chain(&mut sinks) {
                    p.sample();
                }
                for s in &mut sources {
                    s.proc.sample();
                }
            }
            last_sample = Instant::now();
        }
        if windows && done {
            break;
        }
    }
    let mut out = FlowsRun {
        window_s: window_start.elapsed().as_secs_f64(),
        ..FlowsRun::default()
    };
    out.usage = sys
        .procs
        .iter_mut()
        .chain(&mut sinks)
        .chain(sources.iter_mut().map(|s| &mut s.proc))
        .filter_map(|p| p.end_window())
        .collect();
    // The earlier flows ran next to the last one for as long as it measured: enough.
    for s in sources.iter().rev().skip(1) {
        terminate(&s.proc);
    }
    while sources.iter().any(|s| s.report.is_none()) {
        if Instant::now() > end {
            return Err("a source gave no report within the run's time budget".into());
        }
        for s in sources.iter_mut().filter(|s| s.report.is_none()) {
            s.poll(Duration::from_millis(100))?;
        }
    }
    let at = |t: Option<Instant>| t.map(|t| t.duration_since(sys.started).as_secs_f64());
    for ((f, s), sink) in flows.iter().zip(&mut sources).zip(&mut sinks) {
        let line = match sink.wait_line(DRAIN, |l| l.starts_with('{')) {
            Ok(l) => l,
            Err(_) => {
                terminate(sink);
                sink.wait_line(Duration::from_secs(10), |l| l.starts_with('{'))?
            }
        };
        let mut report: Value =
            serde_json::from_str(&line).map_err(|e| format!("{} report: {e}", sink.name))?;
        if let Some(o) = report.as_object_mut() {
            o.remove("per_topic");
        }
        out.flows.push(FlowResult {
            name: f.name,
            source: s.report.take().unwrap_or(Value::Null),
            sink: report,
            sending_s: at(s.sending),
            sent_s: at(s.sent),
        });
    }
    for s in &mut sources {
        s.proc.wait_exit(Duration::from_secs(5));
    }
    for p in &mut sinks {
        p.stop(Duration::from_secs(3));
    }
    let relay_stats = sys.relay_stats.clone();
    let procs = procs_of(&sys);
    socket_drops.sample(procs.iter().map(|(n, p)| (n.as_str(), *p)));
    out.socket_drops = socket_drops.by_process();
    let hops = sys.stop();
    out.relay = relay_stats.and_then(|p| match super::drops::RelayDrops::read(&p) {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!("    wan-relay stats: {e}");
            None
        }
    });
    out.link_ages = super::stages::links(&hops);
    let lost: Vec<f64> = hops
        .iter()
        .filter_map(|h| h.path.get("lost_packets").copied())
        .collect();
    out.link_lost_packets = (!lost.is_empty()).then(|| lost.iter().sum());
    out.stages = flows
        .iter()
        .flat_map(|f| super::stages::of(&hops, f.name, f.topic))
        .collect();
    Ok(out)
}

/// CPU time per delivered message of each process, in µs: its share of a core over the
/// window, over the messages delivered meanwhile (`per_s` a second).
pub fn cpu_us_per_message(usage: &[Usage], per_s: f64) -> Vec<(String, f64)> {
    usage
        .iter()
        .filter_map(|u| Some((u.process.clone(), us_per_message(u.cpu_percent, per_s)?)))
        .collect()
}

/// CPU µs per message of a process at `cpu_percent` of a core, `per_s` messages a second.
fn us_per_message(cpu_percent: f64, per_s: f64) -> Option<f64> {
    (per_s > 0.0).then(|| cpu_percent / 100.0 * 1e6 / per_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_per_message() {
        // Half a core for 10,000 messages a second: 50 µs each.
        assert_eq!(us_per_message(50.0, 10_000.0), Some(50.0));
        assert_eq!(us_per_message(50.0, 0.0), None);
    }

    #[test]
    fn loadgen_arguments() {
        let f = FlowSpec {
            name: "small",
            topic: "/roam_lab/small",
            kind: Kind::String,
            size: 128,
            topics: 50,
            rate: 100.0,
            count: 1000,
            settle_ms: 2000,
            keep_all: true,
        };
        let a = args("source", 61, &f, Duration::from_secs(30));
        let s = a.join(" ");
        assert!(s.starts_with("source --domain 61 --topic /roam_lab/small --topics 50"));
        assert!(s.ends_with("--rate 100 --keep-all --path-timeout-ms 30000 --settle-ms 2000"));
        // The sink has no such option.
        let s = args("sink", 62, &f, Duration::from_secs(30)).join(" ");
        assert!(s.ends_with("--keep-all --path-timeout-ms 30000"));
        let keep_last = FlowSpec {
            keep_all: false,
            ..f
        };
        let s = args("sink", 62, &keep_last, Duration::from_secs(30)).join(" ");
        assert!(s.ends_with("--rate 100 --path-timeout-ms 30000"), "{s}");
    }
}
