//! E10: Debian's `ddsperf` (CycloneDDS's own throughput tool, not the lab's load generator)
//! publishing as fast as it can, within one domain (native) and through roam (its keyed
//! `DDSPerfRDataKS` topic forwarded by `dds_topic:` entries). Besides the rates: the samples
//! ddsperf saw missing, the datagrams roam's QUIC links lost on loopback, CPU per message of
//! every roam process, and whether their memory comes back near idle within a minute of the
//! burst; and ddsperf's own CPU (its per-second thread loads), which says what the ends leave
//! the processes in between on this machine (`report::budget`). The Zenoh bridge has no row:
//! zenoh-plugin-ros2dds forwards ROS 2 topics only.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use roam_bench::procs::{rss_kb, Proc, Usage};
use serde::Serialize;

use super::hops::Hop;
use super::report::budget::{between_cells, CpuPerMessage, GOAL_SHARE};
use super::systems::{Lab, System, Vendor};

const DDSPERF: &str = "/usr/bin/ddsperf";
const TOPIC: &str = "dds:DDSPerfRDataKS";
/// How long memory may take to come back near idle after the burst.
const SETTLE: Duration = Duration::from_secs(60);

/// One process's memory around the burst.
#[derive(Clone, Debug, Serialize)]
pub struct Memory {
    pub process: String,
    /// Before the burst, once ddsperf's subscriber matched.
    pub idle_mb: f64,
    pub peak_mb: f64,
    /// When it came back near idle, or at the end of [`SETTLE`].
    pub after_mb: f64,
    /// Seconds after the burst until within 25% (at least 10 MB) of idle; `None`: not
    /// within a minute.
    pub back_near_idle_s: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DdsperfRun {
    pub system: System,
    pub label: String,
    pub size: usize,
    pub seconds: u64,
    /// Median of ddsperf's per-second rates (first and last, partial, seconds left out).
    pub published_per_s: Option<f64>,
    pub received_per_s: Option<f64>,
    /// ddsperf subscriber's totals: samples received, and sequence gaps.
    pub received: u64,
    pub lost: u64,
    /// Summed over roam's links (both ends): QUIC datagrams declared lost, congestion events.
    pub link_lost_packets: Option<f64>,
    pub link_congestion_events: Option<f64>,
    pub cpu: Vec<Usage>,
    /// CPU time per received message, each roam process (microseconds).
    pub cpu_us_per_message: Vec<(String, f64)>,
    /// ddsperf's pub and sub together, percent of one core: the medians of the thread loads
    /// each prints every second (the sub's over the seconds it received in).
    pub ends_cpu_percent: Option<f64>,
    pub memory: Vec<Memory>,
    pub error: Option<String>,
}

/// Whether `ddsperf` is installed (Debian's cyclonedds-tools).
pub fn available() -> bool {
    Path::new(DDSPERF).is_file()
}

/// One run: `system` started fresh, ddsperf's subscriber on side B, its publisher on side A
/// for `seconds` at `size` bytes.
pub fn run(lab: &Lab, system: System, size: usize, seconds: u64) -> DdsperfRun {
    let mut r = DdsperfRun {
        system,
        label: system.label(),
        size,
        seconds,
        published_per_s: None,
        received_per_s: None,
        received: 0,
        lost: 0,
        link_lost_packets: None,
        link_congestion_events: None,
        cpu: Vec::new(),
        cpu_us_per_message: Vec::new(),
        ends_cpu_percent: None,
        memory: Vec::new(),
        error: None,
    };
    if let Err(e) = measure(lab, &mut r) {
        r.error = Some(e);
    }
    r
}

fn measure(lab: &Lab, r: &mut DdsperfRun) -> Result<(), String> {
    let mut running = lab.start(r.system, Vendor::CycloneDds, TOPIC, None)?;
    let ddsperf = Path::new(DDSPERF);
    let arg = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let (a, b) = (running.domain_a.to_string(), running.domain_b.to_string());
    // The subscriber first, running long enough to see all of the burst; then the publisher
    // (unlimited rate), once the subscriber is up.
    let sub_for = (r.seconds + 10).to_string();
    let sub = Proc::start(
        "ddsperf-sub",
        ddsperf,
        &arg(&["-i", &b, "-D", &sub_for, "sub"]),
    )?;
    sub.wait_line(Duration::from_secs(10), |l| l.contains("participant"))?;
    let idle: Vec<(String, u64)> = running
        .procs
        .iter()
        .map(|p| (p.name.clone(), rss_kb(p.pid()).unwrap_or(0)))
        .collect();
    let size = r.size.to_string();
    let secs = r.seconds.to_string();
    let publisher = Proc::start(
        "ddsperf-pub",
        ddsperf,
        &arg(&["-i", &a, "-D", &secs, "pub", "size", &size]),
    )?;
    for p in &mut running.procs {
        p.begin_window();
    }
    let window = Instant::now();
    // Sample memory while the publisher runs (its lines are read afterwards).
    let end = Instant::now() + Duration::from_secs(r.seconds + 5);
    let mut pub_lines = Vec::new();
    while Instant::now() < end {
        for p in &mut running.procs {
            p.sample();
        }
        let (got, exited) = publisher.lines_for(Duration::from_millis(250));
        pub_lines.extend(got);
        if exited {
            break;
        }
    }
    let window_s = window.elapsed().as_secs_f64();
    r.cpu = running
        .procs
        .iter_mut()
        .filter_map(|p| p.end_window())
        .collect();
    let (sub_lines, _) = sub.lines_for(Duration::from_secs(20));
    r.published_per_s = median(steady(
        pub_lines.iter().filter_map(|l| pub_rate(l)).collect(),
    ));
    let stats: Vec<SubLine> = sub_lines.iter().filter_map(|l| sub_line(l)).collect();
    let pub_load = median(steady(
        pub_lines
            .iter()
            .filter_map(|l| thread_loads(l))
            .map(|(_, load)| load)
            .collect(),
    ));
    // The sub's loads in the seconds it received in (it runs on for 10 s after the burst).
    let receiving: Vec<&str> = stats
        .iter()
        .filter(|s| s.delta > 0)
        .map(|s| s.time.as_str())
        .collect();
    let sub_load = median(steady(
        sub_lines
            .iter()
            .filter_map(|l| thread_loads(l))
            .filter(|(time, _)| receiving.contains(time))
            .map(|(_, load)| load)
            .collect(),
    ));
    r.ends_cpu_percent = pub_load.zip(sub_load).map(|(p, s)| p + s);
    if let Some(last) = stats.last() {
        r.received = last.total;
        r.lost = last.lost;
    }
    r.received_per_s = median(steady(
        stats
            .iter()
            .filter(|s| s.delta > 0)
            .map(|s| s.rate)
            .collect(),
    ));
    if r.received > 0 {
        let secs = window_s;
        r.cpu_us_per_message = r
            .cpu
            .iter()
            .map(|u| {
                let cpu_s = u.cpu_percent / 100.0 * secs;
                (u.process.clone(), cpu_s * 1e6 / r.received as f64)
            })
            .collect();
    }
    r.memory = settle(&running, &idle);
    let hops: Vec<Hop> = running.stop();
    let sum = |key: &str| -> Option<f64> {
        let v: Vec<f64> = hops
            .iter()
            .filter_map(|h| h.path.get(key).copied())
            .collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    r.link_lost_packets = sum("lost_packets");
    r.link_congestion_events = sum("congestion_events");
    if r.received == 0 {
        return Err(format!(
            "ddsperf's subscriber received nothing\n{}",
            sub.log_tail()
        ));
    }
    Ok(())
}

/// Polls each roam process's memory after the burst until every one is near its idle
/// figure, or for [`SETTLE`].
fn settle(running: &super::systems::Running, idle: &[(String, u64)]) -> Vec<Memory> {
    let start = Instant::now();
    let near = |idle_kb: u64, now_kb: u64| now_kb <= idle_kb + (idle_kb / 4).max(10 * 1024);
    let mut back: Vec<Option<f64>> = vec![None; running.procs.len()];
    let mut peak: Vec<u64> = vec![0; running.procs.len()];
    let mut last: Vec<u64> = vec![0; running.procs.len()];
    loop {
        for (i, p) in running.procs.iter().enumerate() {
            let kb = rss_kb(p.pid()).unwrap_or(0);
            last[i] = kb;
            peak[i] = peak[i].max(kb);
            if back[i].is_none() && near(idle[i].1, kb) {
                back[i] = Some(start.elapsed().as_secs_f64());
            }
        }
        if back.iter().all(Option::is_some) || start.elapsed() >= SETTLE {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    running
        .procs
        .iter()
        .enumerate()
        .map(|(i, p)| Memory {
            process: p.name.clone(),
            idle_mb: idle[i].1 as f64 / 1024.0,
            peak_mb: peak[i] as f64 / 1024.0,
            after_mb: last[i] as f64 / 1024.0,
            back_near_idle_s: back[i],
        })
        .collect()
}

/// The per-second rates without the first and last (partial) seconds, when there are more.
fn steady(v: Vec<f64>) -> Vec<f64> {
    if v.len() > 2 {
        v[1..v.len() - 1].to_vec()
    } else {
        v
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// A value with ddsperf's unit prefix (`401k`, `1.2M`, `950`).
fn scaled(text: &str) -> Option<f64> {
    let (num, mult) = match text.chars().last()? {
        'k' => (&text[..text.len() - 1], 1e3),
        'M' => (&text[..text.len() - 1], 1e6),
        'G' => (&text[..text.len() - 1], 1e9),
        _ => (text, 1.0),
    };
    num.parse::<f64>().ok().map(|v| v * mult)
}

/// A publisher line, `[8494] 1.000  401k/s   0n |@___...| 0% 100m`: samples per second.
fn pub_rate(line: &str) -> Option<f64> {
    let mut words = line.split_whitespace();
    words.next()?.strip_prefix('[')?;
    words.next()?.parse::<f64>().ok()?;
    scaled(words.next()?.strip_suffix("/s")?)
}

/// A subscriber line, `[8495] 1.000  size 1024 total 383512 lost 0 delta 383512 lost 0
/// rate 383.48 kS/s 3141.44 Mb/s (...)`.
struct SubLine {
    /// The second it reports, as ddsperf prints it (`2.001`).
    time: String,
    total: u64,
    lost: u64,
    delta: u64,
    rate: f64,
}

fn sub_line(line: &str) -> Option<SubLine> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let after = |key: &str| w.iter().position(|x| *x == key).and_then(|i| w.get(i + 1));
    let rate_at = w.iter().position(|x| *x == "rate")?;
    let unit = *w.get(rate_at + 2)?;
    let mult = match unit {
        "S/s" => 1.0,
        "kS/s" => 1e3,
        "MS/s" => 1e6,
        _ => return None,
    };
    Some(SubLine {
        time: (*w.get(1)?).to_string(),
        total: after("total")?.parse().ok()?,
        lost: after("lost")?.parse().ok()?,
        delta: after("delta")?.parse().ok()?,
        rate: w.get(rate_at + 1)?.parse::<f64>().ok()? * mult,
    })
}

/// A process's load line, `[8495] 2.000  rss:7.1MB vcsw:27138 ivcsw:3551 tev:0%+2%
/// recvUC:43%+16%`: the second it reports, and its threads' user + system loads summed
/// (percent of one core).
fn thread_loads(line: &str) -> Option<(&str, f64)> {
    let mut words = line.split_whitespace();
    words.next()?.strip_prefix('[')?;
    let time = words.next()?;
    words.next()?.strip_prefix("rss:")?;
    let mut sum = 0.0;
    for w in words {
        let Some((_, load)) = w.split_once(':') else {
            continue;
        };
        let Some((user, system)) = load.split_once('+') else {
            continue;
        };
        let percent = |v: &str| v.strip_suffix('%')?.parse::<f64>().ok();
        sum += percent(user)? + percent(system)?;
    }
    Some((time, sum))
}

/// CPU per message received: ddsperf's pub and sub, and roam's processes between them.
fn cpu_per_message(r: &DdsperfRun) -> Option<CpuPerMessage> {
    let rate = r.received_per_s.filter(|&v| v > 0.0)?;
    Some(CpuPerMessage {
        ends_us: r.ends_cpu_percent? / 100.0 * 1e6 / rate,
        between_us: r.cpu_us_per_message.iter().map(|(_, us)| us).sum(),
    })
}

/// The E10 section of bench/RESULTS.md.
pub fn markdown(runs: &[DdsperfRun], cores: usize, s: &mut String) {
    if runs.is_empty() {
        return;
    }
    let _ = writeln!(s, "## E10: ddsperf, unlimited rate\n");
    let _ = writeln!(
        s,
        "Debian's `ddsperf` (CycloneDDS's own tool) `pub size S` as fast as it can for {} s, `sub` on the other side: \
         within one domain (native) and through roam (its keyed `DDSPerfRDataKS` topic forwarded by `dds_topic:` entries). \
         Rates are medians of ddsperf's per-second figures; lost = ddsperf's sequence gaps; link lost = QUIC datagrams \
         roam's links declared lost (loopback). CPU per message = CPU time of each roam process over the burst / samples \
         received. Memory: RSS before the burst, its peak, and how long until within 25% (at least 10 MB) of idle \
         (checked for a minute). The Zenoh bridge has no row: it forwards ROS 2 topics only.\n",
        runs[0].seconds
    );
    let _ = writeln!(
        s,
        "| system | size | published/s | received/s | of native | received | lost | link lost (congestion events) | CPU per message | memory idle -> peak -> after |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in runs {
        let native = runs
            .iter()
            .find(|n| n.size == r.size && n.system == System::Native)
            .and_then(|n| n.received_per_s);
        let rate = |v: Option<f64>| v.map_or("—".into(), |v| format!("{:.0}", v));
        let of_native = match (r.received_per_s, native) {
            (Some(v), Some(n)) if n > 0.0 => format!("{:.0}%", v / n * 100.0),
            _ => "—".into(),
        };
        let link = match (r.link_lost_packets, r.link_congestion_events) {
            (Some(l), Some(c)) => format!("{l:.0} ({c:.0})"),
            _ => "—".into(),
        };
        let cpu = if r.cpu_us_per_message.is_empty() {
            "—".into()
        } else {
            r.cpu_us_per_message
                .iter()
                .map(|(p, us)| format!("{p} {us:.1} µs"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mem = if r.memory.is_empty() {
            "—".into()
        } else {
            r.memory
                .iter()
                .map(|m| {
                    format!(
                        "{} {:.0} -> {:.0} -> {:.0} MB ({})",
                        m.process,
                        m.idle_mb,
                        m.peak_mb,
                        m.after_mb,
                        m.back_near_idle_s
                            .map_or("not near idle after 60 s".into(), |t| format!(
                                "near idle after {t:.0} s"
                            ))
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let _ = writeln!(
            s,
            "| {} | {} B | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.label,
            r.size,
            rate(r.published_per_s),
            rate(r.received_per_s),
            of_native,
            r.received,
            r.lost,
            link,
            cpu,
            mem
        );
        if let Some(e) = &r.error {
            let _ = writeln!(s, "\n(failed: {})\n", e.lines().next().unwrap_or(""));
        }
    }
    s.push('\n');
    budget_markdown(runs, cores, s);
}

/// What 90% of native leaves for roam's processes on this machine, per size.
fn budget_markdown(runs: &[DdsperfRun], cores: usize, s: &mut String) {
    let native = |size: usize| {
        runs.iter()
            .find(|n| n.size == size && n.system == System::Native)
            .and_then(|n| n.received_per_s)
    };
    let rows: Vec<(&DdsperfRun, CpuPerMessage, f64)> = runs
        .iter()
        .filter_map(|r| Some((r, cpu_per_message(r)?, native(r.size)?)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "What {:.0}% of native leaves for roam's processes on this machine ({cores} cores): at that share of native's rate each \
         message has cores / rate of the machine's CPU in all; ddsperf's pub and sub (their threads' loads as ddsperf prints them \
         each second) spend theirs first, and what is left is what every process in between may spend together. Busy = the share \
         of all cores the row's processes kept busy at its rate.\n",
        GOAL_SHARE * 100.0
    );
    let _ = writeln!(
        s,
        "| system | size | received/s | CPU per message: ddsperf / roam | busy | roam may spend at {:.0}% of native | roam would need |\n|---|---|---|---|---|---|---|",
        GOAL_SHARE * 100.0
    );
    for (r, cpu, native_rate) in rows {
        let Some(rate) = r.received_per_s else {
            continue;
        };
        let (between, need) =
            between_cells(&cpu, r.system == System::Native, cores, native_rate, 2);
        let _ = writeln!(
            s,
            "| {} | {} B | {:.0} | {:.2} µs / {} | {:.0}% | {:.2} µs | {} |",
            r.label,
            r.size,
            rate,
            cpu.ends_us,
            between,
            cpu.busy(cores, rate) * 100.0,
            cpu.between_allowed_us(cores, native_rate),
            need
        );
    }
    s.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ddsperf_lines() {
        let l = "[8495] 2.001  size 1024 total 832200 lost 0 delta 448688 lost 0 rate 448.36 kS/s 3672.93 Mb/s (83.16 kS/s 681.23 Mb/s)";
        let s = sub_line(l).expect("a subscriber line");
        assert_eq!((s.total, s.lost, s.delta), (832200, 0, 448688));
        assert!((s.rate - 448_360.0).abs() < 1.0);
        assert!(sub_line("[8495] 2.001  rss:7.4MB vcsw:12380 ivcsw:1497").is_none());
        let p = "[8494] 1.000  401k/s   0n |@___....__....................|   0% 100m";
        assert_eq!(pub_rate(p), Some(401_000.0));
        assert_eq!(pub_rate("[8494] 1.000  rss:9.0MB vcsw:3072"), None);
        assert_eq!(median(steady(vec![1.0, 5.0, 6.0, 7.0, 2.0])), Some(6.0));
        assert_eq!(s.time, "2.001");
        let load = "[15416] 2.000  rss:7.1MB vcsw:27138 ivcsw:3551 tev:0%+2% recvUC:43%+16%";
        assert_eq!(thread_loads(load), Some(("2.000", 61.0)));
        assert_eq!(
            thread_loads("[15427] 3.000  rss:10.0MB vcsw:3035 ivcsw:226 recvUC:3%+3% pub:36%+53%"),
            Some(("3.000", 95.0))
        );
        assert_eq!(thread_loads(p), None);
        assert_eq!(thread_loads(l), None);
    }
}
