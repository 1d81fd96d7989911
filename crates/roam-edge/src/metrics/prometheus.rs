//! A [`Snapshot`] as a Prometheus scrape: the OpenMetrics text format, which Prometheus
//! asks for first and reads natively, and from it the classic text format
//! ([`to_classic_text`]) for everyone else.
//!
//! Names follow Prometheus conventions: a `roam_` prefix, base units (`_seconds`, `_bytes`),
//! `_total` on counters, one HELP and TYPE per family. Labels are `topic`, `direction`,
//! `stage`, `peer`, `link`, `cause`, `outcome`. Every figure is written from the snapshot
//! the scrape took, so the encoding is a pure function; the `prometheus-client` crate writes
//! the format (escaping, HELP/TYPE, `# EOF`) through its [`Collector`], because its live
//! metric types (atomics, fixed histogram buckets) cannot be set to counts taken elsewhere.
//!
//! Cardinality is bounded: at most [`Exposition::max_topics`] topics get series of their
//! own (in the snapshot's order: direction, then name); the rest are summed into one series
//! with `topic="__overflow__"` and counted by `roam_topics_overflow`. Ages become
//! histograms with bounds of `2^k - 1` µs (64 µs to 8.4 s), which are bounds of the
//! snapshot's own buckets, so each count is exact.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::{Ages, Direction, Link, Snapshot, Topic};

/// The content type of [`Exposition::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The content type of [`to_classic_text`]'s text (Prometheus's own format before
/// OpenMetrics, which `promtool`, `curl` users and older scrapers read).
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The `topic` label of the series that sums the topics over the cap.
pub const OVERFLOW_TOPIC: &str = "__overflow__";

/// Age histogram bounds: `2^k - 1` µs for k = 6..=23 (64 µs .. 8.4 s), then `+Inf`.
const AGE_BOUNDS_POW2: std::ops::RangeInclusive<u32> = 6..=23;

/// How a snapshot is exposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exposition {
    /// Topics with series of their own; the rest go to [`OVERFLOW_TOPIC`].
    pub max_topics: usize,
}

impl Default for Exposition {
    fn default() -> Self {
        Exposition { max_topics: 1000 }
    }
}

impl Exposition {
    /// The snapshot as OpenMetrics text ([`CONTENT_TYPE`]), ending in `# EOF`.
    pub fn render(&self, snapshot: &Snapshot) -> String {
        let mut registry = Registry::with_prefix("roam");
        registry.register_collector(Box::new(SnapshotCollector {
            snapshot: snapshot.clone(),
            max_topics: self.max_topics,
        }));
        let mut out = String::new();
        // Writing to a String cannot fail, and the collector's own writes only fail when
        // the writer does.
        if prometheus_client::encoding::text::encode(&mut out, &registry).is_err() {
            out.clear();
        }
        out
    }
}

/// OpenMetrics text from [`Exposition::render`] in the classic text format: a counter's
/// HELP and TYPE name its samples (`x_total`, not the family `x`), and there is no `# EOF`.
/// Everything else this exposition writes reads the same in both.
pub fn to_classic_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len() + 1024);
    let mut help: Option<&str> = None;
    for line in openmetrics.lines() {
        if line == "# EOF" {
            continue;
        }
        if line.starts_with("# HELP ") {
            // Written once its TYPE says whether the name takes `_total`.
            if let Some(h) = help.replace(line) {
                out.push_str(h);
                out.push('\n');
            }
            continue;
        }
        let counter = line
            .strip_prefix("# TYPE ")
            .and_then(|t| t.strip_suffix(" counter"));
        if let Some(name) = counter {
            if let Some(h) = help.take() {
                let text = h.strip_prefix("# HELP ").and_then(|h| h.strip_prefix(name));
                match text {
                    Some(text) => out.push_str(&format!("# HELP {name}_total{text}\n")),
                    None => out.push_str(&format!("{h}\n")),
                }
            }
            out.push_str(&format!("# TYPE {name}_total counter\n"));
            continue;
        }
        if let Some(h) = help.take() {
            out.push_str(h);
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[derive(Debug)]
struct SnapshotCollector {
    snapshot: Snapshot,
    max_topics: usize,
}

type Labels<'a> = Vec<(&'static str, &'a str)>;
type Fmt = Result<(), std::fmt::Error>;

/// Writes one family: its descriptor, then each labelled series with `write`.
fn family<T>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    ty: MetricType,
    series: &[(Labels<'_>, T)],
    mut write: impl FnMut(&mut prometheus_client::encoding::MetricEncoder, &T) -> Fmt,
) -> Fmt {
    if series.is_empty() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, None, ty)?;
    for (labels, v) in series {
        if labels.is_empty() {
            // `{}` is legal but unusual; a series without labels is written bare.
            write(&mut m, v)?;
        } else {
            write(&mut m.encode_family(labels)?, v)?;
        }
    }
    Ok(())
}

fn counters(enc: &mut DescriptorEncoder, name: &str, help: &str, s: &[(Labels, u64)]) -> Fmt {
    family(enc, name, help, MetricType::Counter, s, |m, v| {
        m.encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(v, None)
    })
}

fn gauges(enc: &mut DescriptorEncoder, name: &str, help: &str, s: &[(Labels, f64)]) -> Fmt {
    family(enc, name, help, MetricType::Gauge, s, |m, v| {
        m.encode_gauge(v)
    })
}

fn histograms(enc: &mut DescriptorEncoder, name: &str, help: &str, s: &[(Labels, Hist)]) -> Fmt {
    family(enc, name, help, MetricType::Histogram, s, |m, h| {
        m.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            h.sum_seconds,
            h.count,
            &h.buckets,
            None,
        )
    })
}

/// An age distribution in Prometheus's shape: seconds, non-cumulative buckets (the encoder
/// accumulates them).
#[derive(Debug, Clone, Default, PartialEq)]
struct Hist {
    sum_seconds: f64,
    count: u64,
    buckets: Vec<(f64, u64)>,
}

impl Hist {
    fn from_ages(a: &Ages) -> Self {
        let mut buckets = Vec::with_capacity(AGE_BOUNDS_POW2.count() + 1);
        let mut below = 0;
        for k in AGE_BOUNDS_POW2 {
            let le_us = (1u64 << k) - 1;
            let at_most = a.count_at_most(le_us);
            buckets.push((le_us as f64 / 1e6, at_most.saturating_sub(below)));
            below = at_most;
        }
        buckets.push((f64::INFINITY, a.count.saturating_sub(below)));
        Hist {
            sum_seconds: a.sum_us as f64 / 1e6,
            count: a.count,
            buckets,
        }
    }

    fn add(&mut self, o: &Hist) {
        if self.buckets.is_empty() {
            *self = o.clone();
            return;
        }
        self.sum_seconds += o.sum_seconds;
        self.count += o.count;
        for (b, ob) in self.buckets.iter_mut().zip(&o.buckets) {
            b.1 += ob.1;
        }
    }
}

fn direction(d: Direction) -> &'static str {
    match d {
        Direction::Export => "export",
        Direction::Import => "import",
    }
}

/// One topic's figures (or the overflow's sum), ready to encode.
struct TopicRow {
    topic: String,
    direction: Direction,
    messages: u64,
    bytes: u64,
    drops: Vec<(&'static str, u64)>,
    recovered: u64,
    /// (stage, histogram)
    ages: Vec<(&'static str, Hist)>,
}

impl TopicRow {
    fn from_topic(t: &Topic) -> Self {
        let (first, second) = match t.direction {
            Direction::Export => ("sealed", None),
            Direction::Import => ("opened", t.age_out.as_ref().map(|a| ("written", a))),
        };
        let mut ages = vec![(first, Hist::from_ages(&t.age_in))];
        ages.extend(second.map(|(s, a)| (s, Hist::from_ages(a))));
        TopicRow {
            topic: t.name.clone(),
            direction: t.direction,
            messages: t.samples,
            bytes: t.bytes,
            drops: t.drops_by_cause(),
            recovered: t.recovered,
            ages,
        }
    }

    fn add(&mut self, o: &TopicRow) {
        self.messages += o.messages;
        self.bytes += o.bytes;
        self.recovered += o.recovered;
        for (cause, n) in &o.drops {
            match self.drops.iter_mut().find(|(c, _)| c == cause) {
                Some(d) => d.1 += n,
                None => self.drops.push((cause, *n)),
            }
        }
        for (stage, h) in &o.ages {
            match self.ages.iter_mut().find(|(s, _)| s == stage) {
                Some(a) => a.1.add(h),
                None => self.ages.push((stage, h.clone())),
            }
        }
    }
}

/// The topics under the cap, then per direction one overflow row summing the rest; and how
/// many topics went into the overflow.
fn topic_rows(topics: &[Topic], max: usize) -> (Vec<TopicRow>, u64) {
    let mut rows: Vec<TopicRow> = topics.iter().take(max).map(TopicRow::from_topic).collect();
    let mut overflow: Vec<TopicRow> = Vec::new();
    for t in topics.iter().skip(max) {
        let row = TopicRow::from_topic(t);
        match overflow.iter_mut().find(|o| o.direction == t.direction) {
            Some(o) => o.add(&row),
            None => overflow.push(TopicRow {
                topic: OVERFLOW_TOPIC.to_string(),
                ..row
            }),
        }
    }
    rows.extend(overflow);
    (rows, topics.len().saturating_sub(max) as u64)
}

impl Collector for SnapshotCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Fmt {
        let s = &self.snapshot;
        encode_process(&mut enc, s)?;
        encode_router(&mut enc, s)?;
        encode_links(&mut enc, &s.links)?;
        let (rows, overflowed) = topic_rows(&s.topics, self.max_topics);
        encode_topics(&mut enc, &rows)?;
        gauges(
            &mut enc,
            "topics_overflow",
            "Topics over the exposition's cap, summed into the __overflow__ topic series.",
            &[(vec![], overflowed as f64)],
        )
    }
}

fn encode_process(enc: &mut DescriptorEncoder, s: &Snapshot) -> Fmt {
    let p = &s.process;
    let kind = match p.kind {
        super::ProcessKind::Router => "router",
        super::ProcessKind::Proxy => "proxy",
        super::ProcessKind::Gateway => "gateway",
        super::ProcessKind::Client => "client",
    };
    // A gauge of 1 rather than OpenMetrics' `info` type, which the classic text format
    // (and scrapers that fall back to it) does not know; the name says it is info.
    let info: Labels = vec![("id", &p.id), ("kind", kind), ("version", &p.roam_version)];
    gauges(
        enc,
        "process_info",
        "The roam process: its identity, kind and release.",
        &[(info, 1.0)],
    )?;
    gauges(
        enc,
        "process_start_time_seconds",
        "When the process started, seconds since the Unix epoch.",
        &[(vec![], p.start_time_us as f64 / 1e6)],
    )?;
    if let Some(cpu) = p.cpu_time_us {
        let mut m = enc.encode_descriptor(
            "process_cpu_seconds",
            "CPU time used by the process, user and system.",
            None,
            MetricType::Counter,
        )?;
        m.encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(
            &(cpu as f64 / 1e6),
            None,
        )?;
    }
    if let Some(rss) = p.rss_bytes {
        gauges(
            enc,
            "process_resident_memory_bytes",
            "Resident memory of the process.",
            &[(vec![], rss as f64)],
        )?;
    }
    if let Some(drops) = p.udp_receive_drops {
        let mut m = enc.encode_descriptor(
            "udp_receive_drops",
            "Datagrams the kernel dropped at the process's QUIC sockets for a full receive \
             buffer (raise link.udp_buffer_bytes, or net.core.rmem_max when not root).",
            None,
            MetricType::Counter,
        )?;
        m.encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(&drops, None)?;
    }
    Ok(())
}

fn encode_router(enc: &mut DescriptorEncoder, s: &Snapshot) -> Fmt {
    if let Some(r) = &s.routing {
        gauges(
            enc,
            "router_names",
            "Names the router knows a route for.",
            &[(vec![], r.names as f64)],
        )?;
        gauges(
            enc,
            "router_routers_known",
            "Routers the router knows of.",
            &[(vec![], r.routers_known as f64)],
        )?;
        gauges(
            enc,
            "router_subscribed_names",
            "Names with subscription state at the router.",
            &[(vec![], r.subscribed_names as f64)],
        )?;
        counters(
            enc,
            "router_data_in",
            "Data frames the router received.",
            &[(vec![], r.data_in)],
        )?;
        counters(
            enc,
            "router_data_forwarded",
            "Data frames the router sent on to a next hop (one per link).",
            &[(vec![], r.data_forwarded)],
        )?;
        counters(
            enc,
            "router_data_delivered_local",
            "Data the router handed to in-process subscribers.",
            &[(vec![], r.data_delivered_local)],
        )?;
        counters(
            enc,
            "router_control_frames_in",
            "Control frames the router received.",
            &[(vec![], r.control_frames_in)],
        )?;
        let drops: Vec<(Labels, u64)> = r
            .drops
            .by_cause()
            .iter()
            .map(|(c, n)| (vec![("cause", *c)], *n))
            .collect();
        counters(
            enc,
            "router_data_dropped",
            "Data frames the router dropped, by cause.",
            &drops,
        )?;
        let rp = &r.replacements;
        counters(
            enc,
            "router_links_replaced",
            "Router links closed in favour of a newer one from the same identity.",
            &[(vec![], rp.replaced)],
        )?;
        counters(
            enc,
            "router_links_refused_contested",
            "Router links refused while their identity linked from two places at once.",
            &[(vec![], rp.refused)],
        )?;
        counters(
            enc,
            "router_identities_contested",
            "Times a router identity was found linking from two places at once.",
            &[(vec![], rp.contested)],
        )?;
    }
    if let Some(t) = &s.trust {
        gauges(
            enc,
            "revocation_list_number",
            "CRL number of the revocation list the router holds (0: none).",
            &[(vec![], t.list_number as f64)],
        )?;
        gauges(
            enc,
            "revoked_certificates",
            "Certificates the held revocation list revokes.",
            &[(vec![], t.revoked as f64)],
        )?;
        counters(
            enc,
            "revocation_lists",
            "Revocation lists offered to the router, by what became of them.",
            &[
                (vec![("outcome", "taken")], t.lists_taken),
                (
                    vec![("outcome", "refused_invalid")],
                    t.lists_refused_invalid,
                ),
                (vec![("outcome", "refused_older")], t.lists_refused_older),
            ],
        )?;
        counters(
            enc,
            "links_closed_by_trust",
            "Links the router closed because their peer's certificate was revoked or expired.",
            &[
                (vec![("cause", "revoked")], t.links_closed_revoked),
                (vec![("cause", "expired")], t.links_closed_expired),
            ],
        )?;
    }
    if let Some(a) = &s.admission {
        gauges(
            enc,
            "admission_pending",
            "Connections in their handshake now.",
            &[(vec![], a.pending as f64)],
        )?;
        let outcomes = [
            ("admitted", a.admitted),
            ("authenticated", a.authenticated),
            ("failed", a.failed),
            ("timed_out", a.timed_out),
            ("evicted", a.evicted),
            ("refused_per_source", a.refused_per_source),
            ("refused_total", a.refused_total),
            ("retried", a.retried),
        ];
        let series: Vec<(Labels, u64)> = outcomes
            .iter()
            .map(|(o, n)| (vec![("outcome", *o)], *n))
            .collect();
        counters(
            enc,
            "admission_connections",
            "Unauthenticated connections, by what became of them.",
            &series,
        )?;
    }
    Ok(())
}

fn encode_links(enc: &mut DescriptorEncoder, links: &[Link]) -> Fmt {
    let ids: Vec<String> = links.iter().map(|l| l.link.to_string()).collect();
    let base =
        |i: usize| -> Labels { vec![("peer", links[i].peer.as_str()), ("link", ids[i].as_str())] };
    let with = |i: usize, k: &'static str, v: &'static str| -> Labels {
        let mut l = base(i);
        l.push((k, v));
        l
    };
    let mut up = Vec::new();
    let mut frames = Vec::new();
    let mut bytes = Vec::new();
    let mut drops = Vec::new();
    let mut ages = Vec::new();
    let (mut queued, mut queued_bytes, mut stalls, mut stalled) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut quota_waits = Vec::new();
    let (mut names, mut names_refused) = (Vec::new(), Vec::new());
    let (mut rtt, mut cwnd, mut sent, mut lost, mut cong) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut mtu = Vec::new();
    let mut repairs = Vec::new();
    let mut rebuilt = Vec::new();
    let mut verdicts = Vec::new();
    for (i, l) in links.iter().enumerate() {
        up.push((base(i), if l.closed { 0.0 } else { 1.0 }));
        frames.push((with(i, "direction", "in"), l.frames_in));
        frames.push((with(i, "direction", "out"), l.frames_out));
        bytes.push((with(i, "direction", "in"), l.bytes_in));
        bytes.push((with(i, "direction", "out"), l.bytes_out));
        for (c, n) in l.drops.by_cause() {
            drops.push((with(i, "cause", c), n));
        }
        ages.push((base(i), Hist::from_ages(&l.data_age)));
        queued.push((base(i), l.queue.messages as f64));
        queued_bytes.push((base(i), l.queue.bytes as f64));
        stalls.push((base(i), l.queue.stalls));
        stalled.push((base(i), l.queue.stalled_topics as f64));
        quota_waits.push((base(i), l.queue.quota_waits));
        names.push((base(i), l.names_held as f64));
        names_refused.push((base(i), l.names_refused));
        if let Some(p) = &l.path {
            rtt.push((base(i), p.rtt_us as f64 / 1e6));
            cwnd.push((base(i), p.cwnd as f64));
            sent.push((base(i), p.sent_packets));
            lost.push((base(i), p.lost_packets));
            cong.push((base(i), p.congestion_events));
            mtu.push((base(i), p.mtu as f64));
            repairs.push((with(i, "direction", "out"), p.repairs_sent));
            repairs.push((with(i, "direction", "in"), p.repairs_received));
            rebuilt.push((base(i), p.shards_rebuilt));
            for (v, n) in [
                ("random", p.losses_random),
                ("queue", p.cuts_queue),
                ("loss_share", p.cuts_loss_share),
                ("other", p.cuts_other),
            ] {
                verdicts.push((with(i, "verdict", v), n));
            }
        }
    }
    gauges(
        enc,
        "link_up",
        "1 while the link is up, 0 for a recently closed one (final figures).",
        &up,
    )?;
    counters(
        enc,
        "link_frames",
        "Frames carried by the link, by direction.",
        &frames,
    )?;
    counters(
        enc,
        "link_bytes",
        "Bytes carried by the link, by direction.",
        &bytes,
    )?;
    counters(enc, "link_dropped", "Messages the link dropped, by cause (full: reliable queue full; stale: best-effort replaced; quota: best-effort over a client's quota; no_route: data nobody wanted, counted against its sender).", &drops)?;
    counters(
        enc,
        "link_quota_waits",
        "Times a client link's reliable data was held back for its quota (back-pressure, nothing dropped).",
        &quota_waits,
    )?;
    gauges(
        enc,
        "link_names",
        "Names a client link holds in this router (subscriptions and publications).",
        &names,
    )?;
    counters(
        enc,
        "link_names_refused",
        "Subscriptions and publications refused to a client link over its limit of names (link.client_max_names).",
        &names_refused,
    )?;
    gauges(
        enc,
        "link_queued_messages",
        "Messages waiting in the link's send queue.",
        &queued,
    )?;
    gauges(
        enc,
        "link_queued_bytes",
        "Bytes waiting in the link's send queue.",
        &queued_bytes,
    )?;
    counters(
        enc,
        "link_stalls",
        "Times a reliable topic found the link's queue full and paused its publishers.",
        &stalls,
    )?;
    gauges(
        enc,
        "link_stalled_topics",
        "Reliable topics paused on the link now, waiting for room in its queue.",
        &stalled,
    )?;
    histograms(
        enc,
        "link_data_age_seconds",
        "Age of the data that arrived on the link, since the publishing proxy sealed it.",
        &ages,
    )?;
    gauges(
        enc,
        "link_rtt_seconds",
        "The QUIC connection's round-trip time estimate.",
        &rtt,
    )?;
    gauges(
        enc,
        "link_congestion_window_bytes",
        "The QUIC connection's congestion window.",
        &cwnd,
    )?;
    gauges(
        enc,
        "link_path_mtu_bytes",
        "The largest UDP payload the QUIC connection's path carries (MTU discovery).",
        &mtu,
    )?;
    counters(
        enc,
        "link_sent_packets",
        "QUIC packets sent on the link.",
        &sent,
    )?;
    counters(
        enc,
        "link_lost_packets",
        "QUIC packets the link lost.",
        &lost,
    )?;
    counters(
        enc,
        "link_congestion_events",
        "Loss events the QUIC connection handed to its congestion controller (packets lost together count once).",
        &cong,
    )?;
    counters(
        enc,
        "link_loss_verdicts",
        "What the default congestion controller made of each loss event: random (forgiven, no window cut), or a cut for a queue, a high loss share or another reason (persistent congestion, ECN).",
        &verdicts,
    )?;
    counters(
        enc,
        "link_repairs",
        "Forward error correction datagrams of the QUIC link, by direction (sent only on a lossy path).",
        &repairs,
    )?;
    counters(
        enc,
        "link_rebuilt_shards",
        "Lost pieces of large messages the link rebuilt from repairs instead of waiting for QUIC's retransmission.",
        &rebuilt,
    )
}

fn topic_labels(r: &TopicRow) -> Labels<'_> {
    vec![
        ("topic", r.topic.as_str()),
        ("direction", direction(r.direction)),
    ]
}

fn encode_topics(enc: &mut DescriptorEncoder, rows: &[TopicRow]) -> Fmt {
    let base = topic_labels;
    let messages: Vec<(Labels, u64)> = rows.iter().map(|r| (base(r), r.messages)).collect();
    let bytes: Vec<(Labels, u64)> = rows.iter().map(|r| (base(r), r.bytes)).collect();
    let recovered: Vec<(Labels, u64)> = rows.iter().map(|r| (base(r), r.recovered)).collect();
    let mut drops = Vec::new();
    let mut ages = Vec::new();
    for r in rows {
        for (c, n) in &r.drops {
            let mut l = base(r);
            l.push(("cause", c));
            drops.push((l, *n));
        }
        for (stage, h) in &r.ages {
            let mut l = base(r);
            l.push(("stage", stage));
            ages.push((l, h.clone()));
        }
    }
    counters(enc, "topic_messages", "Messages of a topic: exported (sealed and sent) or imported (written to the local network).", &messages)?;
    counters(
        enc,
        "topic_bytes",
        "Payload bytes of a topic's messages (CDR, as published).",
        &bytes,
    )?;
    counters(
        enc,
        "topic_dropped",
        "Messages of a topic dropped, by cause (see docs/operations.md).",
        &drops,
    )?;
    counters(
        enc,
        "topic_recovered",
        "Messages of a reliable topic asked for again after a loss: resent (export) or received only so (import).",
        &recovered,
    )?;
    histograms(
        enc,
        "topic_age_seconds",
        "Age of a topic's messages at this hop: sealed (export), opened or written (import).",
        &ages,
    )
}

#[cfg(test)]
mod tests;
