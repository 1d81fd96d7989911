//! E1 (echo round trip vs message size, with CycloneDDS and with Fast DDS nodes) and E3
//! (round trip vs size, sealed vs clear text).

use std::fmt::Write as _;

use super::table::{fastdds_note, find, of, of_nodes, ratio, size, systems, us, ZENOH_TCP};
use super::Report;
use crate::systems::{Links, System, Vendor};

pub(super) fn e1(r: &Report, s: &mut String) {
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
    super::rounds::e1(r, s);
    super::floor::e1(r, s);
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

pub(super) fn e3(r: &Report, s: &mut String) {
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
