//! E7: the latency breakdown of 8 KiB round trips, per component of the path.

use std::fmt::Write as _;

use super::table::{of, us};
use super::Report;
use crate::hop_report;
use crate::measure::Measurement;
use crate::systems::{Links, System};

pub(super) fn e7(r: &Report, s: &mut String) {
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
