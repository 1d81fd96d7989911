//! bench/FAULTS.md from a run, and one line per campaign for the console.

use std::fmt::Write;

use super::campaign::Outcome;
use super::flood::FloodOutcome;
use super::Report;

/// One line: the campaign and, per subscriber, lost / duplicated / longest gap.
pub fn summary_line(o: &Outcome) -> String {
    if let Some(e) = &o.error {
        return format!("  {}: failed: {e}", o.name);
    }
    let subs: Vec<String> = o
        .subscribers
        .iter()
        .map(|s| {
            let d = &s.delivery;
            format!(
                "{} sent {} lost {} dup {} reordered {} longest gap {:.0} ms",
                d.subscriber, d.sent, d.lost, d.duplicated, d.reordered, d.longest_gap_ms
            )
        })
        .collect();
    format!("  {}: {}", o.name, subs.join("; "))
}

/// One line for the flood campaign: per run, the neighbour's p99 and the flood's rate.
pub fn flood_line(f: &FloodOutcome) -> String {
    if let Some(e) = &f.error {
        return format!("  flood: failed: {e}");
    }
    let runs: Vec<String> = f
        .runs
        .iter()
        .map(|r| {
            format!(
                "{}: p99 {:.2} ms, flood {}",
                r.name,
                r.neighbour_p99_ms,
                r.flood_per_s
                    .map_or("-".into(), |v| format!("{v:.0} msg/s"))
            )
        })
        .collect();
    format!("  flood: {}", runs.join("; "))
}

fn flood(m: &mut String, f: &FloodOutcome) {
    let _ = writeln!(
        m,
        "\n## flood\n\n{}; the neighbour measured over {:.0} s.",
        f.what, f.window_s
    );
    if let Some(e) = &f.error {
        let _ = writeln!(m, "\n**Failed:** {e}");
    }
    let _ = writeln!(
        m,
        "\n| run | client quota | neighbour messages | p50 | p99 | max | missing | flood sent | flood rate | quota waits | dropped over quota |\n|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in &f.runs {
        let _ = writeln!(
            m,
            "| {} | {} | {} | {:.2} ms | {:.2} ms | {:.2} ms | {} | {} | {} | {} | {} |",
            r.name,
            match (r.quota_msgs_per_s, r.quota_in_force) {
                (_, 0) => "none".to_string(),
                (None, q) => format!("{q} msg/s (default)"),
                (Some(q), _) => format!("{q} msg/s"),
            },
            r.neighbour_messages,
            r.neighbour_p50_ms,
            r.neighbour_p99_ms,
            r.neighbour_max_ms,
            r.neighbour_missing,
            opt(r.flood_sent),
            r.flood_per_s
                .map_or("-".into(), |v| format!("{v:.0} msg/s")),
            opt(r.flood_quota_waits),
            opt(r.flood_dropped_quota)
        );
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

pub fn markdown(r: &Report) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        "# Faults: delivery while routers die, restart and are cut off\n\n\
         Written by `roam-lab faults` ({:?} suite, seed {}, {:.0} s) on {} at {} on {} cores ({}).\n\
         Real `roam router` processes on loopback with the product's defaults, a reliable\n\
         topic published by `roam pub --keep-all` at {} Hz ({} B messages, end-to-end recovery\n\
         with the default 10 s resend window) and `roam sub`s; a killed or stopped router is\n\
         started again on its address, as a service manager would. Figures per subscriber:\n\
         lost = sent and never delivered; a gap is the longest time without a delivery from\n\
         the fault until the next one; \"back\" is from the router's return until delivery was\n\
         back. Where the fault hit the subscriber's own router there is no way around it (\"own\").\n",
        r.suite,
        r.seed,
        r.seconds,
        r.date,
        r.commit,
        r.machine.nproc,
        r.machine.cpu,
        super::mesh::RATE_HZ,
        super::mesh::SIZE,
    );
    let _ = writeln!(
        m,
        "## Goals\n\n| goal | target | measured | |\n|---|---|---|---|"
    );
    for g in &r.goals {
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} |",
            g.name,
            g.target,
            g.figure,
            if g.met { "met" } else { "**not met**" }
        );
    }
    for o in &r.campaigns {
        campaign(&mut m, o);
    }
    if let Some(f) = &r.flood {
        flood(&mut m, f);
    }
    let _ = writeln!(
        m,
        "\n## Not yet in this suite\n\n\
         A robot whose address changes every 10 s, link flaps and loss through the WAN relay,\n\
         and proxies killed while transient-local, service and action traffic flows."
    );
    m
}

fn campaign(m: &mut String, o: &Outcome) {
    let _ = writeln!(m, "\n## {}\n\n{}.", o.name, o.what);
    if let Some(e) = &o.error {
        let _ = writeln!(m, "\n**Failed:** {e}");
        return;
    }
    let _ = writeln!(
        m,
        "\n| subscriber | router | sent | delivered | lost | duplicated | reordered | longest gap | recovered (its count) | lost (its count) |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for s in &o.subscribers {
        let d = &s.delivery;
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} | {} | {} | {} | {:.0} ms | {} | {} |",
            d.subscriber,
            s.router,
            d.sent,
            d.delivered,
            d.lost,
            d.duplicated,
            d.reordered,
            d.longest_gap_ms,
            opt(s.recovered_counted),
            opt(s.lost_counted)
        );
    }
    if let Some(p) = &o.publisher {
        let _ = writeln!(
            m,
            "\nThe publisher: sent {}, {} dropped while offline, resent {} that subscribers missed, {} asked for after the resend window (by {} subscribers).",
            p.sent, p.dropped_offline, p.resent, p.lost, p.lost_subscribers
        );
    }
    if !o.faults.is_empty() {
        let mut head = "| at | fault | router | down |".to_string();
        let mut rule = "|---|---|---|---|".to_string();
        for s in &o.subscribers {
            let _ = write!(
                head,
                " {0}: gap | {0}: back | {0}: lost |",
                s.delivery.subscriber
            );
            rule.push_str("---|---|---|");
        }
        let _ = writeln!(m, "\n{head}\n{rule}");
        for (i, f) in o.faults.iter().enumerate() {
            let _ = write!(
                m,
                "| {:.1} s | {} | {} | {:.1} s |",
                f.at_ms / 1e3,
                f.kind,
                f.target,
                (f.back_ms - f.at_ms) / 1e3
            );
            for s in &o.subscribers {
                let own = if f.target == s.router { " (own)" } else { "" };
                match s.delivery.events.get(i) {
                    Some(e) => {
                        let _ = write!(
                            m,
                            " {:.0} ms{own} | {:.0} ms | {} |",
                            e.gap_ms, e.recovery_after_back_ms, e.lost
                        );
                    }
                    None => m.push_str(" - | - | - |"),
                }
            }
            m.push('\n');
        }
    }
    if !o.usage.is_empty() {
        let (growth, fds) = super::goals::soak(o);
        let _ = writeln!(
            m,
            "\nAfter the warm-up: largest RSS change {:+.1}%, descriptors varied by {fds}.\n\n| process | RSS first | RSS last | descriptors first | descriptors last |\n|---|---|---|---|---|",
            growth * 100.0
        );
        let mut names: Vec<&str> = o.usage.iter().map(|u| u.process.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        for n in names {
            let s: Vec<_> = o.usage.iter().filter(|u| u.process == n).collect();
            if let (Some(a), Some(b)) = (s.first(), s.last()) {
                let _ = writeln!(
                    m,
                    "| {n} | {:.1} MB | {:.1} MB | {} | {} |",
                    a.rss_kb as f64 / 1024.0,
                    b.rss_kb as f64 / 1024.0,
                    a.fds,
                    b.fds
                );
            }
        }
    }
}
