//! The MQTT client shell: one connection to the broker (rumqttc), kept up by itself.
//!
//! - Down at start or lost later: retried with back-off (0.1 s doubling to 5 s); the first
//!   failure and every change of state are logged once, not every retry.
//! - Subscriptions are made again on every new session.
//! - While the broker is away, publications wait in a buffer of `client.buffer.size`
//!   messages (mqtt_client's meaning: 0 keeps none); beyond it they are dropped and counted.
//!   QoS 1 and 2 messages handed to the connection but not yet acknowledged when it broke are
//!   sent again when the new session does not resume the old one (a restarted broker), so
//!   they are not lost to a clean session.
//! - Received messages go to a bounded channel: a slow consumer slows the connection (TCP
//!   back-pressure to the broker) instead of growing memory.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::conn::{self, Api, Ev, Loop};
use bytes::Bytes;
use tokio::sync::{mpsc, watch};
use tracing::{info, warn};

pub use crate::params::MqttQos as Qos;
use crate::params::{MqttQos, MqttVersion, Params};
use crate::tls::{client_config, TlsError};

/// How many requests rumqttc's channel holds (publications handed over, subscriptions).
const REQUEST_CAPACITY: usize = 1024;
/// The largest MQTT packet sent or accepted: a 1 MB point cloud fits with room to spare.
pub const DEFAULT_MAX_PACKET: usize = 64 << 20;

/// A message from the broker.
#[derive(Debug, Clone)]
pub struct Received {
    pub topic: String,
    pub payload: Bytes,
    pub retained: bool,
    /// When the connection task took it from the broker.
    pub at: std::time::Instant,
}

/// What the connection counted since it started.
#[derive(Debug, Default)]
pub struct ClientStats {
    pub published: AtomicU64,
    pub received: AtomicU64,
    /// Dropped while the broker was away and the buffer full (or configured as 0).
    pub dropped_offline: AtomicU64,
    /// Dropped because the connection's queue was full (the broker is slower than the input).
    pub dropped_busy: AtomicU64,
    /// Sent again after a session was lost with them unacknowledged.
    pub resent: AtomicU64,
    pub connects: AtomicU64,
    connected: AtomicBool,
}

impl ClientStats {
    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Relaxed)
    }
}

/// Why [`MqttClient::try_publish`] did not publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishError {
    /// No broker session now.
    Offline,
    /// The connection's queue is full: try again shortly.
    Busy,
}

/// Why a client could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("TLS to the broker: {0}")]
    Tls(#[from] TlsError),
}

#[derive(Debug, Clone)]
struct Outbound {
    seq: u64,
    topic: String,
    payload: Bytes,
    qos: MqttQos,
    retain: bool,
}

/// The publications on their way, shared by [`MqttClient::publish`] and the connection task.
struct Flight {
    connected: bool,
    next_seq: u64,
    /// Waiting for the broker (it is away).
    offline: VecDeque<Outbound>,
    /// Handed to rumqttc, not yet written (their order is the order of its `Publish` events).
    handed: VecDeque<Outbound>,
    /// Written with QoS 1 or 2 and not acknowledged, by packet id.
    unacked: HashMap<u16, Outbound>,
    /// `Publish` events to expect for packets rumqttc resends itself (a resumed session).
    resent_by_rumqttc: usize,
    subscriptions: BTreeMap<String, MqttQos>,
    /// Subscriptions made while the broker was away (a resumed session lacks them).
    unsent_subscriptions: BTreeSet<String>,
    /// Whether this outage's first offline drop was said.
    said_full: bool,
}

/// A connection to the broker a bridge publishes and subscribes through.
#[derive(Clone)]
pub struct MqttClient {
    client: Api,
    flight: Arc<Mutex<Flight>>,
    buffer: usize,
    stats: Arc<ClientStats>,
    task: Arc<tokio::task::JoinHandle<()>>,
    session: watch::Receiver<Session>,
}

/// How to reach a broker: what [`MqttClient::connect`] takes.
#[derive(Clone)]
pub struct Connect {
    pub host: String,
    pub port: u16,
    pub id: String,
    /// User name and password.
    pub user: Option<(String, String)>,
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub keep_alive: Duration,
    pub clean_session: bool,
    pub max_inflight: u16,
    /// Publications kept while the broker is away (0: none).
    pub buffer: usize,
    pub last_will: Option<crate::params::LastWill>,
    pub version: MqttVersion,
}

/// The broker session, as [`MqttClient::session`] reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Session {
    /// Sessions begun so far (1 after the first connection).
    pub number: u64,
    pub connected: bool,
}

impl MqttClient {
    /// Starts connecting as mqtt_client's parameters say (in the background, retrying until
    /// [`MqttClient::stop`]); received messages arrive on the returned channel of `inbox`
    /// messages.
    pub fn start(
        params: &Params,
        default_id: &str,
        inbox: usize,
    ) -> Result<(MqttClient, mpsc::Receiver<Received>), ClientError> {
        let b = &params.broker;
        let c = &params.client;
        let tls = match &b.tls {
            Some(t) => Some(Arc::new(client_config(t, &c.tls)?)),
            None => None,
        };
        let connect = Connect {
            host: b.host.clone(),
            port: b.port,
            id: if c.id.is_empty() {
                default_id.to_string()
            } else {
                c.id.clone()
            },
            user: b.user.clone().map(|u| (u, b.pass.clone())),
            tls,
            keep_alive: c.keep_alive,
            clean_session: c.clean_session,
            max_inflight: c.max_inflight,
            buffer: c.buffer_size,
            last_will: c.last_will.clone(),
            version: c.mqtt_version,
        };
        Ok(Self::connect(connect, inbox))
    }

    /// Starts connecting with `c` (see [`MqttClient::start`]).
    pub fn connect(c: Connect, inbox: usize) -> (MqttClient, mpsc::Receiver<Received>) {
        let (client, eventloop) = conn::build(&c, REQUEST_CAPACITY);
        let flight = Arc::new(Mutex::new(Flight {
            connected: false,
            next_seq: 0,
            offline: VecDeque::new(),
            handed: VecDeque::new(),
            unacked: HashMap::new(),
            resent_by_rumqttc: 0,
            subscriptions: BTreeMap::new(),
            unsent_subscriptions: BTreeSet::new(),
            said_full: false,
        }));
        let stats = Arc::new(ClientStats::default());
        let (tx, rx) = mpsc::channel(inbox.max(1));
        let (session_tx, session) = watch::channel(Session::default());
        let broker = format!("{}:{}", c.host, c.port);
        let task = tokio::spawn(run(
            eventloop,
            client.clone(),
            flight.clone(),
            stats.clone(),
            tx,
            broker,
            session_tx,
        ));
        (
            MqttClient {
                client,
                flight,
                buffer: c.buffer,
                stats,
                task: Arc::new(task),
                session,
            },
            rx,
        )
    }

    /// Follows the broker sessions: which one is up (a count), and whether it still is.
    pub fn session(&self) -> watch::Receiver<Session> {
        self.session.clone()
    }

    pub fn stats(&self) -> &Arc<ClientStats> {
        &self.stats
    }

    /// Publishes now or not at all: for callers that wait themselves when the connection is
    /// busy, and give up when the broker is away (nothing is buffered or counted).
    pub fn try_publish(
        &self,
        topic: &str,
        payload: Bytes,
        qos: MqttQos,
    ) -> Result<(), PublishError> {
        let mut f = self.flight.lock().unwrap_or_else(|p| p.into_inner());
        if !f.connected {
            return Err(PublishError::Offline);
        }
        let m = f.outbound(topic, payload, qos, false);
        hand(&self.client, &mut f, m)
    }

    /// Publishes now, or buffers while the broker is away; `false` if it was dropped
    /// (counted).
    pub fn publish(&self, topic: &str, payload: Bytes, qos: MqttQos, retain: bool) -> bool {
        let mut f = self.flight.lock().unwrap_or_else(|p| p.into_inner());
        let m = f.outbound(topic, payload, qos, retain);
        if !f.connected {
            if f.offline.len() >= self.buffer {
                self.stats.dropped_offline.fetch_add(1, Ordering::Relaxed);
                if !std::mem::replace(&mut f.said_full, true) {
                    warn!(
                        buffer = self.buffer,
                        "the MQTT broker is away and client.buffer is full: dropping new messages until it is back (said once per outage; counted)"
                    );
                }
                return false;
            }
            f.offline.push_back(m);
            return true;
        }
        hand_or_count(&self.client, &mut f, m, &self.stats)
    }

    /// Subscribes now and on every new session.
    pub fn subscribe(&self, topic: &str, qos: MqttQos) {
        let mut f = self.flight.lock().unwrap_or_else(|p| p.into_inner());
        f.subscriptions.insert(topic.to_string(), qos);
        let sent = f.connected && self.client.try_subscribe(topic.to_string(), qos).is_ok();
        if !sent {
            f.unsent_subscriptions.insert(topic.to_string());
        }
    }

    /// Subscribes no more (now, and in later sessions).
    pub fn unsubscribe(&self, topic: &str) {
        let mut f = self.flight.lock().unwrap_or_else(|p| p.into_inner());
        f.subscriptions.remove(topic);
        f.unsent_subscriptions.remove(topic);
        if f.connected {
            self.client.try_unsubscribe(topic.to_string());
        }
    }

    /// Says goodbye to the broker (no last will) and stops the connection task.
    pub async fn stop(&self) {
        let _ = tokio::time::timeout(Duration::from_secs(1), self.client.disconnect()).await;
        // Give the task a moment to send the DISCONNECT, then end it.
        let _ = tokio::time::timeout(Duration::from_millis(200), async {
            while !self.task.is_finished() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        self.task.abort();
    }
}

impl Flight {
    /// The next publication, numbered in the order it was asked for.
    fn outbound(&mut self, topic: &str, payload: Bytes, qos: MqttQos, retain: bool) -> Outbound {
        self.next_seq += 1;
        Outbound {
            seq: self.next_seq,
            topic: topic.to_string(),
            payload,
            qos,
            retain,
        }
    }
}

/// As [`hand`]; a full queue drops the message, counted.
fn hand_or_count(client: &Api, f: &mut Flight, m: Outbound, stats: &ClientStats) -> bool {
    let handed = hand(client, f, m).is_ok();
    if !handed {
        stats.dropped_busy.fetch_add(1, Ordering::Relaxed);
    }
    handed
}

/// Hands one publication to rumqttc; `Busy` if its queue is full.
fn hand(client: &Api, f: &mut Flight, mut m: Outbound) -> Result<(), PublishError> {
    // A QoS 0 message is never sent again: its bytes go to rumqttc without a copy (a unique
    // `Bytes` becomes the `Vec` it was made from); QoS 1 and 2 keep theirs until acknowledged.
    let payload: Vec<u8> = match m.qos {
        MqttQos::AtMostOnce => Vec::from(std::mem::take(&mut m.payload)),
        _ => m.payload.to_vec(),
    };
    client
        .try_publish(m.topic.clone(), m.qos, m.retain, payload)
        .map_err(|()| PublishError::Busy)?;
    f.handed.push_back(m);
    Ok(())
}

/// The connection task: polls rumqttc, keeps [`Flight`] in step with what it reports.
async fn run(
    mut eventloop: Loop,
    client: Api,
    flight: Arc<Mutex<Flight>>,
    stats: Arc<ClientStats>,
    tx: mpsc::Sender<Received>,
    broker: String,
    session: watch::Sender<Session>,
) {
    let mut backoff = Duration::from_millis(100);
    let mut failing_since_logged = false;
    loop {
        match eventloop.poll().await {
            Ok(Ev::ConnAck { session_present }) => {
                backoff = Duration::from_millis(100);
                failing_since_logged = false;
                stats.connects.fetch_add(1, Ordering::Relaxed);
                stats.connected.store(true, Ordering::Relaxed);
                info!(%broker, session_present, "connected to the MQTT broker");
                let resume = eventloop.pending_publishes();
                {
                    let mut f = flight.lock().unwrap_or_else(|p| p.into_inner());
                    on_session(&client, &mut f, session_present, resume, &stats);
                }
                session.send_modify(|s| {
                    s.number += 1;
                    s.connected = true;
                });
            }
            Ok(Ev::Publish {
                topic,
                payload,
                retain,
            }) => {
                stats.received.fetch_add(1, Ordering::Relaxed);
                let r = Received {
                    topic,
                    payload,
                    retained: retain,
                    at: std::time::Instant::now(),
                };
                if tx.send(r).await.is_err() {
                    return;
                }
            }
            Ok(Ev::Acked(pkid)) => acked(&flight, pkid),
            Ok(Ev::Written(pkid)) => {
                stats.published.fetch_add(1, Ordering::Relaxed);
                let mut f = flight.lock().unwrap_or_else(|p| p.into_inner());
                if f.resent_by_rumqttc > 0 {
                    f.resent_by_rumqttc -= 1;
                } else if let Some(m) = f.handed.pop_front() {
                    if m.qos != MqttQos::AtMostOnce {
                        f.unacked.insert(pkid, m);
                    }
                }
            }
            Ok(Ev::Disconnected) => {
                stats.connected.store(false, Ordering::Relaxed);
                return;
            }
            Ok(_) => {}
            Err(e) => {
                let was = stats.connected.swap(false, Ordering::Relaxed);
                flight.lock().unwrap_or_else(|p| p.into_inner()).connected = false;
                session.send_if_modified(|s| std::mem::replace(&mut s.connected, false));
                if was {
                    warn!(%broker, "lost the MQTT broker: {e}; reconnecting");
                } else if !failing_since_logged {
                    warn!(%broker, "cannot reach the MQTT broker: {e}; retrying with back-off up to 5 s");
                }
                failing_since_logged = true;
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

fn acked(flight: &Mutex<Flight>, pkid: u16) {
    let mut f = flight.lock().unwrap_or_else(|p| p.into_inner());
    f.unacked.remove(&pkid);
}

/// A new session: resend what the old one lost, subscribe again, flush the buffer.
fn on_session(
    client: &Api,
    f: &mut Flight,
    session_present: bool,
    rumqttc_resends: usize,
    stats: &ClientStats,
) {
    let mut again: Vec<Outbound> = Vec::new();
    if session_present {
        // rumqttc writes its unacknowledged and queued packets again itself.
        f.resent_by_rumqttc = rumqttc_resends;
        f.unacked.clear();
        f.handed.clear();
    } else {
        // A fresh session: rumqttc dropped what it had; QoS 1/2 messages go again, in order.
        f.resent_by_rumqttc = 0;
        again.extend(f.unacked.drain().map(|(_, m)| m));
        again.extend(f.handed.drain(..).filter(|m| m.qos != MqttQos::AtMostOnce));
        again.sort_by_key(|m| m.seq);
        stats
            .resent
            .fetch_add(again.len() as u64, Ordering::Relaxed);
    }
    // A fresh session has no subscriptions; a resumed one lacks those made meanwhile.
    let unsent = std::mem::take(&mut f.unsent_subscriptions);
    for (topic, q) in &f.subscriptions {
        if session_present && !unsent.contains(topic) {
            continue;
        }
        if let Err(e) = client.try_subscribe(topic.clone(), *q) {
            warn!(topic, "cannot subscribe: {e}");
            f.unsent_subscriptions.insert(topic.clone());
        }
    }
    f.connected = true;
    f.said_full = false;
    let offline: Vec<Outbound> = f.offline.drain(..).collect();
    for m in again.into_iter().chain(offline) {
        hand_or_count(client, f, m, stats);
    }
}
