//! The lab's results file and `bench/RESULTS.md`: tables per experiment, with ratios against
//! native DDS and against the Zenoh bridge as the headline.

use std::fmt::Write as _;
use std::time::Duration;

use roam_bench::machine::{self, Machine};
use serde::Serialize;
use serde_json::Value;

use super::experiments::Suite;
use super::hop_report;
use super::measure::Measurement;
use super::systems::{Lab, Links, System, Vendor, ZenohLink};

#[derive(Serialize)]
pub struct Report {
    pub schema: u32,
    pub suite: Suite,
    pub machine: Machine,
    pub date: String,
    pub commit: String,
    pub zenoh_bridge: Option<String>,
    /// The load generator of the rows with Fast DDS nodes (E1, E2), or why they were left out.
    pub fastdds_loadgen: Option<String>,
    pub fastdds_left_out: Option<String>,
    pub seconds: f64,
    pub measurements: Vec<Measurement>,
    /// `bench/results/routing-plane.json` (written by `roam-bench`) when present: E8 quotes
    /// its control-plane figures. Not repeated in the lab's JSON.
    #[serde(skip)]
    pub routing_plane: Option<Value>,
    /// E10: ddsperf's runs.
    pub ddsperf: Vec<super::ddsperf::DdsperfRun>,
    /// E11: pairs of congestion controllers sharing a bottleneck.
    pub fairness: Vec<super::fairness::FairnessRun>,
    /// E12: small topics next to an image stream on one link.
    pub hol: Vec<super::hol::HolRun>,
    /// E13: many topics at once.
    pub many_topics: Vec<super::many_topics::ManyTopicsRun>,
}

impl Report {
    pub fn new(suite: Suite, lab: &Lab, measurements: Vec<Measurement>, took: Duration) -> Report {
        Report {
            schema: 1,
            suite,
            machine: machine::machine(),
            date: machine::date(),
            commit: machine::commit(),
            zenoh_bridge: lab
                .zenoh
                .as_ref()
                .map(|_| "zenoh + zenoh-plugin-ros2dds (bench/zenoh-bridge/Cargo.toml)".into()),
            fastdds_loadgen: lab.fastdds.as_ref().ok().map(|_| {
                "roam-loadgen-fastdds (bench/fastdds), Fast DDS 2.9 from Debian, UDPv4 on loopback"
                    .into()
            }),
            fastdds_left_out: lab.fastdds.as_ref().err().cloned(),
            seconds: took.as_secs_f64(),
            measurements,
            routing_plane: None,
            ddsperf: Vec::new(),
            fairness: Vec::new(),
            hol: Vec::new(),
            many_topics: Vec::new(),
        }
    }
}

fn f(v: &Value, path: &[&str]) -> Option<f64> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    v.as_f64()
}

pub(super) fn us(v: Option<f64>) -> String {
    match v {
        None => "—".into(),
        Some(v) if v >= 10_000.0 => format!("{:.1} ms", v / 1e3),
        Some(v) if v >= 1000.0 => format!("{:.2} ms", v / 1e3),
        Some(v) => format!("{v:.0} µs"),
    }
}

fn size(b: usize) -> String {
    match b {
        b if b >= 1_000_000 && b % 1_000_000 == 0 => format!("{} MB", b / 1_000_000),
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b if b >= 1024 && b % 1024 == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "—".into(),
    }
}

impl Measurement {
    fn ok(&self) -> bool {
        self.error.is_none()
    }
    pub(super) fn rtt(&self, field: &str) -> Option<f64> {
        self.ok()
            .then(|| f(&self.source, &["rtt", field]))
            .flatten()
    }
    fn sink_f(&self, path: &[&str]) -> Option<f64> {
        self.sink.as_ref().and_then(|s| f(s, path))
    }
    fn lost(&self) -> Option<f64> {
        if self.load.echo {
            f(&self.source, &["echo", "lost"])
        } else {
            self.sink_f(&["counts", "lost"])
        }
    }
    fn dups(&self) -> Option<f64> {
        if self.load.echo {
            f(&self.source, &["echo", "duplicates"])
        } else {
            self.sink_f(&["counts", "duplicates"])
        }
    }
}

/// The systems present in `ms`, in first-seen order.
fn systems(ms: &[&Measurement]) -> Vec<System> {
    let mut v = Vec::new();
    for m in ms {
        if !v.contains(&m.system) {
            v.push(m.system);
        }
    }
    v
}

/// The measurements of experiment `e` with CycloneDDS nodes (every table's usual rows).
fn of<'a>(r: &'a Report, e: &str) -> Vec<&'a Measurement> {
    of_nodes(r, e, Vendor::CycloneDds)
}

/// The measurements of experiment `e` whose load generators ran on `nodes`.
fn of_nodes<'a>(r: &'a Report, e: &str, nodes: Vendor) -> Vec<&'a Measurement> {
    r.measurements
        .iter()
        .filter(|m| m.experiment == e && m.nodes == nodes)
        .collect()
}

/// Where the rows with Fast DDS nodes are, or why there are none.
fn fastdds_note(r: &Report, s: &mut String, what: &str) {
    if let Some(why) = &r.fastdds_left_out {
        let _ = writeln!(
            s,
            "{what} with Fast DDS nodes: not run ({}).\n",
            why.lines().next().unwrap_or("")
        );
    }
}

fn find<'a>(
    ms: &[&'a Measurement],
    sys: System,
    pred: impl Fn(&Measurement) -> bool,
) -> Option<&'a Measurement> {
    ms.iter().copied().find(|m| m.system == sys && pred(m))
}

const ZENOH_TCP: System = System::Zenoh {
    link: ZenohLink::Tcp,
};

pub fn markdown(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# roam performance lab\n");
    let _ = writeln!(
        s,
        "Generated by `roam-lab --{}` (`make bench` = quick, `make bench-full` = full) on {}, commit `{}`.\n\
         Machine: {} cores, {}; kernel {}; net.core.rmem_max {}; {}. Took {:.0} s. Every system ran on this machine in this run, \
         over loopback, each started fresh for each measurement; figures are medians of one run, not \
         averages over machines. Read the ratios, not the absolute times.\n",
        match r.suite { Suite::Smoke => "smoke", Suite::Quick => "quick", Suite::Full => "full" },
        r.date, r.commit, r.machine.nproc, r.machine.cpu, r.machine.kernel,
        r.machine.udp_rmem_max.map_or("unknown".into(), |b| b.to_string()), r.machine.rustc, r.seconds
    );
    let _ = writeln!(
        s,
        "Systems: **native** = source and sink in one DDS domain (CycloneDDS, what ROS 2 nodes on \
         rmw_cyclonedds do); **roam** = domain A - `roam proxy` - `roam router` - `roam proxy` - domain B, \
         or **roam, proxy to proxy** = domain A - `roam proxy` - `roam proxy` - domain B (B listens, A dials: \
         the same two processes as the Zenoh bridge's rows); every roam link is mutual TLS and payloads sealed (AES-256-GCM) unless marked clear text (authenticated only), links QUIC; \
         **zenoh bridge** = domain A - zenoh-plugin-ros2dds bridge - bridge - domain B ({}); its TCP rows are \
         plain TCP (no TLS, nothing authenticated), its mutual TLS rows TCP with TLS where both bridges present certificates of one CA \
         (zenoh's `enable_mtls`: what a deployment that authenticates its bridges runs, and what every roam link is), \
         its QUIC rows TLS with server certificates only. Zenoh encrypts per link, hop by hop; roam seals end to end besides. \
         The load generator (`roam-loadgen`) is a CycloneDDS participant announcing itself in \
         `ros_discovery_info` like a ROS 2 node. E1 and E2 also run with **Fast DDS nodes** (`roam-loadgen-fastdds`, bench/fastdds: \
         the same load generator on Fast DDS 2.9, UDPv4 on loopback, no shared memory): **native Fast DDS** \
         = both in one domain; **roam, ..., Fast DDS nodes** = Fast DDS source and sink on either side of \
         roam (whose proxies are CycloneDDS). The routing plane on its own (seal/open, RIB, router \
         throughput, memory) is in [ROUTING-PLANE.md](ROUTING-PLANE.md). Plots: `bench/results/plots/` \
         (`make bench-plots`).\n",
        r.zenoh_bridge.as_deref().unwrap_or("not built for this run: its columns are empty; build it with bench/zenoh-bridge/build.sh")
    );
    e1(r, &mut s);
    e2(r, &mut s);
    e3(r, &mut s);
    e4(r, &mut s);
    e5(r, &mut s);
    e6(r, &mut s);
    e7(r, &mut s);
    e8(r, &mut s);
    e9(r, &mut s);
    super::ddsperf::markdown(&r.ddsperf, &mut s);
    super::fairness_report::markdown(&r.fairness, &mut s);
    super::hol_report::markdown(&r.hol, &mut s);
    super::many_topics_report::markdown(&r.many_topics, &mut s);
    let failed: Vec<_> = r.measurements.iter().filter(|m| !m.ok()).collect();
    if !failed.is_empty() {
        let _ = writeln!(s, "## Runs that failed\n");
        for m in failed {
            let _ = writeln!(
                s,
                "- {} {} {} {}: {}",
                m.experiment,
                m.label,
                m.load.kind,
                size(m.load.size),
                m.error
                    .as_deref()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("")
            );
        }
        s.push('\n');
    }
    s
}

fn e1(r: &Report, s: &mut String) {
    let ms = of(r, "e1");
    if ms.is_empty() {
        return;
    }
    let sys = systems(&ms);
    let _ = writeln!(
        s,
        "## E1: echo round trip vs message size (seed 000 Fig. 7)\n"
    );
    let _ = writeln!(
        s,
        "sensor_msgs/CompressedImage, reliable, one message in flight; median round trip (p99).\n"
    );
    let mut head = "| data size |".to_string();
    for x in &sys {
        let _ = write!(head, " {} |", x.label());
    }
    head += " roam added over native (proxy to proxy / 1 router) | roam / zenoh (TCP) (proxy to proxy / 1 router) |";
    let _ = writeln!(s, "{head}\n|{}", "---|".repeat(sys.len() + 3));
    let mut sizes: Vec<usize> = ms.iter().map(|m| m.load.size).collect();
    sizes.dedup();
    for sz in sizes {
        let mut row = format!("| {} |", size(sz));
        for x in &sys {
            let m = find(&ms, *x, |m| m.load.size == sz);
            let _ = write!(
                row,
                " {} ({}) |",
                us(m.and_then(|m| m.rtt("median_us"))),
                us(m.and_then(|m| m.rtt("p99_us")))
            );
        }
        let med = |x: System| find(&ms, x, |m| m.load.size == sz).and_then(|m| m.rtt("median_us"));
        let added = |x: System| match (med(x), med(System::Native)) {
            (Some(a), Some(b)) => us(Some(a - b)),
            _ => "—".into(),
        };
        let _ = writeln!(
            row,
            " {} / {} | {} / {} |",
            added(System::ROAM_P2P),
            added(System::ROAM),
            ratio(med(System::ROAM_P2P), med(ZENOH_TCP)),
            ratio(med(System::ROAM), med(ZENOH_TCP))
        );
        s.push_str(&row);
    }
    s.push('\n');
    e1_fastdds(r, s);
}

/// E1 with Fast DDS source and echoing sink: native Fast DDS next to roam with Fast DDS nodes.
fn e1_fastdds(r: &Report, s: &mut String) {
    let ms = of_nodes(r, "e1", Vendor::FastDds);
    if ms.is_empty() {
        fastdds_note(r, s, "E1");
        return;
    }
    let sys = systems(&ms);
    let _ = writeln!(s, "With Fast DDS nodes (source and echoing sink on Fast DDS 2.9; roam's proxies are CycloneDDS): median round trip (p99), and roam against native Fast DDS.\n");
    let mut head = "| data size |".to_string();
    for x in &sys {
        let _ = write!(head, " {} |", Vendor::FastDds.label(*x));
    }
    head += " roam added over native Fast DDS (proxy to proxy / 1 router) | roam / native Fast DDS (proxy to proxy / 1 router) |";
    let _ = writeln!(s, "{head}\n|{}", "---|".repeat(sys.len() + 3));
    let mut sizes: Vec<usize> = ms.iter().map(|m| m.load.size).collect();
    sizes.dedup();
    for sz in sizes {
        let mut row = format!("| {} |", size(sz));
        for x in &sys {
            let m = find(&ms, *x, |m| m.load.size == sz);
            let _ = write!(
                row,
                " {} ({}) |",
                us(m.and_then(|m| m.rtt("median_us"))),
                us(m.and_then(|m| m.rtt("p99_us")))
            );
        }
        let med = |x: System| find(&ms, x, |m| m.load.size == sz).and_then(|m| m.rtt("median_us"));
        let added = |x: System| match (med(x), med(System::Native)) {
            (Some(a), Some(b)) => us(Some(a - b)),
            _ => "—".into(),
        };
        let _ = writeln!(
            row,
            " {} / {} | {} / {} |",
            added(System::ROAM_P2P),
            added(System::ROAM),
            ratio(med(System::ROAM_P2P), med(System::Native)),
            ratio(med(System::ROAM), med(System::Native))
        );
        s.push_str(&row);
    }
    s.push('\n');
}

fn e2(r: &Report, s: &mut String) {
    let ms = of(r, "e2");
    if ms.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "## E2: throughput of 1000-byte messages (seed 000 Table I)\n"
    );
    let _ = writeln!(s, "std_msgs/String of 1000 bytes, reliable, keep-all, published as fast as the writer may; rate measured at the sink. Rows with Fast DDS nodes compare with native Fast DDS in *vs native*.\n");
    let _ = writeln!(s, "| system | messages/s | Mbit/s | vs native | vs zenoh (TCP) | lost | duplicates | reordered | one-way median (p99) |\n|---|---|---|---|---|---|---|---|---|");
    let all: Vec<&Measurement> = ms
        .iter()
        .copied()
        .chain(of_nodes(r, "e2", Vendor::FastDds))
        .collect();
    let rate = |x: System, nodes: Vendor| {
        all.iter()
            .find(|m| m.system == x && m.nodes == nodes)
            .and_then(|m| m.sink_f(&["rate"]))
    };
    for m in &all {
        let mine = m.sink_f(&["rate"]);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} ({}) |",
            m.label,
            mine.map_or("—".into(), |v| format!("{v:.0}")),
            m.sink_f(&["mbit_s"])
                .map_or("—".into(), |v| format!("{v:.0}")),
            ratio(mine, rate(System::Native, m.nodes)),
            if m.nodes == Vendor::CycloneDds {
                ratio(mine, rate(ZENOH_TCP, Vendor::CycloneDds))
            } else {
                "—".into()
            },
            m.lost().map_or("—".into(), |v| format!("{v:.0}")),
            m.dups().map_or("—".into(), |v| format!("{v:.0}")),
            m.sink_f(&["counts", "reordered"])
                .map_or("—".into(), |v| format!("{v:.0}")),
            us(m.sink_f(&["one_way", "median_us"])),
            us(m.sink_f(&["one_way", "p99_us"])),
        );
    }
    s.push('\n');
    if of_nodes(r, "e2", Vendor::FastDds).is_empty() {
        fastdds_note(r, s, "E2");
    }
}

fn e3(r: &Report, s: &mut String) {
    let ms = of(r, "e3");
    if ms.is_empty() {
        return;
    }
    let clear = System::Roam {
        routers: 1,
        encrypt: false,
        links: Links::Quic,
    };
    let _ = writeln!(
        s,
        "## E3: latency vs size, sealed vs clear text (seed 002)\n"
    );
    let _ = writeln!(s, "sensor_msgs/LaserScan with 10^k ranges (4 bytes each), echo round trip, median (p99). Encryption cost = sealed minus clear text, relative to the clear-text round trip.\n");
    let _ = writeln!(s, "| ranges | native | roam, clear text | roam, sealed | encryption cost |\n|---|---|---|---|---|");
    let mut sizes: Vec<usize> = ms.iter().map(|m| m.load.size).collect();
    sizes.dedup();
    for sz in sizes {
        let g = |x: System, q: &str| find(&ms, x, |m| m.load.size == sz).and_then(|m| m.rtt(q));
        let cost = match (g(System::ROAM, "median_us"), g(clear, "median_us")) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:+.1}%", (a - b) / b * 100.0),
            _ => "—".into(),
        };
        let _ = writeln!(
            s,
            "| {sz} | {} ({}) | {} ({}) | {} ({}) | {cost} |",
            us(g(System::Native, "median_us")),
            us(g(System::Native, "p99_us")),
            us(g(clear, "median_us")),
            us(g(clear, "p99_us")),
            us(g(System::ROAM, "median_us")),
            us(g(System::ROAM, "p99_us")),
        );
    }
    s.push('\n');
}

fn stream_table(ms: &[&Measurement], s: &mut String) {
    let _ = writeln!(s, "| system | message | rate asked | received / sent | lost | one-way median | p99 | max |\n|---|---|---|---|---|---|---|---|");
    for m in ms {
        let _ = writeln!(
            s,
            "| {} | {} {} | {} Hz | {} / {} | {} | {} | {} | {} |",
            m.label,
            m.load.kind,
            size(m.load.size),
            m.load.rate,
            m.sink_f(&["counts", "received"])
                .map_or("—".into(), |v| format!("{v:.0}")),
            m.load.count,
            m.lost().map_or("—".into(), |v| format!("{v:.0}")),
            us(m.sink_f(&["one_way", "median_us"])),
            us(m.sink_f(&["one_way", "p99_us"])),
            us(m.sink_f(&["one_way", "max_us"])),
        );
    }
    s.push('\n');
}

fn e4(r: &Report, s: &mut String) {
    let ms = of(r, "e4");
    if ms.is_empty() {
        return;
    }
    let _ = writeln!(s, "## E4: latency vs publish rate (seed 004)\n");
    let _ = writeln!(s, "4 KiB CompressedImage at 200 Hz - 10 kHz and a 640x480 mono8 Image (307,200 bytes) at 5-60 Hz, reliable, keep-all; one-way latency at the sink (same host clock). The knee is where latency climbs by orders of magnitude.\n");
    stream_table(&ms, s);
}

fn e5(r: &Report, s: &mut String) {
    let ms = of(r, "e5");
    if ms.is_empty() {
        return;
    }
    let _ = writeln!(s, "## E5: 13 MB messages (seed 000's failure case)\n");
    let _ = writeln!(
        s,
        "sensor_msgs/Image with 13,000,000 bytes of data, reliable, keep-all.\n"
    );
    stream_table(&ms, s);
}

fn e6(r: &Report, s: &mut String) {
    let ms = of(r, "e6");
    if ms.is_empty() {
        return;
    }
    let _ = writeln!(s, "## E6: wide-area paths (seed 003)\n");
    let _ = writeln!(s, "`roam-wan-relay` between the two sides (roam: between proxy A and the router; Zenoh: between the bridges) adds the one-way delay, jitter and loss in each direction (docs/wan-relay.md). Echo of a 1 KiB CompressedImage and of a ~1.08 MB PointCloud2 (seed 003), one in flight. roam's QUIC links run the shipped default (the tolerant Cubic: no option set), plain Cubic (`link.congestion: cubic`, the default before; left out at 3% loss, where a point cloud takes minutes) or quinn's BBR (`link.congestion: bbr`, unfair to other flows: E11).\n");
    let _ = writeln!(s, "Read the TCP rows with care: the relay terminates TCP on each side, so TCP's congestion control never sees the delay or the loss (no slow start over the path, a loss is only a stall); the QUIC rows are relayed datagram by datagram and do see them. The first message of each run opens the congestion window, hence the p99 and max of the large messages.\n");
    let _ = writeln!(
        s,
        "| path | message | system | median round trip | p99 | max | lost | QUIC packets lost (congestion events) |\n|---|---|---|---|---|---|---|---|"
    );
    for m in &ms {
        let _ = writeln!(
            s,
            "| {} | {} {} | {} | {} | {} | {} | {} | {} |",
            m.wan.map_or("", |w| w.label),
            m.load.kind,
            size(m.load.size),
            m.label,
            us(m.rtt("median_us")),
            us(m.rtt("p99_us")),
            us(m.rtt("max_us")),
            m.lost().map_or("—".into(), |v| format!("{v:.0}")),
            hop_report::quic_losses(m),
        );
    }
    let _ = writeln!(s, "\n{E6_NOTE}\n");
}

const E6_NOTE: &str = "Lost: not echoed back before the run's deadline. QUIC packets lost: summed over roam's QUIC link ends, as their connections counted them (a spurious loss counts too). ECDF plots: `bench/results/plots/e6-wan-ecdf.png` (1 KiB) and `bench/results/plots/e6-wan-ecdf-pointcloud.png` (1.08 MB).";

fn e7(r: &Report, s: &mut String) {
    let ms = of(r, "e1");
    let sz = 8 * 1024;
    let at: Vec<&Measurement> = ms
        .iter()
        .copied()
        .filter(|m| m.load.size == sz && m.ok())
        .collect();
    if at.is_empty() {
        return;
    }
    let _ = writeln!(s, "## E7: latency breakdown (seed 003 Table I)\n");
    let _ = writeln!(s, "Round trips of 8 KiB (E1), all statistics:\n");
    let _ = writeln!(
        s,
        "| system | mean | median | min | max | std dev | p99 |\n|---|---|---|---|---|---|---|"
    );
    for m in &at {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            m.label,
            us(m.rtt("mean_us")),
            us(m.rtt("median_us")),
            us(m.rtt("min_us")),
            us(m.rtt("max_us")),
            us(m.rtt("std_us")),
            us(m.rtt("p99_us"))
        );
    }
    let med = |x: System| {
        at.iter()
            .find(|m| m.system == x)
            .and_then(|m| m.rtt("median_us"))
    };
    let _ = writeln!(s, "\nPer component, from the differences of medians (a round trip crosses every component twice, so each is halved to one crossing):\n");
    let _ = writeln!(s, "| component | one crossing |\n|---|---|");
    if let Some(n) = med(System::Native) {
        let _ = writeln!(
            s,
            "| DDS between two participants (native round trip / 2) | {} |",
            us(Some(n / 2.0))
        );
        if let Some(r1) = med(System::ROAM) {
            let _ = writeln!(
                s,
                "| two proxies + one router + two extra DDS hops ((roam - native) / 2) | {} |",
                us(Some((r1 - n) / 2.0))
            );
            if let Some(r2) = med(System::Roam {
                routers: 2,
                encrypt: true,
                links: Links::Quic,
            }) {
                let _ = writeln!(
                    s,
                    "| one more router and link ((2 routers - 1 router) / 2) | {} |",
                    us(Some((r2 - r1) / 2.0))
                );
            }
        }
    }
    for m in at
        .iter()
        .filter(|m| matches!(m.system, System::Roam { .. }))
    {
        hop_report::in_path(m, s);
    }
    let _ = writeln!(s, "\nSealing and opening alone cost 0.3-0.4 µs per KiB message (ROUTING-PLANE.md); E3 shows encryption's share of the whole path. ECDF of these round trips: `bench/results/plots/e7-ecdf-8k.png`.\n");
}

fn e8(r: &Report, s: &mut String) {
    let firsts: Vec<&Measurement> = r
        .measurements
        .iter()
        .filter(|m| m.ok() && m.wan.is_none())
        .collect();
    if firsts.is_empty() {
        return;
    }
    let _ = writeln!(s, "## E8: control plane\n");
    let _ = writeln!(s, "Start to first delivery: from starting the system's first process (router, bridge) to the source's first warm-up message coming back through the sink (includes starting both load generator processes and DDS discovery); median over every run of the suite.\n");
    let _ = writeln!(s, "| system | runs | median start to first echo | median source start to first echo |\n|---|---|---|---|");
    // One row per system and nodes: the label names both.
    let mut labels: Vec<&str> = Vec::new();
    for m in &firsts {
        if !labels.contains(&m.label.as_str()) {
            labels.push(&m.label);
        }
    }
    for x in labels {
        let mut a: Vec<f64> = firsts
            .iter()
            .filter(|m| m.label == x)
            .map(|m| m.start_to_first_delivery_ms)
            .collect();
        let mut b: Vec<f64> = firsts
            .iter()
            .filter(|m| m.label == x)
            .filter_map(|m| f(&m.source, &["path_up_ms"]))
            .collect();
        a.sort_by(f64::total_cmp);
        b.sort_by(f64::total_cmp);
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} ms | {:.0} ms |",
            x,
            a.len(),
            a.get(a.len() / 2).copied().unwrap_or(0.0),
            b.get(b.len() / 2).copied().unwrap_or(0.0)
        );
    }
    s.push('\n');
    if let Some(rp) = &r.routing_plane {
        control_plane(rp, s);
    }
}

/// E8's routing-plane part, quoted from `roam-bench`'s results: subscribe latency across
/// three routers and RIB operations at 10,000 and 1,000,000 names (seed 000: 4 ms to publish,
/// 2 ms to subscribe with 10,000 records; 2.4 ms from start to first message).
fn control_plane(rp: &Value, s: &mut String) {
    let date = rp.get("date").and_then(Value::as_str).unwrap_or("?");
    let _ = writeln!(
        s,
        "From `roam-bench` ([ROUTING-PLANE.md](ROUTING-PLANE.md), run of {date}):\n"
    );
    let _ = writeln!(s, "| what | figure |\n|---|---|");
    if let Some(sub) = rp.pointer("/results/subscribe") {
        let routers = f(sub, &["routers"]).unwrap_or(0.0);
        let _ = writeln!(
            s,
            "| subscribe across {routers:.0} routers: until the publisher hears of it (p50 / p90) | {} / {} |",
            us(f(sub, &["demand_p50_us"])),
            us(f(sub, &["demand_p90_us"]))
        );
        let _ = writeln!(
            s,
            "| subscribe across {routers:.0} routers: until the first message arrives (p50 / p90) | {} / {} |",
            us(f(sub, &["first_message_p50_us"])),
            us(f(sub, &["first_message_p90_us"]))
        );
    }
    for rib in rp
        .pointer("/results/routing_core/rib")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let names = f(rib, &["names"]).unwrap_or(0.0);
        let ns = |k: &str| f(rib, &[k]).map_or("—".into(), |v| format!("{v:.0} ns"));
        let _ = writeln!(
            s,
            "| RIB of {names:.0} names: publish / subscribe one name in the routing core | {} / {} |",
            ns("publish_one_ns"),
            ns("subscribe_one_ns")
        );
    }
    s.push('\n');
}

fn e9(r: &Report, s: &mut String) {
    let ms: Vec<&Measurement> = r
        .measurements
        .iter()
        .filter(|m| m.experiment == "e2")
        .collect();
    if ms.is_empty() {
        return;
    }
    let _ = writeln!(s, "## E9: CPU and memory under load\n");
    let _ = writeln!(s, "During E2 (unpaced 1000-byte messages): CPU in percent of one core over the run (from the source's start to its report), CPU time per message the sink received (µs of user + system time of that process, divided by the messages delivered: what each process spends on one message end to end), peak resident memory. The source often ends before its window closes and is then missing.\n");
    let _ = writeln!(
        s,
        "| system | process | CPU | CPU per message | peak RSS |\n|---|---|---|---|---|"
    );
    for m in &ms {
        let received = m.sink_f(&["counts", "received"]).filter(|n| *n > 0.0);
        for u in &m.usage {
            let per_message = received
                .map_or("—".into(), |n| format!("{:.1} µs", u.cpu_seconds * 1e6 / n));
            let _ = writeln!(
                s,
                "| {} | {} | {:.0}% | {per_message} | {:.1} MB |",
                m.label, u.process, u.cpu_percent, u.peak_rss_mb
            );
        }
    }
    s.push('\n');
}

/// A few lines for the terminal.
pub fn summary(r: &Report) -> String {
    let mut s = String::new();
    for m in &r.measurements {
        let fig = if m.load.echo {
            format!("rtt median {}", us(m.rtt("median_us")))
        } else {
            format!(
                "{} msg/s, one-way median {}",
                m.sink_f(&["rate"])
                    .map_or("—".into(), |v| format!("{v:.0}")),
                us(m.sink_f(&["one_way", "median_us"]))
            )
        };
        let _ = writeln!(
            s,
            "{} {:<28} {:>16} {:>9}  {fig}, lost {}{}",
            m.experiment,
            m.label,
            m.load.kind.as_str(),
            size(m.load.size),
            m.lost().map_or("—".into(), |v| format!("{v:.0}")),
            m.error.as_ref().map_or(String::new(), |e| format!(
                "  FAILED: {}",
                e.lines().next().unwrap_or("")
            ))
        );
    }
    s
}
