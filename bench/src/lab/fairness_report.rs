//! The E11 section of bench/RESULTS.md: per queue regime and pair of congestion
//! controllers, each flow's goodput and share, Jain's index, the bottleneck's drops and
//! queueing delay, and the links' own RTT.

use std::fmt::Write as _;

use super::fairness::{FairnessRun, BDP_BYTES, DELAY_MS, MESSAGE_BYTES, RATE_MBIT};

pub fn markdown(runs: &[FairnessRun], s: &mut String) {
    let Some(first) = runs.first() else {
        return;
    };
    let _ = writeln!(s, "## E11: sharing a bottleneck (issue 18)\n");
    let _ = writeln!(
        s,
        "Two independent roam paths (`roam pub` - router A - `roam-wan-relay` - router B - `roam sub`, \
         reliable {} KiB messages, each publisher offering 1.25x the whole bottleneck) start together through \
         one relay whose shared bottleneck both QUIC links cross: {RATE_MBIT} Mbit/s, a drop-tail queue of the \
         given size (1 BDP = {RATE_MBIT} Mbit/s x {} ms = {:.0} bytes), {DELAY_MS} ms one way. Each path's two \
         routers run the named controller (`link.congestion`); a controller *alone* is one path by itself through \
         the same bottleneck, for reference. Figures over {} s after a {} s warm-up \
         (counted from when every flow of the run delivered its first message): goodput = messages the subscriber printed, share = of the \
         bottleneck's rate; Jain's index of the two goodputs (1 = even, 0.5 = one flow has everything); \
         drops and queueing delay (time waited in the bottleneck's queue) from the relay; RTT = the sending \
         router's smoothed RTT of its link (median of one sample a second; the path's base RTT is {} ms); \
         QUIC lost = packets the sender declared lost. See docs/operations.md for the reading.\n",
        MESSAGE_BYTES / 1024,
        2.0 * DELAY_MS,
        BDP_BYTES,
        first.window_s,
        first.warmup_s,
        2.0 * DELAY_MS,
    );
    let _ = writeln!(
        s,
        "| queue | loss | flows | flow 1 | flow 2 | Jain | both | dropped at the bottleneck | queueing delay mean / p50 / p99 | RTT flow 1 / flow 2 | QUIC lost flow 1 / flow 2 |\n\
         |---|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in runs {
        let flows: Vec<String> = r.flows.iter().map(|f| label(&f.congestion)).collect();
        let flows = match flows.as_slice() {
            [one] => format!("{one} alone"),
            many => many.join(" + "),
        };
        let flow = |i: usize| {
            r.flows.get(i).map_or("—".into(), |f| {
                format!(
                    "{}: {:.1} Mbit/s ({:.0}%)",
                    label(&f.congestion),
                    f.goodput_mbit,
                    f.share * 100.0
                )
            })
        };
        let ms = |v: Option<f64>| v.map_or("—".into(), |v| format!("{v:.1} ms"));
        let drops = match (r.dropped_packets, r.offered_packets) {
            (Some(d), Some(o)) if o > 0 => {
                format!("{d} of {o} ({:.2}%)", d as f64 / o as f64 * 100.0)
            }
            _ => "—".into(),
        };
        let pair = |f: &dyn Fn(&super::fairness::Flow) -> String| {
            r.flows.iter().map(f).collect::<Vec<_>>().join(" / ")
        };
        let rtt = pair(&|f| ms(f.rtt_ms_p50));
        let lost = pair(&|f| match (f.quic_lost_packets, f.quic_sent_packets) {
            (Some(l), Some(n)) if n > 0 => format!("{l} ({:.2}%)", l as f64 / n as f64 * 100.0),
            _ => "—".into(),
        });
        let _ = writeln!(
            s,
            "| {} BDP ({} B) | {}% | {} | {} | {} | {} | {} | {} | {} / {} / {} | {} | {} |",
            r.regime.queue_bdp,
            r.queue_bytes,
            r.regime.loss * 100.0,
            flows,
            flow(0),
            flow(1),
            r.jain.map_or("—".into(), |j| format!("{j:.3}")),
            r.utilisation
                .map_or("—".into(), |u| format!("{:.0}%", u * 100.0)),
            drops,
            ms(r.queue_delay_ms_mean),
            ms(r.queue_delay_ms_p50),
            ms(r.queue_delay_ms_p99),
            rtt,
            lost,
        );
    }
    for r in runs.iter().filter(|r| r.error.is_some()) {
        let _ = writeln!(
            s,
            "\n(failed: {} BDP, {}% loss, {}: {})",
            r.regime.queue_bdp,
            r.regime.loss * 100.0,
            r.flows
                .iter()
                .map(|f| label(&f.congestion))
                .collect::<Vec<_>>()
                .join(" + "),
            r.error
                .as_deref()
                .and_then(|e| e.lines().next())
                .unwrap_or("")
        );
    }
    s.push('\n');
}

fn label(cc: &str) -> String {
    match cc {
        "bbr" => "BBR".into(),
        "cubic" => "Cubic".into(),
        "tolerant-nofec" => "tolerant without FEC".into(),
        other => other.into(),
    }
}
