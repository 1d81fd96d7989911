//! A router's dialers: one per configured peer, keeping a link up with backoff until the
//! router stops.

use std::time::Duration;

use tokio::sync::oneshot;
use tracing::{info, warn};

use super::{Command, PeerAddr, Shared};
use crate::link::{Established, LinkError, LinkId};
use crate::{quic, tcp};

/// Keeps one link to `peer` up: dial, wait for it to die, dial again with backoff. Ends
/// when the router stops; a link closed by that is not "lost" and is not redialled.
pub(super) async fn dial_loop(s: Shared, peer: PeerAddr) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let link = s.link_id();
        let dialed = tokio::select! {
            r = dial(&s, peer, link) => r,
            _ = s.stopping() => return,
        };
        match dialed {
            Ok(est) => {
                info!("link to {} ({peer}) up", est.peer.name);
                backoff = Duration::from_millis(100);
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
                if s.is_stopping() {
                    info!("link to {peer} closed: the router is shutting down");
                    return;
                }
                info!("link to {peer} lost; reconnecting");
            }
            Err(e) => warn!("cannot link to {peer}: {e}; retrying in {backoff:?}"),
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = s.stopping() => return,
        }
        backoff = (backoff * 2).min(s.config.max_backoff);
    }
}

async fn dial(s: &Shared, peer: PeerAddr, link: LinkId) -> Result<Established, LinkError> {
    let inbound = s.inbound.clone();
    match peer {
        PeerAddr::Quic(addr) => quic::dial(&s.ep, addr, &s.me, &s.config.link, link, inbound).await,
        PeerAddr::Tcp(addr) => {
            let id = &s.config.identity;
            tcp::dial(id, addr, &s.me, &s.config.link, link, inbound).await
        }
    }
}
