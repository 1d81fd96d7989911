//! A router's status report: routing figures and each link's, open and recently closed.

use std::sync::atomic::Ordering;

use roam_routing::Stats;

use super::{LinkEntry, Runtime};
use crate::admission::AdmissionStats;
use crate::link::{LinkId, PeerInfo};

/// Per-link figures for status output.
#[derive(Debug, Clone)]
pub struct LinkReport {
    pub link: LinkId,
    pub peer: PeerInfo,
    pub kind: &'static str,
    pub frames_in: u64,
    pub frames_out: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub dropped_full: u64,
    pub dropped_stale: u64,
    /// What waits in the link's lanes now (its send queue).
    pub queued: crate::lane::Depth,
    /// Times a reliable topic found the link's lane full and paused its publishers.
    pub stalls: u64,
    /// Topics paused on this link now, waiting for room in its lane.
    pub stalled_topics: usize,
    /// Times a client link's reliable data was held back for its quota, and best-effort
    /// messages it dropped over the quota ([`crate::quota`]).
    pub quota_waits: u64,
    pub dropped_quota: u64,
    /// Data from this link that nobody wanted (no route), counted against its sender.
    pub dropped_no_route: u64,
    /// Names a client link holds (subscriptions and publications), and those refused for
    /// its limit (`LinkConfig::client_max_names`).
    pub names: usize,
    pub names_refused: u64,
    /// Age of the data that arrived on the link (see [`crate::latency`]): every bucket, so
    /// an export format loses nothing; `.summary()` gives the quantiles.
    pub data_age: crate::latency::LatencySnapshot,
    /// The QUIC connection's path estimates (`None` on TCP links).
    pub path: Option<crate::link::PathStats>,
    /// Whether the link takes its peer to forward what it gets (its LSAs name routers besides
    /// this one, or it sent none): QUIC sends small messages from the routing thread only to
    /// a peer that does not.
    pub peer_forwards: bool,
    /// The link is down; these are its figures at the end (the last
    /// [`CLOSED_LINKS_KEPT`] closed links are reported).
    pub closed: bool,
}

/// How many closed links' final figures a router keeps for its status report, so a link
/// that went down (a peer restarted, or both ends stopping together) is still accounted for.
pub const CLOSED_LINKS_KEPT: usize = 16;

#[derive(Debug, Clone)]
pub struct RouterReport {
    pub routing: Stats,
    pub links: Vec<LinkReport>,
    /// In-process deliveries dropped because the local subscriber was not reading.
    pub local_dropped: u64,
    /// Connections that have not authenticated yet: pending now, and what became of them.
    pub admission: AdmissionStats,
    /// Router links replaced by newer ones, and refused while an identity was contested.
    pub replacements: ReplaceStats,
    /// The revocation list held, lists refused, links closed for revoked or expired
    /// certificates.
    pub trust: super::TrustStats,
}

/// What became of second links from one router identity (see `runtime/replace.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplaceStats {
    /// Links closed in favour of a newer one from the same router (it came back).
    pub replaced: u64,
    /// Links refused because their identity's link changed hands too often lately.
    pub refused: u64,
    /// Times an identity was found linking from two places at once (each logged once).
    pub contested: u64,
}

impl Runtime {
    pub(super) fn report(&self) -> RouterReport {
        let mut links: Vec<LinkReport> = self
            .links
            .iter()
            .map(|(id, l)| {
                let mut r = link_report(*id, l);
                r.stalled_topics = self.stalls.keys().filter(|(k, _)| k == id).count();
                r.dropped_no_route = self.core.no_route_from(*id);
                r.names = self.core.names_held_by(*id);
                r.names_refused = self.core.names_refused_from(*id);
                r
            })
            .collect();
        links.sort_by_key(|l| l.link);
        links.extend(self.closed.iter().cloned());
        RouterReport {
            routing: self.core.stats(),
            links,
            local_dropped: self.local_dropped,
            admission: self.gate.stats(),
            replacements: self.replacements,
            trust: self.trust.stats,
        }
    }
}

pub(super) fn link_report(link: LinkId, l: &LinkEntry) -> LinkReport {
    let s = l.tx.stats();
    let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    LinkReport {
        link,
        peer: l.peer.clone(),
        kind: l.tx.0.kind(),
        frames_in: g(&s.frames_in),
        frames_out: g(&s.frames_out),
        bytes_in: g(&s.bytes_in),
        bytes_out: g(&s.bytes_out),
        dropped_full: g(&s.dropped_full),
        dropped_stale: g(&s.dropped_stale),
        queued: l.tx.depth(),
        stalls: g(&s.stalls),
        stalled_topics: 0,
        quota_waits: g(&s.quota_waits),
        dropped_quota: g(&s.dropped_quota),
        dropped_no_route: 0,
        names: 0,
        names_refused: 0,
        data_age: s.data_age.snapshot(),
        path: l.tx.path(),
        peer_forwards: l.tx.peer_forwards(),
        closed: false,
    }
}
