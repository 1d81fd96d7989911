//! E13 (issue 18, item 3): many topics at once. N small topics at 10 Hz each from one node
//! to one node, through one proxy pair (and through the Zenoh bridge, reported to reach
//! 100% of a core near 230 topics): delivered/sent, one-way latency, and what each process
//! spends per message and per topic, over the measured part only (not discovery).

use std::time::Duration;

use roam_bench::procs::Usage;
use roam_bench::ros_msgs::Kind;
use serde::Serialize;

use super::experiments::Suite;
use super::flows::{self, FlowResult, FlowSpec};
use super::systems::{Lab, System, ZenohLink};

pub const HZ: f64 = 10.0;
/// std_msgs/String of 128 characters (140 bytes of CDR).
pub const BYTES: usize = 128;
/// Discovery of a thousand writers and readers on each side, and a bridge's routes for them.
/// Unmeasured sending before the measured part: every topic's path past its first messages.
const SETTLE_MS: u64 = 1000;
/// The quick suite's topic count (the full suite also runs 1,000).
pub const QUICK_TOPICS: usize = 1000;
const PATH_TIMEOUT: Duration = Duration::from_secs(90);

#[derive(Clone, Debug, Serialize)]
pub struct ManyTopicsRun {
    pub system: System,
    pub label: String,
    pub topics: usize,
    pub rate_hz: f64,
    pub seconds: f64,
    pub flow: Option<FlowResult>,
    /// CPU and peak memory of every process over the measured part (the load generators'
    /// too: `source-topics`, `sink-topics`).
    pub usage: Vec<Usage>,
    pub window_s: f64,
    /// CPU time per delivered message, each process (µs).
    pub cpu_us_per_message: Vec<(String, f64)>,
    /// Percent of a core per 100 topics at this rate, each process.
    pub cpu_percent_per_100_topics: Vec<(String, f64)>,
    /// Where the time went inside roam's proxies (none for other systems).
    pub stages: Vec<super::stages::Stage>,
    /// The age of what each roam process received over each link (none for other systems).
    pub link_ages: Vec<super::stages::LinkAge>,
    /// QUIC packets roam's links declared lost, summed (none for other systems).
    pub link_lost_packets: Option<f64>,
    /// Datagrams the kernel dropped for a full receive buffer on each process's link socket.
    pub socket_drops: std::collections::BTreeMap<String, u64>,
    pub error: Option<String>,
}

/// Native DDS (what the load generators cost alone), roam proxy to proxy and through a
/// router, and the Zenoh bridge over plain TCP when built. Quick: QUICK_TOPICS for 30 s;
/// full: 250 and 1,000 topics for 60 s.
pub fn run_all(lab: &Lab, suite: Suite) -> Vec<ManyTopicsRun> {
    let (counts, seconds): (&[usize], f64) = match suite {
        Suite::Smoke => return Vec::new(),
        Suite::Quick => (&[QUICK_TOPICS], 30.0),
        Suite::Full => (&[250, 1000], 60.0),
    };
    let mut systems = vec![System::Native, System::ROAM_P2P, System::ROAM];
    if lab.zenoh.is_some() {
        systems.push(System::Zenoh {
            link: ZenohLink::Tcp,
        });
    }
    let mut out = Vec::new();
    for &n in counts {
        for &sys in &systems {
            eprintln!(
                "  e13 {:<28} {n} topics x {HZ} Hz for {seconds} s",
                sys.label()
            );
            let r = run(lab, sys, n, seconds);
            if let Some(e) = &r.error {
                eprintln!("    failed: {}", e.lines().next().unwrap_or(""));
            }
            out.push(r);
        }
    }
    out
}

/// `topics` topics at [`HZ`] for `seconds` over a fresh `system`.
pub fn run(lab: &Lab, system: System, topics: usize, seconds: f64) -> ManyTopicsRun {
    let spec = FlowSpec {
        name: "topics",
        topic: "/roam_lab/many",
        kind: Kind::String,
        size: BYTES,
        topics,
        rate: HZ,
        count: (HZ * seconds) as u64,
        settle_ms: SETTLE_MS,
        keep_all: true,
    };
    let mut r = ManyTopicsRun {
        system,
        label: system.label(),
        topics,
        rate_hz: HZ,
        seconds,
        flow: None,
        usage: Vec::new(),
        window_s: 0.0,
        cpu_us_per_message: Vec::new(),
        cpu_percent_per_100_topics: Vec::new(),
        stages: Vec::new(),
        link_ages: Vec::new(),
        link_lost_packets: None,
        socket_drops: Default::default(),
        error: None,
    };
    match flows::run(lab, system, None, &[spec], PATH_TIMEOUT) {
        Ok(mut f) => {
            r.window_s = f.window_s;
            r.usage = std::mem::take(&mut f.usage);
            r.stages = std::mem::take(&mut f.stages);
            r.link_ages = std::mem::take(&mut f.link_ages);
            r.link_lost_packets = f.link_lost_packets;
            r.socket_drops = std::mem::take(&mut f.socket_drops);
            r.flow = f.flows.pop();
            // Messages delivered a second while the source sent: the sink's rate.
            let per_s = r
                .flow
                .as_ref()
                .and_then(|f| f.sink["rate"].as_f64())
                .unwrap_or(0.0);
            r.cpu_us_per_message = flows::cpu_us_per_message(&r.usage, per_s);
            r.cpu_percent_per_100_topics = per_100_topics(&r.usage, topics);
        }
        Err(e) => r.error = Some(e),
    }
    r
}

fn per_100_topics(usage: &[Usage], topics: usize) -> Vec<(String, f64)> {
    usage
        .iter()
        .filter_map(|u| Some((u.process.clone(), percent_per_100(u.cpu_percent, topics)?)))
        .collect()
}

/// Percent of a core per 100 topics of a process at `cpu_percent` serving `topics`.
fn percent_per_100(cpu_percent: f64, topics: usize) -> Option<f64> {
    (topics > 0).then(|| cpu_percent * 100.0 / topics as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_per_100_topics() {
        // A whole core for 230 topics: about 43% of a core per 100 topics.
        let v = percent_per_100(100.0, 230).unwrap_or(0.0);
        assert!((v - 43.478).abs() < 1e-3);
        assert_eq!(percent_per_100(100.0, 0), None);
    }
}
