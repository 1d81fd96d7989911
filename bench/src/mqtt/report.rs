//! bench/results/mqtt.json and bench/MQTT.md.

use std::fmt::Write;

use roam_bench::machine::Machine;
use serde::{Deserialize, Serialize};

use super::run::{Run, System};

#[derive(Debug, Serialize, Deserialize)]
pub struct Results {
    pub machine: Machine,
    pub date: String,
    pub commit: String,
    pub count: usize,
    pub runs: Vec<Run>,
    pub errors: Vec<String>,
}

fn ms(us: f64) -> String {
    format!("{:.3}", us / 1e3)
}

pub fn markdown(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# MQTT bridges: seed 003's ping-pong on this machine\n");
    let _ = writeln!(
        s,
        "Written by `roam-mqtt-bench` (`make bench-mqtt`) on {} ({} cores, {}), commit {}. {} messages per run at 10 Hz, after a warm-up; one Mosquitto 2.0 on loopback; vehicle and cloud are two DDS domains of CycloneDDS on loopback. Each system runs one bridge per side. *roam mqtt*: `roam mqtt` with mqtt_client parameter files (CDR with type messages). *Python bridge*: `bench/mqtt/py_bridge.py`, paho-mqtt 2.1 + PyPI cyclonedds forwarding the same CDR (the role of mqtt_bridge in seed 003).\n",
        r.date, r.machine.nproc, r.machine.cpu, r.commit, r.count
    );
    let _ = writeln!(s, "Hops are measured inside each bridge, as seed 003's Table I splits them: *ros2mqtt* from the DDS sample's arrival in the bridge process to its hand-off to the MQTT client library; *mqtt2ros* from the MQTT message's arrival in the process to the DDS write call (the interface's own processing); *DDS write* the write call itself, in which CycloneDDS sends the message to the local readers (seed 003's `MQTT interface ->` propagation, which ROS 1 queued instead). The round trip is measured by the sender: ping written on the vehicle to pong read back there (two bridge passes each way, the broker twice, the echo). Milliseconds.\n");
    for message in ["1.08 MB point cloud", "0.18 MB scan"] {
        let runs: Vec<&Run> = r
            .runs
            .iter()
            .filter(|x| x.spec.message == message)
            .collect();
        if runs.is_empty() {
            continue;
        }
        let _ = writeln!(s, "## {message}\n");
        let _ = writeln!(s, "| system | TLS | QoS | vehicle ros2mqtt median | cloud mqtt2ros median | cloud DDS write median | cloud ros2mqtt median | vehicle mqtt2ros median | vehicle DDS write median | round trip mean | median | min | max | std | back | bridge CPU % (vehicle, cloud) |");
        let _ = writeln!(s, "{}", "|---".repeat(17) + "|");
        for x in &runs {
            let hop = |k: &str| {
                x.hops
                    .get(k)
                    .map(|h| ms(h.median_us))
                    .unwrap_or_else(|| "-".into())
            };
            let cpu: Vec<String> = x
                .usage
                .iter()
                .map(|u| format!("{:.0}", u.cpu_percent))
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}/{} | {} |",
                x.spec.system.label(),
                if x.spec.tls { "yes" } else { "no" },
                x.spec.qos,
                hop("vehicle ros2mqtt"),
                hop("cloud mqtt2ros"),
                hop("cloud dds_write"),
                hop("cloud ros2mqtt"),
                hop("vehicle mqtt2ros"),
                hop("vehicle dds_write"),
                ms(x.rtt.mean_us),
                ms(x.rtt.median_us),
                ms(x.rtt.min_us),
                ms(x.rtt.max_us),
                ms(x.rtt.std_us),
                x.received,
                x.sent,
                cpu.join(", ")
            );
        }
        let _ = writeln!(s);
        // The goals, from one run's figures against the other's.
        let find = |sys: System, tls: bool, qos: u8| {
            runs.iter()
                .find(|x| x.spec.system == sys && x.spec.tls == tls && x.spec.qos == qos)
        };
        if let Some(roam) = find(System::Roam, false, 0) {
            let hop_max = [
                "vehicle ros2mqtt",
                "cloud mqtt2ros",
                "cloud ros2mqtt",
                "vehicle mqtt2ros",
            ]
            .iter()
            .filter_map(|k| roam.hops.get(*k).map(|h| h.median_us))
            .fold(0.0, f64::max);
            let write_max = ["vehicle dds_write", "cloud dds_write"]
                .iter()
                .filter_map(|k| roam.hops.get(*k).map(|h| h.median_us))
                .fold(0.0, f64::max);
            let _ = writeln!(
                s,
                "- roam's slowest hop (the interface's processing), median: {} ms (goal for the point cloud: under 0.3 ms); its slower DDS write, median: {} ms.",
                ms(hop_max),
                ms(write_max)
            );
            if let Some(py) = find(System::Python, false, 0) {
                let sum = |x: &Run| {
                    x.hops
                        .iter()
                        .filter(|(k, _)| !k.ends_with("dds_write"))
                        .map(|(_, h)| h.median_us)
                        .sum::<f64>()
                };
                let _ = writeln!(
                    s,
                    "- Time inside the bridges, four hops, medians summed: roam {} ms, Python {} ms: {:.1}x (goal: at least 10x). Round trip median: {:.1}x.",
                    ms(sum(roam)),
                    ms(sum(py)),
                    sum(py) / sum(roam).max(1e-9),
                    py.rtt.median_us / roam.rtt.median_us.max(1e-9)
                );
            }
            if let Some(tls) = find(System::Roam, true, 0) {
                let inside = |x: &Run| {
                    x.hops
                        .iter()
                        .filter(|(k, _)| !k.ends_with("dds_write"))
                        .map(|(_, h)| h.median_us)
                        .sum::<f64>()
                };
                let pct = |a: f64, b: f64| (a / b.max(1e-9) - 1.0) * 100.0;
                let _ = writeln!(
                    s,
                    "- TLS to the broker: roam's interface cost (the four hops, medians summed) {} ms against {} ms without: {:+.0}% (goal: under 20%; seed 003 measured about +67% on mqtt_client's). The round trip, which also pays for four TLS connections through Mosquitto (its OpenSSL included): median {} ms against {} ms, {:+.0}%.",
                    ms(inside(tls)),
                    ms(inside(roam)),
                    pct(inside(tls), inside(roam)),
                    ms(tls.rtt.median_us),
                    ms(roam.rtt.median_us),
                    pct(tls.rtt.median_us, roam.rtt.median_us)
                );
            }
            let _ = writeln!(s);
        }
    }
    if !r.errors.is_empty() {
        let _ = writeln!(s, "## Runs that failed\n");
        for e in &r.errors {
            let _ = writeln!(s, "- {e}");
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "ECDF of the round trips: `bench/results/plots/mqtt-rtt-ecdf.png` (`make bench-plots`)."
    );
    s
}
