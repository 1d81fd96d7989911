//! E2: throughput of unpaced 1000-byte messages, against native DDS and the Zenoh bridge.

use std::fmt::Write as _;

use super::budget::{self, CpuPerMessage, GOAL_SHARE};
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
    cpu_budget(r, &all, s);
}

/// Each row's CPU per message received: its source and sink, and every process between them.
fn cpu_per_message(m: &Measurement) -> Option<CpuPerMessage> {
    let received = m.sink_f(&["counts", "received"]).filter(|&n| n > 0.0)?;
    let mut cpu = CpuPerMessage {
        ends_us: 0.0,
        between_us: 0.0,
    };
    for u in &m.usage {
        let us = u.cpu_seconds * 1e6 / received;
        match u.process.as_str() {
            "source" | "sink" => cpu.ends_us += us,
            _ => cpu.between_us += us,
        }
    }
    Some(cpu)
}

/// What 90% of native leaves for the processes in between on this machine (`budget`).
fn cpu_budget(r: &Report, all: &[&Measurement], s: &mut String) {
    let cores = r.machine.nproc;
    let native = |nodes: Vendor| {
        all.iter()
            .find(|m| m.system == System::Native && m.nodes == nodes && m.ok())
            .and_then(|m| m.sink_f(&["rate"]))
    };
    let Some(cyclone) = native(Vendor::CycloneDds) else {
        return;
    };
    let _ = writeln!(
        s,
        "What {:.0}% of native leaves for the processes in between on this machine ({cores} cores): at {:.0}% of native's {:.0} messages/s, \
         each message has {:.1} µs of the machine's CPU in all (cores / rate); each row's ends (source and sink) spend theirs first, and \
         what is left is what every process in between (roam's proxies and routers, the Zenoh bridges) may spend together. CPU per \
         message = each process's CPU time over the run (10 ms ticks) / messages received; busy = the share of all cores the row's \
         processes kept busy at its rate. Rows with Fast DDS nodes against native Fast DDS's rate.\n",
        GOAL_SHARE * 100.0,
        GOAL_SHARE * 100.0,
        cyclone,
        budget::machine_us(cores, cyclone),
    );
    let _ = writeln!(
        s,
        "| system | messages/s | CPU per message: ends / in between | busy | in between may spend at {:.0}% of native | in between would need |\n|---|---|---|---|---|---|",
        GOAL_SHARE * 100.0
    );
    for m in all {
        let (Some(rate), Some(cpu), Some(native_rate)) =
            (m.sink_f(&["rate"]), cpu_per_message(m), native(m.nodes))
        else {
            continue;
        };
        let allowed = cpu.between_allowed_us(cores, native_rate);
        let (between, need) =
            budget::between_cells(&cpu, m.system == System::Native, cores, native_rate, 1);
        let _ = writeln!(
            s,
            "| {} | {:.0} | {:.1} µs / {} | {:.0}% | {:.1} µs | {} |",
            m.label,
            rate,
            cpu.ends_us,
            between,
            cpu.busy(cores, rate) * 100.0,
            allowed,
            need
        );
    }
    s.push('\n');
}
