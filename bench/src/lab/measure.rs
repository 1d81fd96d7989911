//! One measurement: a fresh system, a sink on side B, a source on side A, the reports they
//! print, and the CPU and memory of every process while the load ran.

use std::time::{Duration, Instant};

use roam_bench::ros_msgs::Kind;
use serde::Serialize;
use serde_json::Value;

use super::systems::{Lab, System, Vendor, Wan};
use roam_bench::procs::{Proc, Usage};

/// The load of one run.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Load {
    pub kind: Kind,
    pub size: usize,
    pub count: u64,
    /// Messages per second; 0 = unpaced (stream) or closed loop (echo).
    pub rate: f64,
    /// Round trips through an echoing sink (else one-way to a measuring sink).
    pub echo: bool,
    pub keep_all: bool,
}

impl Load {
    pub fn rtt(kind: Kind, size: usize, count: u64) -> Load {
        Load {
            kind,
            size,
            count,
            rate: 0.0,
            echo: true,
            keep_all: false,
        }
    }
    pub fn stream(kind: Kind, size: usize, count: u64, rate: f64) -> Load {
        Load {
            kind,
            size,
            count,
            rate,
            echo: false,
            keep_all: true,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    pub experiment: &'static str,
    pub system: System,
    /// The load generators' DDS (the ROS 2 nodes on both sides).
    pub nodes: Vendor,
    pub label: String,
    pub wan: Option<Wan>,
    pub load: Load,
    /// The source's report (send rate, round trips when echoing).
    pub source: Value,
    /// The sink's report in stream mode (one-way latency, rate, loss).
    pub sink: Option<Value>,
    /// From the first process of the system starting to the source seeing its first echo.
    pub start_to_first_delivery_ms: f64,
    pub usage: Vec<Usage>,
    /// What roam's routers and proxies measured at each hop (empty for other systems).
    pub hops: Vec<super::hops::Hop>,
    pub error: Option<String>,
}

const TOPIC: &str = "/roam_lab/data";
/// The lab's data topic and its echo as roam's proxies report them (their realm-side names).
pub const REALM_TOPIC: &str = TOPIC;
pub const REALM_ECHO_TOPIC: &str = "/roam_lab/data/echo";

/// Runs `load` over a freshly started `system`; a failure is recorded, not fatal.
pub fn measure(
    lab: &Lab,
    experiment: &'static str,
    system: System,
    nodes: Vendor,
    wan: Option<Wan>,
    load: Load,
) -> Measurement {
    let mut m = Measurement {
        experiment,
        system,
        nodes,
        label: nodes.label(system),
        wan,
        load,
        source: Value::Null,
        sink: None,
        start_to_first_delivery_ms: 0.0,
        usage: Vec::new(),
        hops: Vec::new(),
        error: None,
    };
    if let Err(e) = run(lab, &mut m) {
        eprintln!("    {}: {e}", m.label);
        m.error = Some(e);
    }
    m
}

fn loadgen_args(role: &str, domain: u32, load: &Load) -> Vec<String> {
    let mut a: Vec<String> = vec![
        role.into(),
        "--domain".into(),
        domain.to_string(),
        "--topic".into(),
        TOPIC.into(),
        "--type".into(),
        load.kind.as_str().into(),
        "--size".into(),
        load.size.to_string(),
        "--count".into(),
        load.count.to_string(),
        "--rate".into(),
        load.rate.to_string(),
        "--path-timeout-ms".into(),
        "30000".into(),
    ];
    if load.echo {
        a.push("--echo".into());
    }
    if load.keep_all {
        a.push("--keep-all".into());
    }
    a
}

fn run(lab: &Lab, m: &mut Measurement) -> Result<(), String> {
    let load = m.load;
    let loadgen = lab.loadgen(m.nodes)?;
    let mut sys = lab.start(m.system, m.nodes, TOPIC, m.wan)?;
    let mut sink = Proc::start("sink", loadgen, &loadgen_args("sink", sys.domain_b, &load))?;
    sink.wait_line(Duration::from_secs(20), |l| l == "ready")?;
    let source_started = Instant::now();
    let mut source = Proc::start(
        "source",
        loadgen,
        &loadgen_args("source", sys.domain_a, &load),
    )?;
    for p in sys.procs.iter_mut().chain([&mut sink, &mut source]) {
        p.begin_window();
    }
    // Generous: the send time at the asked rate, plus path set-up and a slow system's drain.
    let budget = Duration::from_secs(60)
        + if load.rate > 0.0 {
            Duration::from_secs_f64(load.count as f64 / load.rate * 2.0)
        } else {
            Duration::from_secs(120)
        };
    let end = Instant::now() + budget;
    let line = loop {
        match source.wait_line(Duration::from_millis(250), |l| l.starts_with('{')) {
            Ok(l) => break l,
            Err(e) if e.contains("exited") => return Err(format!("source: {e}")),
            Err(_) if Instant::now() > end => {
                return Err(format!("source: no report within {budget:?}"))
            }
            Err(_) => {
                for p in sys.procs.iter_mut().chain([&mut sink, &mut source]) {
                    p.sample();
                }
            }
        }
    };
    m.source = serde_json::from_str(&line).map_err(|e| format!("source report: {e}"))?;
    if !load.echo {
        let l = sink.wait_line(Duration::from_secs(30), |l| l.starts_with('{'))?;
        m.sink = Some(serde_json::from_str(&l).map_err(|e| format!("sink report: {e}"))?);
    }
    let path_up = m.source["path_up_ms"].as_f64().unwrap_or(0.0);
    m.start_to_first_delivery_ms =
        source_started.duration_since(sys.started).as_secs_f64() * 1e3 + path_up;
    m.usage = sys
        .procs
        .iter_mut()
        .chain([&mut sink, &mut source])
        .filter_map(|p| p.end_window())
        .collect();
    source.wait_exit(Duration::from_secs(5));
    sink.stop(Duration::from_secs(3));
    m.hops = sys.stop();
    Ok(())
}
