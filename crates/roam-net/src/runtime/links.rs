//! Links coming up and going down: the one link kept per peer router ([`replace`] decides
//! which of two), and what a link's end takes with it.

use std::time::Instant;

use roam_proto::frame::Role;
use tokio::sync::oneshot;
use tracing::{info, warn};

use super::replace::{Offer, Refusal, Verdict};
use super::{report, trust, LinkEntry, Runtime, CLOSED_LINKS_KEPT};
use crate::link::{Established, LinkId};

/// Why a link replaced by a newer one from the same router is closed (the peer logs it).
pub(super) const REPLACED: &str = "replaced by a newer link";
/// Why the losing link of a simultaneous dial is closed (its dialer knows it by this).
pub(super) const DUPLICATE: &str = "duplicate link";

impl Runtime {
    /// An authenticated link: brought up, or closed in favour of the peer's current link.
    /// `down` is the dialer's, told when the peer's link (this one or the one kept) ends.
    pub(super) fn link_up(
        &mut self,
        link: LinkId,
        mut est: Established,
        dialed: bool,
        down: Option<oneshot::Sender<()>>,
        now: Instant,
    ) {
        let peer = est.peer.clone();
        // The handshake checked the list held when it ran; a newer one may have come since
        // (or a resumed TLS session skipped the check).
        if let Some(why) = trust::refusal(&peer, &self.trust.revoked, trust::now_unix()) {
            warn!(peer = %peer.name, link, "refused a link: {why}");
            self.count_refused(why);
            est.tx.close(why);
            return;
        }
        let mut waiting: Vec<_> = down.into_iter().collect();
        if peer.role == Role::Router {
            let offer = Offer {
                link,
                dialed_by: if dialed { self.core.id() } else { peer.id },
                remote: est.tx.remote(),
            };
            match self.peers.offer(peer.id, offer, now) {
                Verdict::Up => {}
                Verdict::Replace { old } => {
                    info!(peer = %peer.name, link, "link {old} replaced by a newer one (the peer came back, or both dialed at once)");
                    self.replacements.replaced += 1;
                    if let Some(entry) = self.links.get(&old) {
                        entry.tx.close(REPLACED);
                    }
                    // The old link's routes go now, and come back over the new link below.
                    if let Some(entry) = self.remove_link(old, REPLACED, now) {
                        waiting.extend(entry.down);
                    }
                }
                Verdict::KeepExisting { current } => {
                    info!(peer = %peer.name, link, "{} and this router dialed each other; keeping link {current}", peer.name);
                    est.tx.close(DUPLICATE);
                    self.wait_for(current, waiting);
                    return;
                }
                Verdict::Refuse {
                    current,
                    why:
                        Refusal::Contested {
                            until,
                            first,
                            places,
                        },
                } => {
                    self.replacements.refused += 1;
                    if first {
                        self.replacements.contested += 1;
                        let place = |a: Option<std::net::SocketAddr>| {
                            a.map_or_else(|| "an unknown address".to_string(), |a| a.to_string())
                        };
                        warn!(
                            "identity {} is connecting from two places: {} and {}; keeping link {current} and refusing its new links for {:?} (is its certificate on two machines?)",
                            peer.name,
                            place(places[0]),
                            place(places[1]),
                            until.saturating_duration_since(now),
                        );
                    }
                    est.tx
                        .close("identity in use by another live link; refused for a while");
                    self.wait_for(current, waiting);
                    return;
                }
            }
        }
        info!(peer = %peer.name, role = ?peer.role, dialed, link, "link up");
        self.core.link_up(now, link, peer.role, peer.id);
        self.links.insert(
            link,
            LinkEntry {
                tx: est.tx.clone(),
                peer,
                down: waiting,
            },
        );
        est.start();
        // A router that was down or cut off learns the newest list from its first link.
        if let Some(list) = self.trust.frame() {
            est.tx.send(list);
        }
    }

    /// Dialers whose link was closed in favour of `current` wait for it to end, instead of
    /// dialing again at once into another refusal.
    fn wait_for(&mut self, current: LinkId, waiting: Vec<oneshot::Sender<()>>) {
        if let Some(entry) = self.links.get_mut(&current) {
            entry.down.extend(waiting);
        }
        // Otherwise they are dropped, which tells them to dial again.
    }

    /// Says once per link that a client reached its limit of names: from then on the
    /// refusals are only counted (`names_refused` in its status and metrics).
    pub(super) fn warn_names_refused(&self, link: LinkId) {
        let peer = self.links.get(&link).map_or("?", |l| l.peer.name.as_str());
        warn!(
            peer,
            link,
            held = self.core.names_held_by(link),
            "client holds its limit of names (link.client_max_names): further subscriptions and publications refused"
        );
    }

    /// Takes a link down: its routes, what waited for it, its final figures kept for the
    /// report. `None` if it was not up (already replaced).
    pub(super) fn remove_link(
        &mut self,
        link: LinkId,
        reason: &str,
        now: Instant,
    ) -> Option<LinkEntry> {
        let entry = self.links.remove(&link)?;
        info!(peer = %entry.peer.name, link, "link down: {reason}");
        if entry.peer.role == Role::Router {
            self.router_links_down.send_modify(|n| *n += 1);
        }
        if self.closed.len() == CLOSED_LINKS_KEPT {
            self.closed.pop_front();
        }
        let mut last = report::link_report(link, &entry);
        last.closed = true;
        last.dropped_no_route = self.core.no_route_from(link);
        last.names = self.core.names_held_by(link);
        last.names_refused = self.core.names_refused_from(link);
        self.closed.push_back(last);
        // Whatever waited for this link is moot now.
        let stalled: Vec<_> = self
            .stalls
            .keys()
            .filter(|(l, _)| *l == link)
            .map(|(_, n)| *n)
            .collect();
        for name in stalled {
            self.stalls.remove(&(link, name));
            self.resume_if_unstalled(name);
        }
        self.peers.down(entry.peer.id, link);
        self.core.link_down(now, link);
        Some(entry)
    }
}
