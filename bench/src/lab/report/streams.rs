//! E4 (one-way latency vs publish rate) and E5 (13 MB messages): paced streams, one row per
//! system and load.

use std::fmt::Write as _;

use super::table::{of, size, us};
use super::Report;
use crate::measure::Measurement;

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

pub(super) fn e4(r: &Report, s: &mut String) {
    let ms = of(r, "e4");
    if ms.is_empty() {
        return;
    }
    let _ = writeln!(s, "## E4: latency vs publish rate (seed 004)\n");
    let _ = writeln!(s, "4 KiB CompressedImage at 200 Hz - 10 kHz and a 640x480 mono8 Image (307,200 bytes) at 5-60 Hz, reliable, keep-all; one-way latency at the sink (same host clock). The knee is where latency climbs by orders of magnitude.\n");
    stream_table(&ms, s);
}

pub(super) fn e5(r: &Report, s: &mut String) {
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
