//! The E12 section of bench/RESULTS.md: per system and path, the small topics' one-way
//! latency alone and next to the 13 MB images, their ratio, and the images' own figures.

use std::fmt::Write as _;

use serde_json::Value;

use super::flows::{FlowResult, FlowsRun};
use super::hol::{HolRun, IMAGE_BYTES, IMAGE_HZ, SMALL_BYTES, SMALL_HZ, SMALL_TOPICS};
use super::report::us;
use super::systems::System;

fn num(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, p| v.get(p))?.as_f64()
}

/// `p50 / p99 / max (n)` of a flow's one-way latency.
fn latency(f: Option<&FlowResult>) -> String {
    let Some(f) = f else {
        return "—".into();
    };
    let ow = |k: &str| num(&f.sink, &["one_way", k]);
    if ow("count").unwrap_or(0.0) == 0.0 {
        return "none delivered".into();
    }
    format!(
        "{} / {} / {} ({})",
        us(ow("median_us")),
        us(ow("p99_us")),
        us(ow("max_us")),
        ow("count").map_or("—".into(), |n| format!("{n:.0}"))
    )
}

/// `delivered / sent` (the source's count: an image source is stopped early), with the
/// sink's own drops when there were any.
fn delivered(f: Option<&FlowResult>) -> String {
    let Some(f) = f else {
        return "—".into();
    };
    let (Some(got), Some(sent)) = (
        num(&f.sink, &["counts", "received"]),
        num(&f.source, &["sent"]),
    ) else {
        return "—".into();
    };
    let mut s = format!("{got:.0} / {sent:.0}");
    if let Some(d) = num(&f.sink, &["dropped_in_sink"]).filter(|d| *d > 0.0) {
        let _ = write!(s, " ({d:.0} dropped by the sink)");
    }
    s
}

/// The median over the small topics of one age's p99 at one process.
fn stage(run: Option<&FlowsRun>, process: &str, age: &str) -> String {
    us(run.and_then(|r| {
        r.stages
            .iter()
            .find(|s| s.flow == "small" && s.process == process && s.age == age)
            .map(|s| s.p99_us)
    }))
}

/// Where the small topics' p99 grows inside roam, alone and next to the images.
fn stages(runs: &[HolRun], s: &mut String) {
    let roam: Vec<&HolRun> = runs
        .iter()
        .filter(|r| {
            matches!(
                r.system,
                System::Roam { .. } | System::RoamSecondProxy { .. }
            )
        })
        .collect();
    if roam.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nWhere the small topics' time goes in roam: the ages roam's proxies measured for each small \
         topic since the DDS source timestamp (each topic's p99, median over the {SMALL_TOPICS} topics): \
         into the exporting proxy A (its DDS reader's callback), opened in the importing proxy B (after \
         the link), and written to DDS by B. These cover the proxies' whole run, warm-up and the 2 s of \
         settling included (so a link's slow start is in the alone rows here, not in the sink's figures \
         above), and come from histograms with coarse buckets: read them for where the time is added, \
         not as the end-to-end figure.\n"
    );
    let _ = writeln!(
        s,
        "| system | path | phase | into proxy A | opened in B | written by B |\n|---|---|---|---|---|---|"
    );
    for r in roam {
        for (phase, run) in [
            ("alone", r.alone.as_ref()),
            ("with images", r.with_image.as_ref()),
        ] {
            let _ = writeln!(
                s,
                "| {} | {} | {phase} | {} | {} | {} |",
                r.label,
                r.wan.map_or("loopback", |w| w.label),
                stage(run, "proxy-a", "dds_age_us"),
                stage(run, "proxy-b", "opened_age_us"),
                stage(run, "proxy-b", "written_age_us"),
            );
        }
    }
}

/// The p99 ratio, or why there is none: small messages not delivered.
fn ratio(r: &HolRun) -> String {
    if let Some(v) = r.p99_ratio {
        return format!("**{v:.2}x**");
    }
    match (r.small_undelivered_alone, r.small_undelivered_with) {
        (Some(a), Some(w)) if a + w > 0 => {
            let sent = r.small.count * r.small.topics as u64;
            format!("none: **{} of {sent} not delivered** ({a} alone)", w)
        }
        _ => "—".into(),
    }
}

pub fn markdown(runs: &[HolRun], s: &mut String) {
    let Some(first) = runs.first() else {
        return;
    };
    let _ = writeln!(s, "## E12: no head-of-line blocking (issue 18)\n");
    let _ = writeln!(
        s,
        "{SMALL_TOPICS} small topics (std_msgs/String of {SMALL_BYTES} characters, reliable, keep-all) at \
         {SMALL_HZ} Hz each, from one node to one node, for {} messages per topic (after 2 s of unmeasured \
         sending at the same rate, so the link is past slow start); then the same next to a \
         {} MB sensor_msgs/Image stream at {IMAGE_HZ} Hz (reliable, keep-all, E5's load) between two other \
         nodes over the same two proxies (bridges), so over one link. Each phase starts the system fresh; \
         the images start first and the small topics measure only once the images flow (overlap = share of \
         the small topics' sending time during which the image source was sending); the image source is \
         stopped when the small topics are done, and its sink gets 10 s more to receive what is on its way \
         (images delivered / sent: an image not delivered by then counts as not delivered). Native DDS (loopback \
         only) runs both streams in one domain with nothing between them: what the images cost the small topics \
         on this machine's cores alone. roam's proxies forward every /roam_lab/ data topic by pattern \
         (`allow:`); each topic has its own QUIC stream. One-way latency \
         p50 / p99 / max (samples), host clock; ratio = p99 with the images / p99 alone (goal for roam: 2x \
         or less), given only when every small message of both phases arrived (not delivered = not \
         within 10 s after the sources stopped). WAN paths go through `roam-wan-relay` between the two sides (UDP for roam, its TCP side \
         for Zenoh, whose relay loss model is a retransmission stall, see E6). Link lost = QUIC packets \
         roam's links declared lost; in brackets, when there were any, datagrams the relay dropped for a full \
         queue of its own (not part of the emulated path) and datagrams the kernel dropped for a full receive \
         buffer on a process's link socket (QUIC or the relay's; its DDS sockets not counted). Rows marked *images keep-last 10* run the lossy path again with \
         the image stream at the ROS 2 default QoS (reliable, keep-last 10, what a camera driver \
         usually offers): a bridge may then drop old images the link cannot carry, as DDS would, \
         so fewer images are delivered by design. Rows *images by a second proxy* run two roam proxies \
         on side A, each with its own link to B: one exports only the images, the other every other \
         topic (`deny:` the images), so the images have their own DDS participant and receive thread \
         (what isolated them before a proxy read bulk types on a second participant of its own; docs/operations.md, \"Bulk topics\"); in the *pair* rows side B \
         is split the same way, one proxy importing only the images.\n",
        first.small.count,
        IMAGE_BYTES / 1_000_000
    );
    let _ = writeln!(
        s,
        "| system | path | small alone | small with images | p99 ratio | images one-way p50 / p99 / max (n) | images delivered / sent | small delivered / sent, alone; with | link lost alone / with | overlap |\n\
         |---|---|---|---|---|---|---|---|---|---|"
    );
    for r in runs {
        let alone = HolRun::small_of(r.alone.as_ref());
        let with = HolRun::small_of(r.with_image.as_ref());
        let image = HolRun::image_of(r.with_image.as_ref());
        let link = |f: Option<&super::flows::FlowsRun>| {
            let Some(f) = f else { return "—".into() };
            let mut t = f
                .link_lost_packets
                .map_or("—".into(), |v| format!("{v:.0}"));
            let full = f.relay.map_or(0, |r| r.overflow_packets);
            if full > 0 {
                let _ = write!(t, " (relay queue full: {full})");
            }
            for (process, n) in &f.socket_drops {
                let _ = write!(t, " ({process} socket full: {n})");
            }
            t
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {}; {} | {} / {} | {} |",
            r.label,
            r.wan.map_or("loopback", |w| w.label),
            latency(alone),
            latency(with),
            ratio(r),
            latency(image),
            delivered(image),
            delivered(alone),
            delivered(with),
            link(r.alone.as_ref()),
            link(r.with_image.as_ref()),
            r.overlap
                .map_or("—".into(), |v| format!("{:.0}%", v * 100.0)),
        );
    }
    stages(runs, s);
    for r in runs.iter().filter(|r| r.error.is_some()) {
        let _ = writeln!(
            s,
            "\n(failed: {}, {}: {})",
            r.label,
            r.wan.map_or("loopback", |w| w.label),
            r.error
                .as_deref()
                .and_then(|e| e.lines().next())
                .unwrap_or("")
        );
    }
    s.push('\n');
}
