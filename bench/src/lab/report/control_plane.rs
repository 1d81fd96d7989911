//! E8: the control plane: start to first delivery per system, and the routing plane's
//! subscribe and RIB figures quoted from `roam-bench`.

use std::fmt::Write as _;

use serde_json::Value;

use super::table::{f, us};
use super::Report;
use crate::measure::Measurement;

pub(super) fn e8(r: &Report, s: &mut String) {
    let firsts: Vec<&Measurement> = r
        .measurements
        .iter()
        .filter(|m| m.ok() && m.wan.is_none())
        .collect();
    if firsts.is_empty() {
        return;
    }
    let _ = writeln!(s, "## E8: control plane\n");
    let _ = writeln!(s, "Start to first delivery: from starting the system's first process (router, bridge) to the source's first warm-up message coming back through the sink (includes starting both load generator processes and DDS discovery); median over every run of the suite.\n");
    let _ = writeln!(s, "| system | runs | median start to first echo | median source start to first echo |\n|---|---|---|---|");
    // One row per system and nodes: the label names both.
    let mut labels: Vec<&str> = Vec::new();
    for m in &firsts {
        if !labels.contains(&m.label.as_str()) {
            labels.push(&m.label);
        }
    }
    for x in labels {
        let mut a: Vec<f64> = firsts
            .iter()
            .filter(|m| m.label == x)
            .map(|m| m.start_to_first_delivery_ms)
            .collect();
        let mut b: Vec<f64> = firsts
            .iter()
            .filter(|m| m.label == x)
            .filter_map(|m| f(&m.source, &["path_up_ms"]))
            .collect();
        a.sort_by(f64::total_cmp);
        b.sort_by(f64::total_cmp);
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} ms | {:.0} ms |",
            x,
            a.len(),
            a.get(a.len() / 2).copied().unwrap_or(0.0),
            b.get(b.len() / 2).copied().unwrap_or(0.0)
        );
    }
    s.push('\n');
    if let Some(rp) = &r.routing_plane {
        control_plane(rp, s);
    }
}

/// E8's routing-plane part, quoted from `roam-bench`'s results: subscribe latency across
/// three routers and RIB operations at 10,000 and 1,000,000 names (seed 000: 4 ms to publish,
/// 2 ms to subscribe with 10,000 records; 2.4 ms from start to first message).
fn control_plane(rp: &Value, s: &mut String) {
    let date = rp.get("date").and_then(Value::as_str).unwrap_or("?");
    let _ = writeln!(
        s,
        "From `roam-bench` ([ROUTING-PLANE.md](ROUTING-PLANE.md), run of {date}):\n"
    );
    let _ = writeln!(s, "| what | figure |\n|---|---|");
    if let Some(sub) = rp.pointer("/results/subscribe") {
        let routers = f(sub, &["routers"]).unwrap_or(0.0);
        let _ = writeln!(
            s,
            "| subscribe across {routers:.0} routers: until the publisher hears of it (p50 / p90) | {} / {} |",
            us(f(sub, &["demand_p50_us"])),
            us(f(sub, &["demand_p90_us"]))
        );
        let _ = writeln!(
            s,
            "| subscribe across {routers:.0} routers: until the first message arrives (p50 / p90) | {} / {} |",
            us(f(sub, &["first_message_p50_us"])),
            us(f(sub, &["first_message_p90_us"]))
        );
    }
    for rib in rp
        .pointer("/results/routing_core/rib")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let names = f(rib, &["names"]).unwrap_or(0.0);
        let ns = |k: &str| f(rib, &[k]).map_or("—".into(), |v| format!("{v:.0} ns"));
        let _ = writeln!(
            s,
            "| RIB of {names:.0} names: publish / subscribe one name in the routing core | {} / {} |",
            ns("publish_one_ns"),
            ns("subscribe_one_ns")
        );
    }
    s.push('\n');
}
