//! Who may stay linked: the CA's revocation list, passed from router to router, and the
//! certificates' expiry.
//!
//! A router takes a newer list from any link (a peer router, or a client handing in what the
//! operator signed: the CA's signature is what makes it count, not who brings it), from the
//! file it watches, or at start from its identity's directory. Each list taken closes the
//! links of the certificates it revokes and goes on to every other link, so it crosses the
//! mesh in one flood; a link that brings an older list is sent the newer one back, and every
//! new link is sent the list at once, so a router that was down or cut off catches up when
//! it links again. The TLS verifiers read the same list ([`roam_pki::Revocations`]), so the
//! revoked identity's next handshake is refused too.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use roam_pki::{Order, RevocationList, Revocations};
use roam_proto::frame::Role;
use roam_proto::Frame;
use tracing::{info, warn};

use super::Runtime;
use crate::link::{LinkId, PeerInfo};

/// How often a router looks at its list's file and at its links' certificate expiry.
pub(super) const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Why a link is closed when its peer's certificate is revoked (the peer logs it).
pub(super) const REVOKED: &str = "certificate revoked";
/// Why a link is closed when its peer's certificate expires.
pub(super) const EXPIRED: &str = "certificate expired";

/// What a router did with revocation lists: its figures in the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrustStats {
    /// The CRL number of the list held (0: none).
    pub list_number: u64,
    /// Certificates it revokes.
    pub revoked: u64,
    /// Newer lists taken (from links or the file).
    pub taken: u64,
    /// Lists refused: not signed by the CA, malformed, or too large.
    pub refused_invalid: u64,
    /// Lists refused as older than the one held (answered with the one held).
    pub refused_older: u64,
    /// Links closed because their peer's certificate was revoked.
    pub closed_revoked: u64,
    /// Links closed because their peer's certificate expired.
    pub closed_expired: u64,
}

pub(super) struct Trust {
    pub(super) revoked: Revocations,
    pub(super) stats: TrustStats,
    /// The list generation acted on (links closed, passed on).
    seen: u64,
}

/// Where a list taken from a link goes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Onward {
    /// To every link but the one it came from.
    pub others: bool,
    /// Back to the link it came from: the newer list it lacks, or, for a client that
    /// handed one in, the confirmation that it was taken.
    pub source: bool,
}

/// Where a list brought by a peer of role `from` goes, by how it compared with the one held.
pub(super) fn onward(order: Order, from: Role) -> Onward {
    match order {
        Order::Newer => Onward {
            others: true,
            source: from == Role::Client,
        },
        Order::Older => Onward {
            others: false,
            source: true,
        },
        // A client that hands in the list held is told so; between routers this is where
        // the flood stops.
        Order::Same | Order::Conflict => Onward {
            others: false,
            source: from == Role::Client,
        },
    }
}

/// Why the peer may not stay linked, if it may not.
pub(super) fn refusal(
    peer: &PeerInfo,
    revoked: &Revocations,
    now_unix: i64,
) -> Option<&'static str> {
    if revoked.revokes(&peer.serial) {
        Some(REVOKED)
    } else if peer.not_after <= now_unix {
        Some(EXPIRED)
    } else {
        None
    }
}

pub(super) fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Trust {
    pub(super) fn new(revoked: Revocations) -> Self {
        let seen = revoked.generation();
        let mut me = Self {
            revoked,
            stats: TrustStats::default(),
            seen,
        };
        me.held_now();
        me
    }

    fn held_now(&mut self) {
        if let Some(list) = self.revoked.current() {
            self.stats.list_number = list.number();
            self.stats.revoked = list.len() as u64;
        }
    }

    /// The frame carrying the list held, if there is one.
    pub(super) fn frame(&self) -> Option<Frame> {
        let list = self.revoked.current()?;
        Some(Frame::Revocations(Bytes::copy_from_slice(list.der())))
    }
}

impl Runtime {
    /// A revocation list brought by `link`.
    pub(super) fn revocations_in(&mut self, link: LinkId, list: Bytes) {
        let Some(from) = self.links.get(&link).map(|l| l.peer.clone()) else {
            return;
        };
        match self.trust.revoked.offer(&list) {
            Ok((order, held)) => {
                let onward = onward(order, from.role);
                match order {
                    Order::Newer => self.list_taken(&held, &from.name),
                    Order::Older => {
                        self.trust.stats.refused_older += 1;
                        info!(peer = %from.name, "the peer sent an older revocation list; sending it list {}", held.number());
                    }
                    Order::Conflict => warn!(
                        peer = %from.name,
                        "the peer sent another revocation list numbered {} (the CA signed two lists with one number?); keeping the one held",
                        held.number()
                    ),
                    Order::Same => {}
                }
                self.pass_on(Some(link), onward);
            }
            Err(e) => {
                self.trust.stats.refused_invalid += 1;
                warn!(peer = %from.name, "refused a revocation list: {e}");
            }
        }
    }

    /// Looks at the watched file and at certificate expiry (every [`SWEEP_EVERY`]).
    pub(super) fn trust_sweep(&mut self, now: std::time::Instant) {
        if let Err(e) = self.trust.revoked.reload() {
            self.trust.stats.refused_invalid += 1;
            warn!("{e}");
        }
        // Taken from the file here, or by a TLS verifier reading it at a handshake.
        if self.trust.revoked.generation() != self.trust.seen {
            if let Some(held) = self.trust.revoked.current() {
                let from = self
                    .trust
                    .revoked
                    .file()
                    .map_or_else(String::new, |f| f.display().to_string());
                self.list_taken(&held, &from);
                self.pass_on(
                    None,
                    Onward {
                        others: true,
                        source: false,
                    },
                );
            }
        }
        self.close_refused(now);
    }

    fn list_taken(&mut self, list: &RevocationList, from: &str) {
        self.trust.seen = self.trust.revoked.generation();
        self.trust.stats.taken += 1;
        self.trust.held_now();
        info!(
            "took revocation list {} from {from}: {} certificate(s) revoked",
            list.number(),
            list.len()
        );
        self.close_refused(std::time::Instant::now());
    }

    /// Sends the list held to the links `onward` names (`source` is where it came from).
    fn pass_on(&mut self, source: Option<LinkId>, onward: Onward) {
        let Some(frame) = self.trust.frame() else {
            return;
        };
        for (id, entry) in &self.links {
            let is_source = Some(*id) == source;
            if (is_source && onward.source) || (!is_source && onward.others) {
                entry.tx.send(frame.clone());
            }
        }
    }

    /// Closes every link whose peer's certificate is revoked or expired.
    fn close_refused(&mut self, now: std::time::Instant) {
        let unix = now_unix();
        let refused: Vec<_> = self
            .links
            .iter()
            .filter_map(|(id, l)| refusal(&l.peer, &self.trust.revoked, unix).map(|why| (*id, why)))
            .collect();
        for (link, why) in refused {
            if let Some(entry) = self.links.get(&link) {
                warn!(peer = %entry.peer.name, link, "closing the link: {why}");
                entry.tx.close(why);
            }
            self.count_refused(why);
            if let Some(entry) = self.remove_link(link, why, now) {
                for d in entry.down {
                    let _ = d.send(());
                }
            }
        }
    }

    pub(super) fn count_refused(&mut self, why: &str) {
        if why == REVOKED {
            self.trust.stats.closed_revoked += 1;
        } else {
            self.trust.stats.closed_expired += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_list_floods_and_confirms_to_a_client_that_brought_it() {
        assert_eq!(
            onward(Order::Newer, Role::Router),
            Onward {
                others: true,
                source: false
            }
        );
        assert_eq!(
            onward(Order::Newer, Role::Client),
            Onward {
                others: true,
                source: true
            }
        );
    }

    #[test]
    fn an_older_list_is_answered_with_the_newer_and_goes_no_further() {
        for role in [Role::Router, Role::Client] {
            assert_eq!(
                onward(Order::Older, role),
                Onward {
                    others: false,
                    source: true
                }
            );
        }
    }

    #[test]
    fn the_same_list_stops_the_flood_and_is_confirmed_to_a_client() {
        for order in [Order::Same, Order::Conflict] {
            assert_eq!(
                onward(order, Role::Router),
                Onward {
                    others: false,
                    source: false
                }
            );
            assert_eq!(
                onward(order, Role::Client),
                Onward {
                    others: false,
                    source: true
                }
            );
        }
    }
}
