//! E6: echo round trips over emulated wide-area paths (delay, jitter, loss).

use std::fmt::Write as _;

use super::table::{of, size, us};
use super::Report;
use crate::hop_report;

pub(super) fn e6(r: &Report, s: &mut String) {
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
