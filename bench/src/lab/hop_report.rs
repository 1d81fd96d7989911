//! The report's tables built from what roam's own processes measured (their metrics
//! snapshots, read by `hops`): the in-path latency breakdown of E7 and the QUIC losses of E6.

use std::fmt::Write as _;

use super::measure::Measurement;
use super::measure::{REALM_ECHO_TOPIC, REALM_TOPIC};
use super::report::us;
use super::systems::{Links, System};

/// Packets roam's QUIC links lost and the congestion events they caused, summed over every
/// link end (each end counts what it sent), from the routers' and proxies' snapshots.
pub fn quic_losses(m: &Measurement) -> String {
    let paths: Vec<_> = m.hops.iter().filter(|h| !h.path.is_empty()).collect();
    if paths.is_empty() {
        return String::new();
    }
    let sum = |k: &str| -> f64 { paths.iter().filter_map(|h| h.path.get(k)).sum() };
    format!(
        "{:.0} of {:.0} ({:.0})",
        sum("lost_packets"),
        sum("sent_packets"),
        sum("congestion_events")
    )
}

/// E7 from inside the path: the ages roam's own processes measured at each hop (their
/// metrics snapshots), as differences of means (means add up; medians do not), for each direction.
pub fn in_path(m: &Measurement, s: &mut String) {
    let System::Roam { routers, links, .. } = m.system else {
        return;
    };
    let link = if links == Links::Tcp {
        "TCP+TLS"
    } else {
        "QUIC"
    };
    let routers: Vec<String> = (1..=routers).map(|i| format!("r{i}")).collect();
    let hop = |process: &str, kind: &str, of: &str, age: &str| {
        m.hops
            .iter()
            .find(|h| h.process == process && h.kind == kind && h.of == of)
            .and_then(|h| h.ages.get(age))
            .filter(|a| a.n > 0.0)
            .map(|a| a.mean)
    };
    // One direction: the exporting and importing proxy, the routers in order, the topic.
    let direction = |from: &str, to: &str, path: Vec<String>, topic: &str| {
        // Ages after the DDS hop count from the seal (the envelope's send time).
        let dds = hop(from, "export", topic, "dds_age_us");
        let mut cum = Vec::new();
        // Labels count routers in the order the data meets them, so one label fits both
        // directions.
        let mut prev = from.to_string();
        for (i, r) in path.iter().enumerate() {
            let label = match i {
                0 => format!("{link} link: exporting proxy to the first router"),
                _ => format!("{link} link: router {i} to router {} on the way", i + 1),
            };
            cum.push((label, hop(r, "link", &prev, "data_age_us")));
            prev = r.clone();
        }
        cum.push((
            format!("{link} link: last router to the importing proxy"),
            hop(to, "link", &prev, "data_age_us"),
        ));
        cum.push((
            "importing proxy: to its import task, open".into(),
            hop(to, "import", topic, "opened_age_us"),
        ));
        cum.push((
            "importing proxy: DDS write".into(),
            hop(to, "import", topic, "written_age_us"),
        ));
        // Cumulative ages to components; a missing hop folds into the next one.
        let mut last = Some(0.0);
        let mut parts = vec![(
            "DDS: publisher's write to the proxy's seal".to_string(),
            dds,
        )];
        for (label, at) in cum {
            let part = match (at, last) {
                (Some(a), Some(l)) => Some(a - l),
                _ => None,
            };
            if at.is_some() {
                last = at;
            }
            parts.push((label, part));
        }
        parts
    };
    let mut back_path = routers.clone();
    back_path.reverse();
    let fwd = direction("proxy-a", "proxy-b", routers, REALM_TOPIC);
    let back = direction("proxy-b", "proxy-a", back_path, REALM_ECHO_TOPIC);
    if fwd.iter().chain(&back).all(|(_, v)| v.is_none()) {
        return;
    }
    let _ = writeln!(s, "\n{}: measured inside the path (mean ages at each hop from the routers' and proxies' metrics snapshots, as differences; a round trip is the data one way and the echo back):\n", m.label);
    let _ = writeln!(
        s,
        "| component | data (A to B) | echo (B to A) |\n|---|---|---|"
    );
    for ((label, a), (_, b)) in fwd.iter().zip(&back) {
        let _ = writeln!(s, "| {label} | {} | {} |", us(*a), us(*b));
    }
    let known: f64 = fwd.iter().chain(&back).filter_map(|(_, v)| *v).sum();
    if let Some(rtt) = m.rtt("mean_us") {
        let _ = writeln!(
            s,
            "| rest: DDS from the importing proxy to the listener, both ways, and the sink's echo | {} (round trip mean {} minus the above) | |",
            us(Some(rtt - known)),
            us(Some(rtt))
        );
    }
}
