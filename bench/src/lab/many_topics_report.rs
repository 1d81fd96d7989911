//! The E13 section of bench/RESULTS.md: per system and topic count, what was delivered, the
//! one-way latency, and each process's CPU per message and per topic.

use std::fmt::Write as _;

use serde_json::Value;

use super::many_topics::{ManyTopicsRun, BYTES, HZ};
use super::report::us;

fn num(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, p| v.get(p))?.as_f64()
}

fn lookup(v: &[(String, f64)], process: &str) -> Option<f64> {
    v.iter().find(|(p, _)| p == process).map(|(_, x)| *x)
}

/// Where the time goes inside roam: each topic's p50 and p99 at each hop, median over the
/// topics (and the worst topic's p99).
fn stages(runs: &[ManyTopicsRun], s: &mut String) {
    let roam: Vec<&ManyTopicsRun> = runs.iter().filter(|r| !r.stages.is_empty()).collect();
    if roam.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nWhere the time goes in roam: the ages roam's proxies measured for each topic since the DDS \
         source timestamp, into the exporting proxy A (its DDS reader's callback), opened in the importing \
         proxy B (after the link) and written to DDS by B: each topic's p50 / p99, median over the topics, \
         and the worst topic's p99. They cover the proxies' whole run (discovery, warm-up and settling \
         included) and come from histograms with coarse buckets. Between A and B, the age (since A sealed \
         it) of all data as a router took it in from A and as B took it in from its link: p50 / p99.\n"
    );
    let _ = writeln!(
        s,
        "| system | topics | into proxy A | at the router | at B's link | opened in B | written by B |\n\
         |---|---|---|---|---|---|---|"
    );
    for r in roam {
        let cell = |process: &str, age: &str| {
            r.stages
                .iter()
                .find(|st| st.process == process && st.age == age)
                .map_or("—".into(), |st| {
                    format!(
                        "{} / {} (worst {})",
                        us(Some(st.p50_us)),
                        us(Some(st.p99_us)),
                        us(Some(st.worst_p99_us))
                    )
                })
        };
        let link = |process: &str, peer: &str| {
            r.link_ages
                .iter()
                .find(|l| l.process == process && l.peer == peer)
                .map_or("—".into(), |l| {
                    format!("{} / {}", us(Some(l.p50_us)), us(Some(l.p99_us)))
                })
        };
        let routed = r.link_ages.iter().any(|l| l.process == "r1");
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.label,
            r.topics,
            cell("proxy-a", "dds_age_us"),
            link("r1", "proxy-a"),
            link("proxy-b", if routed { "r1" } else { "proxy-a" }),
            cell("proxy-b", "opened_age_us"),
            cell("proxy-b", "written_age_us"),
        );
    }
}

/// QUIC losses, and the kernel's drops at full link sockets where there were any.
fn link_lost(r: &ManyTopicsRun) -> String {
    let Some(lost) = r.link_lost_packets else {
        return "—".into();
    };
    let drops: Vec<String> = r
        .socket_drops
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(p, n)| format!("{p} {n}"))
        .collect();
    if drops.is_empty() {
        format!("{lost:.0}")
    } else {
        format!("{lost:.0} ({})", drops.join(", "))
    }
}

pub fn markdown(runs: &[ManyTopicsRun], s: &mut String) {
    let Some(first) = runs.first() else {
        return;
    };
    let _ = writeln!(s, "## E13: many topics (issue 18)\n");
    let _ = writeln!(
        s,
        "N topics (std_msgs/String of {BYTES} characters, reliable, keep-all) at {HZ} Hz each from one node \
         (one DDS participant, one writer per topic) to one node, the writes spread evenly over each period, \
         for {} s. roam's proxies forward every /roam_lab/ topic by pattern (`allow:`); the Zenoh bridge \
         routes every announced topic. Delivered / sent over all topics; topics complete = topics that \
         delivered every message. One-way latency p50 / p99 / max over every message (host clock). CPU \
         and peak memory over the measured part only (after every topic's path was up, so discovery and \
         route set-up are not in it): percent of one core, CPU time per delivered message, and percent of \
         a core per 100 topics at {HZ} Hz. `source-topics` and `sink-topics` are the load generators; the \
         native row is what they cost alone. Link lost = QUIC packets roam's links declared lost (loopback); \
         in brackets, when there were any, datagrams the kernel dropped for a full receive buffer on a \
         process's link socket.\n",
        first.seconds
    );
    let _ = writeln!(
        s,
        "| system | topics | delivered / sent | one-way p50 / p99 / max (n) | topics complete | source behind (max) | link lost |\n\
         |---|---|---|---|---|---|---|"
    );
    for r in runs {
        let sink = r.flow.as_ref().map(|f| &f.sink);
        let source = r.flow.as_ref().map(|f| &f.source);
        let sink_n = |p: &[&str]| sink.and_then(|v| num(v, p));
        let delivered = match (
            sink_n(&["counts", "received"]),
            sink_n(&["counts", "expected"]),
        ) {
            (Some(d), Some(e)) if e > 0.0 => format!("{d:.0} / {e:.0} ({:.1}%)", d / e * 100.0),
            _ => "—".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} / {} / {} ({}) | {} of {} | {} | {} |",
            r.label,
            r.topics,
            delivered,
            us(sink_n(&["one_way", "median_us"])),
            us(sink_n(&["one_way", "p99_us"])),
            us(sink_n(&["one_way", "max_us"])),
            sink_n(&["one_way", "count"]).map_or("—".into(), |n| format!("{n:.0}")),
            sink_n(&["topics_complete"]).map_or("—".into(), |n| format!("{n:.0}")),
            r.topics,
            source
                .and_then(|v| num(v, &["behind_ms_max"]))
                .map_or("—".into(), |v| format!("{v:.0} ms")),
            link_lost(r),
        );
    }
    s.push('\n');
    let _ = writeln!(
        s,
        "| system | topics | process | CPU (% of a core) | CPU per message | CPU per 100 topics | peak RSS |\n\
         |---|---|---|---|---|---|---|"
    );
    for r in runs {
        for u in &r.usage {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.1}% | {} | {} | {:.1} MB |",
                r.label,
                r.topics,
                u.process,
                u.cpu_percent,
                lookup(&r.cpu_us_per_message, &u.process)
                    .map_or("—".into(), |v| format!("{v:.1} µs")),
                lookup(&r.cpu_percent_per_100_topics, &u.process)
                    .map_or("—".into(), |v| format!("{v:.1}%")),
                u.peak_rss_mb
            );
        }
    }
    stages(runs, s);
    for r in runs.iter().filter(|r| r.error.is_some()) {
        let _ = writeln!(
            s,
            "\n(failed: {}, {} topics: {})",
            r.label,
            r.topics,
            r.error
                .as_deref()
                .and_then(|e| e.lines().next())
                .unwrap_or("")
        );
    }
    s.push('\n');
}
