//! The typed metrics snapshot every roam process hands out.
//!
//! One [`Snapshot`] says what a process measured since it started: who it is (and its CPU
//! time and memory), its router's counters, each link with its QUIC path figures and the age
//! of the data it brought, the admission of unauthenticated connections, and each topic it
//! exports or imports with its counters, drops by cause, and ages. Everything else renders
//! it: the `roam::stats` status lines, the metrics file (`metrics_file:`), the lab, and the
//! Prometheus endpoint, dashboard and `roam top` of the observability work.
//!
//! It is plain data (no atomics, no locks), serialized as JSON with `"version": 1`. Within a
//! version, fields are only ever added, and readers ignore fields they do not know; a change
//! that would mislead an old reader takes a new version, which [`Snapshot::from_json`]
//! refuses by name. Counters count from the start of the process; ages are microseconds
//! since the publishing proxy sealed the message (see `roam_net::latency`), with every
//! histogram bucket kept so an exporter loses nothing ([`Ages`]).
//!
//! Where the figures come from: [`Metrics`] gathers them from the sources a process owns
//! (its router, its topics) when asked; [`MetricsFile`] keeps the latest snapshot in a file.

mod endpoint;
mod file;
mod process;
pub mod prometheus;
pub mod rates;
pub mod realm;
mod source;
#[cfg(test)]
mod tests;

use roam_net::latency::LatencySnapshot;
use roam_net::runtime::{LinkReport, RouterReport};
use serde::{Deserialize, Serialize};

pub use endpoint::{MetricsEndpoint, MetricsEndpointError};
pub use file::{MetricsFile, MetricsFileError};
pub use source::{Metrics, TopicSource};

/// The snapshot format this build writes and reads.
pub const VERSION: u32 = 1;

/// What one process measured, at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// [`VERSION`].
    pub version: u32,
    pub process: Process,
    /// The process's router (a router, or a proxy's edge router); absent in a process
    /// without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<Routing>,
    /// Connections to the router that have not authenticated yet, and what became of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,
    /// The revocation list the router holds, and what it refused and closed for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<Trust>,
    /// Links up now, in the order they came up, then the last closed ones (`closed`).
    #[serde(default)]
    pub links: Vec<Link>,
    /// Topics exported and imported, ordered by direction then name.
    #[serde(default)]
    pub topics: Vec<Topic>,
}

/// Why a snapshot could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("not a metrics snapshot: {0}")]
    Json(#[from] serde_json::Error),
    #[error("metrics snapshot version {found}; this roam reads version {VERSION}")]
    Version { found: u32 },
}

impl Snapshot {
    /// An empty snapshot of `process`, to fill with [`Self::with_router`] and
    /// [`Self::with_topics`].
    pub fn new(process: Process) -> Self {
        Snapshot {
            version: VERSION,
            process,
            routing: None,
            admission: None,
            trust: None,
            links: Vec::new(),
            topics: Vec::new(),
        }
    }

    /// Adds a router's counters, links and admission figures.
    pub fn with_router(mut self, r: &RouterReport) -> Self {
        self.routing = Some(Routing::from(r));
        self.admission = Some(Admission::from(&r.admission));
        self.trust = Some(Trust::from(&r.trust));
        self.links = r.links.iter().map(Link::from).collect();
        self
    }

    /// Adds topics (sorted by direction, then name).
    pub fn with_topics(mut self, mut topics: Vec<Topic>) -> Self {
        topics.sort_by(|a, b| (a.direction, &a.name).cmp(&(b.direction, &b.name)));
        self.topics = topics;
        self
    }

    /// One line of JSON (no newline).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }

    /// Reads a snapshot, refusing another version by name rather than misreading it.
    pub fn from_json(text: &str) -> Result<Self, SnapshotError> {
        #[derive(Deserialize)]
        struct Versioned {
            version: u32,
        }
        let v: Versioned = serde_json::from_str(text)?;
        if v.version != VERSION {
            return Err(SnapshotError::Version { found: v.version });
        }
        Ok(serde_json::from_str(text)?)
    }
}

/// What kind of roam process wrote the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProcessKind {
    Router,
    Proxy,
    Gateway,
    Client,
}

/// The process itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Process {
    /// Its identity name (the certificate's).
    pub id: String,
    pub kind: ProcessKind,
    /// The roam release that wrote the snapshot.
    pub roam_version: String,
    pub pid: u32,
    /// When it started and when the snapshot was taken: µs since the Unix epoch.
    pub start_time_us: u64,
    pub snapshot_time_us: u64,
    /// CPU time used, user and system, µs (absent where the system does not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time_us: Option<u64>,
    /// Resident memory now, bytes (Linux only: /proc/self/status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// Datagrams the kernel dropped at the process's QUIC sockets because their receive buffer
    /// was full, since they were opened (Linux only; absent without a QUIC endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_receive_drops: Option<u64>,
}

/// A router's counters and table sizes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Routing {
    /// Names the router knows a route for.
    pub names: u64,
    pub routers_known: u64,
    /// Names with any subscription state here.
    pub subscribed_names: u64,
    /// Data frames received (from links and in-process publishers).
    pub data_in: u64,
    /// Data frames sent on to a next hop (one per link).
    pub data_forwarded: u64,
    /// Data handed to in-process subscribers.
    pub data_delivered_local: u64,
    pub control_frames_in: u64,
    pub drops: RoutingDrops,
    /// Router links replaced by a newer one from the same identity, and what a contested
    /// identity (two live holders, e.g. a cloned robot) was refused.
    #[serde(default)]
    pub replacements: Replacements,
}

/// Second links from one router identity (see docs/operations.md, "A router dies").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replacements {
    /// Links closed in favour of a newer one (the router came back).
    pub replaced: u64,
    /// Links refused while their identity was contested.
    pub refused: u64,
    /// Times an identity was found linking from two places at once.
    pub contested: u64,
}

/// Data a router dropped, by cause.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutingDrops {
    /// For a name nobody wants here.
    pub no_route: u64,
    /// Arrived on a link that is not the reverse path to its origin (a loop or a detour).
    pub rpf: u64,
    /// The envelope header could not be read.
    pub malformed: u64,
    /// Arrived on a link that was not up.
    pub unknown_link: u64,
    /// An in-process subscriber was not reading (best-effort data, or reliable data after
    /// the stall timeout).
    pub local_subscriber: u64,
}

impl RoutingDrops {
    /// Every cause with its count, for exporters (`cause` labels).
    pub fn by_cause(&self) -> [(&'static str, u64); 5] {
        [
            ("no_route", self.no_route),
            ("rpf", self.rpf),
            ("malformed", self.malformed),
            ("unknown_link", self.unknown_link),
            ("local_subscriber", self.local_subscriber),
        ]
    }
}

impl From<&RouterReport> for Routing {
    fn from(r: &RouterReport) -> Self {
        let s = &r.routing;
        Routing {
            names: s.names,
            routers_known: s.routers_known,
            subscribed_names: s.subscribed_names,
            data_in: s.data_in,
            data_forwarded: s.data_forwarded,
            data_delivered_local: s.data_delivered_local,
            control_frames_in: s.frames_control_in,
            drops: RoutingDrops {
                no_route: s.data_no_route,
                rpf: s.data_rpf_drop,
                malformed: s.data_malformed,
                unknown_link: s.data_unknown_link,
                local_subscriber: r.local_dropped,
            },
            replacements: Replacements {
                replaced: r.replacements.replaced,
                refused: r.replacements.refused,
                contested: r.replacements.contested,
            },
        }
    }
}

/// Connections that have not authenticated yet: pending now, and what became of the others
/// (see docs/operations.md, "Connections that have not authenticated yet").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Admission {
    pub pending: u64,
    pub admitted: u64,
    pub authenticated: u64,
    pub failed: u64,
    pub timed_out: u64,
    pub evicted: u64,
    pub refused_per_source: u64,
    pub refused_total: u64,
    pub retried: u64,
}

impl From<&roam_net::admission::AdmissionStats> for Admission {
    fn from(a: &roam_net::admission::AdmissionStats) -> Self {
        Admission {
            pending: a.pending as u64,
            admitted: a.admitted,
            authenticated: a.authenticated,
            failed: a.failed,
            timed_out: a.timed_out,
            evicted: a.evicted,
            refused_per_source: a.refused_per_source,
            refused_total: a.refused_total,
            retried: a.retried,
        }
    }
}

/// The revocation list a router holds, and what it did for it (see docs/security.md,
/// "Revocation").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trust {
    /// The CRL number of the list held (0: none).
    pub list_number: u64,
    /// Certificates the list revokes.
    pub revoked: u64,
    /// Newer lists taken, from links or the file.
    pub lists_taken: u64,
    /// Lists refused: not signed by the CA, malformed or too large.
    pub lists_refused_invalid: u64,
    /// Lists refused as older than the one held.
    pub lists_refused_older: u64,
    /// Links closed because their peer's certificate was revoked.
    pub links_closed_revoked: u64,
    /// Links closed because their peer's certificate expired.
    pub links_closed_expired: u64,
}

impl From<&roam_net::runtime::TrustStats> for Trust {
    fn from(t: &roam_net::runtime::TrustStats) -> Self {
        Trust {
            list_number: t.list_number,
            revoked: t.revoked,
            lists_taken: t.taken,
            lists_refused_invalid: t.refused_invalid,
            lists_refused_older: t.refused_older,
            links_closed_revoked: t.closed_revoked,
            links_closed_expired: t.closed_expired,
        }
    }
}

/// The transport of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    Quic,
    /// TCP+TLS.
    Tcp,
    /// A transport this reader does not know.
    #[serde(other)]
    Other,
}

impl LinkKind {
    /// From the transport's own name (`roam_net::link::Transport::kind`).
    pub fn from_transport(kind: &str) -> Self {
        match kind {
            "quic" => LinkKind::Quic,
            "tcp+tls" | "tcp" => LinkKind::Tcp,
            _ => LinkKind::Other,
        }
    }
}

/// Who is at the other end of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PeerRole {
    Router,
    Client,
}

/// One link of a router.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// The router's number for the link (unique while the process runs).
    pub link: u32,
    /// The peer's identity name.
    pub peer: String,
    pub peer_role: PeerRole,
    pub kind: LinkKind,
    /// The link is down: these are its final figures.
    pub closed: bool,
    pub frames_in: u64,
    pub frames_out: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub drops: LinkDrops,
    /// The link's send queue and its back-pressure (absent in snapshots from before it was
    /// reported).
    #[serde(default)]
    pub queue: LinkQueue,
    /// The QUIC connection's own path estimates; absent on TCP links (the kernel keeps
    /// those).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<QuicPath>,
    /// Age of the data that arrived on the link, when it was read.
    pub data_age: Ages,
    /// Names a client link holds (subscriptions and publications) and those refused for its
    /// limit (absent in snapshots from before the limit).
    #[serde(default)]
    pub names_held: u64,
    #[serde(default)]
    pub names_refused: u64,
}

/// Messages a link dropped, by cause.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkDrops {
    /// Reliable messages refused because the link's queue was full (after the stall
    /// timeout).
    pub full: u64,
    /// Best-effort messages dropped to make room for newer ones.
    pub stale: u64,
    /// Best-effort messages of a client link dropped over its quota (absent in snapshots
    /// from before quotas).
    #[serde(default)]
    pub quota: u64,
    /// Data this link brought that nobody wanted (no route here or beyond): on a client
    /// link, its sender publishes what no one subscribes to.
    #[serde(default)]
    pub no_route: u64,
}

impl LinkDrops {
    /// Every cause with its count, for exporters (`cause` labels).
    pub fn by_cause(&self) -> [(&'static str, u64); 4] {
        [
            ("full", self.full),
            ("stale", self.stale),
            ("quota", self.quota),
            ("no_route", self.no_route),
        ]
    }
}

/// A link's send queue: what waits to be written, and how often reliable topics had to wait
/// for room (each stall pauses that topic's publishers, never the others').
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkQueue {
    /// Messages waiting in the link's lanes now.
    pub messages: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Times a reliable topic found the lane full and paused.
    pub stalls: u64,
    /// Topics paused on this link now.
    pub stalled_topics: u64,
    /// Times a client link's reliable data was held back for its quota (the client slowed
    /// down by back-pressure, nothing dropped).
    #[serde(default)]
    pub quota_waits: u64,
}

/// A QUIC connection's view of its network path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuicPath {
    pub rtt_us: u64,
    /// Congestion window: bytes the link may have in flight.
    pub cwnd: u64,
    pub sent_packets: u64,
    pub lost_packets: u64,
    /// Loss events handed to the congestion controller (a run of packets lost together counts
    /// once); the `cuts_*` fields say how many shrank the window.
    pub congestion_events: u64,
    /// The largest UDP payload the path carries (MTU discovery); 0 in snapshots of versions
    /// that did not report it.
    #[serde(default)]
    pub mtu: u16,
    /// Forward error correction: repair datagrams sent and received, and pieces of large
    /// messages rebuilt from them (0 in snapshots of versions without it).
    #[serde(default)]
    pub repairs_sent: u64,
    #[serde(default)]
    pub repairs_received: u64,
    #[serde(default)]
    pub shards_rebuilt: u64,
    /// The default controller's verdicts on those loss events: forgiven as a radio's random
    /// loss, or a window cut because the round trip showed a queue, because losses were too
    /// frequent, or for another reason (persistent congestion, ECN, no round trip yet). All 0
    /// under plain Cubic or BBR and in snapshots of versions without them.
    #[serde(default)]
    pub losses_random: u64,
    #[serde(default)]
    pub cuts_queue: u64,
    #[serde(default)]
    pub cuts_loss_share: u64,
    #[serde(default)]
    pub cuts_other: u64,
}

impl From<&roam_net::link::PathStats> for QuicPath {
    fn from(p: &roam_net::link::PathStats) -> Self {
        QuicPath {
            rtt_us: p.rtt_us,
            cwnd: p.cwnd,
            sent_packets: p.sent_packets,
            lost_packets: p.lost_packets,
            congestion_events: p.congestion_events,
            mtu: p.mtu,
            repairs_sent: p.repairs_sent,
            repairs_received: p.repairs_received,
            shards_rebuilt: p.shards_rebuilt,
            losses_random: p.loss_verdicts.random,
            cuts_queue: p.loss_verdicts.queue,
            cuts_loss_share: p.loss_verdicts.loss_share,
            cuts_other: p.loss_verdicts.other,
        }
    }
}

impl From<&LinkReport> for Link {
    fn from(l: &LinkReport) -> Self {
        Link {
            link: l.link,
            peer: l.peer.name.clone(),
            peer_role: match l.peer.role {
                roam_proto::frame::Role::Router => PeerRole::Router,
                roam_proto::frame::Role::Client => PeerRole::Client,
            },
            kind: LinkKind::from_transport(l.kind),
            closed: l.closed,
            frames_in: l.frames_in,
            frames_out: l.frames_out,
            bytes_in: l.bytes_in,
            bytes_out: l.bytes_out,
            drops: LinkDrops {
                full: l.dropped_full,
                stale: l.dropped_stale,
                quota: l.dropped_quota,
                no_route: l.dropped_no_route,
            },
            queue: LinkQueue {
                messages: l.queued.messages as u64,
                bytes: l.queued.bytes as u64,
                stalls: l.stalls,
                stalled_topics: l.stalled_topics as u64,
                quota_waits: l.quota_waits,
            },
            path: l.path.as_ref().map(QuicPath::from),
            data_age: Ages::from(&l.data_age),
            names_held: l.names as u64,
            names_refused: l.names_refused,
        }
    }
}

/// Which way a topic crosses this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// From the local network into a realm.
    Export,
    /// From a realm into the local network.
    Import,
}

/// One topic a process exports or imports.
///
/// Exports: `samples` sealed and handed to the router; `age_in` the age of each sample (its
/// DDS source timestamp) when sealed; no `age_out`. Imports: `samples` written to the local
/// network; `age_in` when the envelope was opened, `age_out` once written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topic {
    /// The local (DDS) topic name, e.g. `rt/chatter`.
    pub name: String,
    pub direction: Direction,
    pub samples: u64,
    /// Payload bytes of those samples (absent in snapshots from before it was counted).
    #[serde(default)]
    pub bytes: u64,
    /// The largest and smallest payload, bytes (none before the first sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_size: Option<u64>,
    pub drops: TopicDrops,
    /// Import: messages that arrived only because they were asked for again; export:
    /// messages sent again on request (end-to-end recovery). Absent in older snapshots.
    #[serde(default)]
    pub recovered: u64,
    pub age_in: Ages,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_out: Option<Ages>,
}

/// Samples and envelopes a topic dropped, by cause. Exports count `failed`, `unattributed`
/// and `overwritten`; imports `refused`, `unannounced` and `failed`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicDrops {
    /// Import: envelopes that did not open (forged, replayed, another realm's key).
    pub refused: u64,
    /// Export: samples that could not be sealed; import: DDS writes that failed.
    pub failed: u64,
    /// Export: samples of a publisher DDS discovery never reported.
    pub unattributed: u64,
    /// Import: data of a stream no exporter announced.
    pub unannounced: u64,
    /// Both: messages a proxy's rules dropped (Filter, Drop, Limit, anti-spoofing; see
    /// docs/rules.md). Absent in snapshots from before the rules.
    #[serde(default)]
    pub ruled: u64,
    /// Export: samples of a keep-last topic that a newer one replaced while the topic was
    /// pushed back on (its backlog was full), as the topic's DDS history would. Absent in
    /// snapshots from before it was counted.
    #[serde(default)]
    pub overwritten: u64,
    /// Both: messages of a reliable stream that keeps every message which never arrived
    /// (see `crate::recovery`). Import: gaps nothing filled; export: messages subscribers
    /// asked for again after the retransmission window had let them go. Absent in snapshots
    /// from before end-to-end recovery.
    #[serde(default)]
    pub lost: u64,
}

impl Topic {
    /// The drop causes that apply to this topic's direction, with their counts, for
    /// exporters (`cause` labels).
    pub fn drops_by_cause(&self) -> Vec<(&'static str, u64)> {
        let d = &self.drops;
        match self.direction {
            Direction::Export => vec![
                ("failed", d.failed),
                ("unattributed", d.unattributed),
                ("ruled", d.ruled),
                ("overwritten", d.overwritten),
                ("lost", d.lost),
            ],
            Direction::Import => vec![
                ("refused", d.refused),
                ("unannounced", d.unannounced),
                ("failed", d.failed),
                ("ruled", d.ruled),
                ("lost", d.lost),
            ],
        }
    }
}

/// A distribution of ages, microseconds: the summary the status lines print and every
/// non-empty histogram bucket, so a Prometheus histogram (or any coarser one) can be made
/// from it without loss. Bucket bounds are those of `roam_net::latency::bucket_bounds_us`
/// (1 µs wide below 64 µs, then 16 per power of two: about 6% resolution).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ages {
    pub count: u64,
    pub sum_us: u64,
    pub min_us: u64,
    pub max_us: u64,
    pub mean_us: f64,
    pub std_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    /// Non-empty buckets in increasing order; not cumulative.
    #[serde(default)]
    pub buckets: Vec<Bucket>,
}

/// `count` ages at most `le_us` (inclusive) and above the previous bucket's bound. The last
/// bucket of a histogram has `le_us` = `u64::MAX` (Prometheus: `+Inf`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    pub le_us: u64,
    pub count: u64,
}

impl Ages {
    /// How many ages were at most `le_us`: exact when `le_us` is a bucket bound (e.g.
    /// `2^k - 1`), otherwise those of the buckets wholly below it.
    pub fn count_at_most(&self, le_us: u64) -> u64 {
        self.buckets
            .iter()
            .take_while(|b| b.le_us <= le_us)
            .map(|b| b.count)
            .sum()
    }
}

impl From<&LatencySnapshot> for Ages {
    fn from(h: &LatencySnapshot) -> Self {
        let s = h.summary();
        Ages {
            count: h.count,
            sum_us: h.sum_us,
            min_us: h.min_us,
            max_us: h.max_us,
            mean_us: s.mean_us,
            std_us: s.std_us,
            p50_us: s.p50_us,
            p90_us: s.p90_us,
            p99_us: s.p99_us,
            buckets: h
                .buckets
                .iter()
                .map(|b| Bucket {
                    le_us: b.le_us,
                    count: b.count,
                })
                .collect(),
        }
    }
}

impl From<&roam_net::latency::LatencyHistogram> for Ages {
    fn from(h: &roam_net::latency::LatencyHistogram) -> Self {
        Ages::from(&h.snapshot())
    }
}
