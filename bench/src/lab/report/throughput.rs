//! E2: throughput of unpaced 1000-byte messages, against native DDS and the Zenoh bridge.

use std::fmt::Write as _;

use super::table::{fastdds_note, of, of_nodes, ratio, us, ZENOH_TCP};
use super::Report;
use crate::measure::Measurement;
use crate::systems::{System, Vendor};

pub(super) fn e2(r: &Report, s: &mut String) {
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
