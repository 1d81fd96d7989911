//! The client session's loop: dial the router (with the backoff and explanations every dialer
//! shares, [`crate::dialer`]), declare what its endpoints publish and subscribe, carry data
//! both ways, and start over when the link is lost.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use roam_proto::frame::Role;
use roam_proto::Frame;
use tokio::sync::mpsc;
use tracing::{info, warn};

use super::endpoints::{Declare, Endpoints};
use super::{ClientConfig, ClientEvent, ClientStats, Cmd};
use crate::dialer::{self, Backoff};
use crate::inbound::Inbound;
use crate::lane::Pushed;
use crate::link::{LinkInput, LinkSender, LocalInfo};
use crate::tls;

/// Between two unanswered short dial attempts: long enough to take the commands that came
/// meanwhile (a publisher's messages are counted dropped while offline, not held).
const SHORT_PAUSE: Duration = Duration::from_millis(20);

pub(super) async fn run(
    cfg: ClientConfig,
    ep: quinn::Endpoint,
    mut cmd: mpsc::Receiver<Cmd>,
    // Connection events for whoever reads them; dropped when nobody does (never waited on).
    events: mpsc::Sender<ClientEvent>,
    stats: Arc<Mutex<ClientStats>>,
) {
    let me = LocalInfo {
        name: cfg.identity.name.clone(),
        role: Role::Client,
        id: tls::router_id(&cfg.identity.name),
    };
    let mut endpoints = Endpoints::default();
    let mut backoff = Backoff::new(cfg.max_backoff);
    let mut link_id = 0;
    let mut announce = true;
    // The quickest successful dial so far: it paces the attempts once the router is lost.
    let mut quickest_handshake = None;
    let mut unanswered = 0u32;
    loop {
        link_id += 1;
        if announce {
            // Said at once: a dial that gets no answer takes up to the handshake timeout.
            info!("connecting to router {} ...", cfg.router);
            let _ = events.try_send(ClientEvent::Connecting {
                router: cfg.router.to_string(),
            });
            announce = false;
        }
        let (in_tx, mut in_rx) = mpsc::channel(4096);
        let dial = dialer::dial(
            &ep,
            &cfg.identity,
            &cfg.router,
            &me,
            &cfg.link,
            link_id,
            Inbound::unpaused(in_tx),
        );
        let attempt =
            dialer::attempt_timeout(quickest_handshake, cfg.link.idle_timeout, unanswered);
        let started = tokio::time::Instant::now();
        let mut est = match tokio::time::timeout(attempt, dial).await {
            Ok(Ok(e)) => {
                quickest_handshake = Some(dialer::quickest(quickest_handshake, started.elapsed()));
                unanswered = 0;
                e
            }
            failed => {
                let short = quickest_handshake.is_some() && attempt < cfg.link.idle_timeout;
                let (reason, wait) = match failed {
                    Ok(Err(e)) => (
                        dialer::why_unreachable(&cfg.router, &e, cfg.link.idle_timeout),
                        backoff.next_wait(),
                    ),
                    // Unanswered: the attempt itself was the wait (see attempt_timeout); a
                    // moment to take commands (publishers are not held) and dial again.
                    _ if short => (dialer::no_answer(&cfg.router, attempt), SHORT_PAUSE),
                    _ => (
                        dialer::no_answer(&cfg.router, cfg.link.idle_timeout),
                        backoff.next_wait(),
                    ),
                };
                // Short attempts repeat: said for the first and then every 20th.
                let repeated = wait == SHORT_PAUSE;
                if !repeated || unanswered.is_multiple_of(20) {
                    warn!(
                        "cannot reach router {}: {reason}; retrying in {wait:?}",
                        cfg.router
                    );
                }
                if repeated {
                    unanswered += 1;
                }
                let _ = events.try_send(ClientEvent::Unreachable {
                    reason,
                    retry_in: wait,
                });
                // Keep taking commands while offline so publishers are not stuck.
                let deadline = tokio::time::sleep(wait);
                tokio::pin!(deadline);
                loop {
                    tokio::select! {
                        _ = &mut deadline => break,
                        c = cmd.recv() => match c {
                            None => return,
                            Some(c) => offline(c, &mut endpoints, &stats),
                        },
                    }
                }
                continue;
            }
        };
        backoff.reset();
        est.start();
        let tx = est.tx.clone();
        info!("connected to router {}", est.peer.name);
        let _ = events.try_send(ClientEvent::Connected {
            router: est.peer.name.clone(),
        });
        let published = endpoints.published();
        if !published.is_empty() {
            tx.send(Frame::Publish(published));
        }
        let subscribed = endpoints.subscribed();
        if !subscribed.is_empty() {
            tx.send(Frame::Subscribe(subscribed));
        }
        // A newer list from this client's directory reaches the mesh through its router.
        if let Some(list) = cfg.identity.revoked.current() {
            tx.send(Frame::Revocations(Bytes::copy_from_slice(list.der())));
        }
        let reason = loop {
            tokio::select! {
                c = cmd.recv() => match c {
                    None => { tx.close("client done"); return; }
                    Some(Cmd::Finish(done)) => { tx.finish().await; let _ = done.send(()); return; }
                    Some(Cmd::Send(env)) => send(&tx, env, &stats).await,
                    Some(c) => declare(&tx, endpoints_change(c, &mut endpoints)),
                },
                m = in_rx.recv() => match m {
                    None => break "link ended".to_string(),
                    Some((_, LinkInput::Closed(r))) => break r,
                    Some((_, LinkInput::Frame(f))) => match f {
                        Frame::Data { envelope, .. } => deliver(&endpoints, envelope, &stats).await,
                        Frame::Subscribe(names) => names.iter().for_each(|n| endpoints.demand(n, true)),
                        Frame::Unsubscribe(names) => names.iter().for_each(|n| endpoints.demand(n, false)),
                        Frame::Revocations(list) => take_revocations(&cfg, &list),
                        _ => {}
                    },
                },
            }
        };
        warn!("lost router {}: {reason}; reconnecting", cfg.router);
        announce = true;
        endpoints.no_demand();
        let _ = events.try_send(ClientEvent::Disconnected { reason });
    }
}

/// A list from the router: kept if newer (the TLS verifiers of this process's doors read it).
fn take_revocations(cfg: &ClientConfig, list: &[u8]) {
    match cfg.identity.revoked.offer(list) {
        Ok((roam_pki::Order::Newer, held)) => info!(
            "took revocation list {} from the router: {} certificate(s) revoked",
            held.number(),
            held.len()
        ),
        Ok(_) => {}
        Err(e) => warn!("refused a revocation list from the router: {e}"),
    }
}

/// Applies a publish/subscribe command to the endpoints; says what the router must hear.
fn endpoints_change(c: Cmd, endpoints: &mut Endpoints) -> Declare {
    match c {
        Cmd::Publish { name, id, demand } => endpoints.publish(name, id, demand),
        Cmd::Unpublish { name, id } => endpoints.unpublish(name, id),
        Cmd::Subscribe { name, id, tx } => endpoints.subscribe(name, id, tx),
        Cmd::Unsubscribe { name, id } => endpoints.unsubscribe(name, id),
        Cmd::Send(_) | Cmd::Finish(_) => Declare::Nothing,
    }
}

fn declare(tx: &LinkSender, d: Declare) {
    let frame = match d {
        Declare::Nothing => return,
        Declare::Publish(n) => Frame::Publish(vec![n]),
        Declare::Unpublish(n) => Frame::Unpublish(vec![n]),
        Declare::Subscribe(n) => Frame::Subscribe(vec![n]),
        Declare::Unsubscribe(n) => Frame::Unsubscribe(vec![n]),
    };
    tx.send(frame);
}

/// Hands an envelope to every subscriber of its name: a reliable one waits for room (the
/// link waits with it), a best-effort one is dropped where there is none (counted).
async fn deliver(endpoints: &Endpoints, envelope: Bytes, stats: &Mutex<ClientStats>) {
    let Some(name) = roam_proto::envelope::peek_name(&envelope) else {
        return;
    };
    let reliable = !crate::link::is_best_effort(&envelope);
    for sub in endpoints.subscribers(&name) {
        if reliable {
            let _ = sub.send(envelope.clone()).await;
        } else if sub.try_send(envelope.clone()).is_err() {
            if let Ok(mut s) = stats.lock() {
                s.dropped_slow_subscriber += 1;
            }
        }
    }
}

/// Queues an envelope on the link, pushing back on the program while its lane is full.
async fn send(tx: &LinkSender, env: Bytes, stats: &Mutex<ClientStats>) {
    let frame = Frame::Data {
        origin: 0,
        envelope: env,
    };
    loop {
        let pushed = tx.send(frame.clone());
        let count = |f: &dyn Fn(&mut ClientStats)| {
            if let Ok(mut s) = stats.lock() {
                f(&mut s);
            }
        };
        match pushed {
            Pushed::Refused => tokio::time::sleep(Duration::from_micros(500)).await,
            Pushed::Closed => return count(&|s| s.dropped_offline += 1),
            Pushed::DroppedOldest(n) => {
                return count(&|s| {
                    s.sent += 1;
                    s.dropped_stale += n as u64
                })
            }
            Pushed::Queued => return count(&|s| s.sent += 1),
        }
    }
}

/// A command while no link is up: endpoints are remembered for the next link; data is lost.
fn offline(c: Cmd, endpoints: &mut Endpoints, stats: &Mutex<ClientStats>) {
    match c {
        Cmd::Send(_) => {
            if let Ok(mut s) = stats.lock() {
                s.dropped_offline += 1;
            }
        }
        Cmd::Finish(done) => {
            let _ = done.send(());
        }
        c => {
            endpoints_change(c, endpoints);
        }
    }
}
