//! A router's dialers: one per configured peer, keeping a link up with backoff until the
//! router stops.

use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tracing::{info, warn};

use super::{Command, PeerAddr, Shared};
use crate::dialer::{self, Backoff};

/// A link that lasted this long was a working one: the next attempt starts from the shortest
/// wait again. One closed sooner (refused by the peer: its identity contested, or the loser
/// of a simultaneous dial) keeps the backoff growing, so a refusal is not retried ten times
/// a second.
const STABLE: Duration = Duration::from_secs(1);

/// Keeps one link to `peer` up: dial, wait for it (or the link kept in its place for the same
/// router) to die, dial again with backoff. Ends when the router stops; a link closed by
/// that is not "lost" and is not redialled.
pub(super) async fn dial_loop(s: Shared, peer: PeerAddr) {
    let mut backoff = Backoff::new(s.config.max_backoff);
    // The quickest successful dial so far: it paces the attempts once the peer is lost.
    let mut quickest_handshake = None;
    let mut unanswered = 0u32;
    loop {
        let downs = *s.router_links_down.borrow();
        let link = s.link_id();
        let id = &s.config.identity;
        let dial = dialer::dial(
            &s.ep,
            id,
            &peer,
            &s.me,
            &s.config.link,
            link,
            s.inbound.clone(),
        );
        let attempt = dialer::attempt_timeout(
            quickest_handshake,
            s.config.link.handshake_timeout,
            unanswered,
        );
        let started = Instant::now();
        let dialed = tokio::select! {
            r = tokio::time::timeout(attempt, dial) => r,
            _ = s.stopping() => return,
        };
        let dialed = match dialed {
            Ok(r) => r,
            // Unanswered within a short attempt (see attempt_timeout): dial again at once.
            Err(_) => {
                if unanswered.is_multiple_of(20) {
                    warn!("cannot link to {peer}: no answer within {attempt:?}; dialing again");
                }
                unanswered += 1;
                continue;
            }
        };
        match dialed {
            Ok(est) => {
                quickest_handshake = Some(dialer::quickest(quickest_handshake, started.elapsed()));
                unanswered = 0;
                info!("link to {} ({peer}) up", est.peer.name);
                let up_at = Instant::now();
                let (down_tx, down_rx) = oneshot::channel();
                let up = Command::Up {
                    link,
                    est: Box::new(est),
                    dialed: true,
                    down: Some(down_tx),
                };
                if s.cmd.send(up).await.is_err() {
                    return;
                }
                let _ = down_rx.await;
                if up_at.elapsed() >= STABLE {
                    backoff.reset();
                }
                if s.is_stopping() {
                    info!("link to {peer} closed: the router is shutting down");
                    return;
                }
                info!("link to {peer} lost; reconnecting");
            }
            Err(e) => {
                let wait = backoff.next_wait();
                if e.to_string().contains(super::links::DUPLICATE) {
                    // The peer closed this link during the Hello because it keeps the one it
                    // dialed to us: nothing is wrong, and that link is up here too. Dialing
                    // again while it lives would, once the simultaneous-dial window is over,
                    // look like a new life of this router to the peer and replace its link,
                    // and the two would take turns. So this dialer waits for a link to a
                    // router to go down (the peer's among them), then dials again.
                    info!("{peer} keeps the link it dialed to this router; dialing again once a router link goes down");
                    let mut downs_now = s.router_links_down.clone();
                    tokio::select! {
                        _ = downs_now.wait_for(|n| *n != downs) => {}
                        _ = s.stopping() => return,
                    }
                    backoff.reset();
                    continue;
                } else {
                    let why = dialer::why_unreachable(&peer, &e, s.config.link.handshake_timeout);
                    warn!("cannot link to {peer}: {why}; retrying in {wait:?}");
                }
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = s.stopping() => return,
                }
                continue;
            }
        }
        let wait = backoff.next_wait();
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = s.stopping() => return,
        }
    }
}
