//! A client session: a program that publishes or subscribes through one router
//! (`roam pub`, `roam sub`, gateways). It reconnects by itself and re-declares what it
//! publishes and subscribes, so the program never restarts when a router does.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use roam_proto::frame::Role;
use roam_proto::{Frame, Name, RouterId};
use tokio::sync::mpsc;
use tracing::{info, warn};

use crate::lane::Pushed;
use crate::link::{Inbound, LinkConfig, LinkInput, LocalInfo};
use crate::pki::Identity;
use crate::runtime::PeerAddr;
use crate::{quic, tcp, tls};

#[derive(Clone)]
pub struct ClientConfig {
    pub identity: Arc<Identity>,
    pub router: PeerAddr,
    pub link: LinkConfig,
    pub max_backoff: Duration,
}

/// What the session reports to the program.
#[derive(Debug)]
pub enum ClientEvent {
    Connected {
        router: String,
    },
    Disconnected {
        reason: String,
    },
    Data {
        origin: RouterId,
        envelope: Bytes,
    },
    /// Someone in the network does (or no longer does) want a name we publish.
    Demand {
        name: Name,
        wanted: bool,
    },
}

enum Cmd {
    Publish(Name),
    Subscribe(Name),
    Send(Bytes),
    /// Deliver everything queued to the router, then end the session.
    Finish(tokio::sync::oneshot::Sender<()>),
}

/// Counters kept by the session.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClientStats {
    pub sent: u64,
    /// Envelopes dropped because no router link was up.
    pub dropped_offline: u64,
    /// Best-effort envelopes dropped from the link's queue to make room for newer ones.
    pub dropped_stale: u64,
}

pub struct Client {
    cmd: mpsc::Sender<Cmd>,
    pub events: mpsc::Receiver<ClientEvent>,
    stats: Arc<std::sync::Mutex<ClientStats>>,
}

impl Client {
    pub fn start(cfg: ClientConfig) -> Result<Self, crate::link::LinkError> {
        let (cmd_tx, cmd_rx) = mpsc::channel(1024);
        let (ev_tx, ev_rx) = mpsc::channel(4096);
        let stats = Arc::new(std::sync::Mutex::new(ClientStats::default()));
        let ep = quic::endpoint(&cfg.identity, &cfg.link, None)?;
        tokio::spawn(session(cfg, ep, cmd_rx, ev_tx, stats.clone()));
        Ok(Self {
            cmd: cmd_tx,
            events: ev_rx,
            stats,
        })
    }

    pub async fn publish(&self, name: Name) {
        let _ = self.cmd.send(Cmd::Publish(name)).await;
    }

    pub async fn subscribe(&self, name: Name) {
        let _ = self.cmd.send(Cmd::Subscribe(name)).await;
    }

    /// Queues an envelope; waits while the link's reliable lane is full (push back).
    pub async fn send(&self, envelope: Bytes) {
        let _ = self.cmd.send(Cmd::Send(envelope)).await;
    }

    /// Waits until everything sent so far has reached the router, then disconnects.
    pub async fn finish(&self) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if self.cmd.send(Cmd::Finish(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }

    pub fn stats(&self) -> ClientStats {
        self.stats.lock().map(|s| *s).unwrap_or_default()
    }
}

async fn session(
    cfg: ClientConfig,
    ep: quinn::Endpoint,
    mut cmd: mpsc::Receiver<Cmd>,
    events: mpsc::Sender<ClientEvent>,
    stats: Arc<std::sync::Mutex<ClientStats>>,
) {
    let me = LocalInfo {
        name: cfg.identity.name.clone(),
        role: Role::Client,
        id: tls::router_id(&cfg.identity.name),
    };
    let mut published = BTreeSet::new();
    let mut subscribed = BTreeSet::new();
    let mut backoff = Duration::from_millis(100);
    let mut link_id = 0;
    loop {
        link_id += 1;
        let (in_tx, mut in_rx) = mpsc::channel(4096);
        let r = match cfg.router {
            PeerAddr::Quic(a) => {
                quic::dial(&ep, a, &me, &cfg.link, link_id, Inbound::unpaused(in_tx)).await
            }
            PeerAddr::Tcp(a) => {
                tcp::dial(
                    &cfg.identity,
                    a,
                    &me,
                    &cfg.link,
                    link_id,
                    Inbound::unpaused(in_tx),
                )
                .await
            }
        };
        let mut est = match r {
            Ok(e) => e,
            Err(e) => {
                warn!(
                    "cannot reach router {}: {e}; retrying in {backoff:?}",
                    cfg.router
                );
                // Keep draining commands while offline so publishers are not stuck.
                let deadline = tokio::time::sleep(backoff);
                tokio::pin!(deadline);
                loop {
                    tokio::select! {
                        _ = &mut deadline => break,
                        c = cmd.recv() => match c {
                            None => return,
                            Some(c) => offline(c, &mut published, &mut subscribed, &stats),
                        },
                    }
                }
                backoff = (backoff * 2).min(cfg.max_backoff);
                continue;
            }
        };
        backoff = Duration::from_millis(100);
        est.start();
        let tx = est.tx.clone();
        info!("connected to router {}", est.peer.name);
        let _ = events
            .send(ClientEvent::Connected {
                router: est.peer.name.clone(),
            })
            .await;
        if !published.is_empty() {
            tx.send(Frame::Publish(published.iter().copied().collect()));
        }
        if !subscribed.is_empty() {
            tx.send(Frame::Subscribe(subscribed.iter().copied().collect()));
        }
        let reason = loop {
            tokio::select! {
                c = cmd.recv() => match c {
                    None => { tx.close("client done"); return; }
                    Some(Cmd::Finish(done)) => { tx.finish().await; let _ = done.send(()); return; }
                    Some(Cmd::Publish(n)) => { if published.insert(n) { tx.send(Frame::Publish(vec![n])); } }
                    Some(Cmd::Subscribe(n)) => { if subscribed.insert(n) { tx.send(Frame::Subscribe(vec![n])); } }
                    Some(Cmd::Send(env)) => {
                        let frame = Frame::Data { origin: 0, envelope: env };
                        // Push back on the program while the lane is full instead of dropping.
                        loop {
                            match tx.send(frame.clone()) {
                                Pushed::Refused => tokio::time::sleep(Duration::from_micros(500)).await,
                                Pushed::Closed => {
                                    if let Ok(mut s) = stats.lock() { s.dropped_offline += 1; }
                                    break;
                                }
                                Pushed::DroppedOldest(n) => {
                                    if let Ok(mut s) = stats.lock() { s.sent += 1; s.dropped_stale += n as u64; }
                                    break;
                                }
                                Pushed::Queued => {
                                    if let Ok(mut s) = stats.lock() { s.sent += 1; }
                                    break;
                                }
                            }
                        }
                    }
                },
                m = in_rx.recv() => match m {
                    None => break "link ended".to_string(),
                    Some((_, LinkInput::Closed(r))) => break r,
                    Some((_, LinkInput::Frame(f))) => {
                        let ev = match f {
                            Frame::Data { origin, envelope } => Some(ClientEvent::Data { origin, envelope }),
                            Frame::Subscribe(names) => { for name in names { let _ = events.send(ClientEvent::Demand { name, wanted: true }).await; } None }
                            Frame::Unsubscribe(names) => { for name in names { let _ = events.send(ClientEvent::Demand { name, wanted: false }).await; } None }
                            _ => None,
                        };
                        if let Some(ev) = ev {
                            if events.send(ev).await.is_err() { tx.close("client done"); return; }
                        }
                    }
                },
            }
        };
        warn!("lost router {}: {reason}; reconnecting", cfg.router);
        let _ = events.send(ClientEvent::Disconnected { reason }).await;
        for name in &published {
            let _ = events
                .send(ClientEvent::Demand {
                    name: *name,
                    wanted: false,
                })
                .await;
        }
    }
}

fn offline(
    c: Cmd,
    published: &mut BTreeSet<Name>,
    subscribed: &mut BTreeSet<Name>,
    stats: &std::sync::Mutex<ClientStats>,
) {
    match c {
        Cmd::Publish(n) => {
            published.insert(n);
        }
        Cmd::Subscribe(n) => {
            subscribed.insert(n);
        }
        Cmd::Send(_) => {
            if let Ok(mut s) = stats.lock() {
                s.dropped_offline += 1;
            }
        }
        Cmd::Finish(done) => {
            let _ = done.send(());
        }
    }
}
