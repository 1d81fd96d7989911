//! Which link a router keeps when a peer router's identity links again while a link to it is
//! up. Pure: fed the links as they are authenticated, with the time, it answers; the runtime
//! applies the answer.
//!
//! A router that died and came back dials again long before its old link's idle timeout
//! runs out, and until then the old link is a black hole: so the newest authenticated link
//! replaces the current one. Two cases would make that rule flap, and are told apart:
//!
//! - Two routers dialing each other at once (each configured with the other's address): each
//!   end gets two links within a moment, in either order. Both ends must keep the same one,
//!   so within [`Policy::simultaneous`] of the current link coming up, a link dialed by the
//!   other side is a simultaneous dial and the link dialed by the smaller router id wins.
//!   A link dialed by the same side as the current one is never simultaneous (a dialer holds
//!   one link at a time): it comes from a new life of that side, and replaces.
//! - Two live holders of one identity (a cloned robot) taking the link from each other:
//!   past [`Policy::max_replacements`] within [`Policy::window`], further replacements are
//!   refused for [`Policy::backoff`], and the first refusal says so once (with both
//!   addresses) for the runtime to log and count.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use roam_proto::RouterId;

use crate::link::LinkId;

/// How links replace each other.
#[derive(Debug, Clone, Copy)]
pub(super) struct Policy {
    /// A link dialed by the other side within this long of the current link coming up is a
    /// simultaneous dial. Longer than the handshakes' skew between the two ends (a round trip
    /// or two), shorter than any router's restart.
    pub simultaneous: Duration,
    /// Replacements of one identity's link allowed within `window` ...
    pub max_replacements: usize,
    pub window: Duration,
    /// ... past which further replacements are refused this long.
    pub backoff: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            simultaneous: Duration::from_secs(2),
            max_replacements: 3,
            window: Duration::from_secs(10),
            backoff: Duration::from_secs(30),
        }
    }
}

/// A newly authenticated link from a peer router.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Offer {
    pub link: LinkId,
    /// The router that dialed it: this one, or the peer.
    pub dialed_by: RouterId,
    pub remote: Option<SocketAddr>,
}

/// What to do with an offered link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The peer had no link: bring this one up.
    Up,
    /// Close `old` and bring this one up in its place.
    Replace { old: LinkId },
    /// Keep `current` and close the offered link (the losing half of a simultaneous dial).
    KeepExisting { current: LinkId },
    /// Keep `current` and close the offered link, for `why`.
    Refuse { current: LinkId, why: Refusal },
}

/// Why an offered link was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The identity's link was taken over too often lately: two live holders of it fighting.
    /// `first` on the refusal that started the back-off (the one to warn about and count);
    /// `places` are the remote addresses of the current link and the offered one.
    Contested {
        until: Instant,
        first: bool,
        places: [Option<SocketAddr>; 2],
    },
}

/// The link kept for one peer router, and its recent replacements.
#[derive(Debug)]
struct Peer {
    current: Option<Current>,
    /// When its link was replaced, within the last `window`.
    replaced: VecDeque<Instant>,
    /// Replacements are refused until then.
    damped_until: Option<Instant>,
}

#[derive(Debug, Clone, Copy)]
struct Current {
    offer: Offer,
    up_at: Instant,
}

/// The current link per peer router, and the decisions about new ones.
#[derive(Debug)]
pub(super) struct Links {
    me: RouterId,
    policy: Policy,
    peers: HashMap<RouterId, Peer>,
}

impl Links {
    pub(super) fn new(me: RouterId, policy: Policy) -> Self {
        Self {
            me,
            policy,
            peers: HashMap::new(),
        }
    }

    /// The link kept for `peer`, if any.
    #[cfg(test)]
    pub(super) fn current(&self, peer: RouterId) -> Option<LinkId> {
        self.peers.get(&peer)?.current.map(|c| c.offer.link)
    }

    /// Decides about a link from `peer` authenticated at `now`; the offered link is the
    /// peer's current one afterwards if the verdict is [`Verdict::Up`] or [`Verdict::Replace`].
    pub(super) fn offer(&mut self, peer: RouterId, offer: Offer, now: Instant) -> Verdict {
        let policy = self.policy;
        let me = self.me;
        let p = self.peers.entry(peer).or_insert_with(|| Peer {
            current: None,
            replaced: VecDeque::new(),
            damped_until: None,
        });
        while p
            .replaced
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= policy.window)
        {
            p.replaced.pop_front();
        }
        let Some(cur) = p.current else {
            p.current = Some(Current { offer, up_at: now });
            return Verdict::Up;
        };
        let young = now.saturating_duration_since(cur.up_at) < policy.simultaneous;
        if young && cur.offer.dialed_by != offer.dialed_by {
            // A simultaneous dial: the same choice at both ends, whatever the order.
            let winner = me.min(peer);
            if offer.dialed_by != winner {
                return Verdict::KeepExisting {
                    current: cur.offer.link,
                };
            }
            p.current = Some(Current { offer, up_at: now });
            return Verdict::Replace {
                old: cur.offer.link,
            };
        }
        if let Some(until) = p.damped_until {
            if now < until {
                return Verdict::Refuse {
                    current: cur.offer.link,
                    why: Refusal::Contested {
                        until,
                        first: false,
                        places: [cur.offer.remote, offer.remote],
                    },
                };
            }
            p.damped_until = None;
            p.replaced.clear();
        }
        if p.replaced.len() >= policy.max_replacements {
            let until = now + policy.backoff;
            p.damped_until = Some(until);
            return Verdict::Refuse {
                current: cur.offer.link,
                why: Refusal::Contested {
                    until,
                    first: true,
                    places: [cur.offer.remote, offer.remote],
                },
            };
        }
        p.replaced.push_back(now);
        p.current = Some(Current { offer, up_at: now });
        Verdict::Replace {
            old: cur.offer.link,
        }
    }

    /// `link` to `peer` is down. Only the current link's end clears the peer: a link already
    /// replaced or refused ends later and must not take its successor with it.
    pub(super) fn down(&mut self, peer: RouterId, link: LinkId) {
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        if p.current.is_some_and(|c| c.offer.link == link) {
            p.current = None;
        }
        // Nothing left to remember: a peer gone for good costs no memory.
        if p.current.is_none() && p.replaced.is_empty() && p.damped_until.is_none() {
            self.peers.remove(&peer);
        }
    }
}

#[cfg(test)]
#[path = "replace_tests.rs"]
mod tests;
