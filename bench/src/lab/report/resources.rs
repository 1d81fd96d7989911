//! E9: CPU and peak memory of every process during E2.

use std::fmt::Write as _;

use super::Report;
use crate::measure::Measurement;

pub(super) fn e9(r: &Report, s: &mut String) {
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
            let per_message = received.map_or("—".into(), |n| {
                format!("{:.1} µs", u.cpu_seconds * 1e6 / n)
            });
            let _ = writeln!(
                s,
                "| {} | {} | {:.0}% | {per_message} | {:.1} MB |",
                m.label, u.process, u.cpu_percent, u.peak_rss_mb
            );
        }
    }
    s.push('\n');
}
