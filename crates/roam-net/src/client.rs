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
use crate::link::{Inbound, LinkConfig, LinkError, LinkInput, LocalInfo};
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
    /// A connection attempt starts (at start, and after a lost link).
    Connecting {
        router: String,
    },
    /// An attempt failed: why, in plain words, and when the next one starts.
    Unreachable {
        reason: String,
        retry_in: Duration,
    },
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

/// Why [`Client::send`] refused an envelope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// Larger than the link carries (`LinkConfig::max_frame`): the router would refuse the
    /// frame and close the link, so it is never sent.
    #[error("an envelope of {len} bytes is over the link's limit of {limit} bytes")]
    TooLarge { len: usize, limit: usize },
    #[error("the client session has ended")]
    Closed,
}

pub struct Client {
    cmd: mpsc::Sender<Cmd>,
    pub events: mpsc::Receiver<ClientEvent>,
    stats: Arc<std::sync::Mutex<ClientStats>>,
    max_envelope: usize,
}

/// Bytes a `Data` frame adds to its envelope within the length a receiver checks (type, origin).
const DATA_FRAME_OVERHEAD: usize =
    roam_proto::frame::DATA_HEADER_LEN - roam_proto::frame::LEN_PREFIX;

/// The largest envelope a link with this configuration carries: its frame limit less the
/// frame's own bytes. Routers with the same `max_message_bytes` accept it.
pub fn max_envelope_len(link: &LinkConfig) -> usize {
    link.max_frame.saturating_sub(DATA_FRAME_OVERHEAD)
}

impl Client {
    pub fn start(cfg: ClientConfig) -> Result<Self, crate::link::LinkError> {
        let (cmd_tx, cmd_rx) = mpsc::channel(1024);
        let (ev_tx, ev_rx) = mpsc::channel(4096);
        let stats = Arc::new(std::sync::Mutex::new(ClientStats::default()));
        let ep = quic::endpoint(&cfg.identity, &cfg.link, None)?;
        let max_envelope = max_envelope_len(&cfg.link);
        tokio::spawn(session(cfg, ep, cmd_rx, ev_tx, stats.clone()));
        Ok(Self {
            cmd: cmd_tx,
            events: ev_rx,
            stats,
            max_envelope,
        })
    }

    /// The largest envelope [`Self::send`] accepts: the link's frame limit less the frame's
    /// own bytes. Routers with the same `max_message_bytes` accept it.
    pub fn max_envelope_len(&self) -> usize {
        self.max_envelope
    }

    pub async fn publish(&self, name: Name) {
        let _ = self.cmd.send(Cmd::Publish(name)).await;
    }

    pub async fn subscribe(&self, name: Name) {
        let _ = self.cmd.send(Cmd::Subscribe(name)).await;
    }

    /// Queues an envelope; waits while the link's reliable lane is full (push back). An
    /// envelope over [`Self::max_envelope_len`] is refused here, before anything is sent.
    pub async fn send(&self, envelope: Bytes) -> Result<(), SendError> {
        if envelope.len() > self.max_envelope {
            return Err(SendError::TooLarge {
                len: envelope.len(),
                limit: self.max_envelope,
            });
        }
        self.cmd
            .send(Cmd::Send(envelope))
            .await
            .map_err(|_| SendError::Closed)
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
    let mut announce = true;
    loop {
        link_id += 1;
        if announce {
            // Said at once: a dial that gets no answer takes up to the idle timeout.
            info!("connecting to router {} ...", cfg.router);
            let _ = events
                .send(ClientEvent::Connecting {
                    router: cfg.router.to_string(),
                })
                .await;
            announce = false;
        }
        let (in_tx, mut in_rx) = mpsc::channel(4096);
        let dial = async {
            match cfg.router {
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
            }
        };
        let r = tokio::time::timeout(cfg.link.idle_timeout, dial).await;
        let mut est = match r {
            Ok(Ok(e)) => e,
            failed => {
                let reason = match failed {
                    Ok(Err(e)) => why_unreachable(&cfg.router, &e, cfg.link.idle_timeout),
                    _ => no_answer(&cfg.router, cfg.link.idle_timeout),
                };
                warn!(
                    "cannot reach router {}: {reason}; retrying in {backoff:?}",
                    cfg.router
                );
                let _ = events
                    .send(ClientEvent::Unreachable {
                        reason,
                        retry_in: backoff,
                    })
                    .await;
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
        announce = true;
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

/// Why a dial failed, in words that say what to check.
fn why_unreachable(router: &PeerAddr, e: &LinkError, waited: Duration) -> String {
    match e {
        LinkError::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => format!(
            "connection refused: nothing listens on {router} (is the router running, with --listen-tcp for tcp://?)"
        ),
        LinkError::Io(io) => format!("network error: {io}"),
        // quinn's words for a handshake that got no answer.
        LinkError::Connect(m) if m.contains("timed out") => no_answer(router, waited),
        LinkError::Connect(m) => format!("connection failed: {m}"),
        LinkError::Certificate(m) => format!(
            "the router's certificate was refused: {m} (are both ends from the same `roam pki` CA?)"
        ),
        LinkError::Hello(m) => format!("the router refused the link: {m}"),
        // QUIC has no connection before its handshake: silence is all a dialer sees.
        LinkError::HandshakeTimeout(t) if matches!(router, PeerAddr::Quic(_)) => {
            no_answer(router, *t)
        }
        LinkError::HandshakeTimeout(t) => format!(
            "the router accepted the connection but did not complete the handshake within {t:?} (link.handshake_timeout_ms): is it overloaded, or is this port something else?"
        ),
        // Clients do not listen; kept for completeness.
        e @ LinkError::Bind { .. } => e.to_string(),
    }
}

fn no_answer(router: &PeerAddr, waited: Duration) -> String {
    match router {
        PeerAddr::Quic(a) => format!(
            "no answer within {waited:?}: is a router listening on UDP {a}? (QUIC needs UDP; where a network blocks it, use tcp://)"
        ),
        PeerAddr::Tcp(a) => format!(
            "no answer within {waited:?}: is the address {a} right, and does a firewall let it through?"
        ),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::tests::TempDir;
    use crate::pki::{init_ca, issue, load_identity, Validity};

    fn identity(dir: &TempDir) -> Arc<Identity> {
        init_ca(dir.path()).unwrap();
        issue(dir.path(), "c", Role::Client, Validity::default()).unwrap();
        Arc::new(load_identity(dir.path(), "c").unwrap())
    }

    #[tokio::test]
    async fn an_envelope_over_the_link_limit_is_refused_before_it_is_sent() {
        let dir = TempDir::new("client-limit");
        let link = LinkConfig {
            max_frame: 1000,
            ..LinkConfig::default()
        };
        let c = Client::start(ClientConfig {
            identity: identity(&dir),
            // Nobody listens: the session stays offline, which is enough here.
            router: PeerAddr::Quic("127.0.0.1:9".parse().unwrap()),
            link,
            max_backoff: Duration::from_millis(100),
        })
        .unwrap();
        assert_eq!(c.max_envelope_len(), 991);
        let e = c.send(Bytes::from(vec![0; 992])).await.unwrap_err();
        assert_eq!(
            e,
            SendError::TooLarge {
                len: 992,
                limit: 991
            }
        );
        assert!(e.to_string().contains("992 bytes"), "{e}");
        c.send(Bytes::from(vec![0; 991])).await.unwrap();
        c.finish().await;
        assert_eq!(c.stats().sent, 0);
    }

    #[test]
    fn failures_say_what_to_check() {
        let quic = PeerAddr::Quic("127.0.0.1:9".parse().unwrap());
        let tcp = PeerAddr::Tcp("127.0.0.1:9".parse().unwrap());
        let t = Duration::from_secs(10);
        let refused = LinkError::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(why_unreachable(&tcp, &refused, t)
            .starts_with("connection refused: nothing listens on tcp://127.0.0.1:9"));
        let timed_out = LinkError::Connect("timed out".into());
        let m = why_unreachable(&quic, &timed_out, t);
        assert!(
            m.contains("no answer within 10s") && m.contains("UDP 127.0.0.1:9"),
            "{m}"
        );
        let m = why_unreachable(&quic, &LinkError::Certificate("unknown issuer".into()), t);
        assert!(
            m.contains("certificate") && m.contains("unknown issuer"),
            "{m}"
        );
    }
}
